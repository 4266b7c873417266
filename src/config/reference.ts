/**
 * The configuration reference, read from the schema itself: every key with its type, its default
 * and whether a reload applies it (config/restart.ts marks the keys only a restart takes over).
 * Pure: schema in, Markdown out; scripts/config-reference.ts writes docs/CONFIGURATION.md with it,
 * and a test holds the file to it.
 */

import type { z } from "zod";
import { RESTART_ONLY, unwrapped, type Walkable } from "./restart.js";
import { configSchema, egressConfigSchema } from "./schema.js";

export interface ReferenceRow {
  /** Dotted path; `[]` marks the items of a list. */
  readonly key: string;
  readonly type: string;
  /** The default as YAML would write it; empty when the key has none (required or optional). */
  readonly default: string;
  readonly required: boolean;
  /** Whether a reload (SIGHUP, a changed config file) applies a change of it. */
  readonly reload: "applied" | "restart";
  readonly description: string | undefined;
}

function typeName(schema: Walkable): string {
  const core = unwrapped(schema).at(-1)!;
  const def = core._zod.def;
  switch (def.type) {
    case "enum":
      return Object.values(def.entries as Record<string, string>)
        .map((v) => `\`${v}\``)
        .join(" \\| ");
    case "literal":
      return (def.values as unknown[]).map((v) => `\`${String(v)}\``).join(" \\| ");
    case "array":
      return `list of ${typeName(def.element as Walkable)}`;
    case "union":
      return (def.options as Walkable[]).map(typeName).join(" or ");
    case "record":
      return "map";
    case "string":
      return (def.format as string | undefined) === "url" ? "URL" : "string";
    case "number":
      return "number";
    default:
      return def.type;
  }
}

function defaultOf(layers: readonly Walkable[]): string {
  for (const layer of layers) {
    const def = layer._zod.def;
    if (def.type === "default") {
      const value = def.defaultValue;
      return value === undefined ? "" : JSON.stringify(value);
    }
  }
  return "";
}

/** Every key of `schema` (an object schema), its children after it. */
export function referenceRows(schema: z.ZodType, prefix = "", restart = false): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  const object = unwrapped(schema as unknown as Walkable).find((l) => l._zod.def.type === "object");
  if (!object) return rows;
  for (const [name, value] of Object.entries(object._zod.def.shape as Record<string, Walkable>)) {
    const key = prefix === "" ? name : `${prefix}.${name}`;
    const layers = unwrapped(value);
    const marked = restart || layers.some((l) => RESTART_ONLY.has(l as unknown as z.ZodType));
    const optional = layers.some((l) => ["optional", "default", "prefault"].includes(l._zod.def.type));
    const core = layers.at(-1)!;
    const description = layers.map((l) => l.description).find((d) => d !== undefined);
    const element =
      core._zod.def.type === "array" ? unwrapped(core._zod.def.element as Walkable).at(-1) : undefined;
    if (core._zod.def.type === "object") {
      rows.push({
        key,
        type: "object",
        default: "",
        required: !optional,
        reload: marked ? "restart" : "applied",
        description,
      });
      rows.push(...referenceRows(value as unknown as z.ZodType, key, marked));
      continue;
    }
    rows.push({
      key,
      type: element?._zod.def.type === "object" ? "list of objects" : typeName(value),
      default: defaultOf(layers),
      required: !optional,
      reload: marked ? "restart" : "applied",
      description,
    });
    if (element?._zod.def.type === "object")
      rows.push(...referenceRows(element as unknown as z.ZodType, `${key}[]`, marked));
  }
  return rows;
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** One mode's keys as a Markdown table. */
export function referenceTable(schema: z.ZodType): string {
  const lines = ["| key | type | default | reload | what it is |", "|---|---|---|---|---|"];
  for (const row of referenceRows(schema)) {
    const depth = row.key.split(".").length - 1;
    const shown = `${"&nbsp;&nbsp;".repeat(depth)}\`${row.key}\``;
    const value = row.default === "" ? (row.required ? "required" : "") : `\`${cell(row.default)}\``;
    lines.push(
      `| ${shown} | ${row.type.includes("`") ? row.type : cell(row.type)} | ${value} | ${row.reload === "restart" ? "**restart**" : "applied"} | ${cell(row.description ?? "")} |`,
    );
  }
  return lines.join("\n");
}

/** docs/CONFIGURATION.md: both modes' keys. */
export function configurationReference(): string {
  return `<!-- Written by \`npm run docs:config\` from src/config/schema.ts; do not edit by hand. -->

# Configuration reference

Every key of the two modes' configuration, read from the schema the gateway validates its config
with (src/config/schema.ts): its type, its default, and whether a reload applies it. A reload is
SIGHUP, or the config file changing (checked every \`reload.pollSeconds\`): **applied** keys take effect
for new requests at once; a changed **restart** key is named in the reload's warn line
(\`needsRestart\`) and the running value is kept until the gateway restarts. A key marked
*required* has no default. Relative file paths are resolved against the config file's folder.
The comments in src/config/schema.ts and the examples in config/ (\`default.yaml\`,
\`ingress.example.yaml\`, \`egress.example.yaml\`) say what each key is for.

- [Ingress (the bank's side)](#ingress-the-banks-side)
- [Egress (the TPP's side)](#egress-the-tpps-side)

## Ingress (the bank's side)

\`mode: ingress\` (the default): \`psd2-gateway start --config <file>\`.

${referenceTable(configSchema)}

## Egress (the TPP's side)

\`mode: egress\`.

${referenceTable(egressConfigSchema)}
`;
}
