/**
 * The runner of the named checks: an ordered list of steps, each returning nothing (go on), a
 * Rejection (stop) or a promise of either. It stays synchronous until a step really returns a
 * promise, so a request whose certificate verdict is cached is checked without a microtask.
 */

import { isRejection, type Rejection } from "../errors.js";

export type MaybePromise<T> = T | Promise<T>;

/** What a step returns: undefined to go on, a Rejection to stop. */
export type StepResult = Rejection | undefined;

export interface Step<C> {
  /** Metric label, log field and the line `psd2-gateway verify` prints. */
  readonly name: string;
  run(context: C): MaybePromise<StepResult>;
}

/** Told about every step that ran, in order (explain mode, tests); not used on the hot path. */
export type StepObserver = (name: string, outcome: Rejection | "passed", ms: number) => void;

/** Where the runner records which step refused, for the access line and the metric label. */
export interface StepTrace {
  failedStep: string | undefined;
}

/**
 * Runs `steps` from `from` on. Returns undefined when every step passed, otherwise the first
 * Rejection (and `context.failedStep` names its step).
 */
export function runSteps<C extends StepTrace>(
  steps: readonly Step<C>[],
  context: C,
  observer?: StepObserver,
  from = 0,
): MaybePromise<StepResult> {
  for (let i = from; i < steps.length; i++) {
    const step = steps[i]!;
    const started = observer ? performance.now() : 0;
    const result = step.run(context);
    if (result === undefined) {
      observer?.(step.name, "passed", performance.now() - started);
      continue;
    }
    if (result instanceof Promise) {
      return result.then((settled) => {
        if (settled === undefined) {
          observer?.(step.name, "passed", performance.now() - started);
          return runSteps(steps, context, observer, i + 1);
        }
        return stopAt(step, settled, context, observer, started);
      });
    }
    return stopAt(step, result, context, observer, started);
  }
  return undefined;
}

function stopAt<C extends StepTrace>(
  step: Step<C>,
  rejection: Rejection,
  context: C,
  observer: StepObserver | undefined,
  started: number,
): Rejection {
  context.failedStep = step.name;
  observer?.(step.name, rejection, performance.now() - started);
  return rejection;
}

/** For steps that call something returning `value | Rejection`. */
export function rejectionOf(value: unknown): Rejection | undefined {
  return isRejection(value) ? value : undefined;
}
