/**
 * FUZZ_EVIDENCE=1: the ingress gateway keeps evidence (issue 40) under `onFailure: refuse` for every
 * route, and after the run its folder is held to what the backend received:
 *
 * - the chain verifies (`evidence verify`'s check: every line canonical, linked, in order);
 * - every request the backend executed whole has its record: for each method and target, at least
 *   as many records as requests the backend received whole (a request is recorded before its last
 *   chunk is forwarded, so nothing forwarded whole lacks one);
 * - no refused request has one, and none has two: at most as many records as requests that reached
 *   the backend at all (a record whose request then failed on the way, the TPP gone or the backend
 *   cut, is counted as reaching it: the record is kept before the last chunk is sent).
 *
 * - every answer the gateway signed (responseSigning) keeps what it signed: signed bytes (or their
 *   SHA-256), signature and signedWith, whatever its request's dialect.
 *
 * Records and requests are matched by method and target: every fuzz request's target is its own
 * (`fz=<tag>`), the same one sent twice only by a replay, which the backend sees once.
 */

import { join } from "node:path";
import { chainLines, checkpointKeys, readEvidenceFolder, verifyChain } from "../../src/evidence/index.js";
import type { FuzzBackend } from "./backend.js";
import type { Checker } from "./verdicts.js";

/** The ingress config's evidence block for a run with evidence on. */
export function fuzzEvidenceConfig(dir: string): Record<string, unknown> {
  return {
    folder: join(dir, "evidence"),
    instanceId: "fuzz",
    bodies: "payments",
    onFailure: "refuse",
  };
}

export function evidenceFolderOf(dir: string): string {
  return join(dir, "evidence");
}

/** The invariants above, each key one check. */
export function checkEvidence(
  folder: string,
  backend: FuzzBackend,
  checker: Checker,
): { records: number; signedAnswers: number; chains: number } {
  const read = readEvidenceFolder(folder);
  const violation = (label: string, expected: string, got: string) => ({
    kind: "evidence",
    family: "(evidence)",
    caseIndex: -1,
    label,
    expected,
    got,
    bytes: "",
  });
  const records = new Map<string, number>();
  let total = 0;
  let signedAnswers = 0;
  const keyOf = checkpointKeys((id) => read.publicKeyPem(id));
  for (const chain of read.chains) {
    const report = verifyChain(chain, keyOf);
    checker.check(report.problem === undefined && report.dropped === 0, () =>
      violation(
        `chain ${chain.id}`,
        "a chain that verifies, with no record dropped (onFailure refuse)",
        report.problem?.text ?? `${report.dropped} records dropped`,
      ),
    );
    for (const p of chainLines(chain)) {
      // An answer the gateway signed (responseSigning): what it signed is kept, in its request's dialect.
      if (p.line.type === "response" && p.line.verdict === "signed") {
        const line = p.line;
        checker.check(
          (line.signedBytes !== undefined || line.signedBytesSha256 !== undefined) &&
            line.signature !== undefined &&
            line.signedWith !== undefined,
          () =>
            violation(
              `signed answer ${line.requestId ?? "?"} (${line.dialect})`,
              "a signed answer's record keeps its signed bytes, signature and signedWith",
              JSON.stringify({
                signedBytes: line.signedBytes !== undefined,
                signature: line.signature !== undefined,
              }),
            ),
        );
        signedAnswers += 1;
      }
      if (p.line.type !== "request") continue;
      total += 1;
      const key = `${p.line.method} ${p.line.target}`;
      records.set(key, (records.get(key) ?? 0) + 1);
    }
  }
  const reached = new Map<string, { whole: number; any: number }>();
  for (const r of backend.records) {
    const key = `${r.method} ${r.target}`;
    const counts = reached.get(key) ?? { whole: 0, any: 0 };
    counts.any += 1;
    if (r.complete) counts.whole += 1;
    reached.set(key, counts);
  }
  for (const key of new Set([...records.keys(), ...reached.keys()])) {
    const kept = records.get(key) ?? 0;
    const { whole, any } = reached.get(key) ?? { whole: 0, any: 0 };
    checker.check(kept >= whole && kept <= any, () =>
      violation(
        key.slice(0, 200),
        "one record per request the backend executed, none for a request it never saw",
        `${kept} records; the backend received it ${any}×, whole ${whole}×`,
      ),
    );
  }
  return { records: total, signedAnswers, chains: read.chains.length };
}
