/**
 * Live revocation against a real QTSP on loopback: its OCSP responder (good, revoked, unknown,
 * wrong signer, expired answer, down) and its CRL distribution point (fresh, past nextUpdate, bad
 * signature, 304 Not Modified, the disk cache), asked in the configured order, failing closed.
 */

import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { QtspServer } from "@psd2-gateway/dev-pki";
import { QTSP_PATHS } from "@psd2-gateway/dev-pki";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RevocationList, RevocationStatus } from "../../../src/eidas/index.js";
import { type ParsedCertificate, parseCertificate } from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import { CrlCache } from "../../../src/trust/crl-cache.js";
import { fetchDocument } from "../../../src/trust/http-fetch.js";
import { LiveRevocation, type RevocationOrder } from "../../../src/trust/live-revocation.js";
import {
  issuingCaCrl,
  type QtspPki,
  qtspPki,
  startTestQtsp,
  type TestQtspOptions,
} from "../../helpers/test-qtsp.js";

let q: QtspPki;
let issuer: ParsedCertificate;
let tppA: ParsedCertificate;
let revoked: ParsedCertificate;
let server: QtspServer | undefined;

function parsed(der: Uint8Array): ParsedCertificate {
  const c = parseCertificate(der);
  if (isRejection(c)) throw new Error(c.text);
  return c;
}

beforeAll(async () => {
  q = await qtspPki();
  issuer = parsed(q.pki.issuingCa.der);
  tppA = parsed(q.pki.tppA.qseal.der);
  revoked = parsed(q.pki.revoked.der);
}, 60_000);

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function qtsp(options: TestQtspOptions = {}): Promise<QtspServer> {
  server = await startTestQtsp(q, options);
  return server;
}

interface Setup {
  readonly order?: RevocationOrder;
  readonly softFail?: boolean;
  readonly cacheDir?: string;
  readonly localList?: RevocationList;
  readonly refreshMs?: number;
  readonly maxLists?: number;
  readonly urls?: readonly string[];
}

function live(setup: Setup = {}) {
  const crls = new CrlCache({
    cas: () => [issuer, parsed(q.pki.root.der)],
    refreshMs: setup.refreshMs ?? 3_600_000,
    graceMs: 0,
    timeoutMs: 2_000,
    maxBytes: 1024 * 1024,
    maxLists: setup.maxLists ?? 4,
    ...(setup.urls ? { urls: setup.urls } : {}),
    ...(setup.cacheDir ? { cacheDir: setup.cacheDir } : {}),
  });
  const unknown: string[] = [];
  const revocation = new LiveRevocation({
    order: setup.order ?? "ocsp-crl",
    softFail: setup.softFail ?? false,
    firstAnswerTimeoutMs: 2_000,
    ocsp: { timeoutMs: 1_000, maxAgeMs: 3_600_000, maxEntries: 100 },
    crls,
    localList: () => setup.localList,
    graceMs: 0,
    events: { unknownStatus: (action) => unknown.push(action) },
  });
  return { revocation, crls, unknown };
}

async function statusOf(revocation: LiveRevocation, certificate = tppA): Promise<RevocationStatus> {
  return revocation.check(certificate, issuer, new Date());
}

