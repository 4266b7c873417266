import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTrustedLists, generateTrustedListSigner, type TrustedListSigner } from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTrustedLists, TrustedListSet } from "../../../src/trust/trusted-lists.js";

const DAY = 24 * 3600 * 1000;
const NOW = new Date();
let lotlSigner: TrustedListSigner;
let nationalSigner: TrustedListSigner;
let ca: TrustedListSigner;
let dir: string;
let server: Server;
let nationalUrl: string;
/** What the loopback server answers for the national list; ETag is a hash of it. */
let served = "";
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "psd2-tl-loader-"));
  [lotlSigner, nationalSigner, ca] = await Promise.all([
    generateTrustedListSigner("Loader LOTL signer"),
    generateTrustedListSigner("Loader XX signer"),
    // Any CA certificate will do for the loader: it only has to parse.
    generateTrustedListSigner("Loader CA"),
  ]);
  server = createServer((req, res) => {
    seen.push(req.headers);
    const etag = `"${createHash("sha256").update(served).digest("hex").slice(0, 16)}"`;
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/vnd.etsi.tsl+xml", etag }).end(served);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  nationalUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tl-xx.xml`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function lists(options: { nextUpdate?: Date; breakSignature?: "lotl" | "national"; sequence?: number } = {}) {
  return buildTrustedLists({
    lotlSigner,
    nationalSigner,
    nationalListUrl: nationalUrl,
    nextUpdate: options.nextUpdate ?? new Date(NOW.getTime() + 30 * DAY),
    issueDate: new Date(NOW.getTime() - 60 * DAY),
    nationalSequenceNumber: options.sequence ?? 5,
    ...(options.breakSignature ? { breakSignature: options.breakSignature } : {}),
    services: [{ serviceName: "Loader CA", certificate: ca.der, qualifiedFor: { qwac: true, qseal: true } }],
  });
}

function writeLotl(xml: string): string {
  const path = join(dir, `lotl-${Math.random().toString(16).slice(2)}.xml`);
  writeFileSync(path, xml);
  return path;
}

describe("loadTrustedLists", () => {
  it("reads a LOTL file, follows its pointer over HTTP and makes anchors", async () => {
    const { lotlXml, nationalXml } = lists();
    served = nationalXml;
    const result = await loadTrustedLists({
      lotl: writeLotl(lotlXml),
      lotlSigners: [lotlSigner.der],
      now: NOW,
    });
    expect(result.lists.map((l) => [l.kind, l.territory, l.ok, l.sequenceNumber, l.stale])).toEqual([
      ["lotl", "EU", true, 1, false],
      ["national", "XX", true, 5, false],
    ]);
    expect(result.anchors).toHaveLength(1);
    expect(result.anchors[0]).toMatchObject({ territory: "XX", qualifiedFor: { qwac: true, qseal: true } });
    expect(result.anchors[0]!.grantedAt(NOW)).toBe(true);
  });

  it("reports a LOTL signed by a certificate that is not configured", async () => {
    const { lotlXml } = lists();
    const result = await loadTrustedLists({ lotl: writeLotl(lotlXml), lotlSigners: [ca.der], now: NOW });
    expect(result.lists).toHaveLength(1);
    expect(result.lists[0]).toMatchObject({ kind: "lotl", ok: false, inUse: false });
    expect(result.lists[0]!.error).toContain("not among the 1 certificate(s) allowed");
    expect(result.anchors).toEqual([]);
  });

  it("reports and skips a national list whose signature is broken", async () => {
    const { lotlXml } = lists();
    served = lists({ breakSignature: "national" }).nationalXml;
    const result = await loadTrustedLists({
      lotl: writeLotl(lotlXml),
      lotlSigners: [lotlSigner.der],
      now: NOW,
    });
    expect(result.lists[1]).toMatchObject({ territory: "XX", ok: false, inUse: false });
    expect(result.lists[1]!.error).toContain("signature does not verify");
    expect(result.anchors).toEqual([]);
  });

  it("follows only the territories asked for", async () => {
    const { lotlXml, nationalXml } = lists();
    served = nationalXml;
    const result = await loadTrustedLists({
      lotl: writeLotl(lotlXml),
      lotlSigners: [lotlSigner.der],
      territories: ["DE"],
      now: NOW,
    });
    expect(result.lists.map((l) => l.kind)).toEqual(["lotl"]);
  });
});

describe("TrustedListSet", () => {
  it("keeps the last good copy, counts failures, revalidates with the ETag and refuses a rollback", async () => {
    const { lotlXml, nationalXml } = lists();
    served = nationalXml;
    const set = new TrustedListSet({ lotl: writeLotl(lotlXml), lotlSigners: [lotlSigner.der], now: NOW });
    expect((await set.refresh()).anchors).toHaveLength(1);

    // Unchanged: the conditional request answers 304 and the held copy stays in use.
    seen.length = 0;
    const again = await set.refresh();
    expect(seen[0]?.["if-none-match"]).toMatch(/^"[0-9a-f]{16}"$/);
    expect(again.lists[1]).toMatchObject({ ok: true, sequenceNumber: 5 });

    // A broken list: reported, its last good copy kept.
    served = lists({ breakSignature: "national" }).nationalXml;
    const broken = await set.refresh();
    expect(broken.lists[1]).toMatchObject({ ok: false, inUse: true, sequenceNumber: 5 });
    expect(broken.anchors).toHaveLength(1);

    // An older, validly signed list: a replay, refused.
    served = lists({ sequence: 4 }).nationalXml;
    const rolledBack = await set.refresh();
    expect(rolledBack.lists[1]!.error).toContain("sequence number 4, older than the 5 already held");

    const stats = set.stats().find((s) => s.territory === "XX")!;
    expect(stats).toMatchObject({ location: nationalUrl, failures: 2, etag: expect.stringMatching(/^"/) });
    expect(stats.lastSuccess).toEqual(NOW);
    expect(stats.lastError).toContain("older than the 5");
  });

  it("reports lists past their NextUpdate as stale", async () => {
    const past = new Date(Math.floor((NOW.getTime() - DAY) / 1000) * 1000);
    const { lotlXml, nationalXml } = lists({ nextUpdate: past });
    served = nationalXml;
    const set = new TrustedListSet({ lotl: writeLotl(lotlXml), lotlSigners: [lotlSigner.der], now: NOW });
    const result = await set.refresh();
    expect(result.lists.map((l) => l.stale)).toEqual([true, true]);
    expect(set.stale(NOW).map((l) => [l.territory, l.nextUpdate])).toEqual([
      ["EU", past],
      ["XX", past],
    ]);
    expect(set.stale(new Date(past.getTime() - DAY))).toEqual([]);
  });
});
