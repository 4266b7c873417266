/**
 * The signature base (RFC 9421 section 2.5): one line per covered component, in the order listed,
 * then the `@signature-params` line. Every component must resolve: a signer fails and a verifier
 * refuses when one is missing, never skips it.
 *
 * Messages are plain objects in Node's IncomingHttpHeaders shape (lower-case names; a string, or
 * an array for a header sent several times). Node drops repeats of some headers (Authorization,
 * Content-Type, Host, …) and joins others with ", ": give the values as received when that matters.
 */

import { isRejection, type Rejection, reject } from "../../errors.js";
import type { ComponentId } from "./signature-input.js";
import {
  type Dictionary,
  type Member,
  parseDictionary,
  parseItem,
  parseList,
  serializeDictionary,
  serializeList,
  serializeMember,
} from "./structured-fields.js";

export type MessageHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface RequestMessage {
  readonly method: string;
  /** The absolute target URI, e.g. `https://api.bank.example/v1/payments?x=1` (RFC 9110 7.1). */
  readonly targetUri: string;
  readonly headers: MessageHeaders;
}

export interface ResponseMessage {
  readonly status: number;
  readonly headers: MessageHeaders;
}

export type HttpMessage = RequestMessage | ResponseMessage;

export function isRequest(message: HttpMessage): message is RequestMessage {
  return "method" in message;
}

/**
 * Structured fields whose type we know, for `;sf` (RFC 9421 2.1.1): a verifier must refuse `;sf` on
 * a field whose type it does not know.
 */
const STRUCTURED_TYPES: Readonly<Record<string, "dictionary" | "list" | "item">> = {
  "content-digest": "dictionary",
  "repr-digest": "dictionary",
  "want-content-digest": "dictionary",
  "want-repr-digest": "dictionary",
  "signature-input": "dictionary",
  signature: "dictionary",
  "accept-signature": "dictionary",
  priority: "dictionary",
  "cache-status": "list",
  "proxy-status": "list",
};

const SUPPORTED_PARAMS = new Set(["req", "sf", "key", "name"]);

interface UriParts {
  readonly scheme: string;
  readonly authority: string;
  readonly path: string;
  readonly query: string | undefined;
}

const URI = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#.*)?$/;
const DEFAULT_PORT: Readonly<Record<string, string>> = { http: "80", https: "443" };

/** Splits without normalising: @path and @query are signed as sent, percent-encoding untouched. */
function splitUri(uri: string): UriParts | Rejection {
  const m = URI.exec(uri);
  if (!m)
    return reject(
      "FORMAT_ERROR",
      `the target URI '${uri.slice(0, 80)}' is not absolute (scheme://authority/path); it is needed for the derived components`,
    );
  const scheme = m[1]!.toLowerCase();
  // RFC 9110 4.2.3: the host lower-cased, userinfo gone, the scheme's default port omitted.
  let authority = m[2]!.slice(m[2]!.lastIndexOf("@") + 1).toLowerCase();
  const colon = authority.lastIndexOf(":");
  if (colon > authority.lastIndexOf("]")) {
    const port = authority.slice(colon + 1);
    if (port === "" || port === DEFAULT_PORT[scheme]) authority = authority.slice(0, colon);
  }
  return { scheme, authority, path: m[3] === "" ? "/" : m[3]!, query: m[4] };
}

/** The application/x-www-form-urlencoded percent-encode set, space as %20 (RFC 9421 2.2.8). */
function formEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()~]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Printable ASCII and tab only (RFC 9421 2.5 step 4: a base is ASCII; no line breaks inside a line). */
const NOT_BASE_TEXT = /[^\t\x20-\x7e]/;
function isBaseText(text: string): boolean {
  // One native scan: on a 2 KB certificate header a JS char loop cost several µs.
  return !NOT_BASE_TEXT.test(text);
}

/**
 * RFC 9421 2.1: values trimmed, obs-fold turned into one space, repeats joined with ", "; `null`
 * when a value holds a character a base may not (each value scanned once, here).
 */
