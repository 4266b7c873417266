/**
 * The evidence folder: the one module of evidence/ that touches the disk. Append-only files, one
 * chain per process, written by the shared async writer behind a bounded queue (queued-store.ts),
 * so the request path never waits for the disk:
 *
 *     <folder>/chains/<instance>/000001.jsonl   the chain's files, in order; each starts with a
 *                                               `file` line and ends (rotated, closed) with a checkpoint
 *     <folder>/certificates/<sha256>.pem       each signing certificate once, and the CAs of its path
 *     <folder>/reports/<id>.json                each validation report a record rests on, once
 *     <folder>/keys/<sha256>.pem               the public key of every checkpoint key used
 *                                               (<sha256>.cert.pem beside it: the QSealC, when it is one)
 *     <folder>/checkpoint-key.pem               the folder's own key, made at first start when the
 *     <folder>/checkpoint-public.pem            gateway has no response-signing QSealC
 *
 * Durability: `fsync: every` syncs each batch written, `interval` once a second. A record queued is
 * acknowledged (its request goes on); one not yet synced can be lost by a crash of the machine, as
 * can the queue by a crash of the process.
 */

import { createPrivateKey, createPublicKey, randomBytes, X509Certificate } from "node:crypto";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { type CheckpointKey, checkpointKeyOf, newCheckpointKey } from "./checkpoint.js";
import { type ChainedText, QueuedEvidenceStore, type QueueOptions } from "./queued-store.js";
import { sha256Hex } from "./record.js";
import type { ChainFile, ChainFolder } from "./verify.js";

export interface FileStoreOptions extends QueueOptions {
  readonly folder: string;
  /** Names this process's chain; default host, pid and start time. */
  readonly instanceId?: string;
  readonly fsync: "every" | "interval";
  readonly fsyncIntervalMs?: number;
  /** The response-signing QSealC's key (and certificate); otherwise the folder's own key. */
  readonly key?: CheckpointKey;
  /**
   * The validation report a record names and the DER of the CAs on its path (the gateway's recent
   * reports and trust store): written once each, so that a bundle holds the certificate's chain
   * and why it passed.
   */
  readonly validation?: (reportId: string) => ValidationEvidence | undefined;
}

export interface ValidationEvidence {
  readonly report: object;
  /** The CAs of the path, signer's issuer first, as DER. */
  readonly issuers: readonly Uint8Array[];
}

export const CHAINS = "chains";
export const CERTIFICATES = "certificates";
export const KEYS = "keys";
export const REPORTS = "reports";
export const OWN_KEY = "checkpoint-key.pem";
export const OWN_PUBLIC_KEY = "checkpoint-public.pem";

export function defaultInstanceId(now = Date.now()): string {
  const host = hostname().replace(/[^A-Za-z0-9.-]/g, "_") || "host";
  return `${host}-${process.pid}-${now.toString(36)}`;
}

export function chainFileName(n: number): string {
  return `${String(n).padStart(6, "0")}.jsonl`;
}

/** What a failed write's error means, as a bounded label. */
export function failureReason(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case "ENOSPC":
    case "EDQUOT":
      return "disk-full";
    case "EROFS":
    case "EACCES":
    case "EPERM":
      return "read-only";
    case "ENOENT":
    case "ENOTDIR":
    case "EBADF":
      return "gone";
    default:
      return "io";
  }
}

/**
 * The folder's own checkpoint key, made at its first start: written beside its public key, so that
 * anyone can check a checkpoint with openssl. Several workers starting at once agree on one (the
 * first to link its file wins).
 */
