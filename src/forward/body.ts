/**
 * The request body on its way upstream. Each chunk is shown to the inspectors (digest, size,
 * character policy) and passed on one chunk late: the last chunk is released only after every
 * inspector has approved the whole body, so a backend never receives a complete body whose
 * digest failed. On a refusal the iterator throws, which aborts the upstream request.
 */

import type { Readable } from "node:stream";
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

const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * A client's request body streamed upstream straight from its request stream: each chunk shown to
 * the inspectors (none when the chain inspects no body) and passed on one chunk late, the last only
 * once every inspector approved the whole body; stoppable at any moment (`stop`): without it, a body
 * whose client stops sending (a request refused mid-body, answered, its stream never ended) would
 * keep its backend connection busy for ever, since undici leaves ending an iterable body to whoever
 * made it. One
 * iterator on the stream's own `readable` events where three async generators were stacked (Node's
 * request iterator, the inspection, the stop), which allocated about 4 KB a POST (bench/RESULTS.md).
 *
 * It listens to the request only once undici reads it (the ingress handler fails a body that stops
 * arriving through the request's `error` event when, and only when, someone listens), and on
 * leaving it leaves the request undestroyed: Node reads and drops what the client still sends.
 */
export class StreamedBody implements AsyncIterableIterator<Buffer> {
  ended = false;
  private held: Buffer | undefined = undefined;
  private failure: Error | undefined = undefined;
  private sourceEnded = false;
  /** Every inspector approved the whole body (finish() is called once). */
  private approved = false;
  private listening = false;
  private waiting: { resolve(result: IteratorResult<Buffer>): void; reject(error: Error): void } | undefined =
    undefined;

  constructor(
    private readonly source: Readable,
    private readonly inspectors: readonly BodyInspector[],
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Buffer>> {
    if (!this.listening && !this.ended && this.failure === undefined) this.listen();
    const now = this.take();
    if (now instanceof Error) return Promise.reject(now);
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** undici leaves the loop early (its socket failed): the request is left to Node, not destroyed. */
  return(): Promise<IteratorResult<Buffer>> {
    this.ended = true;
    this.unlisten();
    return Promise.resolve(DONE);
  }

  stop(error: Error): void {
    this.fail(error);
  }

  /**
   * What a read gives now: a chunk, the end, the failure, or undefined when the client must send more.
   * Not named `read`: undici calls `body.read(0)` on any body that has one, and would take a chunk.
   */
  private take(): IteratorResult<Buffer> | Error | undefined {
    if (this.failure !== undefined) return this.failure;
    if (this.ended) return DONE;
    for (;;) {
      const chunk = this.source.read() as Buffer | null;
      if (chunk === null) break;
      for (const inspector of this.inspectors) {
        const refusal = inspector.update(chunk);
        if (refusal) return this.failWith(new BodyRejected(refusal, inspector.step));
      }
      const out = this.held;
      this.held = chunk;
      if (out !== undefined) return { value: out, done: false };
    }
    if (!this.sourceEnded) return undefined;
    if (!this.approved) {
      for (const inspector of this.inspectors) {
        const refusal = inspector.finish();
        if (refusal) return this.failWith(new BodyRejected(refusal, inspector.step));
      }
      this.approved = true;
    }
    const last = this.held;
    if (last !== undefined) {
      this.held = undefined;
      return { value: last, done: false };
    }
    this.ended = true;
    this.unlisten();
    return DONE;
  }

  private readonly wake = (): void => {
    const waiting = this.waiting;
    if (waiting === undefined) return;
    // Taken before reading: a read may emit an event that wakes this again, which must find no one waiting.
    this.waiting = undefined;
    const now = this.take();
    if (now === undefined) {
      this.waiting = waiting;
      return;
    }
    if (now instanceof Error) waiting.reject(now);
    else waiting.resolve(now);
  };

  private readonly onEnd = (): void => {
    this.sourceEnded = true;
    this.wake();
  };

  /** A BodyRejected from the ingress handler (the body stopped arriving) as it is; anything else is the client gone. */
  private readonly onError = (error: Error): void => {
    this.fail(error instanceof BodyRejected ? error : new ClientAborted(error.message));
  };

  private readonly onClose = (): void => {
    if (!this.sourceEnded) this.fail(new ClientAborted("the client closed before its body ended"));
  };

  private fail(error: Error): void {
    if (this.ended || this.failure !== undefined) return;
    this.failWith(error);
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(error);
  }

  private failWith(error: Error): Error {
    this.failure = error;
    this.held = undefined;
    this.unlisten();
    return error;
  }

  private listen(): void {
    this.listening = true;
    this.sourceEnded = this.source.readableEnded;
    this.source.on("readable", this.wake);
    this.source.on("end", this.onEnd);
    this.source.on("error", this.onError);
    this.source.on("close", this.onClose);
  }

  private unlisten(): void {
    if (!this.listening) return;
    this.listening = false;
    this.source.off("readable", this.wake);
    this.source.off("end", this.onEnd);
    this.source.off("error", this.onError);
    this.source.off("close", this.onClose);
  }
}
