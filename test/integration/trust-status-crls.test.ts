/**
 * Every CRL the gateway keeps, seen from outside: `psd2-gateway trust status` (the command, run
 * against a real gateway process) prints a block per CRL — files in trust.crlDir, revocation.crl.urls
 * and the certificates' distribution points on a real QTSP on loopback — with issuer, thisUpdate,
 * nextUpdate, age and failures, then the OCSP cache; /metrics has the same sources.
 */

import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import type { QtspServer } from "@psd2-gateway/dev-pki";
import { type DevPki, QTSP_PATHS } from "@psd2-gateway/dev-pki";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCertificate } from "../../src/eidas/index.js";
import { isRejection } from "../../src/errors.js";
import { runCli } from "../helpers/cli.js";
import { prepareSignedCall, testPki } from "../helpers/gateway-fixture.js";
import {
  type GatewayProcess,
  replaceFileAtomically,
  sendPrepared,
  startGatewayProcess,
} from "../helpers/gateway-process.js";
import { scrape } from "../helpers/prometheus-text.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { issuingCaCrl, type QtspPki, qtspPki, startTestQtsp } from "../helpers/test-qtsp.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const HOUR = 3600_000;
/** CRL times are whole seconds. */
const at = Math.floor(Date.now() / 1000) * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

const cli = (args: readonly string[]) =>
  runCli(args, { env: { LOG_LEVEL: process.env.LOG_LEVEL ?? "info" } });

/** The lines of the block `trust status` printed for one source, its state from the first. */
function blockOf(stdout: string, kind: string, source: string): { state: string; lines: string[] } {
  const lines = stdout.split("\n");
  const escaped = source.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const head = new RegExp(`^${kind}\\s+(fresh|STALE|failing \\(last copy fresh\\))\\s+${escaped}$`);
  const start = lines.findIndex((l) => head.test(l));
  if (start < 0) throw new Error(`no block for ${kind} ${source} in:\n${stdout}`);
  let end = start + 1;
  while (end < lines.length && lines[end]!.startsWith(" ")) end++;
  return { state: head.exec(lines[start]!)![1]!, lines: lines.slice(start + 1, end).map((l) => l.trim()) };
}

function subjectOf(ca: DevPki["root"]): string {
  const parsed = parseCertificate(ca.der);
  if (isRejection(parsed)) throw new Error(parsed.text);
  return parsed.subjectRfc2253;
}

async function trustJson(gateway: GatewayProcess) {
  const r = await cli(["trust", "status", "--config", gateway.configFile, "--json"]);
  return JSON.parse(r.stdout) as {
    sources: { kind: string; source: string; failures: number; lastSuccess?: number; lastError?: string }[];
  };
}

