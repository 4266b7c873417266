/**
 * The ingress side of a fuzz run: an ingress gateway process over TLS on loopback, response
 * signing on (the bank's QSealC), in front of a recording backend; what every exchange with it
 * must meet besides exchange-check.ts's shared invariants:
 *
 * - nothing leaves the gateway but signed backend answers and tppMessages refusals; nothing after
 *   an answer that closes the connection;
 * - every backend answer reaches the client signed in its request's dialect: for draft-cavage
 *   Signature, Digest over the exact body, Date, X-Request-ID of its request and the bank's
 *   certificate header, verified with the egress StepsResponseVerifier; for RFC 9421 (the gateway
 *   accepts draft-cavage, RFC 9421, JAdES and UK OB, draft-cavage preferred) a FAPI 2.0 response
 *   signature bound to the request, verified with the egress StepsResponseVerifier; for JAdES an
 *   x-jws-signature over Digest and X-Request-ID, the bank's QSealC in x5c, verified with the egress
 *   StepsResponseVerifier; for UK Open Banking an x-jws-signature over the body (crit of
 *   openbanking.org.uk claims), verified with the egress StepsResponseVerifier; its status and body are the backend's, and its framing too (a HEAD
 *   answer keeps the backend's Content-Length, a 204 or 304 gets none of the gateway's);
 * - a backend answer over responseSigning.maxBodyBytes is a 502 tppMessages body that carries none
 *   of the backend's bytes;
 * - no replay passes (a signed request reaches the backend at most once), and a request the
 *   gateway refused (by its X-Request-ID) was never executed;
 * - the backend never sees a spoofed identity value; a forwarded request carries its signer's
 *   identity, the headers and the target it must.
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import {
  cavageResponseChecks,
  jadesResponseChecks,
  rfc9421ResponseChecks,
  StepsResponseVerifier,
  ukObResponseChecks,
} from "../../src/checks/index.js";
import { TppVerifier } from "../../src/eidas/index.js";
import { loadTrustMaterial } from "../../src/trust/trust-material.js";
import { type KeyDirectoryServer, startKeyDirectory } from "../helpers/key-directory.js";
import { type BackendRecord, type FuzzBackend, PAD_MARKER, startFuzzBackend } from "./backend.js";
import { fuzzEvidenceConfig } from "./evidence.js";
import {
  type ArrivedRecord,
  type Exchange,
  type MakeViolation,
  type Sentinel,
  Target,
  type Wording,
} from "./exchange-check.js";
import { type FuzzGateway, startFuzzGateway } from "./gateway.js";
import { type ClientCertificate, type ExchangePlan, type ParsedResponse, RawClient } from "./raw-client.js";
import type { CasePlan, ExchangeResult } from "./types.js";
import { type Checker, describe, isTppMessages, sha256Base64, type Violation } from "./verdicts.js";

export const MAX_BODY_BYTES = 65_536;
/**
 * The ingress gateway's responseSigning.maxBodyBytes: smaller than the 1 MiB default so that
 * answers over it (and at it) cost the run little; the backend's large shapes are sized from it.
 */
export const RESPONSE_SIGNING_MAX_BYTES = 131_072;
/** The header the ingress gateway puts the bank's QSealC in (the config default). */
const BANK_CERTIFICATE_HEADER = "aspsp-signature-certificate";
/** The header the fuzz backend tells the gateway a consent's frequencyPerDay in (gateway-only). */
const CONSENT_FREQUENCY_HEADER = "x-consent-frequency-per-day";

const WORDS: Wording = {
  kindPrefix: "gateway",
  gateway: "the gateway",
  reader: "client",
  backend: "backend",
  forward: "a valid request is forwarded and answered by the backend",
  noExecute: "the backend never receives the whole of a body that fails a check",
  detailed: true,
};

/** The ingress side of a run: its gateway, backend, TLS client and the verifier of signed answers. */
export interface IngressSide {
  readonly backend: FuzzBackend;
  readonly gateway: FuzzGateway;
  readonly client: RawClient;
  readonly verifier: StepsResponseVerifier;
  /** The same for answers to RFC 9421 requests (a FAPI 2.0 response signature). */
  readonly rfc9421Verifier: StepsResponseVerifier;
  /** The same for answers to JAdES requests (x-jws-signature over Digest and X-Request-ID). */
  readonly jadesVerifier: StepsResponseVerifier;
  /** The same for answers to UK Open Banking requests (x-jws-signature over the body). */
  readonly ukObVerifier: StepsResponseVerifier;
  /** The bank QSealC as the certificate header must carry it. */
  readonly bankCertificate: string;
  /** The TPPs' key directory the gateway resolves a kid in (the `keys` family). */
  readonly keyDirectory: KeyDirectoryServer;
}

