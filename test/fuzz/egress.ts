/**
 * The egress side of a fuzz run: an egress gateway process (plain HTTP on loopback, as the TPP's
 * application reaches it) with two bank profiles in front of a second recording backend, and what
 * every exchange with it must meet besides exchange-check.ts's shared invariants:
 *
 * - every answer of the gateway's own is a Berlin Group tppMessages body, marked
 *   `psd2-gateway-origin: gateway`, its status the one its code has; a request a family expects
 *   refused (unknown prefix or Host, a body over maxBodyBytes, bytes that are not HTTP) gets its
 *   refusal;
 * - every request the backend saw is signed as its profile says and verifies with the dev TPP
 *   QSealC: one Signature, Date (now), X-Request-ID, certificate header and Digest (over the exact
 *   body the backend got), the signature over the target the backend got, none of the
 *   application's copies of those headers; the target is the profile's base path and the
 *   application's path below the prefix, the body the application's; it is sent at most once;
 * - every backend answer is marked `psd2-gateway-origin: bank` and with the response signature
 *   mark its profile gives it.
 *
 * Profiles: `bank` by path prefix `/bank` (SPEC 5 signing rules, responses not checked) and `alt`
 * by Host `alt.bank.example` (Java-style rules: SHA256withRSA, lower-hex keyId with `, ` and
 * `%20`, lower-case Digest of SHA-256 and SHA-512 left out for an empty body, the certificate as
 * base64 PEM; responses checked advisory, so its answers pass the verifier's bounded read).
 */

import { type KeyObject, X509Certificate } from "node:crypto";
import { join } from "node:path";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { isRejection, statusFor } from "../../src/errors.js";
import {
  formatCertificateHeader,
  type KeyIdTarget,
  keyIdTargetFromDer,
  parseHttpDate,
  RequestSigner,
  verifyDigest,
  verifyRequestSignature,
} from "../../src/signature/index.js";
import { freeLoopbackPort } from "../helpers/gateway-process.js";
import { type FuzzBackend, startFuzzBackend } from "./backend.js";
import { type ArrivedRecord, type Exchange, type Sentinel, Target, type Wording } from "./exchange-check.js";
import { type FapiBank, startFapiBank } from "./fapi-bank.js";
import { type FuzzGateway, fuzzListenConfig, spawnFuzzProcess } from "./gateway.js";
import { RawClient } from "./raw-client.js";
import type { CasePlan, EgressBanks, ExchangeResult } from "./types.js";
import { type Checker, describe, isTppMessages, sha256Base64 } from "./verdicts.js";

/** The egress gateway's maxBodyBytes. */
export const EGRESS_MAX_BODY_BYTES = 65_536;
/** The `alt` profile's responses.maxBodyBytes; the egress backend's large shapes are sized from it. */
export const EGRESS_RESPONSE_BOUND = 65_536;

const BANKS: EgressBanks = {
  prefix: "/bank",
  bankBase: "/api",
  altHost: "alt.bank.example",
  altBase: "/alt",
};

/** The headers the `alt` profile signs, in its order. */
const ALT_SIGNED = ["digest", "date", "x-request-id", "psu-id", "tpp-redirect-uri", "(request-target)"];
/** The headers only the gateway writes: the backend sees exactly one of each (Digest: see below). */
const GATEWAY_WRITTEN = ["signature", "date", "x-request-id", "tpp-signature-certificate"];

export interface EgressSide {
  readonly backend: FuzzBackend;
  readonly gateway: FuzzGateway;
  /** The hostile RFC 9421 bank behind the `fapi` profile (fapi-bank.ts). */
  readonly fapiBank: FapiBank;
}

/** The `fapi` profile's path prefix: RFC 9421 requests, responses enforced under FAPI 2.0 `full`. */
export const FAPI_PREFIX = "/fapi";

