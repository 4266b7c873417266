/**
 * The interop corpus in test/fixtures/interop (its README says where each file comes from and on
 * what terms). Each loader narrows the JSON into the fields the tests use.
 */

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  asArray,
  asObject,
  booleanField,
  headerPairsField,
  type JsonObject,
  nullableStringField,
  optionalBooleanField,
  optionalNumberField,
  stringArrayField,
  stringField,
} from "./json-narrowing.js";

/** The one place that knows where the corpus lives, relative to this file: nothing outside the checkout. */
export const INTEROP_DIR = new URL("../fixtures/interop/", import.meta.url);

export function interopPath(relative: string): string {
  return fileURLToPath(new URL(relative, INTEROP_DIR));
}

export function readInteropText(relative: string): string {
  return readFileSync(interopPath(relative), "utf8");
}

function readInteropJson(relative: string): JsonObject {
  return asObject(JSON.parse(readInteropText(relative)), relative);
}

/** A request as a recording has it: header names in their original case and order. */
export interface RecordedRequest {
  readonly method: string;
  /** `null` when the source did not record it (then `(request-target)` is not signed either). */
  readonly target: string | null;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string | null;
}

function readRecordedRequest(object: JsonObject, at: string): RecordedRequest {
  return {
    method: stringField(object, "method", at),
    target: nullableStringField(object, "target", at),
    headers: headerPairsField(object, "headers", at),
    body: nullableStringField(object, "body", at),
  };
}

// ---------------------------------------------------------------------------------------------
// cavage-vectors.json

export interface CavageVector {
  readonly id: string;
  /** Key into `requests`; `null` for vectors that only carry a signing string. */
  readonly request: string | null;
  readonly keyId: string;
  readonly algorithm: string;
  readonly effectiveHeaders: readonly string[];
  readonly signingString: string;
  readonly signature: string;
  readonly signatureHeader: string | null;
  /** The same parameters as an `Authorization: Signature …` value, when the draft prints one. */
  readonly authorizationHeader: string | null;
  readonly created: number | undefined;
  readonly expires: number | undefined;
  /** Re-checked with node:crypto by the corpus authors; `false` marks a published erratum. */
  readonly verifies: boolean;
}

export interface CavageCorpus {
  readonly testKey: { readonly publicKeyPem: string; readonly privateKeyPem: string; readonly bits: number };
  readonly requests: ReadonlyMap<string, RecordedRequest & { readonly target: string }>;
  readonly vectors: readonly CavageVector[];
}

export function loadCavageCorpus(): CavageCorpus {
  const file = "cavage-vectors.json";
  const root = readInteropJson(file);
  const test = asObject(asObject(root.keys, `${file}.keys`).Test, `${file}.keys.Test`);
  const requests = new Map<string, RecordedRequest & { target: string }>();
  for (const [name, raw] of Object.entries(asObject(root.requests, `${file}.requests`))) {
    const at = `${file}.requests.${name}`;
    const request = readRecordedRequest(asObject(raw, at), at);
    if (request.target === null) throw new TypeError(`${at}.target: expected a string`);
    requests.set(name, { ...request, target: request.target });
  }
  const vectors = asArray(root.vectors, `${file}.vectors`).map((raw, i): CavageVector => {
    const at = `${file}.vectors[${i}]`;
    const v = asObject(raw, at);
    return {
      id: stringField(v, "id", at),
      request: nullableStringField(v, "request", at),
      keyId: stringField(v, "keyId", at),
      algorithm: stringField(v, "algorithm", at),
      effectiveHeaders: stringArrayField(v, "effectiveHeaders", at),
      signingString: stringField(v, "signingString", at),
      signature: stringField(v, "signature", at),
      signatureHeader: nullableStringField(v, "signatureHeader", at),
      authorizationHeader: nullableStringField(v, "authorizationHeader", at),
      created: optionalNumberField(v, "created", at),
      expires: optionalNumberField(v, "expires", at),
      verifies: booleanField(v, "verifies", at),
    };
  });
  const bits = optionalNumberField(test, "bits", `${file}.keys.Test`);
  return {
    testKey: {
      publicKeyPem: stringField(test, "publicKeyPem", `${file}.keys.Test`),
      privateKeyPem: stringField(test, "privateKeyPem", `${file}.keys.Test`),
      bits: bits ?? Number.NaN,
    },
    requests,
    vectors,
  };
}

// ---------------------------------------------------------------------------------------------
// berlin-group-examples.json

export interface BerlinGroupRequest extends RecordedRequest {
  /** `true`/`false` as the corpus re-checked it, `null` when the wire body is unknown, absent when not stated. */
  readonly digestMatchesBody: boolean | null | undefined;
  /** A body as recorded before an adapter rewrote it (its digest is not the wire digest). */
  readonly recordedBodyBeforeAdapterMapping: unknown;
}

export interface BerlinGroupNegativeCase {
  readonly id: string;
  readonly expect: string;
  readonly signatureHeader: string | null;
  readonly tppSignatureCertificate: string | null;
  readonly removeHeaders: readonly string[];
}

