/**
 * Issue 30, points 1–4: a sandbox a bank can publish. The gateway and the demo bank run as `npm
 * start` runs them (cli/start.ts's startDemoBank, a secret per start), on loopback: the bank's API
 * answers only calls that came through the gateway, its SCA listener serves nothing but the SCA
 * page, renamed identity headers cannot be spoofed under their default names, each TPP acts in
 * its own room with random ids, and the state file brings every room back after a restart.
 */

import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { createSandboxBank, GATEWAY_SECRET_HEADER } from "@psd2-gateway/sandbox-bank";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { walkSca } from "../../packages/sandbox-bank/test/sca-walk.js";
import type { StartedBackend } from "../../src/app.js";
import { startDemoBank } from "../../src/cli/start.js";
import {
  type CallResult,
  type GatewayOptions,
  type SignedCall,
  signedCall,
  startTestGateway,
  type TestGateway,
  testPki,
} from "../helpers/gateway-fixture.js";
import { freeLoopbackPort, REPO_ROOT } from "../helpers/gateway-process.js";
import { startRecordingBackend } from "../helpers/recording-backend.js";

type ConfigOverrides = NonNullable<GatewayOptions["config"]>;

const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
const kari = createSandboxBank({ gatewaySecret: "s".repeat(32) }).data.customers[0]!;

let pki: DevPki;
let dir: string;
const running: TestGateway[] = [];

