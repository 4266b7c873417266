/**
 * A small parser for the Prometheus text exposition format (version 0.0.4), enough to read what
 * the admin listener's /metrics serves: `# HELP` / `# TYPE` comments, samples with or without
 * labels (escaped `\\`, `\"` and `\n` in values), special values (NaN, +Inf, -Inf, any case) and an
 * optional timestamp. Plus a scrape over real HTTP and the arithmetic tests need on it.
 */

import { request } from "undici";

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly type: string | undefined;
  readonly help: string | undefined;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** Go's ParseFloat, which Prometheus uses, takes NaN and Inf in any case; prom-client writes `Nan`. */
function parseValue(text: string, line: string): number {
  switch (text.toLowerCase()) {
    case "nan":
      return Number.NaN;
    case "+inf":
    case "inf":
      return Number.POSITIVE_INFINITY;
    case "-inf":
      return Number.NEGATIVE_INFINITY;
  }
  const value = Number(text);
  if (text === "" || Number.isNaN(value)) throw new Error(`not a sample value: '${text}' in line '${line}'`);
  return value;
}

/** Parses one sample line: `name{a="1",b="x\"y"} 12.5 [timestamp]`. */
function parseSample(line: string): Sample {
  const name = NAME.exec(line)?.[0];
  if (!name) throw new Error(`not a sample line: '${line}'`);
  let at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === "{") {
    at++;
    for (;;) {
      while (line[at] === " ") at++;
      if (line[at] === "}") {
        at++;
        break;
      }
      const labelName = LABEL_NAME.exec(line.slice(at))?.[0];
      if (!labelName) throw new Error(`bad label name at ${at} in '${line}'`);
      at += labelName.length;
      if (line[at] !== "=" || line[at + 1] !== '"') throw new Error(`expected =" at ${at} in '${line}'`);
      at += 2;
      let value = "";
      for (;;) {
        const c = line[at];
        if (c === undefined) throw new Error(`unterminated label value in '${line}'`);
        if (c === '"') {
          at++;
          break;
        }
        if (c === "\\") {
          const next = line[at + 1];
          value += next === "n" ? "\n" : (next ?? "");
          at += 2;
          continue;
        }
        value += c;
        at++;
      }
      labels[labelName] = value;
      if (line[at] === ",") at++;
      else if (line[at] !== "}") throw new Error(`expected , or } at ${at} in '${line}'`);
    }
  }
  const [valueText = "", timestamp] = line.slice(at).trim().split(/\s+/);
  if (timestamp !== undefined && !/^-?\d+$/.test(timestamp))
    throw new Error(`bad timestamp '${timestamp}' in '${line}'`);
  return { name, labels, value: parseValue(valueText, line) };
}

/** Every sample and family of one exposition; throws on a line it cannot read. */
export function parsePrometheusText(text: string): {
  samples: Sample[];
  families: Map<string, MetricFamily>;
} {
  const samples: Sample[] = [];
  const families = new Map<string, MetricFamily>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { name, type: undefined, help: undefined };
      families.set(name, f);
    }
    return f;
  };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    if (line.startsWith("#")) {
      const meta = /^#\s+(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line);
      if (!meta) continue; // a plain comment
      const [, kind, name, rest] = meta as unknown as [string, "HELP" | "TYPE", string, string];
      const f = family(name);
      families.set(name, kind === "HELP" ? { ...f, help: rest } : { ...f, type: rest });
      continue;
    }
    samples.push(parseSample(line));
  }
  return { samples, families };
}

/** One scrape, with look-ups by name and a subset of labels. */
export class Scrape {
  readonly samples: readonly Sample[];
  readonly families: ReadonlyMap<string, MetricFamily>;

  constructor(readonly text: string) {
    const parsed = parsePrometheusText(text);
    this.samples = parsed.samples;
    this.families = parsed.families;
  }

  /** Samples named `name` whose labels include every label in `labels`. */
  series(name: string, labels: Readonly<Record<string, string>> = {}): Sample[] {
    return this.samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
  }

  /** Sum over the matching series; 0 when there is none (a counter never incremented). */
  value(name: string, labels: Readonly<Record<string, string>> = {}): number {
    return this.series(name, labels).reduce((sum, s) => sum + s.value, 0);
  }

  /** The one matching series' value; throws unless exactly one series matches. */
  only(name: string, labels: Readonly<Record<string, string>> = {}): number {
    const found = this.series(name, labels);
    if (found.length !== 1)
      throw new Error(`expected exactly one ${name}${JSON.stringify(labels)}, found ${found.length}`);
    return found[0]!.value;
  }
}

/** GET `${adminUrl}/metrics` and parse it. */
export async function scrape(adminUrl: string): Promise<Scrape> {
  const response = await request(`${adminUrl}/metrics`);
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}: ${text}`);
  const type = String(response.headers["content-type"]);
  if (!type.startsWith("text/plain")) throw new Error(`/metrics content-type is ${type}`);
  return new Scrape(text);
}

/**
 * How much the series of `name` (those whose labels include `where`) moved between two scrapes,
 * summed by the labels in `keep`: `{ "outcome=rejected,status=400": 5 }`. Series that did not
 * move are left out, so `toEqual` says exactly what moved.
 */
export function movedSeries(
  before: Scrape,
  after: Scrape,
  name: string,
  keep: readonly string[],
  where: Readonly<Record<string, string>> = {},
): Record<string, number> {
  const key = (s: Sample) => keep.map((k) => `${k}=${s.labels[k] ?? ""}`).join(",");
  const moved: Record<string, number> = {};
  for (const s of after.series(name, where)) moved[key(s)] = (moved[key(s)] ?? 0) + s.value;
  for (const s of before.series(name, where)) moved[key(s)] = (moved[key(s)] ?? 0) - s.value;
  for (const [k, v] of Object.entries(moved)) if (v === 0) delete moved[k];
  return moved;
}
