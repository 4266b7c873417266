/**
 * Which config keys a running gateway takes over only at a restart, read from the schema: a key is
 * marked where it is declared (`restartOnly`), and a reload names every marked key whose value
 * changed. Both modes' schemas are walked the same way, so no mode keeps a list of its own.
 */

import { z } from "zod";

/** Why the key cannot be taken over while running (for the schema's reader; the log names the key). */
export const RESTART_ONLY = z.registry<{ readonly why: string }>();

/** Marks `schema` (a key's value) as taken over only at a restart. */
export function restartOnly<T extends z.ZodType>(schema: T, why: string): T {
  RESTART_ONLY.add(schema as z.ZodType, { why });
  return schema;
}

export interface Walkable {
  readonly _zod: { readonly def: { readonly type: string } & Record<string, unknown> };
  readonly description?: string;
}

/** A key's value and the schemas under the wrappers zod puts around it (defaults, optional, transforms), outermost first. */
export function unwrapped(schema: Walkable): Walkable[] {
  const layers: Walkable[] = [schema];
  let at = schema;
  for (;;) {
    const def = at._zod.def;
    const inner = (def.innerType ?? (def.type === "pipe" ? def.in : undefined)) as Walkable | undefined;
    if (inner === undefined) return layers;
    layers.push(inner);
    at = inner;
  }
}

/** Every marked key of `schema`, as a dotted path. */
export function restartOnlyKeys(schema: z.ZodType, prefix = ""): string[] {
  const keys: string[] = [];
  const layers = unwrapped(schema as unknown as Walkable);
  if (prefix !== "" && layers.some((l) => RESTART_ONLY.has(l as unknown as z.ZodType))) return [prefix];
  const object = layers.find((l) => l._zod.def.type === "object");
  if (!object) return keys;
  const shape = object._zod.def.shape as Record<string, z.ZodType>;
  for (const [name, value] of Object.entries(shape))
    keys.push(...restartOnlyKeys(value, prefix === "" ? name : `${prefix}.${name}`));
  return keys;
}

const keyCache = new WeakMap<z.ZodType, readonly string[]>();

/** The marked keys of `schema` whose values differ between `running` and `next`. */
export function restartKeysChanged(schema: z.ZodType, running: unknown, next: unknown): string[] {
  let keys = keyCache.get(schema);
  if (!keys) {
    keys = restartOnlyKeys(schema);
    keyCache.set(schema, keys);
  }
  return keys.filter((key) => JSON.stringify(valueAt(running, key)) !== JSON.stringify(valueAt(next, key)));
}

function valueAt(config: unknown, key: string): unknown {
  let at = config;
  for (const part of key.split(".")) at = (at as Record<string, unknown> | undefined)?.[part];
  return at;
}

/**
 * `next` with every marked key that changed set back to its value in `running`: what a reload takes
 * over is the rest, and the configuration in force says what still runs (a later reload names the key again).
 */
export function keepRestartKeys<T>(schema: z.ZodType, running: T, next: T): T {
  const changed = restartKeysChanged(schema, running, next);
  if (changed.length === 0) return next;
  const kept = structuredClone(next) as Record<string, unknown>;
  for (const key of changed) {
    const parts = key.split(".");
    let at = kept;
    for (const part of parts.slice(0, -1)) at = at[part] as Record<string, unknown>;
    const value = valueAt(running, key);
    if (value === undefined) delete at[parts.at(-1)!];
    else at[parts.at(-1)!] = structuredClone(value);
  }
  return kept as T;
}
