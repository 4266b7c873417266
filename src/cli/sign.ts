/** `psd2-gateway sign`: the headers a TPP sends for one request, or a ready curl command line. */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { RequestSigner } from "../signature/index.js";
import { defineCommand, USAGE_ERROR } from "./command.js";

export const signCommand = defineCommand({
  name: "sign",
  summary: "sign one request as a TPP would (headers, or a curl command line)",
  usage: `psd2-gateway sign --key <pem> --cert <pem> --target </path?query> [options]

  --key <pem>            the QSealC's private key (PEM)
  --cert <pem>           the QSealC (PEM or DER)
  --method <M>           default GET
  --target <path?query>  the request target exactly as it will be sent
  --body <file>          the body, signed byte for byte (Digest over exactly these bytes)
  --header "Name: value" a header to send and sign (repeatable): PSU-ID, TPP-Redirect-URI, …
  --curl <base url>      print a curl command instead of the headers
  --no-request-target    leave (request-target) out of the signed headers`,
  options: {
    key: { type: "string" },
    cert: { type: "string" },
    method: { type: "string", default: "GET" },
    target: { type: "string" },
    body: { type: "string" },
    header: { type: "string", multiple: true, default: [] },
    curl: { type: "string" },
    "no-request-target": { type: "boolean", default: false },
  },
  run: (values) => sign(values, (file) => readFileSync(file)),
});

interface SignValues {
  key?: string | undefined;
  cert?: string | undefined;
  method?: string | undefined;
  target?: string | undefined;
  body?: string | undefined;
  header?: string[] | undefined;
  curl?: string | undefined;
  "no-request-target"?: boolean | undefined;
}

async function sign(values: SignValues, read: (file: string) => Buffer): Promise<number> {
  if (!values.key || !values.cert || !values.target) {
    console.error(
      "psd2-gateway sign: needs --key <private key PEM> --cert <certificate PEM> --target </path?query>; see psd2-gateway sign --help",
    );
    return USAGE_ERROR;
  }
  const headers: Record<string, string> = {};
  for (const line of values.header ?? []) {
    const colon = line.indexOf(":");
    if (colon <= 0) {
      console.error(`psd2-gateway sign: --header '${line}' is not "Name: value"`);
      return USAGE_ERROR;
    }
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  const body = values.body ? read(values.body) : undefined;
  const signer = new RequestSigner({
    privateKey: createPrivateKey(read(values.key)),
    certificate: new X509Certificate(read(values.cert)).raw,
    signRequestTarget: !values["no-request-target"],
  });
  const method = values.method!.toUpperCase();
  const signed = await signer.sign({ method, target: values.target, headers, ...(body ? { body } : {}) });
  const all: Record<string, string> = { ...headers, ...signed };
  if (body) all["Content-Type"] ??= "application/json";
  if (values.curl) {
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const parts = [
      "curl",
      "-sS",
      "-X",
      method,
      ...Object.entries(all).flatMap(([n, v]) => ["-H", quote(`${n}: ${v}`)]),
    ];
    if (values.body) parts.push("--data-binary", quote(`@${values.body}`));
    parts.push(quote(values.curl.replace(/\/$/, "") + values.target));
    printBytes(parts.join(" "));
  } else {
    for (const [name, value] of Object.entries(all)) printBytes(`${name}: ${value}`);
  }
  return 0;
}

/** Signed values come back in wire form (one char per byte): printed as those bytes, UTF-8 stays UTF-8. */
function printBytes(line: string): void {
  process.stdout.write(Buffer.from(`${line}\n`, "latin1"));
}
