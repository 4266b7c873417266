/**
 * The named steps of a TPP request, in order: cheap first, cached work before fresh work, crypto
 * last. Ingress runs this chain on every request, in every phase (the head, the body as it
 * streams, the backend's answer); `psd2-gateway verify` runs the same chain in explain mode. Each
 * step reads the context and either goes on or returns a Rejection.
 */

import { decodeCertificateHeader } from "../eidas/index.js";
import { isRejection, Rejection, reject } from "../errors.js";
import {
  type AgreedLimit,
  checkReplay,
  type HeldSlot,
  MAX_TRANSACTION_DETAILS_BYTES,
  type ReplayStore,
  replayKeyFor,
  type UnattendedAccessPolicy,
  type UnattendedRequest,
} from "../limits/index.js";
import { type AlgorithmName, expectedKeyId, headerValue } from "../signature/index.js";
import { parseAuthority, servedAuthority } from "./authority.js";
import { type CharacterPolicy, checkHeaderCharacters, Utf8Scanner } from "./characters.js";
import type { CertificateVerifier, CheckContext, TrustedCertificate } from "./context.js";
import {
  type Dialect,
  type DialectSteps,
  type DialectUnit,
  dialectNames,
  dialectUnit,
  type SharedDialectOptions,
} from "./dialects/index.js";
import {
  CAVAGE_ONLY,
  type DialectPolicy,
  dialectChooser,
  headBoundByTls,
  verifiedBeforeSending,
} from "./dialects.js";
import { overrideChecker } from "./overrides.js";
import { checkRequiredHeaders } from "./required-headers.js";
import { ambiguousPath, underPrefix } from "./routes.js";
import type { MaybePromise, Step, StepResult } from "./runner.js";

/** checkRequiredHeaders' two options, made once. */
const REDIRECT_URI_REQUIRED = { requireRedirectUri: true } as const;
const REDIRECT_URI_OPTIONAL = { requireRedirectUri: false } as const;

export interface ClientCertificatePolicy {
  /**
   * `none`: no client certificate is asked for; `request`/`require`: the TLS peer's (or a trusted
   * proxy's) QWAC, judged when present / required; `not-checked`: the connection is not known
   * (`verify` without a config explains a request, not a connection).
   */
  readonly mode: "none" | "request" | "require" | "not-checked";
  /** The QWAC's organizationIdentifier must equal the QSealC's. */
  readonly requireSameOrganization: boolean;
}

/**
 * Signs the backend's responses (ingress `responseSigning`): the body is held, up to
 * `maxBodyBytes`, because its Digest is signed; a larger response is refused, never sent unsigned.
 */
export interface ResponseSigner {
  readonly maxBodyBytes: number;
  /**
   * The headers to add to the response, in the dialect of `request` (draft-cavage: Digest, Date,
   * X-Request-ID, Signature and the certificate; RFC 9421: Content-Digest, X-Request-ID,
   * Signature-Input, Signature and the certificate). `status` is the response's.
   */
  sign(
    body: Buffer,
    headers: Readonly<Record<string, string | string[]>>,
    status: number,
    request: CheckContext,
  ): Promise<Record<string, string>>;
}