export async function startEgressSide(pki: DevPki, dir: string, concurrency: number): Promise<EgressSide> {
  // The bank behind the `alt` profile signs its answers with its QSealC, as ingress mode does.
  const bankSigner = new RequestSigner({
    privateKey: pki.bankQseal.privateKey,
    certificate: pki.bankQseal.der,
    headers: ["date", "digest", "x-request-id"],
    certificateHeader: { name: "ASPSP-Signature-Certificate" },
    headerEncoding: "latin1",
  });
  const backend = await startFuzzBackend({
    boundBytes: EGRESS_RESPONSE_BOUND,
    keepBodies: true,
    signAnswers: {
      applies: (target) => underBase(target, BANKS.altBase),
      sign: async (body, requestId) =>
        (await bankSigner.sign({
          method: "",
          target: "",
          headers: { "x-request-id": requestId },
          body,
        })) as unknown as Record<string, string>,
    },
  });
  let fapiBank: FapiBank | undefined;
  try {
    fapiBank = await startFapiBank(pki);
    const port = await freeLoopbackPort();
    const adminPort = await freeLoopbackPort();
    const tpp = join(pki.dir, "tpp");
    const qseal = { cert: join(tpp, "tpp-a-qseal.pem"), key: join(tpp, "tpp-a-qseal.key.pem") };
    const config = {
      mode: "egress",
      listen: { host: "127.0.0.1", port, ...fuzzListenConfig("egress", concurrency) },
      maxBodyBytes: EGRESS_MAX_BODY_BYTES,
      admin: { host: "127.0.0.1", port: adminPort },
      log: { level: "warn" },
      banks: [
        {
          name: "bank",
          prefix: BANKS.prefix,
          url: `${backend.url}${BANKS.bankBase}`,
          qseal,
          defaultHeaders: { "TPP-Redirect-URI": "https://tpp.example/cb" },
          timeoutSeconds: 3,
        },
        {
          name: "alt",
          host: BANKS.altHost,
          url: `${backend.url}${BANKS.altBase}`,
          qseal,
          signing: {
            headers: ALT_SIGNED,
            algorithmToken: "SHA256withRSA",
            keyId: { serial: "lower-hex", issuerSeparator: ", ", spaces: "percent-20" },
            digest: { algorithms: ["sha-256", "sha-512"], token: "lower", emptyBody: "omit" },
            certificateHeader: { format: "base64-pem" },
          },
          responses: { mode: "advisory", caDir: pki.paths.trustDir, maxBodyBytes: EGRESS_RESPONSE_BOUND },
          timeoutSeconds: 3,
        },
        {
          // The hostile bank over real TLS: each answer's `;req` binding broken as the family asks.
          name: "fapi",
          prefix: FAPI_PREFIX,
          url: `${fapiBank.origin}/fapi`,
          ca: join(pki.paths.trustDir, "demo-root-ca.pem"),
          qseal,
          signing: { dialect: "rfc9421" },
          responses: { mode: "enforce", caDir: pki.paths.trustDir, rfc9421Profile: "full" },
          timeoutSeconds: 3,
        },
      ],
    };
    const gateway = await spawnFuzzProcess({ name: "egress", dir, config, port, adminPort });
    return { backend, gateway, fapiBank };
  } catch (error) {
    await backend.close();
    await fapiBank?.close();
    throw error;
  }
}

const WORDS: Wording = {
  kindPrefix: "egress",
  gateway: "the egress gateway",
  reader: "application",
  backend: "egress backend",
  forward: "forwarded and answered by the backend",
  noExecute: "the backend never receives the whole of it",
  detailed: false,
};

export class EgressTarget extends Target {
  readonly banks = BANKS;
  readonly maxBodyBytes = EGRESS_MAX_BODY_BYTES;
  private readonly publicKey: KeyObject;
  private readonly keyIdTarget: KeyIdTarget;
  private readonly certificateHeader: Record<"bank" | "alt", string>;

  constructor(
    checker: Checker,
    readonly side: EgressSide,
    pki: DevPki,
  ) {
    super(checker, new RawClient({ host: "127.0.0.1", port: side.gateway.port }), side.backend, WORDS);
    const qseal = pki.tppA.qseal;
    this.publicKey = new X509Certificate(qseal.pem).publicKey;
    this.keyIdTarget = keyIdTargetFromDer(qseal.der);
    this.certificateHeader = {
      bank: formatCertificateHeader(qseal.der, "base64-der"),
      alt: formatCertificateHeader(qseal.der, "base64-pem"),
    };
  }

