/**
 * `npx tsx bench/signature.bench.ts [--write]`: the signature library's operations one by one,
 * in one process, against the bare node:crypto calls they wrap (the 2026-11-22 anchor measurements:
 * about 25 µs per RSA-2048 verify, 31.6 µs for a naive whole path with a cached certificate).
 *
 * Material: the adorsys QSealC from the interop corpus (test/fixtures/interop) and its RSA-2048
 * private key, so that the TPP-Signature-Certificate header has a real size and the issuer a real
 * DN. The request is a Berlin Group POST with about 2.9 KB of headers, 6 of them signed, and a
 * 1 KiB body.
 *
 * Harness (bench/micro.ts): each case warms up, then runs for BENCH_SECONDS (default 1) per round;
 * rounds are interleaved across cases (3 by default, BENCH_ROUNDS) and the median is reported.
 * `--write` replaces this script's section of bench/RESULTS.md.
 */

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  constants as cryptoConstants,
  sign as cryptoSign,
  verify as cryptoVerify,
  generateKeyPairSync,
  type KeyObject,
} from "node:crypto";
import { flattenedVerify as joseFlattenedVerify } from "jose";
import { parseCertificate } from "../src/eidas/index.js";
import { isRejection } from "../src/errors.js";
import {
  buildSigningString,
  checkDate,
  DigestVerifier,
  type KeyIdTarget,
  matchKeyId,
  parseDigestHeader,
  parseSignatureHeader,
  RequestSigner,
  resolveAlgorithm,
  verifyRequestSignature,
  verifySigningString,
} from "../src/signature/index.js";
import {
  buildHttpHeadersPayload,
  readJadesHeader,
  readUkObHeader,
  signJades,
  signUkOb,
  verifyJades,
  verifyUkOb,
} from "../src/signature/jws/index.js";
import * as rfc9421 from "../src/signature/rfc9421/index.js";
import { readInteropText } from "../test/helpers/interop-corpus.js";
import { loadCertificate } from "../test/helpers/tpp-certificate.js";
import { devVerifiers } from "./dev-verifier.js";
import {
  type Case,
  formatMicros,
  formatOps,
  ROUNDS,
  runAll,
  SECONDS,
  sinkValue,
  WARMUP_SECONDS,
} from "./micro.js";
import { machineLine, replaceSection } from "./results-file.js";

const SECTION = "Signature library (bench/signature.bench.ts)";

// ---------------------------------------------------------------------------------------------
// Material

function fail(text: string): never {
  throw new Error(text);
}

const certificatePem = readInteropText("certs/ext-adorsys-qsealc-lf-issuer.pem");
const certificate = loadCertificate(certificatePem);
const privateKey = createPrivateKey(readInteropText("certs/ext-adorsys-qsealc-lf-issuer.key.pem"));
const publicKey = createPublicKey(certificatePem);
const CLOCK = Date.UTC(2026, 10, 22, 12, 0, 0);

function jsonBodyOf(bytes: number): Buffer {
  const head =
    '{"instructedAmount":{"currency":"EUR","amount":"123.50"},"creditorName":"Laura Musterfrau","remittanceInformationUnstructured":"';
  return Buffer.from(`${head}${"x".repeat(bytes - head.length - 2)}"}`, "utf8");
}
const body1k = jsonBodyOf(1024);
const body64k = jsonBodyOf(64 * 1024);

