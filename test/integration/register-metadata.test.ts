/**
 * The EBA register by its metadata URL, end to end: the demo QTSP (the one `npm start` runs, over
 * a dev PKI whose certificates name it) serves /register/api/filemetadata describing the EBA-format
 * ZIP it serves, computed from the file's bytes; a gateway whose register is that metadata URL
 * accepts a registered TPP, follows a rewritten file (same name, new SHA-256) and a metadata that
 * names a new file where the TPP is withdrawn, after the poll, and /trust names the file held. A
 * ZIP bomb named by the metadata is refused by the register's bounds: the copy held stays in force,
 * /trust names the bound and psd2_gateway_trust_documents_refused_total counts it.
 */

import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { QtspServer } from "@psd2-gateway/dev-pki";
import {
  ebaFileMetadata,
  ebaRegisterDocument,
  ebaRegisterZip,
  QTSP_PATHS,
  startDemoQtsp,
} from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEbaFileMetadata } from "../../src/trust/formats/eba-file-metadata.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall } from "../helpers/gateway-fixture.js";
import { callUntil, PAYMENT } from "../helpers/live-trust-calls.js";
import { type QtspPki, qtspPki } from "../helpers/test-qtsp.js";
import { handZip, zerosDeflated } from "../helpers/zip-bomb.js";

let q: QtspPki;
let qtsp: QtspServer;

beforeAll(async () => {
  q = await qtspPki();
  qtsp = await startDemoQtsp({ pkiDir: q.pki.dir, host: "127.0.0.1", port: q.port });
}, 60_000);
afterAll(() => qtsp?.close());

const metadataUrl = () => `${qtsp.url}${QTSP_PATHS.ebaMetadata}`;

describe("the demo QTSP's EBA file metadata", () => {
  it("names the ZIP it serves, with that ZIP's size and SHA-256", async () => {
    const answer = await fetch(metadataUrl());
    expect(answer.headers.get("content-type")).toBe("application/json");
    const metadata = parseEbaFileMetadata(new Uint8Array(await answer.arrayBuffer()));
    expect(metadata.fileUrl).toBe(`${qtsp.url}/eba-register.zip`);
    const zip = new Uint8Array(await (await fetch(metadata.fileUrl)).arrayBuffer());
    expect(zip.length).toBe(metadata.size);
    expect(createHash("sha256").update(zip).digest("hex")).toBe(metadata.sha256);
    expect(metadata.timestamp).toMatch(/^[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} UTC \d{4}$/);
  });
});

describe("a gateway whose register is the EBA metadata URL", () => {
  const env = useGatewayAndBackend(() => ({
    pki: q.pki,
    config: {
      // Verdicts would live five minutes: only the register's new copy can end them in time.
      cache: { ttlSeconds: 300 },
      register: { file: undefined, metadata: metadataUrl(), pollSeconds: 1 },
    },
  }));
  const tppA = () => ({ organizationId: q.pki.tppA.organizationId, name: q.pki.tppA.name });
  const read = () => signedCall(env.gw, { signer: q.pki.tppA.qseal, target: "/v1/accounts" });
  const pay = () => signedCall(env.gw, { signer: q.pki.tppA.qseal, ...PAYMENT });
  const registerStatus = async () => {
    const report = (await (await fetch(`${env.gw.gateway.adminUrl}/trust`)).json()) as {
      sources: { kind: string; source: string; held?: string; stale: boolean; lastError?: string }[];
    };
    return report.sources.find((s) => s.kind === "register")!;
  };

  it("accepts the registered TPP and says in /trust which file it holds", async () => {
    expect((await pay()).status).toBe(200);
    expect(await registerStatus()).toMatchObject({
      source: `register: ${metadataUrl()}`,
      held: expect.stringContaining(`${qtsp.url}/eba-register.zip of `),
      stale: false,
    });
  });

  it("follows the file rewritten on disk (same name, new SHA-256): a role taken away refuses the payment", async () => {
    writeFileSync(
      join(q.pki.dir, "qtsp", "eba-register.zip"),
      ebaRegisterZip(ebaRegisterDocument([{ ...tppA(), roles: ["PSP_AI"] }])),
    );
    const refused = await callUntil(pay, (r) => r.status !== 200, 10_000);
    expect(refused.json.tppMessages?.[0]?.code, refused.text).toBe("ROLE_INVALID");
    expect((await read()).status).toBe(200);
  });

  it("refuses the TPP once the metadata names a new file where it is withdrawn", async () => {
    const file = "register/downloads/PSDMD/20261127/download-PSDMD-202611270400.zip";
    const zip = ebaRegisterZip(
      ebaRegisterDocument([{ ...tppA(), roles: ["PSP_AI"], withdrawnOn: "2026-11-26" }]),
    );
    qtsp.setDocument(`/${file}`, { body: zip, contentType: "application/zip" });
    qtsp.setDocument(QTSP_PATHS.ebaMetadata, {
      contentType: "application/json",
      body: Buffer.from(
        ebaFileMetadata(zip, { context: `${qtsp.url}/`, relativePath: file, madeAt: new Date() }),
      ),
    });
    const refused = await callUntil(read, (r) => r.status !== 200, 10_000);
    expect(refused.status).toBe(400);
    expect(refused.json.tppMessages?.[0]?.code, refused.text).toBe("CERTIFICATE_BLOCKED");
    expect(refused.json.tppMessages?.[0]?.text).toContain("2026-11-26");
    // Refused at the gateway: the next request does not reach the bank either.
    const forwarded = env.backend.requests.length;
    expect((await read()).status).toBe(400);
    expect(env.backend.requests).toHaveLength(forwarded);
    expect((await registerStatus()).held).toContain(`${qtsp.url}/${file} of `);
  });
});

