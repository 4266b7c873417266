/**
 * The gateway as operators run it: a real `node --import tsx src/main.ts start --config <file>`
 * process, its configuration written as YAML into a temporary folder, its JSON log lines collected
 * from stdout, signals sent to it, its exit awaited. Plus what the lifecycle and reload tests need
 * around it: free loopback ports, a second TLS certificate from the demo issuing CA, atomic file
 * replacement, and the certificate a fresh TLS handshake is served.
 */

import "reflect-metadata";
import { type ChildProcess, spawn } from "node:child_process";
import { webcrypto, X509Certificate } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import * as x509 from "@peculiar/x509";
import type { DevPki } from "@psd2-gateway/dev-pki";
import type { Dispatcher } from "undici";
import { request } from "undici";
import { stringify as toYaml } from "yaml";
import type { PreparedCall } from "./gateway-fixture.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

import { freeLoopbackPort } from "./free-port.js";

export { freeLoopbackPort };

/** One line the process wrote: the text as written and, when it is JSON, the parsed object. */
export interface LogLine {
  readonly stream: "stdout" | "stderr";
  readonly raw: string;
  readonly json: Record<string, unknown> | undefined;
  readonly msg: string | undefined;
  readonly level: number | undefined;
}

export interface GatewayProcessOptions {
  readonly pki: DevPki;
  /** Where config, snapshot and anything else of this run go. */
  readonly dir: string;
  readonly backendUrl: string;
  /** Listen with TLS (the PKI's gateway certificate unless `tlsFiles` says otherwise). Default true. */
  readonly tls?: boolean;
  readonly tlsFiles?: { readonly cert: string; readonly key: string };
  /** Merged over the generated config (top-level keys, one level deep). */
  readonly config?: Record<string, Record<string, unknown>>;
  readonly env?: Record<string, string>;
  /** How long to wait for the admin listener line. */
  readonly startTimeoutMs?: number;
}

export interface GatewayProcess {
  readonly child: ChildProcess;
  readonly configFile: string;
  /** The TPP-facing base URL (https://localhost:port or http://127.0.0.1:port). */
  readonly url: string;
  readonly port: number;
  readonly adminUrl: string;
  /** Every line written so far, in order. */
  readonly lines: LogLine[];
  /** Resolves once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits for a line matching `match` (a msg substring or a predicate), from line index `from` on. */
  waitForLog(
    match: string | ((line: LogLine) => boolean),
    timeoutMs?: number,
    from?: number,
  ): Promise<LogLine>;
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM and wait for the exit; SIGKILL when it does not exit within `timeoutMs`. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function parseLine(stream: "stdout" | "stderr", raw: string): LogLine {
  let json: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      json = parsed as Record<string, unknown>;
  } catch {
    // not a JSON log line
  }
  return {
    stream,
    raw,
    json,
    msg: typeof json?.["msg"] === "string" ? json["msg"] : undefined,
    level: typeof json?.["level"] === "number" ? json["level"] : undefined,
  };
}

