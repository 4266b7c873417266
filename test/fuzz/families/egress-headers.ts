/**
 * Hostile headers from the application side of the egress gateway: its own Signature, Digest,
 * Date and TPP-Signature-Certificate (any case, repeated, `_` look-alikes) that the gateway must
 * replace; repeated PSU-ID, X-Request-ID and TPP-Redirect-URI; non-ASCII values (Latin-1 and
 * UTF-8 bytes); a header over Node's 16 KiB head limit, or close under it; header lines that are
 * not HTTP (a space or junk in the name, no colon, NUL, a lone CR, obs-fold); Connection naming
 * the headers the gateway writes or signs; Host spelt every way (case, port, a trailing dot,
 * none) against the Host-routed profile, or twice (refused 400, as ingress does); an Expect the
 * gateway does not know.
 *
 * Whatever is forwarded must reach the bank signed (the harness verifies it) and carry none of
 * the application's copies of the headers the gateway writes; whatever is refused is a
 * tppMessages answer and never reaches the bank.
 */

import type { Rng } from "../prng.js";
import type { HeaderLine } from "../request.js";
import type { EgressBanks, EgressCaseContext, EgressFamily, Expectation, ExpectedRequest } from "../types.js";
import { type AppRequest, appRequest, appRequestId, bytesOf, forwardOf, jsonBody } from "./egress-common.js";

/** The headers only the gateway writes, as an application might spell them. */
const GATEWAY_WRITTEN = ["Signature", "Digest", "Date", "TPP-Signature-Certificate"];

function spelled(rng: Rng, name: string): string {
  return rng.weighted<string>([
    [4, name],
    [2, name.toLowerCase()],
    [1, name.toUpperCase()],
    [1, name.replaceAll("-", "_")],
  ]);
}

/** Which profile the gateway must pick for this Host header and target (docs/egress.md: Host first, then the prefix). */
export function routeOf(
  banks: EgressBanks,
  host: string | undefined,
  target: string,
): "bank" | "alt" | undefined {
  if (host !== undefined) {
    const value = host.trim().toLowerCase();
    const colon = value.lastIndexOf(":");
    if ((colon >= 0 ? value.slice(0, colon) : value) === banks.altHost) return "alt";
  }
  const p = banks.prefix;
  if (target === p || target.startsWith(`${p}/`) || target.startsWith(`${p}?`)) return "bank";
  return undefined;
}

const MALFORMED_LINES: readonly HeaderLine[] = [
  ["X Fuzz", "space in the name"],
  ["X-Fuzz ", "space before the colon"],
  ["X(Fuzz)", "junk in the name"],
  ["", "empty name"],
  ["X-Fuzz", "nul \x00 in the value"],
  ["X-Fuzz", "lone \r cr"],
  ["X-Fuzz", "ctl \x01 char"],
  ["X-Fuzz-\xe6", "non-ASCII name"],
  ["Content-Length", "12abc"],
];

interface Variant {
  readonly label: string;
  readonly app: AppRequest;
  readonly expect: Expectation;
  readonly spoofed?: readonly string[];
  readonly backendHeaders?: Readonly<Record<string, string>>;
  /** Bytes to send instead of the serialised request. */
  readonly bytes?: Buffer;
  readonly allow5xx?: readonly number[];
  readonly refusedWith?: ExpectedRequest["refusedWith"];
}

