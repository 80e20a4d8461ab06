// The process logger: pino, JSON lines on stdout.

import { pino } from 'pino';
import type { LogLevel } from './config/flags.ts';

export type Logger = pino.Logger;

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { component: 'ingress-ts' } }, destination);
}
