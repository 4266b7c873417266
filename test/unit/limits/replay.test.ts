/**
 * Replay records: keyed on what was signed (never on the signature bytes), fixed size, expired by
 * time, and bounded.
 */

import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import { MemoryLimitStore } from "../../../src/limits/memory-store.js";
import { RedisLimitStore } from "../../../src/limits/redis-store.js";
import { checkReplay, type ReplayStore, replayKeyFor } from "../../../src/limits/replay.js";
import {
  type AlgorithmName,
  buildKeyId,
  canonicalAlgorithm,
  expectedKeyId,
  type KeyIdTarget,
  matchKeyId,
  parseSignatureHeader,
  type SignatureParams,
  verifySignatureOver,
} from "../../../src/signature/index.js";
import { describeWithRedis, type RedisServer, startRedisServer } from "../../helpers/redis-server.js";

const SIGNED = Buffer.from("(request-target): get /v1/accounts\ndate: Mon, 23 Nov 2026 08:00:00 GMT");

describe("the replay key", () => {
  it("is a fixed-size string whatever the size of what was signed", () => {
    const small = replayKeyFor("SN=1,CA=CN=x", "rsa-sha256", SIGNED);
    const large = replayKeyFor(`SN=1,CA=CN=${"x".repeat(13_000)}`, "rsa-sha256", Buffer.alloc(50_000, 0x61));
    expect(small).toMatch(/^rp\|[A-Za-z0-9_-]{22}$/);
    expect(large).toHaveLength(small.length);
  });

  it("differs for keyIds and algorithms whose characters differ but whose UTF-8 lengths would agree", () => {
    // Lengths are counted in bytes: 'é' is one char, two bytes.
    expect(replayKeyFor("é", "a", SIGNED)).not.toBe(replayKeyFor("\u00c3", "\u00a9a", SIGNED));
    expect(replayKeyFor("ab", "", SIGNED)).not.toBe(replayKeyFor("a", "b", SIGNED));
  });

  it.each([
    ["another keyId", "SN=2,CA=CN=x", "rsa-sha256", SIGNED],
    ["another algorithm", "SN=1,CA=CN=x", "rsa-sha512", SIGNED],
    ["another signing string", "SN=1,CA=CN=x", "rsa-sha256", Buffer.concat([SIGNED, Buffer.from("x")])],
    // The length prefix keeps the boundary between keyId and algorithm from shifting.
    ["the same characters split differently", "SN=1,CA=CN=xr", "sa-sha256", SIGNED],
  ])("differs for %s", (_what, keyId, algorithm, signed) => {
    expect(replayKeyFor(keyId, algorithm, signed)).not.toBe(
      replayKeyFor("SN=1,CA=CN=x", "rsa-sha256", SIGNED),
    );
  });

  // Gateways of two versions share the records in Redis during a rolling upgrade: the key of the
  // same signed content must not change from one version to the next (values from 2026-11-23).
  it.each([
    ["a short keyId", "SN=1,CA=CN=x", "rsa-sha256", "rp|put76Z8H_bH5lSrNxcONFA"],
    ["a keyId with a non-ASCII char", "é", "a", "rp|UR6P4OFByOApq-FLK8UGUg"],
    [
      "a keyId too long to be kept",
      `SN=1,CA=CN=${"x".repeat(2000)}`,
      "rsa-sha256",
      "rp|zH1MG4TRiE-KTYTyYA7C1w",
    ],
  ])("for %s is the same as in earlier versions, first time and again", (_what, keyId, algorithm, key) => {
    expect(replayKeyFor(keyId, algorithm, SIGNED)).toBe(key);
    expect(replayKeyFor(keyId, algorithm, SIGNED)).toBe(key);
  });

  it("is the same for the same signed content, however the signature was encoded", () => {
    expect(replayKeyFor("SN=1,CA=CN=x", "ecdsa-sha256", SIGNED)).toBe(
      replayKeyFor("SN=1,CA=CN=x", "ecdsa-sha256", Buffer.from(SIGNED)),
    );
  });
});

