/**
 * The repository stands alone: a user gets the checkout and nothing beside it, so no tracked file
 * may point at the folder that once sat beside it (issue 26). Interop material lives in
 * test/fixtures/interop; the bank's specification is cited by name and section ("SPEC n.m").
 */

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

// Spelled in pieces so that this file does not match itself.
const FORBIDDEN = [["..", "shared"].join("/"), ["", "work", "shared"].join("/")];

function trackedFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" });
  // A tracked file deleted in the work tree is not something a user gets.
  return out.split("\0").filter((file) => file !== "" && existsSync(join(root, file)));
}

describe("the repository stands alone", () => {
  const files = trackedFiles();

  it("lists the tracked files (the scan below is not empty)", () => {
    expect(files).toContain("package.json");
    expect(files).toContain("test/fixtures/interop/cavage-vectors.json");
  });

  it("no tracked file points at a folder beside the checkout", () => {
    const offenders: string[] = [];
    for (const file of files) {
      const bytes = readFileSync(join(root, file));
      for (const needle of FORBIDDEN) if (bytes.includes(needle)) offenders.push(`${file}: ${needle}`);
    }
    expect(offenders).toEqual([]);
  });
});
