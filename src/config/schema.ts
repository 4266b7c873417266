/**
 * The one typed configuration, validated once at start. Every key has a default that makes the
 * embedded demo work; a bad key is refused with its path and the form expected.
 */

import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { headerName } from "../checks/dialects/config-names.js";
import { type Dialect, dialectNames, dialectUnit, dialectUnits, headBoundByTls } from "../checks/index.js";
import { PSD2_ROLES, type Psd2Role } from "../eidas/index.js";
import { DEFAULT_UNATTENDED_ROUTES } from "../limits/index.js";
import { isLoopbackHost } from "../loopback.js";
import { ELIGIBLE_HEADERS } from "../signature/index.js";
import { FAPI_RESPONSE_PROFILES } from "../signature/rfc9421/index.js";
import { restartOnly } from "./restart.js";

const seconds = (def: number) => z.number().positive().default(def);
/** Why a key is taken over only at a restart (config/restart.ts). */
const LISTENER = "the listener is bound once, at start";
const WORKERS = "the processes are forked at start";
const ADMIN = "the admin listener is bound once, at start";
/** The folder relative file paths are resolved against while a config is parsed (see parseConfig). */
let baseDir: string | undefined;

/** A file or folder path: marked here, resolved against the config file's folder when parsed. */
const path = z
  .string()
  .min(1)
  .transform((p) => (baseDir !== undefined && !isAbsolute(p) ? resolve(baseDir, p) : p));

export { PSD2_ROLES, type Psd2Role };

const tlsServer = z
  .object({
    cert: path.describe("PEM file with the gateway's TLS certificate (and chain)"),
    key: path.describe("PEM file with its private key"),
    minVersion: z.enum(["TLSv1.2", "TLSv1.3"]).default("TLSv1.2"),
  })
  .strict();

/**
 * The operations listener of either mode (observability/admin.ts, admin-guard.ts): it answers
 * GET/HEAD to a Host that is an IP literal, a loopback name, its own host or one of `hostNames`,
 * never a browser page of another origin; beyond loopback its POST endpoints need the bearer token
 * of `tokenFile`; with `tls` it speaks HTTPS to clients holding a certificate from `clientCa` only.
 */
const adminSchema = (defaultPort: number) =>
  z
    .object({
      enabled: z.boolean().default(true),
      host: z.string().default("127.0.0.1"),
      port: z.number().int().min(0).max(65535).default(defaultPort),
      /** DNS names the admin listener is reached by besides localhost and `host` (e.g. a Prometheus target). */
      hostNames: z
        .array(
          z
            .string()
            .regex(/^[A-Za-z0-9.-]+$/, "a DNS name without port (IP addresses are always accepted)")
            .transform((s) => s.toLowerCase()),
        )
        .default([]),
      /** A file holding the bearer token its POST endpoints need; required beyond loopback. */
      tokenFile: path.optional(),
      /** HTTPS with mutual TLS: only clients with a certificate issued by `clientCa` get an answer. */
      tls: z
        .object({
          cert: path.describe("PEM file with the admin listener's TLS certificate (and chain)"),
          key: path.describe("PEM file with its private key"),
          clientCa: path.describe("PEM file with the CA certificates a client's certificate must chain to"),
          minVersion: z.enum(["TLSv1.2", "TLSv1.3"]).default("TLSv1.2"),
        })
        .strict()
        .optional(),
    })
    .strict()
    .refine((a) => !a.enabled || a.tokenFile !== undefined || isLoopbackHost(a.host), {
      message:
        "admin.host beyond loopback needs admin.tokenFile: a file with a bearer token (at least 16 characters) its POST endpoints require; or bind admin.host to 127.0.0.1",
      path: ["tokenFile"],
    })
    .prefault({});

/**
 * A listener's caps and timeouts (src/listener/guard.ts), as nginx and Envoy have them: every one
 * bounds what a client can hold without sending a request; none cuts a request being served.
 */
const connectionLimits = (defaults: { maxConnections: number; maxConnectionsPerAddress: number }) => ({
  /** Open connections in all, for the whole gateway (with `workers: N`, each worker takes its share). */
  maxConnections: z.number().int().positive().default(defaults.maxConnections),
  /** Open connections from one client address (the TCP peer), shared among workers likewise. */
  maxConnectionsPerAddress: z.number().int().positive().default(defaults.maxConnectionsPerAddress),
  /** From accept to a finished TLS handshake. */
  tlsHandshakeTimeoutSeconds: seconds(10),
  /**
   * A connection that sends nothing this long before its first request is closed. Shorter than the
   * headers timeout, which also runs from the connection's opening for its first request.
   */
  idleTimeoutSeconds: seconds(5),
  /** To the end of a request's head: from the connection's opening (its first request) or the request's first byte. */
  headersTimeoutSeconds: seconds(10),
  /** To the end of a request's body, counted as the headers timeout is. */
  requestTimeoutSeconds: seconds(30),
  /** Idle between requests on a keep-alive connection. */
  keepAliveTimeoutSeconds: seconds(65),
  /**
   * A client that takes no byte of its answer this long is disconnected (nginx's send_timeout):
   * else one that never reads would hold its connection, and the backend connection behind it.
   */
  sendTimeoutSeconds: seconds(60),
});

/** Node refuses a headers timeout longer than the request timeout it is part of. */
const headersWithinRequest = (l: { headersTimeoutSeconds: number; requestTimeoutSeconds: number }) =>
  l.headersTimeoutSeconds <= l.requestTimeoutSeconds;
const HEADERS_WITHIN_REQUEST = {
  message: "headersTimeoutSeconds must not be longer than requestTimeoutSeconds",
  path: ["headersTimeoutSeconds"],
};

