/** Canonical lines and the hash chain (src/evidence/record.ts), and checkpoint signatures (checkpoint.ts). */

import { createHash, generateKeyPairSync, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  checkpointKeyOf,
  checkpointSignatureHolds,
  newCheckpointKey,
  signedCheckpoint,
} from "../../../src/evidence/checkpoint.js";
import {
  type CheckpointLine,
  canonicalJson,
  checkpointStatement,
  EvidenceChain,
  GENESIS,
  isoTime,
  SIGNED_BYTES_INLINE,
  sha256Hex,
} from "../../../src/evidence/record.js";
import { request } from "./evidence-fixtures.js";

describe("canonical JSON", () => {
  it("sorts keys at every level, drops undefined and has no spaces: one spelling per value", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: "é" }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"y":"é","z":1}]},"b":1}',
    );
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe("the chain", () => {
  it("starts at seq 0 from the genesis hash; each line holds the SHA-256 of the one before", () => {
    const chain = new EvidenceChain("gw-1");
    const first = chain.appendRequest(request("r1"));
    const second = chain.appendRequest(request("r2"));
    const one = JSON.parse(first);
    const two = JSON.parse(second);
    expect(one).toMatchObject({ chain: "gw-1", seq: 0, prev: GENESIS, requestId: "r1" });
    expect(two).toMatchObject({ seq: 1, prev: sha256Hex(first), requestId: "r2" });
    expect(first).toBe(canonicalJson(one));
    expect(first).not.toContain("\n");
    expect(chain.state).toEqual({ seq: 2, prev: sha256Hex(second), count: 2 });
  });

  it("writes a request line as canonicalJson would, whichever optional fields it has", () => {
    const chain = new EvidenceChain("gw-1");
    const big = Buffer.alloc(SIGNED_BYTES_INLINE + 1, 0x61);
    for (const [extra, expected] of [
      [{}, {}],
      [
        {
          body: Buffer.from("{}"),
          bodySha256: createHash("sha256").update("{}").digest(),
          traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
          validationReport: "r-1",
        },
        {
          body: "e30=",
          bodyDigest: `sha-256=:${createHash("sha256").update("{}").digest("base64")}:`,
          traceId: "0af7651916cd43dd8448eb211c80319c",
          validationReport: "r-1",
        },
      ],
      [
        { requestId: undefined, role: undefined, signedBytes: big, traceparent: "not one" },
        { signedBytesSha256: createHash("sha256").update(big).digest("hex") },
      ],
      // What JSON escapes, in the fields a client or a certificate chooses.
      [
        { requestId: 'a"b\\c\u0001', target: "/v1/x?q=\u00e9\u2028\n", organizationId: "PSDÖ-\ud83d\ude00" },
        { requestId: 'a"b\\c\u0001', target: "/v1/x?q=\u00e9\u2028\n", organizationId: "PSDÖ-\ud83d\ude00" },
      ],
    ] as const) {
      const capture = request("r1", extra);
      const line = chain.appendRequest(capture);
      expect(line).toBe(canonicalJson(JSON.parse(line)));
      // Every field of the record, encoded (base64, ISO time, the digest of no body without one).
      const parsed = JSON.parse(line);
      expect(parsed).toEqual({
        chain: "gw-1",
        seq: parsed.seq,
        prev: parsed.prev,
        type: "request",
        time: "2026-01-01T00:00:00.000Z",
        method: capture.method,
        target: capture.target,
        organizationId: capture.organizationId,
        certificate: capture.certificate,
        dialect: capture.dialect,
        signedWith: capture.signedWith,
        signature: Buffer.from(capture.signature).toString("base64"),
        bodyDigest: `sha-256=:${createHash("sha256").digest("base64")}:`,
        indication: "TOTAL_PASSED",
        verdict: "accepted",
        ...(capture.requestId === undefined ? {} : { requestId: capture.requestId }),
        ...(capture.role === undefined ? {} : { role: capture.role }),
        ...(capture.signedBytes.length > SIGNED_BYTES_INLINE
          ? {}
          : { signedBytes: Buffer.from(capture.signedBytes).toString("base64") }),
        ...expected,
      });
    }
  });

  // The writer spells each record's time with the second's text made once (isoTime).
  it.each([
    0,
    999,
    Date.UTC(2026, 0, 1),
    Date.UTC(2026, 10, 29, 3, 3, 38, 7),
    Date.UTC(2026, 10, 29, 3, 3, 38, 70),
    Date.UTC(2026, 10, 29, 3, 3, 38, 700),
    Date.UTC(2026, 10, 29, 3, 3, 39, 0),
    Date.UTC(2024, 1, 29, 23, 59, 59, 999),
    253_402_300_799_999,
    253_402_300_800_000,
    -1,
    1.5,
  ])("spells %d as toISOString does", (at) => {
    expect(isoTime(at)).toBe(new Date(at).toISOString());
    // And again, from the second it keeps.
    expect(isoTime(at)).toBe(new Date(at).toISOString());
  });

  it("counts records only, not the file, gap and checkpoint lines", () => {
    const chain = new EvidenceChain("gw-1");
    chain.append({ type: "file", time: "t", file: 1, count: 0, retainDays: 0 });
    chain.appendRequest(request("r1"));
    chain.append({ type: "gap", time: "t", dropped: 3, reason: "queue-full" });
    expect(chain.state.count).toBe(1);
    expect(chain.state.seq).toBe(3);
  });
});

describe("checkpoints", () => {
  for (const [name, key] of [
    ["the folder's own P-256 key", newCheckpointKey()],
    ["an RSA QSealC key", checkpointKeyOf(generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey)],
    ["an Ed25519 key", checkpointKeyOf(generateKeyPairSync("ed25519").privateKey)],
  ] as const) {
    it(`signs the chain's last hash and count with ${name}; any change breaks it`, () => {
      const chain = new EvidenceChain("gw-1");
      chain.appendRequest(request("r1"));
      const before = chain.state;
      const line = JSON.parse(
        chain.append(signedCheckpoint(chain, key, "2026-01-01T00:00:00.000Z")),
      ) as CheckpointLine;
      expect(line).toMatchObject({
        type: "checkpoint",
        seq: before.seq,
        prev: before.prev,
        count: 1,
        key: key.id,
      });
      expect(checkpointSignatureHolds(line, key.publicKey)).toBe(true);
      // What openssl checks: the plain statement and the signature as written.
      const hash = key.alg === "ed25519" ? null : "sha256";
      expect(
        verify(
          hash,
          Buffer.from(checkpointStatement(line)),
          key.publicKey,
          Buffer.from(line.signature, "base64"),
        ),
      ).toBe(true);
      expect(checkpointSignatureHolds({ ...line, count: 2 }, key.publicKey)).toBe(false);
      expect(checkpointSignatureHolds({ ...line, prev: GENESIS }, key.publicKey)).toBe(false);
      expect(checkpointSignatureHolds(line, newCheckpointKey().publicKey)).toBe(false);
    });
  }
});
