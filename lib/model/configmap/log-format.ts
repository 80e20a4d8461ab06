// `log-format-upstream`: an NGINX log_format string, read as data. ingress-nginx puts the value
// between single quotes in nginx.tmpl (`log_format upstreaminfo '<value>';`), so NGINX reads it as a
// quoted string of its configuration syntax (`\"`, `\'`, `\\`, `\t`, `\r`, `\n` are escapes) and then
// compiles it: literal text and `$name` / `${name}` variables. A variable NGINX would not know fails
// `nginx -t` there; here the key keeps its default and the ConfigMap gets CONFIG_VALUE_INVALID.
//
// The set of variables is closed: the ones the request record can give (see the data plane's
// access-log-format.ts, which has one writer per name and prefix here; a test checks both agree).

/** ingress-nginx's default log-format-upstream (internal/ingress/controller/config/config.go). */
export const DEFAULT_LOG_FORMAT_UPSTREAM =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" ' +
  '"$http_user_agent" $request_length $request_time [$proxy_upstream_name] ' +
  '[$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length ' +
  '$upstream_response_time $upstream_status $req_id';

/**
 * The JSON line ingress-ts wrote before the format was configurable, as a log-format-upstream value
 * (with `log-format-escape-json: "true"`): docs/observability.md gives it (a test checks), the tests
 * that read the log as JSON and the log encoder's bench use it.
 */
export const JSON_LOG_FORMAT_UPSTREAM =
  '{"level":30,"time":"$time_iso8601","remote_addr":"$remote_addr","request_method":"$request_method",' +
  '"request_uri":"$request_uri","server_protocol":"$server_protocol","host":"$host","status":$status,' +
  '"bytes_sent":$bytes_sent,"http_referer":"$http_referer","http_user_agent":"$http_user_agent",' +
  '"request_length":$request_length,"request_time":$request_time,' +
  '"proxy_upstream_name":"$proxy_upstream_name",' +
  '"proxy_alternative_upstream_name":"$proxy_alternative_upstream_name",' +
  '"upstream_addr":"$upstream_addr","upstream_response_length":"$upstream_response_length",' +
  '"upstream_response_time":"$upstream_response_time","upstream_status":"$upstream_status",' +
  '"req_id":"$req_id","namespace":"$namespace","ingress":"$ingress_name","service":"$service_name",' +
  '"service_port":"$service_port","location_path":"$location_path"}';

/** A compiled format: literal text and variable names, in order (plain data, crosses threads). */
export type LogFormatPart = { text: string } | { variable: string };

/** The variables of the access log, by exact name. */
export const LOG_VARIABLES: readonly string[] = [
  'args',
  'body_bytes_sent',
  'bytes_sent',
  'connection',
  'connection_requests',
  'document_uri',
  'host',
  'https',
  'ingress_name',
  'is_args',
  'location_path',
  'msec',
  'namespace',
  'opentelemetry_context_traceparent',
  'opentelemetry_context_tracestate',
  'opentelemetry_span_id',
  'opentelemetry_trace_id',
  'pipe',
  'proxy_add_x_forwarded_for',
  'proxy_alternative_upstream_name',
  'proxy_upstream_name',
  'query_string',
  'realip_remote_addr',
  'remote_addr',
  'remote_user',
  'req_id',
  'request',
  'request_length',
  'request_method',
  'request_time',
  'request_uri',
  'scheme',
  'server_name',
  'server_port',
  'server_protocol',
  'service_name',
  'service_port',
  'ssl_cipher',
  'ssl_protocol',
  'status',
  'time_iso8601',
  'time_local',
  'upstream_addr',
  'upstream_connect_time',
  'upstream_header_time',
  'upstream_response_length',
  'upstream_response_time',
  'upstream_status',
  'uri',
];

/** Variables named by a prefix and a request header, cookie or query argument. */
export const LOG_VARIABLE_PREFIXES: readonly string[] = ['http_', 'cookie_', 'arg_'];

const KNOWN: ReadonlySet<string> = new Set(LOG_VARIABLES);

export function isLogVariable(name: string): boolean {
  if (KNOWN.has(name)) return true;
  for (const prefix of LOG_VARIABLE_PREFIXES)
    if (name.length > prefix.length && name.startsWith(prefix)) return true;
  return false;
}

/** NGINX's variable name characters (ngx_http_log_compile_format). */
function isNameChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f;
}

/** The value as NGINX reads it between single quotes: its escapes resolved; null if a quote ends it. */
function unquote(value: string): string | null {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (c === "'") return null;
    if (c !== '\\' || i + 1 === value.length) {
      out += c;
      continue;
    }
    const next = value[i + 1] as string;
    if (next === '"' || next === "'" || next === '\\') out += next;
    else if (next === 't') out += '\t';
    else if (next === 'r') out += '\r';
    else if (next === 'n') out += '\n';
    else {
      out += c;
      continue;
    }
    i++;
  }
  return out;
}

/**
 * The parts of a log format, or why NGINX would refuse it: a bare `'` (it would end the quoted
 * string in nginx.tmpl), `$` without a name, an unclosed `${`, or a variable not in the closed set.
 */
export function parseLogFormat(value: string): { parts: LogFormatPart[] } | { problem: string } {
  const text = unquote(value);
  if (text === null)
    return { problem: "a ' must be written \\' (NGINX reads the format between single quotes)" };
  const parts: LogFormatPart[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '$') {
      literal += text[i];
      i++;
      continue;
    }
    let name: string;
    if (text[i + 1] === '{') {
      const close = text.indexOf('}', i + 2);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
      if (close === -1) return { problem: 'a "${" without its "}"' };
      name = text.slice(i + 2, close);
      for (let k = 0; k < name.length; k++)
        if (!isNameChar(name.charCodeAt(k))) return { problem: `invalid variable name "${name}"` };
      i = close + 1;
    } else {
      let end = i + 1;
      while (end < text.length && isNameChar(text.charCodeAt(end))) end++;
      name = text.slice(i + 1, end);
      i = end;
    }
    if (name === '') return { problem: 'a "$" without a variable name (NGINX: invalid variable name)' };
    const lower = name.toLowerCase();
    if (!isLogVariable(lower)) return { problem: `unknown variable "$${name}"` };
    if (literal !== '') parts.push({ text: literal });
    literal = '';
    parts.push({ variable: lower });
  }
  if (literal !== '') parts.push({ text: literal });
  return { parts };
}