/**
 * What the `keys` family's directory serves (families/keys.ts): TPP A's JWKS with two kids of its
 * QSealC, TPP B's with one of its own, and documents that are slow, huge and down.
 */
export const KEY_DIRECTORY = {
  software: "fuzz",
  aKids: ["key-a1", "key-a2"],
  bKid: "key-b1",
  bad: { slow: "slow", huge: "huge", down: "down" },
  /** The gateway's keys.keyTtlSeconds: a key removed from its JWKS is refused this long after. */
  keyTtlSeconds: 2,
  /** Where the `removed` kind publishes a key, then removes it: `${prefix}<case>` (one document each). */
  removedPrefix: "removed-",
} as const;

async function startFuzzKeyDirectory(pki: DevPki, dir: string) {
  const directory = await startKeyDirectory(pki);
  const at = (org: string, software: string) => `/${org}/${software}.jwks`;
  const { software, aKids, bKid, bad } = KEY_DIRECTORY;
  directory.publish(
    at(pki.tppA.organizationId, software),
    aKids.map((kid) => ({ kid, der: pki.tppA.qseal.der })),
  );
  directory.publish(at(pki.tppB.organizationId, software), [{ kid: bKid, der: pki.tppB.qseal.der }]);
  for (const behaviour of Object.values(bad)) {
    directory.publish(at(pki.tppA.organizationId, behaviour), []);
    directory.behave(behaviour, at(pki.tppA.organizationId, behaviour));
  }
  const ca = join(dir, "key-directory-ca.pem");
  writeFileSync(ca, directory.ca);
  // TPP A's QSealC kept by the bank: a JAdES x5t#S256 naming it resolves from the first request on.
  const files = join(dir, "key-files.pem");
  writeFileSync(files, pki.tppA.qseal.pem);
  const keys = {
    files: [files],
    directories: [{ url: `${directory.origin}/{org-id}/{software-statement-id}.jwks` }],
    ca,
    timeoutSeconds: 1,
    // Short enough that a removed key is refused within a case (families/keys.ts `removed`); the
    // documents fetched again as often, so that a key still listed never goes stale meanwhile.
    keyTtlSeconds: KEY_DIRECTORY.keyTtlSeconds,
    refreshSeconds: 1,
    unknownKidIntervalSeconds: 1,
  };
  return { directory, keys };
}

/**
 * Checks the bank's signed answers as a TPP would: egress mode's StepsResponseVerifier (draft-cavage)
 * StepsResponseVerifier (RFC 9421) and StepsResponseVerifier (JAdES) on the dev trust dir.
 */
function bankResponseVerifiers(pki: DevPki): {
  verifier: StepsResponseVerifier;
  rfc9421Verifier: StepsResponseVerifier;
  jadesVerifier: StepsResponseVerifier;
  ukObVerifier: StepsResponseVerifier;
} {
  const trust = loadTrustMaterial(pki.paths.trustDir);
  const certificates = new TppVerifier({
    trustStore: () => trust.store,
    revocation: () => trust.revocation,
    cacheTtlMs: 300_000,
    failureTtlMs: 10_000,
    maxEntries: 100,
  });
  return {
    verifier: new StepsResponseVerifier(
      cavageResponseChecks({
        certificates,
        certificateHeader: BANK_CERTIFICATE_HEADER,
        dateToleranceMs: 60_000,
        algorithms: ["rsa-sha256"],
      }),
    ),
    rfc9421Verifier: new StepsResponseVerifier(
      rfc9421ResponseChecks({
        certificates,
        certificateHeader: BANK_CERTIFICATE_HEADER,
        dateToleranceMs: 60_000,
        algorithms: ["rsa-pss-sha512"],
      }),
    ),
    jadesVerifier: new StepsResponseVerifier(
      jadesResponseChecks({
        certificates,
        dateToleranceMs: 60_000,
        algorithms: ["PS256", "ES256"],
      }),
    ),
    ukObVerifier: new StepsResponseVerifier(
      ukObResponseChecks({
        certificates,
        dateToleranceMs: 60_000,
        algorithms: ["PS256"],
        tan: ["openbanking.org.uk"],
      }),
    ),
  };
}

