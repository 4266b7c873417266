/** The inspectors a request body passes through on its way to the backend. */

import { type CharacterPolicy, Utf8Scanner } from "../checks/index.js";
import { type Rejection, reject } from "../errors.js";
import type { BodyInspector } from "../forward/body.js";
import { type DigestValue, DigestVerifier } from "../signature/index.js";

export function digestInspector(values: readonly DigestValue[]): BodyInspector {
  const verifier = new DigestVerifier(values);
  return {
    // The body against the Digest the `digest` step parsed (`verify` prints the same name).
    step: "body-digest",
    update(chunk) {
      verifier.update(chunk);
      return undefined;
    },
    finish() {
      const result = verifier.finish();
      return result === true ? undefined : result;
    },
  };
}

export function sizeInspector(maxBytes: number): BodyInspector {
  let received = 0;
  return {
    step: "body-size",
    update(chunk): Rejection | undefined {
      received += chunk.length;
      if (received > maxBytes) {
        return reject(
          "PAYLOAD_TOO_LARGE",
          `the request body exceeds ${maxBytes} bytes, the most this bank accepts`,
        );
      }
      return undefined;
    },
    finish: () => undefined,
  };
}

export function characterInspector(policy: CharacterPolicy): BodyInspector {
  const scanner = new Utf8Scanner(policy, "the JSON body", true);
  return {
    step: "body-characters",
    update: (chunk) => scanner.update(chunk),
    finish: () => scanner.finish(),
  };
}