export function folderCheckpointKey(folder: string): CheckpointKey {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, OWN_KEY);
  if (!existsSync(path)) {
    const made = newCheckpointKey();
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(tmp, made.privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    try {
      linkSync(tmp, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      unlinkSync(tmp);
    }
  }
  const key = checkpointKeyOf(createPrivateKey(readFileSync(path)));
  const publicPath = join(folder, OWN_PUBLIC_KEY);
  if (!existsSync(publicPath))
    writeFileSync(publicPath, key.publicKey.export({ type: "spki", format: "pem" }) as string);
  return key;
}

const NEWLINE = Buffer.from("\n");

export class FileEvidenceStore extends QueuedEvidenceStore {
  private readonly dir: string;
  private handle: FileHandle | undefined;
  /** Bytes of the current file known to be written whole. */
  private size = 0;
  private dirty = false;
  private lastSync = 0;

  private constructor(
    private readonly options: FileStoreOptions,
    key: CheckpointKey,
  ) {
    const chainId = options.instanceId ?? defaultInstanceId((options.now ?? Date.now)());
    super(chainId, key, options);
    this.dir = join(options.folder, CHAINS, this.chainId);
  }

  /** Makes the folders, the key and the chain's first file; throws (nothing started) when it cannot. */
  static async open(options: FileStoreOptions): Promise<FileEvidenceStore> {
    const key = options.key ?? folderCheckpointKey(options.folder);
    const store = new FileEvidenceStore(options, key);
    await mkdir(store.dir, { recursive: true });
    await mkdir(join(options.folder, CERTIFICATES), { recursive: true });
    await mkdir(join(options.folder, REPORTS), { recursive: true });
    await store.writePublicKey();
    await store.begin();
    return store;
  }

  protected where(): { folder: string; file: string } {
    return { folder: this.options.folder, file: join(this.dir, chainFileName(this.segment)) };
  }

  protected failureReason(error: unknown): string {
    return failureReason(error);
  }

  /** reports/<id>.json and the path's CAs, once (the report is the gateway's, from memory). */
  protected async storeReport(id: string): Promise<void> {
    const found = reportToKeep(this, this.options.validation, id);
    if (!found) return;
    await writeOnce(
      join(this.options.folder, REPORTS, `${id}.json`),
      `${JSON.stringify(found.report, null, 2)}\n`,
    );
  }

  protected async storeCertificate(fingerprint: string, der: Uint8Array): Promise<void> {
    await writeOnce(join(this.options.folder, CERTIFICATES, `${fingerprint}.pem`), pemOf(der));
  }

  protected async writeLines(lines: readonly ChainedText[]): Promise<void> {
    // One gathered write of each line's bytes (encoded outside the JS heap) and a newline: no
    // joined copy of the batch. A short write, which a regular file rarely makes, goes on from the
    // bytes of the rest.
    const parts: Buffer[] = [];
    let length = 0;
    for (const line of lines) {
      const bytes = Buffer.from(line.text, "utf8");
      parts.push(bytes, NEWLINE);
      length += bytes.length + 1;
    }
    let offset = (await this.handle!.writev(parts, this.size)).bytesWritten;
    if (offset < length) {
      const rest = Buffer.concat(parts).subarray(offset);
      while (offset < length) {
        offset += (
          await this.handle!.write(rest, offset - (length - rest.length), length - offset, this.size + offset)
        ).bytesWritten;
      }
    }
    this.size += length;
    this.dirty = true;
    if (this.options.fsync === "every") await this.sync();
  }

  protected override settleDue(now: number): boolean {
    return this.dirty && now - this.lastSync >= (this.options.fsyncIntervalMs ?? 1000);
  }

  protected async settle(closing: boolean): Promise<void> {
    if (this.dirty && (closing || this.settleDue(this.now()))) await this.sync();
  }

  protected async undoPartial(): Promise<void> {
    await this.handle?.truncate(this.size);
  }

  private async sync(): Promise<void> {
    await this.handle?.datasync();
    this.dirty = false;
    this.lastSync = this.now();
  }

  protected async closeSegment(): Promise<void> {
    await this.sync();
    await this.handle?.close();
    this.handle = undefined;
  }

  protected async openSegment(n: number): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    this.handle = await open(join(this.dir, chainFileName(n)), "wx");
    this.size = 0;
  }

  protected async release(): Promise<void> {
    await this.handle?.datasync();
    await this.handle?.close();
    this.handle = undefined;
  }

  private async writePublicKey(): Promise<void> {
    const dir = join(this.options.folder, KEYS);
    await mkdir(dir, { recursive: true });
    await writeOnce(
      join(dir, `${this.key.id}.pem`),
      this.key.publicKey.export({ type: "spki", format: "pem" }) as string,
    );
    if (this.key.certificatePem)
      await writeOnce(join(dir, `${this.key.id}.cert.pem`), this.key.certificatePem);
  }

  /** Removes chain files last written before `before` (never this chain's current file). */
  protected async sweep(before: number): Promise<void> {
    const root = join(this.options.folder, CHAINS);
    for (const chain of await readdir(root)) {
      const dir = join(root, chain);
      for (const name of (await readdir(dir)).sort()) {
        const path = join(dir, name);
        if (chain === this.chainId && name === chainFileName(this.segment)) continue;
        const info = await stat(path);
        if (info.mtimeMs < before) await unlink(path);
      }
    }
  }
}

