#!/usr/bin/env node
/**
 * What `npm start`, `demo`, `egress`, `certs`, `sign` and `npm pack` run first: builds dist/ (afresh) with tsc only when
 * what it is built from differs from what the last build here was made from, and says so on
 * stderr while it builds. tsc takes 10-20 s even with nothing to do; this check takes milliseconds.
 * Then the same for each workspace package (packages/<name>/dist/, from its own src/ and
 * tsconfig.build.json), after the gateway since they build against its exported declarations:
 * a new gateway build counts as a changed input of theirs.
 *
 * The inputs are every file under src/ (by content, so an edit, an added or a deleted file counts
 * and a mere touch does not), the tsconfig files, package.json and the TypeScript version. Their
 * record is written into dist/ after a successful build, so a deleted dist/ builds again, and a
 * failed build is tried again next time. Plain JavaScript, so that it runs on whichever Node npm
 * found (dist/main.js then says when that Node is too old). Run from the package root, as npm does.
 */

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

/** Where the inputs of the last build are recorded. */
const RECORD = "dist/.build-inputs.json";
/** Besides src/: the files tsc's output also depends on (package.json's "type" decides ESM). */
const CONFIG_FILES = ["tsconfig.json", "tsconfig.build.json", "package.json"];
/** The key of the TypeScript version among the inputs (no file has that name). */
const TYPESCRIPT = "(typescript)";

/** Every input's fingerprint by its path, plus the TypeScript version (undefined when it is not installed). */
function inputsOf(root, typescriptRoot = root) {
  const inputs = {};
  const add = (path) => {
    inputs[path] = createHash("sha256")
      .update(readFileSync(join(root, path)))
      .digest("base64url");
  };
  const walk = (dir) => {
    const entries = readdirSync(join(root, dir), { withFileTypes: true });
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else add(path);
    }
  };
  if (existsSync(join(root, "src"))) walk("src");
  for (const file of CONFIG_FILES) if (existsSync(join(root, file))) add(file);
  const typescript = typescriptOf(typescriptRoot);
  // Left out when not installed (npm ci --omit=dev): an up-to-date dist/ still starts.
  if (typescript) inputs[TYPESCRIPT] = typescript.version;
  return inputs;
}

/** Why dist/ needs a build, in a few words; undefined when it is up to date with `inputs`. */
function whyBuild(root, inputs) {
  if (!existsSync(join(root, "dist"))) return "no dist/ yet";
  const entry = entryOf(root);
  if (!existsSync(join(root, entry))) return `${entry} is missing`;
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(join(root, RECORD), "utf8"));
  } catch {
    return "no record of the sources it was built from";
  }
  const changes = [];
  for (const [path, fingerprint] of Object.entries(inputs)) {
    if (!(path in recorded)) changes.push(`${path} added`);
    else if (recorded[path] !== fingerprint)
      changes.push(path === TYPESCRIPT ? `TypeScript ${fingerprint}` : `${path} changed`);
  }
  for (const path of Object.keys(recorded))
    if (!(path in inputs) && path !== TYPESCRIPT) changes.push(`${path} deleted`);
  if (changes.length === 0) return undefined;
  return changes.length === 1 ? changes[0] : `${changes[0]} and ${changes.length - 1} more`;
}

/**
 * The file a build must leave: the package's entry (`exports["."]`, then its bin, then `main`),
 * dist/main.js when it names none. The workspace packages' is dist/index.js: checked for a
 * dist/main.js they never make, they were built again on every start.
 */
function entryOf(root) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  } catch {
    return "dist/main.js";
  }
  const dot = manifest.exports?.["."];
  const bin = typeof manifest.bin === "string" ? manifest.bin : Object.values(manifest.bin ?? {})[0];
  const entry = (typeof dot === "string" ? dot : dot?.default) ?? bin ?? manifest.main;
  return typeof entry === "string" ? entry.replace(/^\.\//, "") : "dist/main.js";
}

function typescriptOf(root) {
  try {
    const require = createRequire(join(root, "package.json"));
    const { version } = require("typescript/package.json");
    return { version, tsc: require.resolve("typescript/bin/tsc") };
  } catch {
    return undefined;
  }
}

/** The key of the gateway's last build among a package's inputs. */
const GATEWAY = "(gateway dist)";

/**
 * Builds `dir` (the package root, or packages/<name>) when needed; the exit code is tsc's (0 when
 * nothing was to do). `label` names its dist/ in what it says; `extra` adds inputs of its own.
 */
function build(dir, label, typescriptRoot, extra = {}) {
  // Taken before the build: a file edited while tsc runs builds again next time.
  const inputs = { ...inputsOf(dir, typescriptRoot), ...extra };
  const why = whyBuild(dir, inputs);
  if (why === undefined) return 0;
  const typescript = typescriptOf(typescriptRoot);
  if (!typescript) {
    console.error(
      `cannot build ${label} (${why}): TypeScript is not installed here; npm ci installs it with the dev dependencies`,
    );
    return 1;
  }
  console.error(`building ${label} (${why})…`);
  const started = Date.now();
  // Afresh: tsc leaves the output of a deleted source behind, and npm pack would ship it.
  rmSync(join(dir, "dist"), { recursive: true, force: true });
  const tsc = spawnSync(process.execPath, [typescript.tsc, "-p", "tsconfig.build.json"], {
    cwd: dir,
    stdio: "inherit",
  });
  if (tsc.status !== 0) {
    console.error(`building ${label} failed (tsc exit ${tsc.status ?? tsc.signal}): see tsc's errors above`);
    return tsc.status || 1;
  }
  writeFileSync(join(dir, RECORD), `${JSON.stringify(inputs, null, 1)}\n`);
  console.error(`built ${label} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

/** The workspace packages that build (packages/<name> with a tsconfig.build.json), by name. */
function packagesOf(root) {
  if (!existsSync(join(root, "packages"))) return [];
  return readdirSync(join(root, "packages"), { withFileTypes: true })
    .filter(
      (entry) => entry.isDirectory() && existsSync(join(root, "packages", entry.name, "tsconfig.build.json")),
    )
    .map((entry) => entry.name)
    .sort();
}

function main(root) {
  const gateway = build(root, "dist/", root);
  if (gateway !== 0) return gateway;
  // The gateway's record changes with every build of it: the packages' declarations come from it.
  const record = createHash("sha256")
    .update(readFileSync(join(root, RECORD)))
    .digest("base64url");
  for (const name of packagesOf(root)) {
    const dir = join(root, "packages", name);
    // The root tsconfig.json, which each package's tsconfig.build.json extends, counts too.
    const code = build(dir, `packages/${name}/dist/`, root, { [GATEWAY]: record, ...rootTsconfig(root) });
    if (code !== 0) return code;
  }
  return 0;
}

function rootTsconfig(root) {
  return {
    "(tsconfig.json)": createHash("sha256")
      .update(readFileSync(join(root, "tsconfig.json")))
      .digest("base64url"),
  };
}

process.exitCode = main(process.cwd());