describe("trust status with live trust: CRL files, configured URLs, distribution points and the OCSP cache", () => {
  let q: QtspPki;
  let qtsp: QtspServer;
  let backend: RecordingBackend;
  let gateway: GatewayProcess;
  let dp: string;
  let configured: string;
  let fileCrl: string;
  let fileList: x509.X509Crl;
  let responder: string;

  beforeAll(async () => {
    q = await qtspPki();
    dp = `${q.url}${QTSP_PATHS.crl}`;
    configured = `${q.url}/crl/configured.crl`;
    responder = `${q.url}${QTSP_PATHS.ocsp}`;
    fileCrl = join(q.pki.paths.trustDir, "demo-issuing-ca.crl.pem");
    fileList = new x509.X509Crl(readFileSync(fileCrl, "utf8"));
    const dpList = await issuingCaCrl(q.pki, {
      thisUpdate: new Date(at - 60_000),
      nextUpdate: new Date(at + HOUR),
    });
    const tppB = q.pki.tppB.qseal.certificate.serialNumber.toUpperCase();
    qtsp = await startTestQtsp(q, {
      crl: () => dpList,
      // tppB's responder does not know it: its check falls back to the distribution point.
      status: (serial) => (serial === tppB ? { status: "unknown" } : { status: "good" }),
    });
    qtsp.setDocument("/crl/configured.crl", {
      body: Buffer.from(
        await issuingCaCrl(q.pki, {
          thisUpdate: new Date(at - 2 * HOUR),
          nextUpdate: new Date(at + 24 * HOUR),
        }),
      ),
      contentType: "application/pkix-crl",
    });
    backend = await startRecordingBackend();
    gateway = await startGatewayProcess({
      pki: q.pki,
      dir: mkdtempSync(join(tmpdir(), "psd2-crlstatus-")),
      backendUrl: backend.url,
      config: {
        revocation: { order: "ocsp-crl", crl: { urls: [configured], graceSeconds: 600 } },
      },
    });
    const agent = new Agent({ connect: { ca: q.pki.root.pem } });
    const call = async (signer: DevPki["tppA"]["qseal"]) => {
      const r = await sendPrepared(
        gateway.url,
        await prepareSignedCall({ signer, target: "/v1/accounts" }),
        agent,
      );
      expect(r.status, r.text).toBe(200);
    };
    await call(q.pki.tppA.qseal); // OCSP: a miss, then held
    await call(q.pki.tppB.qseal); // OCSP "unknown" (a miss, held), then the distribution point
    // A reload drops the certificate verdicts but not the OCSP answers: tppA's is a hit.
    const from = gateway.lines.length;
    gateway.signal("SIGHUP");
    await gateway.waitForLog("reloaded", 10_000, from);
    await call(q.pki.tppA.qseal);
    await agent.close();
  }, 90_000);

  afterAll(async () => {
    await gateway?.stop();
    await backend?.close();
    await qtsp?.close();
  });

  it("prints a block per CRL with origin, issuer, thisUpdate, nextUpdate, age and failures, then the OCSP cache", async () => {
    const r = await cli(["trust", "status", "--config", gateway.configFile]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const issuer = subjectOf(q.pki.issuingCa);

    const point = blockOf(r.stdout, "crl", dp);
    expect(point.state).toBe("fresh");
    expect(point.lines[0]).toBe(`certificates' distribution point; issuer ${issuer}`);
    expect(point.lines[1]).toMatch(
      new RegExp(
        `^thisUpdate ${iso(at - 60_000)} \\((6\\d|[7-9]\\d|\\d{3}) s old\\); nextUpdate ${iso(at + HOUR)} \\(\\+ 600 s grace\\)$`,
      ),
    );
    expect(point.lines[2]).toMatch(/^last success \d{4}-\d\d-\d\dT\S+ \(\d+ s ago\); 0 entries; 0 failures$/);

    const url = blockOf(r.stdout, "crl", configured);
    expect(url.state).toBe("fresh");
    expect(url.lines[0]).toBe(`revocation.crl.urls; issuer ${issuer}`);
    expect(url.lines[1]).toMatch(
      new RegExp(`^thisUpdate ${iso(at - 2 * HOUR)} \\(\\d+ s old\\); nextUpdate ${iso(at + 24 * HOUR)}`),
    );

    const file = blockOf(r.stdout, "crl", fileCrl);
    expect(file.state).toBe("fresh");
    expect(file.lines[0]).toBe(`file in trust.crlDir; issuer ${issuer}`);
    expect(file.lines[1]).toMatch(
      new RegExp(`^thisUpdate ${fileList.thisUpdate.toISOString()} \\(\\d+ s old\\); `),
    );
    expect(file.lines[1]).toContain(`nextUpdate ${fileList.nextUpdate!.toISOString()} (+ 600 s grace)`);
    // The dev PKI's CRL lists its one revoked certificate.
    expect(file.lines[2]).toMatch(/; 1 entries; 0 failures$/);

    const ocsp = blockOf(r.stdout, "ocsp", responder);
    expect(ocsp.state).toBe("fresh");
    expect(ocsp.lines[0]).toMatch(/; 2 entries; 0 failures$/);
    expect(r.stdout).toMatch(
      /^ocsp cache\s+2 answers held \(max 10000\); 1 hits, 2 misses, 0 evictions; 1 responder$/m,
    );
    // Besides these three: the root's distribution point (the issuing CA names it: the path is
    // checked) and the root's and the revoked CA's files.
    expect(r.stdout.match(/^crl\s/gm)).toHaveLength(6);
    expect(blockOf(r.stdout, "crl", `${q.url}${QTSP_PATHS.rootCrl}`).lines[0]).toBe(
      `certificates' distribution point; issuer ${subjectOf(q.pki.root)}`,
    );
  });

  it("--json carries the same: origin, issuer and dates per CRL, and the OCSP cache", async () => {
    const r = await cli(["trust", "status", "--config", gateway.configFile, "--json"]);
    const answer = JSON.parse(r.stdout) as {
      sources: { kind: string; source: string; crl?: Record<string, unknown> }[];
      ocspCache: Record<string, number>;
    };
    expect(answer.sources.find((s) => s.source === dp)?.crl).toEqual({
      origin: "distribution-point",
      issuer: subjectOf(q.pki.issuingCa),
      thisUpdate: at - 60_000,
      nextUpdate: at + HOUR,
    });
    expect(answer.ocspCache).toEqual({ entries: 2, maxEntries: 10_000, hits: 1, misses: 2, evictions: 0 });
  });

  it("/metrics has each CRL as a trust source (kind crl, source its URL or file) and the OCSP cache", async () => {
    const m = await scrape(gateway.adminUrl);
    const crl = (source: string) => ({ kind: "crl", source });
    expect(m.series("psd2_gateway_trust_source_stale", { kind: "crl" })).toHaveLength(6);
    for (const source of [dp, configured, fileCrl, `${q.url}${QTSP_PATHS.rootCrl}`]) {
      expect(m.only("psd2_gateway_trust_source_stale", crl(source)), source).toBe(0);
      expect(m.only("psd2_gateway_trust_source_failures", crl(source)), source).toBe(0);
      expect(m.only("psd2_gateway_trust_source_age_seconds", crl(source)), source).toBeGreaterThanOrEqual(0);
    }
    expect(m.only("psd2_gateway_trust_source_entries", crl(fileCrl))).toBe(1);
    expect(m.only("psd2_gateway_trust_source_this_update_timestamp_seconds", crl(dp))).toBe(
      (at - 60_000) / 1000,
    );
    expect(m.only("psd2_gateway_trust_source_next_update_timestamp_seconds", crl(dp))).toBe(
      (at + HOUR) / 1000 + 600,
    );
    expect(m.only("psd2_gateway_trust_source_entries", { kind: "ocsp", source: responder })).toBe(2);
    expect(m.only("psd2_gateway_ocsp_cache_entries")).toBe(2);
    expect(m.only("psd2_gateway_ocsp_cache_max_entries")).toBe(10_000);
    expect(m.only("psd2_gateway_ocsp_cache_hits_total")).toBe(1);
    expect(m.only("psd2_gateway_ocsp_cache_misses_total")).toBe(2);
    expect(m.only("psd2_gateway_ocsp_cache_evictions_total")).toBe(0);
  });
});

describe("trust status with CRL files only (trust.crlDir, no distribution points)", () => {
  let pki: DevPki;
  let backend: RecordingBackend;
  let gateway: GatewayProcess;
  let crlDir: string;
  const pem = (der: Uint8Array) => new x509.X509Crl(der).toString("pem");

  beforeAll(async () => {
    // The test PKI's certificates name no QTSP: only these files speak for them.
    pki = await testPki();
    crlDir = mkdtempSync(join(tmpdir(), "psd2-crldir-"));
    writeFileSync(
      join(crlDir, "issuing-ca.crl"),
      await issuingCaCrl(pki, {
        revoked: [pki.revoked.certificate],
        thisUpdate: new Date(at - HOUR),
        nextUpdate: new Date(at + 24 * HOUR),
      }),
    );
    // Two lists in one file: the root's, past its nextUpdate, and one in the issuing CA's name
    // that the root signed (no trusted CA's signature: not used).
    writeFileSync(
      join(crlDir, "bundle.pem"),
      [
        pem(
          await issuingCaCrl(pki, {
            issuer: pki.root,
            thisUpdate: new Date(at - 48 * HOUR),
            nextUpdate: new Date(at - 24 * HOUR),
          }),
        ),
        pem(await issuingCaCrl(pki, { signer: pki.root })),
      ].join("\n"),
    );
    backend = await startRecordingBackend();
    gateway = await startGatewayProcess({
      pki,
      dir: mkdtempSync(join(tmpdir(), "psd2-crlfiles-")),
      backendUrl: backend.url,
      config: { trust: { crlDir }, reload: { pollSeconds: 0.2 } },
    });
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    await backend?.close();
  });

  it("prints each file's list (file#n for a file of several), stale and failed ones first, and exits 1", async () => {
    const r = await cli(["trust", "status", "--config", gateway.configFile]);
    expect(r.code, r.stderr + r.stdout).toBe(1);

    const fresh = blockOf(r.stdout, "crl", join(crlDir, "issuing-ca.crl"));
    expect(fresh.state).toBe("fresh");
    expect(fresh.lines).toEqual([
      `file in trust.crlDir; issuer ${subjectOf(pki.issuingCa)}`,
      expect.stringMatching(
        new RegExp(
          `^thisUpdate ${iso(at - HOUR)} \\(3[6-9]\\d\\d s old\\); nextUpdate ${iso(at + 24 * HOUR)}$`,
        ),
      ),
      expect.stringMatching(/^last success \S+ \(\d+ s ago\); 1 entries; 0 failures$/),
    ]);

    const past = blockOf(r.stdout, "crl", `${join(crlDir, "bundle.pem")}#1`);
    expect(past.state).toBe("STALE");
    expect(past.lines[0]).toBe(`file in trust.crlDir; issuer ${subjectOf(pki.root)}`);
    expect(past.lines[1]).toMatch(new RegExp(`nextUpdate ${iso(at - 24 * HOUR)}$`));

    const unsigned = blockOf(r.stdout, "crl", `${join(crlDir, "bundle.pem")}#2`);
    expect(unsigned.state).toBe("STALE");
    expect(unsigned.lines).toEqual([
      "file in trust.crlDir; no list held",
      "last success never; 0 entries; 1 failures",
      expect.stringMatching(
        /^last error: CRL signature does not verify with .*Demo Qualified Issuing CA.* \(since /,
      ),
    ]);
    // Stale first; no responder was asked.
    expect(r.stdout.indexOf("STALE")).toBeLessThan(r.stdout.indexOf(" fresh "));
    expect(r.stdout).toMatch(
      /^ocsp cache\s+0 answers held \(max 10000\); 0 hits, 0 misses, 0 evictions; 0 responders$/m,
    );
  });

  it("/metrics has the files as CRL sources; /readyz names the stale ones but stays ready", async () => {
    const m = await scrape(gateway.adminUrl);
    const crl = (name: string) => ({ kind: "crl", source: join(crlDir, name) });
    expect(m.series("psd2_gateway_trust_source_stale", { kind: "crl" })).toHaveLength(3);
    expect(m.only("psd2_gateway_trust_source_stale", crl("issuing-ca.crl"))).toBe(0);
    expect(m.only("psd2_gateway_trust_source_stale", crl("bundle.pem#1"))).toBe(1);
    expect(m.only("psd2_gateway_trust_source_stale", crl("bundle.pem#2"))).toBe(1);
    expect(m.only("psd2_gateway_trust_source_failures", crl("bundle.pem#2"))).toBe(1);
    expect(m.only("psd2_gateway_trust_source_entries", crl("issuing-ca.crl"))).toBe(1);
    expect(m.only("psd2_gateway_trust_source_this_update_timestamp_seconds", crl("issuing-ca.crl"))).toBe(
      (at - HOUR) / 1000,
    );
    expect(
      m.series("psd2_gateway_trust_source_this_update_timestamp_seconds", crl("bundle.pem#2")),
    ).toHaveLength(0);

    const ready = await fetch(`${gateway.adminUrl}/readyz`);
    const body = (await ready.json()) as { checks: { trust: { ok: boolean; detail: string } } };
    expect(ready.status).toBe(200);
    expect(body.checks.trust.ok).toBe(true);
    expect(body.checks.trust.detail).toContain(
      `crl ${join(crlDir, "bundle.pem")}#2 (CRL signature does not verify`,
    );
  });

  it("a file replaced by one that does not load: counted as a failure, its last success kept", async () => {
    const file = join(crlDir, "issuing-ca.crl");
    const before = (await trustJson(gateway)).sources.find((s) => s.source === file);
    expect(before?.lastSuccess).toBeGreaterThan(0);
    const from = gateway.lines.length;
    // PEM in a .crl file is read as PEM; signed by the root in the issuing CA's name.
    replaceFileAtomically(file, pem(await issuingCaCrl(pki, { signer: pki.root })));
    await gateway.waitForLog("reloaded", 10_000, from);
    const after = (await trustJson(gateway)).sources.find((s) => s.source === file);
    expect(after).toMatchObject({
      failures: 1,
      lastSuccess: before?.lastSuccess,
      lastError: expect.stringMatching(/signature does not verify/),
      stale: true,
    });
  });
});
