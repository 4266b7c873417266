/**
 * The signing dialects both ways: the application → the egress gateway (bank profiles with
 * `signing.dialect: rfc9421` and `jades`) → TLS → the ingress gateway accepting them, response
 * signing on → the backend; ingress verifies the request, signs its answer in the request's dialect,
 * and egress verifies that answer. An ingress that does not sign shows what egress makes of it.
 */

import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressGateway, startGateway } from "../../src/app.js";
import { validateEgressConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/observability/logger.js";
import { runCli } from "../helpers/cli.js";
import { tppFiles } from "../helpers/egress-profiles.js";
import { evidenceLines } from "../helpers/evidence-folder.js";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";

const RFC9421_INGRESS = {
  // UK OB signs the body only: its requests come over mutual TLS with the TPP's QWAC.
  listen: { clientCertificate: "request" as const },
  verification: {
    dialects: { accept: ["cavage" as const, "rfc9421" as const, "jades" as const, "uk-ob" as const] },
  },
};
const signing = useGatewayAndBackend((pki) => ({
  config: {
    ...RFC9421_INGRESS,
    responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
  },
}));
const unsigned = useGatewayAndBackend({ config: RFC9421_INGRESS });

let egress: EgressGateway;
/** Egress keeps a record of each bank answer it checks, in every dialect (issue 40). */
const evidenceFolder = mkdtempSync(join(tmpdir(), "psd2-egress-dialects-evidence-"));

beforeAll(async () => {
  const pki = signing.gw.pki;
  const { qseal, qwac, ca } = tppFiles(pki);
  const profile = (name: string, url: string, mode: "enforce" | "advisory") => ({
    name,
    prefix: `/${name}`,
    url,
    ca,
    qseal,
    defaultHeaders: { "TPP-Redirect-URI": "https://tpp.example/cb" },
    signing: { dialect: "rfc9421" },
    responses: { mode, caDir: pki.paths.trustDir },
  });
  egress = await startGateway(
    validateEgressConfig({
      mode: "egress",
      listen: { port: 0 },
      admin: { enabled: false },
      log: { level: "silent" },
      evidence: { folder: evidenceFolder, checkpointSeconds: 1 },
      banks: [
        profile("signing", signing.gw.url, "enforce"),
        { ...profile("cavage", signing.gw.url, "enforce"), signing: { dialect: "cavage" } },
        { ...profile("jades", signing.gw.url, "enforce"), signing: { dialect: "jades" } },
        {
          ...profile("uk-ob", signing.gw.url, "enforce"),
          qwac,
          signing: { dialect: "uk-ob", ukOb: { iss: "PSDNO-FSA-DEMO0001/software-1" } },
        },
        profile("unsigned-enforce", unsigned.gw.url, "enforce"),
        profile("unsigned-advisory", unsigned.gw.url, "advisory"),
      ],
    }),
    { logger: createLogger("silent") },
  );
}, 60_000);

afterAll(async () => {
  await egress?.close(0);
});

async function call(
  target: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
) {
  const response = await request(egress.url + target, {
    method: (options.method ?? "GET") as "GET",
    headers: {
      "psu-id": "PSU-1001",
      "psu-ip-address": "192.0.2.10",
      ...options.headers,
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
}

describe("egress signs in RFC 9421, ingress verifies, the answer is signed back and verified", () => {
  it("a GET and a payment reach the bank signed and come back verified", async () => {
    const get = await call("/signing/v1/accounts?withBalance=true");
    expect(get.status, get.text).toBe(200);
    expect(get.headers["psd2-gateway-response-signature"]).toBe("verified");

    const payment = JSON.stringify({ instructedAmount: { currency: "NOK", amount: "12.50" } });
    const post = await call("/signing/v1/payments/sepa-credit-transfers", { method: "POST", body: payment });
    expect(post.status, post.text).toBe(200);
    expect(post.headers["psd2-gateway-response-signature"]).toBe("verified");
    expect(String(post.headers["signature-input"])).toContain('tag="fapi-2-response"');

    const [reachedGet, reachedPost] = signing.backend.requests;
    expect(reachedGet!.target).toBe("/v1/accounts?withBalance=true");
    expect(reachedPost!.body.toString()).toBe(payment);
    // What ingress verified, as the bank received it.
    expect(reachedPost!.headers["signature-input"]).toMatch(
      /^sig1=\("@method" "@target-uri" "psu-id" "tpp-redirect-uri" "tpp-signature-certificate" "x-request-id" "content-digest"\);created=\d+;keyid="SN=[0-9A-F]+,CA=[^"]+";alg="rsa-pss-sha512";tag="fapi-2-request"$/,
    );
    expect(reachedPost!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
  });

  it("the same in JAdES: a payment signed in x-jws-signature, its answer signed and verified", async () => {
    const payment = JSON.stringify({ instructedAmount: { currency: "NOK", amount: "12.50" } });
    const post = await call("/jades/v1/payments/sepa-credit-transfers", { method: "POST", body: payment });
    expect(post.status, post.text).toBe(200);
    expect(post.headers["psd2-gateway-response-signature"]).toBe("verified");
    expect(post.headers["x-jws-signature"]).toBeDefined();
    const reached = signing.backend.requests[0]!;
    expect(reached.body.toString()).toBe(payment);
    const protectedHeader = JSON.parse(
      Buffer.from(String(reached.headers["x-jws-signature"]).split(".")[0]!, "base64url").toString(),
    );
    expect(protectedHeader).toMatchObject({
      alg: "PS256",
      b64: false,
      crit: ["b64", "sigT", "sigD"],
      sigD: { pars: ["(request-target)", "digest", "x-request-id", "psu-id", "tpp-redirect-uri"] },
    });
  });

  it("the same in UK Open Banking: the body signed, its answer's body signed and verified", async () => {
    const payment = JSON.stringify({ instructedAmount: { currency: "GBP", amount: "12.50" } });
    const post = await call("/uk-ob/v1/payments/sepa-credit-transfers", { method: "POST", body: payment });
    expect(post.status, post.text).toBe(200);
    expect(post.headers["psd2-gateway-response-signature"]).toBe("verified");
    const get = await call("/uk-ob/v1/accounts");
    expect(get.status, get.text).toBe(200);
    expect(get.headers["psd2-gateway-response-signature"]).toBe("verified");
    const reached = signing.backend.requests[0]!;
    expect(reached.body.toString()).toBe(payment);
    const protectedHeader = JSON.parse(
      Buffer.from(String(reached.headers["x-jws-signature"]).split(".")[0]!, "base64url").toString(),
    );
    expect(protectedHeader).toMatchObject({
      alg: "PS256",
      "http://openbanking.org.uk/iss": "PSDNO-FSA-DEMO0001/software-1",
      "http://openbanking.org.uk/tan": "openbanking.org.uk",
    });
  });

  it("an answer without a signature is withheld under enforce (502) and marked invalid under advisory", async () => {
    const enforced = await call("/unsigned-enforce/v1/accounts");
    expect(enforced.status).toBe(502);
    expect(enforced.text).toContain("response signature failed");
    expect(enforced.text).toContain("SIGNATURE_MISSING");
    // The bank executed it: under enforce the answer is withheld, never a silent pass.
    expect(unsigned.backend.requests).toHaveLength(1);

    const advised = await call("/unsigned-advisory/v1/accounts");
    expect(advised.status).toBe(200);
    expect(advised.headers["psd2-gateway-response-signature"]).toBe("invalid");
  });
});

describe("evidence of the bank's signed answer, in every dialect", () => {
  const lines = () => evidenceLines(evidenceFolder);
  const responseOf = async (requestId: string) => {
    for (let i = 0; i < 100; i++) {
      const found = lines().filter((l) => l.type === "response" && l.requestId === requestId);
      if (found.length > 0) return found;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no response record for ${requestId}`);
  };

  it.each([
    { dialect: "cavage", prefix: "/cavage", requestId: "5f0c2d4e-0001-4a7b-9c3d-2e1f0a9b8c01" },
    { dialect: "rfc9421", prefix: "/signing", requestId: "5f0c2d4e-0002-4a7b-9c3d-2e1f0a9b8c02" },
    // JAdES and UK OB carry the bank's certificate in the JWS's x5c, not in a header of its own.
    { dialect: "jades", prefix: "/jades", requestId: "5f0c2d4e-0003-4a7b-9c3d-2e1f0a9b8c03" },
    { dialect: "uk-ob", prefix: "/uk-ob", requestId: "5f0c2d4e-0004-4a7b-9c3d-2e1f0a9b8c04" },
  ])(
    "$dialect: the record names the bank's certificate by SHA-256, and the certificate is kept once",
    async ({ dialect, prefix, requestId }) => {
      const payment = JSON.stringify({ instructedAmount: { currency: "EUR", amount: "7.00" } });
      const answer = await call(`${prefix}/v1/payments/sepa-credit-transfers`, {
        method: "POST",
        body: payment,
        headers: { "x-request-id": requestId },
      });
      expect(answer.headers["psd2-gateway-response-signature"], answer.text).toBe("verified");
      const records = await responseOf(requestId);
      expect(records).toHaveLength(1);
      const bank = new X509Certificate(readFileSync(signing.gw.pki.paths.bankQseal));
      const fingerprint = bank.fingerprint256.replaceAll(":", "").toLowerCase();
      expect(records[0]).toMatchObject({ dialect, verdict: "verified", certificate: fingerprint });
      // The demo bank's QSealC (dev-pki).
      expect(records[0]!.organizationId).toBe("PSDNO-FSA-DEMOBANK");
      const kept = readdirSync(join(evidenceFolder, "certificates")).filter(
        (f) => f === `${fingerprint}.pem`,
      );
      expect(kept).toHaveLength(1);
      const pem = readFileSync(join(evidenceFolder, "certificates", kept[0]!), "utf8");
      expect(new X509Certificate(pem).fingerprint256).toBe(bank.fingerprint256);
    },
  );
});

describe("`evidence bundle` of a bank's answer: what openssl alone checks, in every dialect", () => {
  const openssl = (args: readonly string[], cwd: string) =>
    execFileSync("openssl", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const chainLines = () => evidenceLines(evidenceFolder);
  /** Until a checkpoint (every second here) follows the answer's record. */
  const covered = async (requestId: string) => {
    for (let i = 0; i < 100; i++) {
      const all = chainLines();
      const record = all.find((l) => l.type === "response" && l.requestId === requestId);
      if (
        record &&
        all.some((l) => l.type === "checkpoint" && l.chain === record.chain && l.seq > record.seq)
      )
        return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no checkpoint covers the answer to ${requestId}`);
  };

  it.each([
    { dialect: "cavage", prefix: "/cavage", requestId: "7a3e9b10-0001-4c5d-8e6f-1a2b3c4d5e01" },
    { dialect: "rfc9421", prefix: "/signing", requestId: "7a3e9b10-0002-4c5d-8e6f-1a2b3c4d5e02" },
    { dialect: "jades", prefix: "/jades", requestId: "7a3e9b10-0003-4c5d-8e6f-1a2b3c4d5e03" },
    { dialect: "uk-ob", prefix: "/uk-ob", requestId: "7a3e9b10-0004-4c5d-8e6f-1a2b3c4d5e04" },
  ])(
    "$dialect: the bank's signature over the rebuilt signed bytes holds by the README's command, the body and chain too",
    async ({ prefix, requestId }) => {
      const payment = JSON.stringify({ instructedAmount: { currency: "EUR", amount: "9.99" } });
      const answer = await call(`${prefix}/v1/payments/sepa-credit-transfers`, {
        method: "POST",
        body: payment,
        headers: { "x-request-id": requestId },
      });
      expect(answer.headers["psd2-gateway-response-signature"], answer.text).toBe("verified");
      await covered(requestId);
      const out = join(mkdtempSync(join(tmpdir(), "psd2-egress-bundle-")), "bundle");
      const made = await runCli([
        "evidence",
        "bundle",
        "--request-id",
        requestId,
        "--out",
        out,
        "--folder",
        evidenceFolder,
      ]);
      expect(made.stderr).toBe("");
      expect(made.code).toBe(0);
      const record = JSON.parse(readFileSync(join(out, "record.json"), "utf8"));
      expect(record).toMatchObject({ type: "response", requestId, verdict: "verified" });
      const readme = readFileSync(join(out, "README.txt"), "utf8");
      const command = readme
        .split("\n")
        .map((l) => l.trim())
        .find((l) => l.startsWith("openssl dgst") && l.includes("-verify bank-public.pem"))!
        .split(" ");
      expect(openssl(command.slice(1), out)).toContain("Verified OK");
      // The bank's certificate chains to the CA the profile trusted, by the README's command, as its report says.
      const verifyChain = readme
        .split("\n")
        .map((l) => l.trim())
        .find((l) => l.startsWith("openssl verify"))!
        .split(" ");
      expect(verifyChain).toContain("trust-anchor.pem");
      expect(openssl(verifyChain.slice(1), out)).toContain("certificate.pem: OK");
      expect(JSON.parse(readFileSync(join(out, "validation-report.json"), "utf8"))).toMatchObject({
        id: record.validationReport,
        indication: "TOTAL_PASSED",
      });
      // The certificate is the one the record names.
      openssl(["x509", "-in", "certificate.pem", "-outform", "DER", "-out", "certificate.der"], out);
      expect(openssl(["dgst", "-sha256", "-r", "certificate.der"], out)).toContain(record.certificate);
      // The body kept (a payment's answer) is the body received, and its digest the record's.
      expect(readFileSync(join(out, "body.bin"), "utf8")).toBe(answer.text);
      openssl(["dgst", "-sha256", "-binary", "-out", "body.sha256", "body.bin"], out);
      expect(record.bodyDigest).toBe(
        `sha-256=:${readFileSync(join(out, "body.sha256")).toString("base64")}:`,
      );
      // The chain from the record to a checkpoint, whose signature holds.
      const links = readdirSync(join(out, "chain")).sort();
      expect(readFileSync(join(out, "chain", links[0]!), "utf8")).toBe(
        readFileSync(join(out, "record.json"), "utf8"),
      );
      for (let i = 1; i < links.length; i++) {
        const hash = openssl(["dgst", "-sha256", "-r", join("chain", links[i - 1]!)], out).split(" ")[0];
        expect(JSON.parse(readFileSync(join(out, "chain", links[i]!), "utf8")).prev).toBe(hash);
      }
      expect(JSON.parse(readFileSync(join(out, "chain", links.at(-1)!), "utf8")).type).toBe("checkpoint");
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
      // Other bytes do not verify: the check can fail.
      writeFileSync(join(out, "signed-bytes.bin"), "x-request-id: forged");
      expect(() => openssl(command.slice(1), out)).toThrow();
    },
    60_000,
  );
});