export interface CheckOptions {
  readonly now: () => number;
  readonly dateToleranceMs: number;
  readonly algorithms: readonly AlgorithmName[];
  readonly allowDecimalSerial: boolean;
  readonly keyIdPolicy: "strict" | "relaxed";
  /** Lower-case path prefixes under which TPP-Redirect-URI is optional. */
  readonly redirectUriOptionalPrefixes: readonly string[];
  readonly characterPolicy: CharacterPolicy;
  readonly certificates: CertificateVerifier;
  readonly clientCertificate: ClientCertificatePolicy;
  /** The Host names (each optionally with `:port`) the gateway serves; any valid authority when empty. */
  readonly hostNames?: readonly string[];
  /** Replay protection; none in explain mode without a store. */
  readonly replay?: ReplayStore;
  /**
   * The least time a replay record is kept; each is kept at least until its request could no
   * longer pass its time checks (Date, created, expires, sigT, iat) whatever this says.
   */
  readonly replayWindowMs: number;
  /** Fail open instead of 503 when the shared store cannot be reached (replay and limits). */
  readonly storeFailOpen: boolean;
  readonly onStoreError?: (error: unknown) => void;
  /** A request refused as a replay, for metrics. */
  readonly onReplayRefused?: () => void;
  /** The unattended-access limit (SPEC 8); none when switched off. */
  readonly unattended?: UnattendedAccessPolicy;
  /** A bank's own path or method override headers, refused besides the well-known ones. */
  readonly overrideHeaders?: readonly string[];
  /** The largest request body (`verification.maxBodyBytes`); unbounded without it (explain mode). */
  readonly maxBodyBytes?: number;
  /** Signs the backend's responses (config `responseSigning`). */
  readonly responseSigner?: ResponseSigner;
  /** The signing dialects accepted, per path prefix; draft-cavage only without it. */
  readonly dialects?: DialectPolicy;
  /**
   * Each dialect's own options (its config fragment's, e.g. `cavage: { createdForDate: true }`), by
   * the dialect's name; its unit's defaults where absent.
   */
  readonly ownOptions?: Readonly<Record<Dialect, unknown>>;
}

/** A dialect's own options, as CheckOptions holds them (its unit's defaults where absent). */
function ownOptions(options: CheckOptions, unit: DialectUnit): unknown {
  return { ...(unit.defaults as object), ...(options.ownOptions?.[unit.name] as object | undefined) };
}

/** Headers a TPP sends that the checks read or the bank acts on: never spelt with '_'. */
const TPP_HEADER_PREFIXES = ["psu-", "tpp-", "x-psu-"];
const TPP_HEADERS = new Set(["x-request-id", "digest", "signature", "date", "consent-id"]);

/** Separators other than '-' in a (lower-case) header name. */
const NOT_A_DASH = /[^a-z0-9-]/;
const NOT_A_DASH_ALL = /[^a-z0-9-]/g;

function isTppHeader(name: string): boolean {
  return TPP_HEADERS.has(name) || TPP_HEADER_PREFIXES.some((p) => name.startsWith(p));
}

/**
 * Never hop-by-hop: the TPP's headers, the identity headers the gateway adds (their `_`/`.` look-alikes
 * are stripped on the way out instead) and the framing the backend needs.
 */
function isProtectedHeader(name: string): boolean {
  return (
    isTppHeader(name) ||
    name.startsWith("x-tpp-") ||
    name === "content-type" ||
    name === "content-length" ||
    name === "host"
  );
}

/** The expectation Node answers itself (its own pattern, from lib/_http_server.js). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** The steps that need a trusted certificate read it through this. */
const certificateOf = (c: CheckContext) => c.certificate!;

