// `--import ./bench/dist-loader.mjs`: bench code imports src/, the process runs dist/ (see dist-hooks.mjs).
import { register } from "node:module";

register("./dist-hooks.mjs", import.meta.url);
