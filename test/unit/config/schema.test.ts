import { describe, expect, it } from "vitest";
import { ConfigError, validateConfig, validateEgressConfig } from "../../../src/config/load.js";

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
    // Sandbox operations are test tooling, not PSU journeys (SPEC 4.2, 4.3): no TPP-Redirect-URI there.
    expect(c.verification.redirectUriOptionalPrefixes).toEqual(["/v1/sandbox"]);
    expect(c.store.type).toBe("memory");
    expect(c.workers).toBe(1);
    expect(c.admin).toEqual({ enabled: true, host: "127.0.0.1", port: 9090, hostNames: [] });
    // An SCA page link is usable for 15 minutes (issue 30).
    expect(c.sandbox.scaLinkTtlSeconds).toBe(900);
  });

  it("takes the sandbox's SCA link lifetime as a whole positive number of seconds", () => {
    expect(validateConfig({ ...BASE, sandbox: { scaLinkTtlSeconds: 60 } }).sandbox.scaLinkTtlSeconds).toBe(
      60,
    );
    for (const bad of [0, -1, 1.5, "900"])
      expect(() => validateConfig({ ...BASE, sandbox: { scaLinkTtlSeconds: bad } }), String(bad)).toThrow(
        /sandbox\.scaLinkTtlSeconds/,
      );
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

  it("takes a period rule on unattended transaction routes only", () => {
    const routes = [
      { pattern: "/v1/accounts/{account}/transactions/{*}/x", class: "transactions", period: "bookingDate" },
      { pattern: "/v1/accounts/{account}/transactions", class: "transactions" },
    ];
    const c = validateConfig({ ...BASE, limits: { unattended: { routes } } });
    expect(c.limits.unattended.routes).toEqual(routes);
    expect(() =>
      validateConfig({
        ...BASE,
        limits: {
          unattended: {
            routes: [{ pattern: "/v1/accounts/{account}/balances", class: "balances", period: "none" }],
          },
        },
      }),
    ).toThrow("limits.unattended.routes.0.period: period applies to class transactions only");
    expect(() =>
      validateConfig({
        ...BASE,
        limits: {
          unattended: { routes: [{ pattern: "/v1/x/{account}", class: "transactions", period: "weekly" }] },
        },
      }),
    ).toThrow("limits.unattended.routes.0.period");
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
      "give register.file and/or register.url, register.metadata, or register.sources",
    );
    expect(() => validateConfig({ ...BASE, trust: {} })).toThrow(
      "give trust.caDir, trust.trustedLists or both",
    );
    expect(() =>
      validateConfig({ ...BASE, register: { file: "/r", sources: [{ name: "eba", file: "/e" }] } }),
    ).toThrow("one of these forms");
    expect(() =>
      validateConfig({
        ...BASE,
        register: {
          sources: [
            { name: "a", file: "/a" },
            { name: "a", url: "https://r.example/x" },
          ],
        },
      }),
    ).toThrow("distinct names");
  });
});

describe("the evidence store", () => {
  const evidence = (e: object) => validateConfig({ ...BASE, evidence: e }).evidence!;

  it("is the folder by default, PostgreSQL when evidence.postgres is given or store says so", () => {
    expect(evidence({ folder: "/ev" }).store).toBe("file");
    const url = "postgres://gw:secret@db.internal:5432/evidence";
    expect(evidence({ postgres: { url } })).toMatchObject({ store: "postgres", postgres: { url } });
    expect(evidence({ store: "postgres", postgres: { url } }).store).toBe("postgres");
  });

  it.each([
    [{}, /evidence\.folder: evidence\.folder is needed/],
    [{ store: "postgres" }, /evidence\.postgres: evidence\.store postgres needs evidence\.postgres\.url/],
    [{ store: "file", postgres: { url: "postgres://db/e" } }, /evidence\.folder/],
    [
      { postgres: { url: "mysql://db/e" } },
      /evidence\.postgres\.url: a postgres:\/\/ or postgresql:\/\/ URL/,
    ],
  ])("refuses %j, naming the key", (e, message) => {
    expect(() => evidence(e)).toThrow(message);
  });
});

