/**
 * What both fuzz targets (ingress.ts, egress.ts) do with a planned exchange: write it on one
 * connection with a sentinel last, remember its tags, and check what reads alike on either side:
 *
 * - no 500 from the gateway, no other 5xx unless a request of the exchange provoked it;
 * - an answer that names a backend record (x-backend-seq) is that record's, delivered once, on the
 *   connection its request came from, in the order the requests were sent;
 * - the responses are well-formed HTTP;
 * - per request, what reached the backend: nothing of one to refuse, never the whole body of one
 *   not to execute, a valid one answered by the backend; whatever the backend executed is answered
 *   (unless the client went away first);
 * - after the run, the backend's whole record against every tag sent.
 *
 * Each target adds its own checks of each answer and each backend record, and its own words.
 */

import type { IncomingHttpHeaders } from "node:http";
import type { BackendRecord, FuzzBackend } from "./backend.js";
import type { ExchangeOutcome, ParsedResponse, RawClient } from "./raw-client.js";
import type { CasePlan, ExchangeResult, ExpectedRequest } from "./types.js";
import { type Checker, describe, type FamilyStats, shown, type Violation } from "./verdicts.js";

/** What a target remembers of each tag (request) until the final sweep. */
export interface TagInfo {
  readonly family: string;
  readonly caseIndex: number;
  readonly label: string;
  readonly expect: ExpectedRequest["expect"];
  readonly abandons: boolean;
  reported: boolean;
  /** Exchanges that sent this tag (replays send one signed request on several connections). */
  exchanges: number;
}

/** The request a target writes last on an exchange: its answer ends the reading. */
export interface Sentinel {
  readonly request: ExpectedRequest;
  readonly data: Buffer;
  /** The X-Request-ID its answer echoes or, `inBody`, text its answer's body holds. */
  readonly id: string;
  readonly inBody?: boolean;
}

/** A target's own words in the shared checks' reports. */
export interface Wording {
  /** The kinds of the gateway's own 500 and unprovoked 5xx: `${kindPrefix}-500`, `${kindPrefix}-5xx`. */
  readonly kindPrefix: string;
  /** How the expectations name the gateway, who reads its answers, and the backend. */
  readonly gateway: string;
  readonly reader: string;
  readonly backend: string;
  /** What a valid request, and one whose body fails a check, are expected to meet. */
  readonly forward: string;
  readonly noExecute: string;
  /**
   * Reports say more (ingress; egress keeps its shorter texts): a record's body state and what the
   * client got, the refusal of a valid request, the answer before one out of order, a record's
   * X-Request-ID in the final sweep and whether it completed late.
   */
  readonly detailed: boolean;
}

export type MakeViolation = (kind: string, label: string, expected: string, got: string) => Violation;

/** A backend record of a request, with the headers it arrived with (kept until it is checked). */
export interface ArrivedRecord {
  readonly record: BackendRecord;
  readonly request: ExpectedRequest;
  readonly headers: IncomingHttpHeaders;
  readonly raw: readonly string[];
}

/** A target's checks of its own, once every answer of an exchange is read. */
export interface OwnRecordChecks {
  /** Each request, with every record the backend has of it. */
  request?(r: ExpectedRequest, records: readonly BackendRecord[], info: TagInfo): void;
  /** Each record still holding its headers (dropped afterwards, to keep memory flat). */
  record(arrived: ArrivedRecord): void;
}

/** One gateway under fuzz: its client, its recording backend, and the tags sent to it. */
export abstract class Target {
  readonly tags = new Map<string, TagInfo>();
  private sentinels = 0;

  constructor(
    readonly checker: Checker,
    readonly client: RawClient,
    readonly backend: FuzzBackend,
    readonly words: Wording,
  ) {}

  /** The `n`-th sentinel request. */
  protected abstract sentinel(n: number): Sentinel;

  /** Runs one connection's exchange and checks every invariant on it. */
  abstract exchange(family: string, caseIndex: number, plan: CasePlan): Promise<ExchangeResult>;

