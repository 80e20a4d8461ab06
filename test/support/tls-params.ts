// DH parameters as a dhparam.pem holds them (PEM "DH PARAMETERS": a DER sequence of the prime and
// the generator), made from Node's well-known groups so that no test waits for `openssl dhparam`.
import type { DiffieHellman, DiffieHellmanGroup } from 'node:crypto';

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function derInteger(value: Buffer): Buffer {
  const positive = (value[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), value]) : value;
  return Buffer.concat([Buffer.from([0x02]), derLength(positive.length), positive]);
}

/** The PEM of a group's prime and generator (`getDiffieHellman('modp15')` is 3072 bits). */
export function dhParamPem(group: DiffieHellman | DiffieHellmanGroup): string {
  const body = Buffer.concat([derInteger(group.getPrime()), derInteger(group.getGenerator())]);
  const der = Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]);
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN DH PARAMETERS-----\n${lines.join('\n')}\n-----END DH PARAMETERS-----\n`;
}
