/**
 * Issue 6, proof 4: a TLS certificate swapped on disk is served after SIGHUP without a failed
 * request; without SIGHUP the file poll (`reload.pollSeconds`) picks it up; a reload that fails
 * (a key that is garbage, or a certificate whose key has not arrived yet) keeps serving the old
 * certificate and logs "reload failed". Real gateway processes, a loop of signed requests over
 * kept-alive and fresh TLS connections the whole time, the served certificate read from a fresh
 * handshake.
 */

import { X509Certificate } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareSignedCall, testPki } from "../helpers/gateway-fixture.js";
import {
  type GatewayProcess,
  issueGatewayTlsCertificate,
  type LogLine,
  replaceFileAtomically,
  sendPrepared,
  servedFingerprint,
  startGatewayProcess,
  type TlsCertificate,
} from "../helpers/gateway-process.js";
import { startLoopbackServer } from "../helpers/loopback-http.js";
import { scrape } from "../helpers/prometheus-text.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const ERROR = 50;

/** Signed requests, one after another, until stopped: half over one kept-alive connection, half each on a new one. */
function requestLoop(pki: DevPki, url: string) {
  const keepAlive = new Agent({ connect: { ca: pki.root.pem }, connections: 1, keepAliveTimeout: 60_000 });
  const results: { how: string; status?: number; error?: string }[] = [];
  let running = true;
  const worker = async (fresh: boolean) => {
    while (running) {
      const prepared = await prepareSignedCall({ signer: pki.tppA.qseal, target: "/v1/accounts" });
      const agent = fresh ? new Agent({ connect: { ca: pki.root.pem } }) : keepAlive;
      try {
        const r = await sendPrepared(url, prepared, agent, { timeoutMs: 5_000 });
        results.push({ how: fresh ? "new connection" : "kept alive", status: r.status });
      } catch (error) {
        results.push({ how: fresh ? "new connection" : "kept alive", error: (error as Error).message });
      } finally {
        if (fresh) await agent.close();
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const workers = [worker(false), worker(true)];
  return {
    results,
    /** Resolves once `n` more requests have finished. */
    async more(n: number, timeoutMs = 10_000) {
      const target = results.length + n;
      const deadline = Date.now() + timeoutMs;
      while (results.length < target) {
        if (Date.now() > deadline) throw new Error(`request loop stalled at ${results.length}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    failures: () => results.filter((r) => r.status !== 200),
    async stop() {
      running = false;
      await Promise.all(workers);
      await keepAlive.close();
    },
  };
}

/** A copy of the PKI's gateway certificate and key in `dir`, for the test to overwrite. */
function tlsFilesIn(pki: DevPki, dir: string) {
  mkdirSync(dir, { recursive: true });
  const cert = join(dir, "gateway.pem");
  const key = join(dir, "gateway.key.pem");
  copyFileSync(pki.paths.gatewayCert, cert);
  copyFileSync(pki.paths.gatewayKey, key);
  return { cert, key };
}

const isReloadFailure = (l: LogLine) => l.level === ERROR && (l.msg ?? "").includes("reload failed");

describe("TLS certificate rotation (real gateway processes)", () => {
  let pki: DevPki;
  let dir: string;
  let backend: RecordingBackend;
  let original: string;
  let second: TlsCertificate;
  let third: TlsCertificate;
  const gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    pki = await testPki();
    dir = mkdtempSync(join(tmpdir(), "psd2-reload-"));
    backend = await startRecordingBackend();
    original = new X509Certificate(pki.gatewayTls.pem).fingerprint256;
    [second, third] = await Promise.all([
      issueGatewayTlsCertificate(pki, { validDays: 200 }),
      issueGatewayTlsCertificate(pki, { validDays: 30 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await backend?.close();
  });

  it("SIGHUP: the swapped certificate is served afterwards and no request of the loop fails; a garbage key keeps the old one", async () => {
    const files = tlsFilesIn(pki, join(dir, "sighup"));
    // Polling effectively off: only SIGHUP reloads here.
    const gateway = await startGatewayProcess({
      pki,
      dir,
      backendUrl: backend.url,
      tlsFiles: files,
      config: { reload: { pollSeconds: 3600 } },
    });
    gateways.push(gateway);
    const startup = gateway.lines.find((l) => l.msg === "ingress gateway listening");
    expect(startup?.json?.["tlsCertificate"]).toMatchObject({ name: "localhost", sha256: original });
    expect(await servedFingerprint(gateway.port, pki.root.pem)).toBe(original);

    const loop = requestLoop(pki, gateway.url);
    try {
      await loop.more(6);

      // The new pair lands on disk (each file atomically), then the operator sends SIGHUP.
      replaceFileAtomically(files.cert, second.chainPem);
      replaceFileAtomically(files.key, second.keyPem);
      await loop.more(2);
      let mark = gateway.lines.length;
      gateway.signal("SIGHUP");
      await gateway.waitForLog("reloaded on SIGHUP", 10_000, mark);
      const loaded = await gateway.waitForLog("TLS certificate loaded", 1_000, mark);
      expect(loaded.json).toMatchObject({ name: "localhost", sha256: second.fingerprint256 });
      expect(await servedFingerprint(gateway.port, pki.root.pem)).toBe(second.fingerprint256);
      await loop.more(6);

      // A key file that is garbage: the reload fails, says why, and the certificate served stays.
      replaceFileAtomically(
        files.key,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
      );
      mark = gateway.lines.length;
      gateway.signal("SIGHUP");
      const failed = await gateway.waitForLog(isReloadFailure, 10_000, mark);
      expect(failed.msg).toContain("keeping the previous certificates");
      expect(String(failed.json?.["err"])).not.toBe("");
      expect(gateway.lines.slice(mark).some((l) => l.msg === "reloaded on SIGHUP")).toBe(false);
      expect(await servedFingerprint(gateway.port, pki.root.pem)).toBe(second.fingerprint256);
      await loop.more(6);
      expect(gateway.child.exitCode).toBeNull();
    } finally {
      await loop.stop();
    }
    expect(loop.failures()).toEqual([]);
    expect(loop.results.filter((r) => r.how === "new connection").length).toBeGreaterThanOrEqual(5);
    expect(loop.results.filter((r) => r.how === "kept alive").length).toBeGreaterThanOrEqual(5);
  });

  it("without SIGHUP, within reload.pollSeconds: a half-swapped pair is refused and the old certificate kept; the whole pair is served", async () => {
    const files = tlsFilesIn(pki, join(dir, "poll"));
    const gateway = await startGatewayProcess({
      pki,
      dir,
      backendUrl: backend.url,
      tlsFiles: files,
      config: { reload: { pollSeconds: 1 } },
    });
    gateways.push(gateway);
    expect(await servedFingerprint(gateway.port, pki.root.pem)).toBe(original);

    const loop = requestLoop(pki, gateway.url);
    try {
      await loop.more(4);
      // Only the certificate has arrived: its key does not match the old key on disk.
      let mark = gateway.lines.length;
      replaceFileAtomically(files.cert, third.chainPem);
      const failed = await gateway.waitForLog(isReloadFailure, 5_000, mark);
      expect(failed.json?.["why"]).toBe("files changed");
      expect(await servedFingerprint(gateway.port, pki.root.pem)).toBe(original);
      await loop.more(4);

      // Now the key: the next poll loads the pair.
      mark = gateway.lines.length;
      replaceFileAtomically(files.key, third.keyPem);
      const reloaded = await gateway.waitForLog((l) => l.msg === "reloaded", 5_000, mark);
      expect(reloaded.json?.["why"]).toBe("files changed");
      expect(await servedFingerprint(gateway.port, pki.root.pem)).toBe(third.fingerprint256);
      await loop.more(4);

      // The expiry gauge follows the certificate now served (30 days, not the original's 365).
      const metrics = await scrape(gateway.adminUrl);
      const days = metrics.only("psd2_gateway_certificate_expiry_seconds", { kind: "tls" }) / 86_400;
      expect(days).toBeGreaterThan(29);
      expect(days).toBeLessThan(30.1);
    } finally {
      await loop.stop();
    }
    expect(loop.failures()).toEqual([]);
  });
  // WAS A BUG, kept as a regression test: SIGHUP reloaded the TLS certificate, trust store and CRLs
  // but not the TPP register, which issue 6 lists among what SIGHUP reloads. With `register.url`
  // and a long `pollSeconds`, an operator who had just withdrawn a TPP and sent SIGHUP kept the old
  // register until the next poll (an hour here). SIGHUP now refreshes every register source: one
  // more GET to the register URL, and register_entries 1.
  it("SIGHUP also refreshes the TPP register from its URL", async () => {
    const full = JSON.parse(readFileSync(pki.paths.register, "utf8")) as {
      tpps: { organizationIdentifier: string }[];
    };
    let document = full;
    let fetches = 0;
    const registerServer = await startLoopbackServer(() => {
      fetches++;
      return { status: 200, body: document as unknown as Record<string, unknown> };
    });
    try {
      const gateway = await startGatewayProcess({
        pki,
        dir,
        backendUrl: backend.url,
        tls: false,
        config: {
          register: {
            file: undefined,
            url: `http://127.0.0.1:${registerServer.port}/tpps.json`,
            pollSeconds: 3600,
          },
        },
      });
      gateways.push(gateway);
      expect(fetches).toBe(1);
      expect((await scrape(gateway.adminUrl)).only("psd2_gateway_register_entries")).toBe(2);

      // TPP B is withdrawn from the register; the operator sends SIGHUP.
      document = {
        ...full,
        tpps: full.tpps.filter((t) => t.organizationIdentifier === pki.tppA.organizationId),
      };
      const mark = gateway.lines.length;
      gateway.signal("SIGHUP");
      await gateway.waitForLog("reloaded on SIGHUP", 10_000, mark);
      const deadline = Date.now() + 3_000;
      while (fetches < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(fetches).toBe(2);
      expect((await scrape(gateway.adminUrl)).only("psd2_gateway_register_entries")).toBe(1);
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
      await registerServer.close();
    }
  });
});