/** The ordered list of named checks, built once from the options. */
export function requestChecks(options: CheckOptions): Step<CheckContext>[] {
  const refuseOverrides = overrideChecker(options.overrideHeaders);
  const maxBody = options.maxBodyBytes ?? Number.POSITIVE_INFINITY;
  const dialects = options.dialects ?? CAVAGE_ONLY;
  const chooseDialect = dialectChooser(dialects);
  const hostNames = (options.hostNames ?? []).map((name) => name.toLowerCase());
  const accepted = new Set([...dialects.accept, ...(dialects.routes ?? []).flatMap((r) => r.accept)]);
  // Only the accepted dialects' steps, each built by its unit: the chain, its metric labels and
  // `verify` name what can refuse.
  const shared: SharedDialectOptions = {
    now: options.now,
    dateToleranceMs: options.dateToleranceMs,
    algorithms: options.algorithms,
    keyIdPolicy: options.keyIdPolicy,
    allowDecimalSerial: options.allowDecimalSerial,
  };
  // In the table's order, whatever the configured preference: the chain's order is fixed.
  const built = dialectNames()
    .filter((d) => accepted.has(d))
    .map((d) => {
      const unit = dialectUnit(d)!;
      return unit.steps(shared, ownOptions(options, unit));
    });
  // A step two units share (the Digest header's) is placed once.
  const slot = (place: keyof Omit<DialectSteps, "longestAcceptanceMs">): Step<CheckContext>[] => [
    ...new Set(built.flatMap((s) => s[place] ?? [])),
  ];
  // Worked out per request without a closure or an options object (issue 42).
  const optionalPrefixes = options.redirectUriOptionalPrefixes;
  const redirectUriOptional = (path: string): boolean => {
    for (let i = 0; i < optionalPrefixes.length; i++)
      if (underPrefix(path, optionalPrefixes[i]!)) return true;
    return false;
  };
  const steps: Step<CheckContext>[] = [
    {
      // RFC 9112 3.2: an HTTP/1.1 request without Host is malformed. Refused in its turn on the
      // connection, which then closes as Node's own check would (the listener turns that off).
      name: "host",
      run: (c) => {
        const host = c.headers.host;
        if (host === undefined) {
          if (c.httpVersion !== "1.1") return undefined;
          c.closeConnection = true;
          return reject("FORMAT_ERROR", "malformed HTTP request: no Host header; HTTP/1.1 requires one");
        }
        // Node keeps the first of two Host lines; a proxy or backend may take the other (RFC 9112 3.2).
        const twoHosts = c.rawHeaders === undefined ? undefined : moreThanOneHost(c.rawHeaders);
        if (twoHosts) {
          c.closeConnection = true;
          return twoHosts;
        }
        // An authority and nothing more (RFC 9110 7.2), one the gateway serves when it names them.
        const authority = parseAuthority(host);
        if (isRejection(authority)) {
          c.closeConnection = true;
          return authority;
        }
        if (hostNames.length > 0 && !servedAuthority(authority, hostNames)) {
          c.closeConnection = true;
          return reject(
            "FORMAT_ERROR",
            `Host '${host.slice(0, 100)}' is not a name this gateway serves; send one of ${hostNames.slice(0, 5).join(", ")}`,
          );
        }
        c.authority = authority;
        return undefined;
      },
    },
    {
      // A declared length over the bound is refused before anything else (the body is never read:
      // the connection closes); a chunked body is counted as it streams.
      name: "body-size",
      run: (c) => {
        const length = Number(c.headers["content-length"] ?? 0);
        if (!(length > maxBody)) return undefined;
        c.closeConnection = true;
        return reject(
          "PAYLOAD_TOO_LARGE",
          `the request body is ${length} bytes; this bank accepts at most ${maxBody}`,
        );
      },
      body: (c, chunk) => {
        c.bodyBytes += chunk.length;
        if (c.bodyBytes <= maxBody) return undefined;
        return reject(
          "PAYLOAD_TOO_LARGE",
          `the request body exceeds ${maxBody} bytes, the most this bank accepts`,
        );
      },
    },
    {
      // Only origin-form targets (a path): an absolute URL would route past the role table. And
      // only paths the backend cannot route differently from the role check.
      name: "request-target",
      run: (c) => {
        if (c.target.charCodeAt(0) !== 0x2f /* / */) {
          return reject(
            "FORMAT_ERROR",
            `request target '${c.target.slice(0, 100)}' is not a path; send the path and query only, e.g. /v1/accounts`,
          );
        }
        const ambiguous = ambiguousPath(c.target);
        return ambiguous === undefined
          ? undefined
          : reject(
              "FORMAT_ERROR",
              `request path '${c.target.slice(0, 100)}' holds ${ambiguous}; send the plain path, e.g. /v1/payments/sepa-credit-transfers`,
            );
      },
    },
    {
      // Names a CGI-style backend would merge with a PSD2 header (PSU_ID and PSU-ID both become
      // HTTP_PSU_ID; Apache maps every character but letters and digits to '_', so PSU.ID too):
      // the backend could read a value nobody signed or checked.
      name: "header-names",
      run: (c) => {
        for (const name in c.headers) {
          if (!NOT_A_DASH.test(name)) continue;
          const readAs = name.replace(NOT_A_DASH_ALL, "-");
          if (isTppHeader(readAs)) {
            return reject(
              "FORMAT_ERROR",
              `header '${name}' would be read as ${readAs} by the bank's systems; send PSD2 headers with '-' only`,
            );
          }
        }
        return undefined;
      },
    },
    {
      // Headers that make the backend serve another path or method than the one checked.
      name: "override-headers",
      run: (c) => refuseOverrides(c.headers, c.target),
    },
    {
      // Only 100-continue is understood (Node's own test); the listener hands the rest over here
      // instead of answering a bare 417.
      name: "expect",
      run: (c) => {
        const expect = c.headers.expect;
        if (expect === undefined || CONTINUE.test(expect)) return undefined;
        return reject(
          "FORMAT_ERROR",
          `Expect '${expect.slice(0, 100)}' cannot be met; send no Expect header, or Expect: 100-continue`,
        );
      },
    },
    {
      // Which signature the request is verified by: the path's preferred dialect among those it carries.
      name: "dialect",
      run: (c) => {
        const dialect = chooseDialect(c.headers, c.route.path);
        if (isRejection(dialect)) return dialect;
        c.dialect = dialect;
        return undefined;
      },
    },
    {
      name: "required-headers",
      run: (c) =>
        checkRequiredHeaders(
          c.headers,
          dialectUnit(c.dialect),
          redirectUriOptional(c.route.path) ? REDIRECT_URI_OPTIONAL : REDIRECT_URI_REQUIRED,
        ),
    },
    {
      name: "header-characters",
      run: (c) => checkHeaderCharacters(c.headers, options.characterPolicy),
    },
    ...slot("time"),
    ...slot("digest"),
    ...slot("parse"),
    {
      // A header named in Connection is removed before forwarding (RFC 9110 7.6.1): naming a
      // signed or PSD2 header would make the backend act on less than was verified.
      name: "connection-header",
      run: (c) => {
        const connection = c.headers.connection;
        if (connection === undefined) return undefined;
        const signed = c.signedHeaders;
        for (const token of connection.split(",")) {
          const name = token.trim().toLowerCase();
          if (name !== "" && (signed.includes(name) || isProtectedHeader(name))) {
            return reject(
              "FORMAT_ERROR",
              `Connection header names '${name}', which would remove it before the bank sees it; list only hop-by-hop options such as keep-alive or close`,
            );
          }
        }
        return undefined;
      },
    },
    {
      // Cached per certificate: parse, PSD2 QCStatement, chain, revocation, register, roles.
      name: "certificate",
      run: (c) => {
        const sent = headerValue(c.headers, "tpp-signature-certificate");
        if (c.signingCertificate !== undefined && sent !== undefined) {
          // The backend gets the request's headers: a certificate header there must be the one verified.
          const other = notTheSigningCertificate(sent, c.signingCertificate);
          if (other) return other;
        }
        const verdict = options.certificates.verify(c.signingCertificate ?? sent!);
        return verdict instanceof Promise ? acceptWhenJudged(verdict, c) : acceptCertificate(c, verdict);
      },
    },
  ];
  const { mode } = options.clientCertificate;
  const boundByTls = headBoundByTls(accepted);
  if (mode === "none" && boundByTls.length > 0) {
    throw new Error(
      `the signing dialect '${boundByTls[0]}' signs the body only, so its requests must come over mutual TLS; set listen.clientCertificate to request or require`,
    );
  }
  if (mode === "request" || mode === "require") {
    steps.push({
      // The QWAC of an mTLS connection: trusted, and the same organisation as the QSealC.
      name: "client-certificate",
      run: (c) => checkClientCertificate(c, options),
    });
  }
  steps.push(...slot("keyId"), ...slot("verify"), {
    name: "role",
    run: (c) => {
      const { role, path } = c.route;
      const { identity } = certificateOf(c);
      if (role === undefined || identity.roles.has(role)) return undefined;
      const held = [...identity.roles].join(", ") || "none";
      return reject(
        "ROLE_INVALID",
        `${path} needs the PSD2 role ${role}; the certificate and register grant ${identity.organizationId} only: ${held}`,
      );
    },
  });
  const unattended = options.unattended;
  if (unattended?.checksPeriod) steps.push(unattendedPeriodStep(unattended, options.now));
  const replay = options.replay;
  if (replay) {
    const replayOptions = {
      failOpen: options.storeFailOpen,
      onStoreError: options.onStoreError,
    };
    // A dialect whose time step set no bound would be a bug: its record then lives as long as any
    // accepted request could (Date or created up to the tolerance ahead, plus its own window).
    const longest = Math.max(2 * options.dateToleranceMs, ...built.map((s) => s.longestAcceptanceMs));
    const counted = (fresh: true | Rejection): StepResult => {
      if (fresh === true) return undefined;
      if (fresh.code === "SIGNATURE_INVALID") options.onReplayRefused?.();
      return fresh;
    };
    steps.push({
      // The same signed content again inside the window (keyed on what was signed, not on the signature).
      name: "replay",
      run: (c) => {
        // The key's identity, not the spelling sent: keyId is not signed.
        const key = replayKeyFor(expectedKeyId(certificateOf(c).keyIdTarget), c.signedWith, c.signingString!);
        const now = options.now();
        const until = Number.isFinite(c.acceptedUntil) ? c.acceptedUntil : now + longest;
        // Kept until the request could no longer pass its time checks, on any gateway sharing the store.
        const windowMs = Math.max(until - now + 1 + REPLAY_CLOCK_MARGIN_MS, options.replayWindowMs);
        const fresh = checkReplay(replay, key, windowMs, replayOptions);
        return fresh instanceof Promise ? fresh.then(counted) : counted(fresh);
      },
    });
  }
  if (unattended) steps.push(unattendedStep(unattended, options.now));
  steps.push({
    // SPEC 1.3: UTF-8 JSON, and the character policy, checked as the body streams (after every
    // step of the head, whose phase comes first).
    name: "body-characters",
    body: (c, chunk) => {
      c.bodyCharacters ??= new Utf8Scanner(options.characterPolicy, "the JSON body", true);
      return c.bodyCharacters.update(chunk);
    },
    bodyEnd: (c) => c.bodyCharacters?.finish(),
  });
  if (options.responseSigner) steps.push(responseSigningStep(options.responseSigner));
  for (const dialect of accepted) {
    // A name from outside the table (a config not checked by the schema) has no unit at all.
    const unit: DialectUnit | undefined = dialectUnit(dialect);
    if (!unit || !steps.some((s) => s.name === unit.signatureStep)) {
      throw new Error(`the signing dialect '${dialect}' is accepted but the chain cannot verify it`);
    }
  }
  return steps;
}

