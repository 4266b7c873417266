/**
 * Register sources against real files and a real HTTP server on loopback: conditional requests
 * (ETag and Last-Modified), failures that keep the last good copy, size caps, EBA ZIPs, and the
 * poll schedule (jitter, back-off).
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ebaRegisterDocument, ebaRegisterZip } from "../../../src/dev/eba-register.js";
import { TppRegister } from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import { createRegisterSource, pollDelay } from "../../../src/trust/register-sources.js";

const ours = (ids: string[]) =>
  JSON.stringify({
    tpps: ids.map((organizationIdentifier) => ({
      organizationIdentifier,
      name: organizationIdentifier,
      roles: ["PSP_AI"],
      status: "authorised",
    })),
  });

interface Route {
  status: number;
  body: string | Uint8Array;
  headers: Record<string, string>;
  /** Answers 304 when the request's validators match. */
  conditional: boolean;
  /** Sends the body in chunks without Content-Length. */
  chunked?: boolean;
}

describe("HTTP register source (a real server on loopback)", () => {
  let server: Server;
  let base: string;
  const routes = new Map<string, Route>();
  const seen: { path: string; headers: IncomingHttpHeaders }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ path: req.url!, headers: req.headers });
      const route = routes.get(req.url!);
      if (!route) return void res.writeHead(404).end();
      const etagMatch =
        route.headers.etag !== undefined && req.headers["if-none-match"] === route.headers.etag;
      const dateMatch =
        route.headers["last-modified"] !== undefined &&
        req.headers["if-modified-since"] === route.headers["last-modified"];
      if (route.status === 200 && route.conditional && (etagMatch || dateMatch))
        return void res.writeHead(304).end();
      if (route.chunked) {
        res.writeHead(route.status, route.headers);
        const body = Buffer.from(route.body);
        for (let i = 0; i < body.length; i += 64 * 1024) res.write(body.subarray(i, i + 64 * 1024));
        return void res.end();
      }
      res.writeHead(route.status, route.headers).end(route.body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const register = (maxAgeMs = 60_000) =>
    new TppRegister({
      sources: [
        { name: "overrides", maxAgeMs },
        { name: "eba", maxAgeMs },
      ],
    });
  const lastSeen = (path: string) => seen.filter((s) => s.path === path).at(-1)!.headers;

  it.each<{ name: string; validator: Record<string, string>; sent: string; value: string }>([
    { name: "ETag → If-None-Match", validator: { etag: '"v1"' }, sent: "if-none-match", value: '"v1"' },
    {
      name: "Last-Modified → If-Modified-Since",
      validator: { "last-modified": "Wed, 01 Apr 2026 10:00:00 GMT" },
      sent: "if-modified-since",
      value: "Wed, 01 Apr 2026 10:00:00 GMT",
    },
  ])("revalidates with $name and a 304 confirms the copy", async ({ validator, sent, value }) => {
    const path = `/cond-${sent}.json`;
    routes.set(path, { status: 200, body: ours(["PSDNO-FSA-1"]), headers: validator, conditional: true });
    const reg = register();
    const source = createRegisterSource({ name: "overrides", url: `${base}${path}`, pollMs: 1000 }, reg);
    await source.refresh();
    expect(lastSeen(path)[sent]).toBeUndefined();
    expect(reg.layer("overrides").stats).toMatchObject({
      entries: 1,
      description: `${base}${path}`,
      ...camel(validator),
    });
    await source.refresh();
    expect(lastSeen(path)[sent]).toBe(value);
    expect(reg.layer("overrides").stats).toMatchObject({ entries: 1, failures: 0 });
  });

  it("keeps the last good copy through a 500 and a broken body, and loads the next good one", async () => {
    const path = "/flaky.json";
    routes.set(path, {
      status: 200,
      body: ours(["PSDNO-FSA-1"]),
      headers: { etag: '"a"' },
      conditional: true,
    });
    const reg = register();
    const layer = reg.layer("overrides");
    const source = createRegisterSource({ name: "overrides", url: `${base}${path}`, pollMs: 1000 }, reg);
    await source.refresh();
    routes.set(path, { status: 500, body: "down", headers: {}, conditional: false });
    await source.refresh();
    expect(layer.stats).toMatchObject({ entries: 1, failures: 1, lastError: "HTTP 500" });
    routes.set(path, { status: 200, body: "{ broken", headers: { etag: '"b"' }, conditional: true });
    await source.refresh();
    expect(layer.stats).toMatchObject({ entries: 1, failures: 2, etag: '"a"' });
    expect(layer.stats.lastError).toContain("not valid JSON");
    // The broken copy's ETag was not kept: the next request is unconditional on it.
    routes.set(path, {
      status: 200,
      body: ours(["PSDNO-FSA-1", "PSDNO-FSA-2"]),
      headers: { etag: '"b"' },
      conditional: true,
    });
    await source.refresh();
    expect(lastSeen(path)["if-none-match"]).toBe('"a"');
    expect(layer.stats).toMatchObject({ entries: 2, etag: '"b"' });
  });

  it.each([
    { name: "announced by Content-Length", chunked: false },
    { name: "streamed without a length", chunked: true },
  ])("refuses a body over the size cap, $name", async ({ chunked }) => {
    const path = `/big-${chunked}.json`;
    routes.set(path, {
      status: 200,
      body: ours(Array.from({ length: 5000 }, (_, i) => `PSDNO-FSA-${i}`)),
      headers: {},
      conditional: false,
      chunked,
    });
    const reg = register();
    const source = createRegisterSource(
      { name: "overrides", url: `${base}${path}`, pollMs: 1000, maxBytes: 50_000 },
      reg,
    );
    await source.refresh();
    expect(reg.layer("overrides").stats.entries).toBe(0);
    expect(reg.layer("overrides").stats.lastError).toMatch(/more than the 50000|larger than the 50000/);
  });

  it("loads the EBA's ZIP into its layer, under our JSON overrides", async () => {
    const zip = ebaRegisterZip(
      ebaRegisterDocument([
        { organizationId: "PSDFI-FINFSA-29884997", name: "Finnish Oy", roles: ["PSP_AI"] },
        {
          organizationId: "PSDMT-MFSA-C102960",
          name: "Gone Ltd",
          roles: ["PSP_PI"],
          withdrawnOn: "2024-03-01",
        },
      ]),
    );
    routes.set("/eba.zip", {
      status: 200,
      body: zip,
      headers: { etag: '"z"', "content-type": "application/zip" },
      conditional: true,
    });
    routes.set("/overrides.json", {
      status: 200,
      body: ours(["PSDMT-MFSA-C102960"]),
      headers: {},
      conditional: false,
    });
    const reg = register();
    const sources = [
      createRegisterSource({ name: "overrides", url: `${base}/overrides.json`, pollMs: 1000 }, reg),
      createRegisterSource({ name: "eba", url: `${base}/eba.zip`, pollMs: 1000, format: "eba-zip" }, reg),
    ];
    for (const source of sources) await source.refresh();
    expect(reg.layer("eba").stats).toMatchObject({ entries: 2, etag: '"z"', skipped: 1 });
    const finnish = reg.lookup("PSDFI-FINFSA-29884997", "ff");
    expect(isRejection(finnish) ? finnish.text : finnish.source).toBe("eba");
    const overridden = reg.lookup("PSDMT-MFSA-C102960", "ff");
    expect(isRejection(overridden) ? overridden.text : overridden.source).toBe("overrides");
    expect(String(lastSeen("/eba.zip").accept)).toContain("application/zip");
  });

  it("polls on its own once started, retrying sooner after a failure", async () => {
    const path = "/polled.json";
    routes.set(path, { status: 503, body: "", headers: {}, conditional: false });
    const reg = register();
    const source = createRegisterSource(
      { name: "overrides", url: `${base}${path}`, pollMs: 10_000, retryBaseMs: 20, random: () => 0.5 },
      reg,
    );
    await source.refresh(); // as the gateway does at start: one refresh, then the schedule
    source.start();
    try {
      await until(() => reg.layer("overrides").stats.failures >= 2);
      routes.set(path, { status: 200, body: ours(["PSDNO-FSA-1"]), headers: {}, conditional: false });
      await until(() => reg.layer("overrides").stats.entries === 1);
    } finally {
      source.stop();
    }
  });
});

