import { describe, expect, it } from "vitest";
import { keysNeedingRestart } from "../../../src/app/request-path.js";
import { validateConfig, validateEgressConfig } from "../../../src/config/load.js";
import { keepRestartKeys, restartKeysChanged, restartOnlyKeys } from "../../../src/config/restart.js";
import { configSchema, egressConfigSchema } from "../../../src/config/schema.js";

const BASE = { trust: { caDir: "/trust" }, register: { file: "/register.json" } };
const BANK = {
  name: "b",
  prefix: "/b",
  url: "https://bank.example",
  qseal: { cert: "/c.pem", key: "/k.pem" },
};

describe("keys a reload cannot take over, read from the schema", () => {
  it("are the keys each mode's schema marks, and only those", () => {
    expect(restartOnlyKeys(configSchema)).toEqual([
      "mode",
      "listen.host",
      "listen.port",
      "listen.tls",
      "listen.clientCertificate",
      "sandbox",
      "demoQtsp",
      "workers",
      "admin",
    ]);
    expect(restartOnlyKeys(egressConfigSchema)).toEqual([
      "mode",
      "listen.host",
      "listen.port",
      "listen.socket",
      "workers",
      // Egress keeps its evidence store until a restart (ingress swaps its own on reload).
      "evidence",
      "admin",
    ]);
  });

  const ingress = validateConfig(BASE);
  it.each([
    ["nothing changed", {}, []],
    ["the log level (applied at once)", { log: { level: "debug" } }, []],
    ["the date tolerance (a new chain)", { verification: { dateToleranceSeconds: 30 } }, []],
    ["the port", { listen: { port: 9443 } }, ["listen.port"]],
    [
      "the port and the workers",
      { listen: { port: 9443 }, workers: 2, store: { type: "redis", url: "redis://127.0.0.1:6379" } },
      ["listen.port", "workers"],
    ],
    [
      "a certificate kind (a new verifier)",
      { verification: { certificateKinds: { signature: ["eseal", "esign"] } } },
      [],
    ],
    [
      "the trust sources and the verdict cache (swapped)",
      { register: { file: "/other.json" }, cache: { ttlSeconds: 5 } },
      [],
    ],
    ["the store's fail-open (swapped)", { store: { failOpen: true } }, []],
    ["the key files (a new resolver)", { keys: { files: ["/tpp.pem"] } }, []],
    ["the watches' pace", { reload: { pollSeconds: 1 } }, []],
    ["the evidence store (a new one)", { evidence: { folder: "/evidence" } }, []],
    [
      "where the memory store's state is kept (a new store, handed over)",
      { store: { snapshotFile: "/limits.json" } },
      [],
    ],
    [
      "a switch away from the demo bank (which read the identity header names)",
      { backend: { url: "http://127.0.0.1:1" } },
      ["backend.url (sandbox)", "identityHeaders (sandbox)"],
    ],
    [
      "the demo bank's identity header names",
      { identityHeaders: { organizationId: "x-org" } },
      ["identityHeaders (sandbox)"],
    ],
  ])("ingress: %s", (_what, change, keys) => {
    const next = validateConfig({ ...BASE, ...change });
    expect(keysNeedingRestart(ingress, next)).toEqual(keys);
  });

  it("keepRestartKeys puts back what needs a restart and takes the rest", () => {
    const next = validateConfig({
      ...BASE,
      listen: { port: 9443 },
      store: { snapshotFile: "/s.json", failOpen: true },
    });
    const kept = keepRestartKeys(configSchema, ingress, next);
    expect(kept.listen.port).toBe(ingress.listen.port);
    expect(kept.store.snapshotFile).toBe("/s.json");
    expect(kept.store.failOpen).toBe(true);
    expect(restartKeysChanged(configSchema, ingress, kept)).toEqual([]);
  });

  const egress = validateEgressConfig({ mode: "egress", banks: [BANK] });
  it.each([
    ["a bank's URL (profiles are swapped)", { banks: [{ ...BANK, url: "https://other.example" }] }, []],
    ["the shutdown grace", { shutdown: { graceSeconds: 3 } }, []],
    ["the socket", { listen: { socket: "/tmp/egress.sock" } }, ["listen.socket"]],
    ["the admin port", { admin: { port: 9191 } }, ["admin"]],
  ])("egress: %s", (_what, change, keys) => {
    const next = validateEgressConfig({ mode: "egress", banks: [BANK], ...change });
    expect(restartKeysChanged(egressConfigSchema, egress, next)).toEqual(keys);
  });
});
