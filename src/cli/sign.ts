/**
 * `psd2-gateway sign`: the headers a TPP sends for one request, a ready curl command line, or the
 * request sent (`--send`) and the bank's answer shown, its response signature checked when a bank
 * profile says how. With `--profile` it signs exactly as egress mode does for that bank (the same
 * signer built from the same profile, src/app/bank-profile.ts).
 */

import { createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, type Dispatcher, request } from "undici";
import { profileSigner, responseVerifierForProfile } from "../app/bank-profile.js";
import { type Credentials, loadCredentials } from "../app/credentials.js";
import { type Dialect, dialectNames, dialectUnit } from "../checks/index.js";
import { type BankProfileConfig, parseSigningRules } from "../config/schema.js";
import type { RequestSigning } from "../egress/handler.js";
import { RequestSigner } from "../signature/index.js";
import { bankProfileOption } from "./bank-option.js";
import { defineCommand, readOption, UsageError } from "./command.js";
import { DEV_CERTS_DIR } from "./paths.js";

export const signCommand = defineCommand({
  name: "sign",
  summary: "sign one request as a TPP would (headers, a curl command line, or sent with --send)",
  usage: `psd2-gateway sign --target </path?query> <keys> [options]

The keys and rules (one of):
  --profile <yaml>       a bank profile of an egress config: its QSealC and signing rules (signed
                         headers, keyId spelling, algorithm token, Digest, certificate header) and
                         its defaultHeaders; --send goes to its url with its QWAC and CA
  --bank <name>          which profile of --profile (needed when it has several)
  --key <pem> --cert <pem>
                         the QSealC's private key (PEM) and certificate (PEM or DER), SPEC 5 rules
  --p12 <file>           the QSealC as a PKCS#12 bundle, SPEC 5 rules; its password from
  --password-env <NAME>  an environment variable, or
  --password-file <file> a file (none of the two: no password)
  --dialect <d>          with --key/--cert or --p12: how to sign (default cavage):
                           cavage   Signature + TPP-Signature-Certificate (NextGenPSD2 1.3)
                           rfc9421  Signature-Input + Signature, FAPI 2.0 (needs the Host: --curl,
                                    --url or --header Host)
                           jades    x-jws-signature, JAdES detached (Berlin Group openFinance)
                           uk-ob    x-jws-signature over the body (UK Open Banking; iss is the
                                    certificate's organizationIdentifier, tan openbanking.org.uk)
                         (with --profile its signing.dialect decides)
  --by-reference         with --dialect jades: name the QSealC by x5t#S256 alone, without x5c, for a
                         bank that knows it (keys.files, or seen before)

The request:
  --method <M>           default GET
  --target <path?query>  the request target exactly as it will be sent (with --profile: the path
                         after the bank url's own path, as the application gives it to egress mode)
  --body <file>          the body, signed byte for byte (Digest over exactly these bytes)
  --header "Name: value" a header to send and sign (repeatable): PSU-ID, TPP-Redirect-URI, …
  --no-request-target    leave (request-target) out of the signed headers (not with --profile,
                         whose signing.headers decide)

What it prints:
  (default)              the headers to send
  --curl <base url>      a curl command line instead (scheme, host and port of <base url>, then
                         the target as signed), with --cacert (--ca, the profile's, or the dev CA
                         for a gateway on this machine) and --cert/--key (--qwac, the profile's)
  --send                 send it and print the bank's answer (status, headers, body); exit 0 on a
                         2xx whose signature, when checked, holds, 1 otherwise
  --url <base url>       where --send goes: its scheme, host and port (default: the profile's url)
  --ca <pem>             the CA of the bank's TLS certificate, for --send or --curl (default: the
                         profile's ca, else the system's)
  --qwac <pem> --qwac-key <pem>
                         the client certificate for mutual TLS, for --send or --curl (default: the
                         profile's qwac); a UK OB request must come with one
  --json                 print JSON: the headers, the curl line or the answer`,
  options: {
    profile: { type: "string", path: "file" },
    bank: { type: "string" },
    key: { type: "string", path: "file" },
    cert: { type: "string", path: "file" },
    p12: { type: "string", path: "file" },
    "password-env": { type: "string" },
    "password-file": { type: "string", path: "file" },
    dialect: { type: "string" },
    method: { type: "string", default: "GET" },
    target: { type: "string" },
    body: { type: "string", path: "file" },
    header: { type: "string", multiple: true, default: [] },
    "no-request-target": { type: "boolean", default: false },
    "by-reference": { type: "boolean", default: false },
    curl: { type: "string" },
    send: { type: "boolean", default: false },
    url: { type: "string" },
    ca: { type: "string", path: "file" },
    qwac: { type: "string", path: "file" },
    "qwac-key": { type: "string", path: "file" },
    json: { type: "boolean", default: false },
  },
  check: (values) => checkOptions(values),
  run: (values) => sign(values),
});

