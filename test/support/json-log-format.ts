// The `log-format-upstream` value docs/observability.md gives for the JSON line ingress-ts wrote
// before the format was configurable (with `log-format-escape-json: "true"`); tests that read the
// access log as JSON set it (a test checks the docs still give this exact value).
export const JSON_LOG_FORMAT =
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

/** The ConfigMap keys that make the access log that JSON line. */
export const JSON_LOG_KEYS: Readonly<Record<string, string>> = {
  'log-format-upstream': JSON_LOG_FORMAT,
  'log-format-escape-json': 'true',
};

/** The same as YAML flow-map entries, each with its trailing comma (`log-format-upstream: "...", `). */
export const JSON_LOG_ENTRIES: string = Object.entries(JSON_LOG_KEYS)
  .map(([key, value]) => `${key}: ${JSON.stringify(value)}, `)
  .join('');
