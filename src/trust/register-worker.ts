/**
 * The heavy half of loading a register, run in a worker thread so that a 50 MB EBA file never
 * blocks the gateway's event loop: unzip, decode, JSON.parse and map to register entries. The
 * result goes back as one transferable buffer of newline-separated JSON entries (moved, not
 * copied); the main thread turns it into a Map in small slices (register-loading.ts).
 *
 * `decodeRegister` is also called directly, on the main thread, for inputs too small to be worth
 * a thread.
 */

import { parentPort, workerData } from "node:worker_threads";
import { unzipSync } from "fflate";
import type { RegisterEntry } from "../eidas/index.js";
import { mapEbaRegister } from "./formats/eba-register.js";
import { parseRegisterDocument } from "./formats/register-document.js";

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
  /** A ZIP entry announcing more than this is refused before it is inflated (zip bombs). */
  readonly maxUncompressedBytes?: number;
}

export const DEFAULT_MAX_UNCOMPRESSED_BYTES = 1024 * 1024 * 1024;

export function isZip(bytes: Uint8Array): boolean {
  return (
    bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04
  );
}

/** Bytes to register entries; throws (with a message for the operator) when the whole file is unusable. */
export function decodeRegister(bytes: Uint8Array, options: DecodeOptions = {}): DecodedRegister {
  const format = options.format ?? "auto";
  const zipped = isZip(bytes);
  if (format === "eba-zip" && !zipped) throw new Error("register is not a ZIP file (format eba-zip)");
  const json = zipped
    ? jsonFromZip(bytes, options.maxUncompressedBytes ?? DEFAULT_MAX_UNCOMPRESSED_BYTES)
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

/** The EBA ZIP holds one JSON file; if there are several, the largest is the register. */
function jsonFromZip(bytes: Uint8Array, maxUncompressedBytes: number): Uint8Array {
  let tooLarge: string | undefined;
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes, {
      filter: (file) => {
        if (!file.name.toLowerCase().endsWith(".json")) return false;
        if (file.originalSize > maxUncompressedBytes) {
          tooLarge = `${file.name} inflates to ${file.originalSize} bytes, more than the ${maxUncompressedBytes} allowed`;
          return false;
        }
        return true;
      },
    });
  } catch (error) {
    throw new Error(`register ZIP is unreadable: ${(error as Error).message}`);
  }
  const largest = Object.values(files).sort((a, b) => b.length - a.length)[0];
  if (!largest) throw new Error(tooLarge ?? "register ZIP holds no .json file");
  return largest;
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
  | { readonly ok: false; readonly error: string };

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
      reply: { ok: false, error: error instanceof Error ? error.message : String(error) },
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