function fieldValue(headers: MessageHeaders, name: string): string | undefined | null {
  const raw = headers[name];
  if (raw === undefined) return undefined;
  if (typeof raw === "string") return canonicalValue(raw);
  if (raw.length === 0) return undefined;
  const values = raw.map(canonicalValue);
  return values.includes(null) ? null : values.join(", ");
}

/** Trimmed; obs-fold (which never reaches us from Node's parser) is undone only if a line break is there. */
function canonicalValue(value: string): string | null {
  const trimmed = value.trim();
  if (isBaseText(trimmed)) return trimmed;
  const unfolded = trimmed.replace(/\r?\n[ \t]+/g, " ");
  return isBaseText(unfolded) ? unfolded : null;
}

function derive(
  c: ComponentId,
  target: HttpMessage,
  partsOf: (r: RequestMessage) => UriParts | Rejection,
): string | Rejection {
  if (c.name === "@status") {
    if (isRequest(target))
      return reject("SIGNATURE_INVALID", "'@status' is covered, but it exists only in a response");
    return String(target.status);
  }
  if (!isRequest(target))
    return reject(
      "SIGNATURE_INVALID",
      `'${c.name}' describes a request; a response's signature covers it as ${c.serialized};req`,
    );
  if (c.name === "@method") return target.method;
  const p = partsOf(target);
  if (isRejection(p)) return p;
  if (c.name === "@target-uri") return target.targetUri;
  switch (c.name) {
    case "@authority":
      return p.authority;
    case "@scheme":
      return p.scheme;
    case "@path":
      return p.path;
    case "@query":
      return `?${p.query ?? ""}`;
    case "@request-target":
      return p.query === undefined ? p.path : `${p.path}?${p.query}`;
    case "@query-param": {
      const name = c.params.get("name");
      if (typeof name !== "string")
        return reject("FORMAT_ERROR", `'@query-param' needs a name parameter, e.g. "@query-param";name="id"`);
      const values: string[] = [];
      for (const [k, v] of new URLSearchParams(p.query ?? ""))
        if (formEncode(k) === name) values.push(formEncode(v));
      if (values.length === 0)
        return reject(
          "SIGNATURE_INVALID",
          `query parameter '${name}' is covered but absent from the target URI`,
        );
      if (values.length > 1)
        return reject(
          "SIGNATURE_INVALID",
          `query parameter '${name}' occurs ${values.length} times; RFC 9421 2.2.8 forbids covering it: cover "@query" instead`,
        );
      return values[0]!;
    }
    default:
      return reject("SIGNATURE_INVALID", `derived component '${c.name.slice(0, 40)}' is not supported`);
  }
}

function structuredValue(c: ComponentId, text: string): string | Rejection {
  const key = c.params.get("key");
  if (key !== undefined) {
    if (typeof key !== "string") return reject("FORMAT_ERROR", `${c.serialized}: 'key' must be a string`);
    const dict = parseDictionary(text, `header '${c.name}'`);
    if (isRejection(dict)) return dict;
    const member: Member | undefined = (dict as Dictionary).get(key);
    if (member === undefined)
      return reject(
        "SIGNATURE_INVALID",
        `${c.serialized} is covered, but header '${c.name}' has no member '${key}'`,
      );
    return serializeMember(member);
  }
  const type = STRUCTURED_TYPES[c.name];
  if (type === undefined)
    return reject("SIGNATURE_INVALID", `${c.serialized}: '${c.name}' is not a structured field known here`);
  if (type === "dictionary") {
    const dict = parseDictionary(text, `header '${c.name}'`);
    return isRejection(dict) ? dict : serializeDictionary(dict);
  }
  if (type === "list") {
    const list = parseList(text, `header '${c.name}'`);
    return isRejection(list) ? list : serializeList(list);
  }
  const item = parseItem(text, `header '${c.name}'`);
  return isRejection(item) ? item : serializeMember(item);
}

