/**
 * A strict JSON reader for JWS protected headers (RFC 8259) that refuses duplicate member names.
 * JSON.parse keeps the last of two `alg` or `crit` members while another JOSE implementation may
 * keep the first: the signer and the verifier would then disagree about what was signed (RFC 7515
 * section 4: a header with duplicate names must be rejected or parsed with the last one winning;
 * we reject). The input is bounded by the caller (a header of a few KB), and nesting is bounded
 * here, so the recursion stays shallow.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [name: string]: JsonValue };

/** Why the text is not one JSON object, and where: the caller turns it into a Rejection. */
export class JsonProblem {
  constructor(
    readonly kind: "syntax" | "duplicate" | "depth",
    readonly text: string,
  ) {}
}

export const MAX_JSON_DEPTH = 8;

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

class Reader {
  at = 0;
  constructor(readonly text: string) {}

  problem(kind: JsonProblem["kind"], what: string): JsonProblem {
    return new JsonProblem(kind, `${what} at offset ${this.at}`);
  }

  skipSpace(): void {
    const t = this.text;
    while (this.at < t.length) {
      const c = t.charCodeAt(this.at);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.at++;
    }
  }

  value(depth: number): JsonValue | JsonProblem {
    if (depth > MAX_JSON_DEPTH) return this.problem("depth", `nesting deeper than ${MAX_JSON_DEPTH}`);
    this.skipSpace();
    const c = this.text[this.at];
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === '"') return this.string();
    if (c === "t") return this.literal("true", true);
    if (c === "f") return this.literal("false", false);
    if (c === "n") return this.literal("null", null);
    NUMBER.lastIndex = this.at;
    const m = NUMBER.exec(this.text);
    if (m) {
      this.at += m[0].length;
      return Number(m[0]);
    }
    return this.problem("syntax", c === undefined ? "unexpected end" : `unexpected '${c}'`);
  }

  literal(word: string, value: JsonValue): JsonValue | JsonProblem {
    if (!this.text.startsWith(word, this.at)) return this.problem("syntax", `expected '${word}'`);
    this.at += word.length;
    return value;
  }

  string(): string | JsonProblem {
    const t = this.text;
    this.at++; // the opening quote
    let out = "";
    let from = this.at;
    while (this.at < t.length) {
      const c = t.charCodeAt(this.at);
      if (c === 0x22) {
        out += t.slice(from, this.at);
        this.at++;
        return out;
      }
      if (c < 0x20) return this.problem("syntax", "control character in a string");
      if (c === 0x5c) {
        out += t.slice(from, this.at);
        const e = t[this.at + 1];
        const simple = e === undefined ? undefined : ESCAPES[e];
        if (simple !== undefined) {
          out += simple;
          this.at += 2;
        } else if (e === "u") {
          const hex = t.slice(this.at + 2, this.at + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) return this.problem("syntax", "bad \\u escape");
          out += String.fromCharCode(Number.parseInt(hex, 16));
          this.at += 6;
        } else {
          return this.problem("syntax", "bad escape");
        }
        from = this.at;
        continue;
      }
      this.at++;
    }
    return this.problem("syntax", "unterminated string");
  }

  array(depth: number): JsonValue[] | JsonProblem {
    this.at++;
    const out: JsonValue[] = [];
    this.skipSpace();
    if (this.text[this.at] === "]") {
      this.at++;
      return out;
    }
    for (;;) {
      const v = this.value(depth + 1);
      if (isProblem(v)) return v;
      out.push(v);
      this.skipSpace();
      const c = this.text[this.at++];
      if (c === "]") return out;
      if (c !== ",") return this.problem("syntax", "expected ',' or ']'");
    }
  }

  object(depth: number): { [name: string]: JsonValue } | JsonProblem {
    this.at++;
    // A null prototype: a member named `__proto__` is data, not a prototype.
    const out: { [name: string]: JsonValue } = Object.create(null);
    this.skipSpace();
    if (this.text[this.at] === "}") {
      this.at++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.at] !== '"') return this.problem("syntax", "expected a member name");
      const start = this.at;
      const name = this.string();
      if (isProblem(name)) return name;
      if (Object.hasOwn(out, name)) {
        this.at = start;
        return this.problem("duplicate", `member '${name.slice(0, 40)}' appears twice`);
      }
      this.skipSpace();
      if (this.text[this.at++] !== ":") return this.problem("syntax", "expected ':'");
      const v = this.value(depth + 1);
      if (isProblem(v)) return v;
      out[name] = v;
      this.skipSpace();
      const c = this.text[this.at++];
      if (c === "}") return out;
      if (c !== ",") return this.problem("syntax", "expected ',' or '}'");
    }
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

function isProblem(v: unknown): v is JsonProblem {
  return v instanceof JsonProblem;
}

/** The one JSON object `text` holds, or what is wrong with it. Anything but an object is a problem. */
export function parseJsonObject(text: string): { [name: string]: JsonValue } | JsonProblem {
  const reader = new Reader(text);
  reader.skipSpace();
  if (text[reader.at] !== "{") return reader.problem("syntax", "expected a JSON object");
  const value = reader.object(0);
  if (isProblem(value)) return value;
  reader.skipSpace();
  if (reader.at !== text.length) return reader.problem("syntax", "text after the object");
  return value;
}

export function isJsonProblem(v: unknown): v is JsonProblem {
  return isProblem(v);
}
