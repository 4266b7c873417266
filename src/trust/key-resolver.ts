/**
 * Keys by reference: the certificate a JWS names by `kid` or `x5t#S256` instead of carrying it in
 * `x5c`, found in this order: (1) certificates already seen and trusted (QWACs, earlier x5c and
 * TPP-Signature-Certificate headers), by SHA-256, in a bounded LRU; (2) the per-TPP store loaded
 * from files (PEM certificates or JWKS whose keys carry x5c); (3) a directory's JWKS (or a key's
 * `x5u`), fetched only from the hosts of `keys.directories`, through the trust fetcher (the
 * primary's relay with workers > 1), bounded in time and size.
 *
 * Caching follows the UK OB directory's conventions: a key is good for 24 h after a fetch last
 * listed it (so a key removed from the JWKS is refused once that has passed, and a directory that is
 * down does not take its keys with it sooner); a directory document is fetched again in the
 * background after an hour; an unknown `kid` asks the directory again at most once a minute per
 * directory, whoever asks. The certificate found is not trusted here: the chain's `certificate`
 * step judges it as it judges x5c[0].
 */

import { createHash, createPublicKey, type KeyObject, X509Certificate } from "node:crypto";
import { type KeyReference, type KeyResolver, missingKey, type ResolvedKey } from "../eidas/index.js";
import { isRejection, type Rejection, reject } from "../errors.js";
import { type DocumentFetcher, fetchDocument, withoutCredentials } from "./http-fetch.js";

export interface KeyDirectory {
  /**
   * A URL template: `{org-id}` and `{software-statement-id}` are filled from the JWS (UK OB's
   * `http://openbanking.org.uk/iss`, `<org-id>/<software-statement-id>`).
   */
  readonly url: string;
}

export interface KeyResolverOptions {
  /** The certificates of `keys.files`, with the kid each was listed under (JWKS) if any. */
  readonly files?: readonly StoredKey[];
  readonly directories?: readonly KeyDirectory[];
  /** How long a key stays good after a fetch last listed it (24 h). */
  readonly keyTtlMs: number;
  /** A directory document older than this is fetched again in the background (1 h). */
  readonly refreshMs: number;
  /** The least time between two fetches of one TPP's directory document for an unknown kid (1 min). */
  readonly unknownKidIntervalMs: number;
  /** One fetch's time, headers to last byte. */
  readonly timeoutMs: number;
  /** One document's size (a JWKS, an x5u PEM). */
  readonly maxBytes: number;
  /** Certificates remembered by SHA-256 (seen and trusted). */
  readonly maxSeen: number;
  /** Directory documents (one per TPP's URL) held at most; the least recently used goes first. */
  readonly maxDocuments: number;
  readonly now: () => number;
  readonly fetch?: DocumentFetcher;
  /** PEM CAs for the directories' TLS besides the system's (a private directory's issuing CA). */
  readonly ca?: string;
  /** A directory asked (for logs and metrics): its host, and how it went. */
  readonly onFetch?: (host: string, outcome: "fetched" | "failed", detail?: string) => void;
}

/** A certificate held by the resolver, with the kid it was listed under. */
export interface StoredKey extends ResolvedKey {
  readonly kid?: string;
}

interface ListedKey {
  readonly kid: string;
  /** The certificate, when the JWK carried x5c (or once its x5u was fetched). */
  certificate?: ResolvedKey;
  readonly x5u?: string;
  /** When a fetch of the document last listed it. */
  listedAt: number;
}

interface DirectoryDocument {
  readonly url: string;
  keys: Map<string, ListedKey>;
  fetchedAt: number;
  /** The last fetch begun (successful or not). */
  askedAt: number;
  inFlight?: Promise<void>;
  lastError?: string;
}

/** `{org-id}` and `{software-statement-id}` segments: what directory ids are made of, nothing that moves a path. */
const ID_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_JWKS_KEYS = 100;

/** `base64url(SHA-256(der))`, the x5t#S256 of a certificate. */
export function thumbprintOf(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("base64url");
}

function resolvedOf(der: Buffer): ResolvedKey {
  return { base64: der.toString("base64"), der, sha256: thumbprintOf(der) };
}

export class KeyDirectoryResolver implements KeyResolver {
  private readonly seen = new Map<string, ResolvedKey>();
  private readonly byHash = new Map<string, StoredKey>();
  private readonly byKid = new Map<string, StoredKey>();
  private readonly documents = new Map<string, DirectoryDocument>();
  private readonly fetch: DocumentFetcher;
  private readonly hosts: ReadonlySet<string>;

