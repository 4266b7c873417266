/**
 * The trust sources as the gateway starts them from a config (startTrust): in order, reported
 * together, reloaded all or nothing, and a start that fails closes what had started. Real files
 * from the dev PKI; nothing is fetched (no CRL URLs configured, no certificate checked) but the
 * register by the EBA's metadata URL, from a server on loopback, and, for the bounds, documents
 * handed to a fetcher that refuses each one as a bound would.
 */

import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DevPki,
  ebaFileMetadata,
  ebaRegisterDocument,
  ebaRegisterZip,
  generateDevPki,
} from "@psd2-gateway/dev-pki";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTrust, type Trust } from "../../../src/app/trust.js";
import { validateConfig } from "../../../src/config/load.js";
import { parseCertificate } from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import { createLogger } from "../../../src/observability/logger.js";
import { DocumentRefused, type RefusalReason } from "../../../src/trust/bounds.js";

let pki: DevPki;
let trust: Trust | undefined;
const logger = createLogger("silent");

beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-app-trust-")));
});

afterEach(() => {
  trust?.stop();
  trust = undefined;
});

function configWith(trustSection: Record<string, unknown>, register?: Record<string, unknown>) {
  return validateConfig({
    listen: { host: "127.0.0.1", port: 0 },
    backend: { url: "http://127.0.0.1:9" },
    trust: trustSection,
    register: register ?? { file: pki.paths.register },
    log: { level: "silent" },
    admin: { enabled: false },
  });
}

describe("startTrust", () => {
  it("starts the folders, the register, fetched CRLs and OCSP in that order and reports them together", async () => {
    let changes = 0;
    trust = await startTrust(configWith({ caDir: pki.paths.trustDir }), {
      logger,
      now: Date.now,
      onChange: () => changes++,
    });
    expect(trust.sources.map((s) => s.name)).toEqual([
      pki.paths.trustDir,
      "register",
      "fetched CRLs",
      "OCSP responders",
    ]);
    expect(trust.pool.trustStore.size).toBe(3);
    expect(trust.register.isFresh()).toBe(true);
    expect(changes).toBe(1);
    const kinds = trust.statuses().map((s) => s.kind);
    expect(kinds).toContain("register");
    expect(trust.report().ocspCache).toMatchObject({ entries: 0, hits: 0, misses: 0 });
  });

  it("reloads the folders all or nothing: one that no longer loads throws and keeps the store in use", async () => {
    const caDir = mkdtempSync(join(tmpdir(), "psd2-app-trust-ca-"));
    cpSync(pki.paths.trustDir, caDir, { recursive: true });
    trust = await startTrust(configWith({ caDir }), { logger, now: Date.now, onChange: () => {} });
    const before = trust.pool.trustStore;

    rmSync(caDir, { recursive: true });
    cpSync(pki.paths.trustDir, caDir, { recursive: true, filter: (f) => !f.endsWith(".pem") });
    expect(() => trust!.prepareReload()).toThrow(/no CA certificates found/);
    expect(trust.pool.trustStore).toBe(before);

    cpSync(pki.paths.trustDir, caDir, { recursive: true });
    const commit = trust.prepareReload();
    expect(trust.pool.trustStore).toBe(before);
    commit();
    expect(trust.pool.trustStore).not.toBe(before);
    expect(trust.pool.trustStore.size).toBe(3);
  });

  it("fails to start when a source cannot, with that source's reason", async () => {
    const noCertificate = join(mkdtempSync(join(tmpdir(), "psd2-app-trust-lotl-")), "signers.pem");
    writeFileSync(noCertificate, "not a certificate\n");
    await expect(
      startTrust(
        configWith({
          caDir: pki.paths.trustDir,
          trustedLists: { lotl: "http://127.0.0.1:9/lotl.xml", lotlSigners: [noCertificate] },
        }),
        { logger, now: Date.now, onChange: () => {} },
      ),
    ).rejects.toThrow(`trust.trustedLists.lotlSigners: no certificate in ${noCertificate}`);
  });
});

