/**
 * The egress side of a fuzz run: an egress gateway process (plain HTTP on loopback, as the TPP's
 * application reaches it) with two bank profiles in front of a second recording backend, and the
 * invariants checked on every exchange with it and once more over the backend's whole record:
 *
 * - never a 500, never a crash (the process stays up, /healthz 200, RSS under the limit);
 * - every answer of the gateway's own is a Berlin Group tppMessages body, marked
 *   `psd2-gateway-origin: gateway`, its status the one its code has; no 5xx unless provoked;
 * - a refused request (unknown prefix or Host, a body over maxBodyBytes, bytes that are not HTTP)
 *   never reaches the backend;
 * - every request the backend saw is signed as its profile says and verifies with the dev TPP
 *   QSealC: one Signature, Date (now), X-Request-ID, certificate header and Digest (over the exact
 *   body the backend got), the signature over the target the backend got, none of the
 *   application's copies of those headers; the target is the profile's base path and the
 *   application's path below the prefix, the body the application's;
 * - every request the backend executed is answered with that answer (`psd2-gateway-origin: bank`),
 *   in order, on the connection it came from, unless the application went away first.
 *
 * Profiles: `bank` by path prefix `/bank` (SPEC 5 signing rules, responses not checked) and `alt`
 * by Host `alt.bank.example` (Java-style rules: SHA256withRSA, lower-hex keyId with `, ` and
 * `%20`, lower-case Digest of SHA-256 and SHA-512 left out for an empty body, the certificate as
 * base64 PEM; responses checked advisory, so its answers pass the verifier's bounded read).
 */

import { type KeyObject, X509Certificate } from "node:crypto";
import { join } from "node:path";
import type { DevPki } from "../../src/dev/pki.js";
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
import { type BackendRecord, type FuzzBackend, startFuzzBackend } from "./backend.js";
import { type FuzzGateway, fuzzListenConfig, spawnFuzzProcess } from "./gateway.js";
import { type ParsedResponse, RawClient } from "./raw-client.js";
import type { CasePlan, EgressBanks, ExchangeResult, ExpectedRequest } from "./types.js";
import { type Checker, describe, isTppMessages, sha256Base64, shown, type Violation } from "./verdicts.js";

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
}

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
  try {
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
      ],
    };
    const gateway = await spawnFuzzProcess({ name: "egress", dir, config, port, adminPort });
    return { backend, gateway };
  } catch (error) {
    await backend.close();
    throw error;
  }
}

interface TagInfo {
  readonly family: string;
  readonly caseIndex: number;
  readonly label: string;
  readonly expect: ExpectedRequest["expect"];
  readonly abandons: boolean;
  reported: boolean;
}

type MakeViolation = (kind: string, label: string, expected: string, got: string) => Violation;

export class EgressTarget {
  readonly banks = BANKS;
  readonly maxBodyBytes = EGRESS_MAX_BODY_BYTES;
  private readonly client: RawClient;
  private readonly tags = new Map<string, TagInfo>();
  private sentinelCounter = 0;
  private readonly publicKey: KeyObject;
  private readonly keyIdTarget: KeyIdTarget;
  private readonly certificateHeader: Record<"bank" | "alt", string>;

  constructor(
    private readonly checker: Checker,
    readonly side: EgressSide,
    pki: DevPki,
  ) {
    this.client = new RawClient({ host: "127.0.0.1", port: side.gateway.port });
    const qseal = pki.tppA.qseal;
    this.publicKey = new X509Certificate(qseal.pem).publicKey;
    this.keyIdTarget = keyIdTargetFromDer(qseal.der);
    this.certificateHeader = {
      bank: formatCertificateHeader(qseal.der, "base64-der"),
      alt: formatCertificateHeader(qseal.der, "base64-pem"),
    };
  }

  private get backend(): FuzzBackend {
    return this.side.backend;
  }

