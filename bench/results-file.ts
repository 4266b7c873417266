/** bench/RESULTS.md is shared by several benchmark scripts: each owns one `## ` section and replaces only it. */

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";

export const RESULTS_FILE = new URL("./RESULTS.md", import.meta.url);

export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  return `${new Date().toISOString().slice(0, 10)} on ${cpu.trim()}, ${cpus().length} cores, Node ${process.version}`;
}

export function replaceSection(heading: string, body: string): void {
  const header =
    "# Benchmark results\n\nNumbers move from machine to machine and run to run: compare the ratios within one run.\n\n" +
    "A run with a non-2xx answer it did not ask for, a failed request or a wrapped pool of presigned requests is not a " +
    "result: the benches refuse it, say why and what to set, and write nothing (bench/validity.ts, issue 42).\n";
  const text = existsSync(RESULTS_FILE) ? readFileSync(RESULTS_FILE, "utf8") : header;
  const title = `## ${heading}`;
  const section = `${title}\n\n${body.trim()}\n`;
  const start = text.indexOf(title);
  let next: string;
  if (start < 0) {
    next = `${text.trimEnd()}\n\n${section}`;
  } else {
    const after = text.indexOf("\n## ", start + title.length);
    next = text.slice(0, start) + section + (after < 0 ? "" : `\n${text.slice(after + 1)}`);
  }
  writeFileSync(RESULTS_FILE, next.endsWith("\n") ? next : `${next}\n`);
}