interface SignValues {
  profile?: string | undefined;
  bank?: string | undefined;
  key?: string | undefined;
  cert?: string | undefined;
  p12?: string | undefined;
  "password-env"?: string | undefined;
  "password-file"?: string | undefined;
  dialect?: string | undefined;
  method?: string | undefined;
  target?: string | undefined;
  body?: string | undefined;
  header?: string[] | undefined;
  "no-request-target"?: boolean | undefined;
  "by-reference"?: boolean | undefined;
  curl?: string | undefined;
  send?: boolean | undefined;
  url?: string | undefined;
  ca?: string | undefined;
  qwac?: string | undefined;
  "qwac-key"?: string | undefined;
  json?: boolean | undefined;
}

/** The dev CA (npm start's), for an https origin on this machine, when `npm run certs` wrote it. */
function devCaFor(origin: string | undefined): string | undefined {
  if (origin === undefined || !/^https:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i.test(origin))
    return undefined;
  const ca = join(DEV_CERTS_DIR, "trust", "demo-root-ca.pem");
  return existsSync(ca) ? ca : undefined;
}

/** What a signing run needs, from whichever key option was given. */
interface Keys {
  readonly signer: RequestSigning;
  readonly profile: BankProfileConfig | undefined;
}

/** A wrong combination of options, with the way to the usage. */
const usage = (line: string) => new UsageError(`${line}; see psd2-gateway sign --help`);

