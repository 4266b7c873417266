/**
 * The chain's body phases one step at a time, as a BodyInspector (what StreamedBody takes): the
 * `digest`, `body-size` and `body-characters` steps as requestChecks builds them, each on a
 * context of its own, fed real bytes by the tests.
 */

import {
  type CharacterPolicy,
  CheckContext,
  type CheckOptions,
  PERMISSIVE_POLICY,
  requestChecks,
} from "../../src/checks/index.js";
import { reject } from "../../src/errors.js";
import type { BodyInspector } from "../../src/forward/body.js";
import { type DigestValue, DigestVerifier } from "../../src/signature/index.js";

/** Check options with nothing configured beyond what every step needs (no store, no certificate). */
export const BASE_CHECK_OPTIONS: CheckOptions = {
  now: () => 0,
  dateToleranceMs: 60_000,
  algorithms: ["rsa-sha256"],
  allowDecimalSerial: false,
  keyIdPolicy: "strict",
  redirectUriOptionalPrefixes: [],
  characterPolicy: PERMISSIVE_POLICY,
  certificates: { verify: () => reject("CERTIFICATE_INVALID", "not used here") },
  clientCertificate: { mode: "none", requireSameOrganization: true },
  replayWindowMs: 0,
  storeFailOpen: false,
};

function stepInspector(
  name: string,
  options: Partial<CheckOptions>,
  prepare?: (c: CheckContext) => void,
): BodyInspector {
  const step = requestChecks({ ...BASE_CHECK_OPTIONS, ...options }).find((s) => s.name === name);
  if (!step) throw new Error(`no step ${name}`);
  const c = new CheckContext(
    "POST",
    "/v1/payments",
    {},
    { path: "/v1/payments", role: undefined },
    undefined,
  );
  prepare?.(c);
  return {
    step: name,
    update: (chunk) => step.body?.(c, chunk),
    finish: () => step.bodyEnd?.(c),
  };
}

export const digestInspector = (values: readonly DigestValue[]) =>
  stepInspector("digest", {}, (c) => {
    c.digest = values;
    c.digestVerifier = new DigestVerifier(values);
  });

export const sizeInspector = (maxBytes: number) => stepInspector("body-size", { maxBodyBytes: maxBytes });

export const characterInspector = (policy: CharacterPolicy) =>
  stepInspector("body-characters", { characterPolicy: policy });