const signer = new RequestSigner({ privateKey, certificate: certificate.der, clock: () => CLOCK });
const unsignedHeaders = {
  host: "api.bank.example",
  "user-agent": "tpp-client/2.4.1 (+https://tpp.example)",
  accept: "application/json",
  "content-type": "application/json",
  "content-length": String(body1k.length),
  "psu-id": "PSU-1234-5678",
  "psu-ip-address": "192.0.2.17",
  "tpp-redirect-uri": "https://tpp.example/redirect?state=7f3d2c1b-aa12-4bd2-9e4f-5c6d7e8f9a0b",
  "tpp-nok-redirect-uri": "https://tpp.example/redirect/failed?state=7f3d2c1b-aa12-4bd2-9e4f-5c6d7e8f9a0b",
  "psu-user-agent":
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
  "psu-accept-language": "nb-NO,nb;q=0.9,en;q=0.8",
  "psu-geo-location": "GEO:59.9139;10.7522",
  "accept-encoding": "gzip, deflate, br",
};
const added = await signer.sign({
  method: "POST",
  target: "/v1/payments/sepa-credit-transfers",
  headers: unsignedHeaders,
  body: body1k,
});
const headers: Record<string, string> = { ...unsignedHeaders };
for (const [name, value] of Object.entries(added)) headers[name.toLowerCase()] = value;
const request = { method: "POST", target: "/v1/payments/sepa-credit-transfers", headers };
const headerBytes = Object.entries(headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);

const params = parseSignatureHeader(headers.signature);
if (!("keyId" in params)) fail(`setup: ${params.text}`);
const signingString = buildSigningString(params.headers, request, params);
if (typeof signingString !== "string") fail(`setup: ${signingString.text}`);
const algorithm = resolveAlgorithm(params.algorithm, publicKey);
if (!("name" in algorithm)) fail(`setup: ${algorithm.text}`);
const signingBytes = Buffer.from(signingString, "utf8");
const digest1k = parseDigestHeader(headers.digest);
const digest64kHeader = `SHA-256=${createHash("sha256").update(body64k).digest("base64")}`;
const digest64k = parseDigestHeader(digest64kHeader);
if (!Array.isArray(digest1k) || !Array.isArray(digest64k)) fail("setup: digest");
/** The adorsys spelling of this issuer's keyId: %20 for spaces, the line feed dropped. */
const variantKeyId =
  "SN=7ceaf114,CA=OU=Information%20Technology,O=Trust%20Service%20Provider%20AG,L=Nuremberg,ST=BAVARIA,C=DE";

// Everything must pass once before it is timed.
const checks: [string, unknown][] = [
  ["verifySigningString", verifySigningString(algorithm, signingString, params.signatureBytes, publicKey)],
  ["crypto.verify", cryptoVerify("sha256", signingBytes, publicKey, params.signatureBytes)],
  ["keyId (own spelling)", matchKeyId(params.keyId, certificate.keyIdTarget)],
  ["keyId (adorsys spelling)", matchKeyId(variantKeyId, certificate.keyIdTarget)],
  ["verifyRequestSignature", passed(verifyRequest())],
  ["whole path", wholePath()],
];
for (const [what, result] of checks)
  if (result !== true) fail(`setup: ${what} gave ${JSON.stringify(result)}`);
if (signingString.split("\n").length !== 6)
  fail(`setup: expected 6 signed headers, got '${params.headers.join(" ")}'`);

function passed(result: object): true | object {
  return "keyId" in result ? true : result;
}

function verifyRequest() {
  return verifyRequestSignature(request, { publicKey, keyIdTarget: certificate.keyIdTarget });
}

function digestOf(values: typeof digest1k, body: Buffer): true | unknown {
  if (!Array.isArray(values)) return values;
  const verifier = new DigestVerifier(values);
  verifier.update(body);
  return verifier.finish();
}

/** What the anchor's "whole verification path with a cached certificate" covers: Digest, Date, parse, keyId, signing string, verify. */
function wholePath(): true | unknown {
  const values = parseDigestHeader(headers.digest);
  const digestOk = digestOf(values, body1k);
  if (digestOk !== true) return digestOk;
  const date = checkDate(headers.date, CLOCK);
  if (typeof date !== "number") return date;
  return passed(verifyRequest());
}

/** A fresh target object per call defeats matchKeyId's per-certificate memo: this is the first-sight cost. */
function freshTarget(): KeyIdTarget {
  return { serial: certificate.keyIdTarget.serial, issuer: certificate.keyIdTarget.issuer };
}

// ---------------------------------------------------------------------------------------------
// Cases

