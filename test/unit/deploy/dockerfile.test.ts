/**
 * The image lets the gateway write where the example configs and the Dockerfile's comments say it
 * writes (the CRL cache, the memory store's snapshot, the sandbox's state file, egress's socket):
 * each such folder is created in the runtime stage owned by the stage's USER before it switches to
 * it, and the state folder is a VOLUME. A static reading of the Dockerfile, since no Docker engine
 * runs here; the mutated Dockerfiles at the end show that it fails on what was wrong before.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  foldersWrittenIn,
  type NamedPath,
  pathKeysOfSchema,
  READ_PATH_KEYS,
  WRITTEN_PATH_KEYS,
  writtenPathsInText,
} from "../../helpers/config-paths.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const DOCKERFILE = readFileSync(join(root, "Dockerfile"), "utf8");
/** Where the gateway keeps state across containers. */
const STATE_DIR = "/var/lib/psd2-gateway";

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The instructions of the last stage (the image that runs), continuation lines joined. */
function runtimeStage(dockerfile: string): Instruction[] {
  const lines = dockerfile.replace(/\\\r?\n/g, " ").split(/\r?\n/);
  const instructions = lines
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const [keyword = "", ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(" ") };
    });
  const from = instructions.map((ins) => ins.keyword).lastIndexOf("FROM");
  return instructions.slice(from);
}

function comments(dockerfile: string): string {
  return dockerfile
    .split("\n")
    .map((line) => (line.trim().startsWith("#") ? line : ""))
    .join("\n");
}

/**
 * Folders a shell command creates or hands over, and to whom; `user` runs it. Only root may
 * create folders anywhere and give them away; anyone else only inside a folder of their own.
 */
function ownership(command: string, user: string, owners: Map<string, string>): void {
  const root = user === "root" || user === "0";
  const mayCreate = (folder: string) => root || owners.get(posix.dirname(folder)) === user;
  for (const part of command.split(/&&|;|\|\|/)) {
    const [program, ...words] = part.trim().split(/\s+/);
    if (program === "install" && words.includes("-d")) {
      let owner = user;
      const folders: string[] = [];
      for (let i = 0; i < words.length; i++) {
        const w = words[i]!;
        if (w === "-o" || w === "--owner") owner = words[++i] ?? "";
        else if (w.startsWith("--owner=")) owner = w.slice("--owner=".length);
        else if (w === "-g" || w === "-m" || w === "--group" || w === "--mode") i++;
        else if (!w.startsWith("-")) folders.push(w);
      }
      for (const f of folders.map((f) => posix.normalize(f)))
        if (mayCreate(f) && (root || owner === user)) owners.set(f, owner);
    } else if (program === "mkdir") {
      for (const w of words.filter((w) => !w.startsWith("-")).map((w) => posix.normalize(w)))
        if (mayCreate(w)) owners.set(w, user);
    } else if (program === "chown" && root) {
      const [spec, ...targets] = words.filter((w) => !w.startsWith("-"));
      const owner = (spec ?? "").split(":")[0]!;
      for (const t of targets) {
        const target = posix.normalize(t);
        for (const folder of owners.keys())
          if (folder === target || (words.includes("-R") && folder.startsWith(`${target}/`)))
            owners.set(folder, owner);
      }
    }
  }
}

/** JSON array or space-separated, as Docker reads VOLUME. */
function volumesOf(args: string): string[] {
  const trimmed = args.trim();
  if (trimmed.startsWith("[")) return (JSON.parse(trimmed) as string[]).map((v) => posix.normalize(v));
  return trimmed.split(/\s+/).map((v) => posix.normalize(v));
}

/** Why the image could not write where `written` says (nothing when it can). */
function problemsOf(dockerfile: string, written: readonly NamedPath[]): string[] {
  const problems: string[] = [];
  const owners = new Map<string, string>();
  const volumes = new Set<string>();
  // Docker may discard what a build step does to a folder after VOLUME declared it.
  const declaredBeforeCreation = new Set<string>();
  let user = "root";
  for (const ins of runtimeStage(dockerfile)) {
    if (ins.keyword === "USER") user = ins.args.split(":")[0]!.trim();
    else if (ins.keyword === "RUN") ownership(ins.args, user, owners);
    else if (ins.keyword === "VOLUME") {
      for (const v of volumesOf(ins.args)) {
        volumes.add(v);
        if (!owners.has(v)) declaredBeforeCreation.add(v);
      }
    }
  }
  const runtimeUser = user;
  if (runtimeUser === "root" || runtimeUser === "0") problems.push("the image runs as root");
  for (const named of written) {
    const folders = foldersWrittenIn(named);
    if (!folders.some((folder) => owners.get(folder) === runtimeUser))
      problems.push(
        `${named.where}: ${named.key} ${named.path} needs ${folders.at(-1)} created owned by ${runtimeUser} ` +
          `before USER ${runtimeUser} (owned: ${[...owners].map(([f, o]) => `${f}=${o}`).join(", ") || "none"})`,
      );
  }
  if (!volumes.has(STATE_DIR)) problems.push(`${STATE_DIR} is not a VOLUME`);
  else if (declaredBeforeCreation.has(STATE_DIR))
    problems.push(`${STATE_DIR} is declared a VOLUME before the build step that creates it`);
  return problems;
}