describe("documents refused by their bounds", () => {
  it("reach events.documentRefused with their source's kind, the register's bounds taken from the config", async () => {
    const dir = mkdtempSync(join(tmpdir(), "psd2-app-trust-bounds-"));
    const zip = join(dir, "register.zip");
    // The dev register's ZIP holds the JSON and its sidecar: two entries, one more than configured.
    writeFileSync(
      zip,
      ebaRegisterZip(
        ebaRegisterDocument([{ organizationId: pki.tppA.organizationId, name: "A", roles: ["PSP_AI"] }]),
      ),
    );
    const signer = readdirSync(pki.paths.trustDir).find((f) => f.endsWith(".pem") && !f.includes(".crl"))!;
    const refused: [string, RefusalReason][] = [];
    // Every fetch refused as a bound would refuse it: an oversize CRL or OCSP answer, a gzip list.
    const fetch = async (url: string) => {
      throw new DocumentRefused(url.endsWith(".xml") ? "content-encoding" : "size", `refused ${url}`);
    };
    trust = await startTrust(
      validateConfig({
        listen: { host: "127.0.0.1", port: 0 },
        backend: { url: "http://127.0.0.1:9" },
        trust: {
          caDir: pki.paths.trustDir,
          trustedLists: {
            lotl: "http://127.0.0.1:9/lotl.xml",
            lotlSigners: [join(pki.paths.trustDir, signer)],
          },
        },
        revocation: { crl: { urls: ["http://127.0.0.1:9/ca.crl"] } },
        register: { file: zip, format: "eba-zip", zip: { maxEntries: 1 } },
        log: { level: "silent" },
        admin: { enabled: false },
      }),
      {
        logger,
        now: Date.now,
        onChange: () => {},
        fetch,
        events: { documentRefused: (kind, reason) => refused.push([kind, reason]) },
      },
    );
    expect(refused).toEqual([
      ["register", "entries"],
      ["trusted-list", "content-encoding"],
      ["crl", "size"],
    ]);
    expect(trust.statuses().find((s) => s.kind === "register")?.lastError).toBe(
      "register ZIP refused: it lists 2 entries, more than the 1 allowed",
    );
    const parsed = (der: Uint8Array) => {
      const c = parseCertificate(der);
      if (isRejection(c)) throw new Error(c.text);
      return c;
    };
    refused.length = 0;
    // Certificates that name a responder (the shared PKI's name none): OCSP is asked first.
    const named = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-app-trust-aia-")), Date.now(), {
      qtspUrl: "http://127.0.0.1:9",
    });
    await trust.revocation.check(parsed(named.tppA.qseal.der), parsed(named.issuingCa.der), new Date());
    expect(refused[0]).toEqual(["ocsp", "size"]);
  });
});

describe("a register source by the EBA's metadata URL", () => {
  let server: Server;
  let base = "";
  beforeAll(async () => {
    const zip = ebaRegisterZip(
      ebaRegisterDocument([{ organizationId: pki.tppA.organizationId, name: "A", roles: ["PSP_AI"] }]),
    );
    server = createServer((req, res) => {
      if (req.url === "/api/filemetadata")
        return void res.end(
          ebaFileMetadata(zip, { context: `${base}/files/`, relativePath: "r.zip", madeAt: new Date(0) }),
        );
      if (req.url === "/files/r.zip") return void res.end(zip);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return () => new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it.each([
    {
      name: "the simple form",
      register: () => ({ metadata: `${base}/api/filemetadata` }),
      layer: "register",
    },
    {
      name: "a source",
      register: () => ({ sources: [{ name: "eba", metadata: `${base}/api/filemetadata` }] }),
      layer: "eba",
    },
  ])("loads the file the metadata names at start: $name", async ({ register, layer }) => {
    trust = await startTrust(configWith({ caDir: pki.paths.trustDir }, register()), {
      logger,
      now: Date.now,
      onChange: () => {},
    });
    expect(trust.register.isFresh()).toBe(true);
    expect(trust.statuses().find((s) => s.kind === "register")).toMatchObject({
      source: `${layer}: ${base}/api/filemetadata`,
      held: `${base}/files/r.zip of Thu Jan 01 00:00:00 UTC 1970`,
      size: 1,
      stale: false,
    });
  });
});