  async exchange(family: string, caseIndex: number, plan: CasePlan): Promise<ExchangeResult> {
    const { checker } = this;
    const stats = checker.stats(family);
    const abandons = plan.abandons === true || plan.after === "cut";
    const requests = [...plan.requests];
    const writes = [...plan.writes];
    let sentinelId: string | undefined;
    const useSentinel = plan.sentinel ?? (plan.after === undefined || plan.after === "read");
    if (useSentinel) {
      // No profile serves it: the 404's text names its path, which ends the exchange.
      const n = ++this.sentinelCounter;
      sentinelId = `/egress-sentinel/${n}/`;
      const tag = `esentinel.${n}`;
      requests.push({ tag, label: "sentinel", expect: "refuse" });
      writes.push({
        data: Buffer.from(`GET ${sentinelId}?fz=${tag} HTTP/1.1\r\nHost: localhost\r\n\r\n`, "latin1"),
      });
    }
    for (const r of requests) {
      if (!this.tags.has(r.tag))
        this.tags.set(r.tag, {
          family,
          caseIndex,
          label: r.label,
          expect: r.expect,
          abandons,
          reported: false,
        });
    }
    checker.countSent(family, plan.requests.length);

    const bodiless = new Set(plan.bodiless ?? []);
    const outcome = await this.client.exchange({
      writes,
      ...(plan.after !== undefined ? { after: plan.after } : {}),
      ...(plan.afterMs !== undefined ? { afterMs: plan.afterMs } : {}),
      ...(sentinelId !== undefined ? { sentinelId, sentinelInBody: true } : {}),
      ...(bodiless.size > 0 ? { bodiless } : {}),
      deadlineMs: plan.deadlineMs ?? 15_000,
      ...(plan.readAfterWrites ? { readAfterWrites: true } : {}),
      ...(plan.localAddress !== undefined ? { localAddress: plan.localAddress } : {}),
      ...(plan.onConnected !== undefined ? { onConnected: plan.onConnected } : {}),
    });
    const bytes = Buffer.concat(plan.writes.map((w) => w.data));
    const v: MakeViolation = (kind, label, expected, got) => ({
      kind,
      family,
      caseIndex,
      label,
      expected,
      got,
      bytes: shown(bytes),
      exchange: `sent ${requests.map((r, i) => `#${i} ${r.label.slice(0, 90)}`).join(" | ")}; read ${outcome.responses
        .map(describe)
        .map((d) => d.slice(0, 60))
        .join(
          " | ",
        )}; ended by ${outcome.endedBy}${outcome.error ? ` (${outcome.error})` : ""} after ${Math.round(outcome.ms)} ms`,
    });
    const labels = plan.requests.map((r) => r.label).join(" | ");
    const indexOfTag = new Map<string, number>();
    requests.forEach((r, i) => {
      if (!indexOfTag.has(r.tag)) indexOfTag.set(r.tag, i);
    });
    const allowed5xx = new Set(requests.flatMap((r) => r.allow5xx ?? []));

    const answers = new Map<string, ParsedResponse>();
    let lastIndex = -1;
    for (const [position, r] of outcome.responses.entries()) {
      const seqText = r.headers["x-backend-seq"];
      const origin = r.headers["psd2-gateway-origin"];
      checker.check(r.status !== 500, () =>
        v("egress-500", labels, "no 500 from the egress gateway", `response #${position}: ${describe(r)}`),
      );
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
        if (r.status >= 500 && r.status !== 500)
          checker.check(allowed5xx.has(r.status), () =>
            v(
              "egress-5xx",
              labels,
              "no 5xx unless the family provoked it",
              `response #${position}: ${describe(r)}`,
            ),
          );
        if (!(sentinelId !== undefined && r.body.includes(sentinelId))) stats.refused++;
        continue;
      }
      const record = this.backend.bySeq(Number(seqText));
      if (
        !checker.check(record !== undefined, () =>
          v("answer-mismatch", labels, "x-backend-seq names a backend record", `x-backend-seq ${seqText}`),
        ) ||
        !record
      )
        continue;
      checker.check(!record.answered, () =>
        v("answer-twice", labels, "each backend answer delivered once", `x-backend-seq ${seqText} twice`),
      );
      record.answered = true;
      const index = record.tag !== undefined ? indexOfTag.get(record.tag) : undefined;
      checker.check(index !== undefined, () =>
        v(
          "answer-wrong-connection",
          labels,
          "the backend's answer on the connection its request came from",
          `x-backend-seq ${seqText} answers tag ${record.tag} (${record.method} ${record.target.slice(0, 120)}), not sent on this connection`,
        ),
      );
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
      if (record.tag !== undefined && !answers.has(record.tag)) answers.set(record.tag, r);
      stats.forwarded++;
      if (index !== undefined) {
        const at = index;
        checker.check(at >= lastIndex, () =>
          v(
            "order",
            labels,
            "answers in the order the requests were sent",
            `response #${position} answers request #${at} (${requests[at]?.label}) after one for request #${lastIndex}`,
          ),
        );
        lastIndex = Math.max(lastIndex, at);
      }
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
    checker.check(outcome.malformed === undefined, () =>
      v("malformed-response", labels, "well-formed HTTP responses", String(outcome.malformed)),
    );

