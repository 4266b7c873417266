/**
 * Issue 42: a bench must not report refusals as throughput. A run whose server answered non-2xx it
 * was not asked for, whose requests failed or timed out, or whose presigned pool wrapped round (its
 * repeats are replays, which the replay store refuses) measured something else than the path it
 * names: its req/s and CPU per request are not a result. `judgeRun` says whether a run is one, and
 * if not, what happened and what to set. Pure: no I/O; the benches print and exit (bench/harness.ts
 * `Judged`).
 */

/** What a run produced, as far as its validity goes. */
export interface RunFacts {
  /** Answers outside 2xx. */
  readonly non2xx: number;
  /** Requests that failed without an answer, timeouts included. */
  readonly errors: number;
  /** Of `errors`, how many timed out (autocannon counts a timeout as an error too). */
  readonly timeouts?: number;
  /** Requests written, and answered, in the measured phase. */
  readonly sent?: number;
  readonly completed?: number;
  /** Answers by status code ("401": n), to name them in the reason. */
  readonly statuses?: Readonly<Record<string, number>>;
  /**
   * A pool of single-use requests (each presigned once, with its own X-Request-ID): its size and how
   * many of its entries the warm-up and the measured phase (and any checked request before them)
   * took together. Leave it out for a pool whose entries may be sent again (unsigned egress requests).
   */
  readonly pool?: { readonly size: number; readonly consumed: number };
  /** The run asks for non-2xx answers (a limit route where 429 is the point): they do not make it invalid. */
  readonly non2xxAskedFor?: boolean;
  /**
   * The environment variables that set the pool's size and the run's length, to name in the
   * reason; default BENCH_POOL, and BENCH_WARMUP and BENCH_SECONDS.
   */
  readonly knobs?: { readonly pool?: string; readonly shorten?: readonly string[] };
}

export type Verdict = { readonly valid: true } | { readonly valid: false; readonly reasons: string[] };

/** A pool size that leaves room: the consumed count plus 10 %, rounded up to its leading digit. */
export function poolToSet(consumed: number): number {
  const wanted = Math.ceil(consumed * 1.1);
  const step = 10 ** Math.max(0, Math.floor(Math.log10(wanted)));
  return Math.ceil(wanted / step) * step;
}

const byStatus = (statuses: Readonly<Record<string, number>> | undefined) => {
  const refused = Object.entries(statuses ?? {}).filter(([code, n]) => n > 0 && !code.startsWith("2"));
  return refused.length === 0 ? "" : ` (${refused.map(([code, n]) => `${code} × ${n}`).join(", ")})`;
};

export function judgeRun(facts: RunFacts): Verdict {
  const reasons: string[] = [];
  const answered = facts.completed ?? facts.sent;
  const poolVariable = facts.knobs?.pool ?? "BENCH_POOL";
  const shorten = facts.knobs?.shorten ?? ["BENCH_WARMUP", "BENCH_SECONDS"];

  if (facts.non2xx > 0 && !facts.non2xxAskedFor)
    reasons.push(
      `${facts.non2xx}${answered !== undefined ? ` of ${answered}` : ""} answers were non-2xx${byStatus(facts.statuses)} and none were asked for: req/s and CPU per request would count refusals, not throughput; find why (the gateway's log, a wrapped pool below) and re-run`,
    );

  const failed = Math.max(facts.errors, facts.timeouts ?? 0);
  if (failed > 0) {
    const timeouts = facts.timeouts ?? 0;
    reasons.push(
      `${failed} requests failed without an answer${timeouts > 0 ? ` (${timeouts} of them timed out)` : ""}: the server was down, overloaded or refusing connections; find why and re-run`,
    );
  }

  if (facts.completed !== undefined && facts.completed === 0 && failed === 0)
    reasons.push("no request was answered: there is nothing to measure");

  if (facts.pool && facts.pool.consumed > facts.pool.size) {
    const { size, consumed } = facts.pool;
    reasons.push(
      `the presigned pool of ${size} wrapped: warm-up and run sent ${consumed} requests (${consumed - size} of them repeats, which the replay store refuses); set ${poolVariable} ≥ ${poolToSet(consumed)}${shorten.length > 0 ? ` or lower ${shorten.join("/")}` : ""}`,
    );
  }

  return reasons.length === 0 ? { valid: true } : { valid: false, reasons };
}