export async function startIngressSide(
  pki: DevPki,
  dir: string,
  concurrency: number,
  eagerPerMille: number,
  /** FUZZ_EVIDENCE: the gateway keeps evidence in `dir`/evidence (evidence.ts). */
  evidence = false,
): Promise<IngressSide> {
  const { verifier, rfc9421Verifier, jadesVerifier, ukObVerifier } = bankResponseVerifiers(pki);
  const backend = await startFuzzBackend({
    boundBytes: RESPONSE_SIGNING_MAX_BYTES,
    eagerPerMille,
    gatewayOnlyHeader: CONSENT_FREQUENCY_HEADER,
  });
  const { directory, keys } = await startFuzzKeyDirectory(pki, dir);
  try {
    const gateway = await startFuzzGateway({
      pki,
      dir,
      backendUrl: backend.url,
      concurrency,
      config: {
        // UK OB signs the body only: its requests come over mutual TLS with the QWAC of the TPP of
        // their x5c (the client picks it, below); the other families connect without one.
        listen: { clientCertificate: "request" },
        verification: {
          // hs2019 for the cavage-12 family (the algorithm from the key).
          algorithms: ["rsa-sha256", "ecdsa-sha256", "hs2019"],
          maxBodyBytes: MAX_BODY_BYTES,
          // draft-cavage preferred (what every family but rfc9421, jades and uk-ob signs); RFC 9421,
          // JAdES and UK Open Banking with their defaults; a signed (created) may stand for Date, as
          // in config/default.yaml.
          dialects: {
            accept: ["cavage", "rfc9421", "jades", "uk-ob"],
            cavage: { createdForDate: true },
          },
        },
        backend: { timeoutSeconds: 3 },
        store: { type: "memory" },
        // The backend tells consents' frequencyPerDay on every answer; the client must never see it.
        limits: { unattended: { consentFrequencyHeader: CONSENT_FREQUENCY_HEADER } },
        keys,
        // As config/default.yaml: the backend's answers signed with the bank's QSealC.
        responseSigning: {
          qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey },
          maxBodyBytes: RESPONSE_SIGNING_MAX_BYTES,
        },
        ...(evidence ? { evidence: fuzzEvidenceConfig(dir) } : {}),
      },
    });
    const client = new RawClient({
      host: "127.0.0.1",
      port: gateway.port,
      tls: { ca: pki.root.pem, servername: "localhost" },
      clientCertificateFor: (plan) => ukObQwacFor(pki, plan),
    });
    return {
      backend,
      gateway,
      client,
      verifier,
      rfc9421Verifier,
      jadesVerifier,
      ukObVerifier,
      bankCertificate: pki.bankQseal.headerValue,
      keyDirectory: directory,
    };
  } catch (error) {
    await backend.close();
    await directory.close();
    throw error;
  }
}

/**
 * The QWAC a plan's connection presents: for a UK OB request, that of the TPP its x5c names (TPP B's
 * for B's QSealC, TPP A's for every other, A's organisation or refused before the QWAC counts).
 */
function ukObQwacFor(pki: DevPki, plan: ExchangePlan): ClientCertificate | undefined {
  for (const { data } of plan.writes) {
    const text = data.toString("latin1");
    const at = text.search(/\r\nx-jws-signature:[ \t]*/i);
    if (at < 0) continue;
    const value = /\r\nx-jws-signature:[ \t]*([^\r\n]*)/i.exec(text.slice(at))?.[1]?.trim();
    if (value === undefined || !isUkObJws(value)) continue;
    const tpp = firstX5c(value) === pki.tppB.qseal.headerValue ? pki.tppB : pki.tppA;
    return { name: tpp === pki.tppB ? "tpp-b" : "tpp-a", cert: tpp.qwac.pem, key: tpp.qwac.keyPem };
  }
  return undefined;
}

/** x5c[0] of a detached JWS's protected header, when it has one. */
/** Whether a JWS's protected header's crit names the openbanking.org.uk claims (UK OB, not JAdES). */
function isUkObJws(jws: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(jws.slice(0, jws.indexOf(".")), "base64url").toString("utf8")) as {
      crit?: unknown;
    };
    return (
      Array.isArray(header.crit) &&
      header.crit.some((name) => typeof name === "string" && name.startsWith("http://openbanking.org.uk/"))
    );
  } catch {
    return false;
  }
}