beforeAll(async () => {
  pki = await testPki();
  dir = mkdtempSync(join(tmpdir(), "sandbox-security-"));
});
afterEach(async () => {
  for (const gw of running.splice(0)) await gw.close(0);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Running {
  readonly gw: TestGateway;
  /** What cli/start.ts started: the API's URL (or socket) and the SCA page's URL. */
  readonly bank: StartedBackend;
  /** A signed call through the gateway by TPP A (PSP_AI, PSP_PI) or B (PSP_AI only). */
  call(tpp: "A" | "B", call: Omit<SignedCall, "signer">): Promise<CallResult>;
}

/** A gateway in front of the demo bank, as `npm start` runs them. */
async function start(config: ConfigOverrides = {}): Promise<Running> {
  let bank: StartedBackend | undefined;
  const gw = await startTestGateway({
    backendUrl: "sandbox",
    pki,
    startDemoBank: async (request) => {
      bank = await startDemoBank(request);
      return bank;
    },
    config: { ...config, sandbox: { port: 0, ...(config.sandbox ?? {}) } },
  });
  running.push(gw);
  return {
    gw,
    bank: bank!,
    call: (tpp, call) => signedCall(gw, { signer: tpp === "A" ? pki.tppA.qseal : pki.tppB.qseal, ...call }),
  };
}

const json = (body: unknown) => JSON.stringify(body);
const paymentBody = () =>
  json({
    instructedAmount: { amount: "125.50", currency: "NOK" },
    debtorAccount: { bban: kari.accounts[0]!.bban },
    creditorAccount: { bban: "12345678903" },
    creditorName: "Per Bakken",
  });

async function createConsent(sandbox: Running, tpp: "A" | "B"): Promise<{ consentId: string; sca: string }> {
  const created = await sandbox.call(tpp, {
    method: "POST",
    target: "/v1/bank-offered-consents",
    body: "{}",
  });
  expect(created.status, created.text).toBe(201);
  const body = created.json as { consentId: string; _links: { scaRedirect: { href: string } } };
  return { consentId: body.consentId, sca: body._links.scaRedirect.href };
}

async function createCustomer(sandbox: Running, tpp: "A" | "B"): Promise<string> {
  const created = await sandbox.call(tpp, {
    method: "POST",
    target: "/v1/sandbox/customers",
    body: json({ customerType: "PRIVATE", customerName: "Anne Berg" }),
  });
  expect(created.status, created.text).toBe(201);
  return (created.json as { customerId: string }).customerId;
}

/** Straight to the API's port, as an attacker on the network would, with identity headers of its choosing. */
function direct(bank: StartedBackend, method: string, path: string, headers: Record<string, string> = {}) {
  return fetch(`${bank.url}${path}`, {
    method,
    headers: {
      "X-TPP-Organization-Id": pki.tppA.organizationId,
      "X-TPP-Roles": "PSP_AI,PSP_PI",
      "X-PSU-Present": "true",
      "content-type": "application/json",
      ...headers,
    },
    ...(method === "POST" ? { body: paymentBody() } : {}),
  });
}

async function tppMessage(response: Response): Promise<{ status: number; code: string; text: string }> {
  const body = (await response.json()) as { tppMessages: { category: string; code: string; text: string }[] };
  expect(body.tppMessages[0]!.category).toBe("ERROR");
  return { status: response.status, code: body.tppMessages[0]!.code, text: body.tppMessages[0]!.text };
}

describe("1. the bank's API answers only the gateway; the SCA listener only the SCA page", () => {
  it("refuses unsigned direct calls to the API port with a Berlin Group 401/403 before any route", async () => {
    const sandbox = await start();
    const customerId = await createCustomer(sandbox, "A");
    const refusals = [
      await direct(sandbox.bank, "POST", PAYMENTS),
      await direct(sandbox.bank, "GET", "/v1/sandbox/customers"),
      await direct(sandbox.bank, "POST", "/v1/sandbox/reset"),
      // An unknown path gets the same answer: the call never reached the router.
      await direct(sandbox.bank, "GET", "/no/such/route"),
    ];
    for (const refused of refusals) {
      expect(await tppMessage(refused)).toEqual({
        status: 401,
        code: "SIGNATURE_MISSING",
        text: expect.stringContaining("send the signed request to the gateway"),
      });
    }
    const guessed = await direct(sandbox.bank, "GET", "/v1/sandbox/customers", {
      [GATEWAY_SECRET_HEADER]: "a-guess-that-is-long-enough-to-be-considered-0001",
    });
    expect(await tppMessage(guessed)).toMatchObject({ status: 403, code: "SERVICE_BLOCKED" });
    // The direct reset reached nothing: A's customer is still there.
    const still = await sandbox.call("A", { target: `/v1/sandbox/customers/${customerId}` });
    expect(still.status, still.text).toBe(200);
  });

  it("through the gateway the same calls succeed, a client's own secret header replaced by the gateway's", async () => {
    const sandbox = await start();
    const listed = await sandbox.call("A", {
      target: "/v1/sandbox/customers",
      headers: { [GATEWAY_SECRET_HEADER]: "the-client-guesses-a-secret-of-its-own-0001" },
    });
    expect(listed.status, listed.text).toBe(200);
    const created = await sandbox.call("A", { method: "POST", target: PAYMENTS, body: paymentBody() });
    expect(created.status, created.text).toBe(201);
  });

  it("serves the SCA page on its own listener, where API paths answer 404", async () => {
    const sandbox = await start();
    expect(sandbox.bank.scaUrl).not.toBe(sandbox.bank.url);
    const { sca } = await createConsent(sandbox, "A");
    expect(sca.startsWith(`${sandbox.bank.scaUrl}/sca/`)).toBe(true);
    const page = await fetch(sca);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    for (const [method, path] of [
      ["GET", "/v1/sandbox/customers"],
      ["POST", PAYMENTS],
      ["POST", "/v1/sandbox/reset"],
    ] as const) {
      const answer = await fetch(`${sandbox.bank.scaUrl}${path}`, {
        method,
        headers: { "X-TPP-Organization-Id": pki.tppA.organizationId, "X-TPP-Roles": "PSP_AI,PSP_PI" },
        ...(method === "POST" ? { body: paymentBody() } : {}),
      });
      expect(await tppMessage(answer)).toMatchObject({ status: 404, code: "RESOURCE_UNKNOWN" });
    }
  });

  it("puts the API on a Unix socket only its user may open, when configured; the gateway forwards there", async () => {
    const socket = join(dir, "bank.sock");
    const sandbox = await start({ sandbox: { api: { socket } } });
    expect(sandbox.bank.socketPath).toBe(socket);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    const listed = await sandbox.call("A", { target: "/v1/sandbox/customers" });
    expect(listed.status, listed.text).toBe(200);
  });
});

describe("2. renamed identity headers: the bank reads the configured names, the defaults never pass", () => {
  it("a default-name organisation header a client sends does not reach the bank", async () => {
    const sandbox = await start({
      identityHeaders: { organizationId: "X-Bank-Tpp", roles: "X-Bank-Roles", psuPresent: "X-Bank-Psu" },
    });
    const { consentId } = await createConsent(sandbox, "A");
    const target = `/v1/bank-offered-consents/${consentId}`;
    // The bank finds A's consent under the configured name (it would see no TPP under the default).
    const own = await sandbox.call("A", { target });
    expect(own.status, own.text).toBe(200);
    const spoofs: Record<string, string>[] = [
      { "X-TPP-Organization-Id": pki.tppA.organizationId, "X-TPP-Roles": "PSP_AI,PSP_PI" },
      { "X-Bank-Tpp": pki.tppA.organizationId },
      { X_TPP_Organization_Id: pki.tppA.organizationId },
    ];
    for (const headers of spoofs) {
      const spoofed = await sandbox.call("B", { target, headers });
      expect(spoofed.status, `${JSON.stringify(headers)}: ${spoofed.text}`).toBe(403);
      expect(spoofed.json.tppMessages?.[0]?.code).toBe("CONSENT_UNKNOWN");
    }
  });

  it("the gateway strips the default names (and look-alikes) as well as the configured ones from a client's request", async () => {
    // A backend that still reads the default names after a rename: it must never see a client's.
    const backend = await startRecordingBackend();
    try {
      const gw = await startTestGateway({
        backendUrl: backend.url,
        pki,
        config: { identityHeaders: { organizationId: "X-Bank-Tpp", roles: "X-Bank-Roles" } },
      });
      running.push(gw);
      const spoofed = {
        "X-TPP-Organization-Id": pki.tppA.organizationId,
        "X-TPP-Roles": "PSP_AI,PSP_PI",
        "X-PSU-Present": "true",
        "X-TPP-Name": "Demo Payments AS",
        "X-TPP-Certificate-Fingerprint": "00",
        x_tpp_organization_id: pki.tppA.organizationId,
        "X-Bank-Tpp": pki.tppA.organizationId,
      };
      const forwarded = await signedCall(gw, {
        signer: pki.tppB.qseal,
        target: "/v1/accounts",
        headers: spoofed,
      });
      expect(forwarded.status, forwarded.text).toBe(200);
      const received = backend.requests[0]!.headers;
      expect(received["x-bank-tpp"]).toBe(pki.tppB.organizationId);
      expect(received["x-bank-roles"]).toBe("PSP_AI");
      for (const name of [
        "x-tpp-organization-id",
        "x-tpp-roles",
        "x_tpp_organization_id",
        GATEWAY_SECRET_HEADER,
      ]) {
        expect(received[name], name).toBeUndefined();
      }
      // The names not renamed are the gateway's own values, not the client's.
      expect(received["x-psu-present"]).toBe("true");
      expect(received["x-tpp-certificate-fingerprint"]).not.toBe("00");
    } finally {
      await backend.close();
    }
  });
});

describe("2b. renaming identity headers on a configuration reload", () => {
  it("needs a restart while the demo bank runs: the running names stay, calls keep working", async () => {
    const sandbox = await start();
    const { consentId } = await createConsent(sandbox, "A");
    const renamed = {
      ...sandbox.gw.config,
      identityHeaders: { ...sandbox.gw.config.identityHeaders, organizationId: "x-bank-tpp" },
    };
    expect(await sandbox.gw.gateway.reconfigure(renamed)).toEqual(["identityHeaders (sandbox)"]);
    const own = await sandbox.call("A", { target: `/v1/bank-offered-consents/${consentId}` });
    expect(own.status, own.text).toBe(200);
  });
});

describe("3. each TPP in its own room", () => {
  it("B cannot revoke or read A's consent; A can revoke its own", async () => {
    const sandbox = await start();
    const { consentId } = await createConsent(sandbox, "A");
    const revoke = (tpp: "A" | "B") =>
      sandbox.call(tpp, { method: "POST", target: `/v1/sandbox/consents/${consentId}/revoke`, body: "{}" });
    const foreign = await revoke("B");
    expect(foreign.status, foreign.text).toBe(404);
    const read = await sandbox.call("B", { target: `/v1/bank-offered-consents/${consentId}/status` });
    expect(read.status).toBe(403);
    expect(read.json.tppMessages?.[0]?.code).toBe("CONSENT_UNKNOWN");
    const revoked = await revoke("A");
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.json).toMatchObject({ consentStatus: "revokedByPsu" });
  });

  it("a reset resets the caller's room only; the operator's reset on the admin listener resets every room", async () => {
    const sandbox = await start();
    const anne = await createCustomer(sandbox, "A");
    const customer = (tpp: "A" | "B") => sandbox.call(tpp, { target: `/v1/sandbox/customers/${anne}` });
    expect((await customer("B")).status).toBe(404);
    // B is AIS-only: its reset empties its own room, not A's.
    const reset = (tpp: "A" | "B") =>
      sandbox.call(tpp, { method: "POST", target: "/v1/sandbox/reset", body: "{}" });
    expect((await reset("B")).status).toBe(200);
    expect((await customer("A")).status).toBe(200);
    expect((await reset("A")).status).toBe(200);
    expect((await customer("A")).status).toBe(404);

    const again = await createCustomer(sandbox, "A");
    const admin = sandbox.gw.gateway.adminUrl!;
    const operator = await fetch(`${admin}/sandbox/reset`, { method: "POST" });
    expect(operator.status).toBe(200);
    expect((await sandbox.call("A", { target: `/v1/sandbox/customers/${again}` })).status).toBe(404);
  });

  it("hands out random ids: the first consent and payment after a start differ from one start to the next", async () => {
    const firsts: string[] = [];
    for (let start_ = 0; start_ < 2; start_++) {
      const sandbox = await start();
      const { consentId } = await createConsent(sandbox, "A");
      const payment = await sandbox.call("A", { method: "POST", target: PAYMENTS, body: paymentBody() });
      expect(payment.status, payment.text).toBe(201);
      firsts.push(consentId, (payment.json as { paymentId: string }).paymentId);
      await running.pop()!.close(0);
    }
    for (const id of firsts)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(firsts).size).toBe(4);
  });
});

