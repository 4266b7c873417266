/** Whether benchmarks can pin processes to cores (taskset, and at least two of them). */

import { execFileSync } from "node:child_process";
import { cpus } from "node:os";

function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" });
    return cpus().length >= 2;
  } catch {
    return false;
  }
}

export const CAN_PIN = hasTaskset();