function firstX5c(jws: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(jws.slice(0, jws.indexOf(".")), "base64url").toString("utf8")) as {
      x5c?: unknown;
    };
    return Array.isArray(header.x5c) && typeof header.x5c[0] === "string" ? header.x5c[0] : undefined;
  } catch {
    return undefined;
  }
}

export class IngressTarget extends Target {
  /** X-Request-IDs the gateway refused (count), and those answered by the backend (count). */
  private readonly refusedIds = new Map<string, number>();
  private readonly backendAnsweredIds = new Map<string, number>();

  constructor(
    checker: Checker,
    readonly side: IngressSide,
  ) {
    super(checker, side.client, side.backend, WORDS);
  }

  protected sentinel(n: number): Sentinel {
    const id = `fuzz-sentinel-${n}`;
    const tag = `sentinel.${n}`;
    return {
      request: { tag, requestId: id, label: "sentinel", expect: "refuse" },
      data: Buffer.from(
        `GET /v1/accounts?fz=${tag} HTTP/1.1\r\nHost: localhost\r\nX-Request-ID: ${id}\r\n\r\n`,
        "latin1",
      ),
      id,
    };
  }

  async exchange(family: string, caseIndex: number, plan: CasePlan): Promise<ExchangeResult> {
    const x = await this.start(family, caseIndex, plan);
    const { checker, backend } = this;
    const { v, labels, requests, outcome, bodiless, stats, refusals, sentinelId } = x;
    const idCounts = new Map<string, number>();
    for (const r of requests)
      if (r.requestId) idCounts.set(r.requestId, (idCounts.get(r.requestId) ?? 0) + 1);
    const indexOfId = new Map<string, number>();
    requests.forEach((r, i) => {
      if (r.requestId && idCounts.get(r.requestId) === 1) indexOfId.set(r.requestId, i);
    });

    const signatureChecks: Promise<void>[] = [];
    let lastWasFinal: ParsedResponse | undefined;
    for (const [position, r] of outcome.responses.entries()) {
      const tpp = isTppMessages(r);
      const seqText = r.headers["x-backend-seq"];
      const rid = r.headers["x-request-id"];
      // A 502 that stands in for a backend answer too large to sign, on this connection.
      const replaced =
        seqText === undefined && r.status === 502 && tpp && rid !== undefined
          ? backend
              .byRequestId(rid)
              .find((y) => y.answer?.overBound === true && !y.answered && x.indexOf(y.tag) !== undefined)
          : undefined;
      // What the backend meant for the gateway alone never reaches the client.
      checker.check(r.headers[CONSENT_FREQUENCY_HEADER] === undefined, () =>
        v(
          "gateway-only-header",
          labels,
          `the backend's ${CONSENT_FREQUENCY_HEADER} is taken out of every answer`,
          `response #${position}: ${describe(r)} carries it`,
        ),
      );
      // 5xx of the gateway's own.
      x.checkNo500(position, r);
      if (seqText === undefined) x.checkNo5xx(position, r, replaced !== undefined);
      // Nothing but signed backend answers and tppMessages refusals leaves the gateway (a refusal
      // of a HEAD request has no body to hold them).
      if (seqText === undefined)
        checker.check(
          tpp !== undefined ||
            (bodiless.has(position) && r.status >= 400 && /json/.test(r.headers["content-type"] ?? "")),
          () =>
            v(
              "unsigned-answer",
              labels,
              "every answer is the backend's (signed) or a tppMessages refusal",
              `response #${position}: ${describe(r)}`,
            ),
        );
      checker.check(lastWasFinal === undefined, () =>
        v(
          "answer-after-close",
          labels,
          "nothing after an answer that closes the connection",
          `response #${position} (${describe(r)}) after ${describe(lastWasFinal)}`,
        ),
      );
      let index: number | undefined;
      if (seqText !== undefined) {
        const found = x.backendAnswer(seqText);
        if (!found) continue;
        const { record } = found;
        index = found.index;
        if (rid !== undefined) this.countId(this.backendAnsweredIds, rid);
        const expected = record.answer;
        checker.check(
          expected !== undefined &&
            !expected.overBound &&
            r.status === expected.status &&
            sha256Base64(r.body) === expected.sha256,
          () =>
            v(
              "answer-mismatch",
              labels,
              expected === undefined
                ? "no answer from a backend that never answered"
                : expected.overBound
                  ? `a 502 instead of the backend's ${expected.shape} answer over ${RESPONSE_SIGNING_MAX_BYTES} bytes`
                  : `${expected.status} with the backend's ${expected.shape} body for seq ${record.seq} (${expected.bodyBytes} bytes)`,
              `${r.status} ${r.body.length} bytes: ${r.body.toString("latin1").slice(0, 160)}`,
            ),
        );
        this.checkFraming(r, record, bodiless.has(position), (got) =>
          v(
            "answer-framing",
            labels,
            `the backend's framing: ${
              bodiless.has(position)
                ? `a HEAD answer's Content-Length is the backend's (${expected?.contentLength ?? "none"})`
                : `no Content-Length on a ${r.status}`
            }`,
            `response #${position} ${got}`,
          ),
        );
        signatureChecks.push(this.checkSignedAnswer(r, record, position, labels, v));
        x.delivered(record, r);
      } else if (replaced) {
        replaced.answered = true;
        this.countId(this.backendAnsweredIds, rid!);
        index = x.indexOf(replaced.tag);
        checker.check(
          tpp!.code === "BAD_GATEWAY" &&
            tpp!.text.includes("responseSigning.maxBodyBytes") &&
            !r.body.includes(PAD_MARKER) &&
            !r.body.includes(`"seq":${replaced.seq},`) &&
            r.headers[BANK_CERTIFICATE_HEADER] === undefined &&
            r.headers["signature"] === undefined,
          () =>
            v(
              "over-bound-answer",
              labels,
              `a 502 BAD_GATEWAY tppMessages body naming responseSigning.maxBodyBytes, none of the backend's ${replaced.answer!.bodyBytes} bytes`,
              `response #${position}: ${describe(r)} (${r.body.length} bytes)`,
            ),
        );
        x.delivered(replaced, r);
      } else {
        if (tpp && rid !== undefined) {
          this.countId(this.refusedIds, rid);
          if (!refusals.has(rid)) refusals.set(rid, r);
          index = indexOfId.get(rid);
          if (rid !== sentinelId) stats.refused++;
        } else if (tpp) {
          stats.refused++;
        }
        // An answer without an id that closes the connection (Node's parser gave up): nothing may follow.
        if (rid === undefined && /close/i.test(r.headers["connection"] ?? "")) lastWasFinal = r;
      }
      x.checkOrder(position, r, index);
    }
    await Promise.all(signatureChecks);
    return x.finish({
      request: (r, records, info) => {
        if (records.length === 0) return;
        const distinct = new Set(records.map((y) => y.seq));
        const ok = checker.check(distinct.size <= 1, () =>
          v(
            "replay-passed",
            r.label,
            "the same signed request executed at most once",
            `the backend received it ${records.length} times (seq ${[...distinct].join(", ")})`,
          ),
        );
        if (!ok) info.reported = true;
      },
      record: (arrived) => this.checkRecord(x, arrived),
    });
  }