/** A lower-case field name (RFC 9110 token) or a derived component name. */
const COMPONENT_NAME = /^@?[a-z0-9!#$%&'*+\-.^_`|~]+$/;

function checkParams(c: ComponentId): Rejection | undefined {
  if (
    c.params.size === 0 &&
    c.name.length < 64 &&
    COMPONENT_NAME.test(c.name) &&
    c.name !== "@signature-params"
  )
    return undefined;
  if (!COMPONENT_NAME.test(c.name))
    return reject(
      "FORMAT_ERROR",
      `component '${c.name.slice(0, 40)}' must be a lower-case field name or a derived component (@…)`,
    );
  for (const [param, value] of c.params) {
    if (param === "bs" || param === "tr")
      return reject(
        "SIGNATURE_INVALID",
        `${c.serialized}: the '${param}' parameter is not supported here; cover the field without it`,
      );
    if (!SUPPORTED_PARAMS.has(param))
      return reject("SIGNATURE_INVALID", `${c.serialized}: unknown component parameter '${param}'`);
    if ((param === "req" || param === "sf") && value !== true)
      return reject("FORMAT_ERROR", `${c.serialized}: '${param}' is a flag and takes no value`);
    if (param === "name" && c.name !== "@query-param")
      return reject("SIGNATURE_INVALID", `${c.serialized}: 'name' applies to "@query-param" only`);
    if ((param === "key" || param === "sf") && c.name.startsWith("@"))
      return reject("SIGNATURE_INVALID", `${c.serialized}: '${param}' applies to header fields only`);
  }
  if (c.name === "@signature-params")
    return reject("FORMAT_ERROR", "'@signature-params' must not be listed among the covered components");
  return undefined;
}

function nonAscii(c: ComponentId): Rejection {
  return reject(
    "FORMAT_ERROR",
    `${c.serialized} has a value with a character outside printable ASCII; RFC 9421 signs ASCII only`,
  );
}

/**
 * The signature base for `components` over `message`, ending with `"@signature-params": ` and
 * `signatureParams` (the serialized Inner List with parameters). `request` is the request a
 * response answers, needed for components with `;req`.
 */
export function signatureBase(
  components: readonly ComponentId[],
  signatureParams: string,
  message: HttpMessage,
  request?: RequestMessage,
): string | Rejection {
  // The target URIs are split at most once per base, and only when a component needs a part.
  let uri: UriParts | Rejection | undefined;
  let requestUri: UriParts | Rejection | undefined;
  const partsOf = (r: RequestMessage): UriParts | Rejection => {
    if (r === request) {
      requestUri ??= splitUri(r.targetUri);
      return requestUri;
    }
    uri ??= splitUri(r.targetUri);
    return uri;
  };
  let out = "";
  for (let i = 0; i < components.length; i++) {
    const c = components[i]!;
    // A linear look-back: at most MAX_COMPONENTS entries, cheaper than a Set per request.
    for (let j = 0; j < i; j++)
      if (components[j]!.serialized === c.serialized)
        return reject("FORMAT_ERROR", `component ${c.serialized} is listed twice`);
    const bad = checkParams(c);
    if (bad) return bad;
    let target: HttpMessage = message;
    if (c.params.size > 0 && c.params.has("req")) {
      if (isRequest(message))
        return reject(
          "SIGNATURE_INVALID",
          `${c.serialized}: ';req' is for a response's signature, not a request's`,
        );
      if (request === undefined)
        return reject(
          "SIGNATURE_INVALID",
          `${c.serialized} covers the request, which is not at hand to verify it`,
        );
      target = request;
    }
    let value: string | Rejection;
    // A field's canonical value was scanned for non-base text already (canonicalValue).
    let scanned = false;
    if (c.name.startsWith("@")) {
      value = derive(c, target, partsOf);
    } else {
      const text = fieldValue(target.headers, c.name);
      if (text === undefined)
        return reject(
          "SIGNATURE_INVALID",
          `header '${c.name}' is covered by the signature but absent from the ${isRequest(target) ? "request" : "response"}`,
        );
      if (text === null) return nonAscii(c);
      const structured = c.params.size > 0 && (c.params.has("key") || c.params.has("sf"));
      value = structured ? structuredValue(c, text) : text;
      scanned = !structured;
    }
    if (isRejection(value)) return value;
    if (!scanned && !isBaseText(value)) return nonAscii(c);
    out += `${c.serialized}: ${value}\n`;
  }
  return `${out}"@signature-params": ${signatureParams}`;
}
