/**
 * Keys by reference through a real gateway over TLS: a UK OB request naming its key by `kid` only,
 * found in the TPP's JWKS on a loopback HTTPS directory (iss `<org-id>/<software-statement-id>`),
 * and a JAdES request naming its certificate by `x5t#S256` only, found among the certificates the
 * gateway has seen and trusted, or in `keys.files`. What is found goes through the certificate step
 * like any x5c; what is not is refused saying what to send.
 */

import { randomUUID, sign } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IssuedCertificate } from "@psd2-gateway/dev-pki";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { computeDigestHeader } from "../../src/signature/index.js";
import {
  buildHttpHeadersPayload,
  formatSigT,
  HTTP_HEADERS_MID,
  keyOptions,
  signingInput,
  UKOB_IAT,
  UKOB_ISS,
  UKOB_TAN,
} from "../../src/signature/jws/index.js";
import { thumbprintOf } from "../../src/trust/key-resolver.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, send, type TestGateway } from "../helpers/gateway-fixture.js";
import { type KeyDirectoryServer, startKeyDirectory } from "../helpers/key-directory.js";
import { Scrape } from "../helpers/prometheus-text.js";

const ORG = "PSDNO-FSA-DEMO0001";
const JWKS_PATH = `/${ORG}/software-1.jwks`;

let directory: KeyDirectoryServer | undefined;
const env = useGatewayAndBackend(async (pki) => {
  directory = await startKeyDirectory(pki);
  directory.publish(JWKS_PATH, [{ kid: "key-1", der: pki.tppA.qseal.der }]);
  const folder = mkdtempSync(join(tmpdir(), "psd2-keys-"));
  const ca = join(folder, "directory-ca.pem");
  writeFileSync(ca, directory.ca);
  // TPP B's QSealC, kept by the bank: JAdES may name it by x5t#S256 from the first request on.
  const tppB = join(folder, "tpp-b.pem");
  writeFileSync(tppB, pki.tppB.qseal.pem);
  return {
    config: {
      listen: { clientCertificate: "request" },
      verification: { dialects: { accept: ["cavage", "jades", "uk-ob"] } },
      keys: {
        files: [tppB],
        directories: [{ url: `${directory.origin}/{org-id}/{software-statement-id}.jwks` }],
        ca,
      },
    },
  };
});
afterAll(async () => {
  await directory?.close();
});
beforeEach(() => {
  directory!.requests.length = 0;
});

const b64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

/** A detached compact JWS with exactly this protected header, signed with real crypto. */
function detachedJws(header: Record<string, unknown>, payload: Buffer, signer: IssuedCertificate): string {
  const protectedB64 = b64url(JSON.stringify(header));
  const input = signingInput(protectedB64, payload);
  const signature = sign("sha256", input, keyOptions("PS256", signer.privateKey));
  return `${protectedB64}..${b64url(signature)}`;
}

const baseHeaders = () => ({
  "x-request-id": randomUUID(),
  "tpp-redirect-uri": "https://tpp.example/cb",
  "psu-ip-address": "192.0.2.10",
});

/** TPP A's mutual-TLS connection (UK OB binds the head by it), made once per gateway. */
const overQwac = new WeakMap<TestGateway, ReturnType<TestGateway["withClientCertificate"]>>();
function tppA(gw: TestGateway) {
  let agent = overQwac.get(gw);
  if (!agent) {
    agent = gw.withClientCertificate(gw.pki.tppA.qwac);
    overQwac.set(gw, agent);
  }
  return agent;
}

/** A UK OB GET naming its key by kid (and, when given, x5t#S256), never sending x5c. */
function ukObByKid(gw: TestGateway, kid: string, more: Record<string, unknown> = {}) {
  const header = {
    alg: "PS256",
    kid,
    [UKOB_IAT]: Math.floor(Date.now() / 1000),
    [UKOB_ISS]: `${ORG}/software-1`,
    [UKOB_TAN]: "openbanking.org.uk",
    crit: [UKOB_IAT, UKOB_ISS, UKOB_TAN],
    typ: "JOSE",
    ...more,
  };
  const headers = {
    ...baseHeaders(),
    "x-jws-signature": detachedJws(header, Buffer.alloc(0), gw.pki.tppA.qseal),
  };
  return send(gw, "GET", "/v1/accounts", headers, undefined, tppA(gw));
}

/** psd2_gateway_key_directory_fetches_total of one result (0 before its first count). */
async function fetches(result: "fetched" | "failed"): Promise<number> {
  const text = await env.gw.gateway.metrics.registry.metrics();
  return new Scrape(text).value("psd2_gateway_key_directory_fetches_total", { result });
}

const PARS = ["(request-target)", "digest", "x-request-id", "tpp-redirect-uri"];

