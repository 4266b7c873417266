/**
 * The house's central promise is written in three places: each dialect unit's `authenticates`
 * (src/checks/dialects/), README's summary table and docs/dialects.md's table. This holds the two
 * documents to the code, row by row: every dialect named once, and said to authenticate what its
 * unit says (`head`: "the head …"; `body`: "the body alone").
 */

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { dialectNames, dialectUnit } from "../../../src/checks/index.js";

const root = new URL("../../../", import.meta.url);

/** Dialect name → what the document's table says it authenticates: `head` or `body`. */
function statedIn(file: string, heading: string): Map<string, string> {
  const text = readFileSync(new URL(file, root), "utf8");
  const at = text.indexOf(`## ${heading}`);
  expect(at, `${file}: a section '## ${heading}'`).toBeGreaterThanOrEqual(0);
  const end = text.indexOf("\n## ", at + 3);
  const section = text.slice(at, end < 0 ? undefined : end);
  const stated = new Map<string, string>();
  for (const line of section.split("\n")) {
    if (!line.startsWith("| ") || line.startsWith("| dialect") || line.startsWith("|---")) continue;
    const cells = line.split(" | ");
    const names = [...cells[0]!.matchAll(/`([a-z0-9-]+)`/g)].map((m) => m[1]!);
    const what = cells.find((c) => /^the (head|body)\b/.test(c));
    expect(what, `${file}: '${line.slice(0, 80)}…' says what it authenticates`).toBeDefined();
    const kind = what!.startsWith("the body alone") ? "body" : what!.startsWith("the head") ? "head" : "?";
    for (const name of names) {
      expect(stated.has(name), `${file}: ${name} is in one row only`).toBe(false);
      stated.set(name, kind);
    }
  }
  return stated;
}

describe.each([
  ["README.md", "What each dialect authenticates"],
  ["docs/dialects.md", "What each dialect authenticates, and when its bytes leave"],
])("%s", (file, heading) => {
  it("states for every dialect what its unit says its signature authenticates", () => {
    const stated = statedIn(file, heading);
    expect([...stated.keys()].sort()).toEqual(dialectNames().sort());
    for (const dialect of dialectNames())
      expect(stated.get(dialect), dialect).toBe(dialectUnit(dialect)!.authenticates);
  });
});
