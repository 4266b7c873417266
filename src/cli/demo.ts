/**
 * `npm run demo`: a TPP talking to the running gateway with the development certificates: a few
 * good requests and a few broken ones, each printed with what came back.
 */

import { createPrivateKey, randomUUID, X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, request } from "undici";
import { formatHttpDate, RequestSigner } from "../signature/index.js";
import { defineCommand, UsageError } from "./command.js";
import { DEV_CERTS_DIR } from "./paths.js";

interface Case {
  readonly title: string;
  readonly tpp: "tpp-a" | "tpp-b" | "expired" | "revoked" | "unregistered";
  readonly method: string;
  readonly target: string;
  readonly body?: () => string;
  readonly headers?: Record<string, string>;
  /** Changes the request after signing, to show what the gateway refuses. */
  readonly tamper?: (
    headers: Record<string, string>,
    body: string | undefined,
  ) => { headers: Record<string, string>; body?: string | undefined };
}

/**
 * The demo bank's sandbox tooling: a customer's customerNumber as PSU-ID reaches its accounts
 * without a browser (a TPP's real PSU-ID comes from the SCA redirect; docs/sandbox.md).
 * Replaced by the first private customer's number, read from the customer list first.
 */
const PSU = { "PSU-ID": "12866148897", "PSU-IP-Address": "192.0.2.10" };
const REDIRECT = { "TPP-Redirect-URI": "https://tpp.example/callback" };
let psuId = PSU["PSU-ID"];
/** The case's headers with the PSU-ID read from the customer list. */
const withPsu = (headers: Record<string, string> = {}) =>
  headers["PSU-ID"] === PSU["PSU-ID"] ? { ...headers, "PSU-ID": psuId } : headers;
/** The debtor account is the PSU's own, read from the first call's answer. */
let debtorBban = "00000000000";
const payment = () =>
  JSON.stringify({
    instructedAmount: { amount: "125.50", currency: "NOK" },
    debtorAccount: { bban: debtorBban },
    creditorAccount: { bban: "98765432105" },
    creditorName: "Ola Nordmann",
    remittanceInformationUnstructured: `Demo ${randomUUID().slice(0, 8)}`,
  });

const CASES: Case[] = [
  {
    title: "sandbox customers (test tooling: no PSU, no TPP-Redirect-URI)",
    tpp: "tpp-a",
    method: "GET",
    target: "/v1/sandbox/customers",
  },
  {
    title: "list accounts (PSU present)",
    tpp: "tpp-a",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT },
  },
  {
    title: "initiate a payment",
    tpp: "tpp-a",
    method: "POST",
    target: "/v1/payments/norwegian-domestic-credit-transfers",
    body: payment,
    headers: { ...PSU, ...REDIRECT },
  },
  {
    title: "body changed after signing (Digest mismatch)",
    tpp: "tpp-a",
    method: "POST",
    target: "/v1/payments/norwegian-domestic-credit-transfers",
    body: payment,
    headers: { ...PSU, ...REDIRECT },
    tamper: (h, body) => ({ headers: h, body: body?.replace("125.50", "999.50") }),
  },
  {
    title: "PSU-ID swapped after signing",
    tpp: "tpp-a",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT },
    tamper: (h) => ({ headers: { ...h, "PSU-ID": "00000000-0000-4000-8000-000000000000" } }),
  },
  {
    title: "AIS-only TPP tries to pay",
    tpp: "tpp-b",
    method: "POST",
    target: "/v1/payments/norwegian-domestic-credit-transfers",
    body: payment,
    headers: { ...PSU, ...REDIRECT },
  },
  {
    title: "expired certificate",
    tpp: "expired",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT },
  },
  {
    title: "revoked certificate",
    tpp: "revoked",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT },
  },
  {
    title: "TPP not in the register",
    tpp: "unregistered",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT },
  },
  {
    title: "no Signature header",
    tpp: "tpp-a",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT },
    tamper: (h) => {
      const { Signature: _drop, ...rest } = h;
      return { headers: rest };
    },
  },
  {
    title: "Date two minutes old",
    tpp: "tpp-a",
    method: "GET",
    target: "/v1/accounts",
    headers: { ...PSU, ...REDIRECT, Date: formatHttpDate(Date.now() - 120_000) },
  },
];