const BARE_VERIFY = "bare `crypto.verify` RSA-2048/SHA-256, KeyObject cached (baseline)";
const VERIFY_REQUEST = "`verifyRequestSignature` (parse, keyId, coverage, signing string, verify)";
const WHOLE_PATH = "whole path: Digest of 1 KiB + Date + `verifyRequestSignature`";

// Certificate verdicts (issue 3): the development PKI, a verifier as the gateway builds it.
const { pki, verifierWith } = await devVerifiers("psd2-bench-pki-");
const cachedVerifier = verifierWith(60_000);
// A TTL of 0 stores nothing: every call decodes, parses, builds the chain, checks the CRL and the register.
const uncachedVerifier = verifierWith(0);
const qsealHeader = pki.tppA.qseal.headerValue;
if (isRejection(cachedVerifier.verify(qsealHeader))) fail("the demo QSealC is not trusted");

const cases: Case[] = [
  {
    name: "Signature header parse (`parseSignatureHeader`)",
    run: () => parseSignatureHeader(headers.signature),
  },
  {
    name: "signing string, 6 headers (`buildSigningString`)",
    run: () => buildSigningString(params.headers, request, params),
  },
  { name: BARE_VERIFY, run: () => cryptoVerify("sha256", signingBytes, publicKey, params.signatureBytes) },
  {
    name: "RSA-2048 verify (`verifySigningString`, KeyObject cached)",
    run: () => verifySigningString(algorithm, signingString, params.signatureBytes, publicKey),
  },
  {
    name: "bare `crypto.sign` RSA-2048/SHA-256, synchronous (baseline)",
    run: () => cryptoSign("sha256", signingBytes, privateKey),
  },
  {
    name: "RSA-2048 sign (`RequestSigner.sign`, async, awaited one at a time)",
    run: () =>
      signer.sign({ method: "POST", target: request.target, headers: unsignedHeaders, body: body1k }),
    async: true,
  },
  { name: "Digest of 1 KiB (`DigestVerifier`)", run: () => digestOf(digest1k, body1k) },
  { name: "Date header check (`checkDate`)", run: () => checkDate(headers.date, CLOCK) },
  { name: "Digest of 64 KiB (`DigestVerifier`)", run: () => digestOf(digest64k, body64k) },
  {
    name: "keyId match, sender's spelling = ours (memoised)",
    run: () => matchKeyId(params.keyId, certificate.keyIdTarget),
  },
  {
    name: "keyId match, adorsys spelling, first sight (DN parse)",
    run: () => matchKeyId(variantKeyId, freshTarget()),
  },
  {
    name: "certificate verdict, cache hit (`TppVerifier.verify`)",
    run: () => cachedVerifier.verify(qsealHeader),
  },
  {
    name: "certificate verdict, cache miss (decode, parse, chain, CRL, register)",
    run: () => uncachedVerifier.verify(qsealHeader),
  },
  { name: "certificate parse only (`parseCertificate`)", run: () => parseCertificate(pki.tppA.qseal.der) },
  { name: VERIFY_REQUEST, run: verifyRequest },
  { name: WHOLE_PATH, run: wholePath },
];

// ---------------------------------------------------------------------------------------------
// RFC 9421 (src/signature/rfc9421): a FAPI 2.0 request with the same headers and body, signed with
// the same RSA-2048 key (rsa-v1_5-sha256, so that the baseline is the same RSA verify) and with an
// EC P-256 key, covering @method, @target-uri, authorization, content-digest and four Berlin Group
// headers. Its own section of bench/RESULTS.md; nothing above depends on it.