/** A JAdES GET signed by `signer`, its certificate in x5c or named by x5t#S256 only. */
function jades(gw: TestGateway, signer: IssuedCertificate, by: "x5c" | "x5t#S256") {
  const headers: Record<string, string> = { ...baseHeaders(), digest: computeDigestHeader("") };
  const header = {
    alg: "PS256",
    b64: false,
    crit: ["b64", "sigT", "sigD"],
    sigT: formatSigT(Date.now()),
    sigD: { mId: HTTP_HEADERS_MID, pars: PARS },
    ...(by === "x5c" ? { x5c: [signer.headerValue] } : { "x5t#S256": thumbprintOf(signer.der) }),
  };
  const payload = buildHttpHeadersPayload(PARS, { method: "GET", target: "/v1/accounts", headers });
  if (!Buffer.isBuffer(payload)) throw new Error(payload.text);
  headers["x-jws-signature"] = detachedJws(header, payload, signer);
  return send(gw, "GET", "/v1/accounts", headers);
}

// In this order: a certificate counts as seen once a request carried it.
describe("JAdES naming its certificate by x5t#S256 only", () => {
  it("is refused while the gateway has neither seen nor been given the certificate, saying what to send", async () => {
    const r = await jades(env.gw, env.gw.pki.tppA.qseal, "x5t#S256");
    expectRejected(r, { status: 400, code: "CERTIFICATE_MISSING", text: ["x5t#S256", "send the QSealC"] });
    expect(env.backend.requests).toHaveLength(0);
    expect(directory!.requests).toEqual([]);
  });

  it("verifies once the same certificate came in x5c and was trusted", async () => {
    expect((await jades(env.gw, env.gw.pki.tppA.qseal, "x5c")).status).toBe(200);
    const r = await jades(env.gw, env.gw.pki.tppA.qseal, "x5t#S256");
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests.at(-1)!.headers["x-tpp-organization-id"]).toBe(ORG);
  });

  it("verifies a certificate kept in keys.files from the first request on", async () => {
    const r = await jades(env.gw, env.gw.pki.tppB.qseal, "x5t#S256");
    expect(r.status, r.text).toBe(200);
    expect(env.backend.requests.at(-1)!.headers["x-tpp-organization-id"]).toBe(
      env.gw.pki.tppB.organizationId,
    );
  });
});

describe("UK OB naming its key by kid only", () => {
  it("verifies through the TPP's JWKS, fetched from the directory once and counted", async () => {
    const before = await fetches("fetched");
    const first = await ukObByKid(env.gw, "key-1");
    expect(first.status, first.text).toBe(200);
    expect((await ukObByKid(env.gw, "key-1")).status).toBe(200);
    expect(env.backend.requests).toHaveLength(2);
    expect(directory!.requests).toEqual([JWKS_PATH]);
    expect(await fetches("fetched")).toBe(before + 1);
  });

  it("refuses a kid whose directory is down, the fetch counted as failed", async () => {
    const down = `/${ORG}/software-down.jwks`;
    directory!.behave("down", down);
    const before = await fetches("failed");
    const r = await ukObByKid(env.gw, "key-1", { [UKOB_ISS]: `${ORG}/software-down` });
    expectRejected(r, { status: 400, code: "CERTIFICATE_MISSING", text: ["could not be read"] });
    expect(env.backend.requests).toHaveLength(0);
    expect(directory!.requests).toEqual([down]);
    expect(await fetches("failed")).toBe(before + 1);
  });

  it("refuses a kid the directory does not list, saying what to send", async () => {
    const r = await ukObByKid(env.gw, "key-unknown");
    expectRejected(r, {
      status: 400,
      code: "CERTIFICATE_MISSING",
      text: [
        "kid 'key-unknown'",
        "does not list that kid",
        "send the QSealC (base64 DER) first in x5c, or a kid",
      ],
    });
    expect(env.backend.requests).toHaveLength(0);
  });

  it("refuses an x5t#S256 that is not the certificate the kid names", async () => {
    const r = await ukObByKid(env.gw, "key-1", { "x5t#S256": thumbprintOf(env.gw.pki.bankQseal.der) });
    expectRejected(r, { status: 400, code: "CERTIFICATE_INVALID", text: ["'x5t#S256'", "kid 'key-1'"] });
    expect(env.backend.requests).toHaveLength(0);
  });
});

// Last: it changes the running configuration.
describe("a configuration reload of keys", () => {
  it("builds a new resolver: a certificate taken out of keys.files is refused, and what the old one saw is dropped", async () => {
    // TPP A's certificate came in x5c above, TPP B's is in keys.files: both verify by x5t#S256.
    expect((await jades(env.gw, env.gw.pki.tppA.qseal, "x5t#S256")).status).toBe(200);
    expect((await jades(env.gw, env.gw.pki.tppB.qseal, "x5t#S256")).status).toBe(200);
    const { config } = env.gw;
    const needsRestart = await env.gw.gateway.reconfigure({ ...config, keys: { ...config.keys, files: [] } });
    expect(needsRestart).toEqual([]);
    const b = await jades(env.gw, env.gw.pki.tppB.qseal, "x5t#S256");
    expectRejected(b, { status: 400, code: "CERTIFICATE_MISSING", text: ["x5t#S256", "send the QSealC"] });
    const a = await jades(env.gw, env.gw.pki.tppA.qseal, "x5t#S256");
    expectRejected(a, { status: 400, code: "CERTIFICATE_MISSING", text: ["x5t#S256"] });
    await env.gw.gateway.reconfigure(config);
    expect((await jades(env.gw, env.gw.pki.tppB.qseal, "x5t#S256")).status).toBe(200);
  });
});