function variant(ctx: EgressCaseContext): Variant {
  const { rng, banks } = ctx;
  const kind = rng.weighted<string>([
    [5, "app-copies"],
    [3, "repeated"],
    [3, "non-ascii"],
    [2, "oversized"],
    [3, "malformed"],
    [2, "connection"],
    [3, "host"],
    [1, "expect"],
  ]);
  const withBody = rng.chance(0.5);
  const base = () => appRequest(ctx, withBody ? { body: jsonBody(rng) } : {});
  switch (kind) {
    case "app-copies": {
      const app = base();
      const marker = `APPCOPY${app.tag.replaceAll(".", "")}`;
      const lines: HeaderLine[] = [];
      const spoofed: string[] = [];
      for (let i = 0, n = rng.range(1, 5); i < n; i++) {
        const name = rng.pick(GATEWAY_WRITTEN);
        const value = `${marker}${i}`;
        const shaped =
          name === "Signature"
            ? `keyId="${value}",algorithm="rsa-sha256",headers="date",signature="${Buffer.from(value).toString("base64")}"`
            : name === "Digest"
              ? `SHA-256=${value}`
              : value;
        lines.push([spelled(rng, name), shaped]);
        spoofed.push(value);
      }
      const headers = [...app.request.headers];
      for (const line of lines) headers.splice(rng.int(headers.length + 1), 0, line);
      return {
        label: `application copies of ${lines.map(([n]) => n).join(", ")}`,
        app: { ...app, request: { ...app.request, headers } },
        expect: "forward",
        spoofed,
      };
    }
    case "repeated": {
      const app = base();
      const name = rng.pick(["PSU-ID", "X-Request-ID", "TPP-Redirect-URI", "Accept", "X-Fuzz-Note"]);
      const first = name === "X-Request-ID" ? appRequestId() : `first-${rng.int(1000)}`;
      const second = name === "X-Request-ID" ? appRequestId() : `second-${rng.int(1000)}`;
      const headers = app.request.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
      const again = spelled(rng, name);
      headers.push([name, first], [again, second]);
      // Node joins repeated headers it does not know with ", ": the bank gets (and the signature
      // covers) that; a `_` spelling is another header, passed on beside it.
      const same = again.toLowerCase() === name.toLowerCase();
      return {
        label: `${name} twice${same ? "" : ` (then as ${again})`}`,
        app: { ...app, request: { ...app.request, headers } },
        expect: "forward",
        backendHeaders: { [name.toLowerCase()]: same ? `${first}, ${second}` : first },
      };
    }
    case "non-ascii": {
      const app = base();
      const text = rng.pick(["Åse Ødegård", "Blåbær", "naïve café", "日本", "€"]);
      const wire = rng.chance(0.5)
        ? Buffer.from(text, "utf8").toString("latin1")
        : text.replace(/[^\x00-\xff]/g, "?");
      const name = rng.pick(["PSU-ID", "TPP-Redirect-URI", "X-Fuzz-Note", "PSU-Corporate-ID"]);
      const value = name === "TPP-Redirect-URI" ? `https://tpp.example/${wire}` : wire;
      const headers = app.request.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
      headers.push([name, value]);
      return {
        label: `non-ASCII bytes in ${name}`,
        app: { ...app, request: { ...app.request, headers } },
        expect: "forward",
        backendHeaders: { [name.toLowerCase()]: value },
      };
    }
    case "oversized": {
      const app = base();
      const over = rng.chance(0.6);
      // Node reads at most 16 KiB of request head; over it the gateway must refuse.
      const size = over ? rng.range(16_500, 40_000) : rng.range(8_000, 14_000);
      const headers = [...app.request.headers];
      if (rng.chance(0.5)) headers.push(["X-Fuzz-Big", "b".repeat(size)]);
      else for (let i = 0; i * 40 < size; i++) headers.push([`X-Fuzz-${i}`, "v".repeat(30)]);
      return {
        label: `${over ? "over" : "under"} the head limit (${size} bytes of headers)`,
        app: { ...app, request: { ...app.request, headers } },
        expect: over ? "refuse" : "forward",
      };
    }
    case "malformed": {
      const app = base();
      const line = rng.pick(MALFORMED_LINES);
      const headers = [...app.request.headers];
      headers.splice(rng.int(headers.length + 1), 0, line);
      return {
        label: `header line ${JSON.stringify(`${line[0]}: ${line[1]}`)}`,
        app: { ...app, request: { ...app.request, headers } },
        expect: "refuse",
      };
    }
    case "connection": {
      const app = base();
      const named = rng
        .shuffle([
          "Date",
          "Digest",
          "Signature",
          "X-Request-ID",
          "PSU-ID",
          "TPP-Redirect-URI",
          "keep-alive",
          "TE",
        ])
        .slice(0, rng.range(1, 3));
      const upgrade = rng.chance(0.2);
      if (upgrade) named.push("Upgrade");
      const headers = [...app.request.headers, ["Connection", named.join(", ")] as HeaderLine];
      if (named.includes("TE")) headers.push(["TE", "trailers"]);
      if (upgrade) headers.push(["Upgrade", rng.pick(["websocket", "h2c", "TLS/1.2"])]);
      return {
        label: `Connection: ${named.join(", ")}`,
        app: { ...app, request: { ...app.request, headers } },
        expect: "forward",
      };
    }
    case "host": {
      const host = rng.pick<string | null>([
        banks.altHost.toUpperCase(),
        `${banks.altHost}:8090`,
        `${banks.altHost}.`,
        ` ${banks.altHost}`,
        `${banks.altHost}:`,
        `x.${banks.altHost}`,
        "localhost",
        "",
        null,
      ]);
      const under = rng.chance(0.5);
      const app = appRequest(ctx, { profile: under ? "bank" : "alt", host: host ?? null });
      const twice = host !== null && rng.chance(0.2);
      const headers = twice
        ? [...app.request.headers, ["Host", banks.altHost] as HeaderLine]
        : app.request.headers;
      const route = routeOf(banks, host ?? undefined, app.request.target);
      const bankBase = route === "alt" ? banks.altBase : banks.bankBase;
      const below = route === "alt" ? app.request.target : app.request.target.slice(banks.prefix.length);
      return {
        label: `Host ${JSON.stringify(host)}${twice ? " then the alt Host" : ""}, target ${app.request.target.replace(/[?&]fz=.*/, "")}`,
        app: {
          ...app,
          request: { ...app.request, headers },
          backendTarget: `${bankBase}${below}`,
        },
        // Two Host lines: refused at the host step before any bank is picked (RFC 9112 3.2).
        expect: twice || route === undefined ? "refuse" : "forward",
        ...(twice ? { refusedWith: { status: 400, code: "FORMAT_ERROR" } } : {}),
      };
    }
    default: {
      const app = appRequest(ctx, { body: jsonBody(rng) });
      const value = rng.pick(["100-continue", "200-ok", "100-continue, x", "nothing"]);
      return {
        label: `Expect: ${value}`,
        app: { ...app, request: { ...app.request, headers: [...app.request.headers, ["Expect", value]] } },
        expect: value === "100-continue" ? "forward" : "any",
      };
    }
  }
}

export const egressHeaders: EgressFamily = {
  name: "egress-headers",
  weight: 3,
  target: "egress",
  async run(ctx) {
    const v = variant(ctx);
    const forwarded = forwardOf(v.app);
    const expected: ExpectedRequest = {
      ...forwarded,
      label: `${v.label} on ${v.app.describe}`,
      expect: v.expect,
      ...(v.spoofed ? { spoofed: v.spoofed } : {}),
      ...(v.backendHeaders ? { backendHeaders: v.backendHeaders } : {}),
      ...(v.allow5xx ? { allow5xx: v.allow5xx } : {}),
      ...(v.refusedWith ? { refusedWith: v.refusedWith } : {}),
    };
    await ctx.exchange({ requests: [expected], writes: [{ data: v.bytes ?? bytesOf(v.app) }] });
  },
};