describe("a register source by the EBA's metadata URL", () => {
  const METADATA = "https://euclid.eba.europa.eu/register/api/filemetadata";
  const withRegister = (register: unknown) => validateConfig({ trust: { caDir: "/t" }, register });

  it.each([
    { name: "the simple form", register: { metadata: METADATA } },
    { name: "the simple form, format eba-zip", register: { metadata: METADATA, format: "eba-zip" } },
    { name: "a source", register: { sources: [{ name: "eba", metadata: METADATA }] } },
  ])("accepts $name", ({ register }) => {
    const config = withRegister(register);
    expect(config.register.metadata ?? config.register.sources?.[0]?.metadata).toBe(METADATA);
  });

  it.each([
    {
      name: "metadata beside a file",
      register: { metadata: METADATA, file: "/r.json" },
      error: "register.metadata names the EBA's current file itself",
    },
    {
      name: "metadata beside a url",
      register: { metadata: METADATA, url: "https://r.example/r.zip" },
      error: "without register.file and register.url",
    },
    {
      name: "metadata with format json",
      register: { metadata: METADATA, format: "json" },
      error: "a register source given by `metadata` is the EBA's ZIP",
    },
    {
      name: "a source with metadata and a url",
      register: { sources: [{ name: "eba", metadata: METADATA, url: "https://r.example/r.zip" }] },
      error: "give exactly one of file, url and metadata",
    },
    {
      name: "a source with metadata and format eba-json",
      register: { sources: [{ name: "eba", metadata: METADATA, format: "eba-json" }] },
      error: "leave `format` out (or say eba-zip)",
    },
    {
      name: "a metadata URL that is not http(s)",
      register: { metadata: "ftp://euclid.eba.europa.eu/filemetadata" },
      error: "register.metadata",
    },
  ])("refuses $name", ({ register, error }) => {
    expect(() => withRegister(register)).toThrow(error);
  });
});

describe("keys by reference: the directories", () => {
  const withDirectory = (url: string) => () =>
    validateConfig({
      trust: { caDir: "/t" },
      register: { file: "/r.json" },
      keys: { directories: [{ url }] },
    });

  it.each([
    "https://keystore.openbanking.org.uk/{org-id}/{software-statement-id}.jwks",
    "https://keys.example/{org-id}.jwks",
    "http://127.0.0.1:8099/keys/{org-id}/{software-statement-id}.jwks",
  ])("accepts %s", (url) => {
    expect(withDirectory(url)().keys.directories[0]?.url).toBe(url);
  });

  it.each([
    ["plain http beyond loopback", "http://keys.example/{org-id}.jwks"],
    ["an id in the host", "https://{org-id}.keys.example/keys.jwks"],
    ["an id in the user part", "https://{org-id}@keys.example/keys.jwks"],
    ["not a URL", "keys.example/{org-id}.jwks"],
  ])("refuses %s, saying what it takes", (_, url) => {
    expect(withDirectory(url)).toThrow(/in its path only/);
  });
});

describe("egress configuration", () => {
  const bank = {
    name: "b",
    prefix: "/b",
    url: "https://bank.example",
    qseal: { cert: "/c.pem", key: "/k.pem" },
  };
  it.each([
    ["a bank without prefix or host", { ...bank, prefix: undefined }, "a prefix or a host"],
    [
      "PEM files and a PKCS#12 together",
      { ...bank, qseal: { cert: "/c", key: "/k", p12: "/p" } },
      "not both",
    ],
    ["a cert without its key", { ...bank, qseal: { cert: "/c" } }, "give cert and key"],
    ["response checks without CAs", { ...bank, responses: { mode: "enforce" } }, "caDir"],
    ["a prefix with a trailing slash", { ...bank, prefix: "/b/" }, "without a trailing slash"],
    ["an unknown signing knob", { ...bank, signing: { keyIdFormat: "x" } }, "keyIdFormat"],
    ["a (request-target) typo", { ...bank, signing: { headers: ["(request target)"] } }, "(request-target)"],
  ])("refuses %s, naming the key", async (_what, profile, message) => {
    const { validateEgressConfig } = await import("../../../src/config/load.js");
    expect(() => validateEgressConfig({ mode: "egress", banks: [profile] })).toThrow(message);
  });

  it("refuses two banks with one name", async () => {
    const { validateEgressConfig } = await import("../../../src/config/load.js");
    expect(() => validateEgressConfig({ mode: "egress", banks: [bank, { ...bank, prefix: "/c" }] })).toThrow(
      "bank names must differ",
    );
  });

  it("fills SPEC 5 defaults", async () => {
    const { validateEgressConfig } = await import("../../../src/config/load.js");
    const c = validateEgressConfig({ mode: "egress", banks: [bank] });
    expect(c.listen).toMatchObject({ host: "127.0.0.1", port: 8090 });
    expect(c.banks[0]!.signing).toMatchObject({
      headers: [
        "(request-target)",
        "date",
        "digest",
        "x-request-id",
        "psu-id",
        "psu-corporate-id",
        "tpp-redirect-uri",
      ],
      keyId: { serial: "upper-hex", issuerSeparator: ",", spaces: "keep" },
      digest: { algorithms: ["sha-256"], token: "upper", emptyBody: "hash" },
      certificateHeader: { name: "TPP-Signature-Certificate", format: "base64-der" },
    });
    expect(c.banks[0]!.responses.mode).toBe("off");
  });
});

