/**
 * The configuration's file and folder keys (`path` and `location` in src/config/schema.ts), sorted
 * by what the gateway does with them, for the deploy tests that check an image or a pod lets it
 * read and write there.
 */

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Keys the gateway writes: a file it writes (beside a temporary copy), or a folder it creates. */
export const WRITTEN_PATH_KEYS: Readonly<Record<string, "file" | "folder">> = {
  cacheDir: "folder", // revocation.crl.cacheDir
  snapshotFile: "file", // store.snapshotFile
  stateFile: "file", // sandbox.stateFile
  socket: "file", // egress listen.socket
  folder: "folder", // evidence.folder
};

/** Keys the gateway only reads. */
export const READ_PATH_KEYS: readonly string[] = [
  "ca",
  "caDir",
  "cert",
  "clientCa",
  "crlDir",
  "file",
  "files", // keys.files
  "key",
  "lotl",
  "lotlSigners",
  "p12",
  "passwordFile",
  "pki",
  "tokenFile",
];

/** Every key schema.ts declares as a path, so that a new one has to be sorted into a list above. */
export function pathKeysOfSchema(): string[] {
  const text = readFileSync(join(root, "src", "config", "schema.ts"), "utf8");
  const keys = [...text.matchAll(/^\s*(\w+):\s*(?:restartOnly\()?(?:z\.array\()?(?:path|location)\b/gm)].map(
    (m) => m[1]!,
  );
  return [...new Set(keys)].sort();
}

export interface NamedPath {
  readonly key: string;
  readonly path: string;
  /** Where it was found: a file and line, or a key path in a config. */
  readonly where: string;
}

/**
 * Absolute paths given to a written key anywhere in a text, comments included: the example
 * configs show them commented out (`# cacheDir: /var/lib/…`), the Dockerfile lists them.
 */
export function writtenPathsInText(text: string, source: string): NamedPath[] {
  const found: NamedPath[] = [];
  text.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(/(?:^|[\s#.{,])(\w+):\s*(\/[^\s#,}]+)/g)) {
      if (m[1]! in WRITTEN_PATH_KEYS) found.push({ key: m[1]!, path: m[2]!, where: `${source}:${i + 1}` });
    }
  });
  return found;
}

/** Every path key with a value in a parsed configuration (URLs left out: `lotl` may be one). */
export function pathsInConfig(config: unknown, at = ""): NamedPath[] {
  if (Array.isArray(config)) return config.flatMap((v, i) => pathsInConfig(v, `${at}.${i}`));
  if (config === null || typeof config !== "object") return [];
  return Object.entries(config).flatMap(([key, value]) => {
    const where = at === "" ? key : `${at}.${key}`;
    const isPathKey = key in WRITTEN_PATH_KEYS || READ_PATH_KEYS.includes(key);
    const strings = typeof value === "string" ? [value] : Array.isArray(value) ? value : undefined;
    if (isPathKey && strings?.every((s) => typeof s === "string")) {
      return strings
        .filter((s: string) => !/^https?:\/\//i.test(s))
        .map((s: string) => ({ key, path: s, where }));
    }
    return pathsInConfig(value, where);
  });
}

/**
 * The folders the gateway must be able to write in for a written key: a file's folder; for a
 * folder it creates, the folder itself (when it is there already) or the one it goes in.
 */
export function foldersWrittenIn(named: NamedPath): string[] {
  return WRITTEN_PATH_KEYS[named.key] === "folder"
    ? [named.path, dirname(named.path)]
    : [dirname(named.path)];
}
