/**
 * The demo packages as the gateway's command line loads them (src/cli/demo-packages.ts): by name,
 * each fitting what the gateway declares it calls (checked by tsc, through the "psd2-gateway-source" condition),
 * and a missing one named with what to install rather than a module-resolution stack.
 */

import { describe, expect, it } from "vitest";
import {
  DEV_PKI,
  type DevPkiPackage,
  importDemoPackage,
  loadDevPki,
  loadSandboxBank,
  SANDBOX_BANK,
  type SandboxBankPackage,
} from "../../../src/cli/demo-packages.js";

describe("demo packages", () => {
  it("the sandbox bank and the dev PKI load by name and fit what the gateway calls", async () => {
    // Typed assignments: tsc refuses them when a package no longer fits the gateway's declaration.
    const bank: SandboxBankPackage = await import("@psd2-gateway/sandbox-bank");
    const pki: DevPkiPackage = await import("@psd2-gateway/dev-pki");
    expect(await loadSandboxBank("the test")).toMatchObject({
      GATEWAY_SECRET_HEADER: bank.GATEWAY_SECRET_HEADER,
    });
    expect((await loadDevPki("the test")).generateDevPki).toBe(pki.generateDevPki);
  });

  it.each([SANDBOX_BANK, DEV_PKI])(
    "%s missing: says which package and why, and how to install it",
    async (name) => {
      const absent = `${name}-absent`;
      await expect(importDemoPackage(absent, "the demo")).rejects.toThrow(
        `${absent} is not installed, and the demo needs it: it is one of the demo packages in the repository's packages/ folder, installed by npm ci in a checkout (npm workspaces); install it next to the gateway (npm install <checkout>/packages/${absent.split("/")[1]}), or use a config without the demo`,
      );
    },
  );

  it("a package that is there but fails to load is its own error, not 'not installed'", async () => {
    await expect(importDemoPackage("./does-not-exist.js", "the demo")).rejects.toThrow(/does-not-exist/);
    await expect(importDemoPackage("./does-not-exist.js", "the demo")).rejects.not.toThrow(/not installed/);
  });
});
