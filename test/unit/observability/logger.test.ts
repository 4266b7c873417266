/**
 * The logger's redaction, through a real pino writing JSON lines: signatures, certificates, keys,
 * passwords and PSU identifiers in headers never reach the log as they are. And the PSU-ID hash.
 */

import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, hashPsuId } from "../../../src/observability/logger.js";

const SECRET = "s3cr3t-value-that-must-not-appear";

function logged(object: Record<string, unknown>): { raw: string; line: Record<string, unknown> } {
  let raw = "";
  const destination = new Writable({
    write(chunk, _encoding, done) {
      raw += chunk.toString();
      done();
    },
  });
  createLogger("info", { destination }).info(object, "line");
  return { raw, line: JSON.parse(raw) as Record<string, unknown> };
}

describe("createLogger's redaction", () => {
  it.each([
    ["signature", { signature: SECRET }, ["signature"]],
    ["certificate", { certificate: SECRET }, ["certificate"]],
    [
      "key, privateKey, password, passphrase",
      { key: SECRET, privateKey: SECRET, password: SECRET, passphrase: SECRET },
      ["key"],
    ],
    ["headers.signature", { headers: { signature: SECRET, "x-request-id": "r1" } }, ["headers", "signature"]],
    [
      "headers' TPP-Signature-Certificate",
      { headers: { "tpp-signature-certificate": SECRET } },
      ["headers", "tpp-signature-certificate"],
    ],
    ["headers' PSU-ID", { headers: { "psu-id": SECRET } }, ["headers", "psu-id"]],
    [
      "headers' PSU-Corporate-ID",
      { headers: { "psu-corporate-id": SECRET } },
      ["headers", "psu-corporate-id"],
    ],
    [
      "a nested object's signature and key",
      { tpp: { signature: SECRET, key: SECRET } },
      ["tpp", "signature"],
    ],
    [
      "a nested object's password and passphrase",
      { tls: { password: SECRET, passphrase: SECRET } },
      ["tls", "password"],
    ],
  ])("censors %s", (_what, object, path) => {
    const { raw, line } = logged(object);
    expect(raw).not.toContain(SECRET);
    let value: unknown = line;
    for (const name of path) value = (value as Record<string, unknown>)[name];
    expect(value).toBe("[redacted]");
  });

  it("leaves everything else as it is", () => {
    const { line } = logged({ requestId: "r1", headers: { "x-request-id": "r1", date: "Tue, 01 Sep 2026" } });
    expect(line).toMatchObject({
      msg: "line",
      service: "psd2-gateway",
      requestId: "r1",
      headers: { "x-request-id": "r1", date: "Tue, 01 Sep 2026" },
    });
  });
});

describe("hashPsuId", () => {
  it("is 16 hex characters, the same for the same PSU, different for another, never the PSU-ID", () => {
    const a = hashPsuId("PSU-4711");
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(hashPsuId("PSU-4711")).toBe(a);
    expect(hashPsuId("PSU-4712")).not.toBe(a);
    expect(a).not.toContain("4711");
  });
});
