/** RFC 7797 section 4: our signing input reproduces the RFC's HMAC signatures; HS256 stays refused. */

import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import {
  readDetachedJws,
  readUkObHeader,
  signingInput,
  verifyJades,
} from "../../../../src/signature/jws/index.js";
import { INTEROP_DIR } from "../../../helpers/interop-corpus.js";

const corpus = JSON.parse(readFileSync(new URL("jws/rfc7797-examples.json", INTEROP_DIR), "utf8")) as {
  hmacKeyJwk: { k: string };
  payload: string;
  encoded: { protectedHeader: string; jws: string };
  unencodedDetached: { protectedHeader: string; jws: string };
};
const key = Buffer.from(corpus.hmacKeyJwk.k, "base64url");
const hmac = (input: Buffer) => createHmac("sha256", key).update(input).digest("base64url");

describe("RFC 7797 section 4", () => {
  it("4.2 (b64 false, detached): ASCII(BASE64URL(header)) || '.' || payload gives the RFC's signature", () => {
    const jws = readDetachedJws(corpus.unencodedDetached.jws, "x-jws-signature");
    if (isRejection(jws)) throw new Error(jws.text);
    expect(jws.header).toEqual(JSON.parse(corpus.unencodedDetached.protectedHeader));
    const input = signingInput(jws.protectedB64, Buffer.from(corpus.payload, "utf8"));
    expect(input.toString("latin1")).toBe(`${jws.protectedB64}.$.02`);
    expect(hmac(input)).toBe(jws.signature.toString("base64url"));
  });

  it("4.1 (b64 true): the base64url payload in the signing input gives the RFC's signature", () => {
    const [p, payload, s] = corpus.encoded.jws.split(".") as [string, string, string];
    expect(Buffer.from(payload, "base64url").toString()).toBe(corpus.payload);
    // The UK OB path builds the same input from the raw body.
    const input = signingInput(p, Buffer.from(Buffer.from(corpus.payload).toString("base64url"), "latin1"));
    expect(hmac(input)).toBe(s);
    expect(isRejection(readDetachedJws(corpus.encoded.jws, "x-jws-signature"))).toBe(true); // attached payload
  });

  it("the verifiers refuse HS256 whatever they are configured with", () => {
    const jades = verifyJades(
      corpus.unencodedDetached.jws,
      { headers: {} },
      { now: 0, algorithms: ["RS256", "PS256", "ES256"] },
    );
    const ukob = readUkObHeader(corpus.unencodedDetached.jws, {
      now: 0,
      allowB64False: true,
      algorithms: ["PS256", "RS256"],
    });
    for (const r of [jades, ukob]) {
      expect(isRejection(r) && r.code).toBe("SIGNATURE_INVALID");
      expect(isRejection(r) && r.text).toMatch(/HS256' is refused/);
    }
  });
});