const UNATTENDED_PERIOD = "unattended-period";

/**
 * The refusal of a head with more than one Host line (names at the even places of rawHeaders):
 * Node keeps the first, a proxy or backend may take another (RFC 9112 3.2). Both modes ask it.
 */
export function moreThanOneHost(raw: readonly string[]): Rejection | undefined {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") count++;
  }
  return count > 1
    ? reject(
        "FORMAT_ERROR",
        "malformed HTTP request: more than one Host header; send exactly one (RFC 9112 3.2)",
      )
    : undefined;
}

/**
 * Unattended balance and transaction reads: one slot of the window reserved (SPEC 8), under the
 * limit the TPP agreed where it has one (limits/agreements.ts). Its response phase takes the
 * backend's word on a consent's frequencyPerDay out of the answer and remembers it.
 */
function unattendedStep(unattended: UnattendedAccessPolicy, now: () => number): Step<CheckContext> {
  // The promise continuations live in functions of their own: a closure in `admit` or `run` would
  // make V8 allocate a context on every call, promise or not (issue 42).
  const admit = (c: CheckContext, request: UnattendedRequest, agreed: AgreedLimit | undefined) => {
    c.unattendedLimit = agreed;
    const admitted = unattended.admit(request, agreed);
    return admitted instanceof Promise ? heldWhenAdmitted(admitted, c) : held(c, admitted);
  };
  const held = (c: CheckContext, slot: HeldSlot | Rejection | undefined): StepResult => {
    if (isRejection(slot)) return slot;
    c.slot = slot;
    return undefined;
  };
  const heldWhenAdmitted = (admitted: Promise<HeldSlot | Rejection | undefined>, c: CheckContext) =>
    admitted.then((s) => held(c, s));
  const admitWhenKnown = (
    agreed: Promise<AgreedLimit | undefined>,
    c: CheckContext,
    request: UnattendedRequest,
  ) => agreed.then((a) => admit(c, request, a));
  return {
    name: "unattended",
    run: (c) => {
      const identity = certificateOf(c).identity;
      const request: UnattendedRequest = {
        method: c.method,
        target: c.target,
        routingPath: c.route.path,
        headers: c.headers,
        organizationId: identity.organizationId,
        registerLimits: identity.agreedLimits,
        now: now(),
      };
      const agreed = unattended.agreedLimit(request);
      return agreed instanceof Promise ? admitWhenKnown(agreed, c, request) : admit(c, request, agreed);
    },
    // Only with a header to read: a step without a response phase costs the answer nothing.
    ...(unattended.learnsConsentFrequency
      ? {
          response: (
            c: CheckContext,
            status: number,
            received: Readonly<Record<string, string | string[] | undefined>>,
            send: Record<string, string | string[]>,
          ) => {
            unattended.learnConsentFrequency(
              status,
              received,
              send,
              c.headers["consent-id"],
              c.organizationId,
            );
            return undefined;
          },
        }
      : {}),
  };
}
/** How far apart the clocks of gateways sharing one replay store may be (NTP keeps them far closer). */
export const REPLAY_CLOCK_MARGIN_MS = 1000;
/** The step name the gateway's refusals of a response it cannot sign carry. */
export const RESPONSE_SIGNING = "response-signing";