const listen = z
  .object({
    host: restartOnly(z.string().default("127.0.0.1"), LISTENER),
    port: restartOnly(z.number().int().min(0).max(65535).default(8443), LISTENER),
    // Its files are read anew when they change; another file takes a restart.
    tls: restartOnly(tlsServer.optional(), LISTENER),
    /**
     * The Host names TPPs reach the gateway by (`api.bank.example`, or with `:port` to pin the port):
     * another Host is refused (400, the connection closed). Empty: any valid host[:port].
     */
    hostNames: z
      .array(
        z
          .string()
          .regex(
            /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/,
            "a host name, optionally with :port",
          )
          .transform((name) => name.toLowerCase()),
      )
      .default([]),
    /**
     * The TPP's QWAC (mutual TLS): `none`, `request` (checked when given) or `require`. It comes
     * from the TLS handshake, or from `clientCertificateHeader` when a trusted proxy terminates TLS.
     */
    clientCertificate: restartOnly(
      z.enum(["none", "request", "require"]).default("none"),
      "whether the TLS handshake asks for a certificate is set when the listener starts",
    ),
    /** The QWAC's organizationIdentifier must equal the QSealC's. */
    requireSameOrganization: z.boolean().default(true),
    /** Peers (exact IPs) allowed to pass the client certificate in `clientCertificateHeader`. */
    trustedProxies: z.array(z.string()).default([]),
    /** Header a TLS-terminating proxy puts the URL-encoded client PEM in (nginx, RFC 9440 style). */
    clientCertificateHeader: headerName.default("x-ssl-client-cert"),
    ...connectionLimits({ maxConnections: 8192, maxConnectionsPerAddress: 256 }),
  })
  .strict()
  .refine(headersWithinRequest, HEADERS_WITHIN_REQUEST);

const forwardedName = (name: string) => z.union([headerName, z.literal(false)]).default(name);