  /** Writes the plan (and a sentinel, unless it ends otherwise) on a connection and reads what comes back. */
  protected async start(family: string, caseIndex: number, plan: CasePlan): Promise<Exchange> {
    const abandons = plan.abandons === true || plan.after === "cut";
    const requests = [...plan.requests];
    const writes = [...plan.writes];
    // Over plain TCP to a TLS listener nothing can answer a sentinel.
    const useSentinel =
      plan.transport !== "tcp" && (plan.sentinel ?? (plan.after === undefined || plan.after === "read"));
    const sentinel = useSentinel ? this.sentinel(++this.sentinels) : undefined;
    if (sentinel) {
      requests.push(sentinel.request);
      writes.push({ data: sentinel.data });
    }
    const seenHere = new Set<string>();
    for (const r of requests) {
      const known = this.tags.get(r.tag);
      if (!known)
        this.tags.set(r.tag, {
          family,
          caseIndex,
          label: r.label,
          expect: r.expect,
          abandons,
          reported: false,
          exchanges: 1,
        });
      else if (!seenHere.has(r.tag)) known.exchanges++;
      seenHere.add(r.tag);
    }
    this.checker.countSent(family, plan.requests.length);

    const bodiless = new Set(plan.bodiless ?? []);
    const outcome = await this.client.exchange({
      writes,
      ...(bodiless.size > 0 ? { bodiless } : {}),
      ...(plan.after !== undefined ? { after: plan.after } : {}),
      ...(plan.afterMs !== undefined ? { afterMs: plan.afterMs } : {}),
      ...(sentinel ? { sentinelId: sentinel.id, ...(sentinel.inBody ? { sentinelInBody: true } : {}) } : {}),
      deadlineMs: plan.deadlineMs ?? 15_000,
      ...(plan.readAfterWrites ? { readAfterWrites: true } : {}),
      ...(plan.transport !== undefined ? { transport: plan.transport } : {}),
      ...(plan.localAddress !== undefined ? { localAddress: plan.localAddress } : {}),
      ...(plan.onConnected !== undefined ? { onConnected: plan.onConnected } : {}),
    });
    return new Exchange(this, family, caseIndex, plan, requests, sentinel?.id, bodiless, abandons, outcome);
  }

  /** Everything the backend ever received, against what the run expected. */
  finalSweep(): void {
    const { detailed } = this.words;
    for (const record of this.backend.records) {
      const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
      const where = `seq ${record.seq}: ${record.method} ${record.target.slice(0, 160)}${detailed ? ` X-Request-ID ${record.requestId}` : ""}`;
      const late = `${where} (late)`;
      if (!info) {
        this.sweep(
          record,
          "untagged-at-backend",
          `only requests the run sent reach the ${this.words.backend}`,
          detailed ? where : late,
        );
        continue;
      }
      if (info.reported) continue;
      if (info.expect === "refuse") {
        info.reported = true;
        this.sweep(record, "refused-reached-backend", "never reaches the backend", late);
      } else if (info.expect === "no-execute" && record.complete) {
        info.reported = true;
        this.sweep(record, "bad-body-executed", "never executed with its whole body", late);
      } else if (record.complete && !record.provoked && !record.answered && !info.abandons) {
        info.reported = true;
        this.sweep(
          record,
          "executed-unanswered",
          "every request the backend executed is answered",
          detailed ? `${where} (completed after its exchange ended)` : late,
        );
      } else this.checker.pass();
    }
  }

  /** A violation the final sweep found, reported for the request `record` was. */
  protected sweep(record: BackendRecord, kind: string, expected: string, got: string): void {
    const info = record.tag !== undefined ? this.tags.get(record.tag) : undefined;
    this.checker.check(false, () => ({
      kind,
      family: info?.family ?? "(unknown)",
      caseIndex: info?.caseIndex ?? -1,
      label: info?.label ?? "(untagged)",
      expected,
      got,
      bytes: "",
    }));
  }
}

/** One exchange once its connection ended: what was sent and read, and the checks on both. */
export class Exchange {
  readonly stats: FamilyStats;
  /** Every request's label, for the checks on the exchange as a whole. */
  readonly labels: string;
  /** The backend's answer read for each tag, the gateway's refusal read for each X-Request-ID. */
  readonly answers = new Map<string, ParsedResponse>();
  readonly refusals = new Map<string, ParsedResponse>();
  private readonly indexOfTag = new Map<string, number>();
  private readonly allowed5xx: ReadonlySet<number>;
  private lastIndex = -1;

  constructor(
    private readonly target: Target,
    readonly family: string,
    readonly caseIndex: number,
    private readonly plan: CasePlan,
    /** The plan's requests and the sentinel, in wire order. */
    readonly requests: readonly ExpectedRequest[],
    readonly sentinelId: string | undefined,
    readonly bodiless: ReadonlySet<number>,
    readonly abandons: boolean,
    readonly outcome: ExchangeOutcome,
  ) {
    this.stats = target.checker.stats(family);
    this.labels = plan.requests.map((r) => r.label).join(" | ");
    requests.forEach((r, i) => {
      if (!this.indexOfTag.has(r.tag)) this.indexOfTag.set(r.tag, i);
    });
    this.allowed5xx = new Set(requests.flatMap((r) => r.allow5xx ?? []));
  }