/** A 2xx answer is the bank's data; anything else (an SCA redirect, an error) carries none. */
const isSuccess = (status: number) => status >= 200 && status < 300;

/**
 * Unattended transaction reads reach back at most `maxTransactionAgeDays` (SPEC 8), refused rather
 * than capped so the TPP sees why: a list's dateFrom is checked here, before the slot is reserved
 * (a refusal costs none of the 4 calls and never reaches the bank); a transaction's details can
 * only be dated from the bank's answer, which this step's response phases hold and judge.
 */
function unattendedPeriodStep(unattended: UnattendedAccessPolicy, now: () => number): Step<CheckContext> {
  return {
    name: UNATTENDED_PERIOD,
    run: (c) => {
      const rule = unattended.periodRule(c.method, c.route.path, c.headers);
      if (rule === "dateFrom") return unattended.checkDateFrom(c.target, now());
      if (rule === "bookingDate") c.periodCheckedAt = now();
      return undefined;
    },
    // A 2xx answer is the bank's data (an SCA redirect or an error carries none): held, and
    // withheld with 502 when it is too large to date.
    response: (c, status) =>
      c.periodCheckedAt !== undefined && isSuccess(status)
        ? { maxBodyBytes: MAX_TRANSACTION_DETAILS_BYTES }
        : undefined,
    responseBody: (c, body, received) =>
      unattended.checkTransactionDetails(body, headerValue(received, "content-encoding"), c.periodCheckedAt!),
  };
}

