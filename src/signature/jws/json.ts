/**
 * A strict JSON reader for JWS protected headers (RFC 8259) that refuses duplicate member names.
 * JSON.parse keeps the last of two `alg` or `crit` members while another JOSE implementation may
 * keep the first: the signer and the verifier would then disagree about what was signed (RFC 7515
 * section 4 allows rejecting such a header; we do).
 *
 * JSON.parse checks the syntax natively; a scan of the same text then finds every member name
 * (a string followed by `:`) per object and refuses a second one of the same name, decoded, so that
 * `"\u0061lg"` is `alg`. Perf put this at under half the cost of a parser of our own on a header
 * carrying a 2 KB x5c certificate: the scan jumps from quote to quote natively. The input is bounded
 * by the caller (MAX_JWS_LENGTH), and nesting is bounded here.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [name: string]: JsonValue };

/** Why the text is not one JSON object without duplicate names: the caller makes it a Rejection. */
export class JsonProblem {
  constructor(
    readonly kind: "syntax" | "duplicate" | "depth",
    readonly text: string,
  ) {}
}

export const MAX_JSON_DEPTH = 8;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** The index of the quote closing the string that opens at `open`: a quote after an even run of backslashes. */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** In text JSON.parse accepted: the first member name seen twice in one object, or a nesting too deep. */
function scan(text: string): JsonProblem | undefined {
  const names: Set<string>[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i);
      let next = end + 1;
      while (isSpace(text.charCodeAt(next))) next++;
      if (text.charCodeAt(next) === COLON) {
        const raw = text.slice(i + 1, end);
        const name = raw.includes("\\") ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        const seen = names[names.length - 1]!;
        if (seen.has(name))
          return new JsonProblem("duplicate", `member '${name.slice(0, 40)}' appears twice`);
        seen.add(name);
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_JSON_DEPTH) return new JsonProblem("depth", `nesting deeper than ${MAX_JSON_DEPTH}`);
      // Arrays get a set too, unused, so that a closing bracket of either kind pops one.
      names.push(new Set());
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
      names.pop();
    }
  }
  return undefined;
}

/** The one JSON object `text` holds, or what is wrong with it. Anything but an object is a problem. */
export function parseJsonObject(text: string): { readonly [name: string]: JsonValue } | JsonProblem {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return new JsonProblem("syntax", (e as Error).message.slice(0, 120));
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return new JsonProblem("syntax", "expected a JSON object");
  }
  return scan(text) ?? (value as { [name: string]: JsonValue });
}
