// auth-type, auth-secret, auth-secret-type, auth-realm: HTTP basic authentication against an
// htpasswd Secret. The group only validates what is written; the build resolves the Secret (its
// namespace, allow-cross-namespace-resources, the key) into `users`, or says why the route is denied.
// ingress-nginx: a bad auth-type, auth-secret-type or auth-realm fails validation (the Ingress is
// skipped); a missing, unreadable or refused Secret denies the location (it answers 503).

import type { AnnotationGroup } from './group.ts';

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

/** ingress-nginx's parser.CharsWithSpace (auth-realm) */
const REALM = /^[\w\-.,_~:/?#[\]@!$&()*+;= ]*$/;
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
    const type = read.string('auth-type');
    let secretType: BasicAuth['secretType'] = 'auth-file';
    const writtenType = read.string('auth-secret-type');
    if (writtenType !== undefined) {
      if (writtenType === 'auth-file' || writtenType === 'auth-map') secretType = writtenType;
      else read.invalid('auth-secret-type', writtenType, 'expected auth-file or auth-map', 'drop');
    }
    let realm = read.string('auth-realm') ?? '';
    if (!REALM.test(realm)) {
      read.invalid('auth-realm', realm, 'unexpected characters', 'drop');
      realm = '';
    }
    const secret = read.string('auth-secret');
    if (secret !== undefined && !SECRET_REF.test(secret)) {
      read.invalid('auth-secret', secret, 'expected name or namespace/name', 'drop');
    }
    if (type === undefined) return { auth: null };
    if (type !== 'basic' && type !== 'digest') {
      read.invalid('auth-type', type, 'expected basic or digest', 'drop');
      return { auth: null };
    }
    return {
      auth: {
        type,
        secret: secret ?? '',
        secretType,
        realm,
        users: [],
        denied: secret === undefined ? 'auth-type is set without auth-secret' : null,
      },
    };
  },
};