const configDir = join(root, "config");
const WRITTEN: NamedPath[] = [
  ...readdirSync(configDir)
    .filter((f) => f.endsWith(".yaml"))
    .flatMap((f) => writtenPathsInText(readFileSync(join(configDir, f), "utf8"), `config/${f}`)),
  ...writtenPathsInText(comments(DOCKERFILE), "Dockerfile"),
];

describe("Dockerfile: what the gateway writes", () => {
  it("every path key of the config schema is sorted into written or read-only", () => {
    const sorted = new Set([...Object.keys(WRITTEN_PATH_KEYS), ...READ_PATH_KEYS]);
    expect(pathKeysOfSchema().filter((k) => !sorted.has(k))).toEqual([]);
    expect(pathKeysOfSchema()).toEqual(expect.arrayContaining(Object.keys(WRITTEN_PATH_KEYS)));
  });

  it("the example configs and the Dockerfile name an image path for every written key", () => {
    const keys = new Set(WRITTEN.map((w) => w.key));
    expect([...keys].sort()).toEqual(Object.keys(WRITTEN_PATH_KEYS).sort());
    // The Dockerfile's own list covers every key, so that it stays the one place to look.
    const inDockerfile = new Set(WRITTEN.filter((w) => w.where.startsWith("Dockerfile")).map((w) => w.key));
    expect([...inDockerfile].sort()).toEqual(Object.keys(WRITTEN_PATH_KEYS).sort());
  });

  it("the runtime stage creates each of those folders owned by its user, and keeps state in a VOLUME", () => {
    expect(problemsOf(DOCKERFILE, WRITTEN)).toEqual([]);
  });

  describe("the check fails on images that cannot write there", () => {
    const install = /RUN install -d[^\n]*(\\\n[^\n]*)*\n/;

    it("without the folders (the Dockerfile before /var/lib/psd2-gateway existed)", () => {
      expect(DOCKERFILE).toMatch(install);
      const problems = problemsOf(DOCKERFILE.replace(install, ""), WRITTEN);
      // One for each written path, none of which node could create.
      expect(problems.filter((p) => p.includes("needs"))).toHaveLength(WRITTEN.length);
    });

    it("with the folders made after USER node, where chown is not allowed", () => {
      const step = DOCKERFILE.match(install)![0];
      const moved = DOCKERFILE.replace(step, "").replace("USER node\n", `USER node\n${step}`);
      expect(problemsOf(moved, WRITTEN).some((p) => p.includes("needs"))).toBe(true);
    });

    it("with the folders left to root (mkdir without chown)", () => {
      const folders = `${STATE_DIR} /run/psd2-gateway /app/certs /app/var`;
      const rootOwned = DOCKERFILE.replace(install, `RUN mkdir -p ${folders}\n`);
      expect(problemsOf(rootOwned, WRITTEN).some((p) => p.includes("needs"))).toBe(true);
      const handedOver = rootOwned.replace(
        `RUN mkdir -p ${folders}\n`,
        `RUN mkdir -p ${folders} && chown node:node ${folders}\n`,
      );
      expect(problemsOf(handedOver, WRITTEN)).toEqual([]);
    });

    it("with the state folder not a VOLUME, or declared before it is made", () => {
      const noVolume = DOCKERFILE.replace(/VOLUME \[[^\]]*\]/, 'VOLUME ["/etc/psd2-gateway"]');
      expect(problemsOf(noVolume, WRITTEN)).toEqual([`${STATE_DIR} is not a VOLUME`]);
      const step = DOCKERFILE.match(install)![0];
      const early = DOCKERFILE.replace(step, "").replace(
        "COPY config ./config\n",
        `COPY config ./config\nVOLUME ["${STATE_DIR}"]\n${step}`,
      );
      expect(problemsOf(early, WRITTEN)).toContain(
        `${STATE_DIR} is declared a VOLUME before the build step that creates it`,
      );
    });

    it("with a written path outside the folders made", () => {
      const elsewhere: NamedPath = { key: "snapshotFile", path: "/data/limits.json", where: "test" };
      expect(problemsOf(DOCKERFILE, [elsewhere])).toHaveLength(1);
    });
  });
});

