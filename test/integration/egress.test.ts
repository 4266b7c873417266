/**
 * Egress mode end to end: the application (this test's HTTP client) → the egress gateway →
 * mutual TLS with the QWAC → the ingress gateway as operators run it (its own process, response
 * signing on) → a real backend; the response signed by ingress and verified by egress. Beside
 * it: a bank that alters its body after signing (enforce → 502, advisory → counted), a bank
 * that is down, a PKCS#12 QSealC, and the limits of what egress accepts.
 */

import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EgressGateway, startGateway } from "../../src/app.js";
import { validateEgressConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";
import { runCli } from "../helpers/cli.js";
import {
  enforcedResponses,
  HOST_SIGNING,
  JAVA_STYLE_SIGNING,
  qsealPkcs12,
  toIngress,
  tppFiles,
} from "../helpers/egress-profiles.js";
import { testPki } from "../helpers/gateway-fixture.js";
import { freeLoopbackPort, type GatewayProcess, startGatewayProcess } from "../helpers/gateway-process.js";
import { Scrape } from "../helpers/prometheus-text.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { startTamperingBank } from "../helpers/tampering-bank.js";

let pki: DevPki;
let backend: RecordingBackend;
let ingress: GatewayProcess;
let tampering: Server;
let egress: EgressGateway;
/** Egress keeps a record of each bank answer it checks (issue 40). */
const evidenceFolder = mkdtempSync(join(tmpdir(), "psd2-egress-evidence-"));

const P12_PASSWORD_ENV = "PSD2_TEST_QSEAL_P12_PASSWORD";

beforeAll(async () => {
  pki = await testPki();
  backend = await startRecordingBackend();
  backend.behave((req, res, recorded) => {
    const big = req.url?.includes("/big");
    const body = big
      ? "x".repeat(2 * 1024 * 1024)
      : JSON.stringify({ ok: true, received: recorded.body.length });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(body);
  });
  const dir = mkdtempSync(join(tmpdir(), "psd2-egress-"));
  ingress = await startGatewayProcess({
    pki,
    dir,
    backendUrl: backend.url,
    config: {
      listen: { clientCertificate: "require" },
      responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
    },
  });
  tampering = await startTamperingBank(pki);

  const p12 = qsealPkcs12(pki, join(dir, "qseal.p12"), "egress-test");
  const { qseal } = tppFiles(pki);
  const verified = enforcedResponses(pki);
  const bank = toIngress(pki, ingress.url);
  const tamper = `http://127.0.0.1:${(tampering.address() as AddressInfo).port}`;
  const config = validateEgressConfig({
    mode: "egress",
    listen: { port: 0 },
    admin: { enabled: false },
    maxBodyBytes: 64 * 1024,
    log: { level: "silent" },
    evidence: { folder: evidenceFolder },
    banks: [
      { name: "bank", prefix: "/bank", ...bank },
      { name: "java-style", prefix: "/java", ...bank, signing: JAVA_STYLE_SIGNING },
      { name: "host-signed", prefix: "/host", ...bank, signing: HOST_SIGNING },
      {
        name: "p12",
        prefix: "/p12",
        ...bank,
        qseal: { p12, passwordEnv: P12_PASSWORD_ENV },
      },
      { name: "tampered-enforce", prefix: "/te", url: tamper, qseal, responses: verified },
      {
        name: "tampered-advisory",
        prefix: "/ta",
        url: tamper,
        qseal,
        responses: { ...verified, mode: "advisory" },
      },
      {
        name: "small-enforce",
        prefix: "/se",
        url: tamper,
        qseal,
        responses: { ...verified, maxBodyBytes: 1024 },
      },
      {
        name: "small-advisory",
        prefix: "/sa",
        url: tamper,
        qseal,
        responses: { ...verified, mode: "advisory", maxBodyBytes: 1024 },
      },
      { name: "unchecked", prefix: "/off", url: tamper, qseal },
      { name: "slow", prefix: "/slow", url: tamper, qseal, responses: verified, timeoutSeconds: 0.5 },
      { name: "down", prefix: "/down", url: `http://127.0.0.1:${await freeLoopbackPort()}`, qseal },
    ],
  });
  egress = await startGateway(config, {
    logger: createLogger("silent"),
    env: { [P12_PASSWORD_ENV]: "egress-test" },
  });
}, 60_000);

afterAll(async () => {
  await egress?.close(0);
  await ingress?.stop();
  tampering?.closeAllConnections();
  tampering?.close();
  await backend?.close();
});

async function call(
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
) {
  const response = await request(egress.url + target, {
    method: (options.method ?? "GET") as "GET",
    headers: { "psu-id": "PSU-1001", ...(options.headers ?? {}) },
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text };
}

describe("egress → mTLS → ingress → backend, the response signed and verified", () => {
  it.each([
    ["the default SPEC 5 profile", "/bank"],
    ["a Java-style profile (lower-hex serial, ', ', %20, SHA256withRSA, sha-256=)", "/java"],
    ["a QSealC from a PKCS#12 bundle", "/p12"],
    ["a profile that signs Host and Content-Length", "/host"],
  ])("%s: GET and POST reach the backend signed and come back verified", async (_what, prefix) => {
    const before = backend.requests.length;
    const get = await call(`${prefix}/v1/accounts?withBalance=true`);
    expect(get.status, get.text).toBe(200);
    expect(get.headers["psd2-gateway-origin"]).toBe("bank");
    expect(get.headers["psd2-gateway-response-signature"]).toBe("verified");

    const payment = JSON.stringify({ instructedAmount: { currency: "NOK", amount: "12.50" } });
    const post = await call(`${prefix}/v1/payments/sepa-credit-transfers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: payment,
    });
    expect(post.status, post.text).toBe(200);
    expect(post.headers["psd2-gateway-response-signature"]).toBe("verified");

    const reached = backend.requests.slice(before);
    expect(reached.map((r) => r.target)).toEqual([
      "/v1/accounts?withBalance=true",
      "/v1/payments/sepa-credit-transfers",
    ]);
    // Ingress verified the QSealC signature and the QWAC: it attached the TPP's identity.
    expect(reached[0]!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
    expect(reached[1]!.body.toString()).toBe(payment);
    if (prefix === "/host") {
      expect(reached[1]!.headers.signature).toContain(
        'headers="(request-target) host date digest content-length x-request-id psu-id tpp-redirect-uri"',
      );
      // A GET carries no Content-Length, so it is not in its list (each header is signed when present).
      expect(reached[0]!.headers.signature).toContain(
        'headers="(request-target) host date digest x-request-id psu-id tpp-redirect-uri"',
      );
    }
  });

  it("a non-ASCII PSU-ID is signed as the bytes sent and verifies at the bank", async () => {
    const wire = Buffer.from("Åse Ødegård", "utf8").toString("latin1");
    const answer = await call("/bank/v1/accounts", { headers: { "psu-id": wire } });
    expect(answer.status, answer.text).toBe(200);
    expect(backend.requests.at(-1)!.headers["psu-id"]).toBe(wire);
  });

  it("the application's own X-Request-ID is kept and comes back", async () => {
    const id = "3f0c2b1e-8d1a-4c55-9a53-0b0e7f1d2c3a";
    const answer = await call("/bank/v1/accounts", { headers: { "x-request-id": id } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers["x-request-id"]).toBe(id);
  });

  it("a response too large for ingress to sign is a 502 from ingress, never sent unsigned", async () => {
    const answer = await call("/bank/v1/accounts/big");
    expect(answer.status).toBe(502);
    expect(answer.text).toContain("responseSigning.maxBodyBytes");
    expect(answer.headers["psd2-gateway-response-signature"]).toBe("unsigned-error");
  });
});

describe("a response whose body was changed after signing", () => {
  it("is withheld under enforce: 502 from the gateway saying what failed", async () => {
    const answer = await call("/te/v1/payments/1");
    expect(answer.status).toBe(502);
    expect(answer.headers["psd2-gateway-origin"]).toBe("gateway");
    const body = JSON.parse(answer.text);
    expect(body.tppMessages[0].code).toBe("BAD_GATEWAY");
    expect(body.tppMessages[0].text).toMatch(
      /bank 'tampered-enforce' answered 200, but its response signature failed .*Digest/,
    );
  });

  it("is passed on under advisory, marked invalid and counted", async () => {
    const answer = await call("/ta/v1/payments/1");
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("99.00");
    expect(answer.headers["psd2-gateway-response-signature"]).toBe("invalid");
    const metrics = await egress.metrics.registry.metrics();
    expect(metrics).toMatch(
      /psd2_gateway_egress_response_verification_failures_total\{bank="tampered-advisory",mode="advisory"\} 1/,
    );
    // The profile's long-lived chain counts its checks: the body's Digest refused it, its head passed.
    expect(metrics).toMatch(
      /psd2_gateway_egress_response_steps_total\{bank="tampered-advisory",step="digest",outcome="refused"\} 1\n/,
    );
    expect(metrics).toMatch(
      /psd2_gateway_egress_response_steps_total\{bank="tampered-advisory",step="signature-header",outcome="passed"\} 1\n/,
    );
  });
});

describe("evidence of the bank answers egress checks", () => {
  const lines = () => {
    const [chain] = readdirSync(join(evidenceFolder, "chains"));
    return readFileSync(join(evidenceFolder, "chains", chain!, "000001.jsonl"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
  };
  const recordOf = async (requestId: string) => {
    for (let i = 0; i < 100; i++) {
      const found = lines().find((l) => l.type === "response" && l.requestId === requestId);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no response record for ${requestId}`);
  };

  it("keeps a record of a verified answer, and of an invalid one passed under advisory; none of an unchecked one", async () => {
    const verifiedId = "8a1d6f8e-1c0b-4d39-9a4e-5b7f0f1e2a01";
    const payment = JSON.stringify({ instructedAmount: { currency: "NOK", amount: "12.50" } });
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const ok = await call("/bank/v1/payments/sepa-credit-transfers", {
      method: "POST",
      headers: {
        "x-request-id": verifiedId,
        "content-type": "application/json",
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
      body: payment,
    });
    expect(ok.headers["psd2-gateway-response-signature"]).toBe("verified");
    const verified = await recordOf(verifiedId);
    expect(verified).toMatchObject({
      type: "response",
      verdict: "verified",
      status: 200,
      method: "POST",
      target: "/v1/payments/sepa-credit-transfers",
      dialect: "cavage",
      // The application's trace, as egress passed it on to the bank.
      traceId,
    });
    expect(verified.certificate).toMatch(/^[0-9a-f]{64}$/);
    expect(verified.signatureHeaders.signature).toContain("signature=");
    // The bank's answer to a payment is kept whole (evidence.bodies: payments), its signing string with it.
    expect(Buffer.from(verified.body, "base64").toString()).toBe(ok.text);
    expect(verified.signedBytes).toBeDefined();
    expect(readdirSync(join(evidenceFolder, "certificates"))).toContain(`${verified.certificate}.pem`);

    const invalidId = "8a1d6f8e-1c0b-4d39-9a4e-5b7f0f1e2a02";
    const tampered = await call("/ta/v1/payments/1", { headers: { "x-request-id": invalidId } });
    expect(tampered.headers["psd2-gateway-response-signature"]).toBe("invalid");
    expect(await recordOf(invalidId)).toMatchObject({ verdict: "invalid", status: 200 });

    const uncheckedId = "8a1d6f8e-1c0b-4d39-9a4e-5b7f0f1e2a03";
    const unchecked = await call("/off/v1/payments/1", { headers: { "x-request-id": uncheckedId } });
    expect(unchecked.headers["psd2-gateway-response-signature"]).toBe("not-checked");
    const verifiedAgain = "8a1d6f8e-1c0b-4d39-9a4e-5b7f0f1e2a04";
    await call("/bank/v1/accounts", { headers: { "x-request-id": verifiedAgain } });
    // Without a traceparent: the trace egress started and sent the bank.
    expect((await recordOf(verifiedAgain)).traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(lines().filter((l) => l.requestId === uncheckedId)).toEqual([]);

    const shown = await runCli([
      "evidence",
      "show",
      "--request-id",
      verifiedId,
      "--folder",
      evidenceFolder,
      "--json",
    ]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      type: "response",
      verdict: "verified",
      requestId: verifiedId,
    });
    const verify = await runCli(["evidence", "verify", evidenceFolder]);
    expect(verify.stdout).toMatch(/^ok {5}\S+: \d+ records in 1 file/m);
    expect(verify.code).toBe(0);
  }, 60_000);
});

describe("what the profile's response checking makes of the bank's answer", () => {
  it.each([
    {
      what: "a signed answer within responses.maxBodyBytes is verified",
      target: "/se/v1/payments/large/1000",
      status: 200,
      mark: "verified",
      origin: "bank",
      bytes: 1000,
    },
    {
      what: "enforce: an answer over responses.maxBodyBytes is withheld, never passed unchecked",
      target: "/se/v1/payments/large/300000",
      status: 502,
      origin: "gateway",
      text: /bank 'small-enforce' answered 200 with a body over 1024 bytes \(responses\.maxBodyBytes\), too large to verify/,
    },
    {
      what: "advisory: an answer over responses.maxBodyBytes streams on whole, marked unchecked",
      target: "/sa/v1/payments/large/300000",
      status: 200,
      mark: "unchecked-too-large",
      origin: "bank",
      bytes: 300000,
    },
    {
      what: "off: a tampered answer passes, marked not checked",
      target: "/off/v1/payments/1",
      status: 200,
      mark: "not-checked",
      origin: "bank",
      text: /99\.00/,
    },
    {
      what: "a bank that does not answer in time: 504 naming the profile, not retried",
      target: "/slow/v1/payments/silent",
      status: 504,
      origin: "gateway",
      text: /bank 'slow' \(http:\/\/127\.0\.0\.1:\d+\) did not answer within 500 ms; the request may have been executed, and was not retried/,
    },
  ])("$what", async ({ target, status, mark, origin, bytes, text }) => {
    const answer = await call(target);
    expect(answer.status, answer.text.slice(0, 300)).toBe(status);
    expect(answer.headers["psd2-gateway-origin"]).toBe(origin);
    if (mark !== undefined) expect(answer.headers["psd2-gateway-response-signature"]).toBe(mark);
    if (bytes !== undefined) expect(answer.text).toBe("x".repeat(bytes));
    if (text !== undefined) expect(answer.text).toMatch(text);
  });
});

describe("what egress refuses itself", () => {
  it("a body over maxBodyBytes: 413, nothing sent", async () => {
    const before = backend.requests.length;
    const answer = await call("/bank/v1/payments/sepa-credit-transfers", {
      method: "POST",
      body: "x".repeat(65 * 1024),
    });
    expect(answer.status).toBe(413);
    expect(answer.headers["psd2-gateway-origin"]).toBe("gateway");
    expect(answer.text).toContain("maxBodyBytes");
    expect(backend.requests.length).toBe(before);
  });

  it("two Host lines: 400 FORMAT_ERROR, the connection closed, nothing sent (RFC 9112 3.2)", async () => {
    const before = backend.requests.length;
    const refusedBefore = await stepCount("host", "refused");
    // The second Host names the host-routed style of profile; Node would keep the first for the router.
    const raw = await rawExchange(
      "GET /bank/v1/accounts HTTP/1.1\r\nHost: localhost\r\nhost: evil.example\r\n\r\n",
    );
    const [head = "", body = ""] = raw.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/\r\nconnection: close(\r\n|$)/i);
    expect(head).toMatch(/\r\npsd2-gateway-origin: gateway(\r\n|$)/i);
    expect(JSON.parse(body).tppMessages[0]).toMatchObject({ code: "FORMAT_ERROR" });
    expect(body).toContain("more than one Host header");
    expect(backend.requests.length).toBe(before);
    expect(await stepCount("host", "refused")).toBe(refusedBefore + 1);
  });

  it("a bank that cannot be reached: 502 naming the bank profile", async () => {
    const answer = await call("/down/v1/accounts");
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.text).tppMessages[0].text).toMatch(
      /bank 'down' .* could not be reached: ECONNREFUSED/,
    );
  });

  it("a path no bank profile serves: 404 listing how the banks are reached, counted at its step", async () => {
    const refusedBefore = await stepCount("bank-profile", "refused");
    const answer = await call("/elsewhere/v1/accounts");
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text).tppMessages[0]).toMatchObject({ code: "RESOURCE_UNKNOWN" });
    expect(answer.text).toContain("bank (/bank/…)");
    // The request steps are one long-lived chain, counted per step as ingress's are.
    expect(await stepCount("bank-profile", "refused")).toBe(refusedBefore + 1);
    expect(await stepCount("sign", "passed")).toBeGreaterThan(0);
  });

  /** Writes `data` to the egress listener and reads until the gateway closes the connection. */
  function rawExchange(data: string): Promise<string> {
    const { port } = new URL(egress.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => socket.write(data));
      let text = "";
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => (text += chunk));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
  }

  /** psd2_gateway_egress_steps_total of one step and outcome (0 before its first count). */
  async function stepCount(step: string, outcome: string): Promise<number> {
    const metrics = await egress.metrics.registry.metrics();
    const line = new RegExp(
      `^psd2_gateway_egress_steps_total\\{step="${step}",outcome="${outcome}"\\} (\\d+)$`,
      "m",
    );
    return Number(line.exec(metrics)?.[1] ?? 0);
  }

  it("counts requests per bank profile and who answered", async () => {
    const metrics = await egress.metrics.registry.metrics();
    expect(metrics).toMatch(
      /psd2_gateway_egress_requests_total\{bank="bank",status="200",origin="bank"\} \d+/,
    );
    expect(metrics).toMatch(
      /psd2_gateway_egress_requests_total\{bank="down",status="502",origin="gateway"\} 1/,
    );
    expect(metrics).toMatch(/psd2_gateway_egress_signing_seconds_count\{bank="bank"\} \d+/);
  });
});

