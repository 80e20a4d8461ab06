// mirror-target, mirror-host, mirror-request-body: a copy of every request of the Ingress's paths goes
// to another URL, its answer ignored (NGINX's `mirror`). As ingress-nginx's parser: the target and the
// host are validated with its server-name character set (letters, digits, `-._~/:` and the regex
// characters `^$[](){}*+?|&=\`), so NGINX variables such as `$request_uri` pass; an invalid value is
// ignored with a warning, the Ingress is kept. The Host of the mirrored request defaults to the host
// name (without port) of the target's text before its first `$`. Beyond ingress-nginx, the target must
// start with http:// or https://, and a target whose host is only known per request (`http://$host/`)
// needs mirror-host: ingress-nginx would render no mirror location for either and send the copies
// to whatever location matches its internal mirror path.

import type { AnnotationGroup } from './group.ts';

export interface MirrorAnnotations {
  /** mirror-target as written (NGINX variables allowed); null: the requests are not mirrored */
  target: string | null;
  /** the Host header of the copies: mirror-host, else the target's host name; null without a target */
  host: string | null;
  /** mirror-request-body: the copies carry the request body */
  requestBody: boolean;
}

/** ingress-nginx's IsValidRegex (ValidateServerName), applied to the trimmed value. */
const SERVER_NAME = /^[-._~a-zA-Z0-9/:^$[\](){}*+?|&=\\]*$/;
const HTTP_URL = /^https?:\/\//i;

const NONE: MirrorAnnotations = { target: null, host: null, requestBody: true };

/** The host name of the literal part of a target (before its first `$`), or '' when it has none. */
function literalHost(target: string): string {
  const literal = target.split('$')[0] as string;
  try {
    return new URL(literal).hostname;
  } catch {
    return '';
  }
}

export const mirror: AnnotationGroup<MirrorAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'mirror-target',
      default: '',
      doc: 'Copy every request to this http(s) URL (NGINX variables such as $request_uri, $host, $scheme, $uri); the copy is fire-and-forget, its answer ignored.',
    },
    {
      name: 'mirror-host',
      default: '',
      doc: 'The Host header of the mirrored requests; default the host name of mirror-target.',
    },
    {
      name: 'mirror-request-body',
      default: 'on',
      doc: 'on: the mirrored requests carry the request body; off: they carry none.',
    },
  ],
  defaults: NONE,
  parse(read) {
    let requestBody = true;
    const body = read.string('mirror-request-body');
    if (body !== undefined) {
      const value = body.replaceAll(' ', '');
      if (value === 'off') requestBody = false;
      else if (value !== 'on') read.invalid('mirror-request-body', body, 'expected "on" or "off"', 'default');
    }
    const written = read.string('mirror-target');
    if (written === undefined) return requestBody ? NONE : { ...NONE, requestBody };
    const target = written.trim();
    if (!SERVER_NAME.test(target)) {
      read.invalid(
        'mirror-target',
        written,
        'only letters, digits and -._~/:^$[](){}*+?|&=\\ are allowed; requests are not mirrored',
        'default',
      );
      return { ...NONE, requestBody };
    }
    if (!HTTP_URL.test(target)) {
      read.invalid(
        'mirror-target',
        written,
        'expected an http:// or https:// URL; requests are not mirrored',
        'default',
      );
      return { ...NONE, requestBody };
    }
    let host: string | null = null;
    const hostValue = read.string('mirror-host');
    if (hostValue !== undefined) {
      if (SERVER_NAME.test(hostValue.trim())) host = hostValue.trim();
      else
        read.invalid(
          'mirror-host',
          hostValue,
          "only letters, digits and -._~/:^$[](){}*+?|&=\\ are allowed; the target's host is used",
          'default',
        );
    }
    if (host === null) {
      const derived = literalHost(target);
      if (derived === '') {
        read.invalid(
          'mirror-target',
          written,
          'its host name is not written out (a variable?) and mirror-host is not set; requests are not mirrored',
          'default',
        );
        return { ...NONE, requestBody };
      }
      host = derived;
    }
    return { target, host, requestBody };
  },
};
