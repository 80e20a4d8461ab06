// The HTTPS server's own TLS context: the SNI callback, the credentials of handshakes without SNI,
// and what OpenSSL reads from this context only, whichever host context the SNI callback picks
// (checked on Node 24: the ECDH groups, the DH parameters, SSL_OP_NO_TICKET, the session lifetime
// and the ticket keys of the context the handshake started on apply; a host context's are ignored).

import { constants as cryptoConstants } from 'node:crypto';
import type https from 'node:https';
import type { SecureContext, Server as TlsServer } from 'node:tls';
import type { SslHandshakeConfig } from '../../model/configmap/tls-session-keys.ts';
import { DEFAULT_SSL_HANDSHAKE, NGINX_SESSION_TIMEOUT } from '../../model/configmap/tls-session-keys.ts';
import { requestClientCertificate } from '../access/client-cert.ts';
import type { SniStore, TlsSettings } from './sni.ts';

/** ConfigMap settings only the server's own context decides (ssl-ecdh-curve, -dh-param, -session-*). */
export interface HandshakeSettings {
  /** OpenSSL group list or `auto` */
  ecdhCurve: string;
  /** DH parameters (PEM), or null: no DHE cipher */
  dhparam: string | null;
  /** seconds a session may be resumed, from a ticket or the cache */
  sessionTimeout: number;
  /** session tickets issued and accepted */
  tickets: boolean;
  /** a handshake naming no server, or none, is refused: no certificate is sent */
  rejectHandshake: boolean;
}

/** The handshake settings of a model's ConfigMap, as ingress-nginx renders them into nginx.conf. */
export function handshakeSettings(config: SslHandshakeConfig = DEFAULT_SSL_HANDSHAKE): HandshakeSettings {
  return {
    ecdhCurve: config.ecdhCurve,
    dhparam: config.dhParam === '' ? null : config.dhParam,
    // without ssl-session-cache ingress-nginx renders no ssl_session_timeout: NGINX's 5m applies
    sessionTimeout: config.sessionCache ? config.sessionTimeout : NGINX_SESSION_TIMEOUT,
    tickets: config.sessionTickets,
    rejectHandshake: config.rejectHandshake,
  };
}

const handshakeKey = (h: HandshakeSettings): string =>
  `${h.ecdhCurve}|${h.sessionTimeout}|${h.tickets}|${h.rejectHandshake}|${h.dhparam ?? ''}`;

/**
 * The options of the server's own credentials: the default certificate (none when handshakes are
 * refused: a ClientHello without SNI then fails for want of a certificate, with a handshake_failure
 * alert) and the handshake settings.
 */
function serverCredentials(store: SniStore) {
  const { settings, handshake } = store;
  return {
    ...(handshake.rejectHandshake
      ? {}
      : { cert: store.defaultCertificate.certPem, key: store.defaultCertificate.keyPem }),
    minVersion: settings.minVersion,
    maxVersion: settings.maxVersion,
    ciphers: settings.ciphers,
    ecdhCurve: handshake.ecdhCurve,
    ...(handshake.dhparam === null ? {} : { dhparam: handshake.dhparam }),
    sessionTimeout: handshake.sessionTimeout,
    secureOptions: handshake.tickets ? 0 : cryptoConstants.SSL_OP_NO_TICKET,
  };
}

const settingsKey = (settings: TlsSettings): string =>
  `${settings.minVersion}|${settings.maxVersion}|${settings.ciphers}`;

/** What each server currently holds as its own credentials (default certificate, settings). */
const serverDefaults = new WeakMap<TlsServer, string>();

/**
 * https.createServer options: SNICallback reading getStore() on every handshake (so a swapped store
 * applies to the next handshake), the server's own credentials, ALPN http/1.1.
 *
 * A ClientHello without SNI never reaches the SNICallback: it gets the server's own credentials, which
 * are the default certificate of the store at creation. When a swap changes the default certificate,
 * call `applyDefaultCertificate(server, store)` so those handshakes follow.
 */
export function httpsServerOptions(getStore: () => SniStore): https.ServerOptions {
  const store = getStore();
  return {
    ...serverCredentials(store),
    ALPNProtocols: ['http/1.1'],
    SNICallback(
      this: unknown,
      servername: string,
      callback: (error: Error | null, context?: SecureContext) => void,
    ) {
      let context: SecureContext;
      try {
        const store = getStore();
        const clientAuth = store.clientAuthFor?.(servername);
        if (clientAuth !== undefined) {
          // `this` is the TLS socket of the handshake: only its client is asked for a certificate
          requestClientCertificate(this, clientAuth.servername, clientAuth.caSha256);
          callback(null, clientAuth.context);
          return;
        }
        context = store.contextFor(servername);
      } catch (error) {
        callback(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      callback(null, context);
    },
  };
}

/**
 * Make handshakes on `server` (created with httpsServerOptions) follow `store`: the default
 * certificate of handshakes without SNI, and the handshake settings. Cheap when nothing changed;
 * returns whether the server's credentials were replaced. Connections already open keep theirs; the
 * ticket keys survive the replacement (Node keeps them).
 */
export function applyDefaultCertificate(server: TlsServer, store: SniStore): boolean {
  // the server's own context also decides the protocol versions and ciphers of every handshake
  const key = `${store.defaultSha256}|${settingsKey(store.settings)}|${handshakeKey(store.handshake)}`;
  const current = serverDefaults.get(server);
  if (current === key) return false;
  server.setSecureContext(serverCredentials(store));
  serverDefaults.set(server, key);
  return true;
}
