/**
 * The integrity checks of decoding: the SHA-256 a publisher declared for the bytes, and the
 * SHA-256 sidecar the EBA puts beside the JSON in its ZIP (checked whenever a ZIP holds one).
 */

import { createHash } from "node:crypto";
import { ebaRegisterDocument, ebaRegisterZip } from "@psd2-gateway/dev-pki";
import { strToU8, unzipSync, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { decodeRegister } from "../../../src/trust/register-worker.js";

const json = strToU8(
  JSON.stringify(
    ebaRegisterDocument([{ organizationId: "PSDFI-FINFSA-1", name: "One Oy", roles: ["PSP_AI"] }]),
  ),
);
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const OTHER = sha256(strToU8("something else"));

describe("declared SHA-256 of the bytes", () => {
  const zip = zipSync({ "r.json": json });

  it("decodes bytes that hash as declared (any case)", () => {
    expect(decodeRegister(zip, { sha256: sha256(zip).toUpperCase() }).entries).toHaveLength(1);
  });

  it("refuses bytes that do not, naming both hashes", () => {
    expect(() => decodeRegister(zip, { sha256: OTHER })).toThrow(
      `SHA-256 check failed: the file hashes to ${sha256(zip)}, its publisher declared ${OTHER}`,
    );
  });
});

describe("SHA-256 sidecar in the ZIP", () => {
  const name = "download-PSDMD-202608241600.json";
  it.each<{ name: string; files: Record<string, Uint8Array> }>([
    { name: "none", files: { [name]: json } },
    {
      name: "`<json>.sha256`, as sha256sum writes it",
      files: { [name]: json, [`${name}.sha256`]: strToU8(`${sha256(json)}  ${name}\n`) },
    },
    {
      name: "`<base>.sha256`, the hash alone",
      files: { [name]: json, "download-PSDMD-202608241600.sha256": strToU8(sha256(json)) },
    },
    {
      name: "the only sidecar beside the only JSON, another name",
      files: { [name]: json, "checksum.SHA256": strToU8(sha256(json).toUpperCase()) },
    },
    {
      name: "a sidecar of another JSON in the ZIP",
      files: { [name]: json, "small.json": strToU8("[]"), "small.json.sha256": strToU8(OTHER) },
    },
  ])("accepts a ZIP with $name", ({ files }) => {
    expect(decodeRegister(zipSync(files)).entries).toHaveLength(1);
  });

  it.each<{ name: string; files: Record<string, Uint8Array>; error: string }>([
    {
      name: "a sidecar with another hash",
      files: { [name]: json, [`${name}.sha256`]: strToU8(`${OTHER}  ${name}\n`) },
      error: `SHA-256 check failed: ${name} hashes to ${sha256(json)}, its sidecar ${name}.sha256 says ${OTHER}`,
    },
    {
      name: "a sidecar that holds no hash",
      files: { [name]: json, [`${name}.sha256`]: strToU8("see the website") },
      error: `${name}.sha256 in the register ZIP does not start with a SHA-256 in hex`,
    },
    {
      name: "a sidecar with a longer hex run (not a SHA-256)",
      files: { [name]: json, [`${name}.sha256`]: strToU8(`${sha256(json)}00`) },
      error: "does not start with a SHA-256 in hex",
    },
  ])("refuses a ZIP with $name", ({ files, error }) => {
    expect(() => decodeRegister(zipSync(files))).toThrow(error);
  });

  it("the dev register's ZIP carries a sidecar that checks", () => {
    const zip = ebaRegisterZip(JSON.parse(new TextDecoder().decode(json)));
    expect(Object.keys(unzipSync(zip))).toContain("eba-psd2-register.json.sha256");
    expect(decodeRegister(zip).entries).toHaveLength(1);
  });
});
