/**
 * The heavy half of loading a register, run in a worker thread so that a 50 MB EBA file never
 * blocks the gateway's event loop: unzip, decode, JSON.parse and map to register entries. The
 * result goes back as one transferable buffer of newline-separated JSON entries (moved, not
 * copied); the main thread turns it into a Map in small slices (register-loading.ts).
 *
 * `decodeRegister` is also called directly, on the main thread, for inputs too small to be worth
 * a thread.
 */

import { createHash } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import type { RegisterEntry } from "../eidas/index.js";
import { DocumentRefused, type RefusalReason, refusalOf } from "./bounds.js";
import { mapEbaRegister } from "./formats/eba-register.js";
import { parseRegisterDocument } from "./formats/register-document.js";
import { DEFAULT_ZIP_BOUNDS, entryBytes, type ZipBounds, type ZipEntry, zipEntries } from "./register-zip.js";

/**
 * What the bytes hold. `eba-zip` and `eba-json` are the EBA's register, `json` our own format;
 * `auto` tells them apart by shape (an array is the EBA's, an object with `tpps` ours). A ZIP is
 * recognised by its magic (PK\x03\x04) whatever the format says, and its JSON file is read.
 */
export type RegisterFormat = "json" | "eba-json" | "eba-zip" | "auto";

export interface DecodedRegister {
  readonly entries: RegisterEntry[];
  /** What the content turned out to be. */
  readonly kind: "json" | "eba";
  readonly zipped: boolean;
  readonly skipped: number;
  readonly skippedByReason: Readonly<Record<string, number>>;
}

export interface DecodeOptions {
  readonly format?: RegisterFormat;
  /** Stamped on each entry as `source`. */
  readonly source?: string;
  /**
   * A ZIP whose entries declare more than this together is refused before anything is inflated,
   * and an entry that inflates past its declared size is refused while inflating (zip bombs).
   */
  readonly maxUncompressedBytes?: number;
  /** A ZIP listing more entries is refused. */
  readonly maxZipEntries?: number;
  /** A ZIP entry (or the whole file) declaring a higher uncompressed : compressed ratio is refused. */
  readonly maxCompressionRatio?: number;
  /** The SHA-256 (hex) the publisher declared for the bytes: checked before anything is decoded. */
  readonly sha256?: string;
}

export function isZip(bytes: Uint8Array): boolean {
  return (
    bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04
  );
}

