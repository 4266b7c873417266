/**
 * A fifth signing dialect, defined here alone to show the plug-in point is real: a signature in
 * `x-test-signature` (base64) with the key's own scheme (RSA PKCS#1 v1.5 or ECDSA over SHA-256,
 * Ed25519 as is) over the lines `<method lower-case> <target>`, `x-request-id: <value>` and
 * `digest: <value>` (empty without a body); the QSealC in TPP-Signature-Certificate; the body bound
 * through Digest. It has no time of its own: its replay records live `replaySeconds`, its one option
 * (config `verification.dialects.testSig`). Registered
 * by its test with one line: `registerDialect(testDialect)`. A bank's response in it is signed the
 * same way over the request's method and target and the response's X-Request-ID and Digest, the
 * bank's QSealC in the response-signing certificate header; ingress signs its answers so.
 */

import { createHash, randomUUID, sign, verify } from "node:crypto";
import { z } from "zod";
import { type DialectUnit, requestIdStep, responseOutline } from "../../../../../src/checks/index.js";
import { certificateHeaderMissing, digestHeaderMissing } from "../../../../../src/checks/required-headers.js";
import { isRejection, reject } from "../../../../../src/errors.js";
import {
  DigestVerifier,
  headerValue,
  parseDigestHeader,
  verifyDigest,
} from "../../../../../src/signature/index.js";

export const TEST_DIALECT = "test-sig";
const ONLY = [TEST_DIALECT];
const HEADER = "x-test-signature";

/** The bytes signed, from the request's method, target and headers. */
export function testSigningInput(
  method: string,
  target: string,
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
): Buffer {
  const value = (name: string) => {
    const v = headers[name] ?? headers[Object.keys(headers).find((k) => k.toLowerCase() === name) ?? ""];
    return Array.isArray(v) ? v.join(", ") : (v ?? "");
  };
  return Buffer.from(
    `${method.toLowerCase()} ${target}\nx-request-id: ${value("x-request-id")}\ndigest: ${value("digest")}`,
    "latin1",
  );
}

/** The key's own scheme: no hash named for Ed25519, SHA-256 otherwise. */
const hashFor = (type: string | undefined) => (type === "ed25519" ? null : "sha256");

/** Its config fragment (`verification.dialects.testSig`): how long a request in it is kept against replay. */
const testConfig = z
  .object({
    /** Seconds a request signed in it could still be accepted: its replay record's life. */
    replaySeconds: z.number().int().positive().default(120),
  })
  .strict();

/** A bank profile's rules for signing in it (`banks[].signing.testSig`). */
const testSigning = z
  .object({
    /** The keyId the bank gave, logged for the signer; default the QSealC's SHA-256. */
    keyId: z.string().min(1).optional(),
  })
  .strict();

export const testDialect: DialectUnit<
  z.output<typeof testConfig>,
  { readonly testSig?: z.output<typeof testSigning> }
