/**
 * scripts/build-if-changed.mjs, what `npm start` (and demo, egress, certs, sign) run before
 * dist/main.js: the real script spawned in a throwaway project whose TypeScript is a stand-in tsc
 * that logs each run, emits a .js per source and fails when told to. It builds when a file under src/
 * is edited, added or deleted, a tsconfig or package.json changes, TypeScript is another version
 * or dist/ is gone, says why on stderr, and otherwise does nothing.
 */

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../helpers/gateway-process.js";

const SCRIPT = join(REPO_ROOT, "scripts", "build-if-changed.mjs");

/** A tsc that logs its arguments, emits dist/<path>.js for each src/<path>.ts, and exits with FAKE_TSC_EXIT. */
const FAKE_TSC = `const fs = require("node:fs");
fs.appendFileSync("tsc-runs.log", process.argv.slice(2).join(" ") + "\\n");
const code = Number(process.env.FAKE_TSC_EXIT ?? 0);
if (code === 0) {
  // What tsc emits: src/<path>.ts as dist/<path>.js.
  const emit = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const path = dir + "/" + entry.name;
      if (entry.isDirectory()) emit(path);
      else if (path.endsWith(".ts")) {
        const out = "dist" + path.slice(3, -3) + ".js";
        fs.mkdirSync(out.slice(0, out.lastIndexOf("/")), { recursive: true });
        fs.writeFileSync(out, "");
      }
    }
  };
  emit("src");
}
process.exit(code);
`;

let root: string;

