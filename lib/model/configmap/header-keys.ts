// ConfigMap keys of the headers ingress-ts adds, removes or generates: on every upstream request
// (proxy-set-headers, proxy-add-original-uri-header), on every response (add-headers, hide-headers,
// server-tokens, allow-backend-server-header, default-type), the request id.

import { FRAMING_RESPONSE_HEADERS } from '../annotations/validators.ts';
import { bool, type KeyParser, type KeyTable } from './key-parser.ts';
import { isHeaderName, isHeaderValue } from './values.ts';

/** `ns/name` of a ConfigMap whose entries are headers (proxy-set-headers, add-headers). */
const headerMap =
  (key: 'proxySetHeaders' | 'addHeaders'): KeyParser =>
  (value, config, lookup) => {
    const slash = value.indexOf('/');
    if (slash <= 0 || slash === value.length - 1 || value.indexOf('/', slash + 1) !== -1) {
      return 'expected namespace/name of a ConfigMap';
    }
    const source = lookup(value.slice(0, slash), value.slice(slash + 1));
    const headers: Array<[string, string]> = [];
    const bad: string[] = [];
    const data = source?.data;
    if (data !== undefined && data !== null && typeof data === 'object') {
      for (const name of Object.keys(data).sort()) {
        const raw = data[name];
        const v = typeof raw === 'string' ? raw : String(raw);
        const framing = key === 'addHeaders' && FRAMING_RESPONSE_HEADERS.has(name.toLowerCase());
        if (isHeaderName(name) && isHeaderValue(v) && !framing) headers.push([name, v]);
        else bad.push(name);
      }
    }
    if (source === undefined) return `the ConfigMap ${value} does not exist`;
    if (bad.length > 0) return `entries that are not valid headers: ${bad.join(', ')}`;
    config.headers[key] = { source: value, headers };
    return null;
  };

export const HEADER_KEYS: KeyTable = {
  'generate-request-id': bool((config, value) => {
    config.headers.generateRequestId = value;
  }),
  'server-tokens': bool((config, value) => {
    config.headers.serverTokens = value;
  }),
  'allow-backend-server-header': bool((config, value) => {
    config.headers.allowBackendServerHeader = value;
  }),
  'proxy-add-original-uri-header': bool((config, value) => {
    config.headers.proxyAddOriginalUriHeader = value;
  }),
  // written into nginx.conf as one token: a quoted value may hold `; charset=...`, an unquoted one
  // may not (NGINX would not load it)
  'default-type': (value, config) => {
    const quoted = value.length > 1 && value.startsWith('"') && value.endsWith('"');
    const type = quoted ? value.slice(1, -1) : value;
    if ((!quoted && /[\s;{}"']/.test(type)) || type.includes('"') || type === '' || !isHeaderValue(type)) {
      return 'expected a media type such as text/html';
    }
    config.headers.defaultType = type;
    return null;
  },
  'proxy-set-headers': headerMap('proxySetHeaders'),
  'add-headers': headerMap('addHeaders'),
  'hide-headers': (value, config) => {
    const names: string[] = [];
    for (const entry of value.split(',')) {
      const name = entry.trim();
      if (name === '') continue;
      if (!isHeaderName(name)) return `${JSON.stringify(name)} is not a header name`;
      names.push(name.toLowerCase());
    }
    config.headers.hideHeaders = names;
    return null;
  },
};
