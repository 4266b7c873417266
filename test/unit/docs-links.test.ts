/**
 * The documentation holds together (issue 39): every relative link of README.md and docs/*.md (and
 * the other Markdown files a reader reaches from them) names a file or folder of the checkout, and
 * every in-repo anchor (`#…`, or `file.md#…`) names a heading of that file as GitHub renders it.
 * The README stays a front door of at most 300 lines whose documentation map links every file of
 * docs/, and a long document opens with a table of contents listing its sections.
 */

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

const DOCS = readdirSync(join(root, "docs"))
  .filter((f) => f.endsWith(".md"))
  .sort()
  .map((f) => `docs/${f}`);

/** The Markdown files checked: the README, docs/, and the folders' own READMEs they link to. */
const FILES = ["README.md", ...DOCS, "deploy/README.md", "certs/README.md", "bench/RESULTS.md"];

/** A document longer than this opens with a table of contents. */
const LONG = 150;

interface Line {
  readonly text: string;
  /** 1-based. */
  readonly number: number;
}

/** The lines outside fenced code blocks, with inline code spans blanked out. */
function prose(markdown: string): Line[] {
  const lines: Line[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, i) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(text);
    if (open) {
      if (fence === undefined) fence = open[1]![0]!;
      else if (open[1]![0] === fence) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    lines.push({
      text: text.replace(/(`+)(?:(?!\1).)+?\1/g, (span) => " ".repeat(span.length)),
      number: i + 1,
    });
  });
  return lines;
}

/** GitHub's anchor for a heading's text (github-slugger): lower case, punctuation dropped, spaces to '-'. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a Markdown text offers: its headings' slugs (a repeated one gets -1, -2, …) and explicit ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const lines = markdown.split("\n");
  let fence: string | undefined;
  for (const text of lines) {
    const open = /^\s*(`{3,}|~{3,})/.exec(text);
    if (open) {
      if (fence === undefined) fence = open[1]![0]!;
      else if (open[1]![0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading) {
      const base = slug(heading[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const id of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

interface Link {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

const INLINE = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/;

/** Every link target of a Markdown file outside code. */
function linksOf(file: string, markdown: string): Link[] {
  const links: Link[] = [];
  for (const { text, number } of prose(markdown)) {
    for (const m of text.matchAll(INLINE)) links.push({ file, line: number, target: m[1]! });
    const definition = DEFINITION.exec(text);
    if (definition) links.push({ file, line: number, target: definition[1]! });
  }
  return links;
}

/** Why a link does not resolve, or undefined when it does. External links (a scheme, `//`) are not followed. */
function problemOf(link: Link, read: (file: string) => string): string | undefined {
  const { target } = link;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return undefined;
  const hash = target.indexOf("#");
  const path = decodeURI(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = path === "" ? link.file : normalize(join(dirname(link.file), path));
  if (resolved.startsWith("..")) return `${target} leaves the repository`;
  if (!existsSync(join(root, resolved))) return `${target}: no file ${resolved}`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith(".md") || statSync(join(root, resolved)).isDirectory()) return undefined;
  if (!anchorsOf(read(resolved)).has(anchor)) return `${target}: ${resolved} has no heading #${anchor}`;
  return undefined;
}

function reader(): (file: string) => string {
  const cache = new Map<string, string>();
  return (file) => {
    let text = cache.get(file);
    if (text === undefined) {
      text = readFileSync(join(root, file), "utf8");
      cache.set(file, text);
    }
    return text;
  };
}

describe("the documentation's links", () => {
  const read = reader();

  it("makes anchors as GitHub does", () => {
    expect(slug("Unattended access (SPEC 8), stores and several gateways")).toBe(
      "unattended-access-spec-8-stores-and-several-gateways",
    );
    expect(slug("3. A request's life")).toBe("3-a-requests-life");
    expect(slug("What `npm test` needs")).toBe("what-npm-test-needs");
    expect(slug("RFC 9421 (FAPI 2.0 HTTP Signatures)")).toBe("rfc-9421-fapi-20-http-signatures");
    expect(slug("draft-cavage-12 as signers send it today")).toBe("draft-cavage-12-as-signers-send-it-today");
    expect([...anchorsOf("# A\n## B\n```\n# not a heading\n```\n## B\n")]).toEqual(["a", "b", "b-1"]);
  });

  it("finds links outside code only, and judges them", () => {
    const markdown = [
      "[a](docs/ARCHITECTURE.md) `[b](nowhere.md)` ![c](docs/none.png)",
      "```",
      "[d](nowhere.md)",
      "```",
      "[e](#missing) [f](https://example.com/x) [g](README.md#documentation)",
      "[h]: ../outside.md",
    ].join("\n");
    const links = linksOf("README.md", markdown);
    expect(links.map((l) => `${l.line} ${l.target}`)).toEqual([
      "1 docs/ARCHITECTURE.md",
      "1 docs/none.png",
      "5 #missing",
      "5 https://example.com/x",
      "5 README.md#documentation",
      "6 ../outside.md",
    ]);
    const problems = links.map((l) => problemOf(l, (f) => (f === "README.md" ? markdown : read(f))));
    expect(problems).toEqual([
      undefined,
      "docs/none.png: no file docs/none.png",
      "#missing: README.md has no heading #missing",
      undefined,
      "README.md#documentation: README.md has no heading #documentation",
      "../outside.md leaves the repository",
    ]);
  });

  it("resolve: every relative link names a file, every anchor a heading", () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of FILES) {
      for (const link of linksOf(file, read(file))) {
        checked++;
        const problem = problemOf(link, read);
        if (problem) problems.push(`${file}:${link.line}: ${problem}`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(problems).toEqual([]);
  });
});

describe("the documentation's shape", () => {
  const read = reader();

  it("the README is a front door of at most 300 lines", () => {
    expect(read("README.md").trimEnd().split("\n").length).toBeLessThanOrEqual(300);
  });

  it("the README's documentation map links every file of docs/, deploy/README.md and bench/RESULTS.md", () => {
    const linked = new Set(
      linksOf("README.md", read("README.md")).map((l) => normalize(l.target.replace(/#.*/, ""))),
    );
    for (const file of [...DOCS, "deploy/README.md", "bench/RESULTS.md"]) {
      expect(linked.has(file), `README.md links ${file}`).toBe(true);
    }
  });

  it(`a document of more than ${LONG} lines opens with a table of contents listing each of its sections`, () => {
    for (const file of DOCS) {
      const markdown = read(file);
      if (markdown.split("\n").length <= LONG) continue;
      const lines = prose(markdown);
      const sections = lines.filter((l) => /^## /.test(l.text)).map((l) => slug(l.text.slice(3)));
      const firstSection = lines.find((l) => /^## /.test(l.text))?.number ?? Number.POSITIVE_INFINITY;
      const contents = linksOf(file, markdown)
        .filter((l) => l.line < firstSection && l.target.startsWith("#"))
        .map((l) => l.target.slice(1));
      expect(contents, `${relative(".", file)}: its contents before the first section`).toEqual(sections);
    }
  });
});