  /** No profile serves it: the 404's text names its path, which ends the exchange. */
  protected sentinel(n: number): Sentinel {
    const id = `/egress-sentinel/${n}/`;
    const tag = `esentinel.${n}`;
    return {
      request: { tag, label: "sentinel", expect: "refuse" },
      data: Buffer.from(`GET ${id}?fz=${tag} HTTP/1.1\r\nHost: localhost\r\n\r\n`, "latin1"),
      id,
      inBody: true,
    };
  }

  async exchange(family: string, caseIndex: number, plan: CasePlan): Promise<ExchangeResult> {
    const x = await this.start(family, caseIndex, plan);
    const { checker } = this;
    const { v, labels, outcome, bodiless, stats, sentinelId } = x;
    for (const [position, r] of outcome.responses.entries()) {
      const seqText = r.headers["x-backend-seq"];
      const origin = r.headers["psd2-gateway-origin"];
      x.checkNo500(position, r);
      if (seqText === undefined) {
        const tpp = isTppMessages(r);
        const head = bodiless.has(position);
        checker.check(
          origin === "gateway" &&
            r.status >= 400 &&
            (head
              ? /json/.test(r.headers["content-type"] ?? "")
              : tpp !== undefined && statusFor(tpp.code as never) === r.status),
          () =>
            v(
              "refusal-shape",
              labels,
              "every answer of the gateway's own: psd2-gateway-origin gateway, a tppMessages body, the status of its code",
              `response #${position}: ${describe(r)} (psd2-gateway-origin: ${origin ?? "none"}, ${r.body.length} bytes)`,
            ),
        );
        x.checkNo5xx(position, r);
        if (!(sentinelId !== undefined && r.body.includes(sentinelId))) stats.refused++;
        continue;
      }
      const found = x.backendAnswer(seqText);
      if (!found) continue;
      const { record, index } = found;
      const expected = record.answer;
      const head = bodiless.has(position);
      // The `alt` bank signs its answers: checked and verified unless too large to check.
      const mark = !underBase(record.target, BANKS.altBase)
        ? "not-checked"
        : expected !== undefined && expected.bodyBytes > EGRESS_RESPONSE_BOUND
          ? "unchecked-too-large"
          : "verified";
      checker.check(
        origin === "bank" &&
          r.headers["psd2-gateway-response-signature"] === mark &&
          expected !== undefined &&
          r.status === expected.status &&
          sha256Base64(r.body) === expected.sha256 &&
          (!head ||
            r.headers["content-length"] === undefined ||
            r.headers["content-length"] === String(expected.contentLength)),
        () =>
          v(
            "answer-mismatch",
            labels,
            `the backend's ${expected?.shape ?? "?"} answer (${expected?.status} with ${expected?.bodyBytes} bytes), psd2-gateway-origin: bank, psd2-gateway-response-signature: ${mark}`,
            `response #${position}: ${r.status} with ${r.body.length} bytes, content-length ${r.headers["content-length"]}, origin ${origin}, mark ${r.headers["psd2-gateway-response-signature"]}`,
          ),
      );
      x.delivered(record, r);
      x.checkOrder(position, r, index);
    }
    const only = plan.requests.length === 1 ? plan.requests[0]!.refusedWith : undefined;
    if (only) {
      const first = outcome.responses[0];
      const tpp = first ? isTppMessages(first) : undefined;
      checker.check(
        first === undefined
          ? only.orClose === true && outcome.endedBy === "close"
          : first.status === only.status && tpp?.code === only.code,
        () =>
          v(
            "refusal",
            labels,
            `${only.status} ${only.code}${only.orClose ? " (or the connection closed)" : ""}`,
            `${describe(first)} (ended by ${outcome.endedBy})`,
          ),
      );
    }
    // The egress gateway's own answers echo no X-Request-ID of the application's: no refusals by id.
    return x.finish({
      request: (r, records) =>
        checker.check(records.length <= 1, () =>
          v(
            "sent-twice",
            r.label,
            "each application request sent to the bank at most once (nothing is retried)",
            `the backend received it ${records.length} times`,
          ),
        ),
      record: (arrived) => this.checkRecord(x, arrived),
    });
  }

