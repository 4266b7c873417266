/**
 * The FAPI 2.0 HTTP Signatures profile as pure checks: which signature to check, what it must cover,
 * and whether its time parameters are acceptable; plus one-call verify and sign over them.
 *
 * Request: tag="fapi-2-request", covering "@method", "@target-uri", "content-digest" when there is
 * a body, "authorization" and "dpop" when present, and whatever the caller adds (the gateway adds
 * Berlin Group headers: tpp-signature-certificate, x-request-id, psu-id, …).
 * Response (FAPI 2.0 HTTP Signatures draft -01, "HTTP response signing"; profile `full`):
 * tag="fapi-2-response", covering "@status", "content-digest" when there is a body, and the request
 * through "@method";req, "@target-uri";req, "content-digest";req when the request had one, and, when
 * the request was signed, its "signature";req;key="<label>" and "signature-input";req;key="<label>".
 * Profile `method-target` binds the request through "@method";req and "@target-uri";req only (what
 * this gateway signed before; kept for the banks and verifiers that use it).
 */

import type { KeyObject } from "node:crypto";
import { isRejection, type Rejection, reject } from "../../errors.js";
import { DEFAULT_RFC9421_ALGORITHMS, type Rfc9421Algorithm } from "./algorithms.js";
import { type MessageHeaders, type RequestMessage, type ResponseMessage, signatureBase } from "./base.js";
import { type SignedHeaders, type SignOptions, sign } from "./sign.js";
import {
  type ComponentId,
  component,
  type ParsedSignature,
  parseSignatureInput,
  parseSignatures,
} from "./signature-input.js";
import { verify } from "./verify.js";

export const FAPI_REQUEST_TAG = "fapi-2-request";
export const FAPI_RESPONSE_TAG = "fapi-2-response";

/**
 * How a response signature binds the request: `full` (FAPI 2.0 HTTP Signatures draft -01) or
 * `method-target` ("@method";req and "@target-uri";req only).
 */
export const FAPI_RESPONSE_PROFILES = ["full", "method-target"] as const;
export type FapiResponseProfile = (typeof FAPI_RESPONSE_PROFILES)[number];

export interface SelectOptions {
  /** Only signatures with this tag are candidates. */
  readonly tag: string;
  /** Among those, this label is preferred; otherwise the first in header order is taken. */
  readonly label?: string;
}

/** The signature to check: by tag, then label. SIGNATURE_MISSING when none carries the tag. */
export function selectSignature(
  signatures: readonly ParsedSignature[],
  options: SelectOptions,
): ParsedSignature | Rejection {
  const tagged = signatures.filter((s) => s.params.tag === options.tag);
  if (tagged.length === 0)
    return reject(
      "SIGNATURE_MISSING",
      `no signature has tag="${options.tag}" (labels sent: ${signatures.map((s) => s.label).join(", ") || "none"}); sign with ;tag="${options.tag}"`,
    );
  if (options.label !== undefined) {
    const labelled = tagged.find((s) => s.label === options.label);
    if (labelled) return labelled;
  }
  return tagged[0]!;
}

export interface TimeWindow {
  /** The clock, in milliseconds since the epoch. */
  readonly now: number;
  /** How old `created` may be, in seconds. Default 300. */
  readonly maxAgeSeconds?: number;
  /** Clock skew tolerated either way, in seconds. Default 30. */
  readonly toleranceSeconds?: number;
}