/** The step that signs the backend's answers (SPEC 5.10): held whole, never sent unsigned. */
function responseSigningStep(signer: ResponseSigner): Step<CheckContext> {
  const tooLarge = reject(
    "BAD_GATEWAY",
    `the bank's response is larger than ${signer.maxBodyBytes} bytes (responseSigning.maxBodyBytes) and cannot be signed; it is never sent unsigned`,
  );
  return {
    name: RESPONSE_SIGNING,
    response: (c, status) => {
      c.responseStatus = status;
      return { maxBodyBytes: signer.maxBodyBytes, tooLarge: () => tooLarge };
    },
    responseBody: async (c, body, _received, send) => {
      let signed: Record<string, string>;
      try {
        signed = await signer.sign(body, send, c.responseStatus, c);
      } catch (error) {
        return reject(
          "BAD_GATEWAY",
          `the bank's response could not be signed (${(error as Error).message}); it is never sent unsigned`,
        );
      }
      for (const [name, value] of Object.entries(signed)) {
        delete send[name.toLowerCase()];
        send[name] = value;
      }
      return undefined;
    },
  };
}

function acceptCertificate(c: CheckContext, verdict: TrustedCertificate | Rejection): StepResult {
  c.trustReport = verdict.reportId;
  if (isRejection(verdict)) {
    // A JWS dialect's certificate came in x5c: the verdict's texts name the header draft-cavage uses.
    return c.signingCertificate === undefined
      ? verdict
      : new Rejection(
          verdict.code,
          verdict.text.replace(/^TPP-Signature-Certificate( header)?/, "x5c[0] of the JWS"),
          verdict.retryAfterSeconds,
          verdict.reportId,
        );
  }
  c.certificate = verdict;
  return undefined;
}

