// ConfigMap keys of response compression, as ingress-nginx renders them into the http block
// (nginx.tmpl): `use-gzip` with `gzip-level`, `gzip-min-length`, `gzip-types`, `gzip-disable`
// (gzip_http_version 1.1, gzip_proxied any and gzip_vary on are fixed there), and `enable-brotli` with
// `brotli-level`, `brotli-min-length`, `brotli-types`. Global only: no annotation sets them.

import { RE2JS } from 're2js';
import { bool, type KeyParser, type KeyTable } from './key-parser.ts';

export interface CodingConfig {
  enabled: boolean;
  /** gzip_comp_level (1-9) or brotli_comp_level (0-11) */
  level: number;
  /** bodies of a known length shorter than this many bytes go out as they are */
  minLength: number;
  /** media types, lower-case; `*` matches any; text/html is compressed whatever the list says, as in NGINX */
  types: string[];
}

export interface CompressionConfig {
  /** `use-gzip` (false), `gzip-level` (1), `gzip-min-length` (256), `gzip-types` */
  gzip: CodingConfig & {
    /** `gzip-disable`: one RE2 pattern on User-Agent (case-insensitive), `msie6`, or '' */
    disable: string;
  };
  /** `enable-brotli` (false), `brotli-level` (4), `brotli-min-length` (20), `brotli-types` */
  brotli: CodingConfig;
}

// ingress-nginx's defaults (config.go gzipTypes / brotliTypes), in its order
const GZIP_TYPES =
  'application/atom+xml application/javascript application/x-javascript application/json application/rss+xml application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component';
const BROTLI_TYPES = `application/xml+rss ${GZIP_TYPES}`;

export const DEFAULT_COMPRESSION: Readonly<CompressionConfig> = Object.freeze({
  gzip: { enabled: false, level: 1, minLength: 256, types: GZIP_TYPES.split(' '), disable: '' },
  brotli: { enabled: false, level: 4, minLength: 20, types: BROTLI_TYPES.split(' ') },
});

/** A media type as gzip_types takes it: `type/subtype`, or `*` alone (NGINX has no `image/*`). */
const MEDIA_TYPE = /^(\*|[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+)$/;

const intIn =
  (min: number, max: number, set: (config: CompressionConfig, value: number) => void): KeyParser =>
  (value, config) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
      return `expected an integer from ${min} to ${max}`;
    set(config.compression, Number(value));
    return null;
  };

const types =
  (set: (config: CompressionConfig, types: string[]) => void): KeyParser =>
  (value, config) => {
    const list: string[] = [];
    for (const token of value.toLowerCase().split(/\s+/)) {
      if (token === '') continue;
      if (!MEDIA_TYPE.test(token))
        return `${JSON.stringify(token)} is not a MIME type; expected types separated by spaces (only a lone * matches every type)`;
      if (!list.includes(token)) list.push(token);
    }
    if (list.length === 0) return 'expected MIME types separated by spaces';
    set(config.compression, list);
    return null;
  };

/** gzip_disable as ingress-nginx quotes it: the whole value is one case-insensitive regex, or msie6. */
const gzipDisable: KeyParser = (value, config) => {
  if (value !== 'msie6') {
    try {
      RE2JS.compile(value, RE2JS.CASE_INSENSITIVE);
    } catch (error) {
      return `not a regular expression RE2 accepts: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  config.compression.gzip.disable = value;
  return null;
};

// ingress-nginx's fields are Go ints; the largest minimum length is bounded only to stay a safe number
const MAX_MIN_LENGTH = 2 ** 31 - 1;

export const COMPRESSION_KEYS: KeyTable = {
  'use-gzip': bool((config, value) => {
    config.compression.gzip.enabled = value;
  }),
  'gzip-level': intIn(1, 9, (c, v) => {
    c.gzip.level = v;
  }),
  'gzip-min-length': intIn(0, MAX_MIN_LENGTH, (c, v) => {
    c.gzip.minLength = v;
  }),
  'gzip-types': types((c, v) => {
    c.gzip.types = v;
  }),
  'gzip-disable': gzipDisable,
  'enable-brotli': bool((config, value) => {
    config.compression.brotli.enabled = value;
  }),
  'brotli-level': intIn(0, 11, (c, v) => {
    c.brotli.level = v;
  }),
  'brotli-min-length': intIn(0, MAX_MIN_LENGTH, (c, v) => {
    c.brotli.minLength = v;
  }),
  'brotli-types': types((c, v) => {
    c.brotli.types = v;
  }),
};
