/**
 * The QTSP of bench/trust.ts, in a process of its own on the loopback port the bench PKI's
 * certificates name (their AIA OCSP responder and CRL distribution point):
 * - `demo`: the demo QTSP `npm start` runs (packages/dev-pki/src/demo-qtsp.ts): CRL, OCSP from the PKI's
 *   status.json, trusted lists, the EBA-format register;
 * - `good`: a bare OCSP responder (packages/dev-pki/src/qtsp/server.ts) signing with the issuing CA's key and
 *   answering "good" for every serial, as test/helpers/test-qtsp.ts's startTestQtsp does by default
 *   (certificates issued during the run are in no status.json);
 * - `reuse`: the same, serving an answer made once per request again (RFC 5019 6: answers made
 *   ahead), so a measured request costs the responder no signature.
 * Answers "cpu" with its CPU time and request counts so far.
 */

import "reflect-metadata";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { QTSP_PATHS, type QtspServer, startDemoQtsp, startQtspServer } from "@psd2-gateway/dev-pki";

const [mode, pkiDir, port] = process.argv.slice(2) as [string, string, string];

export interface QtspStats {
  readonly cpu: NodeJS.CpuUsage;
  readonly ocspRequests: number;
  readonly documentRequests: number;
}

let server: QtspServer | undefined;

async function main() {
  server =
    mode === "demo"
      ? await startDemoQtsp({ pkiDir, host: "127.0.0.1", port: Number(port) })
      : await startQtspServer({
          port: Number(port),
          ca: {
            certificatePem: readFileSync(join(pkiDir, "trust", "demo-issuing-ca.pem"), "utf8"),
            privateKeyPem: readFileSync(join(pkiDir, "issuing-ca.key.pem"), "utf8"),
          },
          status: () => ({ status: "good" }),
          // The intermediates name the root's CRL: the whole path is checked.
          documents: new Map([
            [
              QTSP_PATHS.rootCrl,
              {
                body: readFileSync(join(pkiDir, "qtsp", "demo-root-ca.crl")),
                contentType: "application/pkix-crl",
              },
            ],
          ]),
          // `reuse`: answers made once per request and served again, as RFC 5019 responders do.
          ...(mode === "reuse" ? { answerReuseMs: 3_600_000 } : {}),
        });
  process.send?.({ ready: Number(new URL(server.url).port) });
}

process.on("message", (m) => {
  if (m !== "cpu") return;
  const stats: QtspStats = {
    cpu: process.cpuUsage(),
    ocspRequests: server?.stats.ocspRequests ?? 0,
    documentRequests: server?.stats.documentRequests ?? 0,
  };
  process.send?.(stats);
});
process.on("disconnect", () => {
  void (server?.close() ?? Promise.resolve()).finally(() => process.exit(0));
});
void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
