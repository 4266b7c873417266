/**
 * The register ZIP read within bounds (zip bombs, issue 37). The central directory is read first
 * and the whole file refused, before anything is inflated, when it declares more entries, more
 * uncompressed bytes (all entries together) or a higher compression ratio (per entry and for the
 * file) than allowed. Declared sizes may lie: an entry is then inflated by a streaming inflater,
 * a slice of compressed input at a time, into a buffer of exactly its declared size, and refused
 * the moment it would inflate past it. Peak memory is the declared size of what is inflated (≤ the
 * bound) and one slice's output (≤ ~16.5 MiB: DEFLATE expands at most ~1032:1), never what the
 * data would inflate to.
 *
 * What it reads: the end of central directory record (ZIP64's too), the central directory, each
 * entry's local header (to find its data); stored and deflated entries; no encryption, no archive
 * split over several disks.
 */

import { Inflate } from "fflate";
import { DocumentRefused } from "./bounds.js";

export interface ZipBounds {
  /** Uncompressed bytes all entries together may declare (so each one too). */
  readonly maxUncompressedBytes: number;
  /** Entries the central directory may list. */
  readonly maxEntries: number;
  /**
   * Uncompressed size over compressed size, per entry and for the whole file (its declared
   * uncompressed total over the ZIP's length). Sizes under RATIO_FLOOR_BYTES are exempt: a small
   * file costs nothing however well it compresses.
   */
  readonly maxRatio: number;
}

/**
 * 512 MiB: V8 cannot make a string longer than 2^29 − 24 characters, so a larger JSON could not be
 * decoded anyway; the EBA's register JSON is a few hundred MB. 16 entries: the EBA's ZIP holds the
 * JSON and perhaps a SHA-256 sidecar. 200:1: an EBA-shaped JSON of 50 MB deflates 11:1 (level 1) to
 * 25:1 (level 9); DEFLATE's ceiling is ~1032:1, where bombs live.
 */
export const DEFAULT_ZIP_BOUNDS: ZipBounds = {
  maxUncompressedBytes: 512 * 1024 * 1024,
  maxEntries: 16,
  maxRatio: 200,
};

/** Below this many uncompressed bytes the ratio is not asked. */
export const RATIO_FLOOR_BYTES = 1024 * 1024;

export interface ZipEntry {
  readonly name: string;
  /** 0 stored, 8 deflated. */
  readonly method: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  /** Where the entry's data starts in the ZIP. */
  readonly dataOffset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
/** Compressed bytes pushed into the inflater at a time: its output per push is at most ~1032 times this. */
const SLICE = 16 * 1024;

/** The entries of `bytes`, every bound checked; throws DocumentRefused (a bound) or Error (unreadable). */
export function zipEntries(bytes: Uint8Array, bounds: ZipBounds): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = findEndOfCentralDirectory(view);
  let count = view.getUint16(end + 10, true);
  let directorySize = view.getUint32(end + 12, true);
  let directoryOffset = view.getUint32(end + 16, true);
  if (view.getUint16(end + 4, true) !== 0 || view.getUint16(end + 6, true) !== 0)
    throw unreadable("it is split over several disks");
  if (count === MAX16 || directorySize === MAX32 || directoryOffset === MAX32) {
    const locator = end - 20;
    if (locator < 0 || view.getUint32(locator, true) !== ZIP64_LOCATOR)
      throw unreadable("its ZIP64 end of central directory is missing");
    const at = safe(view.getBigUint64(locator + 8, true));
    if (at + 56 > locator || view.getUint32(at, true) !== ZIP64_EOCD)
      throw unreadable("its ZIP64 end of central directory is missing");
    count = safe(view.getBigUint64(at + 32, true));
    directorySize = safe(view.getBigUint64(at + 40, true));
    directoryOffset = safe(view.getBigUint64(at + 48, true));
  }
  if (count > bounds.maxEntries)
    throw new DocumentRefused(
      "entries",
      `register ZIP refused: it lists ${count} entries, more than the ${bounds.maxEntries} allowed`,
    );
  if (directoryOffset + directorySize > bytes.length)
    throw unreadable("its central directory lies outside the file");

