/**
 * What every command shares: `--help`, one clear line and exit code 2 for an unknown or malformed
 * option or a path option that names nothing usable, and exit code 1 for a failure. Each command
 * is a file of its own in this folder.
 */

import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";

/**
 * What a path option names: an existing file or folder to read, or where a file or folder will be
 * written (its folder must exist; the path, when it exists, must be of that kind);
 * `folder-or-database`: a folder, or a postgres:// URL (not a path: tried when it is read).
 */
export type PathKind = "file" | "folder" | "new-file" | "new-folder" | "folder-or-database";

/** parseArgs's option, and what it names when it is a path (parseArgs ignores the extra key). */
type Option = NonNullable<ParseArgsConfig["options"]>[string] & { readonly path?: PathKind };
type Options = Record<string, Option>;

export interface Command<O extends Options = Options> {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The usage text `--help` prints (after the `psd2-gateway <name>` line). */
  readonly usage: string;
  readonly options: O;
  readonly allowPositionals?: boolean;
  /** What each positional argument names, when they are paths. */
  readonly positionalPath?: PathKind;
  /** Throws a UsageError when options do not go together; runs before any path is looked at. */
  check?(values: ParsedValues<O>, positionals: string[]): void;
  run(values: ParsedValues<O>, positionals: string[]): Promise<number>;
}

export type ParsedValues<O extends Options> = ReturnType<
  typeof parseArgs<{ options: O; strict: true }>
>["values"];

export function defineCommand<O extends Options>(command: Command<O>): Command<O> {
  return command;
}

/** Exit code 2: the command line itself is wrong (as most Unix tools do). */
export const USAGE_ERROR = 2;

/** A wrong command line found while a command runs: one line on stderr and exit code 2. */
export class UsageError extends Error {}

export async function runCommand<O extends Options>(command: Command<O>, args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(`psd2-gateway ${command.name} — ${command.summary}\n\n${command.usage.trimEnd()}\n`);
    return 0;
  }
  let parsed: { values: ParsedValues<O>; positionals: string[] };
  try {
    parsed = parseArgs({
      args,
      options: command.options,
      strict: true,
      allowPositionals: command.allowPositionals ?? false,
    }) as { values: ParsedValues<O>; positionals: string[] };
  } catch (error) {
    console.error(
      `psd2-gateway ${command.name}: ${firstLine(error)}; see psd2-gateway ${command.name} --help`,
    );
    return USAGE_ERROR;
  }
  try {
    command.check?.(parsed.values, parsed.positionals);
    checkPaths(command, parsed.values, parsed.positionals);
    return await command.run(parsed.values, parsed.positionals);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`psd2-gateway ${command.name}: ${error.message}`);
    return USAGE_ERROR;
  }
}

/**
 * Checks every path option before the command runs, so that a mistyped path is a usage error
 * naming the option and the path, not an ENOENT from deep inside (or after a server started).
 */
function checkPaths(command: Command<Options>, values: Record<string, unknown>, positionals: string[]): void {
  for (const [name, option] of Object.entries(command.options)) {
    if (!option.path) continue;
    const given = values[name];
    for (const path of Array.isArray(given) ? given : given === undefined ? [] : [given]) {
      const problem = pathProblem(String(path), option.path);
      if (problem) throw new UsageError(`--${name} ${path}: ${problem}`);
    }
  }
  for (const path of command.positionalPath ? positionals : []) {
    const problem = pathProblem(path, command.positionalPath!);
    if (problem) throw new UsageError(`${path}: ${problem}`);
  }
}

/** What is wrong with `path` as a `kind`, in a few words; undefined when nothing is. */
function pathProblem(path: string, given: PathKind): string | undefined {
  if (given === "folder-or-database" && /^postgres(ql)?:\/\//.test(path)) return undefined;
  const kind = given === "folder-or-database" ? "folder" : given;
  const folder = kind === "folder" || kind === "new-folder";
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") return errnoText(code, error);
    if (kind === "file") return "no such file";
    if (kind === "folder") return "no such folder";
    // Something to write: its folder must be there (a folder to write is made with its parents).
    if (kind === "new-file" && pathProblem(dirname(path), "folder"))
      return `no such folder ${dirname(path)} to write it in`;
    return undefined;
  }
  if (folder && !stats.isDirectory()) return "is a file, not a folder";
  if (!folder && stats.isDirectory()) return "is a folder, not a file";
  if (kind === "file" || kind === "folder") {
    // stat succeeds on a file the user may not read.
    try {
      accessSync(path, folder ? constants.R_OK | constants.X_OK : constants.R_OK);
    } catch (error) {
      return errnoText((error as NodeJS.ErrnoException).code, error);
    }
  }
  return undefined;
}

/**
 * Reads a path option's file and makes of it what it should hold; a file that does not hold it
 * (`parse` throws) is a usage error naming the option, the path and `what` it should be.
 */
export function readOption<T>(option: string, path: string, what: string, parse: (bytes: Buffer) => T): T {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new UsageError(`--${option} ${path}: ${errnoText((error as NodeJS.ErrnoException).code, error)}`);
  }
  try {
    return parse(bytes);
  } catch (error) {
    throw new UsageError(`--${option} ${path}: not ${what} (${(error as Error).message ?? error})`);
  }
}

function errnoText(code: string | undefined, error: unknown): string {
  if (code === "ENOENT") return "no such file";
  if (code === "EISDIR") return "is a folder, not a file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "ENOTDIR") return "a part of the path is a file, not a folder";
  return `cannot be read (${code ?? (error as Error).message})`;
}

/** Node's parseArgs messages carry a second sentence about "--" that does not help here. */
function firstLine(error: unknown): string {
  const message = (error as Error).message ?? String(error);
  return message.split(/\. To specify| \(/)[0]!.replace(/\.$/, "");
}
