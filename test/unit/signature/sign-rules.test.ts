/**
 * RequestSigner's signing rules (the knobs a bank profile sets): for each value, a GET without a
 * body and a POST with a JSON body, both carrying PSU-ID and TPP-Redirect-URI, are signed; the
 * headers must show the knob, `headers=` must be the configured order filtered to the headers
 * present, and the signature must verify twice: with our verifyRequestSignature (key and keyId
 * target read back from the certificate header as sent) and with joyent's http-signature 1.4.
 */

import { isUtf8 } from "node:buffer";
import { createHash, X509Certificate } from "node:crypto";
import httpSignature from "http-signature";
import { beforeAll, describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import {
  type AlgorithmName,
  CERTIFICATE_HEADER_NAME,
  type CertificateHeaderFormat,
  ELIGIBLE_HEADERS,
  parseSignatureHeader,
  RequestSigner,
  type RequestToSign,
  type SignatureParams,
  type SignedHeaders,
  type SignerOptions,
  verifyDigest,
  verifyRequestSignature,
} from "../../../src/signature/index.js";
import { named } from "../../helpers/named-rows.js";
import { type ThrowawayTpp, throwawayTpp } from "../../helpers/throwaway-tpp.js";
import { type LoadedCertificate, loadCertificate } from "../../helpers/tpp-certificate.js";

/** Spaces in the issuer (for `%20`), several RDNs (for `, `), letters in the serial (for lower-hex). */
const SUBJECT = "CN=Rule Test TPP,O=Signing Rules AS,C=NO";
const SERIAL_HEX = "7a3bc0de15";
const NON_ASCII_PSU_ID = "Åse Ødegård";

/** What OpenSSL (node:crypto) says about the certificate: the oracle for keyId spellings. */
interface CertificateFacts {
  readonly tpp: ThrowawayTpp;
  /** Upper-case hex, as OpenSSL prints it. */
  readonly serial: string;
  /** The issuer's RDNs in RFC 2253 order (OpenSSL lists them in DER order). */
  readonly issuer: readonly string[];
}

let cert: CertificateFacts;

beforeAll(async () => {
  const tpp = await throwawayTpp({ subject: SUBJECT, serialHex: SERIAL_HEX });
  const openssl = new X509Certificate(tpp.certificateDer);
  cert = { tpp, serial: openssl.serialNumber, issuer: openssl.issuer.split("\n").reverse() };
});

const BODY = JSON.stringify({
  instructedAmount: { currency: "NOK", amount: "123.50" },
  creditorName: "Blåbær AS",
});

interface Sample {
  readonly name: string;
  readonly request: (psuId: string) => RequestToSign;
}

const SAMPLES: readonly Sample[] = [
  {
    name: "GET without body",
    request: (psuId) => ({
      method: "GET",
      target: "/v1/accounts?withBalance=true",
      headers: {
        Accept: "application/json",
        "PSU-ID": psuId,
        "TPP-Redirect-URI": "https://tpp.example/cb?state=a%20b",
      },
    }),
  },
  {
    name: "POST with JSON body",
    request: (psuId) => ({
      method: "POST",
      target: "/v1/payments/sepa-credit-transfers",
      headers: {
        "Content-Type": "application/json",
        "PSU-ID": psuId,
        "TPP-Redirect-URI": "https://tpp.example/cb?state=a%20b",
      },
      body: BODY,
    }),
  },
];

type Knobs = Omit<SignerOptions, "privateKey" | "certificate">;

interface Seen {
  readonly out: SignedHeaders;
  readonly params: SignatureParams;
  readonly request: RequestToSign;
  readonly hasBody: boolean;
}

interface Knob {
  readonly name: string;
  readonly options: Knobs;
  /** The PSU-ID the requests carry; default ASCII. */
  readonly psuId?: string;
  /** How the knob shows in the signed headers. */
  readonly shows: (seen: Seen) => void;
  /** Options for our verifier beyond key and keyId target. */
  readonly ours?: {
    readonly algorithms?: readonly AlgorithmName[];
    readonly allowDecimalSerial?: boolean;
    /** Set where the knob deliberately leaves an eligible header unsigned. */
    readonly eligibleHeaders?: readonly string[];
    /** A fixed keyId that does not name the certificate: judge without the keyId rule. */
    readonly noKeyIdTarget?: boolean;
  };
  /** Why joyent's http-signature cannot judge this row, and the error its parser throws. */
  readonly joyentCannot?: { readonly why: string; readonly throws?: RegExp };
}

const keyIdOf = (seen: Seen) => seen.params.keyId;
const sha = (algorithm: "sha256" | "sha512", body: string) =>
  createHash(algorithm).update(body).digest("base64");
const bodyOf = (seen: Seen) => (seen.hasBody ? BODY : "");
/** base64 of the DER, as the certificate header carries it under base64-der. */
const derBase64 = () => Buffer.from(cert.tpp.certificateDer).toString("base64");

function expectAsciiSignature(out: SignedHeaders): void {
  expect(out.Signature).toMatch(/^[\x20-\x7e]+$/);
  expect(out.Signature.startsWith("=?")).toBe(false);
}

const KNOBS: readonly Knob[] = [
  {
    name: "defaults (SPEC 5)",
    options: {},
    shows: (seen) => {
      expect(keyIdOf(seen)).toBe(`SN=${cert.serial},CA=${cert.issuer.join(",")}`);
      expect(seen.out.Signature).toContain('algorithm="rsa-sha256"');
      expect(seen.out.Digest).toBe(`SHA-256=${sha("sha256", bodyOf(seen))}`);
      expect(seen.out[CERTIFICATE_HEADER_NAME]).toBe(derBase64());
      expect(seen.params.headers).toEqual([
        "(request-target)",
        "date",
        "digest",
        "x-request-id",
        "psu-id",
        "tpp-redirect-uri",
      ]);
      expectAsciiSignature(seen.out);
    },
  },
  {
    name: "keyIdSpelling.serial upper-hex",
    options: { keyIdSpelling: { serial: "upper-hex" } },
    shows: (seen) => expect(keyIdOf(seen)).toBe(`SN=${cert.serial},CA=${cert.issuer.join(",")}`),
  },
  {
    name: "keyIdSpelling.serial lower-hex",
    options: { keyIdSpelling: { serial: "lower-hex" } },
    shows: (seen) => {
      expect(cert.serial).toMatch(/[A-F]/);
      expect(keyIdOf(seen)).toBe(`SN=${cert.serial.toLowerCase()},CA=${cert.issuer.join(",")}`);
    },
  },
  {
    name: "keyIdSpelling.serial decimal",
    options: { keyIdSpelling: { serial: "decimal" } },
    shows: (seen) =>
      expect(keyIdOf(seen)).toBe(`SN=${BigInt(`0x${cert.serial}`).toString(10)},CA=${cert.issuer.join(",")}`),
    ours: { allowDecimalSerial: true },
  },
  {
    name: "keyIdSpelling.issuerSeparator ','",
    options: { keyIdSpelling: { issuerSeparator: "," } },
    shows: (seen) => expect(keyIdOf(seen)).toBe(`SN=${cert.serial},CA=${cert.issuer.join(",")}`),
  },
  {
    name: "keyIdSpelling.issuerSeparator ', '",
    options: { keyIdSpelling: { issuerSeparator: ", " } },
    shows: (seen) => expect(keyIdOf(seen)).toBe(`SN=${cert.serial},CA=${cert.issuer.join(", ")}`),
  },
  {
    name: "keyIdSpelling.spaces keep",
    options: { keyIdSpelling: { spaces: "keep" } },
    shows: (seen) => {
      expect(keyIdOf(seen)).toBe(`SN=${cert.serial},CA=${cert.issuer.join(",")}`);
      expect(keyIdOf(seen)).toContain(" ");
    },
  },
  {
    name: "keyIdSpelling.spaces percent-20",
    options: { keyIdSpelling: { spaces: "percent-20" } },
    shows: (seen) => {
      expect(keyIdOf(seen)).toBe(`SN=${cert.serial},CA=${cert.issuer.join(",").replaceAll(" ", "%20")}`);
      expect(keyIdOf(seen)).not.toContain(" ");
    },
  },
  {
    name: "keyIdSpelling lower-hex + ', ' + percent-20",
    options: { keyIdSpelling: { serial: "lower-hex", issuerSeparator: ", ", spaces: "percent-20" } },
    shows: (seen) =>
      expect(keyIdOf(seen)).toBe(
        `SN=${cert.serial.toLowerCase()},CA=${cert.issuer.join(", ").replaceAll(" ", "%20")}`,
      ),
  },
  {
    name: "keyId fixed (beats keyIdSpelling)",
    options: { keyId: "qseal-2026-bank-a", keyIdSpelling: { serial: "lower-hex" } },
    shows: (seen) => expect(keyIdOf(seen)).toBe("qseal-2026-bank-a"),
    ours: { noKeyIdTarget: true },
  },
  {
    name: "algorithm rsa-sha512",
    options: { algorithm: "rsa-sha512" },
    shows: (seen) => expect(seen.out.Signature).toContain('algorithm="rsa-sha512"'),
    ours: { algorithms: ["rsa-sha512"] },
  },
  {
    name: "algorithmToken SHA256withRSA",
    options: { algorithmToken: "SHA256withRSA" },
    shows: (seen) => {
      expect(seen.out.Signature).toContain('algorithm="SHA256withRSA"');
      expect(seen.out.Signature).not.toContain("rsa-sha256");
    },
    // Our verifier reads Java's name as its canonical algorithm, rsa-sha256.
    ours: { algorithms: ["rsa-sha256"] },
    joyentCannot: {
      why: "http-signature only knows <key>-<hash> names (rsa-sha256); it refuses Java's SHA256withRSA",
      throws: /SHA256withRSA is not supported/,
    },
  },
  {
    name: "algorithmToken hs2019",
    options: { algorithmToken: "hs2019" },
    shows: (seen) => expect(seen.out.Signature).toContain('algorithm="hs2019"'),
    // hs2019 is "whatever the key says"; allowed next to the canonical rsa-sha256.
    ours: { algorithms: ["rsa-sha256", "hs2019"] },
    joyentCannot: {
      why: "http-signature 1.4 predates hs2019 (draft-cavage-12) and refuses the name",
      throws: /hs2019 is not supported/,
    },
  },
  {
    name: "headers: custom order",
    options: {
      headers: ["x-request-id", "(request-target)", "psu-id", "date", "digest", "tpp-redirect-uri"],
    },
    shows: (seen) =>
      expect(seen.params.headers).toEqual([
        "x-request-id",
        "(request-target)",
        "psu-id",
        "date",
        "digest",
        "tpp-redirect-uri",
      ]),
  },
  {
    name: "headers: mixed case, one absent (psu-corporate-id)",
    options: {
      headers: [
        "Date",
        "PSU-Corporate-ID",
        "(request-target)",
        "X-Request-ID",
        "Digest",
        "TPP-Redirect-URI",
        "PSU-ID",
      ],
    },
    shows: (seen) =>
      expect(seen.params.headers).toEqual([
        "date",
        "(request-target)",
        "x-request-id",
        "digest",
        "tpp-redirect-uri",
        "psu-id",
      ]),
  },
  {
    name: "headers: leaves psu-id, tpp-redirect-uri and digest unsigned",
    options: { headers: ["(request-target)", "date", "x-request-id"] },
    shows: (seen) => {
      expect(seen.params.headers).toEqual(["(request-target)", "date", "x-request-id"]);
      expect(seen.out.Digest).toBeDefined(); // still sent, just not signed
    },
    ours: { eligibleHeaders: [] },
  },
  {
    name: "headers: without (request-target)",
    options: { headers: ["date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"] },
    shows: (seen) => expect(seen.params.headers).not.toContain("(request-target)"),
  },
  {
    name: "signRequestTarget false",
    options: { signRequestTarget: false },
    shows: (seen) =>
      expect(seen.params.headers).toEqual(["date", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"]),
  },
  {
    name: "digestAlgorithm sha-512",
    options: { digestAlgorithm: "sha-512" },
    shows: (seen) => expect(seen.out.Digest).toBe(`SHA-512=${sha("sha512", bodyOf(seen))}`),
  },
  {
    name: "digestAlgorithms sha-256 + sha-512",
    options: { digestAlgorithms: ["sha-256", "sha-512"] },
    shows: (seen) =>
      expect(seen.out.Digest).toBe(
        `SHA-256=${sha("sha256", bodyOf(seen))},SHA-512=${sha("sha512", bodyOf(seen))}`,
      ),
  },
  {
    name: "digestAlgorithms sha-512 + sha-256 (order kept)",
    options: { digestAlgorithms: ["sha-512", "sha-256"] },
    shows: (seen) =>
      expect(seen.out.Digest).toBe(
        `SHA-512=${sha("sha512", bodyOf(seen))},SHA-256=${sha("sha256", bodyOf(seen))}`,
      ),
  },
  {
    name: "digestToken upper",
    options: { digestToken: "upper" },
    shows: (seen) => expect(seen.out.Digest).toBe(`SHA-256=${sha("sha256", bodyOf(seen))}`),
  },
  {
    name: "digestToken lower",
    options: { digestToken: "lower" },
    // Only the token: base64 is case-sensitive.
    shows: (seen) => expect(seen.out.Digest).toBe(`sha-256=${sha("sha256", bodyOf(seen))}`),
  },
  {
    name: "digestToken lower + both algorithms",
    options: { digestToken: "lower", digestAlgorithms: ["sha-256", "sha-512"] },
    shows: (seen) =>
      expect(seen.out.Digest).toBe(
        `sha-256=${sha("sha256", bodyOf(seen))},sha-512=${sha("sha512", bodyOf(seen))}`,
      ),
  },
  {
    name: "digestOnEmptyBody hash",
    options: { digestOnEmptyBody: "hash" },
    shows: (seen) => {
      expect(seen.out.Digest).toBe(`SHA-256=${sha("sha256", bodyOf(seen))}`);
      expect(seen.params.headers).toContain("digest");
    },
  },
  {
    name: "digestOnEmptyBody omit",
    options: { digestOnEmptyBody: "omit" },
    shows: (seen) => {
      if (seen.hasBody) {
        expect(seen.out.Digest).toBe(`SHA-256=${sha("sha256", BODY)}`);
        expect(seen.params.headers).toContain("digest");
      } else {
        expect("Digest" in seen.out).toBe(false);
        expect(seen.params.headers).not.toContain("digest");
      }
    },
  },
  {
    name: "certificateHeader.name only",
    options: { certificateHeader: { name: "X-QSeal-Certificate" } },
    shows: (seen) => {
      expect(seen.out["X-QSeal-Certificate"]).toBe(derBase64());
      expect(CERTIFICATE_HEADER_NAME in seen.out).toBe(false);
    },
  },
  {
    name: "certificateHeader.format base64-der",
    options: { certificateHeader: { format: "base64-der" } },
    shows: (seen) => {
      const value = seen.out[CERTIFICATE_HEADER_NAME]!;
      expect(Buffer.from(value, "base64").equals(Buffer.from(cert.tpp.certificateDer))).toBe(true);
    },
  },
  {
    name: "certificateHeader.format pem (one line)",
    options: { certificateHeader: { format: "pem" } },
    shows: (seen) =>
      expect(seen.out[CERTIFICATE_HEADER_NAME]).toBe(
        `-----BEGIN CERTIFICATE-----${derBase64()}-----END CERTIFICATE-----`,
      ),
  },
  {
    name: "certificateHeader.format base64-pem",
    options: { certificateHeader: { format: "base64-pem" } },
    shows: (seen) => {
      const pem = Buffer.from(seen.out[CERTIFICATE_HEADER_NAME]!, "base64").toString("utf8");
      expect(pem).toMatch(
        /^-----BEGIN CERTIFICATE-----\n(?:[A-Za-z0-9+/=]{1,64}\n)+-----END CERTIFICATE-----\n$/,
      );
      expect(Buffer.from(new X509Certificate(pem).raw).equals(Buffer.from(cert.tpp.certificateDer))).toBe(
        true,
      );
    },
  },
  {
    name: "certificateHeader name + pem",
    options: { certificateHeader: { name: "Signature-Certificate", format: "pem" } },
    shows: (seen) => {
      expect(seen.out["Signature-Certificate"]).toBe(
        `-----BEGIN CERTIFICATE-----${derBase64()}-----END CERTIFICATE-----`,
      );
      expect(CERTIFICATE_HEADER_NAME in seen.out).toBe(false);
    },
  },
  {
    name: "headerEncoding utf-8, non-ASCII PSU-ID",
    options: { headerEncoding: "utf-8" },
    psuId: NON_ASCII_PSU_ID,
    shows: (seen) => {
      // The wire form: the UTF-8 bytes, one char per byte.
      expect(seen.out["PSU-ID"]).toBe(Buffer.from(NON_ASCII_PSU_ID, "utf8").toString("latin1"));
      expect(seen.params.headers).toContain("psu-id");
      expectAsciiSignature(seen.out);
    },
  },
  {
    name: "headerEncoding latin1, non-ASCII PSU-ID",
    options: { headerEncoding: "latin1" },
    psuId: NON_ASCII_PSU_ID,
    shows: (seen) => {
      // One byte per char: the string is its own wire form.
      expect(seen.out["PSU-ID"]).toBe(NON_ASCII_PSU_ID);
      expect(seen.params.headers).toContain("psu-id");
      expectAsciiSignature(seen.out);
    },
    joyentCannot: {
      why: "http-signature hashes the signing string as UTF-8 text; a Latin-1 byte (0xC5) is no UTF-8, so no text it could be handed hashes to the bytes sent",
    },
  },
];

const CASES = KNOBS.flatMap((knob) =>
  SAMPLES.map((sample) => ({ name: `${knob.name} — ${sample.name}`, knob, sample })),
);

/** The headers as a server receives them: lower-case names, wire values (one char per byte). */
function received(request: RequestToSign, out: SignedHeaders): Record<string, string> {
  const map: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...request.headers, ...out })) {
    if (value !== undefined) map[name.toLowerCase()] = value;
  }
  return map;
}

