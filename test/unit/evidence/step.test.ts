/**
 * The `evidence` step (src/evidence/step.ts): what it records from the steps' context, which bodies
 * it keeps, and what `onFailure` does when the store cannot take a record: `refuse` answers 503
 * (and gives back an unattended slot), `continue` lets the request on.
 */

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CheckContext, type Route } from "../../../src/checks/index.js";
import { EvidenceChain, type RecordLine, type RequestCapture } from "../../../src/evidence/record.js";
import { type EvidenceSink, evidenceStep, type FailurePolicy } from "../../../src/evidence/step.js";
import { computeDigestHeader, DigestVerifier, parseDigestHeader } from "../../../src/signature/digest.js";
import {
  ContentDigestVerifier,
  computeContentDigest,
  parseContentDigest,
} from "../../../src/signature/rfc9421/content-digest.js";

const BODY = Buffer.from('{"instructedAmount":{"currency":"EUR","amount":"12.30"}}');
const PAYMENTS: Route = { path: "/v1/payments/sepa-credit-transfers", role: "PSP_PI" };
const ACCOUNTS: Route = { path: "/v1/accounts", role: "PSP_AI" };

class Sink implements EvidenceSink {
  /** Each offered record as the line the writer makes of it (what a dispute reads). */
  readonly offered: { evidence: RecordLine; capture: RequestCapture; mustKeep: boolean }[] = [];
  readonly certificates: string[] = [];
  constructor(private readonly takes: boolean) {}
  offer(capture: RequestCapture, mustKeep: boolean): boolean {
    const evidence = JSON.parse(new EvidenceChain("test").appendRequest(capture)) as RecordLine;
    this.offered.push({ evidence, capture, mustKeep });
    return this.takes;
  }
  accepting(): boolean {
    return this.takes;
  }
  hasCertificate(): boolean {
    return this.certificates.length > 0;
  }
  putCertificate(fingerprint: string): void {
    this.certificates.push(fingerprint);
  }
}

function context(method: string, route: Route, headers: Record<string, string> = {}): CheckContext {
  const c = new CheckContext(method, route.path, { "x-request-id": "req-1", ...headers }, route, undefined);
  c.dialect = "cavage";
  c.signedWith = "rsa-sha256";
  c.signingString = Buffer.from("(request-target): post /v1/payments\nx-request-id: req-1");
  c.dialectState = { signatureBytes: Buffer.from("sig") };
  c.certificate = {
    identity: { organizationId: "PSDXX-NCA-A", name: "A", roles: new Set(), fingerprint: "ab".repeat(32) },
    reportId: "report-1",
  } as unknown as CheckContext["certificate"];
  return c;
}

const step = (sink: EvidenceSink, payments: FailurePolicy = "refuse", others: FailurePolicy = "continue") =>
  evidenceStep({
    sink,
    bodies: "payments",
    onFailure: { payments, others },
    now: () => Date.UTC(2026, 0, 1),
  });