/**
 * A JWS dialect carries its certificate in `x5c`; a TPP-Signature-Certificate beside it is refused
 * unless it is that same certificate (whatever its encoding), since the backend would read it as
 * the one the gateway verified.
 */
function notTheSigningCertificate(sent: string, x5c: string): Rejection | undefined {
  if (sent === x5c) return undefined;
  const der = decodeCertificateHeader(sent);
  if (!isRejection(der) && Buffer.from(der).equals(Buffer.from(x5c, "base64"))) return undefined;
  return reject(
    "CERTIFICATE_INVALID",
    "TPP-Signature-Certificate is not the certificate the JWS names first in x5c; send the same QSealC in both, or leave TPP-Signature-Certificate out",
  );
}

// Promise continuations in functions of their own: a closure in a step's `run` would make V8
// allocate a context on every request, promise or not (issue 42).
function acceptWhenJudged(
  verdict: Promise<TrustedCertificate | Rejection>,
  c: CheckContext,
): Promise<StepResult> {
  return verdict.then((v) => acceptCertificate(c, v));
}

function sameOrganizationWhenJudged(
  verdict: Promise<TrustedCertificate | Rejection>,
  c: CheckContext,
  options: CheckOptions,
): Promise<StepResult> {
  return verdict.then((v) => sameOrganization(c, v, options));
}

function checkClientCertificate(c: CheckContext, options: CheckOptions): MaybePromise<StepResult> {
  if (c.clientCertificate === undefined) {
    if (verifiedBeforeSending(c.dialect)) {
      // Its signature covers the body only: the QWAC is what binds method, path and PSU-ID to the TPP.
      return reject(
        "CERTIFICATE_MISSING",
        `no TLS client certificate was presented; a ${c.dialect} signature covers the body only, so the request's method, path and headers are bound to your organisation by mutual TLS: connect with your eIDAS QWAC`,
      );
    }
    if (options.clientCertificate.mode === "require") {
      return reject(
        "CERTIFICATE_MISSING",
        "no TLS client certificate was presented; connect with your eIDAS QWAC (mutual TLS)",
      );
    }
    return undefined;
  }
  const verdict = options.certificates.verify(c.clientCertificate, "qwac");
  return verdict instanceof Promise
    ? sameOrganizationWhenJudged(verdict, c, options)
    : sameOrganization(c, verdict, options);
}

function sameOrganization(
  c: CheckContext,
  qwac: TrustedCertificate | Rejection,
  options: CheckOptions,
): StepResult {
  if (isRejection(qwac)) {
    c.trustReport = qwac.reportId ?? c.trustReport;
    return new Rejection(
      qwac.code,
      `TLS client certificate (QWAC): ${qwac.text}`,
      qwac.retryAfterSeconds,
      qwac.reportId,
    );
  }
  const seal = certificateOf(c).identity.organizationId;
  const mustMatch = options.clientCertificate.requireSameOrganization || verifiedBeforeSending(c.dialect);
  if (mustMatch && qwac.identity.organizationId !== seal) {
    return reject(
      "CERTIFICATE_INVALID",
      `the TLS client certificate belongs to ${qwac.identity.organizationId} but the signing certificate to ${seal}; both must name the same TPP`,
    );
  }
  return undefined;
}