/** PEM of a certificate's DER. */
export function pemOf(der: Uint8Array): string {
  return new X509Certificate(der).toString();
}

/**
 * The validation report `id` if the gateway still has it and `id` is a safe name (it becomes a
 * file name or key); the CAs of its path are queued once on the way. Both stores keep reports so.
 */
export function reportToKeep(
  store: QueuedEvidenceStore,
  validation: ((reportId: string) => ValidationEvidence | undefined) | undefined,
  id: string,
): ValidationEvidence | undefined {
  const found = validation?.(id);
  if (!found || !/^[A-Za-z0-9_-]{1,100}$/.test(id)) return undefined;
  for (const der of found.issuers) {
    const fingerprint = sha256Hex(Buffer.from(der));
    if (!store.hasCertificate(fingerprint)) store.putCertificate(fingerprint, der);
  }
  return found;
}

/** Writes `path` whole (through a temporary name) unless it is there already. */
async function writeOnce(path: string, content: string): Promise<void> {
  if (existsSync(path)) return;
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(tmp, content);
  await rename(tmp, path);
}

/** The public key of a PEM certificate or key file's text (for keys/ and bundles). */
export function publicKeyPemOf(pem: string): string {
  const key = pem.includes("CERTIFICATE") ? new X509Certificate(pem).publicKey : createPublicKey(pem);
  return key.export({ type: "spki", format: "pem" }) as string;
}

/** An evidence folder as read back (the CLI's verify, show, bundle and status). */
export interface EvidenceFolder {
  readonly folder: string;
  readonly chains: readonly ChainFolder[];
  /** The public key PEM of a checkpoint key id (keys/<id>.pem). */
  publicKeyPem(id: string): string | undefined;
  /** The QSealC PEM of a checkpoint key id, when it was the response-signing key. */
  keyCertificatePem(id: string): string | undefined;
  /** A signing certificate by its SHA-256 fingerprint (certificates/<fp>.pem). */
  certificatePem(fingerprint: string): string | undefined;
  /** A validation report by id (reports/<id>.json), as written. */
  reportJson(id: string): string | undefined;
}

/** Reads every chain file of the folder; throws when it is not an evidence folder. */
export function readEvidenceFolder(folder: string): EvidenceFolder {
  const root = join(folder, CHAINS);
  if (!existsSync(root)) throw new Error(`${folder} is not an evidence folder (it has no ${CHAINS}/)`);
  const chains: ChainFolder[] = [];
  for (const id of readdirSync(root).sort()) {
    const dir = join(root, id);
    const files: ChainFile[] = [];
    for (const name of readdirSync(dir).sort()) {
      const match = /^(\d{6})\.jsonl$/.exec(name);
      if (!match) continue;
      files.push({ name, number: Number(match[1]), text: readFileSync(join(dir, name), "utf8") });
    }
    chains.push({ id, files });
  }
  const read = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : undefined);
  const safe = (id: string) => /^[0-9a-f]{64}$/.test(id);
  return {
    folder,
    chains,
    publicKeyPem: (id) => (safe(id) ? read(join(folder, KEYS, `${id}.pem`)) : undefined),
    keyCertificatePem: (id) => (safe(id) ? read(join(folder, KEYS, `${id}.cert.pem`)) : undefined),
    certificatePem: (fp) => (safe(fp) ? read(join(folder, CERTIFICATES, `${fp}.pem`)) : undefined),
    reportJson: (id) =>
      /^[A-Za-z0-9_-]{1,100}$/.test(id) ? read(join(folder, REPORTS, `${id}.json`)) : undefined,
  };
}
