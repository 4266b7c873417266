/**
 * Header mutations on a validly signed request: drop, duplicate (same or another value), change
 * the name's case, oversize, control characters, non-ASCII bytes, whitespace, in signed and
 * unsigned headers; duplicated Signature, Digest, Date and certificate. A change to what was
 * signed must be refused; a harmless one may pass; nothing may end in a 5xx.
 */

import type { Rng } from "../prng.js";
import { type HeaderLine, serialize } from "../request.js";
import type { Expectation, Family } from "../types.js";
import { validSigned } from "./common.js";

const SIGNED = ["Date", "Digest", "X-Request-ID", "PSU-ID", "TPP-Redirect-URI"];
const CHECKED = ["Signature", "TPP-Signature-Certificate"];
const UNSIGNED = ["PSU-IP-Address", "Content-Type", "X-Fuzz-Note", "Accept", "User-Agent"];

interface Mutation {
  readonly label: string;
  /** The header it changes. */
  readonly name?: string;
  /** The request must be refused (something the signature or the checks depend on changed). */
  readonly breaks: boolean;
  apply(headers: HeaderLine[]): HeaderLine[];
}

const CONTROL_CHARS = ["\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\r", "\t"];

function indexOf(headers: HeaderLine[], name: string): number {
  return headers.findIndex(([n]) => n.toLowerCase() === name.toLowerCase());
}

function otherValue(rng: Rng, name: string, value: string): string {
  switch (name.toLowerCase()) {
    case "date":
      return new Date(Date.now() + rng.range(-30, 30) * 1000).toUTCString();
    case "digest":
      return `SHA-256=${Buffer.from(rng.bytes(32)).toString("base64")}`;
    case "signature":
      return value.replace(/signature="[^"]*"/, `signature="${rng.bytes(256).toString("base64")}"`);
    default:
      return `${value}${rng.pick(["x", "0", "-other", ", second"])}`;
  }
}

function mutation(rng: Rng, present: readonly string[]): Mutation {
  const kind = rng.weighted<string>([
    [3, "drop"],
    [4, "duplicate"],
    [2, "case"],
    [1, "oversize"],
    [3, "control"],
    [2, "non-ascii"],
    [2, "whitespace"],
    [1, "empty"],
    [1, "name-junk"],
  ]);
  const pool = [...SIGNED, ...CHECKED, ...UNSIGNED].filter(
    (n) => present.some((p) => p.toLowerCase() === n.toLowerCase()) || n === "X-Fuzz-Note",
  );
  const name = rng.weighted<string>([
    [5, rng.pick(SIGNED)],
    [4, rng.pick(CHECKED)],
    [2, rng.pick(pool)],
  ]);
  // Once a header is there twice (an earlier duplicate), changing one copy leaves the other: what
  // was signed may still be there, so whether it passes is not this mutation's to say.
  const single = present.filter((p) => p.toLowerCase() === name.toLowerCase()).length <= 1;
  const signedOrChecked = single && [...SIGNED, ...CHECKED].includes(name);
  // A changed value of a signed header breaks the signature; the Signature and certificate
  // values may be read leniently (trailing bytes, whitespace in base64), so only "any" there.
  const signed = single && SIGNED.includes(name);
  const done = (m: Omit<Mutation, "name">): Mutation => ({ ...m, name });
  const ensure = (headers: HeaderLine[]) => {
    if (indexOf(headers, name) < 0) headers.push([name, "fuzz-note"]);
    return indexOf(headers, name);
  };
  switch (kind) {
    case "drop":
      return done({
        label: `drop ${name}`,
        breaks: signedOrChecked,
        apply: (h) => h.filter(([n]) => n.toLowerCase() !== name.toLowerCase()),
      });
    case "duplicate": {
      const same = rng.chance(0.4);
      const before = rng.chance(0.3);
      return done({
        label: `duplicate ${name} (${same ? "same value" : "another value"}, ${before ? "first" : "after"})`,
        // Another value in a header the checks read must be refused: which one would the backend read?
        breaks: signedOrChecked && !same,
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const copy: HeaderLine = [
            rng.chance(0.5) ? n : n.toLowerCase(),
            same ? value : otherValue(rng, n, value),
          ];
          const out = [...h];
          out.splice(before ? at : out.length, 0, copy);
          return out;
        },
      });
    }
    case "case": {
      return done({
        label: `name case of ${name}`,
        breaks: false,
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const spelled = [...n].map((c) => (rng.chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join("");
          const out = [...h];
          out[at] = [spelled, value];
          return out;
        },
      });
    }
    case "oversize": {
      const size = rng.pick([4_000, 9_000, 17_000, 70_000]);
      return done({
        label: `oversize ${name} (+${size} bytes)`,
        breaks: signed,
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const out = [...h];
          out[at] = [n, value + "A".repeat(size)];
          return out;
        },
      });
    }
    case "control": {
      const c = rng.pick(CONTROL_CHARS);
      return done({
        label: `control char ${JSON.stringify(c)} in ${name}`,
        // A tab inside a value is legal; at the edges Node trims it.
        breaks: signed && c !== "\t",
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const cut = rng.int(value.length + 1);
          const out = [...h];
          out[at] = [n, value.slice(0, cut) + c + value.slice(cut)];
          return out;
        },
      });
    }
    case "non-ascii": {
      const bytes = rng.pick([
        "\xe6\xf8\xe5",
        "\xc3\xa6\xc3\xb8",
        "\xff",
        "\x80",
        "\xef\xbb\xbf",
        "\xf0\x9f\x92\xb6",
      ]);
      return done({
        label: `non-ASCII bytes ${JSON.stringify(bytes)} in ${name} after signing`,
        breaks: signed,
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const out = [...h];
          out[at] = [n, rng.chance(0.5) ? value + bytes : bytes + value];
          return out;
        },
      });
    }
    case "whitespace": {
      const ws = rng.pick([" ", "  ", "\t", " \t "]);
      const inner = rng.chance(0.3);
      return done({
        label: `${inner ? "inner" : "edge"} whitespace ${JSON.stringify(ws)} in ${name}`,
        breaks: inner && signed,
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const out = [...h];
          if (inner) {
            const cut = 1 + rng.int(Math.max(1, value.length - 1));
            out[at] = [n, value.slice(0, cut) + ws + value.slice(cut)];
          } else out[at] = [n, rng.chance(0.5) ? ws + value : value + ws];
          return out;
        },
      });
    }
    case "empty":
      return done({
        label: `empty ${name}`,
        breaks: signedOrChecked,
        apply: (h) => {
          const at = ensure(h);
          const out = [...h];
          out[at] = [h[at]![0], ""];
          return out;
        },
      });
    default: {
      const junk = rng.pick([" ", "\t", "(", "@", "\x7f", "\xe6", "_", "."]);
      return done({
        label: `name ${JSON.stringify(name)} with ${JSON.stringify(junk)}`,
        breaks: signedOrChecked,
        apply: (h) => {
          const at = ensure(h);
          const [n, value] = h[at]!;
          const cut = 1 + rng.int(n.length - 1);
          const out = [...h];
          out[at] = [rng.chance(0.5) ? n + junk : n.slice(0, cut) + junk + n.slice(cut), value];
          return out;
        },
      });
    }
  }
}