async function sign(values: SignValues): Promise<number> {
  const headers = headerOptions(values.header ?? []);
  let origin = originOf(values.curl ?? values.url);
  const keys = loadKeys(values);
  origin ??= originOf(keys.profile?.url);
  // Checked before anything is sent: a mismatched pair is a usage error like the others.
  if (values.qwac !== undefined) keyPair(values, "qwac-key", "qwac");
  const { signer, profile } = keys;
  for (const [name, value] of Object.entries(profile?.defaultHeaders ?? {}))
    if (!Object.keys(headers).some((n) => n.toLowerCase() === name.toLowerCase())) headers[name] = value;
  const body = values.body === undefined ? undefined : readFileSync(values.body);
  const method = values.method!.toUpperCase();
  // With a profile, the bank url's own path goes before the target, as egress mode sends it.
  const basePath = profile ? new URL(profile.url).pathname.replace(/\/+$/, "") : "";
  const target = basePath + values.target!;
  // Host and Content-Length are written by curl or undici; the signer sees them as they will be
  // sent, so rules that sign them (a profile's signing.headers) get them signed.
  const wire: Record<string, string> = { ...headers };
  const given = new Set(Object.keys(headers).map((n) => n.toLowerCase()));
  if (origin && !given.has("host")) wire.host = new URL(origin).host;
  if (body && !given.has("content-length")) wire["content-length"] = String(body.length);
  if (values.dialect === "rfc9421" && !given.has("host") && wire.host === undefined)
    throw usage(
      "--dialect rfc9421 signs @target-uri, which names the host: give --curl <base url>, --url <base url> or --header 'Host: bank.example'",
    );
  const signed = await signer.sign({ method, target, headers: wire, ...(body ? { body } : {}) });
  const all: Record<string, string> = { ...headers };
  if (body) all["Content-Type"] ??= "application/json";
  for (const [name, value] of Object.entries(signed)) {
    for (const n of Object.keys(all)) if (n.toLowerCase() === name.toLowerCase()) delete all[n];
    all[name] = value;
  }

  if (values.send) return send(values, profile, { method, url: origin! + target, headers: all, body });
  if (values.curl !== undefined) {
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const parts = [
      "curl",
      "-sS",
      "-X",
      method,
      ...Object.entries(all).flatMap(([n, v]) => ["-H", quote(`${n}: ${v}`)]),
    ];
    if (values.body) parts.push("--data-binary", quote(`@${values.body}`));
    // The TLS the line needs to work as printed: the bank's CA (the dev CA for a gateway on this
    // machine) and, for mutual TLS, the QWAC (a UK OB request must come with it).
    const ca = values.ca ?? profile?.ca ?? devCaFor(origin);
    if (ca !== undefined) parts.push("--cacert", quote(ca));
    if (values.qwac !== undefined)
      parts.push("--cert", quote(values.qwac), "--key", quote(values["qwac-key"]!));
    else if (profile?.qwac?.cert !== undefined && profile.qwac.key !== undefined)
      parts.push("--cert", quote(profile.qwac.cert), "--key", quote(profile.qwac.key));
    parts.push(quote(origin + target));
    const line = parts.join(" ");
    printBytes(values.json ? JSON.stringify({ headers: all, curl: line }, null, 2) : line);
    return 0;
  }
  if (values.json) printBytes(JSON.stringify({ method, target, headers: all }, null, 2));
  else for (const [name, value] of Object.entries(all)) printBytes(`${name}: ${value}`);
  return 0;
}

/** The command line's own consistency, before any file is read. */
function checkOptions(values: SignValues): void {
  const given = (["profile", "key", "p12"] as const).filter((o) => values[o] !== undefined);
  if (given.length !== 1 || values.target === undefined)
    throw usage(
      given.length > 1
        ? `give one of --profile, --key/--cert and --p12, not ${given.map((o) => `--${o}`).join(" and ")}`
        : "needs --target </path?query> and the keys: --profile <egress config>, --key <private key PEM> --cert <certificate PEM>, or --p12 <file>",
    );
  if (values.bank !== undefined && values.profile === undefined) throw usage("--bank goes with --profile");
  if (values.profile === undefined && values.p12 === undefined && values.cert === undefined)
    throw usage("--key goes with --cert <certificate PEM>");
  if (values.cert !== undefined && values.key === undefined)
    throw usage("--cert goes with --key <private key PEM>");
  if (values.p12 === undefined && (values["password-env"] ?? values["password-file"]) !== undefined)
    throw usage("--password-env and --password-file go with --p12");
  if (values.dialect !== undefined && dialectUnit(values.dialect) === undefined)
    throw usage(`--dialect '${values.dialect}' is not one of ${dialectNames().join(", ")}`);
  if (values.dialect !== undefined && values.profile !== undefined)
    throw usage("--dialect goes without --profile: its signing.dialect decides");
  if (values["by-reference"] && values.dialect !== "jades")
    throw usage("--by-reference applies to JAdES (--dialect jades) only");
  if (values["no-request-target"] && (values.dialect ?? "cavage") !== "cavage")
    throw usage("--no-request-target applies to draft-cavage (--dialect cavage) only");
  if (values.profile !== undefined && values["no-request-target"])
    throw usage("--no-request-target does not go with --profile: its signing.headers decide");
  if (values.send && values.curl !== undefined) throw usage("give --send or --curl, not both");
  if (!values.send && values.url !== undefined) throw usage("--url goes with --send (--curl takes its own)");
  if (
    !values.send &&
    values.curl === undefined &&
    (values.ca ?? values.qwac ?? values["qwac-key"]) !== undefined
  )
    throw usage("--ca, --qwac and --qwac-key go with --send or --curl");
  if ((values.qwac === undefined) !== (values["qwac-key"] === undefined))
    throw usage("--qwac and --qwac-key go together");
  if (values.send && values.url === undefined && values.profile === undefined)
    throw usage("--send needs --url <base url> (or a --profile, whose url it takes)");
  // Malformed values too, before any path is looked at (sign() parses them again for use).
  headerOptions(values.header ?? []);
  originOf(values.curl ?? values.url);
}

