/**
 * Register sources against real files and a real HTTP server on loopback: conditional requests
 * (ETag and Last-Modified), failures that keep the last good copy, size caps, EBA ZIPs, the EBA's
 * metadata URL (the file it names, its size and SHA-256), and the poll schedule (jitter, back-off).
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ebaFileMetadata, ebaRegisterDocument, ebaRegisterZip } from "@psd2-gateway/dev-pki";
import { strToU8, zipSync } from "fflate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TppRegister } from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import { createRegisterSource, pollDelay, RegisterTrustSource } from "../../../src/trust/register-sources.js";

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

  describe("by the EBA's metadata URL", () => {
    const tpp = (n: number, withdrawnOn?: string) => ({
      organizationId: `PSDFI-FINFSA-${n}`,
      name: `Oy ${n}`,
      roles: ["PSP_AI" as const],
      ...(withdrawnOn ? { withdrawnOn } : {}),
    });
    const zipOf = (count: number) =>
      ebaRegisterZip(ebaRegisterDocument(Array.from({ length: count }, (_, i) => tpp(i + 1))));
    let case_ = 0;
    /** A fresh folder on the server per test: the metadata, and files published under it. */
    const publisher = () => {
      const root = `/m${++case_}`;
      let version = 0;
      const publish = (zip: Uint8Array, file: string, change: Record<string, string> = {}) => {
        routes.set(`${root}/files/${file}`, { status: 200, body: zip, headers: {}, conditional: false });
        const metadata = JSON.parse(
          ebaFileMetadata(zip, {
            context: `${base}${root}/files/`,
            relativePath: file,
            madeAt: new Date(Date.UTC(2026, 7, 24, 16, 0, version)),
          }),
        ) as Record<string, string>;
        routes.set(`${root}/filemetadata`, {
          status: 200,
          body: JSON.stringify({ ...metadata, ...change }),
          headers: { etag: `"${++version}"`, "content-type": "application/json" },
          conditional: true,
        });
      };
      const requests = (path: string) => seen.filter((s) => s.path === `${root}${path}`);
      return { root, publish, requests, url: `${base}${root}/filemetadata` };
    };
    const sourceOf = (url: string, options: { maxBytes?: number } = {}) => {
      const reg = register();
      const source = createRegisterSource({ name: "eba", metadata: url, pollMs: 1000, ...options }, reg);
      return { reg, layer: reg.layer("eba"), source };
    };

    it("loads the file the metadata names; an unchanged file is not fetched again", async () => {
      const p = publisher();
      const first = zipOf(2);
      p.publish(first, "20260824/download-PSDMD-202608241600.zip");
      const { reg, layer, source } = sourceOf(p.url);
      await source.refresh();
      expect(layer.stats).toMatchObject({ entries: 2, failures: 0, description: p.url });
      expect(source.held).toBe(
        `${base}${p.root}/files/20260824/download-PSDMD-202608241600.zip of Mon Aug 24 16:00:00 UTC 2026`,
      );
      expect(String(p.requests("/filemetadata")[0]!.headers.accept)).toContain("application/json");
      // The metadata unchanged: a 304, and the ZIP is not asked for.
      await source.refresh();
      expect(p.requests("/filemetadata").at(-1)!.headers["if-none-match"]).toBe('"1"');
      // New metadata (another timestamp) naming the same file: still not asked for.
      p.publish(first, "20260824/download-PSDMD-202608241600.zip", { timestamp: "later" });
      await source.refresh();
      expect(p.requests("/files/20260824/download-PSDMD-202608241600.zip")).toHaveLength(1);
      expect(layer.stats).toMatchObject({ entries: 2, failures: 0 });
      // A new file named: fetched and loaded.
      p.publish(zipOf(3), "20260825/download-PSDMD-202608251600.zip");
      await source.refresh();
      expect(layer.stats).toMatchObject({ entries: 3, failures: 0 });
      expect(source.held).toContain("20260825/download-PSDMD-202608251600.zip");
      // The same name republished with other bytes (another SHA-256): fetched again.
      p.publish(zipOf(1), "20260825/download-PSDMD-202608251600.zip");
      await source.refresh();
      expect(layer.stats).toMatchObject({ entries: 1, failures: 0 });
      expect(p.requests("/files/20260825/download-PSDMD-202608251600.zip")).toHaveLength(2);
      expect(new RegisterTrustSource(reg, [source]).status()[1]).toMatchObject({
        source: `eba: ${p.url}`,
        held: source.held,
        stale: false,
      });
    });

    it.each<{
      name: string;
      publish: (p: ReturnType<typeof publisher>) => void;
      error: string | RegExp;
      maxBytes?: number;
    }>([
      {
        name: "a ZIP whose SHA-256 is not the declared one",
        publish: (p) => p.publish(zipOf(3), "b.zip", { sha256_hash: "ab".repeat(32) }),
        error: /^SHA-256 check failed: the file hashes to [0-9a-f]{64}, its publisher declared (ab){32}$/,
      },
      {
        name: "a ZIP larger than declared",
        publish: (p) => {
          const zip = zipOf(3);
          p.publish(zip, "b.zip", { latest_version_relative_zip_size: String(zip.length - 1) });
        },
        error: /^size check failed: file .*\/b\.zip of .* is \d+ bytes, the metadata declares \d+$/,
      },
      {
        name: "a ZIP smaller than declared",
        publish: (p) => {
          const zip = zipOf(3);
          p.publish(zip, "b.zip", { latest_version_relative_zip_size: String(zip.length + 1) });
        },
        error: "size check failed",
      },
      {
        name: "a declared size over maxBytes (not downloaded)",
        publish: (p) => p.publish(zipOf(3), "b.zip", { latest_version_relative_zip_size: "999999999" }),
        error: "the metadata declares a file of 999999999 bytes, more than the 200000 allowed",
        maxBytes: 200_000,
      },
      {
        name: "metadata without a hash",
        publish: (p) => p.publish(zipOf(3), "b.zip", { sha256_hash: "" }),
        error: "metadata field sha256_hash",
      },
      {
        name: "metadata whose path climbs out with '..'",
        publish: (p) => p.publish(zipOf(3), "b.zip", { latest_version_relative_zip_path: "../a.zip" }),
        error: "metadata field latest_version_relative_zip_path: a '.' or '..' segment",
      },
      {
        name: "a file that is not there",
        publish: (p) => p.publish(zipOf(3), "b.zip", { latest_version_relative_zip_path: "gone.zip" }),
        error: /^file .*\/gone\.zip of .*: HTTP 404$/,
      },
      {
        name: "a JSON that does not match the sidecar in the ZIP",
        publish: (p) => {
          const json = strToU8(JSON.stringify(ebaRegisterDocument([tpp(1), tpp(2), tpp(3)])));
          const zip = zipSync({ "r.json": json, "r.json.sha256": strToU8("cd".repeat(32)) });
          p.publish(zip, "b.zip");
        },
        error:
          /^SHA-256 check failed: r\.json hashes to [0-9a-f]{64}, its sidecar r\.json\.sha256 says (cd){32}$/,
      },
      {
        name: "metadata that is a maintenance page",
        publish: (p) =>
          routes.set(`${p.root}/filemetadata`, {
            status: 200,
            body: "<html>maintenance</html>",
            headers: {},
            conditional: false,
          }),
        error: "metadata is not JSON",
      },
    ])("refuses $name and keeps the copy held", async ({ publish, error, maxBytes }) => {
      const p = publisher();
      p.publish(zipOf(2), "a.zip");
      const { layer, source } = sourceOf(p.url, maxBytes ? { maxBytes } : {});
      await source.refresh();
      const held = source.held;
      expect(held).toContain("/a.zip");
      publish(p);
      await source.refresh();
      expect(layer.stats).toMatchObject({ entries: 2, failures: 1, description: p.url });
      expect(layer.stats.lastError).toMatch(error);
      expect(source.held).toBe(held);
    });

    it("fetches the file again after a failed load, and loads it once it checks", async () => {
      const p = publisher();
      const zip = zipOf(2);
      p.publish(zip, "a.zip", { sha256_hash: "ab".repeat(32) });
      const { reg, layer, source } = sourceOf(p.url);
      await source.refresh();
      await source.refresh();
      expect(p.requests("/files/a.zip")).toHaveLength(2);
      expect(layer.stats).toMatchObject({ entries: 0, failures: 2, lastSuccess: undefined });
      // Never loaded: stale, and a stale register source fails readiness, as the URL form's does.
      const status = () => new RegisterTrustSource(reg, [source]).status();
      expect(status().find((st) => st.source === `eba: ${p.url}`)).toMatchObject({
        stale: true,
        failsReadiness: true,
        lastError: expect.stringContaining("SHA-256 check failed"),
      });
      expect(status()[1]!.held).toBeUndefined();
      p.publish(zip, "a.zip");
      await source.refresh();
      expect(layer.stats).toMatchObject({ entries: 2, failures: 2 });
    });
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

  it.each([
    { name: "neither", where: {} },
    { name: "file and url", where: { file: "x", url: "https://r.example/r.json" } },
    { name: "url and metadata", where: { url: "https://r.example/r.zip", metadata: "https://r.example/m" } },
  ])("refuses a configuration with $name of file, url and metadata", ({ where }) => {
    const reg = new TppRegister({ sources: [{ name: "eba", maxAgeMs: 1 }] });
    expect(() => createRegisterSource({ name: "eba", pollMs: 1, ...where }, reg)).toThrow(
      "exactly one of file, url and metadata",
    );
  });

  it("refuses a layer the register does not have", () => {
    const reg = new TppRegister({ sources: [{ name: "eba", maxAgeMs: 1 }] });
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