  const entries: ZipEntry[] = [];
  let total = 0;
  let at = directoryOffset;
  const directoryEnd = directoryOffset + directorySize;
  for (let i = 0; i < count; i++) {
    if (at + 46 > directoryEnd || view.getUint32(at, true) !== CENTRAL)
      throw unreadable("its central directory is cut short");
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    let compressedSize = view.getUint32(at + 20, true);
    let uncompressedSize = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    let localOffset = view.getUint32(at + 42, true);
    const next = at + 46 + nameLength + extraLength + commentLength;
    if (next > directoryEnd) throw unreadable("its central directory is cut short");
    const name = new TextDecoder(flags & 0x800 ? "utf-8" : "latin1").decode(
      bytes.subarray(at + 46, at + 46 + nameLength),
    );
    // ZIP64: the fields that overflowed are in the extra field 0x0001, in this order.
    if (uncompressedSize === MAX32 || compressedSize === MAX32 || localOffset === MAX32) {
      const extra = zip64Extra(view, at + 46 + nameLength, extraLength);
      if (!extra) throw unreadable(`${name} lacks its ZIP64 sizes`);
      let field = extra.start;
      const read = () => {
        if (field + 8 > extra.end) throw unreadable(`${name} lacks its ZIP64 sizes`);
        const value = safe(view.getBigUint64(field, true));
        field += 8;
        return value;
      };
      if (uncompressedSize === MAX32) uncompressedSize = read();
      if (compressedSize === MAX32) compressedSize = read();
      if (localOffset === MAX32) localOffset = read();
    }
    if (flags & 0x1) throw unreadable(`${name} is encrypted`);
    if (method !== 0 && method !== 8) throw unreadable(`${name} uses compression method ${method}`);
    if (method === 0 && compressedSize !== uncompressedSize)
      throw unreadable(`${name} is stored, yet its sizes differ`);
    total += uncompressedSize;
    if (total > bounds.maxUncompressedBytes)
      throw new DocumentRefused(
        "uncompressed-size",
        `register ZIP refused: ${uncompressedSize > bounds.maxUncompressedBytes ? `${name} declares ${uncompressedSize} bytes uncompressed` : `its entries declare more than ${bounds.maxUncompressedBytes} bytes uncompressed together`}, more than the ${bounds.maxUncompressedBytes} allowed`,
      );
    if (uncompressedSize >= RATIO_FLOOR_BYTES && uncompressedSize > bounds.maxRatio * compressedSize)
      throw new DocumentRefused(
        "ratio",
        `register ZIP refused: ${name} declares ${uncompressedSize} bytes from ${compressedSize} compressed, a ratio over the ${bounds.maxRatio}:1 allowed`,
      );
    entries.push({
      name,
      method,
      compressedSize,
      uncompressedSize,
      dataOffset: dataOffset(view, localOffset, name, flags, compressedSize, uncompressedSize),
    });
    at = next;
  }
  if (total >= RATIO_FLOOR_BYTES && total > bounds.maxRatio * bytes.length)
    throw new DocumentRefused(
      "ratio",
      `register ZIP refused: its entries declare ${total} bytes from a file of ${bytes.length}, a ratio over the ${bounds.maxRatio}:1 allowed`,
    );
  return entries;
}

/**
 * The entry's bytes, exactly its declared size: inflating stops, refused, at the first byte past
 * it, and an entry that inflates to fewer bytes is unreadable.
 */
export function entryBytes(bytes: Uint8Array, entry: ZipEntry): Uint8Array {
  const data = bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  if (entry.method === 0) return data;
  const out = new Uint8Array(entry.uncompressedSize);
  let length = 0;
  const inflater = new Inflate((chunk) => {
    if (length + chunk.length > out.length)
      throw new DocumentRefused(
        "uncompressed-size",
        `register ZIP refused: ${entry.name} inflates to more than the ${entry.uncompressedSize} bytes it declares`,
      );
    out.set(chunk, length);
    length += chunk.length;
  });
  try {
    if (data.length === 0) inflater.push(data, true);
    for (let i = 0; i < data.length; i += SLICE)
      inflater.push(data.subarray(i, i + SLICE), i + SLICE >= data.length);
  } catch (error) {
    if (error instanceof DocumentRefused) throw error;
    throw unreadable(`${entry.name} does not inflate (${(error as Error).message})`);
  }
  if (length !== out.length)
    throw unreadable(`${entry.name} inflates to ${length} bytes, it declares ${entry.uncompressedSize}`);
  return out;
}

function findEndOfCentralDirectory(view: DataView): number {
  const last = view.byteLength - 22;
  for (let at = last; at >= 0 && at >= last - MAX16; at--) {
    if (view.getUint32(at, true) === EOCD && at + 22 + view.getUint16(at + 20, true) <= view.byteLength)
      return at;
  }
  throw unreadable("it has no end of central directory record");
}

function zip64Extra(
  view: DataView,
  start: number,
  length: number,
): { start: number; end: number } | undefined {
  const end = start + length;
  for (let at = start; at + 4 <= end; ) {
    const id = view.getUint16(at, true);
    const size = view.getUint16(at + 2, true);
    if (at + 4 + size > end) return undefined;
    if (id === 0x0001) return { start: at + 4, end: at + 4 + size };
    at += 4 + size;
  }
  return undefined;
}

/** Where an entry's data starts, from its local header, which must agree with the central directory. */
function dataOffset(
  view: DataView,
  localOffset: number,
  name: string,
  flags: number,
  compressedSize: number,
  uncompressedSize: number,
): number {
  if (localOffset + 30 > view.byteLength || view.getUint32(localOffset, true) !== LOCAL)
    throw unreadable(`${name} has no local header where the central directory says`);
  const localCompressed = view.getUint32(localOffset + 18, true);
  const localUncompressed = view.getUint32(localOffset + 22, true);
  // With a data descriptor (bit 3) the local header's sizes are zeros; ZIP64 puts them in its extra field.
  if (
    !(flags & 0x8) &&
    localCompressed !== MAX32 &&
    localUncompressed !== MAX32 &&
    (localCompressed !== compressedSize || localUncompressed !== uncompressedSize)
  )
    throw unreadable(`${name}: its local header and the central directory declare different sizes`);
  const start =
    localOffset + 30 + view.getUint16(localOffset + 26, true) + view.getUint16(localOffset + 28, true);
  if (start + compressedSize > view.byteLength) throw unreadable(`${name} lies partly outside the file`);
  return start;
}

/** A 64-bit size as a number; past 2^53 it is as refused as it is unreal. */
function safe(value: bigint): number {
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}

function unreadable(why: string): Error {
  return new Error(`register ZIP is unreadable: ${why}`);
}
