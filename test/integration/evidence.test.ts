/**
 * Evidence for disputes (issue 40), end to end: a real gateway in front of a recording backend keeps
 * a record of each request it accepts, none of one it refuses; `evidence verify` passes on the
 * folder and names a record edited or deleted on disk; `evidence bundle` writes a bundle that the
 * `openssl` binary alone checks (the TPP's signature, the body, the chain, the checkpoint), by the
 * commands its README.txt gives.
 */

import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";
import {
  prepareSignedCall,
  send,
  signedCall,
  startTestGateway,
  type TestGateway,
  testPki,
} from "../helpers/gateway-fixture.js";
import { Scrape } from "../helpers/prometheus-text.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";

const folder = mkdtempSync(join(tmpdir(), "psd2-evidence-"));
const payment = randomUUID();
const accounts = randomUUID();
const refused = randomUUID();
const body = JSON.stringify({
  instructedAmount: { currency: "EUR", amount: "123.45" },
  creditorName: "Merchant",
  creditorAccount: { iban: "DE02100100109307118603" },
});
let backend: RecordingBackend;
let gw: TestGateway;
let metrics = "";

beforeAll(async () => {
  backend = await startRecordingBackend();
  gw = await startTestGateway({ backendUrl: backend.url, config: { evidence: { folder } } });
  const paid = await signedCall(gw, {
    signer: gw.pki.tppA.qseal,
    method: "POST",
    target: "/v1/payments/sepa-credit-transfers",
    headers: { "X-Request-ID": payment },
    body,
  });
  expect(paid.status).toBe(200);
  const read = await signedCall(gw, {
    signer: gw.pki.tppA.qseal,
    target: "/v1/accounts",
    headers: { "X-Request-ID": accounts },
  });
  expect(read.status).toBe(200);
  const tampered = await signedCall(gw, {
    signer: gw.pki.tppA.qseal,
    target: "/v1/accounts",
    headers: { "X-Request-ID": refused },
    tamper: ({ headers }) => ({ headers: { ...headers, "PSU-ID": "someone-else" } }),
  });
  expect(tampered.status).toBe(400);
  expect(backend.requests).toHaveLength(2);
  // Written within the fsync interval's second; counted in the metrics.
  for (let i = 0; i < 50 && !metrics.includes("psd2_gateway_evidence_records_written_total 2"); i++) {
    await new Promise((r) => setTimeout(r, 50));
    metrics = await (await fetch(`${gw.gateway.adminUrl}/metrics`)).text();
  }
  // Closing writes what is queued and a last checkpoint.
  await gw.close(1_000);
}, 60_000);

afterAll(() => backend?.close());