describe("file register source", () => {
  it("reads an EBA ZIP by its magic, whatever the file is called, and reloads when it changes", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "psd2-reg-")), "register.bin");
    const tpp = { organizationId: "PSDFI-FINFSA-1", name: "One Oy", roles: ["PSP_AI" as const] };
    writeFileSync(file, ebaRegisterZip(ebaRegisterDocument([tpp])));
    const reg = new TppRegister({ sources: [{ name: "eba", maxAgeMs: 60_000 }] });
    const source = createRegisterSource({ name: "eba", file, pollMs: 1000 }, reg);
    expect(reg.stats.sources[0]!.description).toBe(file);
    await source.refresh();
    expect(reg.layer("eba").stats.entries).toBe(1);
    await source.refresh();
    expect(reg.layer("eba").stats.entries).toBe(1);
    writeFileSync(
      file,
      ebaRegisterZip(ebaRegisterDocument([tpp, { ...tpp, organizationId: "PSDFI-FINFSA-2" }])),
    );
    await source.refresh();
    expect(reg.layer("eba").stats.entries).toBe(2);
    writeFileSync(file, "not a register at all, and long enough");
    await source.refresh();
    expect(reg.layer("eba").stats).toMatchObject({ entries: 2, failures: 1 });
  });

  it("refuses a configuration with both or neither of file and url", () => {
    const reg = new TppRegister({ sources: [{ name: "eba", maxAgeMs: 1 }] });
    expect(() => createRegisterSource({ name: "eba", pollMs: 1 }, reg)).toThrow(
      "exactly one of file and url",
    );
    expect(() => createRegisterSource({ name: "nope", file: "x", pollMs: 1 }, reg)).toThrow(
      "no register source",
    );
  });
});

describe("poll schedule", () => {
  it.each([
    { name: "after a success: the poll interval", failures: 0, random: 0.5, expected: 300_000 },
    { name: "jitter low end (−10 %)", failures: 0, random: 0, expected: 270_000 },
    { name: "jitter high end (+10 %)", failures: 0, random: 1, expected: 330_000 },
    { name: "first failure: the retry base", failures: 1, random: 0.5, expected: 10_000 },
    { name: "third failure: doubled twice", failures: 3, random: 0.5, expected: 40_000 },
    { name: "many failures: capped at the poll interval", failures: 12, random: 0.5, expected: 300_000 },
    { name: "absurd failure count", failures: 10_000, random: 0.5, expected: 300_000 },
  ])("$name", ({ failures, random, expected }) => {
    expect(pollDelay(300_000, failures, { random: () => random })).toBe(expected);
  });

  it("never retries slower than it polls when the poll interval is short", () => {
    expect(pollDelay(5_000, 1, { random: () => 0.5 })).toBe(5_000);
  });
});

function camel(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([k, v]) => [k === "last-modified" ? "lastModified" : k, v]),
  );
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
