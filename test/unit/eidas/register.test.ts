import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseRegisterDocument, TppRegister } from "../../../src/eidas/register.js";
import { isRejection } from "../../../src/errors.js";
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
    expect(isRejection(withdrawn) && withdrawn.text).toContain("status 'withdrawn'");
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