export const headers: Family = {
  name: "headers",
  weight: 3,
  async run(ctx) {
    const { rng } = ctx;
    const count = rng.range(1, 3);
    const requests = [];
    const writes = [];
    for (let i = 0; i < count; i++) {
      const valid = await validSigned(ctx, rng.chance(0.3) ? { headers: { "X-Fuzz-Note": "note" } } : {});
      let h = [...valid.request.headers];
      const applied: Mutation[] = [];
      const n = rng.weighted([
        [6, 1],
        [3, 2],
        [1, 3],
      ]);
      for (let m = 0; m < n; m++) {
        const mut = mutation(
          rng,
          h.map(([name]) => name),
        );
        h = mut.apply(h);
        applied.push(mut);
      }
      // Two mutations of one header can undo each other (a bad copy added, then emptied): only a
      // breaking mutation of a header no other mutation touched decides.
      const touches = (name: string) =>
        applied.filter((m) => m.name?.toLowerCase() === name.toLowerCase()).length;
      const breaks = applied.some((m) => m.breaks && (m.name === undefined || touches(m.name) === 1));
      const expect: Expectation = breaks ? "refuse" : "any";
      // An X-Request-ID the gateway echoes once, for the refusal's place in the order.
      const ids = h.filter(([name]) => name.toLowerCase() === "x-request-id").map(([, v]) => v);
      requests.push({
        tag: valid.tag,
        requestId: ids.length === 1 && ids[0] === valid.requestId ? valid.requestId : undefined,
        label: `${applied.map((m) => m.label).join(" + ")} on ${valid.describe}`,
        expect,
        tpp: valid.tpp,
      });
      writes.push({ data: serialize({ ...valid.request, headers: h }) });
    }
    await ctx.exchange({
      requests,
      writes: rng.chance(0.5) ? [{ data: Buffer.concat(writes.map((w) => w.data)) }] : writes,
      deadlineMs: 8_000,
    });
  },
};
