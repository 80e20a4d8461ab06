// A line of ingress-nginx's default log-format-upstream read back into its variables, as the stock
// parsers of log platforms read it: the tests that read the default format assert on these fields.
// Values are unescaped (`\xHH` is the byte HH); `-` stays `-`; $req_id may be empty
// (generate-request-id: false and no X-Request-ID).

export interface NginxLogLine {
  remote_addr: string;
  remote_user: string;
  time_local: string;
  request: string;
  request_method: string;
  request_uri: string;
  server_protocol: string;
  status: number;
  body_bytes_sent: number;
  http_referer: string;
  http_user_agent: string;
  request_length: number;
  request_time: number;
  proxy_upstream_name: string;
  proxy_alternative_upstream_name: string;
  upstream_addr: string;
  upstream_response_length: string;
  upstream_response_time: string;
  upstream_status: string;
  req_id: string;
}

const unescapeBytes = (text: string) =>
  text.replace(/\\x([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

const LINE =
  /^(\S+) - (\S+) \[([^\]]+)\] "([^"]*)" (\d{3}) (\d+) "([^"]*)" "([^"]*)" (\d+) (\d+\.\d{3}) \[([^\]]*)\] \[([^\]]*)\] (.*) (\S*)$/;

/** The upstream lists, each of which may be `a, b`: a value ends at a space not after a comma. */
function upstreamFields(tail: string): string[] {
  const fields: string[] = [];
  for (const token of tail.split(' ')) {
    const last = fields.length - 1;
    if (last >= 0 && (fields[last] as string).endsWith(',')) fields[last] += ` ${token}`;
    else fields.push(token);
  }
  return fields;
}

/** The fields of a default-format line; throws if the line is not one. */
export function parseNginxLine(line: string): NginxLogLine {
  const m = LINE.exec(line);
  if (m === null) throw new Error(`not a line of the default format: ${JSON.stringify(line)}`);
  const tail = upstreamFields(m[13] as string);
  if (tail.length !== 4) throw new Error(`upstream fields: ${JSON.stringify(m[13])}`);
  const request = unescapeBytes(m[4] as string);
  const parts = /^(\S+) (\S+) (HTTP\/\d\.\d)$/.exec(request);
  return {
    remote_addr: m[1] as string,
    remote_user: unescapeBytes(m[2] as string),
    time_local: m[3] as string,
    request,
    request_method: parts?.[1] ?? '',
    request_uri: parts?.[2] ?? request,
    server_protocol: parts?.[3] ?? '',
    status: Number(m[5]),
    body_bytes_sent: Number(m[6]),
    http_referer: unescapeBytes(m[7] as string),
    http_user_agent: unescapeBytes(m[8] as string),
    request_length: Number(m[9]),
    request_time: Number(m[10]),
    proxy_upstream_name: unescapeBytes(m[11] as string),
    proxy_alternative_upstream_name: unescapeBytes(m[12] as string),
    upstream_addr: tail[0] as string,
    upstream_response_length: tail[1] as string,
    upstream_response_time: tail[2] as string,
    upstream_status: tail[3] as string,
    req_id: m[14] as string,
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** $time_local ("26/Nov/2026:18:52:07 +0000") as milliseconds since the epoch. */
export function timeLocalMs(text: string): number {
  const m = /^(\d\d)\/(\w{3})\/(\d{4}):(\d\d):(\d\d):(\d\d) \+0000$/.exec(text);
  if (m === null) return Number.NaN;
  return Date.UTC(
    Number(m[3]),
    MONTHS.indexOf(m[2] as string),
    Number(m[1]),
    Number(m[4]),
    Number(m[5]),
    Number(m[6]),
  );
}