describe("4. the state file keeps every room across a restart", () => {
  it("finds customers, payments, baskets, consents and the PSU-ID's customer again; the file is 0600", async () => {
    const stateFile = join(dir, "state.json");
    const first = await start({ sandbox: { stateFile } });
    const anne = await createCustomer(first, "A");
    const payment = await first.call("A", { method: "POST", target: PAYMENTS, body: paymentBody() });
    expect(payment.status, payment.text).toBe(201);
    const paymentId = (payment.json as { paymentId: string }).paymentId;
    const basket = await first.call("A", {
      method: "POST",
      target: "/v1/signing-baskets",
      body: json({ paymentIds: [paymentId] }),
    });
    expect(basket.status, basket.text).toBe(201);
    const basketId = (basket.json as { basketId: string }).basketId;
    // A consent the PSU granted at the SCA page: its PSU-ID names Kari for A only.
    const { consentId, sca } = await createConsent(first, "A");
    const walk = await walkSca(sca, { identity: kari.customerNumber });
    const psuId = walk.redirect.searchParams.get("psu-id")!;
    expect(psuId).toMatch(/^[0-9a-f-]{36}$/);
    const accounts = () => ({ target: "/v1/accounts", headers: { "PSU-ID": psuId } });
    const before = await first.call("A", accounts());
    expect(before.status, before.text).toBe(200);
    const bConsent = (await createConsent(first, "B")).consentId;
    expect(statSync(stateFile).mode & 0o777).toBe(0o600);
    await running.pop()!.close(0);

    const second = await start({ sandbox: { stateFile } });
    const expectFound = async (tpp: "A" | "B", target: string) => {
      const found = await second.call(tpp, { target });
      expect(found.status, `${target}: ${found.text}`).toBe(200);
      return found.json;
    };
    await expectFound("A", `/v1/sandbox/customers/${anne}`);
    expect(await expectFound("A", `${PAYMENTS}/${paymentId}/status`)).toMatchObject({
      transactionStatus: "RCVD",
    });
    await expectFound("A", `/v1/signing-baskets/${basketId}`);
    expect(await expectFound("A", `/v1/bank-offered-consents/${consentId}/status`)).toEqual({
      consentStatus: "valid",
    });
    const after = await second.call("A", accounts());
    expect(after.status, after.text).toBe(200);
    expect(after.json).toEqual(before.json);
    await expectFound("B", `/v1/bank-offered-consents/${bConsent}/status`);
    expect((await second.call("A", { target: `/v1/bank-offered-consents/${bConsent}/status` })).status).toBe(
      403,
    );
    expect(statSync(stateFile).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });
});

describe("`psd2-gateway sandbox` on its own", () => {
  it("creates its secret file (0600) and answers only calls carrying it; the SCA port serves no API", async () => {
    const [port, apiPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
    const secretFile = join(dir, "gateway-secret");
    const child = spawn(
      process.execPath,
      [
        "--conditions=psd2-gateway-source",
        "--import",
        "tsx",
        "src/main.ts",
        "sandbox",
        "--port",
        String(port),
        "--api-port",
        String(apiPort),
        "--secret-file",
        secretFile,
      ],
      { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString("utf8");
          if (out.includes("sandbox bank:")) resolve();
        });
        child.once("close", (code) => reject(new Error(`exited ${code} before listening: ${out}`)));
      });
      expect(statSync(secretFile).mode & 0o777).toBe(0o600);
      const secret = readFileSync(secretFile, "utf8").trim();
      const api = `http://127.0.0.1:${apiPort}/v1/sandbox/customers`;
      const tpp = { "X-TPP-Organization-Id": "PSDNO-FSA-DEV" };
      expect((await fetch(api, { headers: tpp })).status).toBe(401);
      expect((await fetch(api, { headers: { ...tpp, [GATEWAY_SECRET_HEADER]: secret } })).status).toBe(200);
      const sca = await fetch(`http://127.0.0.1:${port}/v1/sandbox/customers`, {
        headers: { ...tpp, [GATEWAY_SECRET_HEADER]: secret },
      });
      expect(sca.status).toBe(404);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  });
});
