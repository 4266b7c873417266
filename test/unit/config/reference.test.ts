import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { configurationReference, referenceRows } from "../../../src/config/reference.js";
import { configSchema, egressConfigSchema } from "../../../src/config/schema.js";

describe("the configuration reference (docs/CONFIGURATION.md)", () => {
  it("is what the schema says today: run `npm run docs:config` after changing the schema", () => {
    const written = readFileSync(new URL("../../../docs/CONFIGURATION.md", import.meta.url), "utf8");
    expect(written).toBe(configurationReference());
  });

  const rowsOf = {
    ingress: new Map(referenceRows(configSchema).map((r) => [r.key, r])),
    egress: new Map(referenceRows(egressConfigSchema).map((r) => [r.key, r])),
  };
  it.each([
    ["ingress", "listen.port", { type: "number", default: "8443", reload: "restart" }],
    ["ingress", "listen.clientCertificate", { default: '"none"', reload: "restart" }],
    ["ingress", "verification.dateToleranceSeconds", { default: "60", reload: "applied" }],
    ["ingress", "listen.tls.cert", { required: true, reload: "restart" }],
    ["ingress", "log.level", { reload: "applied" }],
    ["ingress", "verification.dialects.routes[].accept", { required: true }],
    ["egress", "banks[].url", { type: "URL", required: true, reload: "applied" }],
    ["egress", "reload.pollSeconds", { reload: "applied" }],
    ["egress", "workers", { reload: "restart" }],
  ] as const)("%s %s", (mode, key, expected) => {
    expect(rowsOf[mode].get(key), key).toMatchObject(expected);
  });

  it("lists every key once", () => {
    for (const rows of [referenceRows(configSchema), referenceRows(egressConfigSchema)]) {
      const keys = rows.map((r) => r.key);
      expect(new Set(keys).size).toBe(keys.length);
    }
  });
});
