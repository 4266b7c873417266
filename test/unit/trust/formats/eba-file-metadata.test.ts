/**
 * The EBA's file metadata, field by field: the answer the EBA gives is read into the file's URL,
 * size and hash; anything else is refused naming the field.
 */

import { describe, expect, it } from "vitest";
import { parseEbaFileMetadata } from "../../../../src/trust/formats/eba-file-metadata.js";

const HASH = "59c49826ad71a6a2f4e7c5b1d0e8f9a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7";

/** The shape the EBA answers with (2026-08-24). */
const GOOD = {
  latest_version_relative_zip_path: "20260824/download-PSDMD-202608241600.zip",
  latest_version_relative_zip_size: "19828208",
  sha256_hash: HASH,
  timestamp: "Mon Aug 24 16:00:29 UTC 2026",
  golden_copy_path_context: "https://euclid.eba.europa.eu/register/downloads/PSDMD/",
};

const bytes = (value: unknown) =>
  new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));

describe("EBA file metadata", () => {
  it("reads the EBA's answer: the file is the context followed by the relative path", () => {
    expect(parseEbaFileMetadata(bytes({ ...GOOD, unknown_field: 1 }))).toEqual({
      fileUrl:
        "https://euclid.eba.europa.eu/register/downloads/PSDMD/20260824/download-PSDMD-202608241600.zip",
      relativePath: "20260824/download-PSDMD-202608241600.zip",
      size: 19_828_208,
      sha256: HASH,
      timestamp: "Mon Aug 24 16:00:29 UTC 2026",
    });
  });

  it.each([
    {
      name: "a context without its trailing slash gets one",
      change: { golden_copy_path_context: "https://euclid.eba.europa.eu/register/downloads/PSDMD" },
      fileUrl:
        "https://euclid.eba.europa.eu/register/downloads/PSDMD/20260824/download-PSDMD-202608241600.zip",
    },
    {
      name: "an upper-case hash is kept lower-case",
      change: { sha256_hash: HASH.toUpperCase(), golden_copy_path_context: "http://127.0.0.1:8099/" },
      fileUrl: "http://127.0.0.1:8099/20260824/download-PSDMD-202608241600.zip",
    },
  ])("$name", ({ change, fileUrl }) => {
    const parsed = parseEbaFileMetadata(bytes({ ...GOOD, ...change }));
    expect(parsed.fileUrl).toBe(fileUrl);
    expect(parsed.sha256).toBe(HASH);
  });

  it.each<{ name: string; body: unknown; error: string }>([
    { name: "not JSON", body: "<html>maintenance</html>", error: "metadata is not JSON" },
    { name: "an array", body: [GOOD], error: "metadata field (the document)" },
    {
      name: "the relative path missing",
      body: { ...GOOD, latest_version_relative_zip_path: undefined },
      error: "metadata field latest_version_relative_zip_path",
    },
    {
      name: "the hash missing",
      body: { ...GOOD, sha256_hash: undefined },
      error: "metadata field sha256_hash",
    },
    {
      name: "the timestamp missing",
      body: { ...GOOD, timestamp: undefined },
      error: "metadata field timestamp",
    },
    {
      name: "a hash too short",
      body: { ...GOOD, sha256_hash: HASH.slice(2) },
      error: "sha256_hash: expected a SHA-256 in hex (64 digits)",
    },
    {
      name: "a hash that is not hex",
      body: { ...GOOD, sha256_hash: `${HASH.slice(1)}g` },
      error: "sha256_hash: expected a SHA-256 in hex",
    },
    {
      name: "a '..' segment",
      body: { ...GOOD, latest_version_relative_zip_path: "20260824/../../../admin/x.zip" },
      error: "latest_version_relative_zip_path: a '.' or '..' segment",
    },
    {
      name: "a '..' written %2e%2e",
      body: { ...GOOD, latest_version_relative_zip_path: "%2e%2e/x.zip" },
      error: "latest_version_relative_zip_path: expected a relative path",
    },
    {
      name: "an absolute path",
      body: { ...GOOD, latest_version_relative_zip_path: "/etc/passwd" },
      error: "latest_version_relative_zip_path: expected a relative path",
    },
    {
      name: "a URL in the path",
      body: { ...GOOD, latest_version_relative_zip_path: "https://elsewhere.example/x.zip" },
      error: "latest_version_relative_zip_path: expected a relative path",
    },
    {
      name: "a size as a number",
      body: { ...GOOD, latest_version_relative_zip_size: 19828208 },
      error: "latest_version_relative_zip_size",
    },
    {
      name: "a negative size",
      body: { ...GOOD, latest_version_relative_zip_size: "-1" },
      error: "latest_version_relative_zip_size: expected the size in bytes as a decimal string",
    },
    {
      name: "a size with a unit",
      body: { ...GOOD, latest_version_relative_zip_size: "19 MB" },
      error: "latest_version_relative_zip_size: expected the size in bytes as a decimal string",
    },
    {
      name: "a context that is not http(s)",
      body: { ...GOOD, golden_copy_path_context: "file:///etc/" },
      error: "golden_copy_path_context: expected an http(s) URL",
    },
    {
      name: "a context with a query",
      body: { ...GOOD, golden_copy_path_context: "https://euclid.eba.europa.eu/d/?x=" },
      error: "golden_copy_path_context: a URL with a query or fragment",
    },
  ])("refuses $name", ({ body, error }) => {
    expect(() => parseEbaFileMetadata(bytes(body))).toThrow(error);
  });
});