    for (const r of requests) {
      const records = this.backend.byTag(r.tag);
      const info = this.tags.get(r.tag)!;
      if (r.expect === "refuse") {
        const ok = checker.check(records.length === 0, () =>
          v(
            "refused-reached-backend",
            r.label,
            "never reaches the backend",
            `the backend received it: ${records.map((x) => `${x.method} ${x.target.slice(0, 160)} (seq ${x.seq})`).join("; ")}`,
          ),
        );
        if (!ok) info.reported = true;
      } else if (r.expect === "no-execute") {
        const whole = records.filter((x) => x.complete);
        const ok = checker.check(whole.length === 0, () =>
          v(
            "bad-body-executed",
            r.label,
            "the backend never receives the whole of it",
            whole
              .map((x) => `${x.method} ${x.target.slice(0, 160)} (seq ${x.seq}, ${x.bodyBytes} bytes)`)
              .join("; "),
          ),
        );
        if (!ok) info.reported = true;
      } else if (r.expect === "forward") {
        const executed = records.some((x) => x.complete && !x.answered);
        checker.check(answers.has(r.tag) || executed, () =>
          v(
            "valid-refused",
            r.label,
            "forwarded and answered by the backend",
            `${outcome.responses.map(describe).join(" / ") || "no answer"} (ended by ${outcome.endedBy}${outcome.error ? `: ${outcome.error}` : ""})`,
          ),
        );
      }
      checker.check(records.length <= 1, () =>
        v(
          "sent-twice",
          r.label,
          "each application request sent to the bank at most once (nothing is retried)",
          `the backend received it ${records.length} times`,
        ),
      );
      for (const record of records) this.checkRecord(record, r, v);
      if (!answers.has(r.tag) && r.label !== "sentinel") stats.unanswered++;
    }
    if (!abandons) {
      for (const r of requests) {
        for (const record of this.backend.byTag(r.tag)) {
          if (!record.complete || record.provoked || record.answered) continue;
          const info = this.tags.get(r.tag)!;
          if (info.reported) continue;
          info.reported = true;
          checker.check(false, () =>
            v(
              "executed-unanswered",
              r.label,
              "every request the backend executed is answered to the application",
              `backend seq ${record.seq} (${record.method} ${record.target.slice(0, 160)}) executed, the client read ${outcome.responses.length} answer(s): ${outcome.responses.map(describe).join(" / ")}; ended by ${outcome.endedBy}`,
            ),
          );
        }
      }
    }
    return {
      outcome,
      backendAnswer: (tag) => answers.get(tag),
      // The egress gateway's own answers echo no X-Request-ID of the application's.
      refusal: () => undefined,
      backendSaw: (tag) => this.backend.byTag(tag).length,
    };
  }

  /** One request as the bank got it: signed as its profile says, nothing of the application's copies. */
  private checkRecord(record: BackendRecord, r: ExpectedRequest, v: MakeViolation): void {
    const { checker } = this;
    const raw = record.rawHeaders;
    const headers = record.headers;
    const body = record.body ?? Buffer.alloc(0);
    if (!raw || !headers) return;
    const fail = (expected: string, got: string) =>
      checker.check(false, () => v("backend-signature", r.label, expected, got));
    const profile = underBase(record.target, BANKS.bankBase)
      ? "bank"
      : underBase(record.target, BANKS.altBase)
        ? "alt"
        : undefined;
    try {
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
      for (const value of r.spoofed ?? []) {
        const leaked: string[] = [];
        for (let i = 0; i + 1 < raw.length; i += 2)
          if (raw[i + 1]!.includes(value)) leaked.push(`${raw[i]}: ${raw[i + 1]!.slice(0, 120)}`);
        checker.check(leaked.length === 0, () =>
          v(
            "app-copy-reached-backend",
            r.label,
            `the bank never sees the application's '${value}'`,
            leaked.join("; "),
          ),
        );
      }
      for (const [name, expected] of Object.entries(r.backendHeaders ?? {})) {
        const got = headers[name];
        const text = Array.isArray(got) ? got.join(", ") : got;
        checker.check(text === expected, () =>
          v("backend-header", r.label, `${name}: ${expected}`, `${name}: ${text ?? "(absent)"}`),
        );
      }
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
    } finally {
      record.headers = undefined;
      record.rawHeaders = undefined;
      record.body = undefined;
    }
  }

  /** Everything the egress backend ever received, against what the run expected. */
  finalSweep(): void {
    const { checker } = this;
    for (const record of this.backend.records) {
      const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
      const where = `seq ${record.seq}: ${record.method} ${record.target.slice(0, 160)}`;
      const sweep = (kind: string, expected: string) =>
        checker.check(false, () => ({
          kind,
          family: info?.family ?? "(unknown)",
          caseIndex: info?.caseIndex ?? -1,
          label: info?.label ?? "(untagged)",
          expected,
          got: `${where} (late)`,
          bytes: "",
        }));
      if (!info) {
        sweep("untagged-at-backend", "only requests the run sent reach the egress backend");
        continue;
      }
      if (info.reported) continue;
      if (info.expect === "refuse") {
        info.reported = true;
        sweep("refused-reached-backend", "never reaches the backend");
      } else if (info.expect === "no-execute" && record.complete) {
        info.reported = true;
        sweep("bad-body-executed", "never executed with its whole body");
      } else if (record.complete && !record.provoked && !record.answered && !info.abandons) {
        info.reported = true;
        sweep("executed-unanswered", "every request the backend executed is answered");
      } else checker.pass();
    }
  }
}

/** The profile's base path starts the target (the two bases differ from their first segment). */
function underBase(target: string, base: string): boolean {
  return target.startsWith(base);
}
