// Reproduces the file system of the image the Containerfile builds, without a container engine: the
// Containerfile's own COPY, WORKDIR, ENV and `RUN npm ci` lines are replayed into a directory per stage
// (container paths mapped under it), so the test cannot drift from the Containerfile. RUN steps other
// than `npm ci` act on the base image (removing npm, cleaning its cache) and are skipped.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions of a Containerfile: comments dropped, continuation lines joined. */
export function parseContainerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = pending + line;
    pending = '';
    const space = full.indexOf(' ');
    instructions.push({ keyword: full.slice(0, space).toUpperCase(), args: full.slice(space + 1).trim() });
  }
  return instructions;
}

export interface Replayed {
  /** the final stage's root directory (container `/` mapped here) */
  root: string;
  /** the final stage's ENTRYPOINT, container paths mapped under root */
  entrypoint: string[];
  /** the final stage's WORKDIR, mapped under root */
  workdir: string;
  /** the final stage's ENV */
  env: Record<string, string>;
  /** every source the build context must provide (COPY without --from) */
  contextSources: string[];
}

/**
 * Replays the Containerfile at `containerfile` with the build context `context` into `workdir`;
 * `npm ci` steps run with `npmEnv` (and --prefer-offline: the npm cache is reused).
 */
export async function replay(
  containerfile: string,
  context: string,
  workdir: string,
  npmEnv: NodeJS.ProcessEnv,
): Promise<Replayed> {
  const instructions = parseContainerfile(readFileSync(containerfile, 'utf8'));
  const stages = new Map<string, string>();
  let root = '';
  let cwd = '/';
  let env: Record<string, string> = {};
  let entrypoint: string[] = [];
  const contextSources: string[] = [];
  const inStage = (stageRoot: string, containerPath: string) =>
    path.join(stageRoot, path.posix.resolve(cwd, containerPath));

  for (const { keyword, args } of instructions) {
    switch (keyword) {
      case 'FROM': {
        const name = /\sAS\s+(\S+)$/i.exec(args)?.[1] ?? `stage-${stages.size}`;
        root = path.join(workdir, name);
        mkdirSync(root, { recursive: true });
        stages.set(name, root);
        cwd = '/';
        env = {};
        entrypoint = [];
        break;
      }
      case 'WORKDIR':
        cwd = path.posix.resolve(cwd, args);
        mkdirSync(path.join(root, cwd), { recursive: true });
        break;
      case 'ENV':
        for (const [, key, value] of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
          env[key as string] = (value as string).replace(/^"|"$/g, '');
        }
        break;
      case 'COPY': {
        const words = args.split(/\s+/);
        const from = words[0]?.startsWith('--from=')
          ? (words.shift() as string).slice('--from='.length)
          : null;
        const destination = words.pop() as string;
        const target = inStage(root, destination);
        const intoDirectory = destination.endsWith('/') || words.length > 1;
        for (const source of words) {
          let origin: string;
          if (from === null) {
            contextSources.push(source);
            origin = path.join(context, source);
          } else {
            const stage = stages.get(from);
            if (stage === undefined) throw new Error(`COPY --from=${from}: no such stage`);
            origin = path.join(stage, path.posix.resolve('/', source));
          }
          if (!existsSync(origin)) throw new Error(`COPY ${source}: not found at ${origin}`);
          const to = intoDirectory ? path.join(target, path.basename(source)) : target;
          mkdirSync(path.dirname(to), { recursive: true });
          cpSync(origin, to, { recursive: true });
        }
        break;
      }
      case 'RUN':
        for (const step of args.split('&&').map((part) => part.trim())) {
          if (!step.startsWith('npm ci')) continue;
          const argv = step.split(/\s+/).slice(1);
          await run('npm', [...argv, '--prefer-offline'], {
            cwd: path.join(root, cwd),
            env: npmEnv,
            timeout: 120_000,
            maxBuffer: 16 * 1024 * 1024,
          });
        }
        break;
      case 'ENTRYPOINT': {
        const argv = JSON.parse(args) as string[];
        entrypoint = argv.map((word) => (word.startsWith('/') ? path.join(root, word) : word));
        break;
      }
      default: // ARG, LABEL, USER, EXPOSE: nothing on the file system
    }
  }
  return { root, workdir: path.join(root, cwd), entrypoint, env, contextSources };
}
