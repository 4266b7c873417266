/** `psd2-gateway sign`: the headers a TPP sends for one request, or a ready curl command line. */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { parseArgs } from "node:util";
import { RequestSigner } from "../signature/index.js";

export async function signCommand(args: string[], read: (file: string) => Buffer): Promise<number> {
  const { values } = parseArgs({
    args,
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
  });
  if (!values.key || !values.cert || !values.target) {
    console.error("sign needs --key <private key PEM> --cert <certificate PEM> --target </path?query>");
    return 1;
  }
  const headers: Record<string, string> = {};
  for (const line of values.header ?? []) {
    const colon = line.indexOf(":");
    if (colon <= 0) {
      console.error(`--header '${line}' is not "Name: value"`);
      return 1;
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
    console.log(parts.join(" "));
  } else {
    for (const [name, value] of Object.entries(all)) console.log(`${name}: ${value}`);
  }
  return 0;
}
