/** Where the package lives, so the CLI finds config/ and certs/ from src/ (tests) and dist/ (npm start) alike. */

import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const DEFAULT_CONFIG = join(PACKAGE_ROOT, "config", "default.yaml");
export const DEV_CERTS_DIR = join(PACKAGE_ROOT, "certs", "dev");
export const EGRESS_EXAMPLE_CONFIG = join(PACKAGE_ROOT, "config", "egress.example.yaml");
