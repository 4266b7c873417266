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