function write(path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

function tscRuns(): number {
  try {
    return readFileSync(join(root, "tsc-runs.log"), "utf8").split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** Runs the script in the project: its exit code, its stderr, and whether tsc ran. */
function run(env: Record<string, string> = {}) {
  const before = tscRuns();
  const result = spawnSync(process.execPath, [SCRIPT], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  return { code: result.status, stderr: result.stderr, stdout: result.stdout, built: tscRuns() > before };
}

/** A build that says why: `building dist/ (<why>)…` first, then how long it took. */
function expectBuild(outcome: ReturnType<typeof run>, why: string): void {
  expect(outcome.built, outcome.stderr).toBe(true);
  expect(outcome.code).toBe(0);
  const [building, built, ...rest] = outcome.stderr.split("\n");
  expect(building).toBe(`building dist/ (${why})…`);
  expect(built).toMatch(/^built dist\/ in \d+\.\d s$/);
  expect(rest).toEqual([""]);
}

function expectNothing(outcome: ReturnType<typeof run>): void {
  expect(outcome.stderr).toBe("");
  expect(outcome.built).toBe(false);
  expect(outcome.code).toBe(0);
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "build-if-changed-"));
  write("package.json", '{ "type": "module" }\n');
  write("tsconfig.json", "{}\n");
  write("tsconfig.build.json", '{ "extends": "./tsconfig.json" }\n');
  write("src/main.ts", "export {};\n");
  write("src/cli/sign.ts", "export const a = 1;\n");
  write("node_modules/typescript/package.json", '{ "name": "typescript", "version": "5.9.3" }\n');
  write("node_modules/typescript/bin/tsc", FAKE_TSC);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("build-if-changed", () => {
  it("builds the first time, with tsconfig.build.json, then not again while nothing changed", () => {
    expectBuild(run(), "no dist/ yet");
    expect(readFileSync(join(root, "tsc-runs.log"), "utf8")).toBe("-p tsconfig.build.json\n");
    expectNothing(run());
    expectNothing(run());
  });

  it("builds afresh: the output of a deleted source does not stay in dist/ (npm pack would ship it)", () => {
    expectBuild(run(), "no dist/ yet");
    write("dist/cli/gone.js", "// from a source deleted since\n");
    write("src/cli/sign.ts", "export const a = 2;\n");
    expectBuild(run(), "src/cli/sign.ts changed");
    expect(() => readFileSync(join(root, "dist/cli/gone.js"))).toThrow(/ENOENT/);
  });

  it("is npm pack's prepack: packing an up-to-date checkout leaves dist/ as npm start finds it", () => {
    const scripts = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).scripts as Record<
      string,
      string
    >;
    expect(scripts.prepack).toBe("node scripts/build-if-changed.mjs");
  });

  it("a touched file whose content is the same: no build", () => {
    run();
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, "src/cli/sign.ts"), later, later);
    expectNothing(run());
  });

  it.each<[string, () => void, string]>([
    [
      "a file under src/ edited",
      () => write("src/cli/sign.ts", "export const a = 2;\n"),
      "src/cli/sign.ts changed",
    ],
    ["a file added", () => write("src/cli/verify.ts", "export {};\n"), "src/cli/verify.ts added"],
    ["a file deleted", () => rmSync(join(root, "src/cli/sign.ts")), "src/cli/sign.ts deleted"],
    [
      "tsconfig.build.json changed",
      () => write("tsconfig.build.json", '{ "extends": "./tsconfig.json", "compilerOptions": {} }\n'),
      "tsconfig.build.json changed",
    ],
    [
      "tsconfig.json changed",
      () => write("tsconfig.json", '{ "compilerOptions": {} }\n'),
      "tsconfig.json changed",
    ],
    ["package.json changed", () => write("package.json", '{ "type": "commonjs" }\n'), "package.json changed"],
    [
      "another TypeScript",
      () => write("node_modules/typescript/package.json", '{ "name": "typescript", "version": "5.9.4" }\n'),
      "TypeScript 5.9.4",
    ],
    ["dist/ deleted", () => rmSync(join(root, "dist"), { recursive: true }), "no dist/ yet"],
    ["dist/main.js deleted", () => rmSync(join(root, "dist/main.js")), "dist/main.js is missing"],
    [
      "dist/ built without this script (npm run build)",
      () => rmSync(join(root, "dist/.build-inputs.json")),
      "no record of the sources it was built from",
    ],
    [
      "two files edited",
      () => {
        write("src/main.ts", "export const b = 1;\n");
        write("src/cli/sign.ts", "export const a = 3;\n");
      },
      "src/cli/sign.ts changed and 1 more",
    ],
  ])("%s: builds, saying why; then not again", (_what, change, why) => {
    expectBuild(run(), "no dist/ yet");
    change();
    expectBuild(run(), why);
    expectNothing(run());
  });

  it("a failed build: tsc's exit code, nothing recorded, so the next start tries again", () => {
    run();
    write("src/cli/sign.ts", "export const a: number = 'x';\n");
    const failed = run({ FAKE_TSC_EXIT: "2" });
    expect(failed.built).toBe(true);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toBe(
      "building dist/ (src/cli/sign.ts changed)…\nbuilding dist/ failed (tsc exit 2): see tsc's errors above\n",
    );
    // Built afresh, so a failed build leaves no dist/ behind that could pass for the sources.
    expectBuild(run(), "no dist/ yet");
  });

  it("no TypeScript installed (npm ci --omit=dev): an up-to-date dist/ starts; a change is exit 1 saying how to get it", () => {
    run();
    rmSync(join(root, "node_modules"), { recursive: true });
    expectNothing(run());
    write("src/main.ts", "export const b = 2;\n");
    const outcome = run();
    expect(outcome.code).toBe(1);
    expect(outcome.built).toBe(false);
    expect(outcome.stderr).toBe(
      "cannot build dist/ (src/main.ts changed): TypeScript is not installed here; npm ci installs it with the dev dependencies\n",
    );
  });

  describe("a workspace package (packages/<name> with a tsconfig.build.json)", () => {
    const lines = (outcome: ReturnType<typeof run>) =>
      outcome.stderr.split("\n").map((line) => line.replace(/ in \d+\.\d s$/, " in … s"));
    beforeEach(() => {
      // As packages/dev-pki and sandbox-bank name their entry: dist/index.js, no dist/main.js.
      write(
        "packages/bank/package.json",
        '{ "type": "module", "exports": { ".": { "types": "./dist/index.d.ts", "default": "./dist/index.js" } } }\n',
      );
      write("packages/bank/tsconfig.build.json", '{ "extends": "../../tsconfig.json" }\n');
      write("packages/bank/src/index.ts", "export {};\n");
      write("packages/notes/README.md", "not a package that builds\n");
    });

    it("builds after the gateway, in its own folder, then not again while nothing changed", () => {
      const first = run();
      expect(first.code).toBe(0);
      expect(lines(first)).toEqual([
        "building dist/ (no dist/ yet)…",
        "built dist/ in … s",
        "building packages/bank/dist/ (no dist/ yet)…",
        "built packages/bank/dist/ in … s",
        "",
      ]);
      expect(readFileSync(join(root, "packages/bank/tsc-runs.log"), "utf8")).toBe("-p tsconfig.build.json\n");
      expectNothing(run());
    });

    it("its entry (exports '.') is what must be there: deleted, only it builds again", () => {
      run();
      rmSync(join(root, "packages/bank/dist/index.js"));
      expect(lines(run())).toEqual([
        "building packages/bank/dist/ (dist/index.js is missing)…",
        "built packages/bank/dist/ in … s",
        "",
      ]);
      expectNothing(run());
    });

    it("its own source changed: only it builds; the gateway's: both (it builds against the gateway's declarations)", () => {
      run();
      write("packages/bank/src/index.ts", "export const a = 1;\n");
      const own = run();
      expect(own.built).toBe(false); // the gateway's tsc did not run
      expect(lines(own)).toEqual([
        "building packages/bank/dist/ (src/index.ts changed)…",
        "built packages/bank/dist/ in … s",
        "",
      ]);
      write("src/main.ts", "export const b = 1;\n");
      expect(lines(run())).toEqual([
        "building dist/ (src/main.ts changed)…",
        "built dist/ in … s",
        "building packages/bank/dist/ ((gateway dist) changed)…",
        "built packages/bank/dist/ in … s",
        "",
      ]);
      expectNothing(run());
    });

    it("a failed package build: tsc's exit code, and the next start tries it again", () => {
      run();
      write("packages/bank/src/index.ts", "export const a: number = 'x';\n");
      const failed = run({ FAKE_TSC_EXIT: "2" });
      expect(failed.code).toBe(2);
      expect(failed.stderr).toBe(
        "building packages/bank/dist/ (src/index.ts changed)…\nbuilding packages/bank/dist/ failed (tsc exit 2): see tsc's errors above\n",
      );
      expect(lines(run())).toEqual([
        "building packages/bank/dist/ (no dist/ yet)…",
        "built packages/bank/dist/ in … s",
        "",
      ]);
    });
  });
});
