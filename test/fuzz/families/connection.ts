/**
 * `Connection` naming headers: a signed, PSD2 or identity header listed as hop-by-hop would be
 * stripped by the forwarder after it was verified. Refused, or forwarded with every named header
 * intact (the backend sees the signed values and the gateway's identity headers).
 */

import { getHeader, serialize } from "../request.js";
import type { Family } from "../types.js";
import { validSigned } from "./common.js";

const NAMED = [
  "PSU-ID",
  "psu-id",
  "Digest",
  "Signature",
  "Date",
  "X-Request-ID",
  "TPP-Redirect-URI",
  "PSU-IP-Address",
  "TPP-Signature-Certificate",
  "Content-Type",
  "Content-Length",
  "Host",
  "X-TPP-Organization-Id",
  "X-TPP-Roles",
  "X-PSU-Present",
  "x-forwarded-for",
  "keep-alive",
  "close",
  "Upgrade",
  "TE",
];

const CHECKED_AT_BACKEND = [
  "psu-id",
  "digest",
  "date",
  "x-request-id",
  "tpp-redirect-uri",
  "psu-ip-address",
  "content-type",
  "signature",
];

export const connection: Family = {
  name: "connection",
  weight: 1,
  async run(ctx) {
    const { rng } = ctx;
    const valid = await validSigned(ctx);
    const names = rng.shuffle([...NAMED]).slice(0, rng.range(1, 3));
    const value = rng.pick([
      names.join(", "),
      `keep-alive, ${names.join(",")}`,
      ` ${names.join(" , ")} `,
      names.map((n) => n.toUpperCase()).join(","),
    ]);
    const headers = [...valid.request.headers];
    const lines: [string, string][] = rng.chance(0.3)
      ? names.map((n) => ["Connection", n] as [string, string])
      : [["Connection", value]];
    if (names.includes("Upgrade")) lines.push(["Upgrade", "websocket"]);
    if (names.includes("TE")) lines.push(["TE", "trailers"]);
    headers.splice(rng.int(headers.length + 1), 0, ...lines);
    const backendHeaders: Record<string, string> = {};
    for (const name of CHECKED_AT_BACKEND) {
      const sent = getHeader(valid.request, name);
      if (sent !== undefined) backendHeaders[name] = sent;
    }
    const closes = names.includes("close");
    await ctx.exchange({
      requests: [
        {
          tag: valid.tag,
          requestId: valid.requestId,
          label: `${lines.map(([n, v]) => `${n}: ${v}`).join(" / ")} on ${valid.describe}${closes ? "" : ""}`,
          expect: "any",
          tpp: valid.tpp,
          backendHeaders,
        },
      ],
      writes: [{ data: serialize({ ...valid.request, headers }) }],
    });
  },
};
