/**
 * ZIP files built by hand, byte by byte, for the register's bounds: any declared size (ZIP64 when it
 * does not fit 32 bits), any number of entries, and DEFLATE data that really inflates to gigabytes
 * from a few megabytes (zerosDeflated). Nothing here inflates anything.
 */

import { constants, deflateRawSync } from "node:zlib";

export interface HandEntry {
  readonly name: string;
  /** The bytes as stored in the ZIP (already deflated for method 8). */
  readonly data: Uint8Array;
  /** 8 deflated (default), 0 stored. */
  readonly method?: 0 | 8;
  /** What the central directory and local header say the entry inflates to. */
  readonly declaredSize: number;
  /** What the local header says, when it should disagree with the central directory. */
  readonly localDeclaredSize?: number;
}

/** A ZIP of these entries; ZIP64 extra fields for sizes ≥ 4 GiB, and a ZIP64 end record for ≥ 65,535 entries. */
export function handZip(entries: readonly HandEntry[]): Uint8Array {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8");
    const big = entry.declaredSize >= 0xffffffff;
    const extra = big ? zip64Extra(entry.declaredSize, entry.data.length) : Buffer.alloc(0);
    const size32 = big ? 0xffffffff : entry.declaredSize;
    const compressed32 = big ? 0xffffffff : entry.data.length;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(big ? 45 : 20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt16LE(entry.method ?? 8, 8);
    local.writeUInt32LE(0, 14);
    local.writeUInt32LE(compressed32, 18);
    local.writeUInt32LE(big ? 0xffffffff : (entry.localDeclaredSize ?? entry.declaredSize), 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(extra.length, 28);
    parts.push(local, name, extra, Buffer.from(entry.data));
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(45, 4);
    header.writeUInt16LE(big ? 45 : 20, 6);
    header.writeUInt16LE(0x800, 8);
    header.writeUInt16LE(entry.method ?? 8, 10);
    header.writeUInt32LE(0, 16);
    header.writeUInt32LE(compressed32, 20);
    header.writeUInt32LE(size32, 24);
    header.writeUInt16LE(name.length, 28);
    header.writeUInt16LE(extra.length, 30);
    header.writeUInt32LE(offset, 42);
    central.push(header, name, extra);
    offset += local.length + name.length + extra.length + entry.data.length;
  }
  const directory = Buffer.concat(central);
  const tail: Buffer[] = [];
  const many = entries.length >= 0xffff;
  if (many) {
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0);
    record.writeBigUInt64LE(44n, 4);
    record.writeUInt16LE(45, 12);
    record.writeUInt16LE(45, 14);
    record.writeBigUInt64LE(BigInt(entries.length), 24);
    record.writeBigUInt64LE(BigInt(entries.length), 32);
    record.writeBigUInt64LE(BigInt(directory.length), 40);
    record.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + directory.length), 8);
    locator.writeUInt32LE(1, 16);
    tail.push(record, locator);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(many ? 0xffff : entries.length, 8);
  end.writeUInt16LE(many ? 0xffff : entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  tail.push(end);
  return new Uint8Array(Buffer.concat([...parts, directory, ...tail]));
}

function zip64Extra(size: number, compressed: number): Buffer {
  const extra = Buffer.alloc(4 + 16);
  extra.writeUInt16LE(0x0001, 0);
  extra.writeUInt16LE(16, 2);
  extra.writeBigUInt64LE(BigInt(size), 4);
  extra.writeBigUInt64LE(BigInt(compressed), 12);
  return extra;
}

/**
 * Raw DEFLATE data that inflates to `mebibytes` MiB of zeros: one MiB of zeros deflated and
 * full-flushed (a block standing on its own, ~1 KiB) repeated, then an empty final block.
 * 4,096 MiB of output from ~4 MiB, made in milliseconds.
 */
export function zerosDeflated(mebibytes: number): Uint8Array {
  const block = deflateRawSync(Buffer.alloc(1024 * 1024), { finishFlush: constants.Z_FULL_FLUSH });
  const out = Buffer.alloc(block.length * mebibytes + 2);
  for (let i = 0; i < mebibytes; i++) block.copy(out, i * block.length);
  // An empty final block with fixed Huffman codes: BFINAL=1, BTYPE=01, end-of-block.
  out[out.length - 2] = 0x03;
  out[out.length - 1] = 0x00;
  return new Uint8Array(out);
}
