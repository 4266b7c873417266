/**
 * What every command shares: `--help`, one clear line and exit code 2 for an unknown or malformed
 * option, and exit code 1 for a failure. Each command is a file of its own in this folder.
 */

import { type ParseArgsConfig, parseArgs } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Command<O extends Options = Options> {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The usage text `--help` prints (after the `psd2-gateway <name>` line). */
  readonly usage: string;
  readonly options: O;
  readonly allowPositionals?: boolean;
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
  return command.run(parsed.values, parsed.positionals);
}

/** Node's parseArgs messages carry a second sentence about "--" that does not help here. */
function firstLine(error: unknown): string {
  const message = (error as Error).message ?? String(error);
  return message.split(/\. To specify| \(/)[0]!.replace(/\.$/, "");
}
