/**
 * The one typed configuration, validated once at start. Every key has a default that makes the
 * embedded demo work; a bad key is refused with its path and the form expected.
 */

import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { PSD2_ROLES, type Psd2Role } from "../eidas/index.js";
import { DEFAULT_UNATTENDED_ROUTES } from "../limits/index.js";

const seconds = (def: number) => z.number().positive().default(def);
/** The folder relative file paths are resolved against while a config is parsed (see parseConfig). */
let baseDir: string | undefined;

/** A file or folder path: marked here, resolved against the config file's folder when parsed. */
const path = z
  .string()
  .min(1)
  .transform((p) => (baseDir !== undefined && !isAbsolute(p) ? resolve(baseDir, p) : p));
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]+$/, "an HTTP header name (letters, digits and '-')")
  .transform((s) => s.toLowerCase());

export { PSD2_ROLES, type Psd2Role };

const tlsServer = z
  .object({
    cert: path.describe("PEM file with the gateway's TLS certificate (and chain)"),
    key: path.describe("PEM file with its private key"),
    minVersion: z.enum(["TLSv1.2", "TLSv1.3"]).default("TLSv1.2"),
  })
  .strict();

const listen = z
  .object({
    host: z.string().default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8443),
    tls: tlsServer.optional(),
    /**
     * The TPP's QWAC (mutual TLS): `none`, `request` (checked when given) or `require`. It comes
     * from the TLS handshake, or from `clientCertificateHeader` when a trusted proxy terminates TLS.
     */
    clientCertificate: z.enum(["none", "request", "require"]).default("none"),
    /** The QWAC's organizationIdentifier must equal the QSealC's. */
    requireSameOrganization: z.boolean().default(true),
    /** Peers (exact IPs) allowed to pass the client certificate in `clientCertificateHeader`. */
    trustedProxies: z.array(z.string()).default([]),
    /** Header a TLS-terminating proxy puts the URL-encoded client PEM in (nginx, RFC 9440 style). */
    clientCertificateHeader: headerName.default("x-ssl-client-cert"),
    requestTimeoutSeconds: seconds(30),
    keepAliveTimeoutSeconds: seconds(65),
  })
  .strict();

const backend = z
  .object({
    /** `http://host:port` or `https://host:port`; `sandbox` starts the built-in demo bank. */
    url: z.union([z.literal("sandbox"), z.url({ protocol: /^https?$/ })]).default("sandbox"),
    ca: path.optional(),
    cert: path.optional(),
    key: path.optional(),
    timeoutSeconds: seconds(30),
    connections: z.number().int().positive().default(128),
  })
  .strict();

const characterPolicy = z
  .object({
    /** Refuse code points above this (0xFFFF refuses emoji and everything outside the BMP). */
    maxCodePoint: z.number().int().min(0x7f).max(0x10ffff).default(0x10ffff),
    /** Extra refused ranges, inclusive: [[0x1F300, 0x1FAFF]]. */
    blockedRanges: z.array(z.tuple([z.number().int(), z.number().int()])).default([]),
  })
  .strict();

const routeRole = z
  .object({
    /** Path prefix, matched on whole segments: `/v1/accounts` matches `/v1/accounts/1`. */
    prefix: z.string().startsWith("/"),
    role: z.enum(PSD2_ROLES),
  })
  .strict();

export const DEFAULT_ROLE_ROUTES: z.input<typeof routeRole>[] = [
  { prefix: "/v1/accounts", role: "PSP_AI" },
  { prefix: "/v1/card-accounts", role: "PSP_AI" },
  { prefix: "/v1/consents", role: "PSP_AI" },
  { prefix: "/v1/bank-offered-consents", role: "PSP_AI" },
  { prefix: "/v1/payments", role: "PSP_PI" },
  { prefix: "/v1/bulk-payments", role: "PSP_PI" },
  { prefix: "/v1/periodic-payments", role: "PSP_PI" },
  { prefix: "/v1/signing-baskets", role: "PSP_PI" },
  { prefix: "/v1/funds-confirmations", role: "PSP_IC" },
];

const verification = z
  .object({
    dateToleranceSeconds: seconds(60),
    algorithms: z
      .array(z.enum(["rsa-sha256", "rsa-sha512", "ecdsa-sha256", "hs2019"]))
      .min(1)
      .default(["rsa-sha256"]),
    /** Also read keyId serials written in decimal. */
    allowDecimalSerial: z.boolean().default(false),
    /** `strict`: keyId must be SN=…,CA=… naming the certificate. `relaxed`: any keyId; the certificate decides. */
    keyIdPolicy: z.enum(["strict", "relaxed"]).default("strict"),
    /** `spec`: every verification failure is 400 (SPEC 7). `berlin-group`: certificate/signature/role failures 401. */
    statusProfile: z.enum(["spec", "berlin-group"]).default("spec"),
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024),
    /** TPP-Redirect-URI is required on every request (SPEC 4) except under these path prefixes. */
    redirectUriOptionalPrefixes: z.array(z.string().startsWith("/")).default([]),
    characterPolicy: characterPolicy.prefault({}),
    roles: z.array(routeRole).default(DEFAULT_ROLE_ROUTES),
  })
  .strict();

