/**
 * The bounds every trust document is held to (issue 37): a document larger than its source's
 * `maxBytes`, a register ZIP past its uncompressed size, entry count or compression ratio, an
 * answer in a content coding nobody asked for. A refusal is a DocumentRefused, whose `reason` is a
 * metric label (psd2_gateway_trust_documents_refused_total) and whose message names the bound; the
 * source keeps the copy it holds, as for any failed refresh.
 */

import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";

/** Why a document was refused, as a bounded metric label. */
export const REFUSAL_REASONS = ["size", "uncompressed-size", "entries", "ratio", "content-encoding"] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** A trust document refused by one of its bounds before (or while) it was read or inflated. */
export class DocumentRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = "DocumentRefused";
  }
}

/** The bound that refused `error`'s document, if a bound did. */
export function refusalOf(error: unknown): RefusalReason | undefined {
  return error instanceof DocumentRefused ? error.reason : undefined;
}

export function isRefusalReason(value: unknown): value is RefusalReason {
  return typeof value === "string" && (REFUSAL_REASONS as readonly string[]).includes(value);
}

/** `error` with `prefix` in front of its message, still a DocumentRefused when it was one. */
export function prefixed(prefix: string, error: unknown): Error {
  const message = `${prefix}${error instanceof Error ? error.message : String(error)}`;
  const reason = refusalOf(error);
  return reason ? new DocumentRefused(reason, message) : new Error(message);
}

/** Called once per refused document, with the bound that refused it (app/ counts it). */
export type OnRefused = (reason: RefusalReason) => void;

/**
 * A file read whole, but never more than `maxBytes` of it: its size is looked at through the handle
 * it is read from, and no more than that size is read (a file that grew meanwhile is refused, to be
 * read again at the next poll).
 */
export async function readFileBounded(path: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, "r");
  try {
    const size = (await handle.stat()).size;
    if (size > maxBytes)
      throw new DocumentRefused("size", `${size} bytes, more than the ${maxBytes} allowed`);
    // A buffer of its own, the file's size: the register loader moves it to its worker whole.
    const buffer = Buffer.alloc(size);
    let length = 0;
    while (length < size) {
      const { bytesRead } = await handle.read(buffer, length, size - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if ((await handle.read(Buffer.alloc(1), 0, 1, size)).bytesRead > 0)
      throw new Error("the file grew while it was read");
    return length === size ? buffer : buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/** readFileBounded, synchronously (the CRL disk cache, read once at start). */
export function readFileBoundedSync(path: string, maxBytes: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    if (size > maxBytes)
      throw new DocumentRefused("size", `${size} bytes, more than the ${maxBytes} allowed`);
    const buffer = Buffer.alloc(size);
    let length = 0;
    while (length < size) {
      const bytesRead = readSync(fd, buffer, length, size - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (readSync(fd, Buffer.alloc(1), 0, 1, size) > 0) throw new Error("the file grew while it was read");
    return length === size ? buffer : buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}
