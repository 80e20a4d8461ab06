// What a route's annotations make it do, as /debug/model shows it: rewrites, redirects, auth (counts
// and references, never credentials), CORS, custom headers (names only), allow/deny lists, limits,
// backend TLS, mirror and canary. URLs lose their userinfo and query values (model/redact.ts).

import type { ProxySslAnnotations } from '../../model/annotations/proxy-ssl.ts';
import type { Canary, LocationAnnotations, SnippetRules, UpstreamSettings } from '../../model/index.ts';
import { REDACTED, redactOptionalUrl, redactText, redactUrl } from '../../model/redact.ts';
import { bundleInfo, parseCertificate } from './certificates.ts';
import type {
  AuthDescription,
  CanaryDescription,
  PathSettingsDescription,
  ProxySslDescription,
  SnippetDescription,
} from './types.ts';

function proxySslOf(value: ProxySslAnnotations): ProxySslDescription | null {
  if (value.secret === null) return null;
  const { verify, verifyDepth, name, serverName, ciphers, protocols, material, denied } = value;
  const out: ProxySslDescription = {
    secret: material?.secret ?? value.secret,
    verify,
    verifyDepth,
    name,
    serverName,
    ciphers,
    protocols: [...protocols],
  };
  if (material?.certPem != null) out.clientCertificate = parseCertificate(material.certPem);
  if (material?.caPem != null) out.caCertificates = bundleInfo(material.caPem);
  if (denied !== null) out.denied = redactText(denied);
  return out;
}

function authOf(annotations: LocationAnnotations): AuthDescription | null {
  const basic = annotations.basicAuth.auth;
  const external = annotations.externalAuth.auth;
  const out: AuthDescription = {};
  if (basic !== null) {
    const { type, secret, secretType, realm, users } = basic;
    out.basic = { type, secret, secretType, realm, users: users.length };
  }
  if (external !== null) {
    const { url, method, signin, signinRedirectParam, responseHeaders, requestRedirect } = external;
    out.external = {
      url: redactUrl(url),
      method,
      signin: redactOptionalUrl(signin),
      signinRedirectParam,
      responseHeaders: [...responseHeaders],
      requestRedirect: redactUrl(requestRedirect),
      proxySetHeaders: external.proxySetHeaders,
      alwaysSetCookie: external.alwaysSetCookie,
      cacheKey: external.cacheKey,
      cacheDuration: external.cacheDuration,
    };
  }
  if (!annotations.externalAuth.enableGlobalAuth) out.globalAuth = false;
  if (annotations.satisfy.any) out.satisfy = 'any';
  const denied = basic?.denied ?? external?.denied ?? null;
  if (denied !== null) out.denied = redactText(denied);
  return Object.keys(out).length === 0 ? null : out;
}

export function pathSettingsOf(annotations: LocationAnnotations, path: string): PathSettingsDescription {
  const out: PathSettingsDescription = {};
  const { target, forwardedPrefix } = annotations.rewrite;
  if (target !== null && target !== path) {
    out.rewriteTarget = target;
    if (forwardedPrefix !== null) out.xForwardedPrefix = forwardedPrefix;
  }
  const { sslRedirect, forceSslRedirect, preserveTrailingSlash, usePortInRedirects } =
    annotations.sslRedirect;
  if (sslRedirect !== null) out.sslRedirect = sslRedirect;
  if (forceSslRedirect !== null) out.forceSslRedirect = forceSslRedirect;
  if (preserveTrailingSlash) out.preserveTrailingSlash = true;
  if (usePortInRedirects) out.usePortInRedirects = true;
  const auth = authOf(annotations);
  if (auth !== null) out.auth = auth;
  if (annotations.cors.enabled) out.cors = annotations.cors;
  const { configMap, headers, denied } = annotations.customHeaders;
  if (configMap !== null) {
    out.customHeaders = {
      configMap,
      headers: Object.fromEntries(headers.map(([name]) => [name, REDACTED])),
      ...(denied === null ? {} : { denied: redactText(denied) }),
    };
  }
  const snippet = snippetOf(annotations.snippet.rules);
  if (snippet !== null) out.snippet = snippet;
  const { allow, deny } = annotations.accessControl;
  if (allow !== null) out.allowlistSourceRange = allow;
  if (deny !== null) out.denylistSourceRange = deny;
  const limits = annotations.rateLimit;
  if (limits.rps > 0 || limits.rpm > 0 || limits.connections > 0) out.rateLimit = limits;
  const proxySsl = proxySslOf(annotations.proxySsl);
  if (proxySsl !== null) out.proxySsl = proxySsl;
  const { mirror } = annotations;
  if (mirror.target !== null) out.mirror = { ...mirror, target: redactUrl(mirror.target) };
  return out;
}

/** A snippet's rules without a value: header names and the return status. */
export function snippetOf(rules: SnippetRules | null): SnippetDescription | null {
  if (rules === null) return null;
  const out: SnippetDescription = {};
  const ops = (list: SnippetRules['responseOps']) =>
    list.map(([name, value]) => `${value === null ? 'clear' : 'set'} ${name}`);
  if (rules.responseOps.length > 0) out.responseHeaders = ops(rules.responseOps);
  if (rules.addHeaders.length > 0) {
    out.addHeaders = rules.addHeaders.map((a) => (a.always ? `${a.name} always` : a.name));
  }
  if (rules.hideHeaders.length > 0) out.hideHeaders = [...rules.hideHeaders];
  if (rules.requestOps.length > 0) out.requestHeaders = ops(rules.requestOps);
  if (rules.return !== null) out.return = rules.return.code;
  return out;
}

export function canaryOf(canary: Canary | null): CanaryDescription | null {
  if (canary === null) return null;
  const { ingress, upstream, weight, weightTotal, header, headerValue, headerPattern, cookie } = canary;
  return {
    ingress: `${ingress.namespace}/${ingress.name}`,
    backend: upstream,
    weight,
    weightTotal,
    header,
    // the header's name stays; its value (or a pattern spelling the values out) is a shared secret
    headerValue: headerValue === null ? null : REDACTED,
    headerPattern: headerPattern === null ? null : REDACTED,
    cookie,
  };
}

/** proxy-redirect-from / -to are URLs. */
export function redactSettings(settings: UpstreamSettings): UpstreamSettings {
  const { redirect } = settings;
  if (redirect === null) return settings;
  return { ...settings, redirect: { from: redactUrl(redirect.from), to: redactUrl(redirect.to) } };
}
