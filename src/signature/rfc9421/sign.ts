/** Signing a message per RFC 9421 section 3.1: the base, then Signature-Input and Signature values. */

import { sign as cryptoSign, type KeyObject } from "node:crypto";
import { isRejection, type Rejection, reject } from "../../errors.js";
import {
  type AlgorithmSpec,
  RFC9421_ALGORITHMS,
  type Rfc9421Algorithm,
  resolveRfc9421Algorithm,
} from "./algorithms.js";
import { type HttpMessage, type RequestMessage, signatureBase } from "./base.js";
import { type ComponentId, component } from "./signature-input.js";
import { serializeBareItem } from "./structured-fields.js";

/**
 * Signature parameters to send. They are serialized in the object's key order (RFC 9421 2.3 lets the
 * signer choose it), so `{ created, keyid, tag }` gives `;created=…;keyid="…";tag="…"`.
 */
export interface SignParams {
  readonly created?: number;
  readonly expires?: number;
  readonly keyid?: string;
  readonly alg?: Rfc9421Algorithm;
  readonly nonce?: string;
  readonly tag?: string;
}

export interface SignOptions {
  /** Names (`"@method"`, `"content-digest"`) or identifiers with parameters (`component(…)`). */
  readonly components: readonly (string | ComponentId)[];
  readonly params: SignParams;
  readonly message: HttpMessage;
  /** The request a response answers, for components with `;req`. */
  readonly request?: RequestMessage;
  readonly privateKey: KeyObject;
  /** Default `sig1`. */
  readonly label?: string;
  /** Which algorithms the key may sign with; default all four of RFC9421_ALGORITHMS. */
  readonly algorithms?: readonly Rfc9421Algorithm[];
}

export interface SignedHeaders {
  /** The `Signature-Input` header value, e.g. `sig1=("@method" "@target-uri");created=…`. */
  readonly signatureInput: string;
  /** The `Signature` header value, `sig1=:<base64>:`. */
  readonly signature: string;
  /** The signature base that was signed, for logs and tests. */
  readonly base: string;
}

const LABEL = /^[a-z*][a-z0-9_\-.*]*$/;

function serializeParams(params: SignParams): string | Rejection {
  let out = "";
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (key === "created" || key === "expires") {
      if (!Number.isSafeInteger(value) || (value as number) < 0)
        return reject("FORMAT_ERROR", `signature parameter '${key}' must be a whole number of seconds`);
    } else if (typeof value !== "string" || !/^[\x20-\x7e]*$/.test(value)) {
      return reject("FORMAT_ERROR", `signature parameter '${key}' must be a printable ASCII string`);
    }
    out += `;${key}=${serializeBareItem(value as string | number)}`;
  }
  return out;
}

/** What a signature is made over: the algorithm, the base and the Signature-Input value. */
export interface PreparedSignature {
  readonly spec: AlgorithmSpec;
  readonly base: string;
  readonly label: string;
  readonly serializedParams: string;
}

/** The base and parameters of a signature, checked: everything but the private-key operation. */
export function prepareSignature(options: SignOptions): PreparedSignature | Rejection {
  const label = options.label ?? "sig1";
  if (!LABEL.test(label)) return reject("FORMAT_ERROR", `signature label '${label}' is not an RFC 8941 key`);
  const spec = resolveRfc9421Algorithm(
    options.params.alg,
    options.privateKey,
    options.algorithms ?? RFC9421_ALGORITHMS,
  );
  if (isRejection(spec)) return spec;
  const components = options.components.map((c) => (typeof c === "string" ? component(c) : c));
  const params = serializeParams(options.params);
  if (isRejection(params)) return params;
  const serializedParams = `(${components.map((c) => c.serialized).join(" ")})${params}`;
  const base = signatureBase(components, serializedParams, options.message, options.request);
  if (isRejection(base)) return base;
  return { spec, base, label, serializedParams };
}

/** The header values for a prepared signature and the signature's bytes. */
export function signedHeaders(prepared: PreparedSignature, bytes: Buffer): SignedHeaders {
  return {
    signatureInput: `${prepared.label}=${prepared.serializedParams}`,
    signature: `${prepared.label}=:${bytes.toString("base64")}:`,
    base: prepared.base,
  };
}

/** The options node:crypto's sign takes for a key and algorithm. */
export function keyOptions(spec: AlgorithmSpec, privateKey: KeyObject) {
  return {
    key: privateKey,
    padding: spec.padding,
    saltLength: spec.saltLength,
    dsaEncoding: spec.dsaEncoding,
  };
}

/** Signs `message`; fails (as a Rejection) when a component is missing from it, as RFC 9421 requires. */
export function sign(options: SignOptions): SignedHeaders | Rejection {
  const prepared = prepareSignature(options);
  if (isRejection(prepared)) return prepared;
  const bytes = cryptoSign(
    prepared.spec.hash,
    Buffer.from(prepared.base, "latin1"),
    keyOptions(prepared.spec, options.privateKey),
  );
  return signedHeaders(prepared, bytes);
}