  constructor(private readonly options: KeyResolverOptions) {
    this.fetch = options.fetch ?? fetchDocument;
    this.hosts = new Set((options.directories ?? []).map((d) => hostOf(d.url)));
    this.replaceFiles(options.files ?? []);
  }

  /** The file store, replaced whole (a reload). */
  replaceFiles(files: readonly StoredKey[]): void {
    this.byHash.clear();
    this.byKid.clear();
    for (const key of files) {
      this.byHash.set(key.sha256, key);
      if (key.kid !== undefined) this.byKid.set(key.kid, key);
    }
  }

  /**
   * A certificate that was judged and trusted (a QWAC, an x5c[0], a TPP-Signature-Certificate):
   * a later JWS may name it by x5t#S256. Only trusted ones: a stranger's bytes take no place here.
   */
  remember(der: Uint8Array): void {
    const key = resolvedOf(Buffer.from(der));
    this.seen.delete(key.sha256);
    this.seen.set(key.sha256, key);
    if (this.seen.size > this.options.maxSeen) this.seen.delete(this.seen.keys().next().value!);
  }

  resolve(reference: KeyReference): ResolvedKey | Rejection | Promise<ResolvedKey | Rejection> {
    const { x5tS256, kid } = reference;
    if (x5tS256 !== undefined) {
      const seen = this.seen.get(x5tS256);
      if (seen) {
        this.seen.delete(x5tS256);
        this.seen.set(x5tS256, seen);
        return seen;
      }
      const stored = this.byHash.get(x5tS256);
      if (stored) return stored;
    }
    if (kid !== undefined) {
      const stored = this.byKid.get(kid);
      if (stored) return sameHash(reference, stored, "the key file");
    }
    if (kid === undefined)
      return missingKey(reference, "no certificate seen or kept by this bank has that hash");
    const place = this.documentUrl(reference);
    if (isRejection(place)) return place;
    return this.fromDirectory(reference, kid, place);
  }

  /** Which directory document names this TPP's keys: the first template its ids fill. */
  private documentUrl(reference: KeyReference): string | Rejection {
    const directories = this.options.directories ?? [];
    if (directories.length === 0)
      return missingKey(reference, "this bank keeps no such key and asks no key directory");
    const [org, software, ...rest] = (reference.iss ?? "").split("/");
    const ids: Record<string, string | undefined> = {
      "org-id": org,
      "software-statement-id": rest.length === 0 ? software : undefined,
    };
    for (const directory of directories) {
      let complete = true;
      const url = directory.url.replace(/\{(org-id|software-statement-id)\}/g, (_, name: string) => {
        const id = ids[name];
        if (id === undefined || !ID_SEGMENT.test(id)) complete = false;
        return encodeURIComponent(id ?? "");
      });
      if (complete) return url;
    }
    return missingKey(
      reference,
      "its key directory cannot be named from it",
      "'http://openbanking.org.uk/iss' as '<org-id>/<software-statement-id>'",
    );
  }

  private async fromDirectory(
    reference: KeyReference,
    kid: string,
    url: string,
  ): Promise<ResolvedKey | Rejection> {
    const now = this.options.now();
    let document = this.documents.get(url);
    if (document === undefined) {
      document = {
        url,
        keys: new Map(),
        fetchedAt: Number.NEGATIVE_INFINITY,
        askedAt: Number.NEGATIVE_INFINITY,
      };
      this.keepDocument(document);
    } else {
      this.documents.delete(url);
      this.documents.set(url, document);
    }
    const held = document.keys.get(kid);
    if (held === undefined || !this.fresh(held)) {
      // An unknown kid (a rotation, or a stranger's guess): the directory once a minute at most,
      // however many ask; a fetch under way is waited for.
      if (now - document.askedAt >= this.options.unknownKidIntervalMs) await this.refetch(document);
      else if (document.inFlight) await document.inFlight;
    } else if (now - document.fetchedAt >= this.options.refreshMs && document.inFlight === undefined) {
      // The hourly refresh, in the background: the key held answers this request.
      void this.refetch(document);
    }
    const listed = document.keys.get(kid);
    const where = withoutCredentials(url);
    if (listed === undefined || !this.fresh(listed)) {
      if (listed !== undefined) document.keys.delete(kid);
      const why =
        document.fetchedAt === Number.NEGATIVE_INFINITY
          ? `the key directory ${where} could not be read (${document.lastError ?? "no answer"})`
          : listed !== undefined
            ? `the key directory ${where} has not listed that kid for ${duration(this.options.keyTtlMs)} (keys.keyTtlSeconds)`
            : `the key directory ${where} does not list that kid`;
      return missingKey(reference, why, `a kid ${where} lists`);
    }
    if (listed.certificate === undefined) {
      const fetched = await this.fetchX5u(reference, listed);
      if (isRejection(fetched)) return fetched;
    }
    return sameHash(reference, listed.certificate!, `the key directory ${where}`);
  }

