/**
 * The key resolver against a real HTTPS directory on loopback, with an injected clock (no waiting):
 * where a named key is found, how often the directory is asked, when a removed key stops working,
 * and that nothing but the listed hosts is ever contacted.
 */

import type { DevPki } from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { KeyReference, ResolvedKey } from "../../../src/eidas/index.js";
import { isRejection, type Rejection } from "../../../src/errors.js";
import {
  KeyDirectoryResolver,
  type KeyResolverOptions,
  readKeyFile,
  thumbprintOf,
} from "../../../src/trust/key-resolver.js";
import { testPki } from "../../helpers/gateway-fixture.js";
import { type KeyDirectoryServer, startKeyDirectory } from "../../helpers/key-directory.js";

const ORG = "PSDNO-FSA-DEMO0001";
const ISS = `${ORG}/software-1`;
const JWKS_PATH = `/${ORG}/software-1.jwks`;
const HOUR = 3_600_000;

let pki: DevPki;
let directory: KeyDirectoryServer;
/** Another host (another port): on no list, so never to be asked. */
let stranger: KeyDirectoryServer;
let now: number;

beforeAll(async () => {
  pki = await testPki();
  directory = await startKeyDirectory(pki);
  stranger = await startKeyDirectory(pki);
});
afterAll(async () => {
  await directory.close();
  await stranger.close();
});
beforeEach(() => {
  now = Date.parse("2026-11-28T12:00:00Z");
  directory.requests.length = 0;
  stranger.requests.length = 0;
  directory.behave("normal");
  directory.publish(JWKS_PATH, [{ kid: "key-1", der: pki.tppA.qseal.der }]);
});

function resolver(options: Partial<KeyResolverOptions> = {}): KeyDirectoryResolver {
  return new KeyDirectoryResolver({
    directories: [{ url: `${directory.origin}/{org-id}/{software-statement-id}.jwks` }],
    ca: directory.ca,
    keyTtlMs: 24 * HOUR,
    refreshMs: HOUR,
    unknownKidIntervalMs: 60_000,
    timeoutMs: 2_000,
    maxBytes: 64 * 1024,
    maxSeen: 16,
    maxDocuments: 16,
    now: () => now,
    ...options,
  });
}

const ukOb = (kid: string, more: Partial<KeyReference> = {}): KeyReference => ({
  dialect: "uk-ob",
  kid,
  iss: ISS,
  ...more,
});

async function found(r: KeyDirectoryResolver, reference: KeyReference): Promise<ResolvedKey> {
  const result = await r.resolve(reference);
  if (isRejection(result)) throw new Error(`refused: ${result.text}`);
  return result;
}

async function refused(r: KeyDirectoryResolver, reference: KeyReference): Promise<Rejection> {
  const result = await r.resolve(reference);
  if (!isRejection(result)) throw new Error("resolved, expected a refusal");
  return result;
}

const sha = (der: Uint8Array) => thumbprintOf(der);