const rfc9421Clock = CLOCK;
const rfc9421KeyId: string = params.keyId;
const rfc9421Ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const rfc9421Headers: Record<string, string> = {
  ...unsignedHeaders,
  authorization: "Bearer eyJhbGciOiJQUzI1NiJ9.eyJzdWIiOiJ0cHAifQ.c2lnbmF0dXJl",
  "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
  "tpp-signature-certificate": headers["tpp-signature-certificate"] ?? fail("setup: certificate header"),
  "content-digest": rfc9421.computeContentDigest(body1k, "sha-256"),
};
const RFC9421_BG = ["x-request-id", "psu-id", "tpp-signature-certificate"];
function rfc9421Signed(key: KeyObject, alg: rfc9421.Rfc9421Algorithm): rfc9421.RequestMessage {
  const message = {
    method: "POST",
    targetUri: "https://api.bank.example/v1/payments/sepa-credit-transfers",
    headers: rfc9421Headers,
  };
  const signed = rfc9421.signFapiRequest(message, {
    privateKey: key,
    keyid: rfc9421KeyId,
    alg,
    now: rfc9421Clock,
    coverAlways: RFC9421_BG,
  });
  if (isRejection(signed)) fail(`setup: ${signed.text}`);
  return {
    ...message,
    headers: { ...rfc9421Headers, "signature-input": signed.signatureInput, signature: signed.signature },
  };
}
const rfc9421Rsa = rfc9421Signed(privateKey, "rsa-v1_5-sha256");
const rfc9421EcRequest = rfc9421Signed(rfc9421Ec.privateKey, "ecdsa-p256-sha256");
const rfc9421Options = (key: KeyObject): rfc9421.FapiVerifyOptions => ({
  publicKey: key,
  now: rfc9421Clock,
  coverAlways: RFC9421_BG,
  algorithms: rfc9421.RFC9421_ALGORITHMS,
});
const rfc9421RsaOptions = rfc9421Options(publicKey);
const rfc9421EcOptions = rfc9421Options(rfc9421Ec.publicKey);
function rfc9421Parts(request: rfc9421.RequestMessage) {
  const all = rfc9421.parseSignatures(request.headers["signature-input"], request.headers.signature);
  if (isRejection(all)) fail(`setup: ${all.text}`);
  const base = rfc9421.signatureBase(all[0]!.components, all[0]!.serializedParams, request);
  if (isRejection(base)) fail(`setup: ${base.text}`);
  return { signature: all[0]!, base, bytes: Buffer.from(base, "latin1") };
}
const rfc9421RsaParts = rfc9421Parts(rfc9421Rsa);
const rfc9421EcParts = rfc9421Parts(rfc9421EcRequest);
const rfc9421Digest = rfc9421.parseContentDigest(rfc9421Headers["content-digest"]);
if (isRejection(rfc9421Digest)) fail("setup: content-digest");
function rfc9421DigestOf(body: Buffer): true | unknown {
  const verifier = new rfc9421.ContentDigestVerifier(rfc9421Digest as rfc9421.ContentDigestValue[]);
  verifier.update(body);
  return verifier.finish();
}
for (const [what, result] of [
  ["rfc9421 RSA", rfc9421.verifyFapiRequest(rfc9421Rsa, rfc9421RsaOptions)],
  ["rfc9421 EC", rfc9421.verifyFapiRequest(rfc9421EcRequest, rfc9421EcOptions)],
  ["rfc9421 digest", rfc9421DigestOf(body1k)],
] as const)
  if (isRejection(result)) fail(`setup: ${what} gave ${result.text}`);

const RFC9421_BARE_RSA = "RFC 9421: bare `crypto.verify` RSA-2048/SHA-256 over the FAPI base (baseline)";
const RFC9421_VERIFY_RSA =
  "RFC 9421: `verifyFapiRequest` RSA-2048 rsa-v1_5-sha256 (parse, select, FAPI checks, base, verify)";
