/** `--profile <egress config> [--bank <name>]`, shared by `sign` and `verify --response`. */

import { loadConfigFile } from "../config/load.js";
import type { BankProfileConfig } from "../config/schema.js";

/** The bank profile, or a line saying what is wrong with the options. */
export function bankProfileOption(configFile: string, bank: string | undefined): BankProfileConfig | string {
  const config = loadConfigFile(configFile);
  if (config.mode !== "egress")
    return `${configFile} is an ingress configuration; --profile needs an egress one (mode: egress, with banks:)`;
  const names = config.banks.map((b) => b.name);
  if (bank === undefined) {
    if (config.banks.length === 1) return config.banks[0]!;
    return `${configFile} has ${names.length} bank profiles (${names.join(", ")}): choose one with --bank <name>`;
  }
  return (
    config.banks.find((b) => b.name === bank) ??
    `${configFile} has no bank profile '${bank}'; its profiles are ${names.join(", ")}`
  );
}