export const demoCommand = defineCommand({
  name: "demo",
  summary: "send good and broken signed requests to a running gateway",
  usage: `psd2-gateway demo [--url <gateway url>] [--certs <dir>]

  --url <url>     default https://localhost:8443 (what npm start runs)
  --certs <dir>   the development PKI (default certs/dev)

Exits 1 when a request could not be sent at all.`,
  options: {
    url: { type: "string", default: "https://localhost:8443" },
    certs: { type: "string", path: "folder" },
  },
  run: runDemo,
});

async function runDemo(values: { url?: string | undefined; certs?: string | undefined }): Promise<number> {
  const dir = values.certs ?? DEV_CERTS_DIR;
  const file = (...p: string[]) => readFileSync(join(dir, ...p));
  const needed = [
    "trust/demo-root-ca.pem",
    ...["tpp-a", "tpp-b"].flatMap((q) => [`tpp/${q}-qwac.pem`, `tpp/${q}-qwac.key.pem`]),
    ...[...new Set(CASES.map((c) => c.tpp))].flatMap((t) => [`tpp/${t}-qseal.pem`, `tpp/${t}-qseal.key.pem`]),
  ];
  const missing = needed.find((f) => !existsSync(join(dir, f)));
  if (missing !== undefined) {
    if (values.certs !== undefined)
      throw new UsageError(
        `--certs ${dir}: not a development PKI (no ${missing} in it); npm run certs -- --out ${dir} makes one`,
      );
    console.error(
      `psd2-gateway demo: no development PKI in ${dir} (no ${missing}); npm start or npm run certs makes it`,
    );
    return 1;
  }
  // mTLS as a real TPP connects: each demo TPP with its own QWAC; the refused cases with TPP A's.
  const agents = new Map<string, Agent>();
  const agentFor = (tpp: string) => {
    const qwac = tpp === "tpp-b" ? "tpp-b" : "tpp-a";
    let agent = agents.get(qwac);
    if (!agent) {
      agent = new Agent({
        connect: {
          ca: file("trust", "demo-root-ca.pem"),
          cert: file("tpp", `${qwac}-qwac.pem`),
          key: file("tpp", `${qwac}-qwac.key.pem`),
        },
      });
      agents.set(qwac, agent);
    }
    return agent;
  };
  const signers = new Map<string, RequestSigner>();
  const signerFor = (tpp: string) => {
    let signer = signers.get(tpp);
    if (!signer) {
      signer = new RequestSigner({
        privateKey: createPrivateKey(file("tpp", `${tpp}-qseal.key.pem`)),
        certificate: new X509Certificate(file("tpp", `${tpp}-qseal.pem`)).raw,
      });
      signers.set(tpp, signer);
    }
    return signer;
  };

  let failures = 0;
  for (const c of CASES) {
    let body = c.body?.();
    const signed = await signerFor(c.tpp).sign({
      method: c.method,
      target: c.target,
      headers: withPsu(c.headers),
      ...(body ? { body } : {}),
    });
    let headers: Record<string, string> = { ...withPsu(c.headers), ...signed };
    if (body) headers["Content-Type"] = "application/json";
    if (c.tamper) {
      const changed = c.tamper(headers, body);
      headers = changed.headers;
      body = changed.body ?? body;
    }
    try {
      const response = await request(values.url!.replace(/\/$/, "") + c.target, {
        method: c.method,
        headers,
        body,
        dispatcher: agentFor(c.tpp),
      });
      const text = await response.body.text();
      let summary = text.slice(0, 160);
      try {
        const json = JSON.parse(text) as {
          tppMessages?: { code: string; text: string }[];
          accounts?: { bban: string }[];
        };
        if (json.tppMessages?.[0]) summary = `${json.tppMessages[0].code}: ${json.tppMessages[0].text}`;
        if (json.accounts?.[0]) debtorBban = json.accounts[0].bban;
        if (Array.isArray(json)) {
          const customer = (json as { customerType?: string; customerNumber?: string }[]).find(
            (c) => c.customerType === "PRIVATE",
          );
          if (customer?.customerNumber) psuId = customer.customerNumber;
          summary = `${json.length} customers; PSU-ID from here on: ${psuId} (a private customer's customerNumber)`;
        }
      } catch {
        // not JSON: show the start of it
      }
      console.log(`${String(response.statusCode).padEnd(4)} ${c.title}\n     ${summary}\n`);
    } catch (error) {
      failures++;
      console.log(`ERR  ${c.title}: ${(error as Error).message}\n`);
    }
  }
  await Promise.all([...agents.values()].map((a) => a.close()));
  return failures === 0 ? 0 : 1;
}
