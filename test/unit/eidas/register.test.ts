import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Psd2Role } from "../../../src/eidas/qcstatements.js";
import { type RegisterEntry, TppRegister } from "../../../src/eidas/register.js";
import { isRejection } from "../../../src/errors.js";
import { parseRegisterDocument } from "../../../src/trust/formats/register-document.js";
import { FileRegisterSource, HttpRegisterSource } from "../../../src/trust/register-sources.js";

const ENTRY = {
  organizationIdentifier: "PSDNO-FSA-1",
  name: "One AS",
  roles: ["PSP_AI"],
  status: "authorised",
};
const doc = (tpps: object[]) => JSON.stringify({ tpps });

function clock(start = Date.UTC(2026, 10, 22)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("TPP register", () => {
  it("serves authorised entries and refuses unknown and withdrawn TPPs with CERTIFICATE_BLOCKED", () => {
    const register = new TppRegister(60_000);
    register.replace(
      parseRegisterDocument(
        doc([ENTRY, { ...ENTRY, organizationIdentifier: "PSDNO-FSA-2", status: "withdrawn" }]),
      ),
      "test",
    );
    const ok = register.lookup("PSDNO-FSA-1", "ff");
    expect(isRejection(ok) ? ok.text : ok.name).toBe("One AS");
    const unknown = register.lookup("PSDNO-FSA-9", "ff");
    expect(isRejection(unknown) && unknown.code).toBe("CERTIFICATE_BLOCKED");
    expect(isRejection(unknown) && unknown.text).toContain("PSDNO-FSA-9 is not in the TPP register");
    const withdrawn = register.lookup("PSDNO-FSA-2", "ff");
    expect(isRejection(withdrawn) && withdrawn.text).toContain(
      "PSDNO-FSA-2 (One AS) was withdrawn by FSA (NO)",
    );
  });

  it("accepts only pinned certificates when fingerprints are listed", () => {
    const register = new TppRegister(60_000);
    register.replace(parseRegisterDocument(doc([{ ...ENTRY, certificateFingerprints: ["AB:CD"] }])), "test");
    expect(isRejection(register.lookup("PSDNO-FSA-1", "abcd"))).toBe(false);
    const r = register.lookup("PSDNO-FSA-1", "abce");
    expect(isRejection(r) && r.text).toContain("not among the certificates registered");
  });

  it("fails closed before the first load and once the copy is older than allowed", () => {
    const c = clock();
    const register = new TppRegister(60_000, c.now);
    const before = register.lookup("PSDNO-FSA-1", "ff");
    expect(isRejection(before) && before.code).toBe("SERVICE_UNAVAILABLE");
    register.replace(parseRegisterDocument(doc([ENTRY])), "test");
    c.advance(60_000);
    expect(isRejection(register.lookup("PSDNO-FSA-1", "ff"))).toBe(false);
    c.advance(1);
    const stale = register.lookup("PSDNO-FSA-1", "ff");
    expect(isRejection(stale) && stale.code).toBe("SERVICE_UNAVAILABLE");
    expect(isRejection(stale) && stale.text).toContain("60 s old");
    register.confirm();
    expect(isRejection(register.lookup("PSDNO-FSA-1", "ff"))).toBe(false);
  });

  it("refuses malformed documents, naming the entry", () => {
    expect(() => parseRegisterDocument("{")).toThrow("not valid JSON");
    expect(() => parseRegisterDocument(doc([{ ...ENTRY, roles: ["PSP_XX"] }]))).toThrow("tpps.0.roles.0");
  });
});

const tpp = (organizationIdentifier: string, more: Partial<RegisterEntry> = {}): RegisterEntry => ({
  organizationIdentifier,
  name: `${organizationIdentifier} Ltd`,
  roles: ["PSP_AI", "PSP_PI"],
  status: "authorised",
  ...more,
});

describe("TPP register with several sources", () => {
  const layered = (now: () => number, bankCountry?: string) =>
    new TppRegister({
      sources: [
        { name: "overrides", maxAgeMs: 60_000 },
        { name: "national", maxAgeMs: 60_000 },
        { name: "eba", maxAgeMs: 120_000 },
      ],
      now,
      ...(bankCountry ? { bankCountry } : {}),
    });

  it("says when and by whom a TPP was withdrawn", () => {
    const register = layered(clock().now);
    register.layer("overrides").replace([], "o.json");
    register.layer("national").replace([], "n.json");
    register
      .layer("eba")
      .replace([tpp("PSDFI-FINFSA-29884997", { status: "withdrawn", withdrawnOn: "2024-03-01" })], "eba.zip");
    const r = register.lookup("PSDFI-FINFSA-29884997", "ff");
    expect(isRejection(r) && r.code).toBe("CERTIFICATE_BLOCKED");
    expect(isRejection(r) && r.text).toContain("was withdrawn by FINFSA (FI) on 2024-03-01");
  });

  it.each([
    // Rows: which layer holds which copy → what the lookup answers.
    { name: "only the EBA has it", overrides: [], national: [], eba: ["authorised"], expected: "eba" },
    {
      name: "national overrides the EBA",
      overrides: [],
      national: ["authorised"],
      eba: ["withdrawn"],
      expected: "national",
    },
    {
      name: "our JSON blocks what the EBA admits",
      overrides: ["suspended"],
      national: [],
      eba: ["authorised"],
      expected: "status 'suspended'",
    },
    {
      name: "our JSON admits what the EBA withdrew",
      overrides: ["authorised"],
      national: ["withdrawn"],
      eba: ["withdrawn"],
      expected: "overrides",
    },
    { name: "nobody has it", overrides: [], national: [], eba: [], expected: "not in the TPP register" },
  ])("first configured source wins: $name", ({ overrides, national, eba, expected }) => {
    const register = layered(clock().now);
    const id = "PSDNO-FSA-1";
    const copies = { overrides, national, eba };
    for (const [name, statuses] of Object.entries(copies)) {
      register.layer(name).replace(
        statuses.map((status) => tpp(id, { status, source: name })),
        `${name}.json`,
      );
    }
    const r = register.lookup(id, "ff");
    expect(isRejection(r) ? r.text : r.source).toContain(expected);
  });

  it.each([
    {
      name: "no bank country: all roles",
      bank: undefined,
      countries: { PSP_PI: ["FI"], PSP_AI: ["FI", "NO"] },
      roles: ["PSP_AI", "PSP_PI"],
    },
    {
      name: "AIS passported to NO, PIS not",
      bank: "NO",
      countries: { PSP_PI: ["FI"], PSP_AI: ["FI", "NO"] },
      roles: ["PSP_AI"],
    },
    {
      name: "both passported",
      bank: "no",
      countries: { PSP_PI: ["FI", "NO"], PSP_AI: ["FI", "NO"] },
      roles: ["PSP_AI", "PSP_PI"],
    },
    {
      name: "entry without countries (our JSON): all roles",
      bank: "NO",
      countries: undefined,
      roles: ["PSP_AI", "PSP_PI"],
    },
    {
      name: "nothing in the bank's country",
      bank: "SE",
      countries: { PSP_PI: ["FI"], PSP_AI: ["FI", "NO"] },
      roles: "not in SE",
    },
  ] as {
    name: string;
    bank?: string;
    countries?: Partial<Record<Psd2Role, string[]>>;
    roles: string[] | string;
  }[])("bank country restricts roles: $name", ({ bank, countries, roles }) => {
    const register = new TppRegister({
      sources: [{ name: "eba", maxAgeMs: 1000 }],
      now: clock().now,
      ...(bank ? { bankCountry: bank } : {}),
    });
    register.layer("eba").replace([tpp("PSDFI-FINFSA-1", countries ? { countries } : {})], "eba");
    const r = register.lookup("PSDFI-FINFSA-1", "ff");
    if (typeof roles === "string") {
      expect(isRejection(r) && r.code).toBe("ROLE_INVALID");
      expect(isRejection(r) && r.text).toContain("authorised for PSP_AI in FI, NO; PSP_PI in FI, not in SE");
    } else {
      expect(isRejection(r) ? r.text : [...r.roles].sort()).toEqual(roles);
    }
  });

  it("fails closed naming the source that is unloaded or stale, and reports each source's stats", () => {
    const c = clock();
    const register = layered(c.now);
    const refusal = () => {
      const r = register.freshnessRefusal();
      return r ? `${r.code}: ${r.text}` : "fresh";
    };
    register.layer("overrides").replace([tpp("PSDNO-FSA-1")], "/etc/o.json");
    register
      .layer("eba")
      .replace([tpp("PSDFI-FINFSA-1"), tpp("PSDFI-FINFSA-2")], "https://eba.example/r.zip", {
        etag: '"e1"',
        skipped: 3,
      });
    expect(refusal()).toContain(
      "SERVICE_UNAVAILABLE: the TPP register source 'national' has not been loaded yet",
    );
    expect(register.isFresh()).toBe(false);
    expect(register.stats.lastSuccess).toBeUndefined();

    register.layer("national").replace([], "/etc/n.json");
    expect(refusal()).toBe("fresh");
    c.advance(61_000);
    register.layer("overrides").confirm();
    expect(refusal()).toContain("source 'national' is 61 s old, more than the 60 s allowed");
    expect(refusal()).not.toContain("/etc/"); // paths and URLs are for operators, not TPPs
    register.layer("national").recordFailure("ENOENT");
    register.layer("national").confirm();
    c.advance(60_000);
    register.layer("overrides").confirm();
    register.layer("national").confirm();
    expect(refusal()).toContain("source 'eba' is 121 s old, more than the 120 s allowed");

    const stats = register.stats;
    expect(stats.entries).toBe(3);
    expect(stats.failures).toBe(1);
    expect(stats.lastError).toBe("ENOENT");
    expect(stats.lastSuccess).toBe(c.now() - 121_000);
    expect(stats.sources.map((s) => [s.name, s.entries, s.fresh, s.description])).toEqual([
      ["overrides", 1, true, "/etc/o.json"],
      ["national", 0, true, "/etc/n.json"],
      ["eba", 2, false, "https://eba.example/r.zip"],
    ]);
    expect(stats.sources[2]).toMatchObject({ etag: '"e1"', skipped: 3, maxAgeMs: 120_000 });
  });

  it("refuses a source configured twice and an unknown layer name", () => {
    expect(
      () =>
        new TppRegister({
          sources: [
            { name: "eba", maxAgeMs: 1 },
            { name: "eba", maxAgeMs: 1 },
          ],
        }),
    ).toThrow("configured twice");
    expect(() => new TppRegister(1000).layer("eba")).toThrow("no register source named 'eba'");
  });

  it("reads withdrawals and countries from our own JSON format too", () => {
    const [entry] = parseRegisterDocument(
      doc([{ ...ENTRY, status: "withdrawn", withdrawnOn: "2025-01-31", countries: { PSP_AI: ["NO"] } }]),
      "overrides",
    );
    expect(entry).toMatchObject({
      withdrawnOn: "2025-01-31",
      countries: { PSP_AI: ["NO"] },
      source: "overrides",
    });
    expect(() => parseRegisterDocument(doc([{ ...ENTRY, withdrawnOn: "31.01.2025" }]))).toThrow(
      "tpps.0.withdrawnOn",
    );
  });
});

describe("register file source", () => {
  it("reloads when the file changes and keeps the last good copy when it breaks", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "psd2-reg-")), "register.json");
    writeFileSync(file, doc([ENTRY]));
    const register = new TppRegister(60_000);
    const source = new FileRegisterSource(file, register, 1000);
    await source.refresh();
    expect(register.stats.entries).toBe(1);
    writeFileSync(file, doc([ENTRY, { ...ENTRY, organizationIdentifier: "PSDNO-FSA-2" }]));
    await source.refresh();
    expect(register.stats.entries).toBe(2);
    writeFileSync(file, "{ broken");
    await source.refresh();
    expect(register.stats.entries).toBe(2);
    expect(register.stats.failures).toBe(1);
    expect(register.stats.lastError).toContain("not valid JSON");
  });
});