describe("the memory store's replay records", () => {
  const WINDOW = 120_000;
  const store = (max = 1_000, clock = { now: 0 }) =>
    ({
      clock,
      store: new MemoryLimitStore({ maxWindows: 10, maxReplayKeys: max, now: () => clock.now }),
    }) as const;

  it("refuses the same key inside the window and accepts it again after", () => {
    const { clock, store: s } = store();
    expect(s.checkAndRecord("rp|a", WINDOW)).toBe(false);
    clock.now = WINDOW - 1;
    expect(s.checkAndRecord("rp|a", WINDOW)).toBe(true);
    clock.now = WINDOW;
    expect(s.checkAndRecord("rp|a", WINDOW)).toBe(false);
  });

  it("drops expired records as new ones arrive: it holds one window's worth, not everything ever seen", () => {
    const { clock, store: s } = store(1_000_000);
    for (let i = 0; i < 50_000; i++) {
      clock.now = i * 10; // 100 requests a second for 500 s
      s.checkAndRecord(`rp|${i}`, WINDOW);
    }
    // Only what arrived in the last 120 s is kept: 12,000 records, not 50,000.
    expect(s.replayRecords).toBe(WINDOW / 10);
    expect(s.stats.evictions).toBe(0);
  });

  it("never holds more than its bound; the oldest goes first and is counted", () => {
    const evicted: string[] = [];
    const clock = { now: 0 };
    const s = new MemoryLimitStore({
      maxWindows: 10,
      maxReplayKeys: 3,
      now: () => clock.now,
      onEvict: (_what, key) => evicted.push(key),
    });
    for (const key of ["rp|1", "rp|2", "rp|3", "rp|4"]) s.checkAndRecord(key, WINDOW);
    expect(s.replayRecords).toBe(3);
    expect(evicted).toEqual(["rp|1"]);
    expect(s.stats.evictions).toBe(1);
    expect(s.checkAndRecord("rp|4", WINDOW)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

/** The gateway's view of one certificate: its serial and issuer, and its public key. */
const TARGET: KeyIdTarget = {
  serial: Uint8Array.from([0x8e, 0x5c, 0x66, 0x0a]),
  issuer: [[{ oid: "2.5.4.10", value: "Bank, Köln" }], [{ oid: "2.5.4.3", value: "Demo CA" }]],
};

const N_P256 = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

/** The same ECDSA signature as r||s (IEEE P1363), and with s replaced by n − s: other bytes, still valid. */
function reencodings(der: Buffer): Buffer[] {
  const ints: bigint[] = [];
  for (let at = 2; ints.length < 2; ) {
    const length = der[at + 1]!;
    ints.push(BigInt(`0x${der.subarray(at + 2, at + 2 + length).toString("hex")}`));
    at += 2 + length;
  }
  const [r, s] = ints as [bigint, bigint];
  const fixed = (n: bigint) => Buffer.from(n.toString(16).padStart(64, "0"), "hex");
  return [Buffer.concat([fixed(r), fixed(s)]), Buffer.concat([fixed(r), fixed(N_P256 - s)])];
}

interface Sent {
  readonly what: string;
  readonly keyId: string;
  readonly algorithm: string;
  readonly signature: Buffer;
}

/**
 * The replay step as the checks must run it: verify (real crypto), then key the record on the
 * certificate's own keyId, the algorithm the sent name denotes and the signing-string bytes.
 */
function replayStep(store: ReplayStore, publicKey: KeyObject, algorithms: readonly AlgorithmName[]) {
  return async (sent: Sent, request: { method: string; target: string; headers: Record<string, string> }) => {
    const header = `keyId="${sent.keyId}",algorithm="${sent.algorithm}",headers="(request-target) date x-request-id",signature="${sent.signature.toString("base64")}"`;
    const params = parseSignatureHeader(header) as SignatureParams;
    expect(matchKeyId(params.keyId, TARGET)).toBe(true);
    const bytes = verifySignatureOver(request, params, publicKey, algorithms);
    if (isRejection(bytes)) throw new Error(`${sent.what}: ${bytes.text}`);
    const key = replayKeyFor(expectedKeyId(TARGET), canonicalAlgorithm(params.algorithm)!, bytes);
    return checkReplay(store, key, 120_000, { failOpen: false });
  };
}

describe("one signed request, sent again in every form that still verifies, passes once", () => {
  const request = {
    method: "GET",
    target: "/v1/accounts",
    headers: {
      date: "Mon, 23 Nov 2026 08:00:00 GMT",
      "x-request-id": "0ee25bf1-4d8d-4b6b-9f38-a86b9d2d1f19",
    },
  };
  const signingString = Buffer.from(
    `(request-target): get /v1/accounts\ndate: ${request.headers.date}\nx-request-id: ${request.headers["x-request-id"]}`,
    "latin1",
  );
  const keyId = buildKeyId(TARGET);

  it("ECDSA: DER, IEEE P1363, s ↔ n−s, the algorithm's Java name, the keyId respelled", async () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const der = sign("sha256", signingString, ec.privateKey);
    const [p1363, negated] = reencodings(der);
    const sends: Sent[] = [
      { what: "as signed (DER)", keyId, algorithm: "ecdsa-sha256", signature: der },
      { what: "IEEE P1363", keyId, algorithm: "ecdsa-sha256", signature: p1363! },
      { what: "s replaced by n − s", keyId, algorithm: "ecdsa-sha256", signature: negated! },
      { what: "SHA256withECDSA", keyId, algorithm: "SHA256withECDSA", signature: der },
      {
        what: "keyId in lower case with spaces",
        keyId: keyId.toLowerCase().replace(",CA=", ", ca="),
        algorithm: "ecdsa-sha256",
        signature: der,
      },
    ];
    const step = replayStep(new MemoryLimitStore({ maxWindows: 1, maxReplayKeys: 100 }), ec.publicKey, [
      "ecdsa-sha256",
    ]);
    const verdicts = [];
    for (const sent of sends) verdicts.push([sent.what, await step(sent, request)]);
    expect(verdicts[0]![1]).toBe(true);
    for (const [what, verdict] of verdicts.slice(1)) {
      expect(isRejection(verdict) && verdict.code, String(what)).toBe("SIGNATURE_INVALID");
    }
  });

  it("RSA-PSS (hs2019): a fresh signature over the same string is the same request", async () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pss = () => sign("sha512", signingString, { key: rsa.privateKey, padding: 6, saltLength: 64 });
    const first = pss();
    const second = pss();
    expect(first.equals(second)).toBe(false);
    const step = replayStep(new MemoryLimitStore({ maxWindows: 1, maxReplayKeys: 100 }), rsa.publicKey, [
      "hs2019",
    ]);
    expect(await step({ what: "first", keyId, algorithm: "hs2019", signature: first }, request)).toBe(true);
    const again = await step({ what: "re-made", keyId, algorithm: "hs2019", signature: second }, request);
    expect(isRejection(again) && again.text).toContain("already used");
  });

  it("…and another request by the same key is not a replay", async () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const step = replayStep(new MemoryLimitStore({ maxWindows: 1, maxReplayKeys: 100 }), ec.publicKey, [
      "ecdsa-sha256",
    ]);
    for (const id of ["a", "b"]) {
      const headers = { ...request.headers, "x-request-id": id };
      const bytes = Buffer.from(
        `(request-target): get /v1/accounts\ndate: ${headers.date}\nx-request-id: ${id}`,
        "latin1",
      );
      const signature = sign("sha256", bytes, ec.privateKey);
      expect(
        await step({ what: id, keyId, algorithm: "ecdsa-sha256", signature }, { ...request, headers }),
      ).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------

let redisServer: Promise<RedisServer> | undefined;
const stores: RedisLimitStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await (await redisServer)?.stop();
});

describeWithRedis("the Redis store with replay keys (two gateways sharing one Redis)", () => {
  it("refuses the second sight of a key from either gateway, and lets it pass again after the window", async () => {
    redisServer ??= startRedisServer();
    const { url } = await redisServer;
    const [a, b] = [new RedisLimitStore({ url }), new RedisLimitStore({ url })];
    stores.push(a, b);
    // The stores reject at once while not connected (no offline queue): wait until both are.
    for (const store of [a, b]) while (!(await store.ready())) await new Promise((r) => setTimeout(r, 20));
    const key = replayKeyFor(expectedKeyId(TARGET), "rsa-sha256", SIGNED);
    const options = { failOpen: false };
    expect(await checkReplay(a, key, 300, options)).toBe(true);
    const onB = await checkReplay(b, key, 300, options);
    expect(isRejection(onB) && onB.code).toBe("SIGNATURE_INVALID");
    const onA = await checkReplay(a, key, 300, options);
    expect(isRejection(onA) && onA.code).toBe("SIGNATURE_INVALID");
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await checkReplay(b, key, 300, options)).toBe(true);
  });
});
