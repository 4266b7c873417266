/**
 * A hostile bank behind the egress gateway's `fapi` profile (RFC 9421, responses enforced, FAPI 2.0
 * HTTP Signatures draft -01 `full`): real TLS on loopback (the dev PKI's localhost certificate), its
 * answers signed with the bank's QSealC, and each answer's signature broken as the request's
 * `attack` query parameter asks (families/egress-response-req.ts). `valid` signs as the profile
 * requires: the control, which must come back verified.
 */

import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { DevPki } from "@psd2-gateway/dev-pki";
import { isRejection } from "../../src/errors.js";
import { buildKeyId, keyIdTargetFromDer } from "../../src/signature/index.js";
import {
  type ComponentId,
  component,
  computeContentDigest,
  fapiResponseSigning,
  type RequestMessage,
  type ResponseMessage,
  sign,
} from "../../src/signature/rfc9421/index.js";

export const FAPI_ATTACKS = [
  "valid",
  "wrong-method",
  "wrong-target",
  "wrong-digest",
  "wrong-signature",
  "drop-req",
  "req-absent-component",
  "duplicate-label",
  "unknown-key",
  "req-no-key",
  "huge-input",
  "malformed-input",
] as const;
export type FapiAttack = (typeof FAPI_ATTACKS)[number];

export interface FapiBank {
  /** https://127.0.0.1:<port> */
  readonly origin: string;
  /** Requests answered, by attack. */
  readonly answered: Map<string, number>;
  /** Answers the bank could not build (its own bug, not the gateway's). */
  readonly errors: string[];
  close(): Promise<void>;
}

const CERTIFICATE_HEADER = "aspsp-signature-certificate";

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function lowerHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : String(value);
  return out;
}

/** A seeded-enough choice from the request's own bytes: the family's rng chose the attack already. */
function pickBy<T>(items: readonly T[], seed: string): T {
  let h = 0;
  for (const ch of seed) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return items[h % items.length]!;
}

