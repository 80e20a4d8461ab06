// auth-type, auth-secret, auth-secret-type, auth-realm: HTTP basic authentication against an
// htpasswd Secret. The group only validates what is written; the build resolves the Secret (its
// namespace, allow-cross-namespace-resources, the key) into `users`, or says why the route is denied.
// ingress-nginx: a bad auth-type, auth-secret-type or auth-realm fails validation (the Ingress is
// skipped); a missing, unreadable or refused Secret denies the location (it answers 503).

import type { AnnotationGroup } from './group.ts';
import { CHARS_WITH_SPACE, matches } from './validators.ts';

export interface BasicAuth {
  /** `digest` is parsed but not served: its routes are denied (503), never open */
  type: 'basic' | 'digest';
  /** the Secret as written (`name` or `namespace/name`); the build makes it `namespace/name` */
  secret: string;
  secretType: 'auth-file' | 'auth-map';
  realm: string;
  /** user → password hash, from the Secret (filled by the build; never shown in /debug/model) */
  users: Array<[string, string]>;
  /** why the route answers 503 instead (filled by the build), or null */
  denied: string | null;
}

export interface BasicAuthAnnotations {
  /** null: no basic authentication */
  auth: BasicAuth | null;
}

/** a Secret reference: `name` or `namespace/name` (DNS labels) */
const SECRET_REF = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export const basicAuth: AnnotationGroup<BasicAuthAnnotations> = {
  scope: 'location',
  annotations: [
    { name: 'auth-type', default: '', doc: 'basic: HTTP basic authentication (digest is refused: 503).' },
    {
      name: 'auth-secret',
      default: '',
      doc: 'The htpasswd Secret, `name` or `namespace/name` (another namespace needs allow-cross-namespace-resources).',
    },
    {
      name: 'auth-secret-type',
      default: 'auth-file',
      doc: 'auth-file: key `auth` holds htpasswd lines; auth-map: one key per user, the value is the hash.',
    },
    { name: 'auth-realm', default: '', doc: 'The realm of the WWW-Authenticate challenge.' },
  ],
  defaults: { auth: null },
  parse(read) {
    // without auth-type ingress-nginx never reads the other three
    const type = read.string('auth-type');
    if (type === undefined) return { auth: null };
    if (type !== 'basic' && type !== 'digest') {
      read.invalid('auth-type', type, 'expected basic or digest', 'drop');
      return { auth: null };
    }
    let secretType: BasicAuth['secretType'] = 'auth-file';
    const writtenType = read.string('auth-secret-type');
    if (writtenType !== undefined) {
      const compact = writtenType.replaceAll(' ', '');
      if (compact === 'auth-file' || compact === 'auth-map') secretType = compact;
      else {
        read.invalid('auth-secret-type', writtenType, 'expected auth-file or auth-map', 'drop');
        return { auth: null };
      }
    }
    const realm = read.string('auth-realm') ?? '';
    if (!matches(CHARS_WITH_SPACE, realm, false)) {
      read.invalid('auth-realm', realm, 'only letters, digits, spaces and -._~/: are allowed', 'drop');
      return { auth: null };
    }
    const secret = read.string('auth-secret');
    let denied: string | null = null;
    if (secret === undefined) denied = 'auth-type is set without auth-secret';
    else if (!SECRET_REF.test(secret))
      denied = `auth-secret ${JSON.stringify(secret)} is not a name or namespace/name`;
    return { auth: { type, secret: secret ?? '', secretType, realm, users: [], denied } };
  },
};