/** The certificate as a bank reads it back from the header, in the header's format. */
function certificateFromHeader(value: string, format: CertificateHeaderFormat): LoadedCertificate {
  return loadCertificate(format === "base64-pem" ? Buffer.from(value, "base64").toString("utf8") : value);
}

function paramsOf(out: SignedHeaders): SignatureParams {
  const params = parseSignatureHeader(out.Signature);
  if (isRejection(params)) throw new Error(params.text);
  return params;
}

/**
 * joyent's fake IncomingMessage. It hashes the signing string as a JS string, i.e. as UTF-8, so a
 * value whose wire bytes are UTF-8 is handed over as that text (what a server decoding header
 * bytes as UTF-8 holds); ASCII is the same either way.
 */
function joyentRequest(request: RequestToSign, headers: Record<string, string>) {
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const bytes = Buffer.from(value, "latin1");
    text[name] = isUtf8(bytes) ? bytes.toString("utf8") : value;
  }
  return { method: request.method, url: request.target, httpVersion: "1.1", headers: text };
}

async function signAndJudge(_name: string, { knob, sample }: (typeof CASES)[number]): Promise<void> {
  const signer = new RequestSigner({
    privateKey: cert.tpp.privateKey,
    certificate: cert.tpp.certificateDer,
    ...knob.options,
  });
  const request = sample.request(knob.psuId ?? "PSU-1234");
  const out = await signer.sign(request);
  const params = paramsOf(out);
  const hasBody = request.body !== undefined;

  // (a) The knob shows in the output, and headers= is the configured order filtered to what is present.
  knob.shows({ out, params, request, hasBody });
  const headers = received(request, out);
  const order = (
    knob.options.headers ?? [
      ...(knob.options.signRequestTarget === false ? [] : ["(request-target)"]),
      ...ELIGIBLE_HEADERS,
    ]
  ).map((h) => h.toLowerCase());
  expect(params.headers).toEqual(order.filter((h) => h === "(request-target)" || headers[h] !== undefined));
  if (headers.digest !== undefined)
    expect(verifyDigest(headers.digest, Buffer.from(request.body ?? ""))).toBe(true);

  // (b1) Our verifier, with the key and keyId target read back from the certificate header as sent.
  const certificateHeaderName = (
    knob.options.certificateHeader?.name ?? CERTIFICATE_HEADER_NAME
  ).toLowerCase();
  const sent = certificateFromHeader(
    headers[certificateHeaderName]!,
    knob.options.certificateHeader?.format ?? "base64-der",
  );
  const ours = verifyRequestSignature(
    { method: request.method, target: request.target, headers },
    {
      publicKey: sent.publicKey,
      ...(knob.ours?.noKeyIdTarget ? {} : { keyIdTarget: sent.keyIdTarget }),
      algorithms: knob.ours?.algorithms ?? ["rsa-sha256"],
      ...(knob.ours?.allowDecimalSerial ? { allowDecimalSerial: true } : {}),
      ...(knob.ours?.eligibleHeaders ? { eligibleHeaders: knob.ours.eligibleHeaders } : {}),
    },
  );
  expect(isRejection(ours) ? ours.text : ours.headers).toEqual(params.headers);

  // (b2) joyent's http-signature, with the public key from the certificate.
  const theirs = joyentRequest(request, headers);
  if (knob.joyentCannot) {
    if (knob.joyentCannot.throws) {
      expect(() => httpSignature.parseRequest(theirs, { headers: [] })).toThrow(knob.joyentCannot.throws);
    }
    return;
  }
  const parsed = httpSignature.parseRequest(theirs, { headers: [] });
  expect(parsed.params.headers).toEqual(params.headers);
  const publicKeyPem = new X509Certificate(sent.der).publicKey
    .export({ format: "pem", type: "spki" })
    .toString();
  expect(httpSignature.verifySignature(parsed, publicKeyPem)).toBe(true);
}

