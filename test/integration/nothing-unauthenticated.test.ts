/**
 * Nothing unauthenticated reaches the bank, in any dialect (issue 37), over real TLS in front of a
 * backend that acts on a request's head at once, as a legacy core's GET or DELETE handler does:
 *
 * - a forged UK Open Banking request (a TPP's public certificate in x5c, a garbage signature, a
 *   chunked body sent slowly) never reaches the backend, not even its head: UK OB signs the body
 *   only, so the body is read whole and verified first, and the request must come over mutual TLS
 *   with the QWAC of the signer's organisation; forged requests of the head-signed dialects are
 *   refused in the head;
 * - a replay is refused up to the last moment its request could be accepted, in every dialect;
 * - a JWS request whose TPP-Signature-Certificate is not its x5c leaf is refused (the backend would
 *   read that header as the certificate verified).
 */

import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import type { Agent } from "undici";
import { describe, expect, it } from "vitest";
import { RequestSigner } from "../../src/signature/index.js";
import { JadesRequestSigner } from "../../src/signature/jws/request-signer.js";
import { UkObRequestSigner } from "../../src/signature/jws/ukob-request-signer.js";
import { Rfc9421RequestSigner } from "../../src/signature/rfc9421/request-signer.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, rawExchange, rawHead, send, type TestGateway } from "../helpers/gateway-fixture.js";

/** The built-in dialects (the registry is open: these are the four this file signs in). */
type Dialect = "cavage" | "rfc9421" | "jades" | "uk-ob";

const ORG = "PSDNO-FSA-DEMO0001";
const TOLERANCE_MS = 60_000;
const RFC9421_MAX_AGE_S = 300;

/** The gateway's clock: real time, or a moment the replay tests hold it at. */
const clock: { heldAt: number | undefined } = { heldAt: undefined };

const env = useGatewayAndBackend(() => ({
  config: {
    listen: { clientCertificate: "request" },
    verification: {
      dateToleranceSeconds: TOLERANCE_MS / 1000,
      dialects: {
        accept: ["cavage", "rfc9421", "jades", "uk-ob"],
        rfc9421: { maxAgeSeconds: RFC9421_MAX_AGE_S },
      },
    },
  },
  now: () => clock.heldAt ?? Date.now(),
}));

interface Signing {
  sign(request: {
    method: string;
    target: string;
    headers: Record<string, string>;
    body?: string;
  }): Promise<Record<string, string>>;
}

function signerOf(dialect: Dialect, seal: IssuedCertificate, at: () => number): Signing {
  const { privateKey, der } = seal;
  switch (dialect) {
    case "cavage":
      return new RequestSigner({ privateKey, certificate: der, clock: at });
    case "rfc9421":
      return new Rfc9421RequestSigner({ privateKey, certificate: der, scheme: "https", clock: at });
    case "jades":
      return new JadesRequestSigner({ privateKey, certificateChain: [der], clock: at });
    case "uk-ob":
      return new UkObRequestSigner({
        privateKey,
        certificate: der,
        kid: "key-1",
        iss: `${ORG}/software-1`,
        tan: "openbanking.org.uk",
        clock: at,
      });
  }
}

interface Call {
  readonly method: string;
  readonly target: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** A request signed in `dialect` by TPP A's QSealC (or `seal`), at `at` (epoch ms). */
async function signed(
  gw: TestGateway,
  dialect: Dialect,
  request: { method: string; target: string; body?: string },
  at = Date.now(),
  seal: IssuedCertificate = gw.pki.tppA.qseal,
): Promise<Call> {
  const base: Record<string, string> = {
    host: new URL(gw.url).host,
    "tpp-redirect-uri": "https://tpp.example/cb",
    "psu-ip-address": "192.0.2.10",
    ...(request.body === undefined ? {} : { "content-type": "application/json" }),
  };
  const added = await signerOf(dialect, seal, () => at).sign({ ...request, headers: base });
  const headers: Record<string, string> = { ...base };
  for (const [name, value] of Object.entries(added)) headers[name.toLowerCase()] = value;
  delete headers.host;
  return { ...request, headers };
}

/** Its signature replaced by bytes no key made (the certificate and every other part left as signed). */
function forged(dialect: Dialect, call: Call): Call {
  const headers = { ...call.headers };
  const garbage = randomBytes(256);
  if (dialect === "cavage") {
    headers.signature = headers.signature!.replace(
      /signature="[^"]*"/,
      `signature="${garbage.toString("base64")}"`,
    );
  } else if (dialect === "rfc9421") {
    headers.signature = headers.signature!.replace(/=:[^:]*:/, `=:${garbage.toString("base64")}:`);
  } else {
    const [protectedB64, payload] = headers["x-jws-signature"]!.split(".");
    headers["x-jws-signature"] = `${protectedB64}.${payload}.${garbage.toString("base64url")}`;
  }
  return { ...call, headers };
}