describe("keys by reference: the directory", () => {
  it("finds a kid in the TPP's JWKS (named by iss), asks once, then answers from the cache", async () => {
    const r = resolver();
    expect((await found(r, ukOb("key-1"))).sha256).toBe(sha(pki.tppA.qseal.der));
    expect((await found(r, ukOb("key-1"))).sha256).toBe(sha(pki.tppA.qseal.der));
    expect(directory.requests).toEqual([JWKS_PATH]);
  });

  it("a rotated kid causes one refetch, after which both are served from the cache", async () => {
    const r = resolver();
    await found(r, ukOb("key-1"));
    now += 5 * 60_000;
    directory.publish(JWKS_PATH, [
      { kid: "key-1", der: pki.tppA.qseal.der },
      { kid: "key-2", der: pki.bankQseal.der },
    ]);
    expect((await found(r, ukOb("key-2"))).sha256).toBe(sha(pki.bankQseal.der));
    await found(r, ukOb("key-2"));
    await found(r, ukOb("key-1"));
    expect(directory.requests).toEqual([JWKS_PATH, JWKS_PATH]);
  });

  it("a storm of 1,000 unknown kids asks the directory at most once a minute", async () => {
    const r = resolver();
    await found(r, ukOb("key-1"));
    const storm = async () => {
      const answers = await Promise.all(
        Array.from({ length: 1_000 }, (_, i) => r.resolve(ukOb(`unknown-${i}-${now}`))),
      );
      expect(answers.every((a) => isRejection(a) && a.code === "CERTIFICATE_MISSING")).toBe(true);
    };
    await storm();
    expect(directory.requests).toHaveLength(1);
    now += 30_000;
    await storm();
    expect(directory.requests).toHaveLength(1);
    now += 30_000;
    await storm();
    expect(directory.requests).toHaveLength(2);
    now += 59_000;
    await storm();
    expect(directory.requests).toHaveLength(2);
  });

  it("a key removed from the JWKS still works within its 24 h, and is refused once they have passed", async () => {
    const r = resolver();
    await found(r, ukOb("key-1"));
    directory.publish(JWKS_PATH, [{ kid: "key-2", der: pki.bankQseal.der }]);
    now += 23 * HOUR;
    await found(r, ukOb("key-1"));
    now += 2 * HOUR;
    const refusal = await refused(r, ukOb("key-1"));
    expect(refusal.code).toBe("CERTIFICATE_MISSING");
    expect(refusal.text).toContain("has not listed that kid for 24 h");
    expect(refusal.text).toContain("send the QSealC (base64 DER) first in x5c, or a kid");
  });

  it("a key still listed is good again after 24 h: the directory is asked, not the key dropped", async () => {
    const r = resolver();
    await found(r, ukOb("key-1"));
    now += 25 * HOUR;
    await found(r, ukOb("key-1"));
    expect(directory.requests).toEqual([JWKS_PATH, JWKS_PATH]);
  });

  it("refuses an x5t#S256 that is not the certificate the kid names, saying which it is", async () => {
    const refusal = await refused(resolver(), ukOb("key-1", { x5tS256: sha(pki.bankQseal.der) }));
    expect(refusal.code).toBe("CERTIFICATE_INVALID");
    expect(refusal.text).toContain(sha(pki.tppA.qseal.der));
    expect((await found(resolver(), ukOb("key-1", { x5tS256: sha(pki.tppA.qseal.der) }))).sha256).toBe(
      sha(pki.tppA.qseal.der),
    );
  });

  it("fetches a key's x5u from a listed host, and never from another host", async () => {
    directory.serve("/key-3.pem", pki.bankQseal.pem);
    stranger.serve("/key-4.pem", pki.bankQseal.pem);
    directory.publish(JWKS_PATH, [
      { kid: "key-3", der: pki.bankQseal.der, withoutX5c: true, x5u: `${directory.origin}/key-3.pem` },
      { kid: "key-4", der: pki.bankQseal.der, withoutX5c: true, x5u: `${stranger.origin}/key-4.pem` },
    ]);
    const r = resolver();
    expect((await found(r, ukOb("key-3"))).sha256).toBe(sha(pki.bankQseal.der));
    const refusal = await refused(r, ukOb("key-4"));
    expect(refusal.text).toContain("is not a key directory of this bank");
    expect(stranger.requests).toEqual([]);
  });

  it.each([
    ["a path of its own", "../../evil/x"],
    ["a host of its own", "@127.0.0.1:1/x"],
    ["no software statement", ORG],
    ["no iss", undefined],
  ])("never contacts anything for an iss with %s", async (_, iss) => {
    const refusal = await refused(resolver(), { dialect: "uk-ob", kid: "key-1", ...(iss ? { iss } : {}) });
    expect(refusal.code).toBe("CERTIFICATE_MISSING");
    expect(refusal.text).toContain("'<org-id>/<software-statement-id>'");
    expect(directory.requests).toEqual([]);
  });

  it.each([
    ["slow", "no answer within 0.3 s"],
    ["huge", "bytes allowed"],
    ["down", "could not be read"],
  ] as const)(
    "a directory that is %s: refused with what to send, within the fetch's bounds",
    async (behaviour, text) => {
      directory.behave(behaviour);
      const refusal = await refused(resolver({ timeoutMs: 300 }), ukOb("key-1"));
      expect(refusal.code).toBe("CERTIFICATE_MISSING");
      expect(refusal.text).toContain(text);
      expect(refusal.text).toContain("send the QSealC (base64 DER) first in x5c");
    },
  );

  it("a directory down keeps the keys it listed for their 24 h", async () => {
    const r = resolver();
    await found(r, ukOb("key-1"));
    directory.behave("down");
    now += 2 * HOUR;
    await found(r, ukOb("key-1"));
    now += 23 * HOUR;
    await refused(r, ukOb("key-1"));
  });
});

describe("keys by reference: seen certificates and the file store", () => {
  const jades = (x5tS256: string): KeyReference => ({ dialect: "jades", x5tS256 });

  it("an x5t#S256 resolves once its certificate was seen and trusted, never before", async () => {
    const r = resolver();
    const before = await refused(r, jades(sha(pki.tppA.qseal.der)));
    expect(before.code).toBe("CERTIFICATE_MISSING");
    r.remember(pki.tppA.qseal.der);
    expect((await found(r, jades(sha(pki.tppA.qseal.der)))).base64).toBe(pki.tppA.qseal.headerValue);
    expect(directory.requests).toEqual([]);
  });

  it("forgets the least recently used certificate past maxSeen", async () => {
    const r = resolver({ maxSeen: 2 });
    r.remember(pki.tppA.qseal.der);
    r.remember(pki.tppB.qseal.der);
    await found(r, jades(sha(pki.tppA.qseal.der)));
    r.remember(pki.bankQseal.der);
    await found(r, jades(sha(pki.tppA.qseal.der)));
    await refused(r, jades(sha(pki.tppB.qseal.der)));
  });

  it("finds certificates of a PEM file by hash and of a JWKS file by hash or kid", async () => {
    const files = [
      ...readKeyFile(Buffer.from(pki.tppB.qseal.pem), "tpp-b.pem"),
      ...readKeyFile(
        Buffer.from(JSON.stringify({ keys: [{ kid: "file-key", x5c: [pki.bankQseal.headerValue] }] })),
        "bank.jwks",
      ),
    ];
    const r = resolver({ files });
    expect((await found(r, jades(sha(pki.tppB.qseal.der)))).sha256).toBe(sha(pki.tppB.qseal.der));
    expect((await found(r, ukOb("file-key"))).sha256).toBe(sha(pki.bankQseal.der));
    expect(directory.requests).toEqual([]);
  });

  it.each([
    ["not a certificate", "hello"],
    ["a JWKS without x5c", JSON.stringify({ keys: [{ kid: "k", kty: "oct" }] })],
  ])("refuses a key file that is %s, naming it", (_, body) => {
    expect(() => readKeyFile(Buffer.from(body), "bad.file")).toThrow(/bad\.file/);
  });
});