/** Bytes to register entries; throws (with a message for the operator) when the whole file is unusable. */
export function decodeRegister(bytes: Uint8Array, options: DecodeOptions = {}): DecodedRegister {
  const format = options.format ?? "auto";
  if (options.sha256 !== undefined) {
    const actual = sha256Hex(bytes);
    if (actual !== options.sha256.toLowerCase())
      throw new Error(
        `SHA-256 check failed: the file hashes to ${actual}, its publisher declared ${options.sha256.toLowerCase()}`,
      );
  }
  const zipped = isZip(bytes);
  if (format === "eba-zip" && !zipped) throw new Error("register is not a ZIP file (format eba-zip)");
  const json = zipped
    ? jsonFromZip(bytes, {
        maxUncompressedBytes: options.maxUncompressedBytes ?? DEFAULT_ZIP_BOUNDS.maxUncompressedBytes,
        maxEntries: options.maxZipEntries ?? DEFAULT_ZIP_BOUNDS.maxEntries,
        maxRatio: options.maxCompressionRatio ?? DEFAULT_ZIP_BOUNDS.maxRatio,
      })
    : bytes;
  const text = new TextDecoder("utf-8", { fatal: false }).decode(json);
  let kind: "json" | "eba";
  if (format === "json") kind = "json";
  else if (format === "eba-json" || format === "eba-zip") kind = "eba";
  else kind = /^\s*\[/.test(text.slice(0, 64)) ? "eba" : "json";

  if (kind === "json") {
    const entries = parseRegisterDocument(text, options.source);
    return { entries, kind, zipped, skipped: 0, skippedByReason: {} };
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new Error(`EBA register is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(document)) throw new Error("EBA register is not a JSON array of entity lists");
  const mapping = mapEbaRegister(document, options.source);
  return {
    entries: mapping.entries,
    kind,
    zipped,
    skipped: mapping.skippedTotal,
    skippedByReason: mapping.skipped,
  };
}

/**
 * The EBA ZIP holds one JSON file; if there are several, the largest (by its declared size) is the
 * register, and only it is inflated. The EBA has been seen to put a SHA-256 sidecar of the JSON
 * beside it; its name is not documented, so a `.sha256` entry is taken as the JSON's when it is
 * named after it (`x.json.sha256`, `x.sha256`) or when it is the only sidecar beside the only JSON.
 * Such a sidecar must start with the JSON's SHA-256 in hex (as `sha256sum` writes it) and be at
 * most 4 KiB: anything else refuses the file. The ZIP's bounds (register-zip.ts) are checked from
 * its central directory before anything is inflated, and while inflating.
 */
function jsonFromZip(bytes: Uint8Array, bounds: ZipBounds): Uint8Array {
  const entries = zipEntries(bytes, bounds);
  const jsons = entries.filter((e) => e.name.toLowerCase().endsWith(".json"));
  const sidecars = entries.filter((e) => e.name.toLowerCase().endsWith(SIDECAR));
  const largest = jsons.sort((a, b) => b.uncompressedSize - a.uncompressedSize)[0];
  if (!largest) throw new Error("register ZIP holds no .json file");
  const sidecar = sidecarOf(largest.name, sidecars, jsons.length);
  if (sidecar && sidecar.uncompressedSize > MAX_SIDECAR_BYTES)
    throw new DocumentRefused(
      "uncompressed-size",
      `register ZIP refused: its sidecar ${sidecar.name} declares ${sidecar.uncompressedSize} bytes, more than the ${MAX_SIDECAR_BYTES} allowed`,
    );
  const json = entryBytes(bytes, largest);
  if (sidecar) checkSidecar(largest.name, json, sidecar.name, entryBytes(bytes, sidecar));
  return json;
}

const SIDECAR = ".sha256";
/** A hash, a file name and a newline: a few hundred bytes at most. */
const MAX_SIDECAR_BYTES = 4096;

function sidecarOf(jsonName: string, sidecars: readonly ZipEntry[], jsonCount: number): ZipEntry | undefined {
  const lower = jsonName.toLowerCase();
  const named = sidecars.find(({ name }) => {
    const n = name.toLowerCase();
    return n === `${lower}${SIDECAR}` || n === `${lower.slice(0, -".json".length)}${SIDECAR}`;
  });
  if (named) return named;
  return sidecars.length === 1 && jsonCount === 1 ? sidecars[0] : undefined;
}

function checkSidecar(jsonName: string, json: Uint8Array, sidecarName: string, sidecar: Uint8Array): void {
  const declared = /^\s*([0-9a-fA-F]{64})(?![0-9a-fA-F])/.exec(new TextDecoder().decode(sidecar))?.[1];
  if (!declared) throw new Error(`${sidecarName} in the register ZIP does not start with a SHA-256 in hex`);
  const actual = sha256Hex(json);
  if (actual !== declared.toLowerCase())
    throw new Error(
      `SHA-256 check failed: ${jsonName} hashes to ${actual}, its sidecar ${sidecarName} says ${declared.toLowerCase()}`,
    );
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** What the worker posts back. `lines` is transferred. */
export type WorkerReply =
  | {
      readonly ok: true;
      readonly lines: ArrayBuffer;
      readonly count: number;
      readonly kind: "json" | "eba";
      readonly zipped: boolean;
      readonly skipped: number;
      readonly skippedByReason: Readonly<Record<string, number>>;
    }
  | {
      readonly ok: false;
      readonly error: string;
      /** The bound that refused the file, when one did. */
      readonly refused?: RefusalReason;
    };

export interface WorkerRequest {
  readonly bytes: Uint8Array;
  readonly options: DecodeOptions;
}

export const WORKER_MARK = "psd2-gateway:register-worker";

function serve(request: WorkerRequest): { reply: WorkerReply; transfer: ArrayBuffer[] } {
  try {
    const decoded = decodeRegister(request.bytes, request.options);
    // One string per entry, one newline between: cheap to split in slices on the other side.
    const lines = new TextEncoder().encode(decoded.entries.map((e) => JSON.stringify(e)).join("\n"));
    const buffer =
      lines.byteOffset === 0 && lines.byteLength === lines.buffer.byteLength
        ? (lines.buffer as ArrayBuffer)
        : (lines.slice().buffer as ArrayBuffer);
    return {
      reply: {
        ok: true,
        lines: buffer,
        count: decoded.entries.length,
        kind: decoded.kind,
        zipped: decoded.zipped,
        skipped: decoded.skipped,
        skippedByReason: decoded.skippedByReason,
      },
      transfer: [buffer],
    };
  } catch (error) {
    return {
      reply: {
        ok: false,
        error: error instanceof Error ? error.message : String(error),
        ...(refusalOf(error) ? { refused: refusalOf(error)! } : {}),
      },
      transfer: [],
    };
  }
}

// Only when started by register-loading.ts: importing this file elsewhere (tests, the inline path) does nothing.
if (parentPort && (workerData as { mark?: string } | undefined)?.mark === WORKER_MARK) {
  const port = parentPort;
  const { request } = workerData as { request: WorkerRequest };
  const { reply, transfer } = serve(request);
  port.postMessage(reply, transfer);
}