describe("the shipped configuration files", () => {
  it.each([
    ["default.yaml", "ingress"],
    ["ingress.example.yaml", "ingress"],
    ["egress.example.yaml", "egress"],
  ])("config/%s is valid (%s mode)", async (name, mode) => {
    const { loadConfigFile } = await import("../../../src/config/load.js");
    const config = loadConfigFile(new URL(`../../../config/${name}`, import.meta.url).pathname);
    expect(config.mode).toBe(mode);
    if (config.mode === "ingress") {
      expect(config.verification.redirectUriOptionalPrefixes).toEqual(["/v1/sandbox"]);
      expect(config.limits.unattended.routes.filter((r) => r.class === "transactions")).toEqual([
        { pattern: "/v1/accounts/{account}/transactions", class: "transactions", period: "dateFrom" },
        { pattern: "/v1/accounts/{account}/transactions/{*}", class: "transactions", period: "bookingDate" },
        { pattern: "/v1/card-accounts/{account}/transactions", class: "transactions", period: "dateFrom" },
        {
          pattern: "/v1/card-accounts/{account}/transactions/{*}",
          class: "transactions",
          period: "bookingDate",
        },
      ]);
    }
  });

  it.each(["default.yaml", "egress.example.yaml"])(
    "config/%s: LOG_LEVEL overrides log.level in either mode, and a bad one is named",
    async (name) => {
      const { loadConfigFile } = await import("../../../src/config/load.js");
      const file = new URL(`../../../config/${name}`, import.meta.url).pathname;
      expect(loadConfigFile(file, { LOG_LEVEL: "debug" }).log.level).toBe("debug");
      expect(() => loadConfigFile(file, { LOG_LEVEL: "loud" })).toThrow(
        /^invalid configuration in the LOG_LEVEL environment variable:\n {2}- level: /,
      );
    },
  );

  it("resolves every file path relative to the configuration file", async () => {
    const { loadConfigFile } = await import("../../../src/config/load.js");
    const root = new URL("../../../", import.meta.url).pathname;
    const config = loadConfigFile(`${root}config/default.yaml`);
    if (config.mode !== "ingress") throw new Error("default.yaml is an ingress config");
    expect(config.responseSigning?.qseal.cert).toBe(`${root}certs/dev/bank/bank-qseal.pem`);
    expect(config.store.snapshotFile).toBe(`${root}var/limits-snapshot.json`);
    expect(config.trust.caDir).toBe(`${root}certs/dev/trust`);
    expect(config.register.sources?.[0]?.file).toBe(`${root}certs/dev/register-overrides.json`);
    expect(config.register.sources?.[1]?.metadata).toBe("http://127.0.0.1:8099/register/api/filemetadata");
    expect(config.trust.trustedLists?.lotlSigners).toEqual([`${root}certs/dev/qtsp/lotl-signer.pem`]);
    expect(config.trust.trustedLists?.lotl).toBe("http://127.0.0.1:8099/lotl.xml");
    expect(config.revocation.crl.cacheDir).toBe(`${root}var/crl-cache`);
    expect(config.listen.tls?.cert).toBe(`${root}certs/dev/gateway.pem`);
  });
});

describe("the admin listener's access keys", () => {
  const EGRESS = {
    mode: "egress",
    banks: [
      { name: "b", prefix: "/b", url: "https://bank.example", qseal: { cert: "/q.pem", key: "/q.key" } },
    ],
  };

  it.each(["0.0.0.0", "::", "10.0.0.5", "gw1.internal.example"])(
    "refuses admin.host %s (beyond loopback) without admin.tokenFile, in either mode",
    (host) => {
      expect(() => validateConfig({ ...BASE, admin: { host } })).toThrow(/admin\.tokenFile/);
      expect(() => validateEgressConfig({ ...EGRESS, admin: { host } })).toThrow(/admin\.tokenFile/);
    },
  );

  it.each(["127.0.0.1", "127.0.0.2", "::1", "localhost"])("takes admin.host %s without a token", (host) => {
    expect(validateConfig({ ...BASE, admin: { host } }).admin.host).toBe(host);
  });

  it("takes a token file beyond loopback, an admin listener that is off, and mutual TLS paths", () => {
    expect(
      validateConfig({ ...BASE, admin: { host: "0.0.0.0", tokenFile: "/run/token" } }).admin.tokenFile,
    ).toBe("/run/token");
    expect(validateConfig({ ...BASE, admin: { host: "0.0.0.0", enabled: false } }).admin.enabled).toBe(false);
    const tls = { cert: "/a.pem", key: "/a.key", clientCa: "/ca.pem" };
    expect(validateEgressConfig({ ...EGRESS, admin: { tls } }).admin.tls).toEqual({
      ...tls,
      minVersion: "TLSv1.2",
    });
    expect(() => validateConfig({ ...BASE, admin: { tls: { cert: "/a.pem", key: "/a.key" } } })).toThrow(
      /clientCa/,
    );
  });

  it("takes DNS names in admin.hostNames, lower-cased, and refuses one with a port", () => {
    expect(
      validateConfig({ ...BASE, admin: { hostNames: ["GW1.Internal.example"] } }).admin.hostNames,
    ).toEqual(["gw1.internal.example"]);
    expect(() => validateConfig({ ...BASE, admin: { hostNames: ["gw1:9090"] } })).toThrow(/hostNames/);
  });
});
