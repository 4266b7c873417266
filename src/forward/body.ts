/**
 * The request body on its way upstream. Each chunk is shown to the inspectors (digest, size,
 * character policy) and passed on one chunk late: the last chunk is released only after every
 * inspector has approved the whole body, so a backend never receives a complete body whose
 * digest failed. On a refusal the iterator throws, which aborts the upstream request.
 */

import type { Rejection } from "../errors.js";

export interface BodyInspector {
  /** The step its refusals are logged under, when the inspector names it (a chain names its own). */
  readonly step?: string;
  /** Sees each chunk in order; returns a rejection to stop the body. */
  update(chunk: Buffer): Rejection | undefined;
  /** Called once after the last chunk; returns a rejection to withhold the tail. */
  finish(): Rejection | undefined;
}

/** Thrown inside the body iterator so that undici aborts the upstream request. */
export class BodyRejected extends Error {
  constructor(
    readonly rejection: Rejection,
    /** The step that refused the body, when the refuser did not record it itself. */
    readonly step?: string,
  ) {
    super(rejection.text);
  }
}

/** Thrown when the client went away before sending its whole body. */
export class ClientAborted extends Error {}

export async function* inspectedBody(
  source: AsyncIterable<Buffer>,
  inspectors: readonly BodyInspector[],
): AsyncGenerator<Buffer> {
  let held: Buffer | undefined;
  try {
    for await (const chunk of source) {
      for (const inspector of inspectors) {
        const refusal = inspector.update(chunk);
        if (refusal) throw new BodyRejected(refusal, inspector.step);
      }
      if (held) yield held;
      held = chunk;
    }
  } catch (error) {
    if (error instanceof BodyRejected) throw error;
    throw new ClientAborted((error as Error).message);
  }
  for (const inspector of inspectors) {
    const refusal = inspector.finish();
    if (refusal) throw new BodyRejected(refusal, inspector.step);
  }
  if (held) yield held;
}

/**
 * A request body on its way upstream that the forwarder can stop at any moment, even while it
 * waits for the client's next chunk. Without it, a body whose client stops sending (a request
 * refused mid-body, answered, its stream never ended) would keep its backend connection busy for
 * ever: undici leaves ending an async-iterable body to whoever made it.
 */
export class StoppableBody implements AsyncIterable<Buffer> {
  private stopped: Error | undefined = undefined;
  private wake: ((error: Error) => void) | undefined = undefined;
  /** Read to its end: nothing left to stop (and no error worth making). */
  ended = false;

  constructor(private readonly source: AsyncIterable<Buffer>) {}

  /** The next read (or the one waiting) throws `error`; undici then aborts the upstream request. */
  stop(error: Error): void {
    if (this.stopped) return;
    this.stopped = error;
    this.wake?.(error);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    if (this.stopped) throw this.stopped;
    const stopped = new Promise<never>((_resolve, reject) => (this.wake = reject));
    stopped.catch(() => {}); // read by the race below, or never
    const chunks = this.source[Symbol.asyncIterator]();
    for (;;) {
      const next = await Promise.race([chunks.next(), stopped]);
      if (next.done) {
        this.ended = true;
        return;
      }
      yield next.value;
    }
  }
}
