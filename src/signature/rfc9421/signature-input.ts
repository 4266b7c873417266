/**
 * The Signature-Input and Signature headers (RFC 9421 sections 4.1 and 4.2): Dictionaries keyed by
 * label, the one an Inner List of component identifiers with signature parameters, the other a
 * byte sequence. Bounded before anything is built: a request has one or two signatures, a FAPI
 * signature covers a handful of components.
 */

import { isRejection, type Rejection, reject } from "../../errors.js";
import {
  type BareItem,
  type Dictionary,
  type Item,
  isInnerList,
  type Parameters,
  parseDictionary,
  serializeBareItem,
  serializeParams,
} from "./structured-fields.js";

export const SIGNATURE_INPUT_MAX_LENGTH = 4096;
/** Four RSA-4096 signatures in base64 with labels fit in under 3 KB; 8 KB leaves room for RSA-8192. */
export const SIGNATURE_MAX_LENGTH = 8192;
export const MAX_SIGNATURES = 4;
export const MAX_COMPONENTS = 32;
const MAX_SIGNATURE_BYTES = 1024;

const INPUT_BOUNDS = {
  members: MAX_SIGNATURES,
  innerItems: MAX_COMPONENTS,
  params: 12,
  refuseDuplicates: true,
};
const SIGNATURE_BOUNDS = { members: MAX_SIGNATURES, innerItems: 0, params: 4, refuseDuplicates: true };

/** A covered component: its name, its parameters, and the identifier as it opens its base line. */
export interface ComponentId {
  readonly name: string;
  readonly params: Parameters;
  /** `"@query-param";name="Pet"`: RFC 8941 serialization of the name string and its parameters. */
  readonly serialized: string;
}

/** The registered signature parameters (RFC 9421 2.3), typed; others are kept only in the serialization. */
export interface SignatureParams {
  readonly created?: number;
  readonly expires?: number;
  readonly nonce?: string;
  readonly alg?: string;
  readonly keyid?: string;
  readonly tag?: string;
}

export interface SignatureInput {
  readonly label: string;
  readonly components: readonly ComponentId[];
  readonly params: SignatureParams;
  /** The value of the `@signature-params` line: the Inner List re-serialized per RFC 8941. */
  readonly serializedParams: string;
}

export interface ParsedSignature extends SignatureInput {
  readonly signature: Buffer;
}

/** A component identifier from a name and parameters, e.g. `component("@query-param", { name: "Pet" })`. */
export function component(
  name: string,
  params: Readonly<Record<string, string | boolean>> = {},
): ComponentId {
  const map: Parameters = new Map(Object.entries(params));
  return { name, params: map, serialized: serializeBareItem(name) + serializeParams(map) };
}

const INTEGER_PARAMS = new Set(["created", "expires"]);
const STRING_PARAMS = new Set(["nonce", "alg", "keyid", "tag"]);

function joined(raw: string | readonly string[] | undefined): string | undefined {
  return typeof raw === "object" ? raw.join(", ") : raw;
}

function typedParams(label: string, params: Parameters): SignatureParams | Rejection {
  const out: Record<string, string | number> = {};
  for (const [key, value] of params) {
    if (INTEGER_PARAMS.has(key)) {
      if (typeof value !== "number")
        return reject("FORMAT_ERROR", `Signature-Input ${label}: '${key}' must be an integer UNIX time`);
      out[key] = value;
    } else if (STRING_PARAMS.has(key)) {
      if (typeof value !== "string")
        return reject("FORMAT_ERROR", `Signature-Input ${label}: '${key}' must be a quoted string`);
      out[key] = value;
    }
  }
  return out as SignatureParams;
}

function componentOf(label: string, item: Item): ComponentId | Rejection {
  if (typeof item.value !== "string")
    return reject(
      "FORMAT_ERROR",
      `Signature-Input ${label}: covered components must be quoted strings, e.g. ("@method" "@target-uri")`,
    );
  return {
    name: item.value,
    params: item.params,
    serialized: serializeBareItem(item.value) + serializeParams(item.params),
  };
}