const chainFile = () => {
  const [chain] = readdirSync(join(folder, "chains"));
  return join(folder, "chains", chain!, "000001.jsonl");
};
const openssl = (args: readonly string[], cwd: string) =>
  execFileSync("openssl", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

describe("the evidence folder of a running gateway", () => {
  it("holds one record per accepted request, the payment's body with it, none of the refused one", () => {
    const records = readFileSync(chainFile(), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === "request");
    expect(records.map((r) => r.requestId)).toEqual([payment, accounts]);
    const [paid, read] = records;
    expect(paid).toMatchObject({
      organizationId: gw.pki.tppA.organizationId,
      certificate: createHash("sha256").update(gw.pki.tppA.qseal.der).digest("hex"),
      dialect: "cavage",
      signedWith: "rsa-sha256",
      indication: "TOTAL_PASSED",
      verdict: "accepted",
      role: "PSP_PI",
    });
    expect(Buffer.from(paid.body, "base64").toString()).toBe(body);
    expect(read.body).toBeUndefined();
    // The signing certificate once, and the CAs of its path (the validation report names them).
    const certificates = readdirSync(join(folder, "certificates"));
    expect(certificates).toContain(`${paid.certificate}.pem`);
    expect(certificates).toHaveLength(3);
    expect(readdirSync(join(folder, "reports"))).toEqual([`${paid.validationReport}.json`]);
  });

  it("is counted in the metrics: records written, queue depth, checkpoint age, failures", () => {
    expect(metrics).toContain("psd2_gateway_evidence_records_written_total 2");
    expect(metrics).toContain("psd2_gateway_evidence_queue_depth 0");
    expect(metrics).toContain("psd2_gateway_evidence_store_failing 0");
    expect(metrics).toMatch(/psd2_gateway_evidence_write_duration_seconds_count \d+/);
    expect(metrics).toContain("# TYPE psd2_gateway_evidence_failures_total counter");
  });

  it("`evidence verify` passes, `evidence show` prints a record", async () => {
    const verified = await runCli(["evidence", "verify", folder]);
    expect(verified.stdout).toMatch(/^ok {5}\S+: 2 records in 1 file, 1 checkpoints$/m);
    expect(verified.code).toBe(0);
    const shown = await runCli(["evidence", "show", "--request-id", payment, "--folder", folder, "--json"]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ requestId: payment, type: "request" });
    const none = await runCli(["evidence", "show", "--request-id", refused, "--folder", folder]);
    expect(none.code).toBe(1);
  }, 60_000);

  it("`evidence bundle` writes what openssl alone checks, by its README's commands", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "psd2-bundle-")), "bundle");
    const made = await runCli([
      "evidence",
      "bundle",
      "--request-id",
      payment,
      "--out",
      out,
      "--folder",
      folder,
    ]);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    const record = JSON.parse(readFileSync(join(out, "record.json"), "utf8"));
    const readme = readFileSync(join(out, "README.txt"), "utf8");

    // The TPP's signature over the signed bytes, by the README's own command.
    const command = readme
      .split("\n")
      .find((l) => l.includes("-signature signature.bin"))!
      .trim()
      .split(" ");
    expect(command.slice(0, 2)).toEqual(["openssl", "dgst"]);
    expect(openssl(command.slice(1), out)).toContain("Verified OK");
    // The signed bytes are the signing string, which covers the Digest of the body kept.
    const signed = readFileSync(join(out, "signed-bytes.bin"), "latin1");
    const bodyDigest = openssl(["dgst", "-sha256", "-binary", "-out", "body.sha256", "body.bin"], out);
    expect(bodyDigest).toBe("");
    const digest = readFileSync(join(out, "body.sha256")).toString("base64");
    expect(signed).toContain(`digest: SHA-256=${digest}`);
    expect(record.bodyDigest).toBe(`sha-256=:${digest}:`);
    // The certificate is the one the record names.
    openssl(["x509", "-in", "certificate.pem", "-outform", "DER", "-out", "certificate.der"], out);
    expect(openssl(["dgst", "-sha256", "-r", "certificate.der"], out)).toContain(record.certificate);

    // The chain from the record to the checkpoint: each line's prev is the SHA-256 of the one before.
    const links = readdirSync(join(out, "chain")).sort();
    expect(links.length).toBeGreaterThanOrEqual(2);
    expect(readFileSync(join(out, "chain", links[0]!), "utf8")).toBe(
      readFileSync(join(out, "record.json"), "utf8"),
    );
    for (let i = 1; i < links.length; i++) {
      const hash = openssl(["dgst", "-sha256", "-r", join("chain", links[i - 1]!)], out).split(" ")[0];
      expect(JSON.parse(readFileSync(join(out, "chain", links[i]!), "utf8")).prev).toBe(hash);
    }
    const checkpoint = JSON.parse(readFileSync(join(out, "chain", links.at(-1)!), "utf8"));
    expect(checkpoint.type).toBe("checkpoint");
    const statement = readFileSync(join(out, "checkpoint.txt"), "utf8");
    expect(statement).toContain(`last: ${checkpoint.prev}`);
    expect(statement).toContain(`count: ${checkpoint.count}`);
    expect(
      openssl(
        [
          "dgst",
          "-sha256",
          "-verify",
          "checkpoint-public.pem",
          "-signature",
          "checkpoint.sig",
          "checkpoint.txt",
        ],
        out,
      ),
    ).toContain("Verified OK");
    // The checkpoint key is the folder's own, made at first start, kept beside.
    expect(readFileSync(join(out, "checkpoint-public.pem"), "utf8")).toBe(
      readFileSync(join(folder, "checkpoint-public.pem"), "utf8"),
    );
  }, 60_000);

  it("a record edited, deleted or swapped on disk: `evidence verify` names it", async () => {
    const path = chainFile();
    const original = readFileSync(path, "utf8");
    try {
      writeFileSync(
        path,
        original
          .replace('"amount":"123.45"', '"amount":"923.45"')
          .replace(
            /"body":"[^"]+"/,
            `"body":"${Buffer.from(body.replace("123.45", "923.45")).toString("base64")}"`,
          ),
      );
      const edited = await runCli(["evidence", "verify", folder]);
      expect(edited.code).toBe(1);
      expect(edited.stdout).toContain(`FAILED`);
      expect(edited.stdout).toContain(`seq 1 (X-Request-ID ${payment}) was altered`);

      const lines = original.split("\n");
      writeFileSync(path, lines.filter((l) => !l.includes(payment)).join("\n"));
      const deleted = await runCli(["evidence", "verify", folder]);
      expect(deleted.code).toBe(1);
      expect(deleted.stdout).toContain("seq 1 removed");
      expect(deleted.stdout).toContain(`seq 2 (X-Request-ID ${accounts})`);

      // The two records swapped on disk.
      const at = (id: string) => lines.findIndex((l) => l.includes(id));
      const swapped = [...lines];
      [swapped[at(payment)], swapped[at(accounts)]] = [lines[at(accounts)]!, lines[at(payment)]!];
      writeFileSync(path, swapped.join("\n"));
      const reordered = await runCli(["evidence", "verify", folder]);
      expect(reordered.code).toBe(1);
      expect(reordered.stdout).toContain(`seq 2 (X-Request-ID ${accounts}) is out of order`);
    } finally {
      writeFileSync(path, original);
    }
  }, 60_000);
});

