/**
 * One backend: an undici keep-alive pool to a single origin, over HTTP or HTTPS with its own CA
 * and, when the backend wants mTLS, a client certificate. Shared by ingress and egress modes.
 */

import { readFileSync } from "node:fs";
import { Pool } from "undici";

export interface BackendOptions {
  readonly url: string;
  /** PEM text or file paths are resolved by the caller; these are PEM contents. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly timeoutMs: number;
  readonly connections: number;
  /** A Unix socket to connect to instead of the URL's host and port (the URL still gives Host). */
  readonly socketPath?: string;
}

export class Backend {
  readonly origin: string;
  /** The Host the HTTP client sends (`core.bank:8443`; no port when it is the scheme's). */
  readonly host: string;
  /** Path prefix of the backend URL (`/core` in `https://core.bank:8443/core`), without trailing slash. */
  readonly basePath: string;
  readonly pool: Pool;
  readonly timeoutMs: number;

  constructor(options: BackendOptions) {
    const url = new URL(options.url);
    this.origin = url.origin;
    this.host = url.host;
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs;
    this.pool = new Pool(this.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      ...(options.socketPath ? { socketPath: options.socketPath } : {}),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: {
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.cert ? { cert: options.cert } : {}),
        ...(options.key ? { key: options.key } : {}),
        rejectUnauthorized: true,
      },
    });
  }

  static fromFiles(
    options: Omit<BackendOptions, "ca" | "cert" | "key"> & { ca?: string; cert?: string; key?: string },
  ): Backend {
    const read = (file?: string) => (file ? readFileSync(file, "utf8") : undefined);
    return new Backend({
      ...options,
      ca: read(options.ca),
      cert: read(options.cert),
      key: read(options.key),
    });
  }

  /** Exchanges that picked this pool and may still dispatch on it. */
  private holders = 0;
  private retired: (() => void) | undefined;

  /** An exchange picked this pool: it stays open until the exchange lets go (`release`). */
  hold(): void {
    this.holders++;
  }

  release(): void {
    this.holders--;
    if (this.holders === 0) this.retired?.();
  }

  /**
   * A reload's old pool: closed once no exchange holds it any more, so that one still reading
   * its body or waiting for a certificate verdict when the reload came is sent on the pool it
   * picked (a request dispatched on a closed pool fails); undici's close then lets what was
   * dispatched finish.
   */
  retire(): Promise<void> {
    if (this.holders === 0) return this.close();
    return new Promise((resolve) => {
      this.retired = () => {
        this.retired = undefined;
        resolve(this.close());
      };
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