/** How a FROM names the one base, the ARG a build may pin by digest. */
const BASE = `\${NODE_IMAGE}`;

/** Every instruction of every stage, continuation lines joined, with the ARGs declared before the first FROM. */
function instructions(dockerfile: string): Instruction[] {
  return dockerfile
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const [keyword = "", ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(" ") };
    });
}

/** Why the image would not run the demo by default or would take a base other than the one pinnable ARG. */
function defaultsProblems(dockerfile: string): string[] {
  const problems: string[] = [];
  const all = instructions(dockerfile);
  const firstFrom = all.findIndex((i) => i.keyword === "FROM");
  const arg = all.slice(0, firstFrom).find((i) => i.keyword === "ARG" && i.args.startsWith("NODE_IMAGE="));
  const engines = (
    JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { engines: { node: string } }
  ).engines.node;
  const major = /^>=(\d+)$/.exec(engines)?.[1];
  const base = arg?.args.slice("NODE_IMAGE=".length) ?? "";
  // The tag names the Node the package needs; a digest, when given, is a whole SHA-256.
  if (!new RegExp(`^node:${major}-bookworm-slim(@sha256:[0-9a-f]{64})?$`).test(base))
    problems.push(
      `ARG NODE_IMAGE before the first FROM is '${base}', not node:${major}-bookworm-slim[@sha256:…]`,
    );
  for (const from of all.filter((i) => i.keyword === "FROM"))
    if (!from.args.startsWith(`${BASE} `)) problems.push(`FROM ${from.args} is not the one base, ${BASE}`);
  const runtime = runtimeStage(dockerfile);
  const last = (keyword: string) => runtime.filter((i) => i.keyword === keyword).at(-1)?.args;
  if (last("ENTRYPOINT") !== '["node", "dist/main.js"]') problems.push(`ENTRYPOINT is ${last("ENTRYPOINT")}`);
  // Without a command: `start` with no --config, which is config/default.yaml, the embedded demo.
  if (last("CMD") !== '["start"]') problems.push(`CMD is ${last("CMD")}, not the embedded default`);
  if (!runtime.some((i) => i.keyword === "COPY" && i.args === "config ./config"))
    problems.push("the runtime stage does not copy config/ (config/default.yaml)");
  if (
    !runtime.some((i) => i.keyword === "COPY" && i.args === "deploy/docker/demo.sh ./deploy/docker/demo.sh")
  )
    problems.push("the runtime stage does not copy deploy/docker/demo.sh");
  for (const volume of runtime.filter((i) => i.keyword === "VOLUME").flatMap((i) => volumesOf(i.args)))
    if (volume === "/etc/psd2-gateway")
      problems.push(
        "/etc/psd2-gateway is a VOLUME: a run without a mounted config would find an empty folder there",
      );
  return problems;
}

/**
 * What the Dockerfile lacks of the workspace packages (packages/<name>): each package.json before
 * each stage's npm ci, the build stage's packages/ and build, each dist/ in the runtime stage.
 */
function workspaceProblems(dockerfile: string, packages: readonly string[]): string[] {
  const stages = dockerfile
    .replace(/\\\r?\n/g, " ")
    .split(/^FROM /m)
    .slice(1);
  const problems: string[] = [];
  for (const [i, stage] of stages.entries()) {
    const ci = stage.indexOf("npm ci");
    for (const name of packages) {
      const manifest = stage.indexOf(`COPY packages/${name}/package.json ./packages/${name}/`);
      if (manifest < 0 || manifest > ci)
        problems.push(`stage ${i}: packages/${name}/package.json not copied before npm ci`);
    }
  }
  const [build, runtime] = [stages[0] ?? "", stages.at(-1) ?? ""];
  if (!build.includes("COPY packages ./packages")) problems.push("build stage: packages/ not copied");
  if (!build.includes("RUN node scripts/build-if-changed.mjs"))
    problems.push("build stage: packages not built");
  for (const name of packages)
    if (!runtime.includes(`COPY --from=build /app/packages/${name}/dist ./packages/${name}/dist`))
      problems.push(`runtime stage: packages/${name}/dist not copied`);
  return problems;
}

