/**
 * `psd2-gateway sign` as a TPP developer runs it: keys from PEM, from a PKCS#12 bundle made by
 * the openssl binary (password from the environment or a file, or none), or from a bank profile
 * of an egress config (its signing rules applied byte for byte); `--send` to a real ingress
 * gateway process over mutual TLS with response signing on, the signed answer verified, and to a
 * bank that alters its body after signing.
 */

import { execFile, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { explain, parseRequestDump, withFraming } from "../../src/cli/verify.js";
import {
  enforcedResponses,
  HOST_SIGNING,
  JAVA_STYLE_SIGNING,
  qsealPkcs12,
  toIngress,
  tppFiles,
} from "../helpers/egress-profiles.js";
import { testPki } from "../helpers/gateway-fixture.js";
import { type GatewayProcess, REPO_ROOT, startGatewayProcess } from "../helpers/gateway-process.js";
import { type RecordingBackend, startRecordingBackend } from "../helpers/recording-backend.js";
import { startTamperingBank } from "../helpers/tampering-bank.js";

let pki: DevPki;
let dir: string;
let backend: RecordingBackend;
let ingress: GatewayProcess;
let tampering: Server;
let profiles: string;
let p12: string;
const P12_PASSWORD = "sign-test-pass";

beforeAll(async () => {
  pki = await testPki();
  dir = mkdtempSync(join(tmpdir(), "psd2-sign-"));
  backend = await startRecordingBackend();
  ingress = await startGatewayProcess({
    pki,
    dir,
    backendUrl: backend.url,
    config: {
      listen: { clientCertificate: "require" },
      // Every dialect, draft-cavage first as before, for `sign --dialect`.
      verification: { dialects: { accept: ["cavage", "rfc9421", "jades", "uk-ob"] } },
      responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } },
    },
  });
  tampering = await startTamperingBank(pki);

  p12 = qsealPkcs12(pki, join(dir, "qseal.p12"), P12_PASSWORD);
  const bank = toIngress(pki, ingress.url);
  profiles = join(dir, "egress.yaml");
  writeFileSync(
    profiles,
    toYaml({
      mode: "egress",
      banks: [
        { name: "bank", prefix: "/bank", ...bank },
        { name: "java-style", prefix: "/java", ...bank, signing: JAVA_STYLE_SIGNING },
        { name: "host-signed", prefix: "/host", ...bank, signing: HOST_SIGNING },
        {
          name: "tampered",
          prefix: "/t",
          url: `http://127.0.0.1:${(tampering.address() as AddressInfo).port}`,
          qseal: tppFiles(pki).qseal,
          responses: enforcedResponses(pki),
        },
      ],
    }),
  );
}, 60_000);

afterAll(async () => {
  await ingress?.stop();
  tampering?.close();
  await backend?.close();
});

/** Asynchronous: the recording backend answers from this very process while the command runs. */
function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "sign", ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** The printed headers as a raw request, judged by `verify`'s explain (the gateway's own checks). */
function verdictOf(stdout: string, target: string, method = "GET", body?: string) {
  const raw = `${method} ${target} HTTP/1.1\r\nHost: bank.example\r\n${stdout.trimEnd().split("\n").join("\r\n")}\r\n\r\n${body ?? ""}`;
  const request = parseRequestDump(Buffer.from(raw, "latin1"));
  if (typeof request === "string") throw new Error(request);
  return explain(withFraming(request), {
    now: Date.now(),
    algorithms: ["rsa-sha256"],
    trustDir: pki.paths.trustDir,
  });
}

/** --send to the ingress gateway over mutual TLS with TPP A's QWAC, without a profile. */
function sendToIngress(): string[] {
  const { qwac, ca } = tppFiles(pki);
  return ["--send", "--url", ingress.url, "--ca", ca, "--qwac", qwac.cert, "--qwac-key", qwac.key];
}

const PSU = ["--header", "PSU-ID: PSU-1001", "--header", "TPP-Redirect-URI: https://tpp.example/cb"];

