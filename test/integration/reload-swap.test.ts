/**
 * Issue 38, point 2: a configuration reload (SIGHUP's reload() here) swaps the trust sources, the
 * verdict cache, the store and the shutdown grace for new requests, while a request under way when
 * it came finishes as it began; a replaced store is consulted until its longest window has passed.
 */

import { X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DevPki, IssuedCertificate } from "@psd2-gateway/dev-pki";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse, stringify } from "yaml";
import { summaryOf } from "../../src/app/certificate-summary.js";
import { type EgressGateway, type IngressGateway, startGateway } from "../../src/app.js";
import { cavageResponseChecks, StepsResponseVerifier } from "../../src/checks/index.js";
import { loadConfigFile } from "../../src/config/load.js";
import type { EgressConfig, GatewayConfig } from "../../src/config/schema.js";
import { createLogger } from "../../src/observability/logger.js";
import { tppFiles } from "../helpers/egress-profiles.js";
import { type PreparedCall, prepareSignedCall, testPki } from "../helpers/gateway-fixture.js";
import { replaceFileAtomically } from "../helpers/gateway-process.js";
import { Scrape } from "../helpers/prometheus-text.js";
import { answerOk, type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { trustedCertificatesIn } from "../helpers/trusted-certificates.js";
import { reloadsApplied, startWatchedConfigGateway } from "../helpers/watched-config.js";

let pki: DevPki;
let backend: RecordingBackend;
let gateway: IngressGateway;
let file: string;
let dir: string;
let closed = false;

beforeAll(async () => {
  pki = await testPki();
  backend = await startRecordingBackend();
  ({ gateway, dir, file } = await startWatchedConfigGateway("reload-swap-", pki, backend.url, {
    // Only reload() reloads here: the file is not polled within the test.
    reload: { pollSeconds: 3600 },
    shutdown: { graceSeconds: 3600 },
  }));
}, 60_000);

afterAll(async () => {
  if (!closed) await gateway?.close(0);
  await backend?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, edited freely by each test
function rewrite(change: (config: Record<string, any>) => void, at = file): void {
  const config = parse(readFileSync(at, "utf8"));
  change(config);
  replaceFileAtomically(at, stringify(config));
}

const applied = () => reloadsApplied(gateway);

/** The `name` of each QSealC series of the certificate expiry gauge. */
const qsealExpiryNames = (text: string) =>
  new Scrape(text)
    .series("psd2_gateway_certificate_expiry_seconds", { kind: "qseal" })
    .map((sample) => sample.labels.name);
const nameOf = (pem: string) => summaryOf(new X509Certificate(pem)).name;

/** SIGHUP's reload, waited for until its counter says it was applied. */
async function reloadApplied(): Promise<void> {
  const before = await applied();
  await gateway.reload();
  await vi.waitFor(async () => expect(await applied()).toBe(before + 1), { timeout: 10_000 });
}

async function sendCall(prepared: PreparedCall): Promise<{ status: number; code: string | undefined }> {
  const r = await request(gateway.url + prepared.target, {
    method: prepared.method as "GET",
    headers: prepared.headers,
  });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    code: r.statusCode === 200 ? undefined : JSON.parse(text).tppMessages?.[0]?.code,
  };
}

const call = async (signer: IssuedCertificate) =>
  sendCall(await prepareSignedCall({ signer, target: "/v1/accounts" }));

/** The backend holds its answers until the returned function is called. */
function holdAnswers(): () => void {
  const waiting: (() => void)[] = [];
  let open = false;
  backend.behave((req, res, recorded) => {
    if (open) return answerOk(req, res, recorded);
    waiting.push(() => answerOk(req, res, recorded));
  });
  return () => {
    open = true;
    for (const answer of waiting.splice(0)) answer();
  };
}

describe("a configuration reload swaps what a request is judged with", () => {
  it("trust: a register without TPP B refuses B's next request; B's request under way finishes", async () => {
    expect(await call(pki.tppB.qseal)).toEqual({ status: 200, code: undefined });
    const register = JSON.parse(readFileSync(pki.paths.register, "utf8")) as {
      tpps: { organizationIdentifier: string }[];
    };
    const withoutB = join(dir, "register-without-b.json");
    writeFileSync(
      withoutB,
      JSON.stringify({
        ...register,
        tpps: register.tpps.filter((t) => t.organizationIdentifier !== pki.tppB.organizationId),
      }),
    );
    const release = holdAnswers();
    const seen = backend.requests.length;
    const underWay = call(pki.tppB.qseal);
    await backend.waitForRequests(seen + 1);
    const registerBefore = gateway.register;
    rewrite((c) => {
      c.register = { file: withoutB };
    });
    await reloadApplied();
    expect(gateway.register).not.toBe(registerBefore);
    release();
    expect(await underWay).toEqual({ status: 200, code: undefined });
    backend.reset();
    const refused = await call(pki.tppB.qseal);
    expect(refused.status).not.toBe(200);
    expect(refused.code).toBeDefined();
    expect(await call(pki.tppA.qseal)).toEqual({ status: 200, code: undefined });
  });

  it("a reload that changes nothing a verdict rests on keeps the verifier and its cached verdicts", async () => {
    const verifierBefore = gateway.verifier;
    rewrite((c) => {
      c.verification = { dateToleranceSeconds: 30 };
    });
    await reloadApplied();
    expect(gateway.verifier).toBe(verifierBefore);
  });

  it("verdict cache and certificate kinds: a new verifier judges the next request by the new kinds", async () => {
    const verifierBefore = gateway.verifier;
    rewrite((c) => {
      c.cache = { ttlSeconds: 5 };
      c.verification = { certificateKinds: { signature: ["esign"] } };
    });
    await reloadApplied();
    expect(gateway.verifier).not.toBe(verifierBefore);
    expect(await call(pki.tppA.qseal)).toMatchObject({ status: 400, code: "CERTIFICATE_INVALID" });
    rewrite((c) => {
      delete c.verification;
    });
    await reloadApplied();
    expect(await call(pki.tppA.qseal)).toEqual({ status: 200, code: undefined });
  });

  it("store: a setting of the memory store's connection keeps it and its replay records", async () => {
    const storeBefore = gateway.store;
    const prepared = await prepareSignedCall({ signer: pki.tppA.qseal, target: "/v1/accounts" });
    expect(await sendCall(prepared)).toEqual({ status: 200, code: undefined });
    rewrite((c) => {
      c.store = { failOpen: true };
    });
    expect(await gateway.reconfigure(loadConfigFile(file) as GatewayConfig)).toEqual([]);
    expect(gateway.store).toBe(storeBefore);
    // The same signed request again: the record made before the reload still refuses it.
    expect(await sendCall(prepared)).toEqual({ status: 400, code: "SIGNATURE_INVALID" });
  });

  it("store: a new place for the state gets a new store; the old one's replay records still refuse, a second change waits", async () => {
    const storeBefore = gateway.store;
    const prepared = await prepareSignedCall({ signer: pki.tppA.qseal, target: "/v1/accounts" });
    expect(await sendCall(prepared)).toEqual({ status: 200, code: undefined });
    rewrite((c) => {
      c.store = { failOpen: true, maxWindows: 1000, snapshotFile: join(dir, "limits.json") };
    });
    expect(await gateway.reconfigure(loadConfigFile(file) as GatewayConfig)).toEqual([]);
    expect(gateway.store).not.toBe(storeBefore);
    // Recorded in the replaced store before the reload: still a replay.
    expect(await sendCall(prepared)).toEqual({ status: 400, code: "SIGNATURE_INVALID" });
    // Recorded in the new store after it.
    const fresh = await prepareSignedCall({ signer: pki.tppA.qseal, target: "/v1/accounts" });
    expect(await sendCall(fresh)).toEqual({ status: 200, code: undefined });
    expect(await sendCall(fresh)).toEqual({ status: 400, code: "SIGNATURE_INVALID" });
    // The replaced store is consulted for its longest window: another change of the store is refused till then.
    rewrite((c) => {
      c.store = { failOpen: true, maxWindows: 2000, snapshotFile: join(dir, "limits.json") };
    });
    await expect(gateway.reconfigure(loadConfigFile(file) as GatewayConfig)).rejects.toThrow(
      /store: the store replaced by an earlier reload is consulted until/,
    );
    rewrite((c) => {
      c.store.maxWindows = 1000;
    });
  });

  it("responseSigning: a renewed QSealC signs the next answer, one under way is signed whole by one key; an unreadable key keeps the running one", async () => {
    const bankQseal = { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey };
    // The renewal: another QSealC of the dev CA and its key (TPP B's stands in for the bank's next one).
    const renewed = { cert: join(dir, "renewed-qseal.pem"), key: join(dir, "renewed-qseal.key.pem") };
    writeFileSync(renewed.cert, pki.tppB.qseal.pem);
    writeFileSync(renewed.key, pki.tppB.qseal.keyPem);
    const derOf = (pem: string) => new X509Certificate(pem).raw.toString("base64");
    const verifier = new StepsResponseVerifier(
      cavageResponseChecks({
        certificates: trustedCertificatesIn(pki.paths.trustDir),
        certificateHeader: "aspsp-signature-certificate",
        dateToleranceMs: 60_000,
        algorithms: ["rsa-sha256"],
      }),
    );
    /** One signed call: the certificate its answer names, and whether the answer's signature holds by it. */
    const signedAnswer = async () => {
      const prepared = await prepareSignedCall({ signer: pki.tppA.qseal, target: "/v1/accounts" });
      const r = await request(gateway.url + prepared.target, { headers: prepared.headers });
      const body = Buffer.from(await r.body.arrayBuffer());
      const headers = r.headers as Record<string, string>;
      const verdict = await verifier.verify({
        headers,
        body,
        request: { method: "GET", target: prepared.target, requestId: prepared.headers["X-Request-ID"]! },
      });
      return { status: r.statusCode, certificate: headers["aspsp-signature-certificate"], verdict };
    };
    /** The next answer is signed by `pem`'s key, names `pem`, and the expiry gauge shows it. */
    const expectSignedBy = async (pem: string) => {
      expect(await signedAnswer()).toEqual({ status: 200, certificate: derOf(pem), verdict: true });
      expect(qsealExpiryNames(await gateway.metrics.registry.metrics())).toEqual([nameOf(pem)]);
    };
    rewrite((c) => {
      c.responseSigning = { qseal: bankQseal };
    });
    await reloadApplied();
    await expectSignedBy(pki.bankQseal.pem);

    const release = holdAnswers();
    const seen = backend.requests.length;
    const underWay = signedAnswer();
    await backend.waitForRequests(seen + 1);
    rewrite((c) => {
      c.responseSigning = { qseal: renewed };
    });
    await reloadApplied();
    release();
    // Whichever key signs the answer under way, its header names that key's certificate.
    expect(await underWay).toMatchObject({ status: 200, verdict: true });
    await expectSignedBy(pki.tppB.qseal.pem);

    // Renewed in place (a Secret updated under the same paths): the watch reads it, no reload asked.
    rewrite((c) => {
      c.reload = { pollSeconds: 1 };
    });
    await reloadApplied();
    replaceFileAtomically(renewed.key, pki.tppA.qseal.keyPem);
    replaceFileAtomically(renewed.cert, pki.tppA.qseal.pem);
    await vi.waitFor(async () => expect((await signedAnswer()).certificate).toBe(derOf(pki.tppA.qseal.pem)), {
      timeout: 10_000,
      interval: 200,
    });
    await expectSignedBy(pki.tppA.qseal.pem);
    rewrite((c) => {
      c.reload = { pollSeconds: 3600 };
    });
    await reloadApplied();

    rewrite((c) => {
      c.responseSigning = { qseal: { cert: renewed.cert, key: join(dir, "no-such-key.pem") } };
    });
    await expect(gateway.reconfigure(loadConfigFile(file) as GatewayConfig)).rejects.toThrow(/no-such-key/);
    await expectSignedBy(pki.tppA.qseal.pem);
    rewrite((c) => {
      delete c.responseSigning;
    });
    await reloadApplied();
  });

  it("psd2_gateway_steps_total carries on across a reload that builds a new request path", async () => {
    const passedSignatures = async () =>
      new Scrape(await gateway.metrics.registry.metrics()).only("psd2_gateway_steps_total", {
        step: "signature",
        outcome: "passed",
      });
    expect(await call(pki.tppA.qseal)).toEqual({ status: 200, code: undefined });
    const before = await passedSignatures();
    expect(before).toBeGreaterThan(0);
    rewrite((c) => {
      c.verification = { dateToleranceSeconds: 45 };
    });
    // Every applied configuration reload builds the request path anew.
    await reloadApplied();
    expect(await passedSignatures()).toBe(before);
    expect(await call(pki.tppA.qseal)).toEqual({ status: 200, code: undefined });
    expect(await passedSignatures()).toBe(before + 1);
  });

  it("shutdown: close() drains with the grace of the configuration in force, not the one it started with", async () => {
    rewrite((c) => {
      c.shutdown = { graceSeconds: 0 };
    });
    await reloadApplied();
    holdAnswers();
    const seen = backend.requests.length;
    const underWay = call(pki.tppA.qseal).catch((error: Error) => error);
    await backend.waitForRequests(seen + 1);
    // Started with 3600 s: were that grace read, close() would wait for the held answer past the test's timeout.
    closed = true;
    await gateway.close();
    expect(await underWay).toBeInstanceOf(Error);
  });
});

describe("egress, through the same lifecycle", () => {
  it("shutdown: close() drains with the grace a reload set; the log level is taken over too", async () => {
    const egressFile = join(dir, "egress.yaml");
    writeFileSync(
      egressFile,
      stringify({
        mode: "egress",
        listen: { port: 0 },
        admin: { enabled: false },
        log: { level: "silent" },
        reload: { pollSeconds: 3600 },
        shutdown: { graceSeconds: 3600 },
        banks: [{ name: "bank", prefix: "/bank", url: backend.url, qseal: tppFiles(pki).qseal }],
      }),
    );
    const logger = createLogger("silent");
    const egress: EgressGateway = await startGateway(loadConfigFile(egressFile) as EgressConfig, {
      logger,
      configFile: { path: egressFile, read: () => loadConfigFile(egressFile) },
    });
    rewrite((c) => {
      c.shutdown = { graceSeconds: 0 };
      c.log = { level: "error" };
    }, egressFile);
    await egress.reload();
    expect(logger.level).toBe("error");
    holdAnswers();
    const seen = backend.requests.length;
    const underWay = request(`${egress.url}/bank/v1/accounts`, { headers: { "psu-id": "P1" } }).then(
      (r) => r.body.text(),
      (error: Error) => error,
    );
    await backend.waitForRequests(seen + 1);
    // Started with 3600 s: were that grace read, close() would wait for the held answer past the test's timeout.
    await egress.close();
    expect(await underWay).toBeInstanceOf(Error);
    backend.reset();
  });
});