  readonly v: MakeViolation = (kind, label, expected, got) => {
    const { requests, outcome } = this;
    return {
      kind,
      family: this.family,
      caseIndex: this.caseIndex,
      label,
      expected,
      got,
      bytes: shown(Buffer.concat(this.plan.writes.map((w) => w.data))),
      exchange: `sent ${requests.map((r, i) => `#${i} ${r.label.slice(0, 90)}`).join(" | ")}; read ${outcome.responses
        .map(describe)
        .map((d) => d.slice(0, 60))
        .join(
          " | ",
        )}; ended by ${outcome.endedBy}${outcome.error ? ` (${outcome.error})` : ""} after ${Math.round(outcome.ms)} ms`,
    };
  };

  /** Where the first request tagged `tag` stands in this exchange, if it was sent here. */
  indexOf(tag: string | undefined): number | undefined {
    return tag === undefined ? undefined : this.indexOfTag.get(tag);
  }

  checkNo500(position: number, r: ParsedResponse): void {
    const { checker, words } = this.target;
    checker.check(r.status !== 500, () =>
      this.v(
        `${words.kindPrefix}-500`,
        this.labels,
        `no 500 from ${words.gateway}`,
        `response #${position}: ${describe(r)}`,
      ),
    );
  }

  /** A 5xx of the gateway's own other than 500: a request here provoked it, or it is `excused`. */
  checkNo5xx(position: number, r: ParsedResponse, excused = false): void {
    if (r.status < 500 || r.status === 500) return;
    this.target.checker.check(this.allowed5xx.has(r.status) || excused, () =>
      this.v(
        `${this.target.words.kindPrefix}-5xx`,
        this.labels,
        "no 5xx unless the family provoked it",
        `response #${position}: ${describe(r)}`,
      ),
    );
  }

  /**
   * An answer carrying `x-backend-seq: seqText`: a backend record's, delivered once, for a request
   * sent on this connection (`index`). Undefined when no record has that seq.
   */
  backendAnswer(seqText: string): { record: BackendRecord; index: number | undefined } | undefined {
    const { checker, backend } = this.target;
    const { v, labels } = this;
    const record = backend.bySeq(Number(seqText));
    const ok = checker.check(record !== undefined, () =>
      v("answer-mismatch", labels, "x-backend-seq names a backend record", `x-backend-seq ${seqText}`),
    );
    if (!ok || !record) return undefined;
    checker.check(!record.answered, () =>
      v("answer-twice", labels, "each backend answer delivered once", `x-backend-seq ${seqText} twice`),
    );
    record.answered = true;
    const index = this.indexOf(record.tag);
    checker.check(index !== undefined, () =>
      v(
        "answer-wrong-connection",
        labels,
        "the backend's answer on the connection its request came from",
        `x-backend-seq ${seqText} answers tag ${record.tag} (${record.method} ${record.target.slice(0, 120)}), not sent on this connection`,
      ),
    );
    return { record, index };
  }

  /** `r` answers `record`'s request for the backend: the first one read for its tag is its answer. */
  delivered(record: BackendRecord, r: ParsedResponse): void {
    if (record.tag !== undefined && !this.answers.has(record.tag)) this.answers.set(record.tag, r);
    this.stats.forwarded++;
  }

  /** Response `position` answers request `index`: none before it may answer a later request. */
  checkOrder(position: number, r: ParsedResponse, index: number | undefined): void {
    if (index === undefined) return;
    const last = this.lastIndex;
    this.target.checker.check(index >= last, () => {
      const detail = this.target.words.detailed ? ` (${this.requests[last]?.label}): ${describe(r)}` : "";
      return this.v(
        "order",
        this.labels,
        "answers in the order the requests were sent",
        `response #${position} answers request #${index} (${this.requests[index]?.label}) after one for request #${last}${detail}`,
      );
    });
    this.lastIndex = Math.max(last, index);
  }

  /** No header line the backend got holds a value `r` sent to be dropped (`r.spoofed`). */
  checkNotLeaked(
    r: ExpectedRequest,
    raw: readonly string[],
    kind: string,
    expected: (value: string) => string,
  ): void {
    for (const value of r.spoofed ?? []) {
      const leaked: string[] = [];
      for (let i = 0; i + 1 < raw.length; i += 2)
        if (raw[i + 1]!.includes(value)) leaked.push(`${raw[i]}: ${raw[i + 1]!.slice(0, 120)}`);
      this.target.checker.check(leaked.length === 0, () =>
        this.v(kind, r.label, expected(value), leaked.join("; ")),
      );
    }
  }

  /** The headers `r` must reach the backend with, exactly. */
  checkBackendHeaders(r: ExpectedRequest, headers: IncomingHttpHeaders): void {
    for (const [name, expected] of Object.entries(r.backendHeaders ?? {})) {
      const got = headers[name];
      const text = Array.isArray(got) ? got.join(", ") : got;
      this.target.checker.check(text === expected, () =>
        this.v("backend-header", r.label, `${name}: ${expected}`, `${name}: ${text ?? "(absent)"}`),
      );
    }
  }

  /**
   * The checks once every answer is read: well-formed responses; per request, what reached the
   * backend (and the target's own checks of it); nothing executed left unanswered.
   */
  finish(own: OwnRecordChecks): ExchangeResult {
    const { checker, backend } = this.target;
    const { outcome, v, labels } = this;
    checker.check(outcome.malformed === undefined, () =>
      v("malformed-response", labels, "well-formed HTTP responses", String(outcome.malformed)),
    );
    for (const r of this.requests) {
      const records = backend.byTag(r.tag);
      const info = this.target.tags.get(r.tag)!;
      this.checkReached(r, records, info);
      own.request?.(r, records, info);
      for (const record of records) {
        const { headers, rawHeaders } = record;
        if (!headers || !rawHeaders) continue;
        try {
          own.record({ record, request: r, headers, raw: rawHeaders });
        } finally {
          record.headers = undefined;
          record.rawHeaders = undefined;
          record.body = undefined;
        }
      }
      const refused = r.requestId ? this.refusals.has(r.requestId) : false;
      if (!this.answers.has(r.tag) && !refused && r.label !== "sentinel") this.stats.unanswered++;
    }
    this.checkExecutedAnswered();
    return {
      outcome,
      backendAnswer: (tag) => this.answers.get(tag),
      refusal: (id) => this.refusals.get(id),
      backendSaw: (tag) => backend.byTag(tag).length,
    };
  }

  /** What reached the backend of request `r`, against what it expected. */
  private checkReached(r: ExpectedRequest, records: readonly BackendRecord[], info: TagInfo): void {
    const { checker, words } = this.target;
    const { outcome, v } = this;
    const refusal = r.requestId ? this.refusals.get(r.requestId) : undefined;
    if (r.expect === "refuse") {
      const ok = checker.check(records.length === 0, () => {
        const each = records.map(
          (x) =>
            `${x.method} ${x.target.slice(0, 160)} (seq ${x.seq}${words.detailed ? `, ${x.complete ? "whole body" : "partial"}` : ""})`,
        );
        const client = words.detailed ? `; client got ${describe(this.answers.get(r.tag) ?? refusal)}` : "";
        return v(
          "refused-reached-backend",
          r.label,
          "never reaches the backend",
          `the backend received it: ${each.join("; ")}${client}`,
        );
      });
      if (!ok) info.reported = true;
    } else if (r.expect === "no-execute") {
      const whole = records.filter((x) => x.complete);
      const ok = checker.check(whole.length === 0, () =>
        v(
          "bad-body-executed",
          r.label,
          words.noExecute,
          `${words.detailed ? "the backend received the whole body: " : ""}${whole
            .map((x) => `${x.method} ${x.target.slice(0, 160)} (seq ${x.seq}, ${x.bodyBytes} bytes)`)
            .join("; ")}`,
        ),
      );
      if (!ok) info.reported = true;
    } else if (r.expect === "forward") {
      // Executed but its answer lost is reported once, as executed-unanswered.
      const executed = records.some((x) => x.complete && !x.answered);
      checker.check(this.answers.has(r.tag) || executed, () =>
        v(
          "valid-refused",
          r.label,
          words.forward,
          `${words.detailed ? describe(refusal) : outcome.responses.map(describe).join(" / ") || "no answer"} (ended by ${outcome.endedBy}${outcome.error ? `: ${outcome.error}` : ""})`,
        ),
      );
    }
  }

  /** Executed but not answered: only what this exchange sent, once it is over, unless the client left. */
  private checkExecutedAnswered(): void {
    if (this.abandons) return;
    const { checker, backend, tags, words } = this.target;
    const { outcome } = this;
    for (const r of this.requests) {
      for (const record of backend.byTag(r.tag)) {
        if (!record.complete || record.provoked || record.answered) continue;
        const info = tags.get(r.tag)!;
        // Sent on several connections (concurrent replays): the answer may be read on another
        // one, later; the final sweep checks it.
        if (info.reported || info.exchanges > 1) continue;
        info.reported = true;
        checker.check(false, () =>
          this.v(
            "executed-unanswered",
            r.label,
            `every request the backend executed is answered to the ${words.reader}`,
            `backend seq ${record.seq} (${record.method} ${record.target.slice(0, 160)}) executed, the client read ${outcome.responses.length} answer(s): ${outcome.responses.map(describe).join(" / ")}; ended by ${outcome.endedBy}`,
          ),
        );
      }
    }
  }
}