describe("psd2-gateway sign: where the keys come from", () => {
  it.each<[string, string[], Record<string, string>]>([
    [
      "PEM files",
      ["--key", join("tpp", "tpp-a-qseal.key.pem"), "--cert", join("tpp", "tpp-a-qseal.pem")],
      {},
    ],
    [
      "a PKCS#12 bundle, password from --password-env",
      ["--p12", "P12", "--password-env", "SIGN_P12"],
      { SIGN_P12: P12_PASSWORD },
    ],
    ["a PKCS#12 bundle, password from --password-file", ["--p12", "P12", "--password-file", "PWFILE"], {}],
    ["a bank profile of an egress config", ["--profile", "PROFILES", "--bank", "bank"], {}],
  ])("%s: the headers printed pass every check of the gateway", async (_what, args, env) => {
    const passwordFile = join(dir, "p12-password");
    writeFileSync(passwordFile, `${P12_PASSWORD}\n`);
    const resolved = args.map((a) =>
      a === "P12"
        ? p12
        : a === "PWFILE"
          ? passwordFile
          : a === "PROFILES"
            ? profiles
            : a.startsWith("tpp")
              ? join(pki.dir, a)
              : a,
    );
    const out = await cli([...resolved, "--target", "/v1/accounts", ...PSU], env);
    expect(out.stderr).toBe("");
    expect(out.status).toBe(0);
    const e = await verdictOf(out.stdout, "/v1/accounts");
    expect(e.steps.filter((s) => s.outcome !== "passed")).toEqual([]);
    expect(e.certificate?.organizationIdentifier).toBe("PSDNO-FSA-DEMO0001");
  });

  it("a PKCS#12 bundle with a wrong or missing password: exit 1, a clear line, never the password", async () => {
    const wrong = await cli(["--p12", p12, "--password-env", "SIGN_P12", "--target", "/v1/accounts"], {
      SIGN_P12: "not-the-password",
    });
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(`cannot open PKCS#12 file ${p12}: wrong password`);
    expect(wrong.stderr).not.toContain("not-the-password");
    const unset = await cli(["--p12", p12, "--password-env", "SIGN_P12_UNSET", "--target", "/v1/accounts"]);
    expect(unset.status).toBe(1);
    expect(unset.stderr).toContain("SIGN_P12_UNSET");
  });

  it("a PKCS#12 bundle without a password (openssl -passout pass:)", async () => {
    const open = qsealPkcs12(pki, join(dir, "open.p12"), "");
    const out = await cli(["--p12", open, "--target", "/v1/accounts", ...PSU]);
    expect(out.status, out.stderr).toBe(0);
    expect((await verdictOf(out.stdout, "/v1/accounts")).passed).toBe(true);
  });

  it("--profile applies the bank's signing rules (Java-style keyId, algorithm token, Digest token) and its defaultHeaders", async () => {
    const out = await cli([
      "--profile",
      profiles,
      "--bank",
      "java-style",
      "--target",
      "/v1/accounts",
      "--header",
      "PSU-ID: PSU-1001",
      "--json",
    ]);
    expect(out.status, out.stderr).toBe(0);
    const { headers } = JSON.parse(out.stdout) as { headers: Record<string, string> };
    expect(headers["TPP-Redirect-URI"]).toBe("https://tpp.example/cb");
    expect(headers.Digest).toMatch(/^sha-256=/);
    expect(headers.Signature).toContain('algorithm="SHA256withRSA"');
    expect(headers.Signature).toMatch(
      /keyId="SN=[0-9a-f]+,CA=CN=Demo%20Qualified%20Issuing%20CA,%20organizationIdentifier=NTRNO-999999999,%20O=/,
    );
    expect(headers.Signature).toContain('headers="date digest x-request-id psu-id tpp-redirect-uri"');
  });
});

