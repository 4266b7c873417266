/**
 * The demo systems are packages of their own (packages/ in the repository, npm workspaces): the
 * sandbox bank and the dev PKI with the demo QTSP. A gateway installed without them runs any
 * config that does not ask for them; `start` with the demo config, `certs` and `sandbox` load them
 * here, by package name, and say which to install when one is missing.
 *
 * What the gateway calls is declared here, not imported from the packages' types: the gateway
 * builds first and the packages against its exports (test/unit/cli/demo-packages.test.ts checks
 * that each package still fits).
 */

import type { DemoBankRequest } from "../app.js";

export const SANDBOX_BANK = "@psd2-gateway/sandbox-bank";
export const DEV_PKI = "@psd2-gateway/dev-pki";

/** The sandbox bank as `start` (backend.url: sandbox) and `sandbox` use it. */
export interface SandboxBankPackage {
  readonly GATEWAY_SECRET_HEADER: string;
  createSandboxBank(options: {
    gatewaySecret: string;
    clock?: () => number;
    identityHeaders?: DemoBankRequest["identityHeaders"];
    scaLinkTtlSeconds?: number;
    publicUrl?: string;
    stateFile?: string;
    seed?: number;
  }): {
    listen(at: {
      api: { host: string; port: number } | { socket: string };
      sca: { host: string; port: number };
    }): Promise<{
      readonly api: { readonly url: string; readonly socketPath?: string };
      readonly sca: { readonly url: string };
      close(): Promise<void>;
    }>;
    reset(): void;
  };
}

/** The dev PKI and demo QTSP as `start` (the demo config) and `certs` use them. */
export interface DevPkiPackage {
  generateDevPki(out: string, now: number, options: { qtspUrl: string }): Promise<unknown>;
  startDemoQtsp(options: { pkiDir: string; host: string; port: number }): Promise<{ readonly url: string }>;
}

/** What to install, by package: the demo packages are not on the npm registry, so from a checkout. */
function missing(name: string, why: string): Error {
  return new Error(
    `${name} is not installed, and ${why} needs it: it is one of the demo packages in the repository's packages/ folder, installed by npm ci in a checkout (npm workspaces); install it next to the gateway (npm install <checkout>/packages/${name.split("/")[1]}), or use a config without the demo`,
  );
}

/** Imports a demo package by name; only a missing package itself is explained, any other failure is its own. */
export async function importDemoPackage<T>(name: string, why: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === "ERR_MODULE_NOT_FOUND" && message.includes(`'${name}'`)) throw missing(name, why);
    throw error;
  }
}

export const loadSandboxBank = (why: string) => importDemoPackage<SandboxBankPackage>(SANDBOX_BANK, why);
export const loadDevPki = (why: string) => importDemoPackage<DevPkiPackage>(DEV_PKI, why);