const RFC9421_BARE_EC = "RFC 9421: bare `crypto.verify` ECDSA P-256 over the FAPI base (baseline)";
const RFC9421_VERIFY_EC = "RFC 9421: `verifyFapiRequest` ecdsa-p256-sha256";
const rfc9421Cases: Case[] = [
  {
    name: "RFC 9421: Signature-Input + Signature parse (`parseSignatures`)",
    run: () => rfc9421.parseSignatures(rfc9421Rsa.headers["signature-input"], rfc9421Rsa.headers.signature),
  },
  {
    name: `RFC 9421: signature base, ${rfc9421RsaParts.signature.components.length} components (\`signatureBase\`)`,
    run: () =>
      rfc9421.signatureBase(
        rfc9421RsaParts.signature.components,
        rfc9421RsaParts.signature.serializedParams,
        rfc9421Rsa,
      ),
  },
  {
    name: RFC9421_BARE_RSA,
    run: () => cryptoVerify("sha256", rfc9421RsaParts.bytes, publicKey, rfc9421RsaParts.signature.signature),
  },
  { name: RFC9421_VERIFY_RSA, run: () => rfc9421.verifyFapiRequest(rfc9421Rsa, rfc9421RsaOptions) },
  {
    name: RFC9421_BARE_EC,
    run: () =>
      cryptoVerify(
        "sha256",
        rfc9421EcParts.bytes,
        { key: rfc9421Ec.publicKey, dsaEncoding: "ieee-p1363" },
        rfc9421EcParts.signature.signature,
      ),
  },
  { name: RFC9421_VERIFY_EC, run: () => rfc9421.verifyFapiRequest(rfc9421EcRequest, rfc9421EcOptions) },
  { name: "RFC 9421: Content-Digest of 1 KiB (`ContentDigestVerifier`)", run: () => rfc9421DigestOf(body1k) },
];
cases.push(...rfc9421Cases);
// JWS dialects (src/signature/jws): JAdES HttpHeaders and UK OB `x-jws-signature`, native
// node:crypto against the same checks with `jose` (panva) doing the JOSE verify. Added as one
// block: its cases join the table above; its ratios print after the report (not written to
// RESULTS.md by --write).

const JWS_NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const jwsPars = ["(request-target)", "x-request-id", "digest", "date", "psu-id", "psu-ip-address"];
const jadesValue = signJades({
  key: privateKey,
  certificateChain: [certificate.der],
  alg: "RS256",
  pars: jwsPars,
  sigT: JWS_NOW,
  message: request,
});
const jadesRead = readJadesHeader(jadesValue, { now: JWS_NOW });
if (isRejection(jadesRead)) fail(`setup: JAdES ${jadesRead.text}`);
const jadesPayload = buildHttpHeadersPayload(jwsPars, request);
if (isRejection(jadesPayload)) fail(`setup: JAdES payload ${jadesPayload.text}`);
const jadesInput = Buffer.from(`${jadesRead.jws.protectedB64}.${jadesPayload.toString("latin1")}`, "latin1");
const ukobValue = signUkOb({
  key: privateKey,
  kid: "bench-kid",
  iss: "0015800001041REAAY/bench",
  tan: "openbanking.org.uk",
  iat: JWS_NOW / 1000,
  body: body1k,
});
const ukobRead = readUkObHeader(ukobValue, { now: JWS_NOW });
if (isRejection(ukobRead)) fail(`setup: UK OB ${ukobRead.text}`);
const ukobInput = Buffer.from(`${ukobRead.jws.protectedB64}.${body1k.toString("base64url")}`, "latin1");
const PSS = { key: publicKey, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: 32 };
const JOSE_CRIT = { crit: { sigT: true, sigD: true }, algorithms: ["RS256"] };
const JOSE_UKOB = {
  crit: {
    "http://openbanking.org.uk/iat": true,
    "http://openbanking.org.uk/iss": true,
    "http://openbanking.org.uk/tan": true,
  },
  algorithms: ["PS256"],
};

/** Native: the whole JAdES verify with the caller's cached key (what the gateway will run). */
function jadesNative(): unknown {
  const r = verifyJades(jadesValue, request, { now: JWS_NOW, publicKey });
  return isRejection(r) ? r : true;
}

/** The same checks (strict header, payload) with jose's flattenedVerify doing the JOSE verify. */
async function jadesJose(): Promise<unknown> {
  const read = readJadesHeader(jadesValue, { now: JWS_NOW });
  if (isRejection(read)) return read;
  const payload = buildHttpHeadersPayload(read.header.pars, request);
  if (isRejection(payload)) return payload;
  const [p, , s] = jadesValue.split(".") as [string, string, string];
  await joseFlattenedVerify({ protected: p, payload, signature: s }, publicKey, JOSE_CRIT);
  return true;
}

