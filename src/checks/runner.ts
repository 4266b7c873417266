/**
 * The one chain of named steps and its runner, in the manner of Envoy's HTTP filters and fastify's
 * hooks: each step may act in any of the request's phases — its head (`run`), each body chunk,
 * the body's end, the backend's response head and the held response body — and a refusal in any
 * phase names the step. The head phase stays synchronous until a step really returns a promise,
 * so a request whose certificate verdict is cached is checked without a microtask. The chain
 * counts, per step, its passes and refusals (read by the metrics at scrape time).
 */

import { isRejection, type Rejection } from "../errors.js";
import type { ReceivedHeaders } from "../response-inspector.js";

export type MaybePromise<T> = T | Promise<T>;

/** What a step returns: undefined to go on, a Rejection to stop. */
export type StepResult = Rejection | undefined;

/** A step's wish to see the backend's response body before it goes out. */
export interface ResponseHold {
  /** The most it holds; past this, `tooLarge` decides. */
  readonly maxBodyBytes: number;
  /**
   * A response over `maxBodyBytes`: a rejection withholds it; undefined lets it pass without this
   * step (which may mark `send`, the head about to go out). Without it the response is withheld.
   */
  tooLarge?(send: Record<string, string | string[]>): Rejection | undefined;
}

export interface Step<C> {
  /** Metric label, log field and the line `psd2-gateway verify` prints. */
  readonly name: string;
  /**
   * The signing dialects (checks/dialects.ts) whose requests this step checks; it is skipped, and
   * not counted, for a request verified by another. Every request's when absent.
   */
  readonly dialects?: readonly string[];
  /** The request's head: go on, refuse, or a promise of either. */
  run?(context: C): MaybePromise<StepResult>;
  /** Each chunk of the request body, in order, while it streams to the backend. */
  body?(context: C, chunk: Buffer): StepResult;
  /** The request body has ended: its last chunk is held back until every step passes here. */
  bodyEnd?(context: C): StepResult;
  /**
   * The backend's response head: a hold to see its body (`responseBody`), or undefined. `send` is
   * the head about to go out, which the step may take from (a header meant for the gateway only).
   */
  response?(
    context: C,
    status: number,
    received: ReceivedHeaders,
    send: Record<string, string | string[]>,
  ): ResponseHold | undefined;
  /**
   * The held response body: a refusal withholds the response (answered instead); `send` is the
   * head about to go out, which the step may add to.
   */
  responseBody?(
    context: C,
    body: Buffer,
    received: ReceivedHeaders,
    send: Record<string, string | string[]>,
  ): MaybePromise<StepResult>;
}

/** Told about every head step that ran, in order (explain mode, tests); not used on the hot path. */
export type StepObserver = (name: string, outcome: Rejection | "passed", ms: number) => void;

/** Where the runner records which step refused, for the access line and the metric label. */
export interface StepTrace {
  failedStep: string | undefined;
  /** The signing dialect the request is verified by, once chosen (steps of others are skipped). */
  readonly dialect?: string;
}

/** Whether `step` checks this request (it belongs to every dialect, or to the request's). */
function applies<C extends StepTrace>(step: Step<C>, context: C): boolean {
  const only = step.dialects;
  return only === undefined || only.includes(context.dialect!);
}

/** A response step holding the body, and its bound. */
export interface Holder<C> {
  readonly step: Step<C>;
  readonly hold: ResponseHold;
  readonly maxBodyBytes: number;
}

/** The phases' verdicts per step since start: passes and refusals, indexed like `steps`. */
export interface StepCounts {
  readonly names: readonly string[];
  readonly passed: readonly number[];
  readonly refused: readonly number[];
}

/** The counts of no step. */
export const NO_COUNTS: StepCounts = { names: [], passed: [], refused: [] };

/** Both counts added up by step name: `a`'s steps in their order, then those only `b` has. */
export function sumCounts(a: StepCounts, b: StepCounts): StepCounts {
  const names = [...a.names, ...b.names.filter((name) => !a.names.includes(name))];
  const of = (counts: StepCounts, kind: "passed" | "refused", name: string) => {
    const at = counts.names.indexOf(name);
    return at < 0 ? 0 : counts[kind][at]!;
  };
  return {
    names,
    passed: names.map((name) => of(a, "passed", name) + of(b, "passed", name)),
    refused: names.map((name) => of(a, "refused", name) + of(b, "refused", name)),
  };
}

export class Chain<C extends StepTrace> {
  readonly names: readonly string[];
  // Each phase's steps, in chain order, with their positions in `steps` (the counters' index).
  private readonly head: readonly Step<C>[];
  private readonly headAt: readonly number[];
  private readonly bodySteps: readonly Step<C>[];
  private readonly endSteps: readonly Step<C>[];
  private readonly responseSteps: readonly Step<C>[];
  private readonly index: ReadonlyMap<Step<C>, number>;
  private readonly passed: number[];
  private readonly refused: number[];

