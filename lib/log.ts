// The process logger: pino, JSON lines on stdout; human-friendly lines (pino-pretty) when stdout is
// a terminal and NODE_ENV is not "production".

import { pino } from 'pino';
import type { LogLevel } from './config/flags.ts';

export type Logger = pino.Logger;

/** Whether log lines should be pretty-printed: a terminal, outside production. */
export function wantsPrettyLogs(
  env: NodeJS.ProcessEnv = process.env,
  tty = process.stdout.isTTY === true,
): boolean {
  return tty && env.NODE_ENV !== 'production';
}

export function createLogger(level: LogLevel, destination?: pino.DestinationStream, pretty = false): Logger {
  const options = { level, base: { component: 'ingress-ts' } };
  if (destination === undefined && pretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { destination: 1 } } });
  }
  return pino(options, destination);
}