const backend = z
  .object({
    /** `http://host:port` or `https://host:port`; `sandbox` starts the built-in demo bank. */
    url: z.union([z.literal("sandbox"), z.url({ protocol: /^https?$/ })]).default("sandbox"),
    ca: path.optional(),
    cert: path.optional(),
    key: path.optional(),
    timeoutSeconds: seconds(30),
    connections: z.number().int().positive().default(128),
    /**
     * The forwarding headers the gateway writes from what it saw (a header name, or false for
     * none). A client's own are always removed; a peer in listen.trustedProxies is believed.
     */
    forwardedHeaders: z
      .object({
        forwarded: forwardedName("forwarded"),
        for: forwardedName("x-forwarded-for"),
        proto: forwardedName("x-forwarded-proto"),
        host: forwardedName("x-forwarded-host"),
        port: forwardedName("x-forwarded-port"),
        prefix: forwardedName("x-forwarded-prefix"),
        realIp: forwardedName("x-real-ip"),
      })
      .strict()
      .prefault({}),
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

/**
 * Where TPP-Redirect-URI is not demanded by default: the sandbox operations are test tooling, not
 * PSU journeys, and SPEC 4.2 and 4.3 list their headers without it (nor any PSU header). Signature,
 * Digest and certificate are checked there as everywhere.
 */
export const DEFAULT_REDIRECT_URI_OPTIONAL_PREFIXES: readonly string[] = ["/v1/sandbox"];

/**
 * A signing dialect: a name of the registry's (src/checks/dialects/index.ts): cavage, rfc9421,
 * jades, uk-ob, and any dialect a build registers.
 */
const dialectName = z.string().refine((name) => dialectUnit(name) !== undefined, {
  error: (issue) =>
    `'${String(issue.input)}' is not a signing dialect of this build; it verifies ${dialectNames().join(", ")}`,
});

/** A list of signing dialects, in order of preference, each at most once and one the chain verifies. */
const dialectList = z
  .array(dialectName)
  .min(1)
  .refine((list) => new Set(list).size === list.length, "name each dialect once");

/**
 * Which signing dialects a request may use (src/checks/dialects.ts), and each registered dialect's
 * own options: its unit's config fragment (`DialectUnit.config`) under its key, in the table's order.
 */
function dialectsSchema() {
  const own: Record<string, z.ZodType> = {};
  for (const unit of dialectUnits()) {
    if (unit.config) own[unit.config.key] = unit.config.verification.prefault({});
  }
  return z
    .object({
      /**
       * Accepted on every path without a route of its own, in order of preference: a request that
       * carries the signatures of two is verified by the first.
       */
      accept: dialectList.default(["cavage"]),
      /** Path prefixes (whole segments, lower-case) with their own list; the longest matching wins. */
      routes: z
        .array(z.object({ prefix: z.string().startsWith("/"), accept: dialectList }).strict())
        .default([]),
      ...own,
    })
    .strict();
}

const QC_TYPES = ["eseal", "web", "esign"] as const;

const verification = z
  .object({
    dialects: dialectsSchema().prefault({}),
    /**
     * The certificate kinds (ETSI EN 319 412-5 QcType) accepted for each use: the signing
     * certificate a QSealC, the TLS client certificate a QWAC, unless widened here.
     */
    // A change builds a new verifier with an empty verdict cache (verdicts judged the old kinds).
    certificateKinds: z
      .object({
        signature: z.array(z.enum(QC_TYPES)).min(1).default(["eseal"]),
        clientCertificate: z.array(z.enum(QC_TYPES)).min(1).default(["web"]),
      })
      .strict()
      .prefault({}),
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
    /**
     * TPP-Redirect-URI is required on every request (SPEC 4) except under these path prefixes
     * (matched on whole segments of the normalised path); the default leaves out the sandbox's.
     */
    redirectUriOptionalPrefixes: z
      .array(z.string().startsWith("/"))
      .default([...DEFAULT_REDIRECT_URI_OPTIONAL_PREFIXES]),
    characterPolicy: characterPolicy.prefault({}),
    roles: z.array(routeRole).default(DEFAULT_ROLE_ROUTES),
    /**
     * Path or method override headers of the bank's own systems, refused (400) besides the
     * well-known ones (X-Original-URL, X-Rewrite-URL, X-HTTP-Method-Override, …: src/checks/overrides.ts).
     */
    overrideHeaders: z.array(headerName).default([]),
  })
  .strict();

/** An http(s) URL as it is, anything else a path relative to the config file. */
const location = z
  .string()
  .min(1)
  .transform((p) =>
    /^https?:\/\//i.test(p) || baseDir === undefined || isAbsolute(p) ? p : resolve(baseDir, p),
  );

const trustedLists = z
  .object({
    /** The EU list of the lists (ETSI TS 119 612): a URL or a file. */
    lotl: location,
    /** PEM files of the certificates allowed to sign the LOTL (the EU publishes them in the Official Journal). */
    lotlSigners: z.array(path).min(1),
    /** Only these countries' lists are followed (ISO alpha-2); all when absent. */
    territories: z.array(z.string().regex(/^[A-Z]{2}$/, "an ISO 3166 alpha-2 code such as NO")).optional(),
    /** Read again this often (and sooner after a failure, with back-off). */
    pollSeconds: seconds(3600),
    timeoutSeconds: seconds(30),
  })
  .strict();

const trust = z
  .object({
    /** Folder of CA certificates (PEM): roots and intermediates of the QTSPs you accept (optional with trustedLists). */
    caDir: path.optional(),
    /** Folder of CRL files (PEM or DER); defaults to caDir. */
    crlDir: path.optional(),
    /**
     * CAs from the EU trusted lists besides caDir: a CA/QC service granted now (or when a
     * certificate was issued) is trusted for what the list says it may issue (QWACs, QSealCs).
     */
    trustedLists: trustedLists.optional(),
  })
  .strict()
  .refine(
    (t) => t.caDir !== undefined || t.trustedLists !== undefined,
    "give trust.caDir, trust.trustedLists or both",
  );

/** `revocation:` of ingress and of each bank profile's `responses` (egress): one live revocation path. */
export const revocation = z
  .object({
    /** Which sources are asked, in which order: the certificate's OCSP responder, then CRLs. */
    order: z.enum(["ocsp-crl", "crl", "ocsp"]).default("ocsp-crl"),
    /**
     * When no source can say (no revocation information, responder down, CRL past nextUpdate +
     * grace) the certificate is refused; true lets it through with a warning and a metric.
     */
    softFail: z.boolean().default(false),
    /** Longest a certificate without a cached answer waits for its first one. */
    firstAnswerTimeoutSeconds: seconds(2),
    ocsp: z
      .object({
        timeoutSeconds: seconds(2),
        /** An answer is reused at most this long even when its nextUpdate is later: a revocation shows within it. */
        maxAgeSeconds: seconds(3600),
        /** Certificates whose answers are kept. */
        maxEntries: z.number().int().positive().default(10_000),
      })
      .strict()
      .prefault({}),
    crl: z
      .object({
        /** CRLs fetched and kept fresh besides the certificates' own distribution points. */
        urls: z.array(z.url({ protocol: /^https?$/ })).default([]),
        /** Fetched CRLs are kept here too, so a restart does not fetch them all again. */
        cacheDir: path.optional(),
        /** Fetched again at least this often (and before nextUpdate): a revocation shows within it. */
        refreshSeconds: seconds(3600),
        /** A CRL past its nextUpdate by more than this proves nothing. */
        graceSeconds: z.number().min(0).default(0),
        timeoutSeconds: seconds(10),
        maxBytes: z
          .number()
          .int()
          .positive()
          .default(20 * 1024 * 1024),
        /** Distribution points tracked at most. */
        maxLists: z.number().int().positive().default(256),
      })
      .strict()
      .prefault({}),
  })
  .strict();

const registerFormat = z.enum(["auto", "json", "eba-json", "eba-zip"]).default("auto");

/**
 * The EBA's file metadata URL (https://euclid.eba.europa.eu/register/api/filemetadata): it names
 * the current ZIP of the register with its size and SHA-256, which are checked.
 */
const registerMetadata = z.url({ protocol: /^https?$/ }).optional();

/** A metadata URL names the EBA's ZIP: no other format may be said for it. */
const metadataFormatMessage =
  "a register source given by `metadata` is the EBA's ZIP: leave `format` out (or say eba-zip)";
const formatFitsMetadata = (s: { metadata?: string | undefined; format: string }) =>
  s.metadata === undefined || s.format === "auto" || s.format === "eba-zip";

/** One register source: a layer of its own, with its own freshness. */
const registerSource = z
  .object({
    /** Names the source in refusals, logs and metrics (`overrides`, `national`, `eba`). */
    name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lower-case letters, digits and '-'"),
    file: path.optional(),
    url: z.url({ protocol: /^https?$/ }).optional(),
    metadata: registerMetadata,
    /** `json`: our own format; `eba-json`/`eba-zip`: the EBA PSD2 register; `auto` tells them apart. */
    format: registerFormat,
    pollSeconds: seconds(300),
    /** Older than this, the source is stale and requests fail closed. */
    maxAgeSeconds: seconds(24 * 3600),
  })
  .strict()
  .refine(
    (s) => [s.file, s.url, s.metadata].filter((w) => w !== undefined).length === 1,
    "give exactly one of file, url and metadata",
  )
  .refine(formatFitsMetadata, metadataFormatMessage);

const register = z
  .object({
    /** The simple form: one source (file, URL or both feeding one copy; or the EBA's metadata URL alone). */
    file: path.optional(),
    url: z.url({ protocol: /^https?$/ }).optional(),
    metadata: registerMetadata,
    format: registerFormat,
    pollSeconds: seconds(300),
    /** Older than this, the copy is stale and requests fail closed. */
    maxAgeSeconds: seconds(24 * 3600),
    /**
     * Several sources, highest priority first: the first that lists an organizationIdentifier
     * answers for it (our JSON overrides, then a national register, then the EBA's).
     */
    sources: z.array(registerSource).min(1).optional(),
    /**
     * The bank's country (ISO 3166 alpha-2): a TPP whose register entry says where each service is
     * authorised or passported keeps only the roles that cover this country.
     */
    bankCountry: z
      .string()
      .regex(/^[A-Z]{2}$/, "an ISO 3166 alpha-2 country code such as NO")
      .optional(),
    /** A register file or download larger than this is refused while it is read (every source). */
    maxBytes: z
      .number()
      .int()
      .positive()
      .default(200 * 1024 * 1024),
    /**
     * A register ZIP's bounds (every source), checked from its central directory before anything is
     * inflated and while inflating: zip bombs are refused and the copy held is kept.
     */
    zip: z
      .object({
        /** Uncompressed bytes its entries may declare together (a larger JSON could not be decoded anyway). */
        maxUncompressedBytes: z
          .number()
          .int()
          .positive()
          .default(512 * 1024 * 1024),
        /** Entries it may list (the EBA's holds the JSON and perhaps a SHA-256 sidecar). */
        maxEntries: z.number().int().positive().default(16),
        /** Uncompressed : compressed, per entry and for the file; entries under 1 MiB are exempt. */
        maxRatio: z.number().positive().default(200),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .refine(
    (r) =>
      (r.sources !== undefined) !== (r.file !== undefined || r.url !== undefined || r.metadata !== undefined),
    "give register.file and/or register.url, register.metadata, or register.sources (one of these forms)",
  )
  .refine(
    (r) => r.metadata === undefined || (r.file === undefined && r.url === undefined),
    "register.metadata names the EBA's current file itself: give it without register.file and register.url",
  )
  .refine(formatFitsMetadata, metadataFormatMessage)
  .refine(
    (r) => new Set(r.sources?.map((s) => s.name)).size === (r.sources?.length ?? 0),
    "register.sources need distinct names",
  );

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

/**
 * Keys by reference (trust/key-resolver.ts): the certificate a JWS names by `kid` / `x5t#S256`
 * instead of sending it in x5c, found among certificates already seen, in `files`, then in the
 * `directories` (their hosts only).
 */
const keyDirectory = z
  .object({
    /**
     * The TPP's JWKS: `{org-id}` and `{software-statement-id}` are filled from UK OB's
     * `http://openbanking.org.uk/iss` (`<org-id>/<software-statement-id>`). https, or http on loopback.
     */
    url: z
      .string()
      .refine(
        directoryUrl,
        "an https:// URL (http:// only on loopback), {org-id} and {software-statement-id} in its path only, e.g. https://keystore.openbanking.org.uk/{org-id}/{software-statement-id}.jwks",
      ),
  })
  .strict();

const keys = z
  .object({
    /** PEM certificates or JWKS files (each key with x5c): the per-TPP store, found by x5t#S256 or kid. */
    files: z.array(path).default([]),
    /** Where a `kid` is looked up; a key's `x5u` is fetched only from these hosts. */
    directories: z.array(keyDirectory).default([]),
    /** PEM CAs trusted for the directories' TLS besides the system's (a private directory's CA). */
    ca: path.optional(),
    /** A key is good this long after a fetch last listed it: a key removed from the JWKS is refused after it. */
    keyTtlSeconds: z
      .number()
      .int()
      .positive()
      .default(24 * 3600),
    /** A TPP's JWKS is fetched again in the background when older than this. */
    refreshSeconds: z.number().int().positive().default(3600),
    /** An unknown kid makes the gateway ask that TPP's directory again at most this often. */
    unknownKidIntervalSeconds: z.number().int().positive().default(60),
    /** One fetch of a JWKS or x5u, headers to last byte; the request waits at most this long. */
    timeoutSeconds: seconds(5),
    /** One JWKS or x5u document. */
    maxBytes: z
      .number()
      .int()
      .positive()
      .default(256 * 1024),
    /** Certificates already seen and trusted, remembered by SHA-256 (an LRU). */
    maxSeen: z.number().int().positive().default(10_000),
    /** TPPs' JWKS documents held (an LRU). */
    maxDocuments: z.number().int().positive().default(10_000),
  })
  .strict();

function directoryUrl(url: string): boolean {
  // The ids fill the path only: a TPP's claim never picks the host.
  if (/^[a-z]+:\/\/[^/]*\{/i.test(url)) return false;
  try {
    const parsed = new URL(url.replace(/\{[a-z-]+\}/g, "x"));
    return parsed.protocol === "https:" || (parsed.protocol === "http:" && isLoopbackHost(parsed.hostname));
  } catch {
    return false;
  }
}

const replay = z
  .object({
    /**
     * The least time a replay record is kept. Each signed request's record is kept until the request
     * could no longer pass its time checks (Date/sigT/iat ± tolerance, RFC 9421 created + max age
     * + tolerance, expires) whatever this says; set it only to keep records longer.
     */
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
    /**
     * Transactions only, how the 90 days are held: `dateFrom` (a list: the query's dateFrom),
     * `bookingDate` (a transaction's details: the bank's answer), `none`. Default: `bookingDate`
     * when the pattern ends in `{*}`, `dateFrom` otherwise.
     */
    period: z.enum(["dateFrom", "bookingDate", "none"]).optional(),
  })
  .strict()
  .refine((r) => r.period === undefined || r.class === "transactions", {
    message: "period applies to class transactions only",
    path: ["period"],
  });

/** Calls a window: one number for both classes, or one per class. */
const agreedLimit = z.number().int().min(0).max(10_000);
const limitAgreement = z
  .object({
    /** The TPP's organizationIdentifier (its QSealC's), e.g. PSDDE-BAFIN-123456. */
    organizationId: z.string().min(1),
    /** Only this consent (the Consent-ID header); every consent of the TPP when absent. */
    consentId: z.string().min(1).optional(),
    limit: z.union([
      agreedLimit,
      z.object({ balances: agreedLimit.optional(), transactions: agreedLimit.optional() }).strict(),
    ]),
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
    /**
     * Unattended transaction reads may reach back this far (SPEC 8: 90 days): a list without
     * dateFrom or with an earlier one, and a transaction's details booked earlier, are refused with
     * PERIOD_INVALID; 0 turns the rule off.
     */
    maxTransactionAgeDays: z.number().int().min(0).default(90),
    routes: z.array(unattendedRoute).default([...DEFAULT_UNATTENDED_ROUTES]),
    /**
     * Limits the bank agreed with a TPP (RTS Art. 36(5)(b), EBA Q&A 2019_4631), over `limit`: per
     * TPP, or per TPP and Consent-ID; one number, or one per class. A consent's own limit counts
     * per consent and account.
     */
    agreements: z.array(limitAgreement).default([]),
    /**
     * The response header in which the bank's backend tells a consent's frequencyPerDay: `<n>`
     * for the request's Consent-ID, or `<n>; consent=<id>`. Read from 2xx answers, remembered in
     * the store (shared by every gateway on it) and removed before the TPP gets the answer. None:
     * not read.
     */
    consentFrequencyHeader: z
      .string()
      .regex(/^[a-z0-9-]+$/, "a lower-case header name")
      .optional(),
    /** How long a consent's frequencyPerDay is remembered after the backend last told it. */
    consentFrequencyTtlSeconds: z
      .number()
      .int()
      .positive()
      .default(7 * 24 * 3600),
  })
  .strict();

/** One Redis node or Sentinel: a host name or address and its port. */
const redisNode = z
  .object({
    host: z.string().min(1),
    port: z.number().int().min(1).max(65535),
  })
  .strict();

const store = z
  .object({
    /** `memory` (one process) or `redis` (several gateways share one limit). */
    type: z.enum(["memory", "redis"]).default("memory"),
    /** For `redis`, one Redis: redis://host:port/db or rediss://… */
    url: z
      .string()
      .regex(/^rediss?:\/\//, "a redis:// or rediss:// URL")
      .optional(),
    /** For `redis` behind Redis Sentinel: the Sentinels to ask where the primary of `name` is. */
    sentinels: z.array(redisNode).min(1, "list at least one Sentinel").optional(),
    /** With `sentinels`: the master group's name (`sentinel monitor <name> …`). */
    name: z.string().min(1).optional(),
    /** With `sentinels`: the Sentinels' own password (`requirepass` in sentinel.conf), if any. */
    sentinelPassword: z.string().min(1).optional(),
    /** For `redis` on Redis Cluster: startup nodes (any few; the rest is discovered). */
    cluster: z.array(redisNode).min(1, "list at least one Cluster node").optional(),
    /** With `sentinels` or `cluster`: the data nodes' password (with `url` it sits in the URL). */
    password: z.string().min(1).optional(),
    /**
     * Replicas that must hold each granted slot and replay record before the gateway acts on it
     * (Redis WAIT); fewer within the command timeout → 503. Default: 1 with `sentinels`, else 0.
     */
    replicaAcks: z.number().int().min(0).optional(),
    /** Memory store: limit windows kept; evictions are counted and logged. */
    maxWindows: z.number().int().positive().default(500_000),
    /** Memory store: written on shutdown and read at start, so a restart keeps every TPP's quota. */
    snapshotFile: path.optional(),
    /** When the store cannot be reached: refuse with 503 (default) or let limited calls through. */
    failOpen: z.boolean().default(false),
  })
  .strict()
  .superRefine((s, ctx) => {
    const where = (["url", "sentinels", "cluster"] as const).filter((k) => s[k] !== undefined);
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if (s.type !== "redis") {
      for (const k of [
        "sentinels",
        "cluster",
        "name",
        "sentinelPassword",
        "password",
        "replicaAcks",
      ] as const) {
        if (s[k] !== undefined) issue(k, `store.${k} is for store.type redis, not ${s.type}`);
      }
      return;
    }
    if (where.length === 0) {
      issue(
        "url",
        "store.type redis needs one of store.url, store.sentinels (with store.name) or store.cluster",
      );
    } else if (where.length > 1) {
      issue(where[1]!, `store.${where.join(" and store.")}: give exactly one way to reach Redis`);
    }
    if (s.sentinels !== undefined && s.name === undefined) {
      issue("name", "store.sentinels needs store.name, the master group the Sentinels monitor");
    }
    if (s.sentinels === undefined) {
      if (s.name !== undefined)
        issue("name", "store.name is the Sentinel master group: only with store.sentinels");
      if (s.sentinelPassword !== undefined)
        issue("sentinelPassword", "store.sentinelPassword is only for store.sentinels");
    }
    if (s.url !== undefined && s.password !== undefined) {
      issue("password", "with store.url the password goes in the URL (redis://:password@host:6379)");
    }
  });

const failurePolicy = z.enum(["refuse", "continue"]);

/**
 * Evidence for disputes (src/evidence/): every accepted request's signed bytes, signature and
 * certificate, hash-chained and checkpoint-signed in append-only files. Absent: off.
 */
const evidence = z
  .object({
    /** On when the block is there; false keeps the block but writes nothing. */
    enabled: z.boolean().default(true),
    /** Where the chains go: `file` (evidence.folder) or `postgres` (evidence.postgres.url); default postgres when evidence.postgres is given, otherwise file. */
    store: z.enum(["file", "postgres"]).optional(),
    /** The folder (made when missing): chains/, certificates/, keys/, the checkpoint key. */
    folder: path.optional(),
    /** For `store: postgres`: the database, one table of rows per line keyed (instance, chain, seq). */
    postgres: z
      .object({
        /** postgres://user:password@host:5432/database (the password sits in the URL, as with store.url). */
        url: z.string().regex(/^postgres(ql)?:\/\//, "a postgres:// or postgresql:// URL"),
      })
      .strict()
      .optional(),
    /** Bodies kept whole: of payment calls (POST/PUT/PATCH/DELETE on PSP_PI routes), of every call, or none. */
    bodies: z.enum(["payments", "all", "none"]).default("payments"),
    /**
     * `every`: each batch written (what arrived within 5 ms) is fsynced; `interval`: once a second (a crash
     * may lose up to a second).
     */
    fsync: z.enum(["every", "interval"]).default("interval"),
    /** A file is closed with a checkpoint and the next begun past this size … */
    rotateBytes: z
      .number()
      .int()
      .positive()
      .default(64 * 1024 * 1024),
    /** … or this age. */
    rotateSeconds: seconds(86_400),
    /** Chain files last written longer ago are removed; 0 (default) keeps them for ever. */
    retainDays: z.number().min(0).default(0),
    /** Records waiting for the disk; beyond, `onFailure` decides. */
    queueLength: z.number().int().positive().default(10_000),
    /** A signed checkpoint this often (and at each rotation and at shutdown). */
    checkpointSeconds: seconds(60),
    /**
     * A record that cannot be queued (queue full, store failing): `refuse` answers 503 and does not
     * forward the request; `continue` forwards it and the chain gets a gap line. One value for every
     * route, or per class: payment routes (PSP_PI) and the others.
     */
    onFailure: z
      .union([
        failurePolicy.transform((p) => ({ payments: p, others: p })),
        z
          .object({
            payments: failurePolicy.default("refuse"),
            others: failurePolicy.default("continue"),
          })
          .strict(),
      ])
      .default({ payments: "refuse", others: "continue" }),
    /** Names this process's chain (default: host, pid and start time; a worker's own). */
    instanceId: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/, "letters, digits, '.', '_' and '-'")
      .optional(),
  })
  .strict()
  .transform((e) => ({ ...e, store: e.store ?? (e.postgres ? ("postgres" as const) : ("file" as const)) }))
  .refine((e) => !e.enabled || e.store !== "file" || e.folder !== undefined, {
    message:
      "evidence.folder is needed while evidence is enabled (or store: postgres with evidence.postgres.url)",
    path: ["folder"],
  })
  .refine((e) => !e.enabled || e.store !== "postgres" || e.postgres !== undefined, {
    message: "evidence.store postgres needs evidence.postgres.url",
    path: ["postgres"],
  });

/** A key and its certificate: PEM files, or a PKCS#12 bundle whose password is in an env variable or a file. */
const credentials = z
  .object({
    cert: path.optional().describe("PEM: the certificate, then its chain"),
    key: path.optional().describe("PEM: its private key"),
    p12: path.optional().describe("PKCS#12 bundle (.p12/.pfx) with key and certificate"),
    passwordEnv: z.string().min(1).optional(),
    passwordFile: path.optional(),
  })
  .strict()
  .refine((c) => (c.p12 !== undefined ? c.cert === undefined && c.key === undefined : c.cert && c.key), {
    message: "give cert and key (PEM files), or p12 (a PKCS#12 bundle), not both",
  });

/** A header name as it is written on the wire (case kept: some verifiers compare it as text). */
const wireHeaderName = z.string().regex(/^[A-Za-z0-9-]+$/, "an HTTP header name (letters, digits and '-')");
/**
 * Ingress signs the backend's responses with the bank's QSealC (SPEC 5.10): Digest over the body,
 * Date and X-Request-ID, and the Signature over them. The body is held to be hashed: a response
 * over maxBodyBytes is answered 502, never sent unsigned.
 */
const responseSigning = z
  .object({
    qseal: credentials,
    certificateHeader: wireHeaderName.default("ASPSP-Signature-Certificate"),
    /** Signed when the response carries them, in this order. */
    headers: z
      .array(z.string().regex(/^[a-z0-9-]+$/, "a lower-case header name"))
      .min(1)
      .default(["date", "digest", "x-request-id"]),
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024),
    /**
     * How the answer to an RFC 9421 request binds it: `full` (FAPI 2.0 HTTP Signatures draft -01:
     * also the request's content-digest, signature and signature-input with `;req`) or
     * `method-target` (`"@method";req` and `"@target-uri";req` only, as before, for TPPs whose
     * verifier takes no `;req;key`).
     */
    rfc9421Profile: z.enum(FAPI_RESPONSE_PROFILES).default("full"),
  })
  .strict();

export const logSchema = z
  .object({
    level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  })
  .strict()
  .prefault({});

export const configSchema = z
  .object({
    mode: restartOnly(
      z.literal("ingress", "mode is ingress (the bank's side) or egress (the TPP's side)").default("ingress"),
      "a process runs one mode",
    ),
    listen: listen.prefault({}),
    backend: backend.prefault({}),
    verification: verification.prefault({}),
    // A reload starts new trust sources and a new verdict cache beside the running ones, then swaps them.
    trust,
    revocation: revocation.prefault({}),
    register,
    cache: cache.prefault({}),
    identityHeaders: identityHeaders.prefault({}),
    replay: replay.prefault({}),
    /** Keys a JWS names by kid or x5t#S256 instead of sending x5c (JAdES, UK OB). */
    // A reload builds a new resolver: the old one's fetched and seen keys are dropped.
    keys: keys.prefault({}),
    /** Absent: responses pass unsigned. */
    responseSigning: responseSigning.optional(),
    /** Absent: no evidence is kept. */
    // A reload that changes the store's settings opens a new store; the old one closes after the grace.
    evidence: evidence.optional(),
    /** The built-in demo bank, when `backend.url` is `sandbox`. */
    sandbox: restartOnly(
      z
        .object({
          /** The SCA page's listener, the one PSUs' browsers reach: it serves nothing but the SCA page. */
          host: z.string().default("127.0.0.1"),
          /** Fixed, so that the SCA page links PSUs' browsers open stay the same across restarts. */
          port: z.number().int().min(0).max(65535).default(8081),
          /** Where browsers reach it, when not at http://host:port (a proxy, a container's published port). */
          publicUrl: z.url({ protocol: /^https?$/ }).optional(),
          /**
           * The bank's API, which only the gateway calls (with this start's secret): loopback on any
           * free port by default, or a Unix socket (mode 0600). Never publish it.
           */
          api: z
            .object({
              host: z.string().default("127.0.0.1"),
              port: z.number().int().min(0).max(65535).default(0),
              socket: path.optional(),
            })
            .strict()
            .prefault({}),
          /** Keeps every TPP's room across restarts (written, mode 0600, after each change). */
          stateFile: path.optional(),
          /** Same seed, same generated customers. */
          seed: z.number().int().optional(),
          /** How long an SCA page link stays usable after the TPP got it; then the page says it expired. */
          scaLinkTtlSeconds: z.number().int().positive().default(900),
        })
        .strict()
        .prefault({}),
      "the demo bank starts with the gateway",
    ),
    /**
     * Development only: `start` runs the dev PKI's demo QTSP here (CRL, OCSP, trusted lists, EBA
     * register on loopback), the URLs the dev certificates and the default config name.
     */
    demoQtsp: restartOnly(
      z
        .object({
          host: z.string().default("127.0.0.1"),
          port: z.number().int().min(0).max(65535).default(8099),
          /** The dev PKI folder (certs/dev). */
          pki: path,
        })
        .strict()
        .optional(),
      "the demo QTSP starts with the gateway",
    ),
    limits: z
      .object({ unattended: unattended.prefault({}) })
      .strict()
      .prefault({}),
    // A reload connects anew with changed credentials; a new place for the state gets a new store, the
    // running one consulted beside it until its longest window has passed (app/ingress.ts `storeFor`).
    store: store.prefault({}),
    /** Processes to run (node:cluster); more than 1 needs the redis store, or limits would split between them. */
    workers: restartOnly(z.number().int().min(1).max(64).default(1), WORKERS),
    log: logSchema,
    /** The operations listener: /metrics, /healthz, /readyz. Keep it off the TPP-facing network. */
    admin: restartOnly(adminSchema(9090), ADMIN),
    /** Trust store, CRLs and TLS certificates are reloaded when their files change (and on SIGHUP). */
    // A reload sets the watches' pace (app/file-watch.ts `pace`).
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
  })
  .refine((c) => c.listen.clientCertificate !== "none" || headBoundByTls(acceptedDialects(c)).length === 0, {
    message:
      "uk-ob is accepted, and its signature covers the body only: its requests are bound to the TPP by the mutual-TLS QWAC, so set listen.clientCertificate to request or require (or stop accepting uk-ob)",
    path: ["listen", "clientCertificate"],
  })
  // Every answer is signed in its request's dialect: one whose unit cannot sign answers is refused
  // here rather than answered in another dialect or unsigned.
  .superRefine((c, ctx) => {
    if (c.responseSigning === undefined) return;
    for (const dialect of new Set(acceptedDialects(c))) {
      if (dialectUnit(dialect)?.responseSigner) continue;
      ctx.addIssue({
        code: "custom",
        path: ["responseSigning"],
        message: `the signing dialect '${dialect}' cannot sign responses in this build, and responseSigning signs every answer in its request's dialect: stop accepting '${dialect}' (verification.dialects) or remove responseSigning`,
      });
    }
  });

/** Every dialect the config accepts, anywhere. */
function acceptedDialects(c: {
  verification: {
    dialects: { accept: readonly Dialect[]; routes: readonly { accept: readonly Dialect[] }[] };
  };
}): Dialect[] {
  const { accept, routes } = c.verification.dialects;
  return [...accept, ...routes.flatMap((r) => r.accept)];
}

export type GatewayConfig = z.output<typeof configSchema>;
export type GatewayConfigInput = z.input<typeof configSchema>;

// ---------------------------------------------------------------------------------------------
// Egress mode: the TPP's side. Plain HTTP from the TPP's application on loopback, one bank profile
// per bank, each with its QWAC, its QSealC and the signing rules that bank wants.

const signedHeaderName = z
  .string()
  .regex(/^(\(request-target\)|[a-z0-9-]+)$/, "a lower-case header name or (request-target)");

/** SPEC 5.5: `(request-target)` and every eligible header present. */
export const DEFAULT_SIGNED_HEADERS = ["(request-target)", ...ELIGIBLE_HEADERS];

/** Each registered dialect's signing rules (`banks[].signing.<key>`), in the table's order. */
function signingFragments(): Record<string, z.ZodType> {
  const fragments: Record<string, z.ZodType> = {};
  for (const unit of dialectUnits()) {
    if (unit.config?.signing) fragments[unit.config.key] = unit.config.signing.prefault({});
  }
  return fragments;
}

/** How one bank wants requests signed (real banks' verifiers differ); every default is SPEC 5. */
const signingRulesOf = () =>
  z
    .object({
      /**
       * `cavage` (draft-cavage Signature, Berlin Group NextGenPSD2 1.3: every key below applies),
       * `rfc9421` (FAPI 2.0 HTTP Signatures with the Berlin Group certificate and keyId: `rfc9421` and
       * `keyId.value` apply) or `jades` (a JAdES detached JWS in x-jws-signature, Berlin Group
       * openFinance 2.x: `jades` applies) or `uk-ob` (UK Open Banking's detached JWS over the body:
       * `ukOb` applies). The bank's responses are checked in the same dialect.
       */
      dialect: dialectName.default("cavage"),
      // Each dialect's own rules, under its key: its unit's config fragment (`DialectUnit.config.signing`).
      ...signingFragments(),
      /** Signing order; each is signed when the request carries it, (request-target) always. */
      headers: z.array(signedHeaderName).min(1).default(DEFAULT_SIGNED_HEADERS),
      algorithm: z.enum(["rsa-sha256", "rsa-sha512", "ecdsa-sha256"]).optional(),
      /** The token written in the Signature header when the bank wants another (`SHA256withRSA`, `hs2019`). */
      algorithmToken: z
        .string()
        .regex(/^[A-Za-z0-9-]+$/)
        .optional(),
      keyId: z
        .object({
          serial: z.enum(["upper-hex", "lower-hex", "decimal"]).default("upper-hex"),
          issuerSeparator: z.enum([",", ", "]).default(","),
          spaces: z.enum(["keep", "percent-20"]).default("keep"),
          /** A fixed keyId instead of SN=…,CA=… (a bank that uses the OAuth client id). */
          value: z.string().min(1).optional(),
        })
        .strict()
        .prefault({}),
      digest: z
        .object({
          algorithms: z
            .array(z.enum(["sha-256", "sha-512"]))
            .min(1)
            .default(["sha-256"]),
          token: z.enum(["upper", "lower"]).default("upper"),
          emptyBody: z.enum(["hash", "omit"]).default("hash"),
        })
        .strict()
        .prefault({}),
      certificateHeader: z
        .object({
          name: wireHeaderName.default("TPP-Signature-Certificate"),
          format: z.enum(["base64-der", "pem", "base64-pem"]).default("base64-der"),
        })
        .strict()
        .prefault({}),
    })
    .strict();

/** Each registered dialect's keys of `banks[].responses`, in the table's order. */
function responseFragments(): Record<string, z.ZodType> {
  return Object.assign({}, ...[...dialectUnits()].map((unit) => unit.config?.responses ?? {}));
}

/** Checking the bank's signed responses. */
const responseVerificationOf = () =>
  z
    .object({
      /** `off`, `advisory` (log and count a failure, pass the response on) or `enforce` (502 instead). */
      mode: z.enum(["off", "advisory", "enforce"]).default("off"),
      /** CA certificates (PEM) the bank's QSealC must chain to. */
      caDir: path.optional(),
      crlDir: path.optional(),
      /** How the bank's certificate (and its CAs) are checked for revocation: the same options as ingress's. */
      revocation: revocation.prefault({}),
      certificateHeader: headerName.default("aspsp-signature-certificate"),
      /**
       * The certificate kinds (ETSI EN 319 412-5 QcType) a bank may sign its answers with: a QSealC,
       * as ingress asks of a TPP's signature (verification.certificateKinds.signature), unless widened.
       */
      certificateKinds: z.array(z.enum(QC_TYPES)).min(1).default(["eseal"]),
      dateToleranceSeconds: seconds(60),
      algorithms: z
        .array(z.enum(["rsa-sha256", "rsa-sha512", "ecdsa-sha256", "hs2019"]))
        .min(1)
        .default(["rsa-sha256"]),
      // Each dialect's keys for checking answers in it: its unit's config fragment (`DialectUnit.config.responses`).
      ...responseFragments(),
      /** A response body larger than this cannot be checked: 502 under enforce, unchecked under advisory. */
      maxBodyBytes: z
        .number()
        .int()
        .positive()
        .default(1024 * 1024),
    })
    .strict()
    .refine((r) => r.mode === "off" || r.caDir !== undefined, {
      message: "response verification needs caDir (the CAs the bank's signing certificate chains to)",
      path: ["caDir"],
    });

const bankProfileOf = () =>
  z
    .object({
      /** Names the bank in metrics, logs and the gateway's own error texts. */
      name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "lower-case letters, digits, '-' and '_'"),
      /** Requests under this path prefix (whole segments) go to this bank, with the prefix removed. */
      prefix: z
        .string()
        .regex(/^\/[^?#]*[^/?#]$/, "a path such as /demo, without a trailing slash")
        .optional(),
      /** Requests with this Host (port ignored) go to this bank. */
      host: z.string().min(1).optional(),
      /** The bank's API base URL; its path is put before the request's path. */
      url: z.url({ protocol: /^https?$/ }),
      /** CA (PEM) for the bank's TLS server certificate; default the system's CAs. */
      ca: path.optional(),
      /** The QWAC, presented for mutual TLS. */
      qwac: credentials.optional(),
      /** The QSealC that signs every request. */
      qseal: credentials,
      /** Added to every request to this bank that does not carry them (TPP-Redirect-URI, …); signed like the rest. */
      defaultHeaders: z.record(wireHeaderName, z.string()).default({}),
      signing: signingRulesOf().prefault({}),
      responses: responseVerificationOf().prefault({}),
      timeoutSeconds: seconds(30),
      connections: z.number().int().positive().default(32),
    })
    .strict()
    .refine((b) => b.prefix !== undefined || b.host !== undefined, {
      message: "a bank profile needs a prefix or a host to be reached by",
    })
    // A dialect whose unit has no response checks cannot have its bank's responses verified.
    .superRefine((b, ctx) => {
      if (b.responses.mode === "off" || dialectUnit(b.signing.dialect)?.responseChecks) return;
      ctx.addIssue({
        code: "custom",
        path: ["responses", "mode"],
        message: `the signing dialect '${b.signing.dialect}' has no response checks in this build: set responses.mode: off for this bank, or sign in a dialect whose responses can be verified`,
      });
    });

/** The bank profiles, with the signing rules of every dialect registered so far. */
const banksOf = () =>
  z
    .array(bankProfileOf())
    .min(1)
    .refine((banks) => new Set(banks.map((b) => b.name)).size === banks.length, "bank names must differ");

const sharedOperations = {
  log: logSchema,
  admin: restartOnly(adminSchema(9091), ADMIN),
  shutdown: configSchema.shape.shutdown,
};

export const egressConfigSchema = z
  .object({
    mode: restartOnly(z.literal("egress"), "a process runs one mode"),
    listen: z
      .object({
        host: restartOnly(z.string().default("127.0.0.1"), LISTENER),
        port: restartOnly(z.number().int().min(0).max(65535).default(8090), LISTENER),
        /** A Unix socket instead of host and port. */
        socket: restartOnly(path.optional(), LISTENER),
        // The application's own connections, from loopback or a Unix socket: one address.
        ...connectionLimits({ maxConnections: 4096, maxConnectionsPerAddress: 4096 }),
      })
      .strict()
      .refine(headersWithinRequest, HEADERS_WITHIN_REQUEST)
      .prefault({}),
    /** A request body larger than this is refused with 413 before anything is signed or sent. */
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024),
    /**
     * Processes sharing the listener (node:cluster), each signing on its own event loop; the
     * primary serves the admin listener for all. Egress keeps no state between requests, so any
     * number is safe.
     */
    workers: restartOnly(z.number().int().min(1).max(64).default(1), WORKERS),
    /** How often the config file is checked for changes (it is also read again on SIGHUP). */
    // A reload sets the watches' pace (app/file-watch.ts `pace`).
    reload: z
      .object({ pollSeconds: z.number().positive().default(10) })
      .strict()
      .prefault({}),
    banks: banksOf(),
    /** Absent: no evidence is kept. A record of every bank answer whose signature was checked (responses.mode advisory or enforce). */
    evidence: restartOnly(evidence.optional(), "the evidence store is opened at start"),
    ...sharedOperations,
  })
  .strict();

export type EgressConfig = z.output<typeof egressConfigSchema>;
export type RevocationConfig = z.output<typeof revocation>;
export type BankProfileConfig = EgressConfig["banks"][number];
export type SigningRulesConfig = z.output<ReturnType<typeof signingRulesOf>>;

/**
 * The egress schema and the signing rules with every dialect registered so far: one registered
 * after this module loaded brings its signing rules; rebuilt once per table size.
 */
let currentEgress = {
  dialects: dialectNames().length,
  schema: egressConfigSchema,
  signing: signingRulesOf(),
};
function egressSchemas(): typeof currentEgress {
  const size = dialectNames().length;
  if (size !== currentEgress.dialects) {
    const schema = egressConfigSchema.safeExtend({
      banks: banksOf(),
    }) as unknown as typeof egressConfigSchema;
    currentEgress = { dialects: size, schema, signing: signingRulesOf() };
  }
  return currentEgress;
}

/** A bank profile's `signing` rules from the given keys and the defaults (`sign --dialect` without a profile). */
export function parseSigningRules(raw: unknown): SigningRulesConfig {
  return egressSchemas().signing.parse(raw);
}
export type CredentialsConfig = z.output<typeof credentials>;
export type AnyGatewayConfig = GatewayConfig | EgressConfig;

/**
 * The ingress schema with every dialect registered so far: one registered after this module loaded
 * (a test's, a build's own) brings its config fragment; rebuilt once per table size.
 */
let current = { dialects: dialectNames().length, schema: configSchema };
function currentConfigSchema(): typeof configSchema {
  const size = dialectNames().length;
  if (size !== current.dialects) {
    const dialects = dialectsSchema().prefault({});
    const schema = configSchema.safeExtend({
      verification: verification.safeExtend({ dialects }).prefault({}),
    }) as unknown as typeof configSchema;
    current = { dialects: size, schema };
  }
  return current.schema;
}

/** Validates `raw`; relative file paths become absolute, relative to `dir` (the config file's folder). */
export function parseConfig(raw: unknown, dir?: string) {
  return withBaseDir(dir, () => currentConfigSchema().safeParse(raw));
}

export function parseEgressConfig(raw: unknown, dir?: string) {
  return withBaseDir(dir, () => egressSchemas().schema.safeParse(raw));
}

function withBaseDir<T>(dir: string | undefined, parse: () => T): T {
  baseDir = dir;
  try {
    return parse();
  } finally {
    baseDir = undefined;
  }
}
