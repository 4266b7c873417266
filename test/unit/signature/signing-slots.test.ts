/** SigningSlots: at most `size` signatures at once, the rest in arrival order, a failure frees its slot. */

import { describe, expect, it } from "vitest";
import { PROCESS_SIGNING_SLOTS, SigningSlots } from "../../../src/signature/signing-slots.js";

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("SigningSlots", () => {
  it.each([1, 2, 3])("size %i: never more at once, started in arrival order, every one run", async (size) => {
    const slots = new SigningSlots(size);
    const jobs = Array.from({ length: 7 }, deferred);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const all = jobs.map((job, i) =>
      slots.run(async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await job.promise;
        running--;
        return i;
      }),
    );
    await tick();
    expect(started).toEqual(Array.from({ length: size }, (_, i) => i));
    expect(slots.queued).toBe(7 - size);
    // One finished at a time: each frees the slot for the next in line.
    for (let i = 0; i < jobs.length; i++) {
      jobs[i]!.resolve();
      await tick();
    }
    expect(await Promise.all(all)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(most).toBe(size);
    expect(slots.queued).toBe(0);
  });

  it("a signature that fails gives its slot to the next and its error to its caller", async () => {
    const slots = new SigningSlots(1);
    const first = deferred();
    const failing = slots.run(() => first.promise);
    const next = slots.run(async () => "signed");
    first.reject(new Error("key gone"));
    await expect(failing).rejects.toThrow("key gone");
    await expect(next).resolves.toBe("signed");
    // The slot is free again: a third runs at once.
    await expect(slots.run(async () => 3)).resolves.toBe(3);
  });

  it("the process's slots leave one core to the event loop", async () => {
    const { availableParallelism } = await import("node:os");
    expect(PROCESS_SIGNING_SLOTS.size).toBe(Math.max(1, availableParallelism() - 1));
  });
});
