/**
 * `npm run bench:soak` (and the last section of `npm run bench`): does the gateway's memory stay
 * flat under worst-case Signature headers? Issue 11, defect 5: replay keys that were slices of the
 * Signature header kept whole headers alive, ~13 KB per request with a large unknown parameter.
 *
 * A real gateway process (bench/servers/soak-gateway.ts: the configuration's defaults for the
 * Date tolerance, the replay window, replay.maxEntries and the memory store) in front of the
 * bench backend, over the plain-HTTP loopback listener the other scenarios use. 50 keep-alive
 * connections send at least SOAK_COUNT requests, each signed once, just ahead of being sent
 * (bench/soak-sign.ts, worker threads: the Date must be within 60 s), each with a worst-case
 * Signature header: a keyId of 1–3 KB (serial zero-padded to 80 digits, issuer DN with runs of
 * white space; one of 4 such spellings, or for 10 % of requests a spelling never sent before, which
 * the gateway's keyId memo cannot hold), and an unknown
 * parameter of 8 KB up to what fits in Node's 16 KB header limit beside the 1.5 KB certificate,
 * placed before, between or after the Berlin Group parameters. 20 % are POSTs with a 1 KiB body;
 * 10 % carry a wrong signature (400), 5 % replay a request already answered (400), half of them
 * byte for byte, half with the keyId and the unknown parameter spelled anew (the same signed
 * content). 1 in 100 requests closes its connection after the answer.
 *
 * The gateway's RSS (/proc/<pid>/status VmRSS) and heap (admin /metrics) are sampled every second.
 * Verdict: after warm-up (the first 20 % of SOAK_COUNT), RSS rises by at most RSS_GROWTH_BOUND_MB,
 * and once a full replay window has passed (the store holds one window and forgets as fast as it
 * records) RSS has no upward trend: its least-squares slope is at most RSS_SLOPE_BOUND_MB per
 * 100k requests (160 bytes a request: a header slice kept per request is 10–80 times that, while
 * a fixed-size digest record is under it even before it expires). A full run lasts at least two
 * replay windows for that. Whether records expire by time shows in RSS only over millions of
 * requests; when the gateway publishes the store's size in /metrics (a gauge named like
 * `psd2_gateway_replay_entries`) it is checked directly: at the end, no more records than were made
 * in the last 1.5 replay windows. Every answer is checked too: good 200, the rest 400.
 *
 * Environment: SOAK_COUNT (default 300000; below that it is a smoke run and writes nothing to
 * RESULTS.md unless SOAK_WRITE=1), SOAK_MIN_SECONDS (default two replay windows for a full run, 0
 * for a smoke run), SOAK_MAX_SECONDS (default 900: stops issuing then, whatever the count),
 * SOAK_HEAP_MB (the gateway's --max-old-space-size, default 512), SOAK_SEED (default 1),
 * SOAK_SERIES (CSV of the samples; default in the run's temporary folder).
 */

