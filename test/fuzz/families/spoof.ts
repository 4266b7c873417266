/**
 * Spoofed identity headers: a valid request carrying X-TPP-Organization-Id, X-TPP-Roles,
 * X-TPP-Name, X-TPP-Certificate-Fingerprint, X-PSU-Present, x-ssl-client-cert, and the forwarding
 * headers a backend believes about the client (Forwarded, X-Forwarded-For/-Proto/-Host/-Port/
 * -Prefix, X-Real-IP, True-Client-IP, X-Client-IP, CF-Connecting-IP), and their
 * `_`/`.`/case/odd-separator variants. Refused or forwarded, the backend must never see a spoofed
 * value, and a forwarded request carries exactly its signer's identity and the forwarding headers
 * the gateway wrote from what it saw (issue 25): the fuzz client's address, https, the Host it
 * sent and the gateway's port.
 *
 * Can fail (FUZZ_FAMILIES=spoof FUZZ_COUNT=3000 FUZZ_SEED=32): 0 violations with the gateway as
 * it is, 4,079 with every peer believed as a trusted proxy (src/ingress/forwarded.ts: 2,270
 * spoof-reached-backend, 1,809 backend-header).
 */

import { serialize } from "../request.js";
import type { Family } from "../types.js";
import { validSigned } from "./common.js";

const IDENTITY = [
  "X-TPP-Organization-Id",
  "X-TPP-Roles",
  "X-TPP-Name",
  "X-TPP-Certificate-Fingerprint",
  "X-PSU-Present",
  "x-ssl-client-cert",
  "X-Forwarded-For",
  "X-Forwarded-Proto",
  "Forwarded",
  "X-Forwarded-Host",
  "X-Forwarded-Port",
  "X-Forwarded-Prefix",
  "X-Real-IP",
  "True-Client-IP",
  "X-Client-IP",
  "CF-Connecting-IP",
];

/** The fuzz client's address: the harness connects from 127.0.0.1. */
const CLIENT_ADDRESS = "127.0.0.1";

export const spoof: Family = {
  name: "spoof",
  weight: 2,
  async run(ctx) {
    const { rng, pki } = ctx;
    const withoutPsu = rng.chance(0.5);
    const valid = await validSigned(ctx, withoutPsu ? { omit: ["PSU-IP-Address"] } : {});
    const marker = `SPOOF${valid.tag.replaceAll(".", "")}`;
    const spoofed: string[] = [];
    const added: [string, string][] = [];
    const count = rng.range(1, 4);
    for (let i = 0; i < count; i++) {
      const base = rng.pick(IDENTITY);
      const spelled = rng.weighted<string>([
        [4, base],
        [2, base.replaceAll("-", "_")],
        [1, base.toUpperCase()],
        [1, base.toLowerCase()],
        [1, base.replace("-", "_")],
        [1, base.replaceAll("-", ".")],
        [1, base.replace("-", ".")],
      ]);
      let value: string;
      if (/psu-present/i.test(base)) value = "true";
      else if (/ssl-client-cert/i.test(base))
        value = rng.chance(0.5) ? encodeURIComponent(pki.tppA.qwac.pem) : `${marker}cert`;
      else if (/roles/i.test(base)) value = `PSP_PI,PSP_IC,${marker}`;
      else if (/^forwarded$/i.test(base)) value = `for=${marker}${i};host=${marker}h${i};proto=http`;
      else value = `${marker}${i}`;
      if (value !== "true") spoofed.push(value);
      added.push([spelled, value]);
      if (rng.chance(0.2)) {
        added.push([spelled, `${marker}dup${i}`]);
        spoofed.push(`${marker}dup${i}`);
      }
    }
    const at = rng.int(valid.request.headers.length + 1);
    const headers = [...valid.request.headers];
    headers.splice(at, 0, ...added);
    await ctx.exchange({
      requests: [
        {
          tag: valid.tag,
          requestId: valid.requestId,
          label: `spoofed ${added.map(([n]) => n).join(", ")} on ${valid.describe}${withoutPsu ? " (no PSU-IP-Address)" : ""}`,
          expect: "any",
          tpp: valid.tpp,
          spoofed,
          backendHeaders: {
            "x-psu-present": withoutPsu ? "false" : "true",
            // The gateway's own, from the connection (serialize writes Host: localhost).
            "x-forwarded-for": CLIENT_ADDRESS,
            "x-real-ip": CLIENT_ADDRESS,
            "x-forwarded-proto": "https",
            "x-forwarded-host": "localhost",
            "x-forwarded-port": String(ctx.gatewayPort),
            forwarded: `for=${CLIENT_ADDRESS};host=localhost;proto=https`,
          },
        },
      ],
      writes: [{ data: serialize({ ...valid.request, headers }) }],
    });
  },
};