  private countId(counts: Map<string, number>, id: string): void {
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }

  /**
   * A backend answer keeps the framing the backend gave it: an answer to HEAD carries the
   * backend's Content-Length (the length a GET would have), a 204 none, a 304 none unless the
   * backend's; anything else a Content-Length (if any) equal to its body.
   */
  private checkFraming(
    r: ParsedResponse,
    record: BackendRecord,
    head: boolean,
    violation: (got: string) => Violation,
  ): void {
    const declared = r.headers["content-length"];
    const backend = record.answer?.contentLength;
    let ok: boolean;
    if (head) ok = declared === undefined || declared === String(backend);
    else if (r.status === 204) ok = declared === undefined && r.headers["transfer-encoding"] === undefined;
    else if (r.status === 304) ok = declared === undefined || declared === String(backend);
    else ok = declared === undefined || declared === String(r.body.length);
    this.checker.check(ok, () =>
      violation(
        `${r.status} with content-length: ${declared ?? "(none)"} (the backend declared ${backend ?? "none"})`,
      ),
    );
  }

  /** A backend answer as the client got it: signed by the bank's QSealC, over these bytes, for this request. */
  private async checkSignedAnswer(
    r: ParsedResponse,
    record: BackendRecord,
    position: number,
    labels: string,
    v: MakeViolation,
  ): Promise<void> {
    const { verifier, rfc9421Verifier, jadesVerifier, ukObVerifier, bankCertificate } = this.side;
    const requestId = record.requestId ?? "";
    const request = { method: record.method, target: record.target, requestId };
    // An RFC 9421 request's answer is signed in RFC 9421, bound to the request: @target-uri is
    // https://<Host><target>, and every request of the run is sent with Host: localhost. A JAdES
    // request's answer is signed in JAdES: the bank QSealC in x5c, no certificate header. A UK OB
    // request's answer is an x-jws-signature over the body, told from a JAdES one by its crit.
    const jws = r.headers["x-jws-signature"];
    const verdict =
      r.headers["signature-input"] !== undefined
        ? await rfc9421Verifier.verify({
            headers: r.headers,
            body: r.body,
            status: r.status,
            // The full profile binds the request's Content-Digest and signature (`;req`): as the
            // backend received them, the gateway forwarding them as sent (read before any await).
            request: {
              ...request,
              targetUri: `https://localhost${record.target}`,
              ...(record.headers ? { headers: record.headers } : {}),
            },
          })
        : jws !== undefined && isUkObJws(jws)
          ? await ukObVerifier.verify({ headers: r.headers, body: r.body, request })
          : jws !== undefined
            ? await jadesVerifier.verify({ headers: r.headers, body: r.body, request })
            : await verifier.verify({ headers: r.headers, body: r.body, request });
    this.checker.check(verdict === true, () =>
      v(
        "response-signature",
        labels,
        "every backend answer signed with the bank QSealC: Signature, Digest, Date, X-Request-ID and the certificate header, verifying",
        `response #${position} (${r.status}, ${r.body.length} bytes): ${verdict === true ? "" : `${verdict.code}: ${verdict.text}`}`,
      ),
    );
    const certificate = jws !== undefined ? firstX5c(jws) : r.headers[BANK_CERTIFICATE_HEADER];
    this.checker.check(certificate === bankCertificate && r.headers["x-request-id"] === requestId, () =>
      v(
        "response-signature",
        labels,
        `${jws !== undefined ? "x5c[0]" : BANK_CERTIFICATE_HEADER}: the bank QSealC, x-request-id: ${requestId}`,
        `response #${position}: ${jws !== undefined ? "x5c[0]" : BANK_CERTIFICATE_HEADER} ${certificate === undefined ? "absent" : "another certificate"}, x-request-id ${r.headers["x-request-id"]}`,
      ),
    );
  }