function ukobNative(): unknown {
  const r = verifyUkOb(ukobValue, body1k, { now: JWS_NOW, publicKey });
  return isRejection(r) ? r : true;
}

async function ukobJose(): Promise<unknown> {
  const read = readUkObHeader(ukobValue, { now: JWS_NOW });
  if (isRejection(read)) return read;
  const [p, , s] = ukobValue.split(".") as [string, string, string];
  // jose takes an encoded payload as its base64url text (the attached form).
  await joseFlattenedVerify(
    { protected: p, payload: body1k.toString("base64url"), signature: s },
    publicKey,
    JOSE_UKOB,
  );
  return true;
}

for (const [what, result] of [
  ["JAdES native", jadesNative()],
  ["JAdES jose", await jadesJose()],
  ["UK OB native", ukobNative()],
  ["UK OB jose", await ukobJose()],
  ["JAdES bare verify", cryptoVerify("sha256", jadesInput, publicKey, jadesRead.jws.signature)],
  ["UK OB bare verify", cryptoVerify("sha256", ukobInput, PSS, ukobRead.jws.signature)],
] as const)
  if (result !== true) fail(`setup: ${what} gave ${JSON.stringify(result)}`);

const JADES_BARE = "JWS: bare `crypto.verify` RS256 over the JAdES signing input (baseline)";
const JADES_NATIVE = "JWS: `verifyJades` RS256, 6 pars, cached key (native)";
const JADES_X5C = "JWS: `verifyJades` RS256, key from x5c[0] (memoised)";
const JADES_JOSE = "JWS: JAdES checks + `jose` flattenedVerify (async, one at a time)";
const UKOB_BARE = "JWS: bare `crypto.verify` PS256 over the UK OB signing input, 1 KiB body (baseline)";
const UKOB_NATIVE = "JWS: `verifyUkOb` PS256, 1 KiB body (native)";
const UKOB_JOSE = "JWS: UK OB checks + `jose` flattenedVerify (async, one at a time)";
const JADES_READ = "JWS: `readJadesHeader` only (compact, strict JSON, header rules, x5c)";
cases.push(
  { name: JADES_BARE, run: () => cryptoVerify("sha256", jadesInput, publicKey, jadesRead.jws.signature) },
  { name: JADES_NATIVE, run: jadesNative },
  { name: JADES_X5C, run: () => verifyJades(jadesValue, request, { now: JWS_NOW }) },
  { name: JADES_JOSE, run: jadesJose, async: true },
  { name: JADES_READ, run: () => readJadesHeader(jadesValue, { now: JWS_NOW }) },
  { name: UKOB_BARE, run: () => cryptoVerify("sha256", ukobInput, PSS, ukobRead.jws.signature) },
  { name: UKOB_NATIVE, run: ukobNative },
  { name: UKOB_JOSE, run: ukobJose, async: true },
);

// End of the JWS dialects block (its report follows the main report below).

// ---------------------------------------------------------------------------------------------
// Report

const measured = await runAll(cases);
const results = new Map([...measured].map(([name, m]) => [name, m.opsPerSecond]));
const microsOf = (name: string) => 1e6 / (results.get(name) ?? Number.NaN);
const rows = cases.map(
  (c) => `| ${c.name} | ${formatOps(results.get(c.name)!)} | ${formatMicros(results.get(c.name)!)} |`,
);
const bare = microsOf(BARE_VERIFY);