> = {
  name: TEST_DIALECT,
  title: "the test dialect (x-test-signature)",
  authenticates: "head",
  howToSign: "an x-test-signature header (the test dialect) with TPP-Signature-Certificate",
  signatureStep: "test-signature",
  defaults: testConfig.parse({}),
  config: { key: "testSig", verification: testConfig, signing: testSigning },
  detect: (headers) => headers[HEADER] !== undefined,
  requiredHeaders: (headers, withBody) =>
    certificateHeaderMissing(headers) ?? (withBody ? digestHeaderMissing(headers) : undefined),
  steps: (_shared, own) => ({
    digest: [
      {
        name: "test-digest",
        dialects: ONLY,
        run: (c) => {
          const header = headerValue(c.headers, "digest");
          if (header === undefined) return undefined;
          const values = parseDigestHeader(header);
          if (isRejection(values)) return values;
          c.digestVerifier = new DigestVerifier(values);
          return undefined;
        },
        body: (c, chunk) => {
          c.digestVerifier?.update(chunk);
          return undefined;
        },
        bodyEnd: (c) => {
          const verdict = c.digestVerifier?.finish();
          return verdict === undefined || verdict === true ? undefined : verdict;
        },
      },
    ],
    parse: [
      {
        name: "test-signature-header",
        dialects: ONLY,
        run: (c) => {
          const value = headerValue(c.headers, HEADER) ?? "";
          if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value))
            return reject("FORMAT_ERROR", `${HEADER} is not base64; send the signature's bytes in base64`);
          c.dialectState = Buffer.from(value, "base64");
          c.signedHeaders = ["x-request-id", "digest"];
          return undefined;
        },
      },
    ],
    verify: [
      {
        name: "test-signature",
        dialects: ONLY,
        run: (c) => {
          const key = c.certificate!.publicKey;
          const input = testSigningInput(c.method, c.target, c.headers);
          if (!verify(hashFor(key.asymmetricKeyType), input, key, c.dialectState as Buffer)) {
            return reject(
              "SIGNATURE_INVALID",
              `${HEADER} does not verify over the method, target, X-Request-ID and Digest sent`,
            );
          }
          c.signingString = input;
          c.signedWith = `test-sig:${key.asymmetricKeyType}`;
          return undefined;
        },
      },
    ],
    longestAcceptanceMs: own.replaySeconds * 1000,
  }),
  signatureBytes: (c) => (c.dialectState as Buffer | undefined) ?? Buffer.alloc(0),
  explain: (c) => ({
    certificateHeader: "TPP-Signature-Certificate",
    certificate: headerValue(c.headers, "tpp-signature-certificate"),
    signedHeaders: ["(request-target)", "x-request-id", "digest"],
    signingString: testSigningInput(c.method, c.target, c.headers).toString("latin1"),
  }),
  // A bank's answer: the outline's slots filled (response-outline.ts), nothing else.
  responseChecks: ({ certificates, certificateHeader }) =>
    responseOutline(certificates, {
      read: [
        {
          name: "test-signature-header",
          run: (c) => {
            const value = c.header(HEADER) ?? "";
            if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value))
              return reject("SIGNATURE_MISSING", `the response carries no base64 ${HEADER} header`);
            // Its state in the check's one dialect slot, as its request steps keep theirs.
            c.dialectState = Buffer.from(value, "base64");
            return undefined;
          },
        },
      ],
      beforeCertificate: [
        {
          name: "digest",
          run: (c) => {
            const verified = verifyDigest(c.header("digest"), c.response.body);
            return verified === true ? undefined : verified;
          },
        },
        requestIdStep,
      ],
      certificate: (c) =>
        c.header(certificateHeader) ??
        reject("CERTIFICATE_MISSING", `the response carries no ${certificateHeader} header`),
      verify: [
        {
          name: "test-signature",
          run: (c) => {
            const key = c.bank!.publicKey;
            const { request, headers } = c.response;
            const input = testSigningInput(request.method, request.target, headers);
            const signature = c.dialectState as Buffer;
            return verify(hashFor(key.asymmetricKeyType), input, key, signature)
              ? undefined
              : reject(
                  "SIGNATURE_INVALID",
                  `${HEADER} does not verify over the request and the answer's headers`,
                );
          },
        },
      ],
    }),
  // What `verify --response` shows of an answer in it, and what it cannot check without the body.
  responseExplaining: {
    needsBody: ["digest"],
    bodyCheckedAgainst: "Digest",
    explain: (check, { method, target, certificateHeader }) => ({
      certificateHeader,
      certificate: check.header(certificateHeader.toLowerCase()),
      signedHeaders: ["(request-target)", "x-request-id", "digest"],
      signingString: testSigningInput(method, target, check.response.headers).toString("latin1"),
    }),
  },
  // What a signed answer in it covers, rebuilt for the evidence record: the request's method and target too.
  responseSigned: ({ headers, request }) => {
    const value = headers[HEADER];
    if (!request || value === undefined) return undefined;
    const target = new URL(request.targetUri);
    return {
      bytes: testSigningInput(request.method, `${target.pathname}${target.search}`, headers),
      signature: Buffer.from(value, "base64"),
      signedWith: `${TEST_DIALECT}:sha256`,
    };
  },
  // Ingress's answer to a request in it: what its response checks read, signed with the bank's QSealC.
  responseSigner:
    ({ privateKey, certificateDer, certificateHeader }) =>
    async (body, headers, _status, request) => {
      const added: Record<string, string> = {
        [certificateHeader]: Buffer.from(certificateDer).toString("base64"),
        "X-Request-ID": headerValue(request.headers, "x-request-id") ?? "",
        Digest: `SHA-256=${createHash("sha256").update(body).digest("base64")}`,
      };
      const signed = {
        ...headers,
        ...Object.fromEntries(Object.entries(added).map(([k, v]) => [k.toLowerCase(), v])),
      };
      const input = testSigningInput(request.method, request.target, signed);
      added["X-Test-Signature"] = sign(hashFor(privateKey.asymmetricKeyType), input, privateKey).toString(
        "base64",
      );
      return added;
    },
  signer: ({ privateKey, certificateDer, rules }) => ({
    keyId: rules.testSig?.keyId ?? createHash("sha256").update(certificateDer).digest("hex"),
    sign: async (request) => {
      const given = request.headers ?? {};
      const added: Record<string, string> = {
        "TPP-Signature-Certificate": Buffer.from(certificateDer).toString("base64"),
      };
      const requestId = Object.entries(given).find(([k]) => k.toLowerCase() === "x-request-id")?.[1];
      if (requestId === undefined) added["X-Request-ID"] = randomUUID();
      if (request.body !== undefined && Buffer.byteLength(request.body) > 0) {
        added.Digest = `SHA-256=${createHash("sha256").update(request.body).digest("base64")}`;
      }
      const input = testSigningInput(request.method, request.target, { ...given, ...added });
      added["X-Test-Signature"] = sign(hashFor(privateKey.asymmetricKeyType), input, privateKey).toString(
        "base64",
      );
      return added;
    },
  }),
};
