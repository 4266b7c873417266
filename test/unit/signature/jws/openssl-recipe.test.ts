/**
 * A JAdES request signed the way a bank's published shell recipe does it, with the openssl binary
 * as the independent signer (ING's developer portal "Premium API" showcase scripts: a protected
 * header with `b64: false`, `crit ["sigT","sigD","b64"]`, sigD HttpHeaders over
 * `(request-target)`, `content-type` and `digest`; the lines `name: value` joined by LF with none
 * after the last, `(request-target)` as `<method lower-case> <path>`; `openssl dgst -sha256 -sign
 * key -sigopt rsa_padding_mode:pss`). That layout is our `etsi` payload style. The recipe names the
 * certificate by `x5t#S256` only; the gateway needs it in `x5c` (it keeps no directory of TPP
 * certificates), so x5c is added here. OpenSSL 3.0 signs PSS with the longest salt unless told
 * `rsa_pss_saltlen:digest`, which PS256 (RFC 7518 3.5) does not allow: refused, saying so.
 */

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isRejection } from "../../../../src/errors.js";
import { verifyJades } from "../../../../src/signature/jws/index.js";
import { b64u, NOW, rsa } from "./material.js";

const dir = mkdtempSync(join(tmpdir(), "psd2-jades-openssl-"));
const keyFile = join(dir, "key.pem");
writeFileSync(keyFile, rsa.privatePem);

/** openssl dgst over `input`, as the recipe runs it (extra -sigopt options appended). */
function opensslSign(input: string, ...sigopts: string[]): string {
  const inFile = join(dir, "input.txt");
  const sigFile = join(dir, "sig.bin");
  writeFileSync(inFile, input, "latin1");
  const extra = sigopts.flatMap((o) => ["-sigopt", o]);
  try {
    execFileSync("openssl", ["dgst", "-sha256", "-sign", keyFile, ...extra, "-out", sigFile, inFile], {
      stdio: "pipe",
    });
  } catch (error) {
    throw new Error(`this test needs the openssl binary on PATH: ${error}`);
  }
  return readFileSync(sigFile).toString("base64url");
}

const digest = `SHA-256=${createHash("sha256").update("").digest("base64")}`;
const message = {
  method: "GET",
  target: "/signed/greetings",
  headers: { "content-type": "application/x-www-form-urlencoded", digest },
};

function recipe(sigopts: string[]): string {
  const x5tS256 = createHash("sha256").update(rsa.der).digest("base64url");
  const sigT = new Date(NOW).toISOString().replace(/\.\d+Z$/, "Z");
  // The recipe's header text, spaces and member order as it writes them, with x5c added.
  const header = `{"b64":false,"x5t#S256":"${x5tS256}","x5c":["${Buffer.from(rsa.der).toString("base64")}"],"crit":[ "sigT", "sigD", "b64"],"sigT":"${sigT}","sigD":{ "pars":[ "(request-target)", "content-type",  "digest" ], "mId":"http://uri.etsi.org/19182/HttpHeaders"},"alg":"PS256"}`;
  const protectedB64 = b64u(header);
  const signingString = `(request-target): get /signed/greetings\ncontent-type: application/x-www-form-urlencoded\ndigest: ${digest}`;
  return `${protectedB64}..${opensslSign(`${protectedB64}.${signingString}`, "rsa_padding_mode:pss", ...sigopts)}`;
}

describe("a JAdES request signed by openssl per a bank's published recipe", () => {
  it("verifies with payloadStyle etsi when signed with a 32-byte salt", () => {
    const verified = verifyJades(recipe(["rsa_pss_saltlen:digest"]), message, {
      now: NOW,
      payloadStyle: "etsi",
    });
    if (isRejection(verified)) throw new Error(verified.text);
    expect(verified.header.pars).toEqual(["(request-target)", "content-type", "digest"]);
  });

  it("is refused in the obp-api layout (its lines each end in LF), naming the layout", () => {
    const refused = verifyJades(recipe(["rsa_pss_saltlen:digest"]), message, { now: NOW });
    expect(refused).toMatchObject({
      code: "SIGNATURE_INVALID",
      text: expect.stringContaining("each ending in LF"),
    });
  });

  it("the longest salt (OpenSSL 3.0's default for PSS) is refused, the text naming the fix", () => {
    const refused = verifyJades(recipe(["rsa_pss_saltlen:max"]), message, { now: NOW, payloadStyle: "etsi" });
    expect(refused).toMatchObject({
      code: "SIGNATURE_INVALID",
      text: expect.stringContaining("-sigopt rsa_pss_saltlen:digest"),
    });
  });
});
