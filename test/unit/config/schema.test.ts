import { describe, expect, it } from "vitest";
import { ConfigError, validateConfig } from "../../../src/config/load.js";

const BASE = { trust: { caDir: "/trust" }, register: { file: "/register.json" } };

describe("configuration validation", () => {
  it("fills every default for the smallest config", () => {
    const c = validateConfig(BASE);
    expect(c.verification.dateToleranceSeconds).toBe(60);
    expect(c.limits.unattended).toMatchObject({
      enabled: true,
      limit: 4,
      windowSeconds: 86400,
      maxTransactionAgeDays: 90,
    });
    expect(c.store.type).toBe("memory");
    expect(c.workers).toBe(1);
    expect(c.admin).toEqual({ enabled: true, host: "127.0.0.1", port: 9090 });
  });

  it("names each bad key with the form expected", () => {
    let message = "";
    try {
      validateConfig({
        ...BASE,
        listen: { port: "80", bogus: 1 },
        verification: { roles: [{ prefix: "v1", role: "X" }] },
      });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      message = (error as Error).message;
    }
    expect(message).toContain("listen.port: Invalid input: expected number, received string");
    expect(message).toContain('listen: Unrecognized key: "bogus"');
    expect(message).toContain('verification.roles.0.prefix: Invalid string: must start with "/"');
    expect(message).toContain("verification.roles.0.role");
  });

  it("refuses workers > 1 with the memory store, since counters would split between processes", () => {
    expect(() => validateConfig({ ...BASE, workers: 2 })).toThrow("workers > 1 needs store.type: redis");
    expect(
      validateConfig({ ...BASE, workers: 2, store: { type: "redis", url: "redis://127.0.0.1:6379" } })
        .workers,
    ).toBe(2);
  });

  it("needs a URL for the redis store and a register source", () => {
    expect(() => validateConfig({ ...BASE, store: { type: "redis" } })).toThrow("store.url");
    expect(() => validateConfig({ trust: { caDir: "/t" }, register: {} })).toThrow(
      "give register.file or register.url",
    );
  });
});

describe("the shipped configuration files", () => {
  it.each(["default.yaml", "ingress.example.yaml"])("config/%s is valid", async (name) => {
    const { loadConfigFile } = await import("../../../src/config/load.js");
    const config = loadConfigFile(new URL(`../../../config/${name}`, import.meta.url).pathname);
    expect(config.mode).toBe("ingress");
  });

  it("resolves every file path relative to the configuration file", async () => {
    const { loadConfigFile } = await import("../../../src/config/load.js");
    const root = new URL("../../../", import.meta.url).pathname;
    const config = loadConfigFile(`${root}config/default.yaml`);
    expect(config.store.snapshotFile).toBe(`${root}var/limits-snapshot.json`);
    expect(config.trust.caDir).toBe(`${root}certs/dev/trust`);
    expect(config.register.file).toBe(`${root}certs/dev/register.json`);
    expect(config.listen.tls?.cert).toBe(`${root}certs/dev/gateway.pem`);
  });
});