  /** Identity and spoofed headers of one backend record. */
  private checkRecord(x: Exchange, { record, request: r, headers, raw }: ArrivedRecord): void {
    const { checker } = this;
    const { v } = x;
    x.checkNotLeaked(r, raw, "spoof-reached-backend", (value) => `the backend never sees '${value}'`);
    x.checkBackendHeaders(r, headers);
    if (r.backendTarget !== undefined)
      checker.check(record.target === r.backendTarget, () =>
        v(
          "backend-target",
          r.label,
          `the backend receives the target as sent and checked: ${r.backendTarget}`,
          record.target,
        ),
      );
    if (r.tpp?.good) {
      const org = headers["x-tpp-organization-id"];
      const roles = headers["x-tpp-roles"];
      checker.check(org === r.tpp.organizationId && roles === r.tpp.roles.join(","), () =>
        v(
          "identity",
          r.label,
          `x-tpp-organization-id: ${r.tpp!.organizationId}, x-tpp-roles: ${r.tpp!.roles.join(",")}`,
          `x-tpp-organization-id: ${String(org)}, x-tpp-roles: ${String(roles)}`,
        ),
      );
    }
  }

  /**
   * The shared sweep, then: a refusal's X-Request-ID is not among what the backend executed,
   * unless another send of it was answered by the backend (a replay's first send).
   */
  override finalSweep(): void {
    super.finalSweep();
    for (const [id, refused] of this.refusedIds) {
      const executed = this.backend
        .byRequestId(id)
        .filter((r) => r.complete && !r.provoked && !this.tags.get(r.tag ?? "")?.abandons).length;
      const answered = this.backendAnsweredIds.get(id) ?? 0;
      if (executed <= answered) {
        this.checker.pass();
        continue;
      }
      const record = this.backend.byRequestId(id)[0]!;
      const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
      if (info?.reported) continue;
      if (info) info.reported = true;
      this.sweep(
        record,
        "refused-but-executed",
        "a request the gateway refused never reached the backend",
        `X-Request-ID ${id} refused ${refused}×, executed by the backend ${executed}×, backend answers delivered ${answered}×`,
      );
    }
  }
}