/** `created` present and within the window; `expires`, when present, not passed. */
export function checkSignatureTime(signature: ParsedSignature, window: TimeWindow): true | Rejection {
  const now = Math.floor(window.now / 1000);
  const tolerance = window.toleranceSeconds ?? 30;
  const maxAge = window.maxAgeSeconds ?? 300;
  const { created, expires } = signature.params;
  if (created === undefined)
    return reject(
      "TIMESTAMP_INVALID",
      `Signature ${signature.label} has no 'created' parameter; send ;created=<UNIX time>`,
    );
  if (created > now + tolerance)
    return reject(
      "TIMESTAMP_INVALID",
      `Signature ${signature.label} was created at ${created}, ${created - now} s in the future; check the signer's clock`,
    );
  if (created < now - maxAge - tolerance)
    return reject(
      "TIMESTAMP_INVALID",
      `Signature ${signature.label} was created at ${created}, ${now - created} s ago; at most ${maxAge} s are accepted: sign each request afresh`,
    );
  if (expires !== undefined) {
    if (expires < created)
      return reject(
        "TIMESTAMP_INVALID",
        `Signature ${signature.label} expires (${expires}) before it was created (${created})`,
      );
    if (expires < now - tolerance)
      return reject(
        "TIMESTAMP_INVALID",
        `Signature ${signature.label} expired at ${expires}, ${now - expires} s ago`,
      );
  }
  return true;
}

/**
 * The last moment (epoch ms) at which checkSignatureTime still accepts `signature`: it judges whole
 * seconds, so up to the end of the last second in which `created` is within max age and tolerance
 * and `expires` within tolerance.
 */
export function signatureAcceptedUntil(signature: ParsedSignature, window: Omit<TimeWindow, "now">): number {
  const tolerance = window.toleranceSeconds ?? 30;
  const maxAge = window.maxAgeSeconds ?? 300;
  const { created, expires } = signature.params;
  let lastSecond = (created ?? Number.NEGATIVE_INFINITY) + maxAge + tolerance;
  if (expires !== undefined) lastSecond = Math.min(lastSecond, expires + tolerance);
  return (lastSecond + 1) * 1000 - 1;
}

function covers(signature: ParsedSignature, name: string, req: boolean): boolean {
  return signature.components.some(
    (c) => c.name === name && c.params.has("req") === req && !c.params.has("key") && !c.params.has("name"),
  );
}

function present(headers: MessageHeaders, name: string): boolean {
  const v = headers[name];
  return v !== undefined && (typeof v === "string" || v.length > 0);
}

/** A body is there when Content-Length is above 0 or the body is chunked. */
export function hasBody(headers: MessageHeaders): boolean {
  const length = headers["content-length"];
  if (typeof length === "string" && length.trim() !== "0") return true;
  return present(headers, "transfer-encoding");
}

function missing(signature: ParsedSignature, needed: readonly string[], what: string): Rejection | undefined {
  const absent = needed.filter((n) => {
    const req = n.endsWith(";req");
    return !covers(signature, req ? n.slice(0, -4) : n, req);
  });
  if (absent.length === 0) return undefined;
  return reject(
    "SIGNATURE_INVALID",
    `Signature ${signature.label} does not cover ${absent.map((n) => (n.endsWith(";req") ? `"${n.slice(0, -4)}";req` : `"${n}"`)).join(", ")}; ${what} must`,
  );
}

export interface FapiCoverageOptions {
  /** Header names (lower-case) the signature must cover whenever the message carries them. */
  readonly coverWhenPresent?: readonly string[];
  /** Header names it must always cover (the message must carry them). */
  readonly coverAlways?: readonly string[];
  /** Whether the message has a body; default from Content-Length / Transfer-Encoding. */
  readonly hasBody?: boolean;
}

/** The components a FAPI 2.0 request signature must cover for this request. */
export function fapiRequestComponents(request: RequestMessage, options: FapiCoverageOptions = {}): string[] {
  const needed = ["@method", "@target-uri"];
  for (const name of ["authorization", "dpop", ...(options.coverWhenPresent ?? [])])
    if (present(request.headers, name) && !needed.includes(name)) needed.push(name);
  for (const name of options.coverAlways ?? []) if (!needed.includes(name)) needed.push(name);
  if ((options.hasBody ?? hasBody(request.headers)) && !needed.includes("content-digest"))
    needed.push("content-digest");
  return needed;
}