describe("OCSP (order: ocsp)", () => {
  it.each([
    { maxAge: "1 h", maxAgeMs: 3_600_000, window: 60_000 },
    { maxAge: "5 min", maxAgeMs: 300_000, window: 30_000 },
  ])(
    "lets workers share an answer for at most a tenth of maxAge ($maxAge), 60 s at most",
    async ({ maxAgeMs, window }) => {
      await qtsp();
      const asked: { shareForMs?: number; post: boolean }[] = [];
      const revocation = new LiveRevocation({
        order: "ocsp",
        softFail: false,
        firstAnswerTimeoutMs: 2_000,
        ocsp: { timeoutMs: 1_000, maxAgeMs, maxEntries: 100 },
        crls: live().crls,
        localList: () => undefined,
        graceMs: 0,
        // The real fetch; what a worker would ask the primary is recorded on the way.
        fetch: (target, options) => {
          asked.push({ shareForMs: options.shareForMs, post: options.post !== undefined });
          return fetchDocument(target, options);
        },
      });
      expect((await statusOf(revocation)).refusal).toBeUndefined();
      expect(asked).toEqual([{ shareForMs: window, post: true }]);
    },
  );

  it.each([
    {
      name: "good: not revoked, and the answer is held until it expires",
      options: {},
      certificate: () => tppA,
      expect: (s: RevocationStatus) => {
        expect(s.refusal).toBeUndefined();
        expect(s.validUntil! - Date.now()).toBeGreaterThan(3_000_000);
      },
    },
    {
      name: "revoked: CERTIFICATE_REVOKED naming the responder",
      options: {
        status: (serial: string) =>
          serial === revoked.serialHex
            ? { status: "revoked" as const, revokedAt: new Date("2026-01-02T03:04:05Z") }
            : { status: "good" as const },
      },
      certificate: () => revoked,
      expect: (s: RevocationStatus) => {
        expect(s.refusal?.code).toBe("CERTIFICATE_REVOKED");
        expect(s.refusal?.text).toContain("2026-01-02T03:04:05.000Z");
        expect(s.refusal?.text).toContain(`OCSP ${q.url}${QTSP_PATHS.ocsp}`);
        expect(s.transient).toBeFalsy();
      },
    },
    {
      name: "unknown: refused, not taken as good",
      options: { status: () => ({ status: "unknown" as const }) },
      certificate: () => tppA,
      expect: (s: RevocationStatus) => {
        expect(s.refusal?.code).toBe("SERVICE_UNAVAILABLE");
        expect(s.refusal?.text).toContain("does not know the certificate");
        expect(s.transient).toBe(true);
      },
    },
    {
      name: "signed by a responder the CA never authorised: refused",
      options: {
        responder: {
          certificatePem: () => q.pki.untrusted.pem,
          privateKeyPem: () => q.pki.untrusted.keyPem,
        },
      },
      certificate: () => tppA,
      expect: (s: RevocationStatus) => {
        expect(s.refusal?.code).toBe("SERVICE_UNAVAILABLE");
        expect(s.refusal?.text).toMatch(/OCSP http:\/\/127\.0\.0\.1:\d+\/ocsp: .*(signer|signed|responder)/i);
      },
    },
    {
      name: "an expired answer: refused",
      options: { ocspValidityMs: -10 * 60_000 },
      certificate: () => tppA,
      expect: (s: RevocationStatus) => {
        expect(s.refusal?.code).toBe("SERVICE_UNAVAILABLE");
        expect(s.refusal?.text).toMatch(/expired/);
      },
    },
  ])("$name", async (row) => {
    const { responder, ...rest } = row.options as TestQtspOptions & {
      responder?: { certificatePem: () => string; privateKeyPem: () => string };
    };
    await qtsp({
      ...rest,
      ...(responder
        ? {
            responder: {
              certificatePem: responder.certificatePem(),
              privateKeyPem: responder.privateKeyPem(),
            },
          }
        : {}),
    });
    const { revocation } = live({ order: "ocsp" });
    row.expect(await statusOf(revocation, row.certificate()));
  });

  it("down: refused with SERVICE_UNAVAILABLE saying since when, never cached; softFail lets it through", async () => {
    const { revocation, unknown } = live({ order: "ocsp" });
    const s = await statusOf(revocation);
    expect(s.refusal?.code).toBe("SERVICE_UNAVAILABLE");
    expect(s.refusal?.text).toMatch(/OCSP http:\/\/127\.0\.0\.1:\d+\/ocsp: .*failing since \d{4}-/);
    expect(s.transient).toBe(true);
    expect(unknown).toEqual(["refused"]);

    const soft = live({ order: "ocsp", softFail: true });
    const passed = await statusOf(soft.revocation);
    expect(passed.refusal).toBeUndefined();
    expect(passed.warning).toContain("softFail");
    expect(passed.validUntil! - Date.now()).toBeLessThanOrEqual(60_000);
    expect(soft.unknown).toEqual(["allowed"]);
  });

  it("asks once for many concurrent checks, then answers from memory without a promise", async () => {
    const server = await qtsp();
    const { revocation } = live({ order: "ocsp" });
    const all = await Promise.all(Array.from({ length: 8 }, () => statusOf(revocation)));
    expect(all.every((s) => s.refusal === undefined)).toBe(true);
    expect(server.stats.ocspRequests).toBe(1);
    const cached = revocation.check(tppA, issuer, new Date());
    expect(cached instanceof Promise).toBe(false);
    expect(server.stats.ocspRequests).toBe(1);
  });
});

