/**
 * The key resolver made from the config's `keys:` section (trust/key-resolver.ts): its files read
 * (bounded), its directories fetched through the trust fetcher (the primary's relay in a cluster
 * worker), and the certificate verifier that tells it which certificates were seen and trusted.
 */

import type { CertificateVerifier } from "../checks/index.js";
import type { GatewayConfig } from "../config/schema.js";
import { decodeCertificateHeader } from "../eidas/index.js";
import { isRejection } from "../errors.js";
import { Kept } from "../kept.js";
import { readFileBoundedSync } from "../trust/bounds.js";
import type { DocumentFetcher } from "../trust/http-fetch.js";
import { KeyDirectoryResolver, readKeyFile, type StoredKey } from "../trust/key-resolver.js";

/** A key file or CA bundle is a few certificates. */
const MAX_KEY_FILE_BYTES = 4 * 1024 * 1024;

export interface KeyResolverDependencies {
  readonly now: () => number;
  readonly fetch?: DocumentFetcher;
  readonly onFetch?: (host: string, outcome: "fetched" | "failed", detail?: string) => void;
}

/** Throws, naming the file, when a key file does not load: the gateway does not start on half a store. */
export function keyResolverOf(
  config: Pick<GatewayConfig, "keys">,
  deps: KeyResolverDependencies,
): KeyDirectoryResolver {
  const k = config.keys;
  const files: StoredKey[] = k.files.flatMap((file) =>
    readKeyFile(readFileBoundedSync(file, MAX_KEY_FILE_BYTES), `keys.files ${file}`),
  );
  return new KeyDirectoryResolver({
    files,
    directories: k.directories,
    keyTtlMs: k.keyTtlSeconds * 1000,
    refreshMs: k.refreshSeconds * 1000,
    unknownKidIntervalMs: k.unknownKidIntervalSeconds * 1000,
    timeoutMs: k.timeoutSeconds * 1000,
    maxBytes: k.maxBytes,
    maxSeen: k.maxSeen,
    maxDocuments: k.maxDocuments,
    now: deps.now,
    ...(k.ca ? { ca: readFileBoundedSync(k.ca, MAX_KEY_FILE_BYTES).toString("utf8") } : {}),
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...(deps.onFetch ? { onFetch: deps.onFetch } : {}),
  });
}

/**
 * The verifier, telling the resolver of every certificate it trusted (a QSealC in x5c or
 * TPP-Signature-Certificate, a QWAC): a later JWS may name it by x5t#S256 alone.
 */
export function rememberingTrusted(
  verifier: CertificateVerifier,
  keys: KeyDirectoryResolver,
): CertificateVerifier {
  // The same few certificates on every request: decoded and hashed once each, not per request.
  const told = new Kept<string, true>(1024);
  const remember = (value: string, verdict: unknown) => {
    if (isRejection(verdict) || told.get(value)) return;
    const der = decodeCertificateHeader(value);
    if (isRejection(der)) return;
    keys.remember(der);
    told.keep(value, true);
  };
  // Apart from verify: a closure there would cost a context on every request (issue 42).
  const rememberWhenJudged = <V>(verdict: Promise<V>, value: string): Promise<V> =>
    verdict.then((v) => {
      remember(value, v);
      return v;
    });
  return {
    verify(value, purpose) {
      const verdict = verifier.verify(value, purpose);
      if (verdict instanceof Promise) return rememberWhenJudged(verdict, value);
      remember(value, verdict);
      return verdict;
    },
  };
}