const report = [
  `${machineLine()}. ${SECONDS} s per case and round after ${WARMUP_SECONDS} s of warm-up, ${ROUNDS} interleaved round(s), medians, one process. Certificate: the adorsys QSealC of the interop corpus (RSA-2048, ${certificate.der.length} bytes DER); the request carries ${headerBytes} bytes of headers, signs \`${params.headers.join(" ")}\`, and has a ${body1k.length}-byte body. Run with \`npx tsx bench/signature.bench.ts --write\`.`,
  "",
  "| operation | ops/s | µs/op |",
  "|---|---:|---:|",
  ...rows,
  "",
  "| ratio, same run | value | anchor (2026-11-22) |",
  "|---|---:|---:|",
  `| \`verifyRequestSignature\` ÷ bare \`crypto.verify\` | ${(microsOf(VERIFY_REQUEST) / bare).toFixed(2)} | – |`,
  `| whole path ÷ bare \`crypto.verify\` | ${(microsOf(WHOLE_PATH) / bare).toFixed(2)} | 31.6 µs ÷ 25 µs = 1.26 |`,
  `| whole path − bare \`crypto.verify\` (µs) | ${(microsOf(WHOLE_PATH) - bare).toFixed(1)} | 6.6 |`,
].join("\n");

console.log(report);

// ---------------------------------------------------------------------------------------------
// JWS dialects' ratios (the block above): printed only.
{
  const cavageOverhead = microsOf(VERIFY_REQUEST) - bare;
  const line = (name: string, baseline: string) => {
    const us = microsOf(name);
    const base = microsOf(baseline);
    return `| ${name} | ${us.toFixed(1)} | ${(us / base).toFixed(2)} | ${(us / (base + cavageOverhead)).toFixed(2)} |`;
  };
  console.log(
    [
      "",
      `JWS dialects: the draft-cavage path's own overhead (\`verifyRequestSignature\` − bare) is ${cavageOverhead.toFixed(1)} µs.`,
      "",
      "| case | µs/op | ÷ its bare verify | ÷ (bare + cavage overhead) |",
      "|---|---:|---:|---:|",
      line(JADES_NATIVE, JADES_BARE),
      line(JADES_X5C, JADES_BARE),
      line(JADES_JOSE, JADES_BARE),
      line(UKOB_NATIVE, UKOB_BARE),
      line(UKOB_JOSE, UKOB_BARE),
    ].join("\n"),
  );
}
// End of the JWS dialects' ratios.
if (sinkValue() === 0x7fffffff) console.log("(sink)");
if (process.argv.includes("--write")) {
  replaceSection(SECTION, report);
  console.log(`\nwrote the section '${SECTION}' of bench/RESULTS.md`);
}

// ---------------------------------------------------------------------------------------------
// RFC 9421: its own section of bench/RESULTS.md.

const RFC9421_SECTION = "RFC 9421 signatures (bench/signature.bench.ts)";
const rfc9421Rows = rfc9421Cases.map(
  (c) => `| ${c.name} | ${formatOps(results.get(c.name)!)} | ${formatMicros(results.get(c.name)!)} |`,
);
const rfc9421Report = [
  `${machineLine()}. Same run and harness as the section above. The request: ${headerBytes} bytes of headers plus Signature-Input, Signature and Content-Digest, a ${body1k.length}-byte body; the signature covers \`${rfc9421RsaParts.signature.components.map((c) => c.name).join(" ")}\`; keyid the Berlin Group \`SN=…,CA=…\`.`,
  "",
  "| operation | ops/s | µs/op |",
  "|---|---:|---:|",
  ...rfc9421Rows,
  "",
  "| overhead, same run | ratio | µs |",
  "|---|---:|---:|",
  `| RSA: \`verifyFapiRequest\` ÷ / − bare \`crypto.verify\` | ${(microsOf(RFC9421_VERIFY_RSA) / microsOf(RFC9421_BARE_RSA)).toFixed(2)} | ${(microsOf(RFC9421_VERIFY_RSA) - microsOf(RFC9421_BARE_RSA)).toFixed(1)} |`,
  `| EC P-256: \`verifyFapiRequest\` ÷ / − bare \`crypto.verify\` | ${(microsOf(RFC9421_VERIFY_EC) / microsOf(RFC9421_BARE_EC)).toFixed(2)} | ${(microsOf(RFC9421_VERIFY_EC) - microsOf(RFC9421_BARE_EC)).toFixed(1)} |`,
].join("\n");
console.log(`\n${rfc9421Report}`);
if (process.argv.includes("--write")) replaceSection(RFC9421_SECTION, rfc9421Report);