describe("CRL distribution points (order: crl)", () => {
  it("a fresh CRL: not revoked until its nextUpdate; a listed certificate is CERTIFICATE_REVOKED", async () => {
    const crl = await issuingCaCrl(q.pki, { revoked: [q.pki.revoked.certificate] });
    await qtsp({ crl: () => crl });
    const { revocation } = live({ order: "crl" });
    const good = await statusOf(revocation);
    expect(good.refusal).toBeUndefined();
    expect(good.validUntil! - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    const listed = await statusOf(revocation, revoked);
    expect(listed.refusal?.code).toBe("CERTIFICATE_REVOKED");
    expect(listed.refusal?.text).toContain(`CRL ${q.url}${QTSP_PATHS.crl}`);
  });

  it.each([
    {
      name: "past its nextUpdate",
      crl: () =>
        issuingCaCrl(q.pki, {
          thisUpdate: new Date(Date.now() - 7200_000),
          nextUpdate: new Date(Date.now() - 3600_000),
        }),
      text: /past its nextUpdate/,
    },
    {
      name: "signed by another key",
      crl: () => issuingCaCrl(q.pki, { signer: q.pki.root }),
      text: /CRL signature does not verify/,
    },
  ])("a CRL $name proves nothing: refused", async (row) => {
    const crl = await row.crl();
    await qtsp({ crl: () => crl });
    const { revocation } = live({ order: "crl" });
    const s = await statusOf(revocation);
    expect(s.refusal?.code).toBe("SERVICE_UNAVAILABLE");
    expect(s.refusal?.text).toMatch(row.text);
  });

  it("fetches again with If-None-Match and keeps the list on 304; a restart reads it from disk", async () => {
    const crl = await issuingCaCrl(q.pki, {});
    await qtsp({ crl: () => crl });
    const cacheDir = mkdtempSync(join(tmpdir(), "psd2-crl-cache-"));
    const url = `${q.url}${QTSP_PATHS.crl}`;
    const { crls } = live({ order: "crl", cacheDir });
    await crls.ensure(url);
    const first = crls.listAt(url);
    expect(first).toBeDefined();
    await crls.pin([url]); // a second fetch: 304, the same list object kept
    expect(crls.listAt(url)).toBe(first);
    expect(crls.statuses[0]).toMatchObject({ kind: "crl", source: url, failures: 0, stale: false });
    crls.stop();

    await server?.close();
    server = undefined;
    const restarted = live({ order: "crl", cacheDir });
    restarted.crls.loadFromDisk();
    expect(restarted.crls.listAt(url)?.thisUpdate).toEqual(first!.thisUpdate);
    expect((await statusOf(restarted.revocation)).refusal).toBeUndefined();
    restarted.crls.stop();
  });

  it.each([
    { refresh: "1 h", refreshMs: 3_600_000, windows: [3_240_000, 3_240_000] },
    // Due for replacement within the interval (24 h list, renewed 2.4 h ahead): only a fresh fetch will do.
    { refresh: "24 h", refreshMs: 86_400_000, windows: [77_760_000, 0] },
  ])(
    "lets workers share a list for 0.9 of the refresh interval ($refresh), not once it is due",
    async ({ refreshMs, windows }) => {
      const crl = await issuingCaCrl(q.pki, {});
      await qtsp({ crl: () => crl });
      const url = `${q.url}${QTSP_PATHS.crl}`;
      const asked: (number | undefined)[] = [];
      const crls = new CrlCache({
        cas: () => [issuer],
        refreshMs,
        graceMs: 0,
        timeoutMs: 2_000,
        maxBytes: 1024 * 1024,
        maxLists: 4,
        // The real fetch; what a worker would ask the primary is recorded on the way.
        fetch: (target, options) => {
          asked.push(options.shareForMs);
          return fetchDocument(target, options);
        },
      });
      await crls.ensure(url);
      await crls.ensure(url);
      crls.stop();
      expect(crls.listAt(url)).toBeDefined();
      expect(asked).toEqual(windows);
    },
  );

  it("the disk cache is bounded like memory: an evicted list's files go, a restart keeps the newest maxLists and the configured URLs", async () => {
    const crl = await issuingCaCrl(q.pki, {});
    const served = await qtsp();
    const urls = ["a", "b", "c", "d"].map((name) => {
      served.setDocument(`/crl/${name}.crl`, { body: Buffer.from(crl), contentType: "application/pkix-crl" });
      return `${q.url}/crl/${name}.crl`;
    });
    const cacheDir = mkdtempSync(join(tmpdir(), "psd2-crl-cache-"));
    // Not the cache's own: never touched.
    writeFileSync(join(cacheDir, "README.txt"), "kept");
    const [a, b, c, d] = urls as [string, string, string, string];
    const first = live({ order: "crl", cacheDir, maxLists: 2, urls: [d] });
    await first.crls.start();
    for (const url of [a, b, c]) {
      await first.crls.ensure(url);
      // Each fetched in a later millisecond than the one before: "newest" is then c.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // a was evicted for c: its two files went with it; b, c and the configured d stay.
    const pairs = () => readdirSync(cacheDir).filter((n) => n.endsWith(".json")).length;
    expect(first.crls.listAt(a)).toBeUndefined();
    expect(pairs()).toBe(3);
    first.crls.stop();
    // Left over by a crash mid-write: gone at the next start.
    writeFileSync(join(cacheDir, `${"0".repeat(32)}.crl.tmp`), "half");

    const restarted = live({ order: "crl", cacheDir, maxLists: 1, urls: [d] });
    restarted.crls.loadFromDisk();
    expect(restarted.crls.listAt(d)).toBeDefined();
    expect(restarted.crls.listAt(c)).toBeDefined();
    expect(restarted.crls.listAt(b)).toBeUndefined();
    expect(readdirSync(cacheDir).sort()).toHaveLength(5); // c and d (list and metadata each), README.txt
    expect(readdirSync(cacheDir)).toContain("README.txt");
    restarted.crls.stop();
  });

  it("a configured URL read back from disk stays configured: looked up by issuer while its QTSP is down", async () => {
    const crl = await issuingCaCrl(q.pki, {});
    const served = await qtsp();
    served.setDocument("/crl/configured.crl", {
      body: Buffer.from(crl),
      contentType: "application/pkix-crl",
    });
    const cacheDir = mkdtempSync(join(tmpdir(), "psd2-crl-cache-"));
    const url = `${q.url}/crl/configured.crl`;
    const first = live({ order: "crl", cacheDir });
    await first.crls.pin([url]);
    expect(first.crls.pinnedLists()).toHaveLength(1);
    first.crls.stop();

    await server?.close();
    server = undefined;
    const restarted = live({ order: "crl", cacheDir });
    restarted.crls.loadFromDisk();
    await restarted.crls.pin([url]); // refused: the copy from disk is all there is
    expect(restarted.crls.pinnedLists()).toHaveLength(1);
    expect(restarted.crls.statuses).toEqual([
      expect.objectContaining({
        source: url,
        failures: 1,
        crl: expect.objectContaining({ origin: "configured-url" }),
      }),
    ]);
    restarted.crls.stop();
  });

  it("a local CRL file answers when the distribution point is down", async () => {
    const { crlCheckerFromFolder } = await import("../../../src/trust/folders.js");
    const { checker } = crlCheckerFromFolder(q.pki.paths.trustDir, [issuer]);
    const { revocation } = live({ order: "ocsp-crl", localList: checker.listOf(issuer)! });
    const s = await statusOf(revocation);
    expect(s.refusal).toBeUndefined();
    expect(readFileSync(q.pki.paths.crl, "utf8")).toContain("BEGIN X509 CRL");
  });

  it("a certificate that names no source, with no CRL of its issuer anywhere: CERTIFICATE_INVALID", async () => {
    const { revocation } = live({ order: "ocsp-crl" });
    const bare = parsed(q.pki.gatewayTls.der);
    const s = await statusOf(revocation, bare);
    expect(s.refusal?.code).toBe("CERTIFICATE_INVALID");
    expect(s.refusal?.text).toContain("names no OCSP responder or CRL distribution point");
    expect(s.transient).toBeFalsy();
  });
});
