/** Closing a connection without losing the answers on it (RFC 9112 9.6), for ingress and egress listeners. */

import type { Socket } from "node:net";

/**
 * Half-closes once the answers are written, reads and drops what the client still sends, and
 * closes when the client has closed its side (or after `lingerMs`). Closing at once while
 * pipelined requests still arrive makes the kernel send a RST, and a RST throws away the answers
 * the client has not read yet.
 */
export function closeLingering(socket: Socket, lingerMs: number): void {
  const destroy = () => socket.destroy();
  const timer = setTimeout(destroy, lingerMs);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  const clientDone = () => (socket.writableFinished ? destroy() : socket.once("finish", destroy));
  if (socket.readableEnded) clientDone();
  else socket.once("end", clientDone);
  socket.end();
}
