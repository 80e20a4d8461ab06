// Which finished requests get an access log line, and the encoder of their lines: the access-log
// settings of the model served, applied the same way by the writer of one-thread mode
// (lib/access-log.ts) and by each data-plane thread (worker/thread-records.ts).

import {
  defaultLogEncoder,
  type LogFormatSettings,
  type LogLineEncoder,
  logEncoderOf,
} from './access-log-format.ts';
import { type RequestRecord, recordConnectionDetails } from './request-record.ts';

/** A model's access-log settings (`model.config.accessLog`) as the writers of lines read them. */
export interface LogLineSettings extends LogFormatSettings {
  disabled: boolean;
  skipUrls: readonly string[];
}

export class AccessLogChoice {
  /** the encoder of the current settings' format */
  encoder: LogLineEncoder = defaultLogEncoder();
  #disabled: boolean;
  #skip: ReadonlySet<string> = new Set();

  /** `disabled`: whether requests get no line until the first settings */
  constructor(disabled: boolean) {
    this.#disabled = disabled;
  }

  configure(settings: LogLineSettings): void {
    this.#disabled = settings.disabled;
    this.#skip = new Set(settings.skipUrls);
    this.encoder = logEncoderOf(settings);
    recordConnectionDetails(this.encoder.connectionDetails);
  }

  /** Whether `record` gets a line: access log on, on for its route, its target not skipped. */
  wants(record: RequestRecord): boolean {
    // an empty set would still hash the target, whose length the client chooses
    return !this.#disabled && record.accessLog && (this.#skip.size === 0 || !this.#skip.has(record.uri));
  }
}