const PACKAGES = readdirSync(join(root, "packages")).sort();

describe("Dockerfile: the demo packages (npm workspaces) are in the image", () => {
  it("packages/ has the sandbox bank and the dev PKI", () => {
    expect(PACKAGES).toEqual(["dev-pki", "sandbox-bank"]);
  });

  it("each package's manifest before npm ci in both stages, built, and its dist/ in the image", () => {
    expect(workspaceProblems(DOCKERFILE, PACKAGES)).toEqual([]);
  });

  it("fails on a Dockerfile without a package's dist/ or manifest", () => {
    const noDist = DOCKERFILE.replace(
      "COPY --from=build /app/packages/dev-pki/dist ./packages/dev-pki/dist\n",
      "",
    );
    expect(workspaceProblems(noDist, PACKAGES)).toEqual(["runtime stage: packages/dev-pki/dist not copied"]);
    const noManifest = DOCKERFILE.replaceAll(
      "COPY packages/sandbox-bank/package.json ./packages/sandbox-bank/\n",
      "",
    );
    expect(workspaceProblems(noManifest, PACKAGES)).toEqual([
      "stage 0: packages/sandbox-bank/package.json not copied before npm ci",
      "stage 1: packages/sandbox-bank/package.json not copied before npm ci",
    ]);
  });
});

describe("Dockerfile: a config by default, the demo in one docker run, one pinnable base", () => {
  it("runs the embedded default without a command, copies the demo script, takes its base from NODE_IMAGE", () => {
    expect(defaultsProblems(DOCKERFILE)).toEqual([]);
  });

  it("the demo script is there, executable, and starts the gateway, waits for readiness and runs the demo", () => {
    const script = join(root, "deploy", "docker", "demo.sh");
    expect(statSync(script).mode & 0o111).not.toBe(0);
    const text = readFileSync(script, "utf8");
    expect(text).toMatch(/^#!\/bin\/sh\n/);
    expect(text).toContain("node dist/main.js start ");
    expect(text).toContain("node dist/main.js health --ready");
    expect(text).toContain("node dist/main.js demo");
  });

  it("docs/operations.md shows the one docker run of the demo and how to pin the base", () => {
    const operations = readFileSync(join(root, "docs", "operations.md"), "utf8");
    expect(operations).toContain("docker run --rm --entrypoint /app/deploy/docker/demo.sh psd2-gateway");
    expect(operations).toContain("--build-arg NODE_IMAGE=node:26-bookworm-slim@sha256:");
  });

  it("fails on an unpinnable base, the old command, a config volume, or a bad digest", () => {
    const cases: [string, string, string][] = [
      [`FROM ${BASE} AS runtime`, "FROM node:26-bookworm-slim AS runtime", "not the one base"],
      [
        'CMD ["start"]',
        'CMD ["start", "--config", "/etc/psd2-gateway/config.yaml"]',
        "not the embedded default",
      ],
      [
        'VOLUME ["/var/lib/psd2-gateway"]',
        'VOLUME ["/etc/psd2-gateway", "/var/lib/psd2-gateway"]',
        "is a VOLUME",
      ],
      [
        "ARG NODE_IMAGE=node:26-bookworm-slim",
        "ARG NODE_IMAGE=node:26-bookworm-slim@sha256:abc",
        "ARG NODE_IMAGE",
      ],
      ["ARG NODE_IMAGE=node:26-bookworm-slim", "ARG NODE_IMAGE=node:20-bookworm-slim", "ARG NODE_IMAGE"],
      ["COPY deploy/docker/demo.sh ./deploy/docker/demo.sh\n", "", "demo.sh"],
    ];
    for (const [from, to, problem] of cases) {
      expect(DOCKERFILE, from).toContain(from);
      const problems = defaultsProblems(DOCKERFILE.replace(from, to));
      expect(
        problems.some((p) => p.includes(problem)),
        `${to}: ${problems.join("; ")}`,
      ).toBe(true);
    }
    const pinned = DOCKERFILE.replace(
      "ARG NODE_IMAGE=node:26-bookworm-slim",
      `ARG NODE_IMAGE=node:26-bookworm-slim@sha256:${"0a".repeat(32)}`,
    );
    expect(defaultsProblems(pinned)).toEqual([]);
  });
});
