/**
 * Loading a register without blocking the event loop. A 50 MB EBA file takes seconds of unzip,
 * JSON.parse and mapping: that runs in a worker thread (register-worker.ts). What comes back is
 * one transferred buffer of newline-separated entries, which this side parses into a Map in
 * slices of about a thousand entries, yielding (setImmediate) between slices, so no request
 * waits more than a few milliseconds. The Map is handed to the register only when complete.
 *
 * Inputs under `inlineBelowBytes` that are not ZIPs are decoded right here: a small JSON
 * override file is parsed faster than a thread starts.
 */

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { RegisterEntry } from "../eidas/index.js";
import { DocumentRefused } from "./bounds.js";
import {
  type DecodeOptions,
  decodeRegister,
  isZip,
  WORKER_MARK,
  type WorkerReply,
  type WorkerRequest,
} from "./register-worker.js";

export { isZip, type RegisterFormat } from "./register-worker.js";

export interface LoadRegisterOptions extends DecodeOptions {
  /** Entries parsed per slice on the main thread between yields. */
  readonly sliceSize?: number;
  /** Plain (not zipped) inputs smaller than this are decoded on the main thread. 0: always a worker. */
  readonly inlineBelowBytes?: number;
  /** The worker is terminated after this long. */
  readonly timeoutMs?: number;
}

export interface LoadedRegister {
  /** Keyed by organizationIdentifier; complete, ready to swap in. */
  readonly entries: Map<string, RegisterEntry>;
  readonly kind: "json" | "eba";
  readonly zipped: boolean;
  readonly skipped: number;
  readonly skippedByReason: Readonly<Record<string, number>>;
  /** Whether the work ran in a worker thread. */
  readonly threaded: boolean;
}

const DEFAULT_SLICE = 1000;
const DEFAULT_INLINE_BELOW = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * Bytes (a file, an HTTP body) to a complete entry Map. The bytes are handed over: when they
 * are a view of a whole ArrayBuffer, that buffer is moved to the worker and is unusable here
 * afterwards. Rejects with an operator's message when the input is unusable.
 */
export async function loadRegister(
  bytes: Uint8Array,
  options: LoadRegisterOptions = {},
): Promise<LoadedRegister> {
  const decode: DecodeOptions = {
    ...(options.format ? { format: options.format } : {}),
    ...(options.source !== undefined ? { source: options.source } : {}),
    ...(options.maxUncompressedBytes !== undefined
      ? { maxUncompressedBytes: options.maxUncompressedBytes }
      : {}),
    ...(options.maxZipEntries !== undefined ? { maxZipEntries: options.maxZipEntries } : {}),
    ...(options.maxCompressionRatio !== undefined
      ? { maxCompressionRatio: options.maxCompressionRatio }
      : {}),
    ...(options.sha256 !== undefined ? { sha256: options.sha256 } : {}),
  };
  if (!isZip(bytes) && bytes.length < (options.inlineBelowBytes ?? DEFAULT_INLINE_BELOW)) {
    const decoded = decodeRegister(bytes, decode);
    return {
      entries: new Map(decoded.entries.map((e) => [e.organizationIdentifier, e])),
      kind: decoded.kind,
      zipped: decoded.zipped,
      skipped: decoded.skipped,
      skippedByReason: decoded.skippedByReason,
      threaded: false,
    };
  }
  const reply = await inWorker({ bytes, options: decode }, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const entries = await entriesInSlices(new Uint8Array(reply.lines), options.sliceSize ?? DEFAULT_SLICE);
  return {
    entries,
    kind: reply.kind,
    zipped: reply.zipped,
    skipped: reply.skipped,
    skippedByReason: reply.skippedByReason,
    threaded: true,
  };
}

/** Newline-separated JSON entries to a Map, a slice at a time, yielding to the event loop between slices. */
export async function entriesInSlices(
  lines: Uint8Array,
  sliceSize: number,
): Promise<Map<string, RegisterEntry>> {
  const entries = new Map<string, RegisterEntry>();
  const decoder = new TextDecoder();
  let start = 0;
  while (start < lines.length) {
    let end = start;
    for (let i = 0; i < sliceSize && end < lines.length; i++) {
      const newline = lines.indexOf(0x0a, end);
      end = newline === -1 ? lines.length : newline + 1;
    }
    for (const line of decoder.decode(lines.subarray(start, end)).split("\n")) {
      if (!line) continue;
      const entry = JSON.parse(line) as RegisterEntry;
      entries.set(entry.organizationIdentifier, entry);
    }
    start = end;
    if (start < lines.length) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return entries;
}

type Success = Extract<WorkerReply, { ok: true }>;

function inWorker(request: WorkerRequest, timeoutMs: number): Promise<Success> {
  const { bytes } = request;
  // Move the buffer when the bytes are all of it; a view into a shared or pooled buffer is copied instead.
  const transferList =
    bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !isShared(bytes.buffer)
      ? [bytes.buffer as ArrayBuffer]
      : [];
  const worker = startWorker({ mark: WORKER_MARK, request }, transferList);
  return new Promise<Success>((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | undefined, reply?: Success) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      if (error) reject(error);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => finish(new Error(`register decoding took more than ${Math.round(timeoutMs / 1000)} s; gave up`)),
      timeoutMs,
    );
    timer.unref();
    worker.once("message", (reply: WorkerReply) =>
      reply.ok
        ? finish(undefined, reply)
        : finish(reply.refused ? new DocumentRefused(reply.refused, reply.error) : new Error(reply.error)),
    );
    worker.once("error", (error: Error) => finish(new Error(`register worker failed: ${error.message}`)));
    worker.once("exit", (code) =>
      finish(new Error(`register worker exited with code ${code} before answering`)),
    );
  });
}

/**
 * From dist the worker is the compiled `.js` beside this file. Under vitest or tsx this file is
 * `.ts`, and on Node 20 `execArgv: ["--import", "tsx"]` does not reach a worker's entry module,
 * so a tiny bootstrap registers tsx's loader inside the worker and then imports the `.ts` worker.
 */
function startWorker(workerData: unknown, transferList: ArrayBuffer[]): Worker {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) {
    return new Worker(new URL("./register-worker.js", here), { workerData, transferList });
  }
  const tsx = tsxEsmApi(here);
  const target = new URL("./register-worker.ts", here).href;
  const bootstrap = `import(${JSON.stringify(tsx)}).then((api) => { (api.register ?? api.default.register)(); return import(${JSON.stringify(target)}); });`;
  return new Worker(bootstrap, { eval: true, workerData, transferList });
}

/** tsx's ESM API entry, read from its own export map (require.resolve would give the CommonJS one). */
function tsxEsmApi(from: string): string {
  const manifestPath = createRequire(from).resolve("tsx/package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as {
    exports: Record<string, { import: { default: string } }>;
  };
  return pathToFileURL(join(dirname(manifestPath), manifest.exports["./esm/api"]!.import.default)).href;
}

function isShared(buffer: ArrayBufferLike): boolean {
  return typeof SharedArrayBuffer !== "undefined" && buffer instanceof SharedArrayBuffer;
}
