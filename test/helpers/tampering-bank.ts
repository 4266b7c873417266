/**
 * A bank that signs its answers as the ingress gateway does. By path: `/large/<n>` answers n bytes,
 * signed and sent as signed; `/silent` never answers; anything else alters the body after signing.
 */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { RequestSigner } from "../../src/signature/index.js";

/** A bank that signs its answer like ingress does; see the file's comment for what each path does. */
export async function startTamperingBank(pki: DevPki): Promise<Server> {
  const signer = new RequestSigner({
    privateKey: createPrivateKey(readFileSync(pki.paths.bankQsealKey)),
    certificate: new X509Certificate(readFileSync(pki.paths.bankQseal)).raw,
    headers: ["date", "digest", "x-request-id"],
    certificateHeader: { name: "ASPSP-Signature-Certificate" },
  });
  const server = createServer((req, res) => {
    req.resume();
    if (req.url?.endsWith("/silent")) return; // the gateway's timeout answers
    req.on("end", async () => {
      const large = /\/large\/(\d+)$/.exec(req.url ?? "");
      const body = large ? "x".repeat(Number(large[1])) : JSON.stringify({ amount: "10.00" });
      const signed = await signer.sign({
        method: "",
        target: "",
        headers: { "x-request-id": String(req.headers["x-request-id"]) },
        body,
      });
      res.writeHead(200, { "content-type": "application/json", ...signed });
      res.end(large ? body : body.replace("10.00", "99.00"));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