describe("a gateway whose register's metadata names a ZIP bomb", () => {
  // Paths of its own on the shared QTSP: the describe above rewrites the default ones.
  const metadataPath = "/bounds/filemetadata";
  const publish = (file: string, zip: Uint8Array) => {
    qtsp.setDocument(`/${file}`, { body: zip, contentType: "application/zip" });
    qtsp.setDocument(metadataPath, {
      contentType: "application/json",
      body: Buffer.from(
        ebaFileMetadata(zip, { context: `${qtsp.url}/`, relativePath: file, madeAt: new Date() }),
      ),
    });
  };
  const env = useGatewayAndBackend(() => {
    publish(
      "bounds/register.zip",
      ebaRegisterZip(
        ebaRegisterDocument([
          { organizationId: q.pki.tppA.organizationId, name: q.pki.tppA.name, roles: q.pki.tppA.roles },
        ]),
      ),
    );
    return {
      pki: q.pki,
      config: { register: { file: undefined, metadata: `${qtsp.url}${metadataPath}`, pollSeconds: 1 } },
    };
  });
  const pay = () => signedCall(env.gw, { signer: q.pki.tppA.qseal, ...PAYMENT });
  const registerError = async () => {
    const report = (await (await fetch(`${env.gw.gateway.adminUrl}/trust`)).json()) as {
      sources: { kind: string; lastError?: string; held?: string }[];
    };
    return report.sources.find((s) => s.kind === "register")!;
  };
  const refusedCount = async () => {
    const text = await (await fetch(`${env.gw.gateway.adminUrl}/metrics`)).text();
    const line = text
      .split("\n")
      .find((l) =>
        l.startsWith(
          'psd2_gateway_trust_documents_refused_total{source_kind="register",reason="uncompressed-size"}',
        ),
      );
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  };

  it("refuses the bomb (4 GiB declared, 4 MiB served), keeps the register held and counts the refusal", async () => {
    expect((await pay()).status).toBe(200);
    expect(await refusedCount()).toBe(0);
    publish(
      "bounds/bomb.zip",
      handZip([{ name: "register.json", data: zerosDeflated(4096), declaredSize: 4 * 1024 * 1024 * 1024 }]),
    );
    const deadline = Date.now() + 15_000;
    while ((await refusedCount()) === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(await refusedCount()).toBeGreaterThanOrEqual(1);
    const status = await registerError();
    expect(status.lastError).toContain(
      "register ZIP refused: register.json declares 4294967296 bytes uncompressed",
    );
    expect(status.held).toContain(`${qtsp.url}/bounds/register.zip of `);
    // The register held is still the one in force: the TPP's payment goes through.
    expect((await pay()).status).toBe(200);
  });
});
