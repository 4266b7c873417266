/** A CONNECT on a listener's connection, for ingress and egress: refused, without losing the answers before it. */

import type { OutgoingMessage } from "node:http";
import type { Socket } from "node:net";

/**
 * When Node meets a CONNECT it hands the socket to the 'connect' listener and takes its own
 * plumbing off: the parser, and its 'data', 'end', 'close', 'drain', 'error' and 'timeout'
 * listeners. The answers to the requests pipelined before the CONNECT are still to be written on
 * it, so this puts back what they need:
 * - 'drain' passed to the answer being written: one larger than the socket takes at once waited
 *   for a drain that never came, and the request the backend executed went unanswered;
 * - an 'error' listener: a reset would otherwise be thrown from the socket, and end the process;
 * - reading (and dropping) what follows: the CONNECT's tunnel bytes are never served, and a
 *   socket closed with input unread is reset, which destroys answers the client has not read.
 */
export function keepAnsweringAfterConnect(socket: Socket): void {
  socket.on("drain", () => {
    // Node's own relay (socketOnDrain) checks the same: the answer in flight waits for a drain.
    const answer = (socket as Socket & { _httpMessage?: OutgoingMessage | null })._httpMessage;
    if (answer?.writableNeedDrain) answer.emit("drain");
  });
  socket.on("error", () => socket.destroy());
  socket.resume();
}