/**
 * The components every FAPI 2.0 response signature must cover (`;req` marks the request's): the
 * `method-target` profile's; fapiResponseCoverage adds the `full` profile's binding.
 */
export function fapiResponseComponents(
  response: ResponseMessage,
  options: FapiCoverageOptions = {},
): string[] {
  const needed = ["@method;req", "@target-uri;req", "@status"];
  for (const name of options.coverWhenPresent ?? [])
    if (present(response.headers, name) && !needed.includes(name)) needed.push(name);
  for (const name of options.coverAlways ?? []) if (!needed.includes(name)) needed.push(name);
  if ((options.hasBody ?? hasBody(response.headers)) && !needed.includes("content-digest"))
    needed.push("content-digest");
  return needed;
}

export interface FapiResponseOptions extends FapiCoverageOptions {
  /** Default `full`. */
  readonly profile?: FapiResponseProfile;
  /**
   * The headers of the request answered (`full`: its Content-Digest and its signature are bound with
   * `;req`). Without them only "@method";req and "@target-uri";req can be asked for.
   */
  readonly requestHeaders?: MessageHeaders;
  /** The request signature to bind; default the request's `fapi-2-request` signature, if it has one. */
  readonly requestSignatureLabel?: string;
}

/**
 * The label of the request's FAPI 2.0 signature (`tag="fapi-2-request"`), or undefined when the
 * request carries no Signature-Input; a Signature-Input that does not parse is refused.
 */
export function requestSignatureLabel(headers: MessageHeaders): string | undefined | Rejection {
  const input = headers["signature-input"];
  if (input === undefined || (typeof input !== "string" && input.length === 0)) return undefined;
  const parsed = parseSignatureInput(input);
  if (isRejection(parsed)) return parsed;
  return parsed.find((s) => s.params.tag === FAPI_REQUEST_TAG)?.label;
}

/**
 * The components a FAPI 2.0 response signature must cover, as identifiers: the profile's binding to
 * the request first, then `@status`, the caller's headers and `content-digest` with a body.
 */
export function fapiResponseCoverage(
  response: ResponseMessage,
  options: FapiResponseOptions = {},
): ComponentId[] | Rejection {
  const req = { req: true };
  const needed = [component("@method", req), component("@target-uri", req)];
  const request = options.requestHeaders;
  if ((options.profile ?? "full") === "full" && request !== undefined) {
    if (present(request, "content-digest")) needed.push(component("content-digest", req));
    const label = options.requestSignatureLabel ?? requestSignatureLabel(request);
    if (isRejection(label)) return label;
    if (label !== undefined)
      needed.push(
        component("signature", { req: true, key: label }),
        component("signature-input", { req: true, key: label }),
      );
  }
  for (const name of fapiResponseComponents(response, options).slice(2)) needed.push(component(name));
  return needed;
}

/** `have` names the same component as `want`: name, `;req` and `key` alike (`;sf` makes no difference). */
function sameComponent(have: ComponentId, want: ComponentId): boolean {
  if (have.name !== want.name || have.params.has("name")) return false;
  if (have.params.has("req") !== want.params.has("req")) return false;
  return have.params.get("key") === want.params.get("key");
}

function missingComponents(
  signature: ParsedSignature,
  needed: readonly ComponentId[],
  what: string,
): Rejection | undefined {
  const absent = needed.filter((n) => !signature.components.some((c) => sameComponent(c, n)));
  if (absent.length === 0) return undefined;
  return reject(
    "SIGNATURE_INVALID",
    `Signature ${signature.label} does not cover ${absent.map((n) => n.serialized).join(", ")}; ${what} must`,
  );
}