/** Writes the config YAML and starts the gateway; resolves once the admin listener is up. */
export async function startGatewayProcess(options: GatewayProcessOptions): Promise<GatewayProcess> {
  const { pki, dir } = options;
  const tls = options.tls ?? true;
  const port = await freeLoopbackPort();
  const adminPort = await freeLoopbackPort();
  const extra = options.config ?? {};
  const config: Record<string, unknown> = {
    ...extra,
    listen: {
      host: "127.0.0.1",
      port,
      ...(tls
        ? {
            tls: {
              cert: options.tlsFiles?.cert ?? pki.paths.gatewayCert,
              key: options.tlsFiles?.key ?? pki.paths.gatewayKey,
            },
          }
        : {}),
      ...(extra["listen"] ?? {}),
    },
    backend: { url: options.backendUrl, timeoutSeconds: 10, ...(extra["backend"] ?? {}) },
    trust: { caDir: pki.paths.trustDir, ...(extra["trust"] ?? {}) },
    register: { file: pki.paths.register, ...(extra["register"] ?? {}) },
    admin: { host: "127.0.0.1", port: adminPort, ...(extra["admin"] ?? {}) },
  };
  const configFile = join(dir, `gateway-${port}.yaml`);
  writeFileSync(configFile, toYaml(config));

  const child = spawn(
    process.execPath,
    ["--conditions=psd2-gateway-source", "--import", "tsx", "src/main.ts", "start", "--config", configFile],
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LOG_LEVEL: "info", ...(options.env ?? {}) },
    },
  );
  // A test that fails before its cleanup must not leave a gateway behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.once("exit", (code, signal) => {
      process.removeListener("exit", killOnExit);
      resolveExit({ code, signal });
    }),
  );
  let done = false;
  void exited.then(() => {
    done = true;
  });

  const lines: LogLine[] = [];
  const collect = (stream: "stdout" | "stderr") => {
    let pending = "";
    return (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const part of parts) if (part.trim() !== "") lines.push(parseLine(stream, part));
    };
  };
  child.stdout!.on("data", collect("stdout"));
  child.stderr!.on("data", collect("stderr"));

  const waitForLog = async (
    match: string | ((line: LogLine) => boolean),
    timeoutMs = 10_000,
    from = 0,
  ): Promise<LogLine> => {
    const test = typeof match === "string" ? (l: LogLine) => l.msg?.includes(match) === true : match;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines.slice(from).find(test);
      if (found) return found;
      if (done) {
        // Let the last chunks of output arrive before giving up.
        await new Promise((r) => setTimeout(r, 50));
        const late = lines.slice(from).find(test);
        if (late) return late;
        throw new Error(`gateway exited before logging ${String(match)}:\n${tail(lines)}`);
      }
      if (Date.now() > deadline)
        throw new Error(`no log line ${String(match)} within ${timeoutMs} ms:\n${tail(lines)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  const stop = async (timeoutMs = 15_000) => {
    if (!done) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      await exited;
      clearTimeout(timer);
    }
    return exited;
  };

  try {
    // The admin line comes after the TPP listener's, and right before main.ts installs its signal
    // handlers (a synchronous step later): signals sent after it are handled, not fatal.
    const adminLine = await waitForLog("admin listener", options.startTimeoutMs ?? 30_000);
    const adminUrl = String(adminLine.json?.["url"]);
    const listening = lines.find((l) => l.msg === "ingress gateway listening");
    return {
      child,
      configFile,
      url: String(listening?.json?.["url"]),
      port,
      adminUrl,
      lines,
      exited,
      waitForLog,
      signal: (signal) => child.kill(signal),
      stop,
    };
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
}

function tail(lines: readonly LogLine[]): string {
  return lines
    .slice(-15)
    .map((l) => `  [${l.stream}] ${l.raw.slice(0, 400)}`)
    .join("\n");
}

/** Writes `content` next to `file` and renames it over `file`: readers see the old or the new, never half. */
export function replaceFileAtomically(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.${Math.random().toString(16).slice(2)}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  renameSync(tmp, file);
}

export interface TlsCertificate {
  /** The leaf followed by the issuing CA, as the gateway's cert file holds it. */
  readonly chainPem: string;
  readonly keyPem: string;
  /** As `getPeerCertificate().fingerprint256` prints it: upper-case hex pairs joined by colons. */
  readonly fingerprint256: string;
  readonly notAfter: Date;
}

/** Another TLS server certificate for localhost, issued by the demo PKI's issuing CA (so clients trusting the demo root accept it). */
export async function issueGatewayTlsCertificate(
  pki: DevPki,
  options: { commonName?: string; validDays?: number } = {},
): Promise<TlsCertificate> {
  const algorithm = {
    name: "RSASSA-PKCS1-v1_5",
    hash: "SHA-256",
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ["sign", "verify"])) as {
    publicKey: webcrypto.CryptoKey;
    privateKey: webcrypto.CryptoKey;
  };
  const now = Date.now();
  const notAfter = new Date(now + (options.validDays ?? 90) * 24 * 3600 * 1000);
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: `5a${now.toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`,
    subject: [{ C: ["NO"] }, { O: ["psd2-gateway Demo Bank"] }, { CN: [options.commonName ?? "localhost"] }],
    issuer: pki.issuingCa.certificate.subjectName,
    notBefore: new Date(now - 3600 * 1000),
    notAfter,
    signingAlgorithm: algorithm,
    publicKey: keys.publicKey as never,
    signingKey: pki.issuingCa.keys.privateKey as never,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension(["1.3.6.1.5.5.7.3.1"]),
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        { type: "ip", value: "127.0.0.1" },
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(pki.issuingCa.certificate),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8
    .toString("base64")
    .replace(/(.{64})/g, "$1\n")
    .trim()}\n-----END PRIVATE KEY-----\n`;
  const leafPem = `${certificate.toString("pem")}\n`;
  return {
    chainPem: leafPem + pki.issuingCa.pem,
    keyPem,
    fingerprint256: new X509Certificate(leafPem).fingerprint256,
    notAfter,
  };
}

/** The fingerprint of the certificate a fresh TLS handshake on `port` is served (verified against `ca`). */
export function servedFingerprint(port: number, ca: string | readonly string[]): Promise<string> {
  return new Promise((resolveFingerprint, reject) => {
    const socket = tlsConnect(
      { host: "127.0.0.1", port, servername: "localhost", ca: ca as string | string[] },
      () => {
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        socket.destroy();
        resolveFingerprint(fingerprint);
      },
    );
    socket.setTimeout(5_000, () => socket.destroy(new Error("TLS handshake timed out")));
    socket.once("error", reject);
  });
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** Sends a prepared (signed) call to a gateway at `baseUrl` through `dispatcher`. */
export async function sendPrepared(
  baseUrl: string,
  prepared: PreparedCall,
  dispatcher: Dispatcher,
  options: { timeoutMs?: number } = {},
): Promise<Answer> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const response = await request(baseUrl + prepared.target, {
    method: prepared.method as "GET",
    headers: prepared.headers,
    ...(prepared.body !== undefined ? { body: prepared.body } : {}),
    dispatcher,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
}