/** The body as a slow chunked stream: three pieces 60 ms apart, the head long gone by the last. */
function slowly(body: string): Readable {
  const third = Math.ceil(body.length / 3);
  return Readable.from(
    (async function* () {
      for (let at = 0; at < body.length; at += third) {
        yield Buffer.from(body.slice(at, at + third));
        await sleep(60);
      }
    })(),
  );
}

const agents = new Map<string, Agent>();
function connection(gw: TestGateway, qwac: "none" | "tppA" | "tppB"): Agent {
  if (qwac === "none") return gw.client;
  let agent = agents.get(qwac);
  if (!agent) {
    agent = gw.withClientCertificate(gw.pki[qwac].qwac);
    agents.set(qwac, agent);
  }
  return agent;
}

const PAYMENT_BODY = JSON.stringify({
  instructedAmount: { currency: "EUR", amount: "123.50" },
  creditorName: "Laura",
  remittance: "x".repeat(20_000),
});

/** What the attacker of the report sent: GET with a body, DELETE of a payment, POST of a payment. */
const TARGETS = [
  { method: "GET", target: "/v1/accounts", body: "{}" },
  { method: "DELETE", target: "/v1/payments/sepa-credit-transfers/p-1", body: "{}" },
  { method: "POST", target: "/v1/payments/sepa-credit-transfers", body: PAYMENT_BODY },
] as const;

const FORGERIES: readonly {
  readonly dialect: Dialect;
  readonly qwac: "none" | "tppA" | "tppB";
  readonly code: string;
  readonly text: string;
}[] = [
  // The report's attacker: TPP A's public certificate only, no QWAC, or a QWAC of their own.
  {
    dialect: "uk-ob",
    qwac: "none",
    code: "CERTIFICATE_MISSING",
    text: "bound to your organisation by mutual TLS",
  },
  { dialect: "uk-ob", qwac: "tppB", code: "CERTIFICATE_INVALID", text: "both must name the same TPP" },
  // Even over TPP A's own connection, a body whose signature fails is never sent, head included.
  { dialect: "uk-ob", qwac: "tppA", code: "SIGNATURE_INVALID", text: "base64url-encoded" },
  { dialect: "jades", qwac: "none", code: "SIGNATURE_INVALID", text: "" },
  { dialect: "rfc9421", qwac: "none", code: "SIGNATURE_INVALID", text: "" },
  { dialect: "cavage", qwac: "none", code: "SIGNATURE_INVALID", text: "" },
];

describe("a forged request never reaches a backend that acts on the head", () => {
  it.each(
    FORGERIES.flatMap((f) =>
      TARGETS.map((t) => ({ ...f, ...t, name: `${f.dialect} ${t.method} (QWAC ${f.qwac})` })),
    ),
  )("refuses $name before any byte leaves", async ({ dialect, qwac, code, text, method, target, body }) => {
    env.backend.actOnHead();
    const call = forged(dialect, await signed(env.gw, dialect, { method, target, body }));
    const r = await send(
      env.gw,
      call.method,
      call.target,
      call.headers,
      slowly(call.body!),
      connection(env.gw, qwac),
    );
    expectRejected(r, { status: 400, code, text: text ? [text] : [] });
    expect(r.headers["x-backend"]).toBeUndefined();
    expect(env.backend.requests).toHaveLength(0);
  });

  it("forwards a genuine UK OB request over the same organisation's QWAC, its slow body whole", async () => {
    env.backend.actOnHead();
    const call = await signed(env.gw, "uk-ob", TARGETS[2]);
    const r = await send(
      env.gw,
      call.method,
      call.target,
      call.headers,
      slowly(call.body!),
      connection(env.gw, "tppA"),
    );
    expect(r.status, r.text).toBe(200);
    const [received] = await env.backend.waitForRequests(1);
    await received!.settled;
    expect(received!.body.toString()).toBe(PAYMENT_BODY);
    expect(received!.headers["x-tpp-organization-id"]).toBe(ORG);
  });
});

describe("a body of declared length is verified whole before any byte leaves", () => {
  // Dialects whose signature covers the head and the body through a digest: a changed body
  // fails only at its end. Declared by Content-Length and small, it is read whole first, so the
  // backend gets nothing at all, not a head it might act on.
  it.each(["cavage", "rfc9421"] as const)(
    "%s: a body changed after signing never reaches a backend that acts on the head",
    async (dialect) => {
      env.backend.actOnHead();
      const call = await signed(env.gw, dialect, TARGETS[2]);
      const changed = call.body!.replace("123.50", "923.50");
      const r = await send(env.gw, call.method, call.target, call.headers, changed);
      expectRejected(r, { status: 400, code: "SIGNATURE_INVALID" });
      expect(env.backend.requests).toHaveLength(0);
    },
  );
});

/** The last moment each dialect's request signed at `t` (a whole second) is accepted. */
const LAST_ACCEPTED: Readonly<Record<Dialect, (t: number) => number>> = {
  cavage: (t) => t + TOLERANCE_MS, // Date ± tolerance
  jades: (t) => t + TOLERANCE_MS, // sigT ± tolerance
  "uk-ob": (t) => t + TOLERANCE_MS, // iat ± tolerance
  rfc9421: (t) => t + (RFC9421_MAX_AGE_S + TOLERANCE_MS / 1000 + 1) * 1000 - 1, // created + max age + tolerance, judged in whole seconds
};