  private fresh(key: ListedKey): boolean {
    return this.options.now() - key.listedAt < this.options.keyTtlMs;
  }

  private keepDocument(document: DirectoryDocument): void {
    this.documents.set(document.url, document);
    if (this.documents.size > this.options.maxDocuments)
      this.documents.delete(this.documents.keys().next().value!);
  }

  /** One fetch of a document at a time; keys it lists are good again for keyTtlMs, the others keep their time. */
  private refetch(document: DirectoryDocument): Promise<void> {
    if (document.inFlight) return document.inFlight;
    document.askedAt = this.options.now();
    const host = hostOf(document.url);
    const run = (async () => {
      try {
        const result = await this.fetch(
          document.url,
          this.fetchOptions("application/jwk-set+json, application/json"),
        );
        if (result.status !== "fresh") throw new Error("answered 304 to an unconditional request");
        const keys = readJwks(result.body);
        const at = this.options.now();
        for (const key of keys) {
          const held = document.keys.get(key.kid);
          if (held && sameKey(held, key)) held.listedAt = at;
          else document.keys.set(key.kid, { ...key, listedAt: at });
        }
        document.fetchedAt = at;
        delete document.lastError;
        this.options.onFetch?.(host, "fetched");
      } catch (error) {
        document.lastError = (error as Error).message.slice(0, 200);
        this.options.onFetch?.(host, "failed", document.lastError);
      } finally {
        delete document.inFlight;
      }
    })();
    document.inFlight = run;
    return run;
  }

  private async fetchX5u(reference: KeyReference, listed: ListedKey): Promise<true | Rejection> {
    const x5u = listed.x5u;
    if (x5u === undefined || !this.hosts.has(hostOf(x5u))) {
      return missingKey(
        reference,
        `the directory's key has no x5c and ${x5u === undefined ? "no x5u" : `its x5u's host ${hostOf(x5u) || "(none)"} is not a key directory of this bank`}`,
      );
    }
    try {
      const result = await this.fetch(
        x5u,
        this.fetchOptions("application/x-pem-file, application/pkix-cert"),
      );
      if (result.status !== "fresh") throw new Error("answered 304 to an unconditional request");
      const der = firstCertificate(result.body);
      if (der === undefined) throw new Error("not a PEM or DER certificate");
      listed.certificate = resolvedOf(der);
      this.options.onFetch?.(hostOf(x5u), "fetched");
      return true;
    } catch (error) {
      const detail = (error as Error).message.slice(0, 200);
      this.options.onFetch?.(hostOf(x5u), "failed", detail);
      return missingKey(reference, `its x5u ${withoutCredentials(x5u)} could not be read (${detail})`);
    }
  }

  private fetchOptions(accept: string) {
    return {
      timeoutMs: this.options.timeoutMs,
      maxBytes: this.options.maxBytes,
      accept,
      // workers > 1: a copy the primary fetched for another worker within the unknown-kid pace stands
      // in, so the directory sees that pace from the whole cluster, not from each worker.
      shareForMs: this.options.unknownKidIntervalMs,
      ...(this.options.ca ? { ca: this.options.ca } : {}),
    };
  }
}

