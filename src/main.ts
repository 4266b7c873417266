#!/usr/bin/env node
/**
 * The command line's entry: on a supported runtime it runs the command (cli/main.ts); on an older
 * one it hands over to the Node that `npm ci` installed, or says what to install (src/runtime.ts).
 */

import { bundledNode, handOver, MINIMUM_NODE_MAJOR, nodeMajor, unsupportedRuntime } from "./runtime.js";

if (nodeMajor() >= MINIMUM_NODE_MAJOR) {
  const { main } = await import("./cli/main.js");
  main(process.argv.slice(2));
} else {
  const binary = bundledNode();
  if (binary) handOver(binary);
  else {
    console.error(unsupportedRuntime());
    process.exitCode = 1;
  }
}
