/**
 * The demo QTSP of the development PKI, on loopback: the CRLs at their distribution points (the
 * issuing CA's, the root's listing the revoked intermediate, the revoked CA's), an OCSP responder answering from the PKI's status.json, and every other file the PKI
 * wrote to qtsp/ (trusted lists, the EBA-format register) by name, and the EBA register's file
 * metadata describing that register's ZIP (computed per request from the file's bytes, as the
 * EBA's /register/api/filemetadata). `npm start` runs it so the whole live-trust path works offline.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import { ebaFileMetadata } from "./eba-register.js";
import { QTSP_PATHS } from "./pki.js";
import { type QtspDocument, type QtspServer, startQtspServer } from "./qtsp/server.js";

const CONTENT_TYPES: Record<string, string> = {
  ".crl": "application/pkix-crl",
  ".cer": "application/pkix-cert",
  ".xml": "application/vnd.etsi.tsl+xml",
  ".zip": "application/zip",
  ".json": "application/json",
};

interface StatusFile {
  readonly certificates: Record<string, { status: "good" } | { status: "revoked"; revokedAt: string }>;
}

export async function startDemoQtsp(options: {
  readonly pkiDir: string;
  readonly host: string;
  readonly port: number;
}): Promise<QtspServer> {
  const qtspDir = join(options.pkiDir, "qtsp");
  const status = JSON.parse(readFileSync(join(qtspDir, "status.json"), "utf8")) as StatusFile;
  const documents = new Map<string, QtspDocument>();
  for (const name of readdirSync(qtspDir)) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (!contentType || name === "status.json") continue;
    // Read per request: regenerated files are served without a restart.
    documents.set(`/${name}`, { body: () => readFileSync(join(qtspDir, name)), contentType });
  }
  documents.set(QTSP_PATHS.crl, documents.get("/demo-issuing-ca.crl")!);
  documents.set(QTSP_PATHS.caIssuers, documents.get("/demo-issuing-ca.cer")!);
  documents.set(QTSP_PATHS.rootCrl, documents.get("/demo-root-ca.crl")!);
  documents.set(QTSP_PATHS.revokedCaCrl, documents.get("/demo-revoked-ca.crl")!);
  const server = await startQtspServer({
    host: options.host,
    port: options.port,
    ca: {
      certificatePem: readFileSync(join(options.pkiDir, "trust", "demo-issuing-ca.pem"), "utf8"),
      privateKeyPem: readFileSync(join(options.pkiDir, "issuing-ca.key.pem"), "utf8"),
    },
    status: (serialHex) => {
      const entry = status.certificates[serialHex];
      if (!entry) return { status: "unknown" };
      return entry.status === "revoked" ? { status: "revoked", revokedAt: new Date(entry.revokedAt) } : entry;
    },
    documents,
  });
  const zip = join(qtspDir, EBA_ZIP);
  server.setDocument(QTSP_PATHS.ebaMetadata, {
    contentType: "application/json",
    body: () =>
      Buffer.from(
        ebaFileMetadata(readFileSync(zip), {
          context: `${server.url}/`,
          relativePath: EBA_ZIP,
          madeAt: statSync(zip).mtime,
        }),
      ),
  });
  return server;
}

/** The EBA-format register the dev PKI writes (pki.ts), served at `/${EBA_ZIP}`. */
const EBA_ZIP = "eba-register.zip";