/** The request profile's checks on the chosen signature: tag, coverage, time. */
export function checkFapiRequestSignature(
  signature: ParsedSignature,
  request: RequestMessage,
  options: FapiCoverageOptions & TimeWindow,
): true | Rejection {
  if (signature.params.tag !== FAPI_REQUEST_TAG)
    return reject("SIGNATURE_INVALID", `Signature ${signature.label} must carry ;tag="${FAPI_REQUEST_TAG}"`);
  const gap = missing(signature, fapiRequestComponents(request, options), "a FAPI 2.0 request signature");
  if (gap) return gap;
  return checkSignatureTime(signature, options);
}

/** The response profile's checks on the chosen signature: tag, coverage (with `;req`), time. */
export function checkFapiResponseSignature(
  signature: ParsedSignature,
  response: ResponseMessage,
  options: FapiResponseOptions & TimeWindow,
): true | Rejection {
  if (signature.params.tag !== FAPI_RESPONSE_TAG)
    return reject("SIGNATURE_INVALID", `Signature ${signature.label} must carry ;tag="${FAPI_RESPONSE_TAG}"`);
  const needed = fapiResponseCoverage(response, options);
  if (isRejection(needed)) return needed;
  const gap = missingComponents(signature, needed, "a FAPI 2.0 response signature");
  if (gap) {
    if ((options.profile ?? "full") !== "full") return gap;
    const asBefore = fapiResponseCoverage(response, { ...options, profile: "method-target" });
    if (isRejection(asBefore) || missingComponents(signature, asBefore, "") !== undefined) return gap;
    if (signature.components.some((c) => c.params.has("req") && !/^@(method|target-uri)$/.test(c.name)))
      return gap;
    if (signature.components.some((c) => c.name === "signature" || c.name === "signature-input")) return gap;
    // Bound exactly as profile method-target binds: say which setting takes such a signer.
    return reject(
      gap.code,
      `${gap.text} (profile full; a signer that binds the request by "@method";req and "@target-uri";req only is profile method-target)`,
    );
  }
  return checkSignatureTime(signature, options);
}

export interface FapiVerifyOptions extends FapiCoverageOptions, TimeWindow {
  /** The key the caller found for the signature's keyid (or for the TPP). */
  readonly publicKey: KeyObject | ((keyid: string | undefined) => KeyObject | Rejection);
  readonly algorithms?: readonly Rfc9421Algorithm[];
  /** Preferred label among signatures with the FAPI tag. */
  readonly label?: string;
}

export interface VerifiedSignature {
  readonly label: string;
  /** Passed through for the caller: the gateway matches the Berlin Group `SN=…,CA=…` form. */
  readonly keyid: string | undefined;
  readonly created: number;
  readonly signature: ParsedSignature;
}

function keyFor(options: FapiVerifyOptions, signature: ParsedSignature): KeyObject | Rejection {
  return typeof options.publicKey === "function"
    ? options.publicKey(signature.params.keyid)
    : options.publicKey;
}

function verified(signature: ParsedSignature): VerifiedSignature {
  return {
    label: signature.label,
    keyid: signature.params.keyid,
    created: signature.params.created!,
    signature,
  };
}

/** Parse, select by tag, profile checks, base, verify: the whole check of a FAPI 2.0 request. */
export function verifyFapiRequest(
  request: RequestMessage,
  options: FapiVerifyOptions,
): VerifiedSignature | Rejection {
  const all = parseSignatures(request.headers["signature-input"], request.headers.signature);
  if (isRejection(all)) return all;
  const signature = selectSignature(all, { tag: FAPI_REQUEST_TAG, label: options.label });
  if (isRejection(signature)) return signature;
  const profile = checkFapiRequestSignature(signature, request, options);
  if (isRejection(profile)) return profile;
  const base = signatureBase(signature.components, signature.serializedParams, request);
  if (isRejection(base)) return base;
  const key = keyFor(options, signature);
  if (isRejection(key)) return key;
  const ok = verify(signature, base, key, options.algorithms ?? DEFAULT_RFC9421_ALGORITHMS);
  return isRejection(ok) ? ok : verified(signature);
}

