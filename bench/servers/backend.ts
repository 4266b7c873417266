/** The benchmark's backend: answers every request with 313 bytes of JSON, as in the 2026-11-22 anchors. */

import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

const SHAPE = {
  account: { bban: "12345678903", currency: "NOK" },
  balances: [{ balanceAmount: { currency: "NOK", amount: "12345.67" }, balanceType: "interimAvailable" }],
  _links: { account: { href: "/v1/accounts/acc-0001" } },
  pad: "",
};
// Padded to exactly 313 bytes, the size the anchors measured with.
const BODY = Buffer.from(JSON.stringify({ ...SHAPE, pad: "x".repeat(313 - JSON.stringify(SHAPE).length) }));

/**
 * The next request as received, kept when the parent asks ("capture", then "last"): bench/signing.ts
 * checks what the egress gateway sent. Nothing is kept otherwise.
 */
let capture = false;
let last: { method?: string | undefined; url?: string | undefined; headers: IncomingHttpHeaders } | undefined;

// A bank's core takes the head the gateway forwards: the TPP's (up to Node's 16 KiB, as the soak
// sends it) plus the identity, forwarding and trace headers the gateway adds.
const server = createServer({ maxHeaderSize: 32 * 1024 }, (req, res) => {
  if (capture) {
    capture = false;
    last = { method: req.method, url: req.url, headers: req.headers };
  }
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": BODY.length });
    res.end(BODY);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.send?.({ ready: (server.address() as AddressInfo).port, bytes: BODY.length });
});
process.on("message", (m) => {
  if (m === "cpu") process.send?.({ cpu: process.cpuUsage() });
  if (m === "capture") {
    capture = true;
    last = undefined;
    process.send?.({ capturing: true });
  }
  if (m === "last") process.send?.({ last: last ?? null });
});
process.on("disconnect", () => process.exit(0));