  /** One request as the bank got it: signed as its profile says, nothing of the application's copies. */
  private checkRecord(x: Exchange, { record, request: r, headers, raw }: ArrivedRecord): void {
    const { checker } = this;
    const { v } = x;
    const body = record.body ?? Buffer.alloc(0);
    const fail = (expected: string, got: string) =>
      checker.check(false, () => v("backend-signature", r.label, expected, got));
    const profile = underBase(record.target, BANKS.bankBase)
      ? "bank"
      : underBase(record.target, BANKS.altBase)
        ? "alt"
        : undefined;
    if (!profile) {
      fail(`a target under ${BANKS.bankBase} or ${BANKS.altBase}`, record.target.slice(0, 200));
      return;
    }
    const counts = new Map<string, number>();
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    const digestCount = profile === "alt" && body.length === 0 ? 0 : 1;
    const wrongCounts = [
      ...GATEWAY_WRITTEN.map((name) => [name, 1] as const),
      ["digest", digestCount] as const,
    ].filter(([name, n]) => (counts.get(name) ?? 0) !== n);
    if ((counts.get("content-length") ?? 0) > 1 || counts.has("transfer-encoding"))
      wrongCounts.push(["content-length", 1]);
    checker.check(wrongCounts.length === 0, () =>
      v(
        "backend-headers",
        r.label,
        `exactly one of each header the gateway writes (${GATEWAY_WRITTEN.join(", ")}, digest ×${digestCount}), no application copy beside it`,
        wrongCounts.map(([name]) => `${name} ×${counts.get(name) ?? 0}`).join(", "),
      ),
    );
    const certificate = headers["tpp-signature-certificate"];
    checker.check(certificate === this.certificateHeader[profile], () =>
      v(
        "backend-signature",
        r.label,
        `TPP-Signature-Certificate: the dev TPP QSealC (${profile === "bank" ? "base64 DER" : "base64 PEM"})`,
        String(certificate).slice(0, 120),
      ),
    );
    const date = parseHttpDate(String(headers.date ?? ""));
    checker.check(date !== undefined && Math.abs(date - record.receivedAt) <= 60_000, () =>
      v("backend-signature", r.label, "Date: the gateway's clock, now", String(headers.date).slice(0, 120)),
    );
    if (digestCount === 1) {
      const digest = verifyDigest(String(headers.digest), body);
      checker.check(digest === true, () =>
        v(
          "backend-signature",
          r.label,
          "Digest over the exact body the bank received",
          `${String(headers.digest).slice(0, 160)}: ${isRejection(digest) ? digest.text : ""}`,
        ),
      );
    }
    const params = verifyRequestSignature(
      { method: record.method, target: record.target, headers },
      {
        publicKey: this.publicKey,
        keyIdTarget: this.keyIdTarget,
        algorithms: ["rsa-sha256"],
        eligibleHeaders: profile === "bank" ? undefined : ALT_SIGNED.filter((h) => !h.startsWith("(")),
      },
    );
    const verified = !isRejection(params);
    checker.check(verified && params.headers.includes("(request-target)"), () =>
      v(
        "backend-signature",
        r.label,
        `a Signature by the dev TPP QSealC under the ${profile} profile's rules, over (request-target) and the headers the bank got`,
        isRejection(params)
          ? `${params.code}: ${params.text}`
          : `signed ${params.headers.join(" ")}: no (request-target)`,
      ),
    );
    x.checkNotLeaked(
      r,
      raw,
      "app-copy-reached-backend",
      (value) => `the bank never sees the application's '${value}'`,
    );
    x.checkBackendHeaders(r, headers);
    if (r.backendTarget !== undefined)
      checker.check(record.target === r.backendTarget, () =>
        v("backend-target", r.label, `the bank gets ${r.backendTarget}`, record.target),
      );
    if (r.backendBodySha256 !== undefined && record.complete)
      checker.check(sha256Base64(body) === r.backendBodySha256, () =>
        v(
          "backend-body",
          r.label,
          "the bank gets the application's body, byte for byte",
          `${body.length} bytes: ${body.subarray(0, 80).toString("latin1")}`,
        ),
      );
  }
}

/** The profile's base path starts the target (the two bases differ from their first segment). */
function underBase(target: string, base: string): boolean {
  return target.startsWith(base);
}
