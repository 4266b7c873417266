/** The benchmark's backend: answers every request with 313 bytes of JSON, like BENCH-ANCHORS.md's. */

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const SHAPE = {
  account: { bban: "12345678903", currency: "NOK" },
  balances: [{ balanceAmount: { currency: "NOK", amount: "12345.67" }, balanceType: "interimAvailable" }],
  _links: { account: { href: "/v1/accounts/acc-0001" } },
  pad: "",
};
// Padded to exactly 313 bytes, the size the anchors measured with.
const BODY = Buffer.from(JSON.stringify({ ...SHAPE, pad: "x".repeat(313 - JSON.stringify(SHAPE).length) }));

const server = createServer((req, res) => {
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
});
process.on("disconnect", () => process.exit(0));
