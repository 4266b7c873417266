/** What both modes' builders share: closing what was started, and draining a listener. */

import type { Server } from "node:http";

/** What has been started so far, closed in reverse order when a later step fails (or at shutdown). */
export class Started {
  private readonly closers: (() => unknown)[] = [];
  add(close: () => unknown): void {
    this.closers.push(close);
  }
  async closeAll(): Promise<void> {
    for (const close of this.closers.reverse()) await Promise.resolve(close()).catch(() => {});
  }
}

/** Stop accepting, close idle keep-alive connections, let requests in flight finish, then cut the rest. */
export async function drain(server: Server, graceMs: number): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Connections that finish a request while draining are closed instead of kept alive.
  const idle = setInterval(() => server.closeIdleConnections(), 100);
  const force = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearInterval(idle);
  clearTimeout(force);
}
