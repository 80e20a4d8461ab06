// Fields of Gateway API objects in messages. The API server's schema guarantees types, but
// standalone manifests and the fake API server do not: a field may be any JSON or YAML value, such
// as an object with its own `toString` key, which String() and template literals throw on. Every
// field that reaches a message without a type check goes through text(), so a malformed object is
// refused with a message instead of throwing out of buildModel and stopping every configuration
// change (test/bad-input/gateway.test.ts mutates a good world to find such reads).

/** Any value for a message; never throws, even for `{toString: 1}`; long text is cut. */
export function text(value: unknown): string {
  let out: string;
  if (typeof value === 'string') out = value;
  else if (value === null || typeof value === 'number' || typeof value === 'boolean' || value === undefined)
    out = String(value);
  else {
    try {
      out = JSON.stringify(value) ?? typeof value;
    } catch {
      out = typeof value;
    }
  }
  return out.length > 200 ? `${out.slice(0, 200)}…` : out;
}