const trust = z
  .object({
    /** Folder of CA certificates (PEM): roots and intermediates of the QTSPs you accept. */
    caDir: path,
    /** Folder of CRL files (PEM or DER); defaults to caDir. */
    crlDir: path.optional(),
  })
  .strict();

const register = z
  .object({
    file: path.optional(),
    url: z.url({ protocol: /^https?$/ }).optional(),
    pollSeconds: seconds(300),
    /** Older than this, the copy is stale and requests fail closed. */
    maxAgeSeconds: seconds(24 * 3600),
  })
  .strict()
  .refine((r) => r.file !== undefined || r.url !== undefined, "give register.file or register.url");

const cache = z
  .object({
    maxEntries: z.number().int().positive().default(10_000),
    ttlSeconds: seconds(300),
    failureTtlSeconds: seconds(10),
  })
  .strict();

const identityHeaders = z
  .object({
    organizationId: headerName.default("x-tpp-organization-id"),
    name: headerName.default("x-tpp-name"),
    roles: headerName.default("x-tpp-roles"),
    certificateFingerprint: headerName.default("x-tpp-certificate-fingerprint"),
    psuPresent: headerName.default("x-psu-present"),
  })
  .strict();

const replay = z
  .object({
    /** A signature seen again within this window is refused; defaults to twice the Date tolerance. */
    windowSeconds: z.number().positive().optional(),
    /** Replay keys the memory store keeps. */
    maxEntries: z.number().int().positive().default(1_000_000),
  })
  .strict();

const unattendedRoute = z
  .object({
    /** A path with `{account}` for the account id and `{*}` for any other segment. */
    pattern: z.string().startsWith("/"),
    class: z.enum(["balances", "transactions"]),
  })
  .strict();

const unattended = z
  .object({
    enabled: z.boolean().default(true),
    /** Calls per window per TPP, account and class without the PSU present (SPEC 8: 4 per 24 h). */
    limit: z.number().int().positive().default(4),
    windowSeconds: z
      .number()
      .int()
      .positive()
      .default(24 * 3600),
    /** Count per Consent-ID as well as per account. */
    includeConsentId: z.boolean().default(false),
    /** Unattended transaction reads may reach back this far (SPEC 8: 90 days); 0 turns the rule off. */
    maxTransactionAgeDays: z.number().int().min(0).default(90),
    routes: z.array(unattendedRoute).default([...DEFAULT_UNATTENDED_ROUTES]),
  })
  .strict();

const store = z
  .object({
    /** `memory` (one process) or `redis` (several gateways share one limit). */
    type: z.enum(["memory", "redis"]).default("memory"),
    /** For `redis`: redis://host:port/db or rediss://… */
    url: z
      .string()
      .regex(/^rediss?:\/\//, "a redis:// or rediss:// URL")
      .optional(),
    /** Memory store: limit windows kept; evictions are counted and logged. */
    maxWindows: z.number().int().positive().default(500_000),
    /** Memory store: written on shutdown and read at start, so a restart keeps every TPP's quota. */
    snapshotFile: path.optional(),
    /** When the store cannot be reached: refuse with 503 (default) or let limited calls through. */
    failOpen: z.boolean().default(false),
  })
  .strict()
  .refine((s) => s.type !== "redis" || s.url !== undefined, {
    message: "store.type redis needs store.url",
    path: ["url"],
  });

export const configSchema = z
  .object({
    mode: z.literal("ingress").default("ingress"),
    listen: listen.prefault({}),
    backend: backend.prefault({}),
    verification: verification.prefault({}),
    trust,
    register,
    cache: cache.prefault({}),
    identityHeaders: identityHeaders.prefault({}),
    replay: replay.prefault({}),
    limits: z
      .object({ unattended: unattended.prefault({}) })
      .strict()
      .prefault({}),
    store: store.prefault({}),
    /** Processes to run (node:cluster); more than 1 needs the redis store, or limits would split between them. */
    workers: z.number().int().min(1).max(64).default(1),
    log: z
      .object({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
      })
      .strict()
      .prefault({}),
    /** The operations listener: /metrics, /healthz, /readyz. Keep it off the TPP-facing network. */
    admin: z
      .object({
        enabled: z.boolean().default(true),
        host: z.string().default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(9090),
      })
      .strict()
      .prefault({}),
    /** Trust store, CRLs and TLS certificates are reloaded when their files change (and on SIGHUP). */
    reload: z
      .object({ pollSeconds: z.number().positive().default(10) })
      .strict()
      .prefault({}),
    /** On SIGTERM/SIGINT: stop accepting, let requests in flight finish for at most this long. */
    shutdown: z
      .object({ graceSeconds: z.number().min(0).default(25) })
      .strict()
      .prefault({}),
  })
  .strict()
  .refine((c) => c.workers === 1 || c.store.type === "redis", {
    message:
      "workers > 1 needs store.type: redis; with the memory store every process would count limits on its own",
    path: ["workers"],
  });

export type GatewayConfig = z.output<typeof configSchema>;
export type GatewayConfigInput = z.input<typeof configSchema>;

/** Validates `raw`; relative file paths become absolute, relative to `dir` (the config file's folder). */
export function parseConfig(raw: unknown, dir?: string) {
  baseDir = dir;
  try {
    return configSchema.safeParse(raw);
  } finally {
    baseDir = undefined;
  }
}
