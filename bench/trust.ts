/**
 * `npm run bench:trust`: what live revocation (commit f39ccfb: OCSP to the certificate's AIA
 * responder, then CRLs, cached) costs, all in one run, rounds interleaved, medians (as the
 * 2026-11-22 anchor measurements were made):
 * (a) cached requests: the gateway at HEAD with live trust (revocation ocsp-crl against a loopback
 *     QTSP whose URLs the TPP certificates carry) against the gateway as it was before (commit
 *     e5be47b, local CRL files), each a compiled build in a git worktree and a process of its own,
 *     the same signed GET by TPP A, the same backend; the verdict is cached after the first request,
 *     so what is measured is the hot path. Goal: HEAD ÷ before ≈ 1.0.
 * (b) never-seen certificates, in this process: `LiveRevocation.check` (order "ocsp") for distinct
 *     certificates nobody has asked about, each an OCSP round trip to a loopback responder (a process
 *     of its own); for context the same through `TppVerifier.verify` (parse, chain, OCSP, no
 *     register) and the bare OCSP HTTP round trip with undici. Goal: median ≤ 2 ms per check.
 * Results go to bench/RESULTS.md, section "Live trust: cached requests and never-seen certificates
 * (bench/trust.ts)".
 *
 * The builds are made when missing: a git worktree of e5be47b in /tmp/gw-before and of HEAD in
 * /tmp/gw-head, node_modules symlinked into each, `tsc -p tsconfig.build.json` in each (the HEAD
 * build from a worktree too, so both gateways are tsc's output run the same way). Remove them with
 * `git worktree remove --force <dir>` (each) to bench a newer HEAD.
 *
 * Environment: BENCH_BEFORE (default /tmp/gw-before), BENCH_HEAD (default /tmp/gw-head),
 * BENCH_SECONDS (default 10), BENCH_ROUNDS (default 5), BENCH_POOL (presigned GETs, default 50000),
 * BENCH_CHECKS (never-seen certificates per series and round, default 300).
 * Smoke: BENCH_SECONDS=2 BENCH_ROUNDS=1 BENCH_POOL=8000 BENCH_CHECKS=40.
 * Every run of (a) is judged (bench/validity.ts, issue 42): one with a non-2xx answer, a failed
 * request or a wrapped pool is refused with its reasons on stderr; then nothing is written and the
 * bench exits 1.
 */

import "reflect-metadata";
import { execFileSync } from "node:child_process";
import { createPrivateKey } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import * as x509 from "@peculiar/x509";
import { buildOcspResponse } from "@psd2-gateway/dev-pki";
import { request } from "undici";
import { startTrust } from "../src/app/trust.js";
import { validateConfig } from "../src/config/load.js";
import { type ParsedCertificate, parseCertificate, TppVerifier } from "../src/eidas/index.js";
import { isRejection } from "../src/errors.js";
import { createLogger } from "../src/observability/logger.js";
import { buildOcspRequest, readOcspResponse } from "../src/trust/formats/ocsp.js";
import { revocationSourcesOf } from "../src/trust/revocation-sources.js";
import { loadTrustMaterial } from "../src/trust/trust-material.js";
import { qtspPki } from "../test/helpers/test-qtsp.js";
import { freshCertificates } from "./fresh-certificates.js";
import {
  type Child,
  factsOf,
  Judged,
  load,
  median,
  pin,
  presign,
  type RunResult,
  startChild,
  stop,
  tppRequestHeaders,
} from "./harness.js";
import type { PresignedRequest } from "./presign.js";
import { machineLine, replaceSection } from "./results-file.js";
import type { QtspStats } from "./servers/qtsp.js";
import { CAN_PIN } from "./taskset.js";

const BEFORE = process.env.BENCH_BEFORE ?? "/tmp/gw-before";
const HEAD = process.env.BENCH_HEAD ?? "/tmp/gw-head";
/** The last commit before live trust: "today" for goal (a). */
const BEFORE_COMMIT = "e5be47b";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const POOL = Number(process.env.BENCH_POOL ?? 50_000);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 300);
const CONNECTIONS = 50;
const SECTION = "Live trust: cached requests and never-seen certificates (bench/trust.ts)";
const GET_PATH = "/v1/accounts/acc-0001/balances";

// ---- small helpers ---------------------------------------------------------------------------------