/** A key's cache time as a refusal says it: whole hours, or seconds for a short one. */
function duration(ms: number): string {
  return ms >= 3_600_000 && ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 1000)} s`;
}

/** The hash a JWS named the key by is compared first: a mismatch never reaches the eIDAS path. */
function sameHash(reference: KeyReference, found: ResolvedKey, where: string): ResolvedKey | Rejection {
  if (reference.x5tS256 === undefined || reference.x5tS256 === found.sha256) return found;
  return reject(
    "CERTIFICATE_INVALID",
    `'x5t#S256' ${reference.x5tS256.slice(0, 43)} is not the SHA-256 of the certificate kid '${(reference.kid ?? "").slice(0, 80)}' names in ${where} (${found.sha256}); send the thumbprint of that certificate, or x5c`,
  );
}

function sameKey(a: ListedKey, b: Omit<ListedKey, "listedAt">): boolean {
  return a.certificate?.sha256 === b.certificate?.sha256 && a.x5u === b.x5u;
}

function hostOf(url: string): string {
  try {
    const parsed = new URL(url.replace(/\{[a-z-]+\}/g, "x"));
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.host.toLowerCase() : "";
  } catch {
    return "";
  }
}

/**
 * A JWKS (RFC 7517 section 5) as kid → certificate: each key's x5c[0] (its x5t#S256, when given,
 * must be that certificate's; its public key, when given, the certificate's key), or its x5u.
 * Keys without kid, or with neither x5c nor x5u, or that do not hold together, are left out.
 */
export function readJwks(body: Uint8Array): Omit<ListedKey, "listedAt">[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch {
    throw new Error("not JSON");
  }
  const keys = (parsed as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new Error("not a JWKS (no 'keys' array)");
  const out: Omit<ListedKey, "listedAt">[] = [];
  for (const jwk of keys.slice(0, MAX_JWKS_KEYS)) {
    const key = readJwk(jwk);
    if (key) out.push(key);
  }
  return out;
}

function readJwk(jwk: unknown): Omit<ListedKey, "listedAt"> | undefined {
  if (typeof jwk !== "object" || jwk === null) return undefined;
  const j = jwk as Record<string, unknown>;
  if (typeof j.kid !== "string" || j.kid.length === 0 || j.kid.length > 256) return undefined;
  if (j.use !== undefined && j.use !== "sig") return undefined;
  const x5u = typeof j.x5u === "string" && j.x5u.length <= 2048 ? j.x5u : undefined;
  if (!Array.isArray(j.x5c) || typeof j.x5c[0] !== "string")
    return x5u === undefined ? undefined : { kid: j.kid, x5u };
  const der = Buffer.from(j.x5c[0], "base64");
  let certificateKey: KeyObject;
  try {
    certificateKey = new X509Certificate(der).publicKey;
  } catch {
    return undefined;
  }
  const certificate = resolvedOf(der);
  if (j["x5t#S256"] !== undefined && j["x5t#S256"] !== certificate.sha256) return undefined;
  if (typeof j.kty === "string" && !jwkMatches(j, certificateKey)) return undefined;
  return { kid: j.kid, certificate, ...(x5u ? { x5u } : {}) };
}

/** The JWK's own key (n/e, x/y) is the certificate's. */
function jwkMatches(jwk: Record<string, unknown>, certificateKey: KeyObject): boolean {
  if (jwk.n === undefined && jwk.x === undefined) return true;
  try {
    const { kty, n, e, crv, x, y } = jwk as Record<string, string>;
    const own = createPublicKey({ key: { kty, n, e, crv, x, y } as never, format: "jwk" });
    return own.equals(certificateKey);
  } catch {
    return false;
  }
}

/** The first certificate of a PEM (or a DER certificate). */
export function firstCertificate(body: Uint8Array): Buffer | undefined {
  const text = Buffer.from(body).toString("latin1");
  const pem = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/.exec(text);
  const der = pem ? Buffer.from(pem[1]!.replace(/\s+/g, ""), "base64") : Buffer.from(body);
  try {
    new X509Certificate(der);
    return der;
  } catch {
    return undefined;
  }
}

/** Every certificate of a PEM file, or every key of a JWKS file with x5c (the store of `keys.files`). */
export function readKeyFile(body: Uint8Array, name: string): StoredKey[] {
  const text = Buffer.from(body).toString("utf8").trim();
  if (text.startsWith("{")) {
    const keys = readJwks(body).filter((k) => k.certificate !== undefined);
    if (keys.length === 0) throw new Error(`${name}: a JWKS without a key carrying x5c`);
    return keys.map((k) => ({ ...k.certificate!, kid: k.kid }));
  }
  const out: StoredKey[] = [];
  for (const match of text.matchAll(
    /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/g,
  )) {
    const der = firstCertificate(Buffer.from(match[0]));
    if (der === undefined) throw new Error(`${name}: a PEM block that is not a certificate`);
    out.push(resolvedOf(der));
  }
  if (out.length === 0) throw new Error(`${name}: neither PEM certificates nor a JWKS`);
  return out;
}