describe("the evidence step", () => {
  it("records a request without a body in the head phase, with what the steps learnt", () => {
    const sink = new Sink(true);
    const c = context("GET", ACCOUNTS, {
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    });
    expect(step(sink).run!(c)).toBeUndefined();
    expect(sink.offered).toHaveLength(1);
    const { evidence, mustKeep } = sink.offered[0]!;
    expect(mustKeep).toBe(false); // an account read: continue by default
    expect(evidence).toMatchObject({
      time: "2026-01-01T00:00:00.000Z",
      requestId: "req-1",
      traceId: "0af7651916cd43dd8448eb211c80319c",
      organizationId: "PSDXX-NCA-A",
      certificate: "ab".repeat(32),
      dialect: "cavage",
      signedWith: "rsa-sha256",
      signedBytes: c.signingString!.toString("base64"),
      signature: Buffer.from("sig").toString("base64"),
      bodyDigest: `sha-256=:${createHash("sha256").digest("base64")}:`,
      validationReport: "report-1",
      indication: "TOTAL_PASSED",
      verdict: "accepted",
    });
    expect(evidence.body).toBeUndefined();
    // The request pays for references: the writer encodes them.
    expect(sink.offered[0]!.capture.signedBytes).toBe(c.signingString);
  });

  it("a payment's body is hashed as it streams and kept; the record is made at its end", () => {
    const sink = new Sink(true);
    const s = step(sink);
    const c = context("POST", PAYMENTS, { "content-length": "11" });
    expect(s.run!(c)).toBeUndefined();
    expect(sink.offered).toHaveLength(0);
    s.body!(c, Buffer.from("hello "));
    s.body!(c, Buffer.from("world"));
    expect(s.bodyEnd!(c)).toBeUndefined();
    const { evidence, mustKeep } = sink.offered[0]!;
    expect(mustKeep).toBe(true);
    expect(Buffer.from(evidence.body!, "base64").toString()).toBe("hello world");
    expect(evidence.bodyDigest).toBe(
      `sha-256=:${createHash("sha256").update("hello world").digest("base64")}:`,
    );
  });

  // The digest step runs before the evidence step and has verified the body by then: a stated
  // SHA-256 is taken as the body's instead of hashing the body twice; any other is hashed here.
  it.each([
    ["Digest SHA-256", () => new DigestVerifier(parseDigestHeader(computeDigestHeader(BODY)) as never)],
    [
      "Digest SHA-512",
      () => new DigestVerifier(parseDigestHeader(computeDigestHeader(BODY, "sha-512")) as never),
    ],
    [
      "Content-Digest sha-256",
      () => new ContentDigestVerifier(parseContentDigest(computeContentDigest(BODY, "sha-256")) as never),
    ],
    [
      "Content-Digest sha-512",
      () => new ContentDigestVerifier(parseContentDigest(computeContentDigest(BODY, "sha-512")) as never),
    ],
    ["no digest header (UK OB)", () => undefined],
  ])("the body digest recorded is the body's SHA-256 (%s)", (_, verifier) => {
    const sink = new Sink(true);
    const s = step(sink);
    const c = context("POST", PAYMENTS, { "content-length": String(BODY.length) });
    c.digestVerifier = verifier();
    expect(s.run!(c)).toBeUndefined();
    c.digestVerifier?.update(BODY);
    s.body!(c, BODY);
    expect(c.digestVerifier?.finish() ?? true).toBe(true);
    expect(s.bodyEnd!(c)).toBeUndefined();
    expect(sink.offered[0]!.evidence.bodyDigest).toBe(
      `sha-256=:${createHash("sha256").update(BODY).digest("base64")}:`,
    );
  });

  it("an account call's body is hashed but not kept under bodies: payments", () => {
    const sink = new Sink(true);
    const s = step(sink);
    const c = context("POST", ACCOUNTS, { "content-length": "2" });
    s.run!(c);
    s.body!(c, Buffer.from("{}"));
    s.bodyEnd!(c);
    expect(sink.offered[0]!.evidence.body).toBeUndefined();
  });

  it("refuse: a record the store cannot take refuses the payment (503) and gives its unattended slot back", async () => {
    const sink = new Sink(false);
    const c = context("DELETE", PAYMENTS);
    let released = 0;
    c.slot = {
      release: () => {
        released += 1;
      },
    } as CheckContext["slot"];
    const refusal = step(sink).run!(c);
    expect(refusal).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    expect((refusal as { text: string }).text).toContain("could not keep the evidence");
    expect(c.slot).toBeUndefined();
    await Promise.resolve();
    await Promise.resolve();
    expect(released).toBe(1);
  });

  it("refuse: a payment with a body is refused in the head phase when the store already fails", () => {
    const sink = new Sink(false);
    const c = context("POST", PAYMENTS, { "content-length": "2" });
    expect(step(sink).run!(c)).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    expect(sink.offered).toHaveLength(0);
    // continue: it streams, and goes on without its record
    const others = context("POST", ACCOUNTS, { "content-length": "2" });
    const s = step(sink);
    expect(s.run!(others)).toBeUndefined();
    s.body!(others, Buffer.from("{}"));
    expect(s.bodyEnd!(others)).toBeUndefined();
    expect(sink.offered).toHaveLength(1);
  });

  it("continue: the request goes on without its record", () => {
    expect(step(new Sink(false)).run!(context("GET", ACCOUNTS))).toBeUndefined();
    expect(step(new Sink(false), "continue").run!(context("GET", PAYMENTS))).toBeUndefined();
    expect(step(new Sink(false), "refuse", "refuse").run!(context("GET", ACCOUNTS))).toMatchObject({
      code: "SERVICE_UNAVAILABLE",
    });
  });
});
