/**
 * The soak's signer (bench/soak.ts), in a worker thread that lives for the whole run: the Date
 * tolerance is 60 s by default, so requests are signed in small batches just ahead of the load
 * instead of all before it. Each batch answers with compact records; the soak dresses them up into
 * worst-case Signature headers (long keyId, large unknown parameter) only when it sends them.
 */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { RequestSigner } from "../src/signature/index.js";

export interface SoakSignerData {
  readonly keyPem: string;
  readonly certificatePem: string;
  /** Headers every request carries (and that get signed when eligible). */
  readonly extraHeaders: Record<string, string>;
  readonly getTarget: string;
  readonly postTarget: string;
  readonly postBody: string;
}

export interface SignBatch {
  readonly id: number;
  readonly gets: number;
  readonly posts: number;
}

/** One signed request, without the headers every request shares. */
export interface SignedRecord {
  readonly method: "GET" | "POST";
  readonly date: string;
  readonly requestId: string;
  readonly digest: string;
  /** `algorithm="…",headers="…"`, as the signer wrote them. */
  readonly params: string;
  /** The signature, base64. */
  readonly signature: string;
  /** When it was signed (ms): the Date tolerance counts from here. */
  readonly signedAt: number;
}

export interface SignedBatch {
  readonly id: number;
  readonly records: SignedRecord[];
}

const SIGNATURE_FORM = /^keyId="(?:[^"\\]|\\.)*",(algorithm="[^"]*",headers="[^"]*"),signature="([^"]*)"$/;

async function sign(
  signer: RequestSigner,
  data: SoakSignerData,
  method: "GET" | "POST",
): Promise<SignedRecord> {
  const headers: Record<string, string> = { ...data.extraHeaders };
  if (method === "POST") headers["Content-Type"] = "application/json";
  const signedAt = Date.now();
  const signed = await signer.sign({
    method,
    target: method === "GET" ? data.getTarget : data.postTarget,
    headers,
    ...(method === "POST" ? { body: data.postBody } : {}),
  });
  const m = SIGNATURE_FORM.exec(signed.Signature);
  if (!m) throw new Error(`unexpected Signature header form: ${signed.Signature.slice(0, 200)}`);
  return {
    method,
    date: signed.Date,
    requestId: signed["X-Request-ID"],
    digest: signed.Digest,
    params: m[1]!,
    signature: m[2]!,
    signedAt,
  };
}

if (parentPort) {
  const data = workerData as SoakSignerData;
  const signer = new RequestSigner({
    privateKey: createPrivateKey(data.keyPem),
    certificate: new X509Certificate(data.certificatePem).raw,
  });
  const port = parentPort;
  port.on("message", async (batch: SignBatch) => {
    const records: SignedRecord[] = [];
    // Two signatures in flight: the RSA work runs on libuv's pool, the JavaScript around it here.
    const one = async (method: "GET" | "POST") => records.push(await sign(signer, data, method));
    for (let i = 0; i < batch.gets + batch.posts; i += 2) {
      const pair = [i, i + 1]
        .filter((j) => j < batch.gets + batch.posts)
        .map((j) => one(j < batch.gets ? "GET" : "POST"));
      await Promise.all(pair);
    }
    port.postMessage({ id: batch.id, records } satisfies SignedBatch);
  });
}
