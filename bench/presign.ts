/**
 * Signs benchmark requests ahead of the run, in worker threads: an RSA signature costs ~0.7 ms,
 * far more than the load generator may spend per request.
 */

import { createPrivateKey, randomUUID, X509Certificate } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { RequestSigner } from "../src/signature/index.js";

export interface PresignJob {
  readonly keyPem: string;
  /** One certificate per request (the never-seen case) or one for all. */
  readonly certificatePems: readonly string[];
  readonly count: number;
  readonly method: "GET" | "POST";
  /** `{i}` in the target becomes the request's index, for one account per request. */
  readonly target: string;
  readonly indexOffset?: number;
  readonly body?: string;
  readonly extraHeaders: Record<string, string>;
}

export interface PresignedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

async function run(job: PresignJob): Promise<PresignedRequest[]> {
  const privateKey = createPrivateKey(job.keyPem);
  const signers = job.certificatePems.map(
    (pem) => new RequestSigner({ privateKey, certificate: new X509Certificate(pem).raw }),
  );
  const out: PresignedRequest[] = [];
  for (let i = 0; i < job.count; i++) {
    const signer = signers[i % signers.length]!;
    const headers: Record<string, string> = { ...job.extraHeaders, "X-Request-ID": randomUUID() };
    if (job.body) headers["Content-Type"] = "application/json";
    const target = job.target.replace("{i}", String((job.indexOffset ?? 0) + i));
    const signed = await signer.sign({
      method: job.method,
      target,
      headers,
      ...(job.body ? { body: job.body } : {}),
    });
    out.push({
      method: job.method,
      path: target,
      headers: { ...headers, ...signed },
      ...(job.body ? { body: job.body } : {}),
    });
  }
  return out;
}

if (parentPort) {
  run(workerData as PresignJob).then((result) => parentPort!.postMessage(result));
}