function loadKeys(values: SignValues): Keys {
  if (values.profile !== undefined) {
    const profile = bankProfileOption(values.profile, values.bank);
    if (typeof profile === "string") throw usage(profile);
    const qseal = loadCredentials(profile.qseal, `banks.${profile.name}.qseal`);
    // Command-line header values are text: signed as their UTF-8 bytes.
    return { signer: profileSigner(profile, qseal, "utf-8"), profile };
  }
  let privateKey: KeyObject;
  let certificate: Uint8Array;
  if (values.p12 !== undefined) {
    const credentials: Credentials = loadCredentials(
      {
        p12: values.p12,
        ...(values["password-env"] !== undefined ? { passwordEnv: values["password-env"] } : {}),
        ...(values["password-file"] !== undefined ? { passwordFile: values["password-file"] } : {}),
      },
      "--p12",
    );
    privateKey = credentials.privateKey;
    certificate = credentials.certificateDer;
  } else {
    const pair = keyPair(values, "key", "cert");
    privateKey = pair.privateKey;
    certificate = pair.certificate.raw;
  }
  const dialect = (values.dialect ?? "cavage") as Dialect;
  if (dialect !== "cavage") {
    // The dialect's default rules, as a bank profile naming only its dialect gets them.
    const signing = parseSigningRules({
      dialect,
      ...(values["by-reference"] ? { jades: { byReference: true } } : {}),
    });
    const url = originOf(values.curl ?? values.url) ?? "https://bank.example";
    return {
      signer: profileSigner(
        { signing, url },
        { privateKey, certificateDer: Buffer.from(certificate) },
        "utf-8",
      ),
      profile: undefined,
    };
  }
  return {
    signer: new RequestSigner({ privateKey, certificate, signRequestTarget: !values["no-request-target"] }),
    profile: undefined,
  };
}

/**
 * A private key and its certificate from two options, refused unless the certificate holds the
 * key's public key: the bank would refuse every signature (or handshake) made with the pair.
 */
function keyPair(
  values: SignValues,
  keyOption: "key" | "qwac-key",
  certOption: "cert" | "qwac",
): { privateKey: KeyObject; certificate: X509Certificate } {
  const keyPath = values[keyOption]!;
  const certPath = values[certOption]!;
  const privateKey = readOption(keyOption, keyPath, "a PEM private key", (b) => createPrivateKey(b));
  const certificate = readOption(
    certOption,
    certPath,
    "a certificate in PEM or DER",
    (b) => new X509Certificate(b),
  );
  const spki = (key: KeyObject) => key.export({ type: "spki", format: "der" });
  if (!spki(createPublicKey(privateKey)).equals(spki(certificate.publicKey))) {
    const subject = /^CN=(.*)$/m.exec(certificate.subject)?.[1] ?? certificate.subject;
    throw new UsageError(
      `--${keyOption} ${keyPath} is not the private key of --${certOption} ${certPath} (${subject}): give the key and the certificate of one ${certOption === "cert" ? "QSealC" : "QWAC"}`,
    );
  }
  return { privateKey, certificate };
}