/** Parses Signature-Input into its signatures by label, in header order. */
export function parseSignatureInput(
  raw: string | readonly string[] | undefined,
): SignatureInput[] | Rejection {
  const text = joined(raw);
  if (text === undefined || text.trim().length === 0)
    return reject(
      "SIGNATURE_MISSING",
      "Signature-Input header is missing; send the covered components and parameters",
    );
  if (text.length > SIGNATURE_INPUT_MAX_LENGTH)
    return reject(
      "FORMAT_ERROR",
      `Signature-Input header is ${text.length} characters long; at most ${SIGNATURE_INPUT_MAX_LENGTH} are accepted`,
    );
  const dict = parseDictionary(text, "Signature-Input header", INPUT_BOUNDS);
  if (!(dict instanceof Map)) return tooMany(dict, "Signature-Input");
  const inputs: SignatureInput[] = [];
  for (const [label, member] of dict) {
    if (!isInnerList(member))
      return reject(
        "FORMAT_ERROR",
        `Signature-Input ${label} is not an inner list; send ${label}=("@method" "@target-uri");created=…;keyid="…"`,
      );
    const components: ComponentId[] = [];
    for (const item of member.items) {
      const c = componentOf(label, item);
      if (isRejection(c)) return c;
      components.push(c);
    }
    const params = typedParams(label, member.params);
    if (isRejection(params)) return params;
    // The same text serializeMember(member) gives, reusing the identifiers already serialized.
    const serializedParams = `(${components.map((c) => c.serialized).join(" ")})${serializeParams(member.params)}`;
    inputs.push({ label, components, params, serializedParams });
  }
  return inputs;
}

function tooMany(rejection: Rejection, field: string): Rejection {
  return rejection.text.includes("more than")
    ? reject(
        "FORMAT_ERROR",
        `${rejection.text}; at most ${MAX_SIGNATURES} signatures of ${MAX_COMPONENTS} components each are accepted in ${field}`,
      )
    : rejection;
}

/** Parses the Signature header into bytes by label. */
export function parseSignatureHeader(
  raw: string | readonly string[] | undefined,
): Map<string, Buffer> | Rejection {
  const text = joined(raw);
  if (text === undefined || text.trim().length === 0)
    return reject("SIGNATURE_MISSING", "Signature header is missing; send label=:<base64 signature>:");
  if (text.length > SIGNATURE_MAX_LENGTH)
    return reject(
      "FORMAT_ERROR",
      `Signature header is ${text.length} characters long; at most ${SIGNATURE_MAX_LENGTH} are accepted`,
    );
  const dict: Dictionary | Rejection = parseDictionary(text, "Signature header", SIGNATURE_BOUNDS);
  if (!(dict instanceof Map)) return tooMany(dict, "Signature");
  const out = new Map<string, Buffer>();
  for (const [label, member] of dict) {
    const value: BareItem | undefined = isInnerList(member) ? undefined : member.value;
    if (!Buffer.isBuffer(value))
      return reject(
        "FORMAT_ERROR",
        `Signature ${label} is not a byte sequence; send ${label}=:<base64 signature>:`,
      );
    if (value.length === 0 || value.length > MAX_SIGNATURE_BYTES)
      return reject(
        "FORMAT_ERROR",
        `Signature ${label} is ${value.length} bytes; a signature is 1 to ${MAX_SIGNATURE_BYTES}`,
      );
    out.set(label, value);
  }
  return out;
}

/**
 * Both headers, paired by label: every Signature-Input label needs its Signature and the other way
 * round (RFC 9421 4.2), so that no half-sent signature is silently ignored.
 */
export function parseSignatures(
  signatureInput: string | readonly string[] | undefined,
  signature: string | readonly string[] | undefined,
): ParsedSignature[] | Rejection {
  if (joined(signatureInput) === undefined && joined(signature) === undefined)
    return reject(
      "SIGNATURE_MISSING",
      "Signature-Input and Signature headers are missing; this API requires an RFC 9421 HTTP message signature",
    );
  const inputs = parseSignatureInput(signatureInput);
  if (!Array.isArray(inputs)) return inputs;
  const values = parseSignatureHeader(signature);
  if (!(values instanceof Map)) return values;
  const out: ParsedSignature[] = [];
  for (const input of inputs) {
    const bytes = values.get(input.label);
    if (bytes === undefined)
      return reject(
        "FORMAT_ERROR",
        `Signature-Input has label '${input.label}' but the Signature header has none`,
      );
    out.push({ ...input, signature: bytes });
  }
  for (const label of values.keys())
    if (!inputs.some((i) => i.label === label))
      return reject("FORMAT_ERROR", `Signature has label '${label}' but the Signature-Input header has none`);
  return out;
}
