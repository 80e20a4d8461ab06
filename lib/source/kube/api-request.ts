// One request to the API server as plain JSON, with the kubeconfig's server, credentials and TLS
// settings: for writes whose content type the generated client does not let a caller choose (JSON
// patch), and whose answer is wanted as the object the server stored, not as class instances.

import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';

export interface ApiResponse {
  status: number;
  /** the JSON answer (an object, or a Status on failure); null when it was not JSON */
  body: unknown;
}

const METHODS = {
  GET: HttpMethod.GET,
  POST: HttpMethod.POST,
  PUT: HttpMethod.PUT,
  PATCH: HttpMethod.PATCH,
} as const;

export async function apiRequest(
  kubeConfig: KubeConfig,
  method: keyof typeof METHODS,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<ApiResponse> {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = cluster.server + path;
  const context = new RequestContext(url, METHODS[method]);
  await kubeConfig.applySecurityAuthentication(context);
  const headers: Record<string, string> = { ...context.getHeaders(), accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = contentType;
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    dispatcher: context.getDispatcher(),
  });
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the status says enough
  }
  return { status: response.status, body: parsed };
}

/** The message of a Status answer, for logs (never the request's body). */
export function statusMessage(response: ApiResponse): string {
  const message = (response.body as { message?: unknown } | null)?.message;
  return `HTTP ${response.status}${typeof message === 'string' ? `: ${message}` : ''}`;
}
