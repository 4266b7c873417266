/**
 * The EBA register's file metadata (`GET https://euclid.eba.europa.eu/register/api/filemetadata`):
 * where the current ZIP of the PSD2 register is, how large it is and its SHA-256. The EBA documents
 * no more than the answer itself; the fields read here are the ones it has been seen to carry:
 *
 *   { "latest_version_relative_zip_path": "20260824/download-PSDMD-202608241600.zip",
 *     "latest_version_relative_zip_size": "19828208",
 *     "sha256_hash": "59c4…",                       SHA-256 of the ZIP, hex
 *     "timestamp": "Mon Aug 24 16:00:29 UTC 2026",
 *     "golden_copy_path_context": "https://euclid.eba.europa.eu/register/downloads/PSDMD/" }
 *
 * The file is the context followed by the relative path. Pure: the bytes come in, the file's URL,
 * size and hash or an Error naming the field come out. Other fields are ignored.
 */

import { z } from "zod";

export interface EbaFileMetadata {
  /** The context and the relative path joined: where the current ZIP is. */
  readonly fileUrl: string;
  readonly relativePath: string;
  /** The ZIP's size in bytes, as declared. */
  readonly size: number;
  /** The ZIP's SHA-256, lower-case hex. */
  readonly sha256: string;
  /** When the EBA made the file, as it writes it (free text, for operators). */
  readonly timestamp: string;
}

/**
 * A path below the context: segments of URL-safe characters, none `.` or `..`, no `%` (the URL
 * parser reads `%2e%2e` as `..`), no leading `/`, query or fragment.
 */
const relativePath = z
  .string()
  .max(1024)
  .regex(
    /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/,
    "expected a relative path of letters, digits and . _ ~ - between slashes",
  )
  .refine((p) => p.split("/").every((segment) => !/^\.+$/.test(segment)), "a '.' or '..' segment");

const schema = z.object({
  latest_version_relative_zip_path: relativePath,
  latest_version_relative_zip_size: z
    .string()
    .regex(/^[0-9]{1,15}$/, "expected the size in bytes as a decimal string"),
  sha256_hash: z.string().regex(/^[0-9a-fA-F]{64}$/, "expected a SHA-256 in hex (64 digits)"),
  timestamp: z.string().max(100),
  golden_copy_path_context: z
    .url({ protocol: /^https?$/, error: "expected an http(s) URL" })
    .max(2048)
    .refine((u) => !u.includes("?") && !u.includes("#"), "a URL with a query or fragment"),
});

/** Above this a metadata answer is not the few hundred bytes the EBA sends. */
export const MAX_METADATA_BYTES = 64 * 1024;

/** Parses the metadata answer; throws with the offending field on anything else. */
export function parseEbaFileMetadata(bytes: Uint8Array): EbaFileMetadata {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new Error(`metadata is not JSON: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "(the document)";
    throw new Error(`metadata field ${field}: ${issue.message}`);
  }
  const m = parsed.data;
  // Joined as the EBA means it (context + path), with exactly one slash between.
  const context = m.golden_copy_path_context.endsWith("/")
    ? m.golden_copy_path_context
    : `${m.golden_copy_path_context}/`;
  const fileUrl = new URL(`${context}${m.latest_version_relative_zip_path}`).href;
  return {
    fileUrl,
    relativePath: m.latest_version_relative_zip_path,
    size: Number(m.latest_version_relative_zip_size),
    sha256: m.sha256_hash.toLowerCase(),
    timestamp: m.timestamp,
  };
}