describe("a replay is refused for as long as its request could be accepted", () => {
  it.each(Object.keys(LAST_ACCEPTED) as Dialect[])(
    "%s: at the last accepted moment, and for time just after",
    async (dialect) => {
      const t = Math.floor(Date.now() / 1000) * 1000;
      const call = await signed(env.gw, dialect, TARGETS[2], t);
      const via = connection(env.gw, "tppA");
      const at = (ms: number) => {
        clock.heldAt = ms;
      };
      try {
        at(t);
        const first = await send(env.gw, call.method, call.target, call.headers, call.body, via);
        expect(first.status, first.text).toBe(200);
        at(LAST_ACCEPTED[dialect](t));
        const replayed = await send(env.gw, call.method, call.target, call.headers, call.body, via);
        // Refused as a replay: every time step passed, so the request itself was still acceptable.
        expectRejected(replayed, { status: 400, code: "SIGNATURE_INVALID", text: ["already used"] });
        at(LAST_ACCEPTED[dialect](t) + 1000);
        const late = await send(env.gw, call.method, call.target, call.headers, call.body, via);
        expectRejected(late, { status: 400, code: "TIMESTAMP_INVALID" });
        expect(env.backend.requests).toHaveLength(1);
      } finally {
        clock.heldAt = undefined;
      }
    },
  );
});

describe("Host is an authority, and RFC 9421's @target-uri is built from it", () => {
  it("refuses Host: <host>:<port>/v1, so a signature over …/v1/v1/consents cannot verify a GET /v1/consents", async () => {
    const authority = new URL(env.gw.url).host;
    // Signed as the report's attacker had it: the path hidden in Host doubles in @target-uri.
    const signer = signerOf("rfc9421", env.gw.pki.tppA.qseal, Date.now);
    const base = {
      host: `${authority}/v1`,
      "tpp-redirect-uri": "https://tpp.example/cb",
      "psu-ip-address": "192.0.2.10",
    };
    const added = await signer.sign({ method: "GET", target: "/v1/consents", headers: base });
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(added)) headers[name.toLowerCase()] = value;
    headers["tpp-redirect-uri"] = base["tpp-redirect-uri"];
    headers["psu-ip-address"] = base["psu-ip-address"];
    const r = await rawExchange(
      env.gw,
      rawHead({ method: "GET", target: "/v1/consents", headers }, base.host),
    );
    expectRejected(r, { status: 400, code: "FORMAT_ERROR", text: ["is not a host[:port]"] });
    expect(env.backend.requests).toHaveLength(0);
  });
});

describe("a certificate's kind decides what it may do", () => {
  it("refuses a request signed with a QWAC, naming the kind found and the kind wanted", async () => {
    const call = await signed(env.gw, "cavage", TARGETS[2], Date.now(), env.gw.pki.tppA.qwac);
    const r = await send(env.gw, call.method, call.target, call.headers, call.body);
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["is a QWAC (QcType web)", "a QSealC (QcType eseal) is wanted"],
    });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses a QSealC presented as the TLS client certificate", async () => {
    const call = await signed(env.gw, "cavage", TARGETS[2]);
    const asClient = env.gw.withClientCertificate(env.gw.pki.tppA.qseal);
    const r = await send(env.gw, call.method, call.target, call.headers, call.body, asClient);
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_INVALID",
      text: ["the TLS client certificate", "is a QSealC (QcType eseal)", "a QWAC (QcType web) is wanted"],
    });
    expect(env.backend.requests).toHaveLength(0);
  });
});

describe("only the certificate verified reaches the backend", () => {
  it.each(["jades", "uk-ob"] as const)(
    "%s: a TPP-Signature-Certificate other than the x5c leaf is refused",
    async (dialect) => {
      const call = await signed(env.gw, dialect, TARGETS[2]);
      const headers = { ...call.headers, "tpp-signature-certificate": env.gw.pki.tppB.qseal.headerValue };
      const r = await send(env.gw, call.method, call.target, headers, call.body, connection(env.gw, "tppA"));
      expectRejected(r, {
        status: 400,
        code: "CERTIFICATE_INVALID",
        text: ["not the certificate the JWS names first in x5c"],
      });
      expect(env.backend.requests).toHaveLength(0);
    },
  );

  it.each(["jades", "uk-ob"] as const)(
    "%s: the same certificate in both passes, as sent",
    async (dialect) => {
      const call = await signed(env.gw, dialect, TARGETS[2]);
      const headers = { ...call.headers, "tpp-signature-certificate": env.gw.pki.tppA.qseal.headerValue };
      const r = await send(env.gw, call.method, call.target, headers, call.body, connection(env.gw, "tppA"));
      expect(r.status, r.text).toBe(200);
      expect(env.backend.requests[0]!.headers["tpp-signature-certificate"]).toBe(
        env.gw.pki.tppA.qseal.headerValue,
      );
    },
  );
});