describe("register HTTP source (a real server on loopback)", () => {
  let server: Server;
  let url: string;
  let body = doc([ENTRY]);
  let etag = '"v1"';
  let status = 200;
  const seen: (string | undefined)[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers["if-none-match"] as string | undefined);
      if (status !== 200) {
        res.writeHead(status).end("down");
        return;
      }
      if (req.headers["if-none-match"] === etag) {
        res.writeHead(304).end();
        return;
      }
      res.writeHead(200, { etag, "content-type": "application/json" }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/register.json`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("loads, revalidates with If-None-Match, keeps the copy on failure and fails closed once it is stale", async () => {
    const c = clock();
    const register = new TppRegister(10_000, c.now);
    const source = new HttpRegisterSource(url, register, 1000);
    await source.refresh();
    expect(register.stats.entries).toBe(1);

    c.advance(5_000);
    await source.refresh(); // 304: the copy is confirmed fresh
    expect(seen.at(-1)).toBe('"v1"');
    expect(register.stats.lastSuccess).toBe(c.now());

    body = doc([ENTRY, { ...ENTRY, organizationIdentifier: "PSDNO-FSA-2" }]);
    etag = '"v2"';
    await source.refresh();
    expect(register.stats.entries).toBe(2);

    status = 503;
    c.advance(9_000);
    await source.refresh();
    expect(register.stats.failures).toBe(1);
    expect(register.stats.lastError).toContain("HTTP 503");
    expect(isRejection(register.lookup("PSDNO-FSA-2", "ff"))).toBe(false); // last good copy still served
    c.advance(2_000);
    const stale = register.lookup("PSDNO-FSA-2", "ff");
    expect(isRejection(stale) && stale.code).toBe("SERVICE_UNAVAILABLE");

    status = 200;
    await source.refresh();
    expect(isRejection(register.lookup("PSDNO-FSA-2", "ff"))).toBe(false);
  });
});