describe("reload: the bank profiles' keys and certificates read anew", () => {
  /** An egress gateway whose bank profile reads TPP A's or B's QSealC and QWAC from files of its own. */
  async function rotatingGateway(reloadPollSeconds?: number) {
    const dir = mkdtempSync(join(tmpdir(), "psd2-egress-reload-"));
    const files = {
      qseal: { cert: join(dir, "qseal.pem"), key: join(dir, "qseal.key.pem") },
      qwac: { cert: join(dir, "qwac.pem"), key: join(dir, "qwac.key.pem") },
    };
    const install = (tpp: "tpp-a" | "tpp-b") => {
      for (const [kind, paths] of Object.entries(files)) {
        copyFileSync(join(pki.dir, "tpp", `${tpp}-${kind}.pem`), paths.cert);
        copyFileSync(join(pki.dir, "tpp", `${tpp}-${kind}.key.pem`), paths.key);
      }
    };
    install("tpp-a");
    const log: Record<string, unknown>[] = [];
    const gateway = await startGateway(
      validateEgressConfig({
        mode: "egress",
        listen: { port: 0 },
        admin: { enabled: false },
        ...(reloadPollSeconds ? { reload: { pollSeconds: reloadPollSeconds } } : {}),
        banks: [{ name: "bank", prefix: "/bank", ...toIngress(pki, ingress.url), ...files }],
      }),
      {
        logger: createLogger("info", {
          destination: new Writable({
            write(chunk, _encoding, done) {
              for (const line of chunk.toString().split("\n")) if (line) log.push(JSON.parse(line));
              done();
            },
          }),
        }),
      },
    );
    const organizationSeen = async () => {
      const answer = await request(`${gateway.url}/bank/v1/accounts`, { headers: { "psu-id": "PSU-1001" } });
      const text = await answer.body.text();
      expect(answer.statusCode, text).toBe(200);
      expect(answer.headers["psd2-gateway-response-signature"]).toBe("verified");
      return backend.requests.at(-1)!.headers["x-tpp-organization-id"];
    };
    return { gateway, files, install, organizationSeen, log };
  }

  it("SIGHUP swaps a rotated QSealC and QWAC in at once; a file that cannot be read keeps the old ones", async () => {
    const { gateway: rotating, files, install, organizationSeen } = await rotatingGateway();
    // The bank's answers judged so far: the new profiles' counters carry on from the old ones'.
    const answersJudged = async () =>
      new Scrape(await rotating.metrics.registry.metrics()).only("psd2_gateway_egress_response_steps_total", {
        bank: "bank",
        step: "signature-header",
        outcome: "passed",
      });
    try {
      expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0001");
      install("tpp-b");
      expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0001"); // read at start, not per request
      expect(await answersJudged()).toBe(2);
      await rotating.reload();
      expect(await answersJudged()).toBe(2);
      // Ingress saw TPP B's QWAC on the connection and its QSealC on the signature.
      expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0002");
      expect(await answersJudged()).toBe(3);
      writeFileSync(files.qseal.key, "not a key");
      await expect(rotating.reload()).rejects.toThrow(/banks\.bank\.qseal: cannot read the private key/);
      expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0002");
    } finally {
      await rotating.close(0);
    }
  });

  it("renewed in place (a Secret updated under the same paths), no signal: the watch reads it within reload.pollSeconds; a bad file is logged and keeps the running ones", async () => {
    const { gateway: rotating, files, install, organizationSeen, log } = await rotatingGateway(1);
    try {
      expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0001");
      install("tpp-b");
      await vi.waitFor(async () => expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0002"), {
        timeout: 10_000,
        interval: 250,
      });
      writeFileSync(files.qseal.key, "not a key");
      await vi.waitFor(
        () =>
          expect(log.find((l) => l.msg === "reload failed; keeping the running bank profiles")?.err).toMatch(
            /banks\.bank\.qseal: cannot read the private key/,
          ),
        { timeout: 10_000, interval: 250 },
      );
      expect(await organizationSeen()).toBe("PSDNO-FSA-DEMO0002");
    } finally {
      await rotating.close(0);
    }
  });
});