describe("RequestSigner signing rules", () => {
  it.each(named(CASES))("%s", signAndJudge);
});

describe("RequestSigner signing rules: focused", () => {
  it("a decimal keyId serial verifies only with allowDecimalSerial", async () => {
    const signer = new RequestSigner({
      privateKey: cert.tpp.privateKey,
      certificate: cert.tpp.certificateDer,
      keyIdSpelling: { serial: "decimal" },
    });
    const request = SAMPLES[0]!.request("PSU-1234");
    const headers = received(request, await signer.sign(request));
    const strict = verifyRequestSignature(
      { method: request.method, target: request.target, headers },
      { publicKey: cert.tpp.publicKey, keyIdTarget: loadCertificate(cert.tpp.certificatePem).keyIdTarget },
    );
    expect(isRejection(strict) && strict.text).toContain("does not match the certificate serial");
  });

  it("headers that leave an eligible header unsigned are refused under the default coverage rule", async () => {
    const signer = new RequestSigner({
      privateKey: cert.tpp.privateKey,
      certificate: cert.tpp.certificateDer,
      headers: ["(request-target)", "date", "x-request-id"],
    });
    const request = SAMPLES[1]!.request("PSU-1234");
    const headers = received(request, await signer.sign(request));
    const verdict = verifyRequestSignature(
      { method: request.method, target: request.target, headers },
      { publicKey: cert.tpp.publicKey },
    );
    expect(isRejection(verdict) && verdict.text).toContain("header that the signature does not cover");
  });

  it("a non-ASCII PSU-ID (utf-8) leaves the Signature ASCII; a non-ASCII keyId makes it an RFC 2047 word", async () => {
    const request = SAMPLES[1]!.request(NON_ASCII_PSU_ID);

    const asciiKeyId = new RequestSigner({
      privateKey: cert.tpp.privateKey,
      certificate: cert.tpp.certificateDer,
    });
    const plain = await asciiKeyId.sign(request);
    expectAsciiSignature(plain);
    expect(plain["PSU-ID"]).toBe(Buffer.from(NON_ASCII_PSU_ID, "utf8").toString("latin1"));

    const nonAscii = await throwawayTpp({ subject: "CN=Blåbær TPP,O=Ærlig Øl AS,C=NO" });
    const signer = new RequestSigner({
      privateKey: nonAscii.privateKey,
      certificate: nonAscii.certificateDer,
    });
    const out = await signer.sign(request);
    // Still ASCII on the wire, but as an encoded word that carries the UTF-8 keyId.
    expect(out.Signature).toMatch(/^=\?utf-8\?B\?[A-Za-z0-9+/=]+\?=$/);
    expect(paramsOf(out).keyId).toBe(signer.keyId);
    expect(signer.keyId).toContain("Blåbær");
    const headers = received(request, out);
    const loaded = loadCertificate(headers["tpp-signature-certificate"]!);
    const verdict = verifyRequestSignature(
      { method: request.method, target: request.target, headers },
      { publicKey: loaded.publicKey, keyIdTarget: loaded.keyIdTarget },
    );
    expect(isRejection(verdict) ? verdict.text : verdict.keyId).toBe(signer.keyId);
    // joyent's parser cannot read RFC 2047 encoded words: not judged by it here.
  });
});