describe("when the evidence store fails", () => {
  it("onFailure refuse: a payment is answered 503 and never forwarded; continue: an account read goes on", async () => {
    const dir = mkdtempSync(join(tmpdir(), "psd2-evidence-failing-"));
    const failing = await startRecordingBackend();
    // A file the size of one record: the store rotates after each batch.
    const gateway = await startTestGateway({
      backendUrl: failing.url,
      config: { evidence: { folder: dir, rotateBytes: 1 } },
    });
    try {
      // The chain's folder taken away under the running store (a volume gone): the open file still
      // takes the next batch, the file after it cannot be made.
      const [chain] = readdirSync(join(dir, "chains"));
      renameSync(join(dir, "chains", chain!), join(dir, "moved"));
      writeFileSync(join(dir, "chains", chain!), "not a folder");
      const pay = (id: string) =>
        signedCall(gateway, {
          signer: gateway.pki.tppA.qseal,
          method: "POST",
          target: "/v1/payments/sepa-credit-transfers",
          headers: { "X-Request-ID": id },
          body,
        });
      const kept = randomUUID();
      expect((await pay(kept)).status).toBe(200);
      // Its batch is written, then the rotation fails: the store is failing.
      // The sample line, not the HELP line (whose text begins "1 while …").
      const failingSample = /^psd2_gateway_evidence_store_failing 1$/m;
      let metricsText = "";
      for (let i = 0; i < 100 && !failingSample.test(metricsText); i++) {
        await new Promise((r) => setTimeout(r, 20));
        metricsText = await (await fetch(`${gateway.gateway.adminUrl}/metrics`)).text();
      }
      expect(metricsText).toMatch(failingSample);
      // Payments refuse without their record: the instance is not ready, and says why.
      const ready = await fetch(`${gateway.gateway.adminUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { checks: Record<string, unknown> }).checks.evidence).toMatchObject({
        ok: false,
        detail: expect.stringMatching(/^failing since /),
      });

      const refusedPayment = randomUUID();
      const answer = await pay(refusedPayment);
      expect(answer.status).toBe(503);
      expect(answer.json.tppMessages?.[0]).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
      expect(answer.json.tppMessages?.[0]?.text).toContain("could not keep the evidence");
      const read = await signedCall(gateway, {
        signer: gateway.pki.tppA.qseal,
        target: "/v1/accounts",
        headers: { "X-Request-ID": randomUUID() },
      });
      expect(read.status).toBe(200);
      const forwarded = failing.requests.map((r) => r.headers["x-request-id"]);
      expect(forwarded).toContain(kept);
      expect(forwarded).not.toContain(refusedPayment);
      expect(failing.requests).toHaveLength(2);
      // What was acknowledged before the failure is on disk.
      expect(readFileSync(join(dir, "moved", "000001.jsonl"), "utf8")).toContain(kept);
    } finally {
      await gateway.close(1_000);
      await failing.close();
    }
  }, 60_000);
});

describe("with responseSigning: the response's record, and a bundle with the certificate's chain", () => {
  const dir = mkdtempSync(join(tmpdir(), "psd2-evidence-signed-"));
  const id = randomUUID();
  let signedBackend: RecordingBackend;
  let signedGateway: TestGateway;
  let answer: Awaited<ReturnType<typeof signedCall>>;

  beforeAll(async () => {
    signedBackend = await startRecordingBackend();
    const paths = (await testPki()).paths;
    signedGateway = await startTestGateway({
      backendUrl: signedBackend.url,
      config: {
        evidence: { folder: dir },
        responseSigning: { qseal: { cert: paths.bankQseal, key: paths.bankQsealKey } },
      },
    });
    answer = await signedCall(signedGateway, {
      signer: signedGateway.pki.tppA.qseal,
      method: "POST",
      target: "/v1/payments/sepa-credit-transfers",
      headers: { "X-Request-ID": id },
      body,
    });
    await signedGateway.close(1_000);
  }, 60_000);
  afterAll(() => signedBackend?.close());

  const lines = () => {
    const [chain] = readdirSync(join(dir, "chains"));
    return readFileSync(join(dir, "chains", chain!, "000001.jsonl"), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
  };

  it("keeps the signed response after its request, linked by X-Request-ID, with the signature as sent", () => {
    expect(answer.status).toBe(200);
    const kept = lines().filter((l) => l.type === "request" || l.type === "response");
    expect(kept.map((l) => [l.type, l.requestId])).toEqual([
      ["request", id],
      ["response", id],
    ]);
    const response = kept[1];
    expect(response).toMatchObject({
      verdict: "signed",
      status: 200,
      dialect: "cavage",
      method: "POST",
      certificate: createHash("sha256").update(signedGateway.pki.bankQseal.der).digest("hex"),
    });
    expect(response.signatureHeaders.signature).toBe(answer.headers.signature);
    expect(response.signatureHeaders.digest).toBe(answer.headers.digest);
    // The signing string rebuilt from the headers the TPP got.
    expect(Buffer.from(response.signedBytes, "base64").toString("latin1")).toContain(
      `digest: ${answer.headers.digest}`,
    );
    expect(Buffer.from(response.body, "base64").toString()).toBe(answer.text);
  });

  it("`evidence verify` counts both records; `show` prints both", async () => {
    const verified = await runCli(["evidence", "verify", dir]);
    expect(verified.stdout).toMatch(/^ok {5}\S+: 2 records in 1 file, 1 checkpoints$/m);
    const shown = await runCli(["evidence", "show", "--request-id", id, "--folder", dir, "--json"]);
    expect(
      shown.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).type),
    ).toEqual(["request", "response"]);
  }, 60_000);

  it("the bundle's certificate chain, validation report and response check with openssl alone", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "psd2-bundle-")), "bundle");
    const made = await runCli(["evidence", "bundle", "--request-id", id, "--out", out, "--folder", dir]);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    const readme = readFileSync(join(out, "README.txt"), "utf8");
    const command = (start: string) =>
      readme
        .split("\n")
        .map((l) => l.trim())
        .find((l) => l.startsWith(start))!
        .split(" ")
        .slice(1);
    // The TPP's certificate chains to the anchor the gateway trusted, at the request's time.
    expect(openssl(command("openssl verify"), out)).toContain("certificate.pem: OK");
    const report = JSON.parse(readFileSync(join(out, "validation-report.json"), "utf8"));
    const record = JSON.parse(readFileSync(join(out, "record.json"), "utf8"));
    expect(report).toMatchObject({
      id: record.validationReport,
      indication: "TOTAL_PASSED",
      policy: "QSealC",
    });
    // The bank's signature over its answer, by the README's command.
    expect(openssl(command("openssl dgst -sha256 -verify bank-public.pem"), out)).toContain("Verified OK");
    expect(JSON.parse(readFileSync(join(out, "response.json"), "utf8"))).toMatchObject({
      type: "response",
      requestId: id,
    });
    // The chain files reach the response, then a checkpoint (signed with the bank's QSealC here).
    const links = readdirSync(join(out, "chain")).sort();
    const types = links.map((l) => JSON.parse(readFileSync(join(out, "chain", l), "utf8")).type);
    expect(types[0]).toBe("request");
    expect(types).toContain("response");
    expect(types.at(-1)).toBe("checkpoint");
    expect(
      openssl(
        [
          "dgst",
          "-sha256",
          "-verify",
          "checkpoint-public.pem",
          "-signature",
          "checkpoint.sig",
          "checkpoint.txt",
        ],
        out,
      ),
    ).toContain("Verified OK");
    // A tampered signing string does not verify: the check can fail.
    writeFileSync(join(out, "response-signed-bytes.bin"), "x-request-id: forged");
    expect(() => openssl(command("openssl dgst -sha256 -verify bank-public.pem"), out)).toThrow();
  }, 60_000);
  it("a request and its response share the X-Request-ID: --kind picks one for show and bundle", async () => {
    const shown = await runCli([
      "evidence",
      "show",
      "--request-id",
      id,
      "--kind",
      "response",
      "--folder",
      dir,
      "--json",
    ]);
    expect(shown.code).toBe(0);
    expect(
      shown.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).type),
    ).toEqual(["response"]);

    const out = join(mkdtempSync(join(tmpdir(), "psd2-bundle-")), "bundle");
    const made = await runCli([
      "evidence",
      "bundle",
      "--request-id",
      id,
      "--kind",
      "response",
      "--out",
      out,
      "--folder",
      dir,
    ]);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, "record.json"), "utf8"))).toMatchObject({
      type: "response",
      verdict: "signed",
    });
    const readme = readFileSync(join(out, "README.txt"), "utf8");
    const command = readme
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l.startsWith("openssl dgst") && l.includes("-verify bank-public.pem"))!
      .split(" ");
    expect(openssl(command.slice(1), out)).toContain("Verified OK");

    const wrong = await runCli(["evidence", "show", "--request-id", id, "--kind", "answer", "--folder", dir]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("--kind is request or response");
  }, 60_000);
});

describe("a configuration reload of evidence", () => {
  it("opens the new store for new requests; the old one keeps the records of requests under way, then closes its chain with a checkpoint", async () => {
    const first = mkdtempSync(join(tmpdir(), "psd2-evidence-before-"));
    const second = mkdtempSync(join(tmpdir(), "psd2-evidence-after-"));
    const bank = await startRecordingBackend();
    const gateway = await startTestGateway({
      backendUrl: bank.url,
      // The grace lets the request under way end on the old store before it closes.
      config: { evidence: { folder: first, instanceId: "gw" }, shutdown: { graceSeconds: 3 } },
    });
    try {
      const before = randomUUID();
      const underWay = randomUUID();
      const after = randomUUID();
      const paid = (id: string) =>
        prepareSignedCall({
          signer: gateway.pki.tppA.qseal,
          method: "POST",
          target: "/v1/payments/sepa-credit-transfers",
          headers: { "X-Request-ID": id },
          body,
        });
      const sent = await paid(before);
      expect((await send(gateway, sent.method, sent.target, sent.headers, sent.body)).status).toBe(200);
      // A payment whose body is still arriving when the reload comes: its record is made at the body's end.
      const streaming = await paid(underWay);
      const bodyStream = new PassThrough();
      const bytes = Buffer.from(streaming.body!);
      bodyStream.write(bytes.subarray(0, 10));
      const pending = send(gateway, streaming.method, streaming.target, streaming.headers, bodyStream);
      // Its head judged (the certificate step passed a second time): the request runs on the path it began on.
      const certificatesPassed = async () =>
        new Scrape(await gateway.gateway.metrics.registry.metrics()).only("psd2_gateway_steps_total", {
          step: "certificate",
          outcome: "passed",
        });
      await vi.waitFor(async () => expect(await certificatesPassed()).toBe(2), { timeout: 10_000 });

      const { config } = gateway;
      // The running chain's instanceId in the same folder: refused, saying what to change.
      await expect(
        gateway.gateway.reconfigure({ ...config, evidence: { ...config.evidence!, fsync: "every" } }),
      ).rejects.toThrow(/instanceId 'gw' names the running one/);
      const needsRestart = await gateway.gateway.reconfigure({
        ...config,
        evidence: { ...config.evidence!, folder: second },
      });
      expect(needsRestart).toEqual([]);
      bodyStream.end(bytes.subarray(10));
      expect((await pending).status).toBe(200);
      const next = await paid(after);
      expect((await send(gateway, next.method, next.target, next.headers, next.body)).status).toBe(200);

      const chainLines = (folder: string) => {
        const file = join(folder, "chains", "gw", "000001.jsonl");
        return readFileSync(file, "utf8")
          .trimEnd()
          .split("\n")
          .map((l) => JSON.parse(l) as { type: string; requestId?: string });
      };
      // After the grace the old store writes its queue and ends its chain with a checkpoint.
      await vi.waitFor(() => expect(chainLines(first).at(-1)?.type).toBe("checkpoint"), {
        timeout: 30_000,
        interval: 100,
      });
      const ids = (folder: string) => chainLines(folder).flatMap((l) => (l.requestId ? [l.requestId] : []));
      expect(ids(first)).toEqual([before, underWay]);
      const verified = await runCli(["evidence", "verify", first]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
      await gateway.close(1_000);
      expect(ids(second)).toEqual([after]);
      expect((await runCli(["evidence", "verify", second])).code).toBe(0);
    } finally {
      await gateway.close(0).catch(() => {});
      await bank.close();
    }
  }, 60_000);
});
