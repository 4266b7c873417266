/**
 * Limits a TPP has agreed (issue 41, part 3): per TPP and per consent from config, from the
 * register's `unattendedLimit` column, and a consent's frequencyPerDay the backend tells in a
 * response header; over TLS to a real gateway and backend, one Redis shared by two gateways for the
 * counts' exactness. The access line and the metrics name where the limit came from.
 */

import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { signedCall, startTestGateway, type TestGateway, testPki } from "../helpers/gateway-fixture.js";
import { scrape } from "../helpers/prometheus-text.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../helpers/redis-server.js";
import { expectLimitOfFiftyAcross, UNATTENDED } from "../helpers/shared-store-gateways.js";

const FREQUENCY_HEADER = "x-consent-frequency-per-day";
/** Two days ago (UTC): inside the 90 days an unattended transaction list may reach back. */
const RECENT = new Date(Date.now() - 2 * 24 * 3600 * 1000).toISOString().slice(0, 10);

/** Unattended calls one after another on `gw`; their statuses. */
async function statuses(
  gw: TestGateway,
  target: string,
  count: number,
  headers: Record<string, string> = {},
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target, headers, ...UNATTENDED });
    out.push(r.status);
  }
  return out;
}

const passed = (n: number, of: number) => [...Array(n).fill(200), ...Array(of - n).fill(429)];

describe("limits a TPP has agreed, over TLS (memory store)", () => {
  let backend: RecordingBackend;
  let gw: TestGateway;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const pki = await testPki();
    const tpp = pki.tppB.organizationId;
    backend = await startRecordingBackend();
    // TPP B's register entry carries the column; TPP A's agreements are in config.
    const register = JSON.parse(readFileSync(pki.paths.register, "utf8")) as {
      tpps: { organizationIdentifier: string; unattendedLimit?: unknown }[];
    };
    for (const entry of register.tpps) if (entry.organizationIdentifier === tpp) entry.unattendedLimit = 5;
    const registerFile = join(await mkdtemp(join(tmpdir(), "psd2-agreed-")), "register.json");
    writeFileSync(registerFile, JSON.stringify(register));
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    gw = await startTestGateway({
      backendUrl: backend.url,
      pki,
      logger: createLogger("info", { destination: sink }),
      config: {
        register: { file: registerFile },
        limits: {
          unattended: {
            agreements: [
              { organizationId: pki.tppA.organizationId, limit: { balances: 6 } },
              { organizationId: pki.tppA.organizationId, consentId: "consent-eight", limit: 8 },
            ],
            consentFrequencyHeader: FREQUENCY_HEADER,
          },
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await backend?.close();
  });
  beforeEach(() => backend.reset());

  it.each([
    // [what, target, Consent-ID, calls, let through]
    ["a TPP's agreement for balances", "/v1/accounts/agreed-1/balances", undefined, 8, 6],
    [
      "SPEC 8's 4 for the class the agreement leaves out",
      `/v1/accounts/agreed-2/transactions?dateFrom=${RECENT}`,
      undefined,
      6,
      4,
    ],
    ["a consent's agreement, counted per consent", "/v1/accounts/agreed-3/balances", "consent-eight", 10, 8],
  ])("%s", async (_what, target, consent, calls, through) => {
    const headers: Record<string, string> = consent === undefined ? {} : { "Consent-ID": consent };
    expect(await statuses(gw, target, calls, headers)).toEqual(passed(through, calls));
    expect(backend.requests).toHaveLength(through);
  });

  it("says in the refusal which limit it was, and logs and counts its source", async () => {
    await statuses(gw, "/v1/accounts/agreed-4/balances", 6);
    const refused = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts/agreed-4/balances",
      ...UNATTENDED,
    });
    expect(refused.status).toBe(429);
    expect(refused.json.tppMessages?.[0]?.text).toContain(
      "at most 6 balance calls per 24 h are allowed for this account (the limit the bank agreed with this TPP)",
    );
    const access = lines.filter((l) => l.msg === "request" && l.status === 429).at(-1)!;
    expect(access).toMatchObject({ unattendedLimit: 6, limitSource: "config", step: "unattended" });
    const metrics = await scrape(gw.gateway.adminUrl!);
    expect(
      metrics.value("psd2_gateway_unattended_limit_rejections_total", {
        class: "balances",
        source: "config",
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metrics.value("psd2_gateway_unattended_calls_total", { class: "balances", source: "config" }),
    ).toBeGreaterThanOrEqual(6);
  });

  it("holds a TPP to the register's unattendedLimit column", async () => {
    const tppB = gw.pki.tppB.qseal;
    const out: number[] = [];
    for (let i = 0; i < 7; i++)
      out.push(
        (await signedCall(gw, { signer: tppB, target: "/v1/accounts/agreed-5/balances", ...UNATTENDED }))
          .status,
      );
    expect(out).toEqual(passed(5, 7));
    expect(lines.filter((l) => l.msg === "request" && l.limitSource === "register")).toHaveLength(7);
  });

  it("learns a consent's frequencyPerDay from the backend's header, removed before the TPP sees it", async () => {
    backend.behave((_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json", [FREQUENCY_HEADER]: "2" })
        .end('{"balances":[]}'),
    );
    const headers = { "Consent-ID": "consent-two" };
    const first = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts/agreed-6/balances",
      headers,
      ...UNATTENDED,
    });
    expect(first.status).toBe(200);
    expect(first.headers[FREQUENCY_HEADER]).toBeUndefined();
    // From now on the consent's own 2, counted per consent: two more, then refused.
    expect(await statuses(gw, "/v1/accounts/agreed-6/balances", 3, headers)).toEqual([200, 200, 429]);
    const refused = lines.filter((l) => l.msg === "request" && l.status === 429).at(-1)!;
    expect(refused).toMatchObject({ unattendedLimit: 2, limitSource: "consent" });
  });

  it("learns a consent named in the header (a consent's creation) and nothing from a non-2xx answer", async () => {
    backend.behave((req, res) => {
      const failing = req.url?.includes("failing") ?? false;
      res
        .writeHead(failing ? 500 : 201, {
          "content-type": "application/json",
          [FREQUENCY_HEADER]: failing ? "1" : "3; consent=consent-new",
        })
        .end("{}");
    });
    const created = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: "/v1/consents",
      body: "{}",
      headers: { "Content-Type": "application/json" },
    });
    expect(created.status).toBe(201);
    expect(created.headers[FREQUENCY_HEADER]).toBeUndefined();
    const failed = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts/failing/balances",
      headers: { "Consent-ID": "consent-failing" },
      ...UNATTENDED,
    });
    expect(failed.status).toBe(500);
    expect(failed.headers[FREQUENCY_HEADER]).toBeUndefined();
    backend.reset();
    expect(await statuses(gw, "/v1/accounts/agreed-7/balances", 4, { "Consent-ID": "consent-new" })).toEqual(
      passed(3, 4),
    );
    // The 500 taught nothing: consent-failing has the TPP's own 6.
    expect(
      await statuses(gw, "/v1/accounts/failing-not/balances", 7, { "Consent-ID": "consent-failing" }),
    ).toEqual(passed(6, 7));
  });
});