function ask<T>(child: Child, message: string): Promise<T> {
  return new Promise((resolve) => {
    child.process.once("message", (m: T) => resolve(m));
    child.process.send(message);
  });
}

const qtspStats = (qtsp: Child) => ask<QtspStats>(qtsp, "cpu");
const cpuUs = (c: NodeJS.CpuUsage) => c.user + c.system;

function send(port: number, r: PresignedRequest): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, method: r.method, path: r.path, headers: r.headers, agent: false },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end(r.body);
  });
}

function must(condition: unknown, what: string): void {
  if (!condition) throw new Error(`check failed: ${what}`);
}

/** The commit a worktree holds, short. */
function commitOf(dir: string): string {
  try {
    return execFileSync("git", ["-C", dir, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
}

const quantile = (xs: readonly number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
};
const ms = (x: number) => x.toFixed(2);
const fixed = (x: number) => Math.round(x).toLocaleString("en-US");

// ---- (a) cached requests: HEAD with live trust against the gateway before it -------------------------

interface GatewayVariant {
  readonly key: string;
  readonly label: string;
  readonly dist: string;
  readonly config: Record<string, unknown>;
}

function variants(pkiDir: string, qtspUrl: string, backendUrl: string, work: string): GatewayVariant[] {
  // What every bench gateway runs (bench/servers/gateway-config.ts, the same at e5be47b).
  const base = {
    listen: { host: "127.0.0.1", port: 0 },
    backend: { url: backendUrl },
    verification: { dateToleranceSeconds: 3600 },
    replay: { windowSeconds: 7200 },
    log: { level: "silent" },
    admin: { enabled: false },
  };
  const revocation = { order: "ocsp-crl", crl: { cacheDir: join(work, "crl-cache") } };
  return [
    {
      key: "before",
      label: "before (e5be47b): local CRL file in trust/",
      dist: join(BEFORE, "dist"),
      config: { ...base, trust: { caDir: `${pkiDir}/trust` }, register: { file: `${pkiDir}/register.json` } },
    },
    {
      key: "head-live",
      label: "HEAD, live revocation (ocsp-crl), register file",
      dist: join(HEAD, "dist"),
      config: {
        ...base,
        trust: { caDir: `${pkiDir}/trust` },
        register: { file: `${pkiDir}/register.json` },
        revocation,
      },
    },
    {
      key: "head-default",
      label: "HEAD, as config/default.yaml: live revocation, trusted lists, register overrides + EBA ZIP",
      dist: join(HEAD, "dist"),
      config: {
        ...base,
        trust: {
          caDir: `${pkiDir}/trust`,
          trustedLists: { lotl: `${qtspUrl}/lotl.xml`, lotlSigners: [`${pkiDir}/qtsp/lotl-signer.pem`] },
        },
        register: {
          sources: [
            { name: "overrides", file: `${pkiDir}/register-overrides.json` },
            { name: "eba", url: `${qtspUrl}/eba-register.zip`, format: "eba-zip" },
          ],
        },
        revocation,
      },
    },
  ];
}

interface GatewayRun {
  readonly run: RunResult;
  /** OCSP requests the QTSP answered during the measured run (0: the hot path never left the cache). */
  readonly ocspDuring: number;
  /** OCSP requests from the gateway's start to the end of its warm-up. */
  readonly ocspBefore: number;
  readonly wrapped: boolean;
}

async function cachedRequests(
  pkiDir: string,
  qtspUrl: string,
  qtspPort: number,
  work: string,
  judged: Judged,
) {
  const qtsp = await startChild("servers/qtsp.ts", ["demo", pkiDir, String(qtspPort)]);
  const extraHeaders = tppRequestHeaders("3b0f7a52-6a3c-4d1e-8f55-2c1f0e9d7b61");
  const keyPem = readFileSync(join(pkiDir, "tpp", "tpp-a-qseal.key.pem"), "utf8");
  const certPem = readFileSync(join(pkiDir, "tpp", "tpp-a-qseal.pem"), "utf8");
  console.error(`bench:trust: presigning ${POOL} GETs …`);
  const pool = await presign({
    keyPem,
    certificatePems: [certPem],
    extraHeaders,
    count: POOL,
    method: "GET",
    target: GET_PATH,
  });
  const runs: Record<string, GatewayRun[]> = {};
  let labels: Record<string, string> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const backend = await startChild("servers/backend.ts", []);
    const all = variants(pkiDir, qtspUrl, `http://127.0.0.1:${backend.port}`, work);
    labels = Object.fromEntries(all.map((v) => [v.key, v.label]));
    // Interleaved, and rotated each round so that neither build always goes first.
    const order = all.map((_, i) => all[(i + round) % all.length]!);
    for (const variant of order) {
      const ocsp0 = (await qtspStats(qtsp)).ocspRequests;
      const gateway = await startChild("servers/trust-gateway.ts", [variant.dist], 0, {
        BENCH_TRUST_CONFIG: JSON.stringify(variant.config),
      });
      const cursor = { next: 0 };
      const first = await send(gateway.port, pool[cursor.next++]!);
      must(
        first.status === 200,
        `${variant.key}: the first request answers 200 (got ${first.status}: ${first.body})`,
      );
      await load(gateway.port, pool, cursor, 1); // warm up: JIT, connections
      const ocsp1 = (await qtspStats(qtsp)).ocspRequests;
      const run = await load(gateway.port, pool, cursor, SECONDS, gateway);
      const ocsp2 = (await qtspStats(qtsp)).ocspRequests;
      const r: GatewayRun = {
        run,
        ocspBefore: ocsp1 - ocsp0,
        ocspDuring: ocsp2 - ocsp1,
        wrapped: cursor.next > pool.length,
      };
      // Issue 42: a run with refusals, failures or a wrapped pool is no result.
      const facts = factsOf(run, { knobs: { pool: "BENCH_POOL", shorten: ["BENCH_SECONDS"] } });
      if (!judged.ok(`${variant.key}, round ${round + 1}`, facts)) {
        await stop(gateway);
        continue;
      }
      console.error(
        `round ${round + 1} ${variant.key.padEnd(13)} ${fixed(run.rps)} req/s p50 ${run.p50} ms p99 ${run.p99} ms cpu ${run.cpuUsPerRequest?.toFixed(0)} µs/req non2xx ${run.non2xx} errors ${run.errors}; OCSP before ${r.ocspBefore} during ${r.ocspDuring}${r.wrapped ? " (pool wrapped)" : ""}`,
      );
      runs[variant.key] = [...(runs[variant.key] ?? []), r];
      await stop(gateway);
    }
    await stop(backend);
  }
  await stop(qtsp);
  return { runs, labels };
}

// ---- (b) never-seen certificates ------------------------------------------------------------------------

/** `count` never-seen certificates like TPP A's QSealC (CDP and AIA naming the bench's QTSP), parsed. */
async function issueFresh(pkiDir: string, count: number): Promise<ParsedCertificate[]> {
  return (await freshCertificates(pkiDir, count, "5b")).map((cert) => {
    const parsed = parseCertificate(new Uint8Array(cert.rawData));
    if (isRejection(parsed)) throw new Error(`a fresh certificate does not parse: ${parsed.text}`);
    return parsed;
  });
}

type SeriesKey = "check" | "verify" | "bare";

interface Series {
  /** Per check, ms. */
  readonly times: number[];
  /** Answers that were not "good" / not accepted / not HTTP 200. */
  readonly failed: number;
  /** This process's CPU per check, µs. */
  readonly cpuUs: number;
  /** The responder's CPU per OCSP answer, µs, and how many it answered. */
  readonly responderCpuUs: number;
  readonly responderAnswers: number;
}

async function neverSeen(pkiDir: string, qtspPort: number, work: string) {
  let qtsp = await startChild("servers/qtsp.ts", ["good", pkiDir, String(qtspPort)]);
  const issuer = parseCertificate(
    new Uint8Array(
      new x509.X509Certificate(readFileSync(join(pkiDir, "trust", "demo-issuing-ca.pem"), "utf8")).rawData,
    ),
  ) as ParsedCertificate;
  const trust = loadTrustMaterial(`${pkiDir}/trust`);
  const config = validateConfig({
    listen: { host: "127.0.0.1", port: 0 },
    backend: { url: "http://127.0.0.1:9" },
    trust: { caDir: `${pkiDir}/trust` },
    register: { file: `${pkiDir}/register.json` },
    revocation: { order: "ocsp", crl: { cacheDir: join(work, "crl-cache-b") } },
    log: { level: "silent" },
    admin: { enabled: false },
  });
  const logger = createLogger("silent");
  // The trust sources as the gateway starts them; only their LiveRevocation is asked.
  const startLive = () => startTrust(config, { logger, now: Date.now, onChange: () => {} });

  const keys: SeriesKey[] = ["check", "verify", "bare"];
  const warm = 20;
  const perRound = CHECKS + warm;
  console.error(`bench:trust: issuing ${keys.length * ROUNDS * perRound} never-seen certificates …`);
  const t0 = performance.now();
  // One more series after the interleaved ones: the check against answers made ahead.
  const fresh = await issueFresh(pkiDir, (keys.length + 1) * ROUNDS * perRound);
  console.error(`bench:trust: issued in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  let next = 0;
  const take = () => {
    next += perRound;
    return fresh.slice(next - perRound, next);
  };
  const ocspUrl = `http://127.0.0.1:${qtspPort}/ocsp`;

  /** Runs `one` over the certificates one at a time (the first `warm` not counted), timing each. */
  const series = async (
    certs: ParsedCertificate[],
    one: (c: ParsedCertificate, i: number) => Promise<boolean>,
  ): Promise<Series> => {
    for (let i = 0; i < warm; i++) await one(certs[i]!, i);
    const q0 = await qtspStats(qtsp);
    const c0 = process.cpuUsage();
    const times: number[] = [];
    let failed = 0;
    for (let i = warm; i < certs.length; i++) {
      const start = performance.now();
      const ok = await one(certs[i]!, i);
      times.push(performance.now() - start);
      if (!ok) failed++;
    }
    const cpu = cpuUs(process.cpuUsage(c0));
    const q1 = await qtspStats(qtsp);
    const answers = q1.ocspRequests - q0.ocspRequests;
    return {
      times,
      failed,
      cpuUs: cpu / times.length,
      responderCpuUs: answers > 0 ? (cpuUs(q1.cpu) - cpuUs(q0.cpu)) / answers : 0,
      responderAnswers: answers,
    };
  };

  const results: Record<SeriesKey, Series[]> = { check: [], verify: [], bare: [] };
  const parts: Record<PartKey, number[]> = { sources: [], request: [], read: [], parse: [], respond: [] };
  const ca = {
    certificate: issuer.der,
    privateKey: createPrivateKey(readFileSync(join(pkiDir, "issuing-ca.key.pem"), "utf8")),
  };
  for (let round = 0; round < ROUNDS; round++) {
    const order = keys.map((_, i) => keys[(i + round) % keys.length]!);
    for (const key of order) {
      const certs = take();
      let s: Series;
      if (key === "check") {
        const live = await startLive();
        s = await series(certs, async (c) => {
          const status = await live.revocation.check(c, issuer, new Date());
          return !status.refusal && status.validUntil !== undefined;
        });
        live.stop();
      } else if (key === "verify") {
        const live = await startLive();
        const verifier = new TppVerifier({
          trustStore: () => trust.store,
          revocation: () => live.revocation,
          cacheTtlMs: 300_000,
          failureTtlMs: 10_000,
          maxEntries: 10_000,
        });
        const headers = certs.map((c) => Buffer.from(c.der).toString("base64"));
        s = await series(certs, async (_c, i) => !isRejection(await verifier.verify(headers[i]!)));
        live.stop();
      } else {
        const bodies = certs.map((c) => Buffer.from(buildOcspRequest(c, issuer)));
        s = await series(certs, async (_c, i) => {
          const response = await request(ocspUrl, {
            method: "POST",
            headers: { "content-type": "application/ocsp-request", accept: "application/ocsp-response" },
            body: bodies[i]!,
          });
          const body = Buffer.from(await response.body.arrayBuffer());
          return response.statusCode === 200 && body.length > 0;
        });
      }
      console.error(
        `round ${round + 1} ${key.padEnd(6)} median ${ms(median(s.times))} ms p99 ${ms(quantile(s.times, 0.99))} ms max ${ms(Math.max(...s.times))} ms; cpu ${s.cpuUs.toFixed(0)} µs/check; responder ${s.responderCpuUs.toFixed(0)} µs/answer (${s.responderAnswers}); failed ${s.failed}`,
      );
      results[key].push(s);
    }
    // Where a check's time goes, without the network: each step alone, µs per call, on one
    // certificate (the cost does not depend on which).
    const c = fresh[0]!;
    const requestDer = buildOcspRequest(c, issuer);
    const responseOf = () =>
      buildOcspResponse({
        request: requestDer,
        ca,
        status: () => ({ status: "good" }),
        thisUpdate: new Date(),
        nextUpdate: new Date(Date.now() + 3_600_000),
      });
    const responseDer = responseOf();
    const steps: Record<PartKey, () => unknown> = {
      sources: () => revocationSourcesOf(c),
      request: () => buildOcspRequest(c, issuer),
      read: () => readOcspResponse(responseDer, { certificate: c, issuer, now: new Date() }),
      parse: () => parseCertificate(c.der),
      respond: responseOf,
    };
    for (const [key, step] of Object.entries(steps) as [PartKey, () => unknown][]) {
      for (let i = 0; i < 50; i++) step();
      const start = performance.now();
      for (let i = 0; i < PART_CALLS; i++) step();
      parts[key].push(((performance.now() - start) * 1000) / PART_CALLS);
    }
    console.error(
      `round ${round + 1} parts ${Object.entries(parts)
        .map(([k, v]) => `${k} ${v[v.length - 1]!.toFixed(0)} µs`)
        .join(", ")}`,
    );
  }
  // A QTSP signs ahead (RFC 5019 6): the same check against a responder that serves answers made
  // before the measured request, so the time is the gateway's and the loopback's, not the signing.
  await stop(qtsp);
  qtsp = await startChild("servers/qtsp.ts", ["reuse", pkiDir, String(qtspPort)]);
  const reused: Series[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const certs = take();
    for (const c of certs) {
      const response = await request(ocspUrl, {
        method: "POST",
        headers: { "content-type": "application/ocsp-request" },
        body: Buffer.from(buildOcspRequest(c, issuer)),
      });
      await response.body.dump();
    }
    const live = await startLive();
    const s = await series(certs, async (c) => {
      const status = await live.revocation.check(c, issuer, new Date());
      return !status.refusal && status.validUntil !== undefined;
    });
    live.stop();
    console.error(
      `round ${round + 1} reused median ${ms(median(s.times))} ms p99 ${ms(quantile(s.times, 0.99))} ms; responder answers during the series ${s.responderAnswers}; failed ${s.failed}`,
    );
    reused.push(s);
  }
  await stop(qtsp);
  return { results, parts, reused };
}

type PartKey = "sources" | "request" | "read" | "parse" | "respond";
const PART_CALLS = 200;
const PART_NAMES: Record<PartKey, string> = {
  sources: "`revocationSourcesOf` (the AIA and CDP extensions read with @peculiar/asn1-schema)",
  request: "`buildOcspRequest` (CertID: two SHA-1s, serialised with @peculiar/asn1-schema)",
  read: "`readOcspResponse` (the envelope read with the gateway's DER reader, BasicOCSPResponse parsed with @peculiar/asn1-schema, `crypto.verify` RSA-2048, the checks)",
  parse: "for comparison: `parseCertificate` of the leaf (the gateway's own DER reader)",
  respond:
    "the demo responder's `buildOcspResponse` (packages/dev-pki/src/qtsp: parses the request, builds the answer with @peculiar/asn1-ocsp, RSA-2048 `crypto.sign`)",
};

// ---- the run and RESULTS.md ---------------------------------------------------------------------------

/** A compiled build of `commit` in a git worktree at `dir`, made when missing (node_modules shared). */
function ensureBuild(dir: string, commit: string): void {
  if (existsSync(join(dir, "dist", "app.js"))) return;
  const repo = join(import.meta.dirname, "..");
  console.error(`bench:trust: building ${commit} in ${dir} …`);
  if (!existsSync(dir))
    execFileSync("git", ["-C", repo, "worktree", "add", "--detach", dir, commit], { stdio: "inherit" });
  if (!existsSync(join(dir, "node_modules")))
    symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
  try {
    execFileSync(
      process.execPath,
      [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"],
      {
        cwd: dir,
        stdio: "inherit",
      },
    );
  } catch (error) {
    // An old commit checked against today's dependencies' types may fail the check and still emit
    // (tsc emits unless noEmitOnError): its JavaScript is what ran then, so it is used.
    if (!existsSync(join(dir, "dist", "app.js"))) throw error;
    console.error(
      `bench:trust: ${commit} has type errors against today's dependencies; its emitted JS is used`,
    );
  }
}

async function main() {
  ensureBuild(BEFORE, BEFORE_COMMIT);
  ensureBuild(HEAD, "HEAD");
  if (CAN_PIN) pin(process.pid, 1);
  const loadBefore = loadavg().map((x) => x.toFixed(2));
  const started = performance.now();
  const q = await qtspPki();
  const pkiDir = q.pki.dir;
  const work = mkdtempSync(join(tmpdir(), "psd2-bench-trust-"));
  console.error(
    `bench:trust: PKI in ${pkiDir} naming the QTSP ${q.url}; ${SECONDS}s per run, ${ROUNDS} round(s), pinned: ${CAN_PIN}; load average ${loadBefore.join(", ")}`,
  );
  const judged = new Judged();
  const cached = await cachedRequests(pkiDir, q.url, q.port, work, judged);
  // Part (a) refused: no figure and no section; part (b) is not run.
  if (judged.anyRefused) process.exit(judged.finish(`the section "${SECTION}" of RESULTS.md`));
  const fresh = await neverSeen(pkiDir, q.port, work);
  const loadAfter = loadavg().map((x) => x.toFixed(2));
  const minutes = (performance.now() - started) / 60_000;
  writeFileSync(join(work, "trust-results.json"), JSON.stringify({ cached, fresh }, null, 2));

  const section = write(cached, fresh, { loadBefore, loadAfter, minutes });
  replaceSection(SECTION, section);
  console.log(section);
  process.exit(0);
}

function write(
  cached: Awaited<ReturnType<typeof cachedRequests>>,
  fresh: Awaited<ReturnType<typeof neverSeen>>,
  c: { loadBefore: string[]; loadAfter: string[]; minutes: number },
): string {
  const { runs, labels } = cached;
  const keys = Object.keys(labels);
  const m = (key: string, f: (r: GatewayRun) => number) => median((runs[key] ?? []).map(f));
  const rps = (key: string) => m(key, (r) => r.run.rps);
  const perRound = (key: string) => (runs[key] ?? []).map((r) => fixed(r.run.rps)).join(" · ");
  const ratios = (key: string) =>
    (runs[key] ?? []).map((r, i) => r.run.rps / (runs.before?.[i]?.run.rps ?? Number.NaN));
  const ratioCell = (key: string) => {
    const rs = ratios(key);
    return `${(rps(key) / rps("before")).toFixed(2)} (per round ${rs.map((x) => x.toFixed(2)).join(" · ")}; ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)})`;
  };
  const bad = (key: string) => m(key, (r) => r.run.non2xx + r.run.errors);
  const rowsA = keys.map(
    (key) =>
      `| ${labels[key]} | ${perRound(key)} | ${fixed(rps(key))} | ${m(key, (r) => r.run.p50)} | ${m(key, (r) => r.run.p99)} | ${m(key, (r) => r.run.cpuUsPerRequest ?? 0).toFixed(0)} | ${key === "before" ? "–" : `${m(key, (r) => r.ocspBefore)} / ${(runs[key] ?? []).reduce((n, r) => n + r.ocspDuring, 0)}`} | ${bad(key)} |`,
  );
  const wrapped = Object.values(runs).some((rs) => rs.some((r) => r.wrapped));
  const headRatio = rps("head-live") / rps("before");
  const defaultRatio = rps("head-default") / rps("before");
  /** Met when the ratio is within 5 % of 1, or when the rounds' ratios straddle 1 (the difference is below the noise). */
  const verdict = (key: string, ratio: number) => {
    const rs = ratios(key);
    if (Math.abs(ratio - 1) <= 0.05) return "**met** (within 5 %)";
    if (Math.min(...rs) <= 1 && Math.max(...rs) >= 1)
      return `**met** within the noise (${ratio >= 1 ? "+" : ""}${((ratio - 1) * 100).toFixed(0)} %, but the rounds' ratios straddle 1.0)`;
    return ratio < 1 ? "**missed** (slower in every round)" : "faster in every round";
  };
  const cpuDelta = (key: string) =>
    (m(key, (r) => r.run.cpuUsPerRequest ?? 0) - m("before", (r) => r.run.cpuUsPerRequest ?? 0)).toFixed(0);

  const names: Record<SeriesKey, string> = {
    check:
      "`LiveRevocation.check`, order `ocsp` (request built, POST, response parsed and its signature verified, cached)",
    verify:
      "`TppVerifier.verify` (header decoded, certificate parsed, PSD2 check, chain, OCSP as above; no register)",
    bare: "bare OCSP round trip with undici `request` (prebuilt request, POST, body read; nothing parsed)",
  };
  const { results: series, parts } = fresh;
  const sm = (key: SeriesKey, f: (s: Series) => number) => median(series[key].map(f));
  const rowsB = (Object.keys(names) as SeriesKey[]).map((key) => {
    const medians = series[key].map((s) => median(s.times));
    return `| ${names[key]} | ${medians.map(ms).join(" · ")} | **${ms(sm(key, (s) => median(s.times)))}** | ${ms(sm(key, (s) => quantile(s.times, 0.99)))} | ${ms(sm(key, (s) => Math.max(...s.times)))} | ${fixed(sm(key, (s) => s.cpuUs))} | ${fixed(sm(key, (s) => s.responderCpuUs))} | ${series[key].reduce((n, s) => n + s.failed, 0)} |`;
  });
  const reusedMedian = median(fresh.reused.map((s) => median(s.times)));
  const reusedP99 = median(fresh.reused.map((s) => quantile(s.times, 0.99)));
  rowsB.push(
    `| \`LiveRevocation.check\` as above, against a responder serving answers it made ahead (bench/servers/qtsp.ts \`reuse\`, RFC 5019 6), measured after the interleaved series, not interleaved with them | ${fresh.reused.map((s) => ms(median(s.times))).join(" · ")} | **${ms(reusedMedian)}** | ${ms(reusedP99)} | ${ms(median(fresh.reused.map((s) => Math.max(...s.times))))} | ${fixed(median(fresh.reused.map((s) => s.cpuUs)))} | ${fixed(median(fresh.reused.map((s) => s.responderCpuUs)))} | ${fresh.reused.reduce((n, s) => n + s.failed, 0)} |`,
  );
  const checkMedian = sm("check", (s) => median(s.times));
  const checkP99 = sm("check", (s) => quantile(s.times, 0.99));
  const met = checkMedian <= 2;
  const n = series.check[0]?.times.length ?? 0;
  const part = (key: PartKey) => median(parts[key]);
  const rowsParts = (Object.keys(PART_NAMES) as PartKey[]).map(
    (key) =>
      `| ${PART_NAMES[key]} | ${parts[key].map((x) => x.toFixed(0)).join(" · ")} | ${fixed(part(key))} |`,
  );
  const ownUs = part("sources") + part("request") + part("read");
  const bareMedian = sm("bare", (s) => median(s.times));

  return `
${machineLine()}, the gateway at commit ${commitOf(HEAD)} (HEAD) against ${commitOf(BEFORE)} (before live trust). **The machine was shared** (load average ${c.loadBefore.join(", ")} before the run, ${c.loadAfter.join(", ")} after); the whole run took ${c.minutes.toFixed(1)} min. Run with \`npm run bench:trust\` (it builds both commits in git worktrees when they are missing: see the file's header).

The PKI is the dev PKI generated for a QTSP on a free loopback port (test/helpers/test-qtsp.ts \`qtspPki()\`): TPP A's QSealC names that port as its OCSP responder (AIA) and CRL distribution point. The QTSP is a process of its own (bench/servers/qtsp.ts).

**(a) Cached requests.** Each build is tsc's output (\`tsc -p tsconfig.build.json\` in a git worktree of its commit) started by bench/servers/trust-gateway.ts with that build's own \`validateConfig\` and \`startGateway\`, a process of its own pinned to core 0 with the backend (bench/servers/backend.ts, 313 bytes of JSON); autocannon on core 1, ${CONNECTIONS} connections, ${SECONDS} s per gateway after one checked request (200) and 1 s of warm-up, ${ROUNDS} rounds, the gateways interleaved and their order rotated each round, medians. Every gateway gets the same presigned GET ${GET_PATH} by TPP A (bench/run.ts's requests: about 2.6 KB of headers, each with its own X-Request-ID, so replay protection refuses nothing). Both builds get bench/run.ts's config (caDir trust/, register.json, wide Date window, silent log, admin off); "before" checks revocation with the CRL file in trust/ as it did then; HEAD adds \`revocation: { order: ocsp-crl }\` so the first request waits for the QTSP's OCSP answer and the verdict is cached (the answer is valid 1 h, refreshed after 30 min); the third gateway is configured as config/default.yaml is (the LOTL and national list from the QTSP as qualified anchors, register sources overrides + the EBA ZIP from the QTSP), without default.yaml's responseSigning, TLS and demo bank, which the before build would not have. "OCSP" counts the requests the QTSP answered: from the gateway's start to the end of its warm-up (median per gateway), and during all measured runs together (0: the measured path never left the cache).

| gateway | req/s per round | req/s median | p50 ms | p99 ms | gateway CPU µs/request | OCSP warm-up / measured | non-2xx + errors |
|---|---|---:|---:|---:|---:|---:|---:|
${rowsA.join("\n")}

| target | HEAD ÷ before (median of medians; per round) | goal | |
|---|---|---|---|
| live revocation, register file | ${ratioCell("head-live")} | ≈ 1.0 | ${verdict("head-live", headRatio)} |
| as config/default.yaml | ${ratioCell("head-default")} | ≈ 1.0 | ${verdict("head-default", defaultRatio)} |

Gateway CPU per request, HEAD − before: ${cpuDelta("head-live")} µs (live revocation), ${cpuDelta("head-default")} µs (as default.yaml).${wrapped ? "\n\n**The presigned pool wrapped round during a run: some requests were replays (raise BENCH_POOL).**" : ""}

**(b) Never-seen certificates.** In the bench process (pinned to core 1), one check at a time, awaited: ${n} certificates per series and round (after 20 not counted, which open the keep-alive connection and warm the JIT), ${ROUNDS} rounds, the series interleaved and rotated, each certificate used once (never seen by any cache). They are issued for the run by the dev issuing CA with @peculiar/x509, all on TPP A's key with TPP A's QSealC extensions (QCStatements, CDP, AIA naming the loopback responder), distinct serials. The responder (bench/servers/qtsp.ts \`good\`: packages/dev-pki/src/qtsp/server.ts signing each answer with the issuing CA's RSA-2048 key, "good" for every serial) runs in its own process on core 0. \`LiveRevocation\` is built by \`startTrust\` (src/app/trust.ts) with the other trust sources from a validated config, order \`ocsp\`, as the gateway builds it. Times per check; the p99 and max are per round (of ${n} checks), then the median over rounds. "This process's CPU" is the bench process's CPU time per check (client side, all threads); "responder CPU" the QTSP process's per OCSP answer.

| series | median ms per round | median ms | p99 ms | max ms | this process's CPU µs/check | responder CPU µs/answer | failed |
|---|---|---:|---:|---:|---:|---:|---:|
${rowsB.join("\n")}

Where a check's time goes, without the network (in the same process, each step alone on one certificate, ${PART_CALLS} calls after 50 not counted, once per round, µs per call):

| step | µs per round | median µs |
|---|---|---:|
${rowsParts.join("\n")}

The gateway's own OCSP work per never-seen certificate is thus about ${fixed(ownUs)} µs of CPU (sources + request + response) before any network; the demo responder spends ${fixed(part("respond"))} µs per answer on its side.

Goal (a never-seen certificate with an OCSP round trip to a loopback responder ≤ 2 ms, median): against the responder that signs each answer ${met ? "**met**" : "**missed**"}; against the responder serving answers made ahead, as QTSPs do, ${reusedMedian <= 2 ? "**met**" : "**missed**"} (${ms(reusedMedian)} ms median, ${ms(reusedP99)} ms p99). Signing each answer: ${ms(checkMedian)} ms median, ${ms(checkP99)} ms p99 for \`LiveRevocation.check\`; through \`TppVerifier.verify\` (parse and chain too) ${ms(sm("verify", (s) => median(s.times)))} ms. The bare HTTP round trip to the same responder alone takes ${ms(sm("bare", (s) => median(s.times)))} ms (median), ${bareMedian > 2 ? "already more than the 2 ms: " : ""}the demo responder spends ${fixed(sm("bare", (s) => s.responderCpuUs))} µs of CPU per answer in its own process (it parses each request and builds and signs each answer, see the table above). The check adds ${ms(checkMedian - bareMedian)} ms to the bare round trip, of which about ${ms(ownUs / 1000)} ms is the CPU of its own OCSP steps without the network (most of it @peculiar/asn1-schema, whose parse and serialise dwarf the RSA verify).
`;
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