  constructor(readonly steps: readonly Step<C>[]) {
    const names = steps.map((s) => s.name);
    if (new Set(names).size !== names.length) throw new Error(`step names repeat: ${names.join(", ")}`);
    this.names = names;
    this.head = steps.filter((s) => s.run);
    this.headAt = this.head.map((s) => steps.indexOf(s));
    this.bodySteps = steps.filter((s) => s.body);
    this.endSteps = steps.filter((s) => s.bodyEnd);
    this.responseSteps = steps.filter((s) => s.response);
    this.index = new Map(steps.map((s, i) => [s, i]));
    this.passed = steps.map(() => 0);
    this.refused = steps.map(() => 0);
  }

  /** Whether any step looks at the request body (otherwise it streams untouched). */
  get inspectsBody(): boolean {
    return this.bodySteps.length > 0 || this.endSteps.length > 0;
  }

  counts(): StepCounts {
    return { names: this.names, passed: [...this.passed], refused: [...this.refused] };
  }

  /** The head phase: undefined when every step passed, otherwise the first refusal. */
  runHead(context: C, observer?: StepObserver, from = 0): MaybePromise<StepResult> {
    const steps = this.head;
    for (let i = from; i < steps.length; i++) {
      const step = steps[i]!;
      if (!applies(step, context)) continue;
      const started = observer ? performance.now() : 0;
      const result = step.run!(context);
      if (result === undefined) {
        this.passed[this.headAt[i]!]! += 1;
        if (observer) observer(step.name, "passed", performance.now() - started);
        continue;
      }
      if (result instanceof Promise) return this.afterPromise(result, context, observer, i, started);
      observer?.(step.name, result, performance.now() - started);
      return this.refuse(step, result, context);
    }
    return undefined;
  }

  /**
   * The head phase past a step that returned a promise. Apart from runHead on purpose: a closure
   * inside its loop would capture the loop's variables, and V8 would then allocate a context for
   * every iteration of every request (about 2 KB per request, issue 42), promise or not.
   */
  private afterPromise(
    result: Promise<StepResult>,
    context: C,
    observer: StepObserver | undefined,
    i: number,
    started: number,
  ): Promise<StepResult> {
    const step = this.head[i]!;
    return result.then((settled) => {
      if (settled === undefined) {
        this.passed[this.headAt[i]!]! += 1;
        observer?.(step.name, "passed", performance.now() - started);
        return this.runHead(context, observer, i + 1);
      }
      observer?.(step.name, settled, performance.now() - started);
      return this.refuse(step, settled, context);
    });
  }

  /** One chunk of the request body past every body step. */
  runBody(context: C, chunk: Buffer): StepResult {
    for (const step of this.bodySteps) {
      if (!applies(step, context)) continue;
      const result = step.body!(context, chunk);
      if (result !== undefined) return this.refuse(step, result, context);
    }
    return undefined;
  }

  /** The body has ended: every step's verdict on the whole of it. */
  runBodyEnd(context: C): StepResult {
    for (const step of this.endSteps) {
      if (!applies(step, context)) continue;
      const result = step.bodyEnd!(context);
      if (result !== undefined) return this.refuse(step, result, context);
      this.pass(step);
    }
    return undefined;
  }

  /** The backend's response head: the steps that hold its body, in chain order (none: it streams). */
  holders(
    context: C,
    status: number,
    received: ReceivedHeaders,
    send: Record<string, string | string[]>,
  ): Holder<C>[] | undefined {
    let holders: Holder<C>[] | undefined;
    for (const step of this.responseSteps) {
      if (!applies(step, context)) continue;
      const hold = step.response!(context, status, received, send);
      if (!hold) continue;
      holders ??= [];
      holders.push({ step, hold, maxBodyBytes: hold.maxBodyBytes });
    }
    return holders;
  }

  /** The held response body past its holders, in order; a refusal withholds it. */
  async runResponseBody(
    context: C,
    holders: readonly Holder<C>[],
    body: Buffer,
    received: ReceivedHeaders,
    send: Record<string, string | string[]>,
  ): Promise<StepResult> {
    for (const { step } of holders) {
      const result = await step.responseBody?.(context, body, received, send);
      if (result !== undefined) return this.refuse(step, result, context);
      this.pass(step);
    }
    return undefined;
  }

  /** A refusal by `step` outside the runner's own loops (a held response grown too large). */
  refuse(step: Step<C>, rejection: Rejection, context: C): Rejection {
    context.failedStep = step.name;
    const i = this.index.get(step);
    if (i !== undefined) this.refused[i]! += 1;
    return rejection;
  }

  private pass(step: Step<C>): void {
    const i = this.index.get(step);
    if (i !== undefined) this.passed[i]! += 1;
  }
}

/**
 * Runs `steps`' head phase (a list that is not a Chain: egress's checks of a bank's response).
 * Returns undefined when every step passed, otherwise the first Rejection, its step named in
 * `context.failedStep`.
 */
export function runSteps<C extends StepTrace>(
  steps: readonly Step<C>[],
  context: C,
  observer?: StepObserver,
): MaybePromise<StepResult> {
  return new Chain(steps).runHead(context, observer);
}

/** For steps that call something returning `value | Rejection`. */
export function rejectionOf(value: unknown): Rejection | undefined {
  return isRejection(value) ? value : undefined;
}
