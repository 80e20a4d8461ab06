// A headless Chromium for the tests (and the page's bench), driven over the DevTools protocol by
// playwright-core: the distribution's own build (Debian's `chromium` package; .ci/run installs it),
// never a browser playwright would download. Where none is installed, findBrowser says why and the
// tests skip.

import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium'];

/** The browser's path ($CHROMIUM, else the distribution's), or why there is none. */
export function findBrowser(): { path: string } | { missing: string } {
  const wanted = process.env.CHROMIUM;
  if (wanted !== undefined && wanted !== '') {
    return existsSync(wanted)
      ? { path: wanted }
      : { missing: `$CHROMIUM names ${wanted}, which does not exist` };
  }
  const path = CANDIDATES.find((candidate) => existsSync(candidate));
  return path === undefined
    ? { missing: `no Chromium at ${CANDIDATES.join(', ')} (apt-get install chromium, or set $CHROMIUM)` }
    : { path };
}

// What works in a container as root: no sandbox (it needs user namespaces), no GPU, nothing fetched
// in the background (the page must work offline, and a test must not reach out).
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** A headless Chromium; playwright gives each launch a fresh profile in a temporary folder it removes. */
export async function launchBrowser(path: string): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: path, headless: true, args: FLAGS });
}