describe("psd2-gateway sign --send", () => {
  it("--profile: sent over mutual TLS with the profile's QWAC to the bank, the signed answer verified; exit 0", async () => {
    const before = backend.requests.length;
    const out = await cli([
      "--profile",
      profiles,
      "--bank",
      "bank",
      "--target",
      "/v1/accounts?withBalance=true",
      "--header",
      "PSU-ID: PSU-1001",
      "--send",
    ]);
    expect(out.status, out.stderr + out.stdout).toBe(0);
    expect(out.stdout).toMatch(/^GET https:\/\/localhost:\d+\/v1\/accounts\?withBalance=true\n\nHTTP 200\n/);
    expect(out.stderr).toBe("response signature: verified\n");
    expect(backend.requests.slice(before).map((r) => r.target)).toEqual(["/v1/accounts?withBalance=true"]);
    // Ingress checked the QWAC of the connection and the QSealC signature: it attached the identity.
    expect(backend.requests.at(-1)!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
  });

  it("PEM keys with --url, --ca, --qwac/--qwac-key and --json: the answer as JSON, its signature not checked", async () => {
    const { qseal } = tppFiles(pki);
    const out = await cli([
      "--key",
      qseal.key,
      "--cert",
      qseal.cert,
      "--target",
      "/v1/payments/sepa-credit-transfers",
      "--method",
      "POST",
      "--body",
      writeBody(),
      ...PSU,
      ...sendToIngress(),
      "--json",
    ]);
    expect(out.status, out.stderr + out.stdout).toBe(0);
    const json = JSON.parse(out.stdout) as {
      request: { method: string; headers: Record<string, string> };
      response: { status: number; headers: Record<string, string>; signature: string };
    };
    expect(json.request.method).toBe("POST");
    expect(json.response.status).toBe(200);
    expect(json.response.headers["aspsp-signature-certificate"]).toBeDefined();
    expect(json.response.signature).toBe("not checked");
    expect(backend.requests.at(-1)!.body.toString()).toBe(PAYMENT);
  });

  it("a profile that signs Host and Content-Length: signed as curl and undici write them, and the bank agrees", async () => {
    const out = await cli([
      "--profile",
      profiles,
      "--bank",
      "host-signed",
      "--method",
      "POST",
      "--target",
      "/v1/payments/sepa-credit-transfers",
      "--body",
      writeBody(),
      "--header",
      "PSU-ID: PSU-1001",
      "--send",
    ]);
    expect(out.status, out.stderr + out.stdout).toBe(0);
    expect(backend.requests.at(-1)!.headers.signature).toContain(
      'headers="(request-target) host date digest content-length x-request-id psu-id tpp-redirect-uri"',
    );
  });

  it("a bank whose body was altered after signing: the answer shown, the failure named, exit 1", async () => {
    const out = await cli([
      "--profile",
      profiles,
      "--bank",
      "tampered",
      "--target",
      "/v1/payments/1",
      "--send",
    ]);
    expect(out.status).toBe(1);
    expect(out.stdout).toContain("HTTP 200");
    expect(out.stderr).toMatch(/^response signature: SIGNATURE_INVALID: .*Digest/);
  });

  it("a bank that cannot be reached: exit 1 and one line naming the URL", async () => {
    const out = await cli([
      "--profile",
      profiles,
      "--bank",
      "bank",
      "--target",
      "/v1/accounts",
      "--send",
      "--url",
      "https://127.0.0.1:1",
    ]);
    expect(out.status).toBe(1);
    expect(out.stderr.trim().split("\n")).toHaveLength(1);

    expect(out.stderr).toContain("GET https://127.0.0.1:1/v1/accounts could not be sent: ECONNREFUSED");
  });
});

describe("psd2-gateway sign --dialect: PEM keys in each of the four dialects", () => {
  it.each([
    ["rfc9421", "signature-input", "rfc9421-signature"],
    ["jades", "x-jws-signature", "jades-signature"],
    ["uk-ob", "x-jws-signature", "uk-ob-signature"],
  ] as const)(
    "%s: sent to the ingress gateway and accepted; printed, explained by verify",
    async (dialect, header, step) => {
      const { qseal } = tppFiles(pki);
      const keys = ["--key", qseal.key, "--cert", qseal.cert, "--dialect", dialect];
      const request = [
        "--target",
        "/v1/payments/sepa-credit-transfers",
        "--method",
        "POST",
        "--body",
        writeBody(),
        ...PSU,
      ];
      const before = backend.requests.length;
      const sent = await cli([...keys, ...request, ...sendToIngress()]);
      expect(sent.status, sent.stderr + sent.stdout).toBe(0);
      expect(sent.stdout).toContain("HTTP 200");
      const forwarded = backend.requests.slice(before);
      expect(forwarded).toHaveLength(1);
      expect(forwarded[0]!.headers[header]).toBeDefined();
      expect(forwarded[0]!.body.toString()).toBe(PAYMENT);
      // Printed for another tool to send: the Host named by --header, as RFC 9421 signs @target-uri.
      const printed = await cli([...keys, ...request, "--header", "Host: bank.example"]);
      expect(printed.status, printed.stderr).toBe(0);
      const lines = printed.stdout
        .trimEnd()
        .split("\n")
        .filter((l) => !/^host:/i.test(l));
      const e = await verdictOf(lines.join("\n"), "/v1/payments/sepa-credit-transfers", "POST", PAYMENT);
      expect(e.dialect).toBe(dialect);
      expect(e.steps.filter((s) => s.outcome !== "passed").map((s) => [s.step, s.text])).toEqual([]);
      expect(e.steps.map((s) => s.step)).toContain(step);
    },
  );

  it("--curl prints a line that works as printed: the CA and, for UK OB's mutual TLS, the QWAC in it", async () => {
    const { qseal, qwac, ca } = tppFiles(pki);
    const printed = await cli([
      ...["--key", qseal.key, "--cert", qseal.cert, "--dialect", "uk-ob"],
      ...[
        "--target",
        "/v1/payments/sepa-credit-transfers",
        "--method",
        "POST",
        "--body",
        writeBody(),
        ...PSU,
      ],
      ...["--curl", ingress.url, "--ca", ca, "--qwac", qwac.cert, "--qwac-key", qwac.key],
    ]);
    expect(printed.status, printed.stderr).toBe(0);
    expect(printed.stdout).toContain(`--cacert '${ca}'`);
    expect(printed.stdout).toContain(`--cert '${qwac.cert}' --key '${qwac.key}'`);
    const before = backend.requests.length;
    // Not spawnSync: the backend answering it runs in this process.
    const run = await promisify(execFile)("sh", [
      "-c",
      `${printed.stdout.trim()} -o /dev/null -w '%{http_code}'`,
    ]);
    expect(run.stdout, run.stderr).toBe("200");
    expect(backend.requests.slice(before).map((r) => r.body.toString())).toEqual([PAYMENT]);
  });

  it("RFC 9421 without a Host to sign: one line saying how to give it, exit 2", async () => {
    const { qseal } = tppFiles(pki);
    const out = await cli([
      "--key",
      qseal.key,
      "--cert",
      qseal.cert,
      "--dialect",
      "rfc9421",
      "--target",
      "/v1/accounts",
    ]);
    expect(out.status).toBe(2);
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
    expect(out.stderr).toContain("--header 'Host: bank.example'");
  });
});

const PAYMENT = JSON.stringify({ instructedAmount: { currency: "EUR", amount: "12.50" } });

function writeBody(): string {
  const file = join(dir, "payment.json");
  writeFileSync(file, PAYMENT);
  return file;
}

describe("psd2-gateway sign: a wrong command line is one line and exit 2", () => {
  it.each<[string, string[], RegExp]>([
    ["no keys", ["--target", "/v1/accounts"], /needs --target/],
    [
      "an unknown dialect",
      ["--key", "k.pem", "--cert", "c.pem", "--dialect", "jws", "--target", "/"],
      /'jws' is not one of cavage, rfc9421, jades, uk-ob/,
    ],
    [
      "--dialect with --profile",
      ["--profile", "x.yaml", "--dialect", "jades", "--target", "/"],
      /--dialect goes without --profile/,
    ],
    [
      "--no-request-target in another dialect",
      ["--key", "k.pem", "--cert", "c.pem", "--dialect", "uk-ob", "--no-request-target", "--target", "/"],
      /draft-cavage/,
    ],
    [
      "two kinds of keys",
      ["--profile", "x.yaml", "--p12", "x.p12", "--target", "/"],
      /not --profile and --p12/,
    ],
    [
      "--bank without --profile",
      ["--key", "k", "--cert", "c", "--bank", "b", "--target", "/"],
      /--bank goes with --profile/,
    ],
    ["--key without --cert", ["--key", "k", "--target", "/"], /--key goes with --cert/],
    [
      "a password option without --p12",
      ["--key", "k", "--cert", "c", "--password-env", "X", "--target", "/"],
      /go with --p12/,
    ],
    [
      "--send and --curl",
      ["--key", "k", "--cert", "c", "--target", "/", "--send", "--curl", "https://b"],
      /not both/,
    ],
    [
      "--url without --send",
      ["--key", "k", "--cert", "c", "--target", "/", "--url", "https://b"],
      /--url goes with --send/,
    ],
    [
      "--ca without --send or --curl",
      ["--key", "k", "--cert", "c", "--target", "/", "--ca", "ca.pem"],
      /go with --send or --curl/,
    ],
    ["--send without a URL", ["--key", "k", "--cert", "c", "--target", "/", "--send"], /--send needs --url/],
    [
      "--qwac without --qwac-key",
      ["--key", "k", "--cert", "c", "--target", "/", "--send", "--url", "https://b", "--qwac", "q"],
      /go together/,
    ],
    [
      "a --url that is not a URL",
      ["--key", "k", "--cert", "c", "--target", "/", "--send", "--url", "bank"],
      /'bank' is not a URL/,
    ],
    [
      "an unknown bank",
      ["--profile", "PROFILES", "--bank", "nope", "--target", "/"],
      /no bank profile 'nope'; its profiles are bank, java-style, host-signed, tampered/,
    ],
    [
      "several banks and no --bank",
      ["--profile", "PROFILES", "--target", "/"],
      /has 4 bank profiles \(bank, java-style, host-signed, tampered\): choose one with --bank/,
    ],
    [
      "--no-request-target with a profile",
      ["--profile", "PROFILES", "--bank", "bank", "--target", "/", "--no-request-target"],
      /signing.headers decide/,
    ],
  ])("%s", async (_what, args, message) => {
    const out = await cli(args.map((a) => (a === "PROFILES" ? profiles : a)));
    expect(out.status).toBe(2);
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
    expect(out.stderr).toMatch(message);
    expect(out.stdout).toBe("");
  });
});

describe("psd2-gateway sign: a key and a certificate that are not one pair, or not a key and a certificate", () => {
  const tpp = (file: string) => join(pki.dir, "tpp", file);

  it("TPP A's QSealC key with TPP B's QSealC: refused before signing, naming both options; exit 2", async () => {
    const key = tpp("tpp-a-qseal.key.pem");
    const cert = tpp("tpp-b-qseal.pem");
    const out = await cli(["--key", key, "--cert", cert, "--target", "/v1/accounts", ...PSU]);
    expect(out.status).toBe(2);
    expect(out.stdout).toBe("");
    expect(out.stderr).toBe(
      `psd2-gateway sign: --key ${key} is not the private key of --cert ${cert} (Demo Insight AS QSealC): give the key and the certificate of one QSealC\n`,
    );
  });

  it("a QWAC key of another QWAC: refused before anything is sent; exit 2", async () => {
    const { qseal, ca } = tppFiles(pki);
    const before = backend.requests.length;
    const out = await cli([
      ...["--key", qseal.key, "--cert", qseal.cert, "--target", "/v1/accounts", ...PSU],
      ...["--send", "--url", ingress.url, "--ca", ca],
      ...["--qwac", tpp("tpp-b-qwac.pem"), "--qwac-key", tpp("tpp-a-qwac.key.pem")],
    ]);
    expect(out.status).toBe(2);
    expect(out.stdout).toBe("");
    expect(out.stderr).toContain(
      `--qwac-key ${tpp("tpp-a-qwac.key.pem")} is not the private key of --qwac ${tpp("tpp-b-qwac.pem")}`,
    );
    expect(backend.requests.length).toBe(before);
  });

  it.each<[string, [string, string], string]>([
    [
      "a certificate given as --key",
      ["tpp-a-qseal.pem", "tpp-a-qseal.pem"],
      "--key KEY: not a PEM private key (",
    ],
    [
      "a key given as --cert",
      ["tpp-a-qseal.key.pem", "tpp-a-qseal.key.pem"],
      "--cert CERT: not a certificate in PEM or DER (",
    ],
  ])(
    "%s: exit 2, one line naming the option, the file and what it should hold",
    async (_what, [key, cert], message) => {
      const out = await cli(["--key", tpp(key), "--cert", tpp(cert), "--target", "/v1/accounts"]);
      expect(out.status).toBe(2);
      expect(out.stdout).toBe("");
      expect(out.stderr.trim().split("\n")).toHaveLength(1);
      expect(out.stderr).toContain(message.replace("KEY", tpp(key)).replace("CERT", tpp(cert)));
    },
  );
});
