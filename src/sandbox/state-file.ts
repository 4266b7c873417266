/**
 * The optional state file (option `stateFile`, `psd2-gateway sandbox --state-file`): the
 * sandbox's customers, accounts and transactions kept across restarts. Read at start when it
 * exists; a file that is not a valid snapshot stops the start with an error naming what is wrong.
 * Written after every operation that changes the data and on reset, to a temporary file beside
 * it that is then renamed over it, so that a crash leaves the old file or the new one, never half.
 *
 * The snapshot is `{ "version": 1, "data": … }`: an object, so that more of the bank's state
 * (payments, consents) can be added as members next to `data`; a reader ignores members it does
 * not know.
 */

import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import type { BankState } from "./context.js";
import { parseBankData } from "./data-schema.js";
import type { BankData } from "./model.js";

export const STATE_FILE_VERSION = 1;

export interface StateSnapshot {
  readonly version: typeof STATE_FILE_VERSION;
  readonly data: BankData;
}

export class StateFileError extends Error {
  override readonly name = "StateFileError";
}

export function snapshotOf(state: BankState): StateSnapshot {
  return { version: STATE_FILE_VERSION, data: state.catalogue.data };
}

/** The snapshot in `path`, or undefined when there is no file there yet. */
export function loadStateFile(path: string): StateSnapshot | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StateFileError(`Sandbox state file ${path} cannot be read: ${(error as Error).message}`);
  }
  const invalid = (reason: string) =>
    new StateFileError(
      `Sandbox state file ${path} is not a sandbox state: ${reason}. Fix or delete it (the bank then starts from its initial state)`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw invalid(`not JSON (${(error as Error).message.slice(0, 100)})`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw invalid("expected a JSON object {version, data}");
  }
  const version = (json as { version?: unknown }).version;
  if (version !== STATE_FILE_VERSION) {
    throw invalid(
      `version is ${JSON.stringify(version) ?? "missing"}; this bank reads version ${STATE_FILE_VERSION}`,
    );
  }
  const data = parseBankData((json as { data?: unknown }).data);
  if (typeof data === "string") throw invalid(data);
  return { version: STATE_FILE_VERSION, data };
}

export function saveStateFile(path: string, snapshot: StateSnapshot): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(snapshot, null, 2)}\n`, { flush: true });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new StateFileError(`Sandbox state file ${path} cannot be written: ${(error as Error).message}`);
  }
}