import "reflect-metadata";
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { randomBytes, randomUUID, X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { generateDevPki } from "@psd2-gateway/dev-pki";
import { Pool, request } from "undici";
import { buildKeyId, keyIdTargetFromDer } from "../src/signature/index.js";
import { CHILD_EXEC_ARGV, SERVER_NODE } from "./harness.js";
import { machineLine, replaceSection } from "./results-file.js";
import type { SoakGatewayReady } from "./servers/soak-gateway.js";
import type { SignBatch, SignedBatch, SignedRecord, SoakSignerData } from "./soak-sign.js";
import { CAN_PIN } from "./taskset.js";

/** After warm-up, the gateway's RSS may rise by at most this much (MB) over the whole run. */
export const RSS_GROWTH_BOUND_MB = 64;
/** Once a replay window has passed, RSS may trend upward by at most this much (MB per 100k requests). */
export const RSS_SLOPE_BOUND_MB = 16;
/** The share of SOAK_COUNT that is warm-up. */
export const WARMUP_SHARE = 0.2;
export const FULL_COUNT = 300_000;

const CONNECTIONS = 50;
const SHARE_POST = 0.2;
const SHARE_BAD_SIGNATURE = 0.1;
const SHARE_REPLAY = 0.05;
const CLOSE_EVERY = 100;
/** Node's default --max-http-header-size; the gateway's listener sets none. */
const HEADER_LIMIT = 16 * 1024;
/** Left free under the limit: the request line, Host, Connection, Content-Length and rounding. */
const HEADER_MARGIN = 320;
const MIN_PAD = 8 * 1024;
const KEYID_MIN = 1024;
const KEYID_MAX = 3072;
/** Long keyIds most requests use; the gateway's keyId memo keeps 8 spellings per certificate. */
const USUAL_KEYIDS = 4;
/** Requests whose keyId is spelled anew: each costs a DN parse of up to 3 KB (~0.3 ms). */
const SHARE_FRESH_KEYID = 0.1;
const BATCH = 200;
const SIGNERS = Math.max(1, Math.min(2, cpus().length));
const SAMPLE_MS = 1000;
/** A store that expires by time holds at most the records of this many replay windows (purge interval included). */
const STORE_SPAN_WINDOWS = 1.5;
const here = new URL(".", import.meta.url).pathname;

interface Settings {
  readonly count: number;
  readonly minSeconds: number | undefined;
  readonly maxSeconds: number;
  readonly heapMb: number;
  readonly seed: number;
  readonly write: boolean;
  readonly series: string | undefined;
}

function settingsFromEnv(): Settings {
  const count = Number(process.env.SOAK_COUNT ?? FULL_COUNT);
  return {
    count,
    minSeconds: process.env.SOAK_MIN_SECONDS === undefined ? undefined : Number(process.env.SOAK_MIN_SECONDS),
    maxSeconds: Number(process.env.SOAK_MAX_SECONDS ?? 900),
    heapMb: Number(process.env.SOAK_HEAP_MB ?? 512),
    seed: Number(process.env.SOAK_SEED ?? 1),
    write: count >= FULL_COUNT || process.env.SOAK_WRITE === "1",
    series: process.env.SOAK_SERIES,
  };
}

// ---------------------------------------------------------------------------------------------
// Processes

/** The commit under test, and whether src/ differs from it; undefined outside a git checkout. */
function revision(): string | undefined {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: here, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
  try {
    const head = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--", "../src").length > 0
      ? `${head} with uncommitted changes in src/`
      : head;
  } catch {
    return undefined;
  }
}

/** All threads of the process (V8's and libuv's too), unlike bench/run.ts's main-thread pin. */
function pin(pid: number, core: number) {
  if (CAN_PIN) execFileSync("taskset", ["-a", "-cp", String(core), String(pid)], { stdio: "ignore" });
}

interface Child<R> {
  readonly process: ChildProcess;
  readonly ready: R;
}

async function startChild<R extends { ready: number }>(
  file: string,
  args: string[],
  execArgv: string[] = [],
  stdout: "inherit" | "ignore" = "inherit",
): Promise<Child<R>> {
  const child = fork(join(here, file), args, {
    execArgv: [...execArgv, ...CHILD_EXEC_ARGV],
    // The gateway under test on BENCH_NODE, as bench/harness.ts runs its servers.
    ...(file === "servers/soak-gateway.ts" ? { execPath: SERVER_NODE } : {}),
    stdio: ["ignore", stdout, "inherit", "ipc"],
  });
  const ready = await new Promise<R>((resolve, reject) => {
    child.once("message", (m: R) => (m.ready ? resolve(m) : reject(new Error(`${file}: bad ready`))));
    child.once("exit", (code) => reject(new Error(`${file} exited with ${code}`)));
  });
  pin(child.pid!, 0);
  return { process: child, ready };
}

async function stop(child: Child<unknown> | undefined): Promise<void> {
  if (!child || child.process.exitCode !== null || child.process.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.process.once("exit", () => resolve()));
  if (child.process.connected) child.process.disconnect();
  const timer = setTimeout(() => child.process.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// Worst-case Signature headers

/** mulberry32: the mix of requests is the same run to run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPACES = " ".repeat(KEYID_MAX);

/**
 * A keyId of `length` characters naming the certificate: the serial zero-padded to 80 hex digits,
 * and the issuer DN with white space runs around separators and inside values, which the keyId
 * match folds away. Every call spells it anew.
 */
function longKeyId(serialHex: string, issuer: string, length: number, random: () => number): string {
  // Slots for white space: after `CA=`, around each `,`, and at each space inside a value.
  const pieces = issuer.split(/(,| )/);
  const sn = `SN=${serialHex.padStart(80, "0")},CA=`;
  const slots = 1 + pieces.length;
  const extra = Math.max(0, length - sn.length - issuer.length);
  const weights = Array.from({ length: slots }, () => random());
  const sum = weights.reduce((a, b) => a + b, 0);
  const runs = weights.map((w) => Math.floor((w / sum) * extra));
  let out = sn + SPACES.slice(0, runs[0]!);
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    out += p === "," ? `${SPACES.slice(0, runs[i + 1]!)},` : p;
    if (p === " " || p === ",") out += SPACES.slice(0, runs[i + 1]!);
  }
  return out;
}

/** An unknown Signature parameter: token characters only, so it reads as one quoted value. */
const PAD_TEXT = randomBytes(HEADER_LIMIT).toString("base64").replace(/[+/=]/g, "x").slice(0, HEADER_LIMIT);

interface Spelling {
  readonly keyId: string;
  readonly padLength: number;
  readonly order: number;
}

function signatureHeader(record: SignedRecord, signature: string, s: Spelling): string {
  const keyId = `keyId="${s.keyId}"`;
  const pad = `x-soak-padding="${record.requestId}${PAD_TEXT.slice(0, s.padLength)}"`;
  const sig = `signature="${signature}"`;
  switch (s.order) {
    case 0:
      return `${keyId},${record.params},${pad},${sig}`;
    case 1:
      return `${pad},${keyId},${record.params},${sig}`;
    default:
      return `${keyId},${record.params},${sig},${pad}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Signing just ahead of the load

class Signers {
  private readonly workers: Worker[];
  private readonly ready: Record<"GET" | "POST", SignedRecord[]> = { GET: [], POST: [] };
  private pending = 0;
  private nextId = 0;
  private waiters: (() => void)[] = [];
  private failure: Error | undefined;
  stale = 0;

  constructor(
    data: SoakSignerData,
    private readonly lookahead: number,
    private readonly maxAgeMs: number,
  ) {
    // Workers do not take --import from execArgv on Node 20: register tsx inside the worker.
    const bootstrap = `import("tsx/esm/api").then((m) => { m.register(); return import(${JSON.stringify(join(here, "soak-sign.ts"))}); })`;
    this.workers = Array.from({ length: SIGNERS }, () => {
      const w = new Worker(bootstrap, { eval: true, workerData: data });
      w.on("message", (batch: SignedBatch) => {
        this.pending--;
        for (const r of batch.records) this.ready[r.method].push(r);
        this.refill();
        for (const wake of this.waiters.splice(0)) wake();
      });
      w.on("error", (error: Error) => {
        this.failure = error;
        for (const wake of this.waiters.splice(0)) wake();
      });
      return w;
    });
  }

  refill(): void {
    const have = this.ready.GET.length + this.ready.POST.length + this.pending * BATCH;
    for (let i = 0; i < Math.ceil((this.lookahead - have) / BATCH); i++) this.order();
  }

  private order(): void {
    const posts = Math.round(BATCH * SHARE_POST);
    const batch: SignBatch = { id: this.nextId++, gets: BATCH - posts, posts };
    this.workers[batch.id % this.workers.length]!.postMessage(batch);
    this.pending++;
  }

  /** The next signed request of `method`, no older than the Date tolerance allows. */
  async take(method: "GET" | "POST"): Promise<SignedRecord> {
    for (;;) {
      if (this.failure) throw this.failure;
      const r = this.ready[method].shift();
      if (r) {
        if (Date.now() - r.signedAt <= this.maxAgeMs) {
          this.refill();
          return r;
        }
        this.stale++;
        continue;
      }
      this.refill();
      // Plenty of the other method in stock and nothing on order would wait for ever (the run
      // stalled once with every connection waiting for a POST): order a batch for this one.
      if (this.pending === 0) this.order();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

// ---------------------------------------------------------------------------------------------
// Sampling

interface Sample {
  /** Seconds since the load started. */
  readonly t: number;
  /** Requests answered so far. */
  readonly done: number;
  /** Of them, signed anew and answered 200: each one a replay record. */
  readonly good: number;
  readonly rssMb: number;
  heapUsedMb?: number;
  heapTotalMb?: number;
  externalMb?: number;
  /** The replay store's size, when the gateway publishes it in /metrics. */
  replayEntries?: number;
}

function rssMbOf(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The replay store's entries, if /metrics has them: a gauge named like
 * `psd2_gateway_replay_entries`, or a store gauge with a `replay` label.
 */
function replayEntries(text: string): number | undefined {
  const gauge = /^(psd2_gateway_\w*(?:replay|store)\w*(?:entries|records|keys|size)\w*)(\{[^}]*\})? (\S+)$/gm;
  for (const m of text.matchAll(gauge)) {
    if (m[1]!.endsWith("_total")) continue;
    if (m[1]!.includes("replay") || (m[2] ?? "").includes("replay")) return Number(m[3]);
  }
  return undefined;
}

function metric(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

// ---------------------------------------------------------------------------------------------
// The run

type Kind = "good" | "bad-signature" | "replay-identical" | "replay-respelled";
const EXPECTED: Record<Kind, number> = {
  good: 200,
  "bad-signature": 400,
  "replay-identical": 400,
  "replay-respelled": 400,
};

interface Sent {
  readonly record: SignedRecord;
  readonly spelling: Spelling;
}

export interface SoakSummary {
  readonly pass: boolean;
  readonly markdown: string;
}

export async function runSoak(settings: Settings = settingsFromEnv()): Promise<SoakSummary> {
  // Before any process of ours runs: was the machine busy with other work?
  const loadAtStart = loadavg()[0]!;
  const commit = revision();
  if (CAN_PIN) pin(process.pid, 1);
  const random = prng(settings.seed);
  const pkiDir = mkdtempSync(join(tmpdir(), "psd2-soak-"));
  const seriesFile = settings.series ?? join(pkiDir, "soak-series.csv");
  const pki = await generateDevPki(pkiDir);
  const certificateDer = new X509Certificate(pki.tppA.qseal.pem).raw;
  const [, serialHex, issuer] = /^SN=([0-9A-F]+),CA=(.*)$/.exec(
    buildKeyId(keyIdTargetFromDer(certificateDer)),
  )!;
  const certificateBase64 = certificateDer.toString("base64");

  const backend = await startChild<{ ready: number }>("servers/backend.ts", []);
  const gateway = await startChild<SoakGatewayReady>(
    "servers/soak-gateway.ts",
    [`http://127.0.0.1:${backend.ready.ready}`, pkiDir],
    [`--max-old-space-size=${settings.heapMb}`],
    "ignore",
  );
  const g = gateway.ready;
  const gatewayPid = gateway.process.pid!;
  const minSeconds = settings.minSeconds ?? (settings.count >= FULL_COUNT ? 2 * g.replayWindowSeconds : 0);
  console.error(
    `soak: gateway pid ${gatewayPid} on port ${g.ready}; Date tolerance ${g.dateToleranceSeconds} s, replay window ${g.replayWindowSeconds} s, replay.maxEntries ${g.replayMaxEntries}, store ${g.store}, heap limit ${g.heapLimitMb} MB; ${settings.count} requests at least${minSeconds ? `, ${minSeconds} s at least` : ""}; pinned: ${CAN_PIN}`,
  );

  const extraHeaders: Record<string, string> = {
    Accept: "application/json",
    "TPP-Redirect-URI": "https://tpp.example.com/psd2/callback?session=7f3c2a",
    "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a",
    "PSU-IP-Address": "192.0.2.10",
    "PSU-User-Agent":
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
    "TPP-Session-ID": randomUUID(),
  };
  const getTarget = "/v1/accounts/acc-0001/balances";
  const postTarget = "/v1/payments/norwegian-domestic-credit-transfers";
  const postBody = JSON.stringify({
    instructedAmount: { amount: "125.50", currency: "NOK" },
    debtorAccount: { bban: "12345678903" },
    creditorAccount: { bban: "98765432105" },
    creditorName: "Kari Nordmann",
    remittanceInformationUnstructured: "x".repeat(1024),
  }).slice(0, 1024);
  const signers = new Signers(
    {
      keyPem: pki.tppA.qseal.keyPem,
      certificatePem: pki.tppA.qseal.pem,
      extraHeaders,
      getTarget,
      postTarget,
      postBody,
    },
    4 * BATCH * SIGNERS,
    (g.dateToleranceSeconds - 15) * 1000,
  );
  signers.refill();

  const headersOf = (
    record: SignedRecord,
    signature: string,
    spelling: Spelling,
  ): Record<string, string> => ({
    ...extraHeaders,
    ...(record.method === "POST" ? { "Content-Type": "application/json" } : {}),
    Date: record.date,
    Digest: record.digest,
    "X-Request-ID": record.requestId,
    "TPP-Signature-Certificate": certificateBase64,
    Signature: signatureHeader(record, signature, spelling),
  });
  /** What the head costs without the Signature value, so that the padding fills the rest. */
  const headBytes = (h: Record<string, string>, method: string) =>
    Object.entries(h).reduce((n, [k, v]) => n + k.length + v.length + 4, 0) +
    `${method} ${method === "GET" ? getTarget : postTarget} HTTP/1.1\r\n`.length +
    `host: 127.0.0.1:${g.ready}\r\nconnection: keep-alive\r\ncontent-length: ${postBody.length}\r\n\r\n`
      .length;
  const freshKeyId = () =>
    longKeyId(serialHex!, issuer!, KEYID_MIN + Math.floor(random() * (KEYID_MAX - KEYID_MIN)), random);
  // A TPP sends the same keyId every time: most requests use one of a few long spellings (the
  // gateway remembers up to 8 per certificate); the rest, and every respelled replay, a new one.
  const usualKeyIds = Array.from({ length: USUAL_KEYIDS }, freshKeyId);
  const spell = (record: SignedRecord, fresh = random() < SHARE_FRESH_KEYID): Spelling => {
    const keyId = fresh ? freshKeyId() : usualKeyIds[Math.floor(random() * USUAL_KEYIDS)]!;
    const order = Math.floor(random() * 3);
    const without = headBytes(headersOf(record, "", { keyId, padLength: 0, order }), record.method);
    const room = HEADER_LIMIT - HEADER_MARGIN - without - 344; // the RSA-2048 signature in base64
    if (room < MIN_PAD) throw new Error(`only ${room} bytes left for the unknown parameter`);
    return { keyId, padLength: MIN_PAD + Math.floor(random() * (room - MIN_PAD)), order };
  };

  const pool = new Pool(`http://127.0.0.1:${g.ready}`, {
    connections: CONNECTIONS,
    pipelining: 1,
    keepAliveTimeout: 60_000,
  });

  // Answered requests, by kind and status; recent good ones are the replays' material.
  const outcomes = new Map<string, number>();
  /** The first answer of each unexpected kind and status. */
  const unexpected = new Map<string, string>();
  const recent: Sent[] = [];
  let errors = 0;
  let wrong = 0;
  let issued = 0;
  let done = 0;
  let goodDone = 0;
  let signatureBytes = 0;
  let signatureMax = 0;
  let headMax = 0;
  let died: string | undefined;
  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    died = `exited with ${code ?? signal} after ${done} answered requests`;
  };
  gateway.process.once("exit", onExit);

  const start = Date.now();
  const elapsed = () => (Date.now() - start) / 1000;
  const more = () =>
    died === undefined &&
    elapsed() < settings.maxSeconds &&
    (issued < settings.count || elapsed() < minSeconds);

  const samples: Sample[] = [];
  let scraping = false;
  const sampler = setInterval(() => {
    const rss = rssMbOf(gatewayPid);
    if (rss === undefined) return;
    const sample: Sample = { t: elapsed(), done, good: goodDone, rssMb: rss };
    samples.push(sample);
    if (scraping || !g.adminUrl) return;
    scraping = true;
    request(`${g.adminUrl}/metrics`)
      .then((r) => r.body.text())
      .then((text) => {
        const mb = (name: string) => {
          const v = metric(text, name);
          return v === undefined ? undefined : v / 2 ** 20;
        };
        const used = mb("nodejs_heap_size_used_bytes");
        const total = mb("nodejs_heap_size_total_bytes");
        const external = mb("nodejs_external_memory_bytes");
        if (used !== undefined) sample.heapUsedMb = used;
        if (total !== undefined) sample.heapTotalMb = total;
        if (external !== undefined) sample.externalMb = external;
        const entries = replayEntries(text);
        if (entries !== undefined) sample.replayEntries = entries;
      })
      .catch(() => {})
      .finally(() => {
        scraping = false;
      });
  }, SAMPLE_MS);
  let lastDone = 0;
  const progress = setInterval(() => {
    const s = samples.at(-1);
    console.error(
      `soak: ${Math.round(elapsed())} s, ${done} answered (${Math.round((done - lastDone) / 5)} req/s), RSS ${s?.rssMb.toFixed(0)} MB, heap used ${s?.heapUsedMb?.toFixed(0) ?? "?"} MB, errors ${errors}, unexpected answers ${wrong}`,
    );
    lastDone = done;
  }, 5000);

  const send = async (kind: Kind, method: "GET" | "POST", headers: Record<string, string>) => {
    const head = headBytes(headers, method);
    if (head > headMax) headMax = head;
    const sig = headers.Signature!.length;
    signatureBytes += sig;
    if (sig > signatureMax) signatureMax = sig;
    try {
      const r = await pool.request({
        method,
        path: method === "GET" ? getTarget : postTarget,
        headers,
        ...(method === "POST" ? { body: postBody } : {}),
        reset: issued % CLOSE_EVERY === 0,
      });
      const text = await r.body.text();
      const key = `${kind} ${r.statusCode}`;
      if (kind === "good" && r.statusCode === 200) goodDone++;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      if (r.statusCode !== EXPECTED[kind]) {
        wrong++;
        if (!unexpected.has(key) && unexpected.size < 5) unexpected.set(key, text.slice(0, 120));
      }
      return r.statusCode;
    } catch (error) {
      errors++;
      if (errors <= 5) console.error(`soak: ${kind} failed: ${(error as Error).message}`);
      return 0;
    } finally {
      done++;
    }
  };

  const client = async () => {
    while (more()) {
      issued++;
      const roll = random();
      const method = random() < SHARE_POST ? "POST" : "GET";
      const old = recent.length > 0 ? recent[Math.floor(random() * recent.length)] : undefined;
      if (
        roll < SHARE_REPLAY &&
        old &&
        Date.now() - old.record.signedAt < (g.dateToleranceSeconds - 10) * 1000
      ) {
        const respelled = random() < 0.5;
        const spelling = respelled ? spell(old.record, true) : old.spelling;
        await send(
          respelled ? "replay-respelled" : "replay-identical",
          old.record.method,
          headersOf(old.record, old.record.signature, spelling),
        );
        continue;
      }
      const record = await signers.take(method);
      const spelling = spell(record);
      if (roll < SHARE_REPLAY + SHARE_BAD_SIGNATURE) {
        // As long as a real one and valid base64, but not a signature over this request.
        const wrong = randomBytes(256).toString("base64");
        await send("bad-signature", method, headersOf(record, wrong, spelling));
        continue;
      }
      const status = await send("good", method, headersOf(record, record.signature, spelling));
      if (status === 200) {
        if (recent.length < 2000) recent.push({ record, spelling });
        else recent[Math.floor(random() * recent.length)] = { record, spelling };
      }
    }
  };

  console.error(`soak: ${CONNECTIONS} connections, sampling RSS every ${SAMPLE_MS} ms …`);
  await Promise.all(Array.from({ length: CONNECTIONS }, () => client()));
  const seconds = elapsed();
  clearInterval(sampler);
  clearInterval(progress);
  const endRss = rssMbOf(gatewayPid);
  if (endRss !== undefined) samples.push({ t: seconds, done, good: goodDone, rssMb: endRss });
  gateway.process.off("exit", onExit);
  await pool.close();
  await signers.close();
  await stop(gateway);
  await stop(backend);

  writeFileSync(
    seriesFile,
    `t_s,answered,good,rss_mb,heap_used_mb,heap_total_mb,external_mb,replay_entries\n${samples
      .map(
        (s) =>
          `${s.t.toFixed(1)},${s.done},${s.good},${s.rssMb.toFixed(1)},${s.heapUsedMb?.toFixed(1) ?? ""},${s.heapTotalMb?.toFixed(1) ?? ""},${s.externalMb?.toFixed(1) ?? ""},${s.replayEntries ?? ""}`,
      )
      .join("\n")}\n`,
  );

  // ------------------------------------------------------------------ verdict
  const warmupAt = Math.round(settings.count * WARMUP_SHARE);
  const warmIndex = samples.findIndex((s) => s.done >= warmupAt);
  const after = warmIndex >= 0 ? samples.slice(warmIndex) : [];
  const warm = after[0];
  const maxAfter = after.reduce((m, s) => Math.max(m, s.rssMb), 0);
  const last = samples.at(-1);
  const per100k = (xs: Sample[]) =>
    slope(
      xs.map((s) => s.done),
      xs.map((s) => s.rssMb),
    ) * 100_000;
  const slopeAfterWarmup = per100k(after);
  // Once a replay window has passed, the store forgets as fast as it records: RSS should be flat.
  const steady = after.filter((s) => s.t >= g.replayWindowSeconds + 10);
  const steadyJudged =
    steady.length >= 20 && steady.at(-1)!.done - steady[0]!.done >= Math.min(50_000, settings.count * 0.1);
  const slopeSteady = steadyJudged ? per100k(steady) : undefined;
  const growth = warm ? maxAfter - warm.rssMb : Number.NaN;
  const kinds = (k: Kind) =>
    [...outcomes.entries()].filter(([key]) => key.startsWith(`${k} `)).reduce((n, [, v]) => n + v, 0);
  const wrongAnswers = [...outcomes.entries()]
    .filter(([key]) => {
      const [kind, status] = key.split(" ") as [Kind, string];
      return Number(status) !== EXPECTED[kind];
    })
    .reduce((n, [, v]) => n + v, 0);
  // Time-based expiry, when the store's size is published: at the end it holds no more records
  // than were made in the last STORE_SPAN_WINDOWS replay windows (room for a purge interval).
  const lastWithEntries = [...samples].reverse().find((s) => s.replayEntries !== undefined);
  let storeBound: number | undefined;
  if (lastWithEntries && lastWithEntries.t > STORE_SPAN_WINDOWS * g.replayWindowSeconds) {
    const since = lastWithEntries.t - STORE_SPAN_WINDOWS * g.replayWindowSeconds;
    const then = [...samples].reverse().find((s) => s.t <= since);
    storeBound = lastWithEntries.good - (then?.good ?? 0) + 1000;
  }
  const storePass =
    storeBound === undefined || lastWithEntries?.replayEntries === undefined
      ? true
      : lastWithEntries.replayEntries <= storeBound;
  const memoryPass =
    died === undefined &&
    warm !== undefined &&
    growth <= RSS_GROWTH_BOUND_MB &&
    (slopeSteady === undefined || slopeSteady <= RSS_SLOPE_BOUND_MB) &&
    storePass;
  const answersPass = died === undefined && errors === 0 && wrongAnswers === 0;
  const pass = memoryPass && answersPass;
  const peakHeap = samples.reduce((m, s) => Math.max(m, s.heapUsedMb ?? 0), 0);
  const rate = done / seconds;
  const mb = (v: number | undefined) => (v === undefined ? "–" : v.toFixed(0));
  const outcomeText = (["good", "bad-signature", "replay-identical", "replay-respelled"] as const)
    .map((k) => {
      const statuses = [...outcomes.entries()]
        .filter(([key]) => key.startsWith(`${k} `))
        .map(([key, v]) => `${v} × ${key.split(" ")[1]}`)
        .join(", ");
      return `${k} ${kinds(k)} (${statuses || "none"})`;
    })
    .join("; ");

  // A few rows of the series: at each tenth of the requests answered, the warm-up point and the peak.
  const rows: Sample[] = [];
  for (let tenth = 1; tenth <= 10; tenth++) {
    const s = samples.find((x) => x.done >= (done * tenth) / 10);
    if (s && !rows.includes(s)) rows.push(s);
  }
  const peak = after.find((s) => s.rssMb === maxAfter);
  for (const s of [warm, peak]) if (s && !rows.includes(s)) rows.push(s);
  rows.sort((a, b) => a.t - b.t);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");

  const markdown = `
${machineLine()}${commit ? `, commit ${commit}` : ""}. ${CAN_PIN ? "Gateway and backend (separate processes) pinned to core 0, the load and its signers to core 1" : "taskset unavailable: nothing pinned"}; load average ${loadAtStart.toFixed(2)} before the soak started (${loadAtStart >= 0.5 ? "other work was running on the machine: the rate is not a throughput figure" : "the machine otherwise idle"}), ${load} at the end. Run with \`npm run bench:soak\` (\`SOAK_COUNT=20000\` for a smoke run).

The gateway runs with the configuration's defaults for everything that bounds memory: Date tolerance ${g.dateToleranceSeconds} s, replay window ${g.replayWindowSeconds} s, \`replay.maxEntries\` ${g.replayMaxEntries.toLocaleString("en")}, the ${g.store} store; \`--max-old-space-size=${settings.heapMb}\`; log level \`info\` (to /dev/null). ${CONNECTIONS} keep-alive connections (1 request in ${CLOSE_EVERY} closes its connection) sent ${done.toLocaleString("en")} requests in ${seconds.toFixed(0)} s (${rate.toFixed(0)} req/s), each signed once just before it was sent, ${Math.round(SHARE_POST * 100)} % POSTs with a ${postBody.length}-byte body. Every Signature header is worst case: a keyId of ${KEYID_MIN}–${KEYID_MAX} characters (serial zero-padded to 80 digits, white space runs in the issuer DN), one of ${USUAL_KEYIDS} spellings or, for ${Math.round(SHARE_FRESH_KEYID * 100)} % of requests and every respelled replay, one never sent before; and an unknown parameter of ${MIN_PAD / 1024} KB up to what fits under Node's 16 KB header limit (mean Signature header ${(signatureBytes / Math.max(1, done)).toFixed(0)} bytes, largest ${signatureMax}; largest request head ${headMax} bytes). Answers: ${outcomeText}; transport errors ${errors}.

| | RSS MB |
|---|---:|
| after warm-up (${warmupAt.toLocaleString("en")} requests, ${warm ? warm.t.toFixed(0) : "–"} s) | ${mb(warm?.rssMb)} |
| max after warm-up | ${mb(maxAfter)} |
| end | ${mb(last?.rssMb)} |
| max − after warm-up (bound ≤ ${RSS_GROWTH_BOUND_MB}) | ${mb(growth)} |
| slope after warm-up, MB per 100k requests | ${slopeAfterWarmup.toFixed(1)} |
| slope once a replay window has passed (from ${g.replayWindowSeconds + 10} s), MB per 100k requests (bound ≤ ${RSS_SLOPE_BOUND_MB}) | ${slopeSteady === undefined ? "not judged: the run was shorter than a replay window plus warm-up" : slopeSteady.toFixed(1)} |
| peak heap used (admin /metrics) | ${mb(peakHeap)} |
| replay records at the end (admin /metrics) | ${lastWithEntries?.replayEntries === undefined ? "not published by the gateway" : `${lastWithEntries.replayEntries.toLocaleString("en")}${storeBound === undefined ? "" : ` (bound ≤ ${storeBound.toLocaleString("en")}: the records made in the last ${STORE_SPAN_WINDOWS} replay windows, + 1,000)`}`} |

| s | answered | RSS MB | heap used MB |
|---:|---:|---:|---:|
${rows.map((s) => `| ${s.t.toFixed(0)} | ${s.done.toLocaleString("en")} | ${s.rssMb.toFixed(0)} | ${mb(s.heapUsedMb)} |`).join("\n")}

Bound: after warm-up RSS rises by at most ${RSS_GROWTH_BOUND_MB} MB, and once a replay window has passed it trends up by at most ${RSS_SLOPE_BOUND_MB} MB per 100,000 requests (\`RSS_GROWTH_BOUND_MB\`, \`RSS_SLOPE_BOUND_MB\` in bench/soak.ts).

Verdict: ${pass ? "**pass**" : "**fail**"} — memory ${memoryPass ? "within the bound" : died ? `not judged: the gateway ${died}` : "out of the bound"}; answers ${answersPass ? "all as expected (good 200, wrong signature 400, replays 400)" : `${wrongAnswers} unexpected, ${errors} transport errors${died ? `, the gateway ${died}` : ""}`}.${signers.stale ? ` ${signers.stale} signed requests went stale before they could be sent and were dropped.` : ""}${
    unexpected.size
      ? `\n\nThe first unexpected answer of each kind:\n\n${[...unexpected]
          .map(
            ([key, text]) =>
              `- ${key.replace(" ", " → ")}: \`${text.replace(/`/g, "'").replace(/\n/g, " ")}\``,
          )
          .join("\n")}`
      : ""
  }
`;
  console.error(`soak: series in ${seriesFile}`);
  if (settings.write)
    replaceSection("Soak: memory under worst-case Signature headers (bench/soak.ts)", markdown);
  else
    console.error(
      "soak: a smoke run (SOAK_COUNT below 300000): RESULTS.md left alone (SOAK_WRITE=1 writes it)",
    );
  return { pass, markdown };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  runSoak().then(
    (r) => {
      console.log(r.markdown);
      process.exit(r.pass ? 0 : 1);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(2);
    },
  );
}