export async function startFapiBank(pki: DevPki): Promise<FapiBank> {
  const keyid = buildKeyId(keyIdTargetFromDer(pki.bankQseal.der));
  const privateKey = pki.bankQseal.privateKey;
  const answered = new Map<string, number>();
  const errors: string[] = [];
  const server: Server = createServer(
    { cert: pki.gatewayTls.pem + pki.issuingCa.pem, key: pki.gatewayTls.keyPem },
    async (req, res) => {
      res.on("error", () => {});
      let body: Buffer;
      try {
        body = await readBody(req);
      } catch {
        return;
      }
      const url = new URL(req.url ?? "/", "https://x");
      const attack = (url.searchParams.get("attack") ?? "valid") as FapiAttack;
      const variant = url.searchParams.get("v") ?? "0";
      answered.set(attack, (answered.get(attack) ?? 0) + 1);
      const request: RequestMessage = {
        method: req.method ?? "GET",
        targetUri: `https://${req.headers.host}${req.url}`,
        headers: lowerHeaders(req),
      };
      const answer = Buffer.from(JSON.stringify({ ok: true, attack, received: body.length }));
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "content-digest": computeContentDigest(answer, "sha-256"),
        [CERTIFICATE_HEADER]: pki.bankQseal.headerValue,
      };
      const requestId = request.headers["x-request-id"];
      if (typeof requestId === "string") headers["x-request-id"] = requestId;
      const response: ResponseMessage = { status: 200, headers };
      let signed: Record<string, string>;
      try {
        signed = signAs(attack, variant, response, request, { privateKey, keyid });
      } catch (error) {
        // The bank's own fault (an attack it could not build): the connection cut, which the family's
        // check on the refusal's text tells apart from a signature refused.
        errors.push(String((error as Error).message).slice(0, 300));
        res.destroy();
        return;
      }
      res.writeHead(200, { ...headers, ...signed });
      res.end(answer);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    answered,
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The Signature-Input and Signature of the answer, broken as `attack` says. */
function signAs(
  attack: FapiAttack,
  variant: string,
  response: ResponseMessage,
  request: RequestMessage,
  key: { privateKey: import("node:crypto").KeyObject; keyid: string },
): Record<string, string> {
  const signing = fapiResponseSigning(response, request, {
    privateKey: key.privateKey,
    keyid: key.keyid,
    now: Date.now(),
    coverAlways: [CERTIFICATE_HEADER, "x-request-id", "content-digest"],
    hasBody: true,
    profile: "full",
  });
  if (isRejection(signing)) throw new Error(signing.text);
  let components: ComponentId[] = signing.components.map((c) => (typeof c === "string" ? component(c) : c));
  let signedRequest: RequestMessage = request;
  const withRequestHeaders = (more: Record<string, string>): RequestMessage => ({
    ...request,
    headers: { ...request.headers, ...more },
  });
  const requestLabel = /^([a-z*][a-z0-9_\-.*]*)=/.exec(String(request.headers["signature-input"] ?? ""))?.[1];
  switch (attack) {
    case "valid":
    case "duplicate-label":
    case "huge-input":
    case "malformed-input":
      break;
    case "wrong-method":
      signedRequest = { ...request, method: pickBy(["POST", "DELETE", "PUT", "get"], variant) };
      if (signedRequest.method === request.method) signedRequest = { ...request, method: "PATCH" };
      break;
    case "wrong-target": {
      const target = new URL(request.targetUri);
      const change = pickBy(["path", "query", "host", "scheme"], variant);
      if (change === "path") target.pathname += "/other";
      else if (change === "query") target.searchParams.set("fz", "another");
      else if (change === "host") target.host = "bank.example";
      else target.protocol = "http:";
      signedRequest = { ...request, targetUri: target.toString() };
      break;
    }
    case "wrong-digest":
      // Another body's digest: where the request had one it is replaced; where it had none, claimed.
      signedRequest = withRequestHeaders({
        "content-digest": computeContentDigest(Buffer.from(`another ${variant}`), "sha-256"),
      });
      if (!components.some((c) => c.name === "content-digest" && c.params.has("req")))
        components.unshift(component("content-digest", { req: true }));
      break;
    case "wrong-signature": {
      // Another signature under the request's label: the response answers some other request.
      const label = requestLabel ?? "sig1";
      signedRequest = withRequestHeaders({ signature: `${label}=:${randomBytes(256).toString("base64")}:` });
      break;
    }
    case "drop-req": {
      const req = components.filter((c) => c.params.has("req"));
      const dropped = pickBy(req, variant);
      components = components.filter((c) => c !== dropped);
      break;
    }
    case "req-absent-component": {
      const name = pickBy(["authorization", "dpop", "psu-corporate-id", "digest"], variant);
      signedRequest = withRequestHeaders({ [name]: "claimed" });
      components.push(component(name, { req: true }));
      break;
    }
    case "unknown-key": {
      // A `key=` naming a label the request's Signature does not have (kept beside the real ones, or instead).
      const ghost = "ghost";
      signedRequest = withRequestHeaders({
        signature: `${String(request.headers.signature ?? "")}, ${ghost}=:${randomBytes(32).toString("base64")}:`,
        "signature-input": `${String(request.headers["signature-input"] ?? "")}, ${ghost}=("@method");created=1`,
      });
      const instead = variant.endsWith("1");
      if (instead) components = components.filter((c) => !c.params.has("key"));
      components.push(component("signature", { req: true, key: ghost }));
      if (instead) components.push(component("signature-input", { req: true, key: ghost }));
      break;
    }
    case "req-no-key":
      // "signature";req as if the request were unsigned or had one signature: the whole field, no key.
      components = components.filter((c) => !c.params.has("key"));
      components.push(component("signature", { req: true }));
      if (variant.endsWith("1")) components.push(component("signature-input", { req: true }));
      break;
  }
  const signed = sign({ ...signing, components, request: signedRequest });
  if (isRejection(signed)) throw new Error(`${attack}: ${signed.text}`);
  const input = signed.signatureInput;
  const value = signed.signature;
  switch (attack) {
    case "duplicate-label": {
      // The label twice: the good one first, then a broken one under the same name (or the reverse).
      const label = input.slice(0, input.indexOf("="));
      const broken = `${label}=:${randomBytes(256).toString("base64")}:`;
      return variant.endsWith("1")
        ? { "signature-input": `${input}, ${input}`, signature: `${broken}, ${value}` }
        : { "signature-input": `${input}, ${input}`, signature: `${value}, ${broken}` };
    }
    case "huge-input": {
      // Within the bank client's header bound, or past it; the components over MAX_COMPONENTS.
      const size = pickBy([300, 1_000, 2_000, 8_000, 12_000, 15_000], variant);
      const extra = Array.from({ length: Math.ceil(size / 12) }, (_, i) => `"x-${i}"`).join(" ");
      return {
        "signature-input": input.replace("(", `(${extra} `),
        signature: value,
      };
    }
    case "malformed-input": {
      const broken = pickBy(
        [
          input.slice(0, Math.floor(input.length / 2)),
          input.replace("(", "["),
          input.replace(/;created=\d+/, ";created=-1"),
          input.replace(/;tag="[^"]*"/, ";tag=fapi-2-response"),
          input.replace(/"@status"/, '"@status";req'),
          `${input};`,
          input.replace(/"/g, "'"),
          `${input.slice(0, input.indexOf("="))}=${"(".repeat(200)}`,
          input.replace(/^[a-z0-9_.*-]+=/, "Sig1="),
        ],
        variant,
      );
      return { "signature-input": broken === input ? `${input},` : broken, signature: value };
    }
    default:
      return { "signature-input": input, signature: value };
  }
}