describeWithRedis("agreed limits on two gateways sharing one Redis", () => {
  let redis: RedisServer;
  let backend: RecordingBackend;
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    redis = await startRedisServer();
    backend = await startRecordingBackend();
    const pki = await testPki();
    const config = {
      store: { type: "redis" as const, url: redis.url },
      limits: {
        unattended: {
          agreements: [{ organizationId: pki.tppA.organizationId, limit: 7 }],
          consentFrequencyHeader: FREQUENCY_HEADER,
        },
      },
    };
    a = await startTestGateway({ backendUrl: backend.url, pki, config });
    b = await startTestGateway({ backendUrl: backend.url, pki, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await backend?.close();
    await redis?.stop();
  });
  beforeEach(() => backend.reset());

  it("let exactly the agreed 7 of 50 concurrent calls through between them", () =>
    expectLimitOfFiftyAcross(a, b, backend, "shared-7", 7));

  it("share what one learnt of a consent: its frequencyPerDay holds on the other", async () => {
    backend.behave((_req, res) =>
      res.writeHead(200, { "content-type": "application/json", [FREQUENCY_HEADER]: "1" }).end("{}"),
    );
    const headers = { "Consent-ID": "consent-one" };
    expect(await statuses(a, "/v1/accounts/shared-1/balances", 1, headers)).toEqual([200]);
    // Learnt by a; b holds the consent to 1 (its own window, per consent): one, then refused.
    expect(await statuses(b, "/v1/accounts/shared-1/balances", 2, headers)).toEqual([200, 429]);
    expect(await statuses(a, "/v1/accounts/shared-1/balances", 1, headers)).toEqual([429]);
  });
});
