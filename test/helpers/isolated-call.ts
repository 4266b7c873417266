/**
 * Calling a library function in a child process, so that a call that never returns (a
 * catastrophically backtracking regex, say) blocks the child and not the test runner: the test
 * then fails on vitest's own timeout, and `stop()` kills the child.
 */

import { type ChildProcess, fork } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

export type IsolatedOutcome =
  | { readonly outcome: "returned"; readonly kind: string }
  | { readonly outcome: "threw"; readonly errorClass: string; readonly message: string }
  /** The child was killed (stop()) or died before answering. */
  | { readonly outcome: "no-answer"; readonly reason: string };

const CHILD_SCRIPT = fileURLToPath(new URL("./isolated-call-child.ts", import.meta.url));
/** tsx's loader by absolute URL, so the child finds it whatever the working directory. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

function readOutcome(value: unknown): { id: number; outcome: IsolatedOutcome } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const m = value as Record<string, unknown>;
  if (typeof m.id !== "number") return undefined;
  if (m.outcome === "returned" && typeof m.kind === "string") {
    return { id: m.id, outcome: { outcome: "returned", kind: m.kind } };
  }
  if (m.outcome === "threw" && typeof m.errorClass === "string" && typeof m.message === "string") {
    return { id: m.id, outcome: { outcome: "threw", errorClass: m.errorClass, message: m.message } };
  }
  return undefined;
}

interface Running {
  readonly process: ChildProcess;
  readonly pending: Map<number, (outcome: IsolatedOutcome) => void>;
}

export class IsolatedCaller {
  private running: Running | undefined;
  private nextId = 1;

  /** Calls `exportName` of the module at `moduleUrl` with `args` (structured-cloned: strings, Uint8Arrays, plain objects). */
  call(moduleUrl: URL, exportName: string, args: readonly unknown[]): Promise<IsolatedOutcome> {
    const running = this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      running.pending.set(id, resolve);
      running.process.send({ id, moduleUrl: moduleUrl.href, exportName, args });
    });
  }

  /** Kills the child, and with it any call still running (those answer "no-answer"); the next call starts a fresh child. */
  stop(): void {
    const running = this.running;
    this.running = undefined;
    if (!running) return;
    if (running.process.exitCode === null) running.process.kill("SIGKILL");
    settleAll(running, "stopped");
  }

  private start(): Running {
    if (this.running) return this.running;
    const child = fork(CHILD_SCRIPT, [], {
      execArgv: ["--import", TSX_LOADER],
      serialization: "advanced",
      stdio: "inherit",
    });
    const running: Running = { process: child, pending: new Map() };
    child.on("message", (message: unknown) => {
      const answer = readOutcome(message);
      if (!answer) return;
      running.pending.get(answer.id)?.(answer.outcome);
      running.pending.delete(answer.id);
    });
    child.on("exit", (code, signal) => {
      if (this.running === running) this.running = undefined;
      settleAll(running, `child exited (${code ?? signal})`);
    });
    this.running = running;
    return running;
  }
}

function settleAll(running: Running, reason: string): void {
  for (const resolve of running.pending.values()) resolve({ outcome: "no-answer", reason });
  running.pending.clear();
}
