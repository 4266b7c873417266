/** Canonical lines and the hash chain (src/evidence/record.ts), and checkpoint signatures (checkpoint.ts). */

import { generateKeyPairSync, verify } from "node:crypto";
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
    const first = chain.append({ type: "request", ...request("r1") });
    const second = chain.append({ type: "request", ...request("r2") });
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
    for (const extra of [
      {},
      { body: "e30=", traceId: "0af7651916cd43dd8448eb211c80319c", validationReport: "r-1" },
      { requestId: undefined, role: undefined, signedBytes: undefined, signedBytesSha256: "ef".repeat(32) },
      // What JSON escapes, in the fields a client or a certificate chooses.
      { requestId: 'a"b\\c\u0001', target: "/v1/x?q=\u00e9\u2028\n", organizationId: "PSDÖ-\ud83d\ude00" },
    ]) {
      const content = { type: "request" as const, ...request("r1", extra) };
      const line = chain.append(content);
      expect(line).toBe(canonicalJson(JSON.parse(line)));
      // No field of the record is left out.
      expect(JSON.parse(line)).toMatchObject(JSON.parse(JSON.stringify(content)));
    }
  });

  it("counts records only, not the file, gap and checkpoint lines", () => {
    const chain = new EvidenceChain("gw-1");
    chain.append({ type: "file", time: "t", file: 1, count: 0, retainDays: 0 });
    chain.append({ type: "request", ...request("r1") });
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
      chain.append({ type: "request", ...request("r1") });
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
