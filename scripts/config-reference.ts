/**
 * Writes docs/CONFIGURATION.md from the config schema (src/config/reference.ts): `npm run
 * docs:config`. test/unit/config/reference.test.ts fails when the file is not what this writes.
 */

import { writeFileSync } from "node:fs";
import { configurationReference } from "../src/config/reference.js";

writeFileSync(new URL("../docs/CONFIGURATION.md", import.meta.url), configurationReference());
console.log("docs/CONFIGURATION.md written");
