/**
 * How many RSA/ECDSA signatures run at once on libuv's thread pool. Unbounded, every signature of
 * a saturated gateway competes with the event loop for the cores (libuv has 4 threads whatever
 * the machine), and requests that need no signature wait behind them: bench/signing.ts measured a
 * verified-only request's p99 at 8.4× its idle value with the pool free, 3.4× with one signing
 * thread, at the same signing throughput. One core is left to the event loop; the rest sign, in
 * arrival order. The queue is bounded by the requests in flight, which the listeners bound.
 */

import { availableParallelism } from "node:os";

export class SigningSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {}

  /** Runs `work` when a slot is free; the slot is given back when its promise settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next in line; `running` counts it still.
      if (next) next();
      else this.running--;
    }
  }

  /** Signatures waiting for a slot (for metrics and tests). */
  get queued(): number {
    return this.waiting.length;
  }
}

/** Shared by every signer of the process: the thread pool and the cores are the process's. */
export const PROCESS_SIGNING_SLOTS = new SigningSlots(Math.max(1, availableParallelism() - 1));