/** How a response binds its request (FapiResponseOptions without the request, which is given apart). */
export type FapiResponseBinding = Pick<FapiResponseOptions, "profile" | "requestSignatureLabel">;

/** The whole check of a FAPI 2.0 response to `request` (default profile `full`). */
export function verifyFapiResponse(
  response: ResponseMessage,
  request: RequestMessage,
  options: FapiVerifyOptions & FapiResponseBinding,
): VerifiedSignature | Rejection {
  const all = parseSignatures(response.headers["signature-input"], response.headers.signature);
  if (isRejection(all)) return all;
  const signature = selectSignature(all, { tag: FAPI_RESPONSE_TAG, label: options.label });
  if (isRejection(signature)) return signature;
  const profile = checkFapiResponseSignature(signature, response, {
    ...options,
    requestHeaders: request.headers,
  });
  if (isRejection(profile)) return profile;
  const base = signatureBase(signature.components, signature.serializedParams, response, request);
  if (isRejection(base)) return base;
  const key = keyFor(options, signature);
  if (isRejection(key)) return key;
  const ok = verify(signature, base, key, options.algorithms ?? DEFAULT_RFC9421_ALGORITHMS);
  return isRejection(ok) ? ok : verified(signature);
}

export interface FapiSignOptions extends FapiCoverageOptions {
  readonly privateKey: KeyObject;
  readonly keyid: string;
  /** The clock, in milliseconds since the epoch. */
  readonly now: number;
  /** Sent as `alg`; omitted when absent (the verifier derives it from the key). */
  readonly alg?: Rfc9421Algorithm;
  readonly nonce?: string;
  readonly expiresInSeconds?: number;
  readonly label?: string;
}

function toComponents(names: readonly string[]): ComponentId[] {
  return names.map((n) => (n.endsWith(";req") ? component(n.slice(0, -4), { req: true }) : component(n)));
}

function paramsOf(options: FapiSignOptions, tag: string) {
  const created = Math.floor(options.now / 1000);
  return {
    created,
    ...(options.expiresInSeconds === undefined ? {} : { expires: created + options.expiresInSeconds }),
    keyid: options.keyid,
    ...(options.alg === undefined ? {} : { alg: options.alg }),
    ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
    tag,
  };
}

/** What signing a request as FAPI 2.0 requires takes: for sign, or signAsync off the event loop. */
export function fapiRequestSigning(request: RequestMessage, options: FapiSignOptions): SignOptions {
  return {
    components: toComponents(fapiRequestComponents(request, options)),
    params: paramsOf(options, FAPI_REQUEST_TAG),
    message: request,
    privateKey: options.privateKey,
    label: options.label,
  };
}

/** Signs a request as FAPI 2.0 requires (the components of fapiRequestComponents). */
export function signFapiRequest(
  request: RequestMessage,
  options: FapiSignOptions,
): SignedHeaders | Rejection {
  return sign(fapiRequestSigning(request, options));
}

/**
 * What signing the response to `request` as FAPI 2.0 requires takes (default profile `full`);
 * refused when the request's Signature-Input, needed for the binding, does not parse.
 */
export function fapiResponseSigning(
  response: ResponseMessage,
  request: RequestMessage,
  options: FapiSignOptions & FapiResponseBinding,
): SignOptions | Rejection {
  const components = fapiResponseCoverage(response, { ...options, requestHeaders: request.headers });
  if (isRejection(components)) return components;
  return {
    components,
    params: paramsOf(options, FAPI_RESPONSE_TAG),
    message: response,
    request,
    privateKey: options.privateKey,
    label: options.label,
  };
}

/** Signs the response to `request` as FAPI 2.0 requires. */
export function signFapiResponse(
  response: ResponseMessage,
  request: RequestMessage,
  options: FapiSignOptions & FapiResponseBinding,
): SignedHeaders | Rejection {
  const signing = fapiResponseSigning(response, request, options);
  return isRejection(signing) ? signing : sign(signing);
}