/** Scheme, host and port: the path sent is the target (after the profile url's path), exactly as signed. */
function originOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    throw usage(`'${url}' is not a URL (https://bank.example:8443)`);
  }
}

function headerOptions(lines: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw usage(`--header '${line}' is not "Name: value"`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

interface Outgoing {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
}

/** Sends the signed request once (never retried) and prints the answer; the response signature too when the profile checks it. */
async function send(
  values: SignValues,
  profile: BankProfileConfig | undefined,
  out: Outgoing,
): Promise<number> {
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file, "utf8"));
  const qwac =
    values.qwac !== undefined
      ? { cert: read(values.qwac)!, key: read(values["qwac-key"])! }
      : profile?.qwac
        ? (({ certificatePem, keyPem }) => ({ cert: certificatePem, key: keyPem }))(
            loadCredentials(profile.qwac, `banks.${profile.name}.qwac`),
          )
        : undefined;
  const ca = read(values.ca ?? profile?.ca);
  const agent = new Agent({ connect: { ...(ca ? { ca } : {}), ...(qwac ?? {}), rejectUnauthorized: true } });
  let response: Dispatcher.ResponseData;
  try {
    response = await request(out.url, {
      method: out.method as Dispatcher.HttpMethod,
      headers: out.headers,
      body: out.body ?? null,
      dispatcher: agent,
      headersTimeout: (profile?.timeoutSeconds ?? 30) * 1000,
      bodyTimeout: (profile?.timeoutSeconds ?? 30) * 1000,
    });
  } catch (error) {
    await agent.close();
    const { code, cause } = error as { code?: string; cause?: { code?: string } };
    console.error(
      `psd2-gateway sign: ${out.method} ${out.url} could not be sent: ${code ?? cause?.code ?? (error as Error).message}`,
    );
    return 1;
  }
  const body = Buffer.from(await response.body.arrayBuffer());
  await agent.close();
  const verifier = profile ? responseVerifierForProfile(profile, Date.now) : undefined;
  const verdict = verifier
    ? await verifier.verify({
        headers: response.headers as Record<string, string | string[] | undefined>,
        body,
        status: response.statusCode,
        request: {
          method: out.method,
          target: new URL(out.url).pathname + new URL(out.url).search,
          requestId: out.headers["X-Request-ID"] ?? "",
          // RFC 9421 binds the answer to the request (`;req`).
          targetUri: out.url,
          headers: Object.fromEntries(Object.entries(out.headers).map(([n, v]) => [n.toLowerCase(), v])),
        },
      })
    : undefined;
  verifier?.stop();
  const signature =
    verdict === undefined
      ? "not checked"
      : verdict === true
        ? "verified"
        : `${verdict.code}: ${verdict.text}`;
  if (values.json) {
    printBytes(
      JSON.stringify(
        {
          request: { method: out.method, url: out.url, headers: out.headers },
          response: {
            status: response.statusCode,
            headers: response.headers,
            body: body.toString("latin1"),
            signature,
          },
        },
        null,
        2,
      ),
    );
  } else {
    printBytes(`${out.method} ${out.url}\n`);
    printBytes(`HTTP ${response.statusCode}`);
    for (const [name, value] of Object.entries(response.headers))
      for (const v of Array.isArray(value) ? value : [value]) printBytes(`${name}: ${v}`);
    printBytes("");
    process.stdout.write(body);
    if (body.length > 0 && body[body.length - 1] !== 0x0a) process.stdout.write("\n");
    if (verifier) console.error(`response signature: ${signature}`);
  }
  const ok =
    response.statusCode >= 200 && response.statusCode < 300 && (verdict === undefined || verdict === true);
  return ok ? 0 : 1;
}

/** Signed values come back in wire form (one char per byte): printed as those bytes, UTF-8 stays UTF-8. */
function printBytes(line: string): void {
  process.stdout.write(Buffer.from(`${line}\n`, "latin1"));
}