export interface BerlinGroupExample {
  readonly id: string;
  readonly request: BerlinGroupRequest | null;
  readonly signatureParams: {
    readonly keyId: string;
    readonly algorithm: string;
    /** Space-separated, as sent. */
    readonly headers: string;
    readonly signature: string;
  } | null;
  readonly signingString: string | null;
  readonly certificateFile: string | null;
  readonly verifies: boolean | null | undefined;
  /** Only for format examples without a request. */
  readonly signatureHeader: string | null;
  readonly digestExample: string | null;
  readonly negativeCases: readonly BerlinGroupNegativeCase[];
  readonly tppSignatureCertificateVariants: readonly { readonly form: string; readonly value: string }[];
}

function readNegativeCase(raw: unknown, at: string): BerlinGroupNegativeCase {
  const n = asObject(raw, at);
  return {
    id: stringField(n, "id", at),
    expect: stringField(n, "expect", at),
    signatureHeader: nullableStringField(n, "signatureHeader", at),
    tppSignatureCertificate: nullableStringField(n, "tppSignatureCertificate", at),
    removeHeaders: n.removeHeaders === undefined ? [] : stringArrayField(n, "removeHeaders", at),
  };
}

export function loadBerlinGroupExamples(): BerlinGroupExample[] {
  const file = "berlin-group-examples.json";
  const root = readInteropJson(file);
  return asArray(root.examples, `${file}.examples`).map((raw, i): BerlinGroupExample => {
    const at = `${file}.examples[${i}]`;
    const e = asObject(raw, at);
    let request: BerlinGroupRequest | null = null;
    if (e.request !== undefined && e.request !== null) {
      const r = asObject(e.request, `${at}.request`);
      request = {
        ...readRecordedRequest(r, `${at}.request`),
        digestMatchesBody: optionalBooleanField(r, "digestMatchesBody", `${at}.request`),
        recordedBodyBeforeAdapterMapping: r.recordedBodyBeforeAdapterMapping,
      };
    }
    let signatureParams: BerlinGroupExample["signatureParams"] = null;
    if (e.signatureParams !== undefined) {
      const p = asObject(e.signatureParams, `${at}.signatureParams`);
      signatureParams = {
        keyId: stringField(p, "keyId", `${at}.signatureParams`),
        algorithm: stringField(p, "algorithm", `${at}.signatureParams`),
        headers: stringField(p, "headers", `${at}.signatureParams`),
        signature: stringField(p, "signature", `${at}.signatureParams`),
      };
    }
    const variants =
      e.tppSignatureCertificateVariants === undefined ? [] : asArray(e.tppSignatureCertificateVariants, at);
    return {
      id: stringField(e, "id", at),
      request,
      signatureParams,
      signingString: nullableStringField(e, "signingString", at),
      certificateFile: nullableStringField(e, "certificateFile", at),
      verifies: optionalBooleanField(e, "verifies", at),
      signatureHeader: nullableStringField(e, "signatureHeader", at),
      digestExample: nullableStringField(e, "digestExample", at),
      negativeCases:
        e.negativeCases === undefined
          ? []
          : asArray(e.negativeCases, `${at}.negativeCases`).map((n, j) =>
              readNegativeCase(n, `${at}.negativeCases[${j}]`),
            ),
      tppSignatureCertificateVariants: variants.map((v, j) => {
        const variant = asObject(v, `${at}.tppSignatureCertificateVariants[${j}]`);
        return {
          form: stringField(variant, "form", `${at}.tppSignatureCertificateVariants[${j}]`),
          value: stringField(variant, "value", `${at}.tppSignatureCertificateVariants[${j}]`),
        };
      }),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// certs/EXPECTED.json (OpenSSL's decoding of each certificate: the oracle for keyId spellings)

export interface ExpectedCertificate {
  readonly file: string;
  /** Upper-case hex as OpenSSL prints it (leading zero nibbles kept, no DER sign byte). */
  readonly serialHex: string;
  readonly serialDecimal: string;
  /** OpenSSL's RFC 2253 rendering (`\0A` for a line feed). */
  readonly issuerRfc2253: string;
  /** The issuer's attributes in DER order (the reverse of RFC 2253 order), values as decoded. */
  readonly issuerAttributes: readonly { readonly oid: string; readonly value: string }[];
}

export function loadExpectedCertificates(): ReadonlyMap<string, ExpectedCertificate> {
  const file = "certs/EXPECTED.json";
  const root = readInteropJson(file);
  const out = new Map<string, ExpectedCertificate>();
  for (const [name, raw] of Object.entries(asObject(root.certificates, `${file}.certificates`))) {
    const at = `${file}.certificates.${name}`;
    const entry = asObject(raw, at);
    const serial = asObject(entry.serial, `${at}.serial`);
    out.set(name, {
      file: `certs/${name}`,
      serialHex: stringField(serial, "opensslHex", `${at}.serial`),
      serialDecimal: stringField(serial, "decimal", `${at}.serial`),
      issuerRfc2253: stringField(entry, "issuerRfc2253", at),
      issuerAttributes: asArray(entry.issuerAttributes, `${at}.issuerAttributes`).map((a, i) => {
        const attribute = asObject(a, `${at}.issuerAttributes[${i}]`);
        return {
          oid: stringField(attribute, "oid", `${at}.issuerAttributes[${i}]`),
          value: stringField(attribute, "value", `${at}.issuerAttributes[${i}]`),
        };
      }),
    });
  }
  return out;
}
