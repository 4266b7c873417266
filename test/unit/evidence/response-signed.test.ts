/** What a bank signed, rebuilt from its answer for the response record (src/evidence/response-signed.ts). */

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SIGNED_BYTES_INLINE } from "../../../src/evidence/record.js";
import { responseSigned } from "../../../src/evidence/response-signed.js";

/** A detached JWS as UK OB sends it: the protected header, no payload, the signature. */
function detached(header: object, signature = Buffer.from("signature-bytes")): string {
  return `${Buffer.from(JSON.stringify(header)).toString("base64url")}..${signature.toString("base64url")}`;
}

describe("responseSigned", () => {
  it("UK OB: the JWS signing input over the body, base64url or (b64: false) as it is", () => {
    const body = Buffer.from('{"Data":{"Status":"Accepted"}}');
    for (const [header, payload] of [
      [{ alg: "PS256" }, body.toString("base64url")],
      [{ alg: "PS256", b64: false, crit: ["b64"] }, body.toString("latin1")],
    ] as const) {
      const jws = detached(header);
      const signed = responseSigned({ "x-jws-signature": jws }, body, { dialect: "uk-ob", status: 200 });
      expect(Buffer.from(signed!.signedBytes!, "base64").toString("latin1")).toBe(
        `${jws.split(".")[0]}.${payload}`,
      );
      expect(signed).toMatchObject({
        signature: Buffer.from("signature-bytes").toString("base64"),
        signedWith: "uk-ob:PS256",
      });
    }
  });

  it("signed bytes over the inline bound are kept as their SHA-256", () => {
    const body = Buffer.alloc(SIGNED_BYTES_INLINE, "a");
    const jws = detached({ alg: "PS256", b64: false, crit: ["b64"] });
    const signed = responseSigned({ "x-jws-signature": jws }, body, { dialect: "uk-ob", status: 200 });
    expect(signed?.signedBytes).toBeUndefined();
    expect(signed?.signedBytesSha256).toBe(
      createHash("sha256")
        .update(Buffer.concat([Buffer.from(`${jws.split(".")[0]}.`), body]))
        .digest("hex"),
    );
  });

  it.each([
    ["cavage", { signature: "not a signature header" }],
    ["jades", { "x-jws-signature": "no-dots" }],
    // JAdES without sigD.pars: nothing to rebuild.
    ["jades", { "x-jws-signature": detached({ alg: "PS256", b64: false }) }],
    // RFC 9421 without the request it answers: its ;req components cannot be rebuilt.
    ["rfc9421", { "signature-input": 'sig1=("@status");tag="fapi-2-response"', signature: "sig1=:AAAA:" }],
    ["an unknown dialect", { signature: "x" }],
  ] as const)("%s: an answer whose signature cannot be read has none (%j)", (dialect, headers) => {
    expect(responseSigned(headers, Buffer.alloc(0), { dialect, status: 200 })).toBeUndefined();
  });
});
