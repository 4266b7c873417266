/**
 * The evidence folder: the one module of evidence/ that touches the disk. Append-only files, one
 * chain per process, written by one async writer behind a bounded queue, so the request path never
 * waits for the disk:
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
import { type CheckpointKey, checkpointKeyOf, newCheckpointKey, signedCheckpoint } from "./checkpoint.js";
import {
  type CheckpointLine,
  EvidenceChain,
  type FileLine,
  type GapLine,
  type RecordLine,
  type RequestEvidence,
  type ResponseEvidence,
  type ResponseLine,
  sha256Hex,
} from "./record.js";
import type { ResponseEvidenceSink } from "./response.js";
import type { EvidenceSink } from "./step.js";
import type { ChainFile, ChainFolder } from "./verify.js";

export interface FileStoreOptions {
  readonly folder: string;
  /** Names this process's chain; default host, pid and start time. */
  readonly instanceId?: string;
  readonly fsync: "every" | "interval";
  readonly fsyncIntervalMs?: number;
  readonly rotateBytes: number;
  readonly rotateSeconds: number;
  /** Files whose last write is older are removed; 0 keeps them for ever. */
  readonly retainDays: number;
  readonly queueLength: number;
  readonly checkpointSeconds: number;
  /** The response-signing QSealC's key (and certificate); otherwise the folder's own key. */
  readonly key?: CheckpointKey;
  readonly now?: () => number;
  readonly events?: EvidenceEvents;
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

/** What metrics and logs hear of. */
export interface EvidenceEvents {
  /** A batch of `records` lines reached the file (synced, with `fsync: every`) in `seconds`. */
  written?(records: number, seconds: number): void;
  /**
   * A record not kept or a write that failed: `queue-full`, `store-failing`, `disk-full`,
   * `read-only`, `gone`, `io`, `certificate`, `report`.
   */
  failed?(reason: string, error?: Error): void;
  /** The store works again after failing. */
  recovered?(): void;
}

export interface EvidenceStoreStatus {
  readonly folder: string;
  readonly chain: string;
  readonly file: string;
  readonly queued: number;
  readonly queueLength: number;
  readonly written: number;
  readonly dropped: number;
  /** When the last checkpoint was written (epoch ms), if any. */
  readonly lastCheckpoint: number | undefined;
  readonly failing: { readonly reason: string; readonly message: string; readonly since: number } | undefined;
}

export const CHAINS = "chains";
export const CERTIFICATES = "certificates";
export const KEYS = "keys";
export const REPORTS = "reports";
export const OWN_KEY = "checkpoint-key.pem";
export const OWN_PUBLIC_KEY = "checkpoint-public.pem";

/** Lines per write: a long queue is written in a few large writes, not one huge one. */
const BATCH = 512;
const MAX_KNOWN_CERTIFICATES = 100_000;
const RETENTION_SWEEP_MS = 3600_000;

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

export class FileEvidenceStore implements EvidenceSink, ResponseEvidenceSink {
  readonly chainId: string;
  private readonly dir: string;
  private readonly key: CheckpointKey;
  private readonly now: () => number;
  private readonly events: EvidenceEvents;
  private chain: EvidenceChain;
  private queue: (RequestEvidence | ResponseEvidence)[] = [];
  private handle: FileHandle | undefined;
  private fileNumber = 0;
  private fileOpened = 0;
  /** Bytes of the current file known to be written whole. */
  private size = 0;
  private dirty = false;
  private lastSync = 0;
  private lastCheckpointAt: number | undefined;
  private checkpointDue = false;
  private rotateDue = false;
  private writing: Promise<void> | undefined;
  private scheduled = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private lastSweep = 0;
  private written = 0;
  /** Records not kept since the last gap line (and in all). */
  private droppedSince = 0;
  private droppedReason = "";
  private dropped = 0;
  private failing: EvidenceStoreStatus["failing"];
  private readonly certificates = new Set<string>();
  private readonly reports = new Set<string>();

  private constructor(
    private readonly options: FileStoreOptions,
    key: CheckpointKey,
  ) {
    this.now = options.now ?? Date.now;
    this.chainId = options.instanceId ?? defaultInstanceId(this.now());
    this.dir = join(options.folder, CHAINS, this.chainId);
    this.key = key;
    this.events = options.events ?? {};
    this.chain = new EvidenceChain(this.chainId);
  }

  /** Makes the folders, the key and the chain's first file; throws (nothing started) when it cannot. */
  static async open(options: FileStoreOptions): Promise<FileEvidenceStore> {
    const key = options.key ?? folderCheckpointKey(options.folder);
    const store = new FileEvidenceStore(options, key);
    await mkdir(store.dir, { recursive: true });
    await mkdir(join(options.folder, CERTIFICATES), { recursive: true });
    await mkdir(join(options.folder, REPORTS), { recursive: true });
    await store.writePublicKey();
    await store.openNext();
    await store.flush();
    store.timer = setInterval(() => store.tick(), 1000);
    store.timer.unref();
    void store.sweep();
    return store;
  }

  // EvidenceSink: called on the request path; never waits.
  offer(evidence: RequestEvidence, mustKeep: boolean): boolean {
    const full = this.queue.length >= this.options.queueLength;
    if (this.closed || full || (mustKeep && this.failing)) {
      const reason = full ? "queue-full" : "store-failing";
      this.events.failed?.(reason);
      if (!mustKeep) {
        this.droppedSince += 1;
        this.dropped += 1;
        this.droppedReason = reason;
      }
      return false;
    }
    this.queue.push(evidence);
    const report = evidence.validationReport;
    if (report !== undefined && this.options.validation && !this.reports.has(report)) this.putReport(report);
    this.schedule();
    return true;
  }

  /** reports/<id>.json and the path's CAs, once (the report is the gateway's, from memory). */
  private putReport(id: string): void {
    if (this.reports.size >= MAX_KNOWN_CERTIFICATES) this.reports.clear();
    this.reports.add(id);
    const found = this.options.validation?.(id);
    if (!found || !/^[A-Za-z0-9_-]{1,100}$/.test(id)) return;
    for (const der of found.issuers) {
      const fingerprint = sha256Hex(Buffer.from(der));
      if (!this.certificates.has(fingerprint)) this.putCertificate(fingerprint, der);
    }
    void writeOnce(
      join(this.options.folder, REPORTS, `${id}.json`),
      `${JSON.stringify(found.report, null, 2)}\n`,
    ).catch((error: Error) => {
      this.reports.delete(id);
      this.events.failed?.("report", error);
    });
  }

  /**
   * A response's record is never grounds to withhold the bank's answer (the call has happened):
   * one that cannot be queued is counted, and the chain gets a gap line.
   */
  offerResponse(evidence: ResponseEvidence): boolean {
    if (this.closed || this.failing || this.queue.length >= this.options.queueLength) {
      const reason = this.queue.length >= this.options.queueLength ? "queue-full" : "store-failing";
      this.events.failed?.(reason);
      this.droppedSince += 1;
      this.dropped += 1;
      this.droppedReason = reason;
      return false;
    }
    this.queue.push(evidence);
    this.schedule();
    return true;
  }

  accepting(): boolean {
    return !this.closed && !this.failing && this.queue.length < this.options.queueLength;
  }

  hasCertificate(fingerprint: string): boolean {
    return this.certificates.has(fingerprint);
  }

  putCertificate(fingerprint: string, der: Uint8Array): void {
    if (this.certificates.size >= MAX_KNOWN_CERTIFICATES) this.certificates.clear();
    this.certificates.add(fingerprint);
    const path = join(this.options.folder, CERTIFICATES, `${fingerprint}.pem`);
    void writeOnce(path, pemOf(der)).catch((error: Error) => {
      this.certificates.delete(fingerprint);
      this.events.failed?.("certificate", error);
    });
  }

  status(): EvidenceStoreStatus {
    return {
      folder: this.options.folder,
      chain: this.chainId,
      file: join(this.dir, chainFileName(this.fileNumber)),
      queued: this.queue.length,
      queueLength: this.options.queueLength,
      written: this.written,
      dropped: this.dropped,
      lastCheckpoint: this.lastCheckpointAt,
      failing: this.failing,
    };
  }

  /** Writes what is queued, a last checkpoint, syncs and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.writing;
    this.checkpointDue = true;
    await this.flush();
    try {
      await this.handle?.datasync();
      await this.handle?.close();
    } catch (error) {
      this.events.failed?.(failureReason(error), error as Error);
    }
    this.handle = undefined;
  }

  private tick(): void {
    const now = this.now();
    if (
      this.lastCheckpointAt === undefined ||
      now - this.lastCheckpointAt >= this.options.checkpointSeconds * 1000
    )
      this.checkpointDue = true;
    if (now - this.fileOpened >= this.options.rotateSeconds * 1000) this.rotateDue = true;
    // A failing store is tried again with a checkpoint: it works again once that is written.
    if (this.failing) this.checkpointDue = true;
    if (this.options.retainDays > 0 && now - this.lastSweep >= RETENTION_SWEEP_MS) void this.sweep();
    if (
      this.checkpointDue ||
      this.rotateDue ||
      this.failing ||
      this.droppedSince > 0 ||
      (this.dirty && now - this.lastSync >= (this.options.fsyncIntervalMs ?? 1000))
    )
      this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /** The one writer: queued records, gap, checkpoint and rotation lines, in chain order. */
  private flush(): Promise<void> {
    if (this.writing) return this.writing;
    this.writing = this.writeAll().finally(() => {
      this.writing = undefined;
      // Offered while the last batch was being written.
      if (this.queue.length > 0 && !this.failing && !this.closed) this.schedule();
    });
    return this.writing;
  }

  private async writeAll(): Promise<void> {
    try {
      while (this.queue.length > 0 || this.droppedSince > 0) {
        const started = performance.now();
        const batch = this.queue.slice(0, BATCH);
        const saved = this.chain.state;
        const lines: string[] = [];
        const dropped = this.droppedSince;
        if (dropped > 0) {
          lines.push(
            this.chain.append<GapLine>({
              type: "gap",
              time: this.iso(),
              dropped,
              reason: this.droppedReason,
            }),
          );
        }
        for (const evidence of batch)
          lines.push(
            "type" in evidence
              ? this.chain.append<ResponseLine>(evidence)
              : this.chain.append<RecordLine>({ type: "request", ...evidence }),
          );
        try {
          await this.append(lines);
        } catch (error) {
          this.chain = new EvidenceChain(this.chainId, saved);
          throw error;
        }
        this.queue.splice(0, batch.length);
        this.droppedSince -= dropped;
        this.written += batch.length;
        this.events.written?.(batch.length, (performance.now() - started) / 1000);
        if (this.size >= this.options.rotateBytes) this.rotateDue = true;
      }
      if (this.rotateDue) {
        await this.rotate();
      } else if (this.checkpointDue) {
        await this.writeCheckpoint();
      }
      if (this.dirty && (this.closed || this.now() - this.lastSync >= (this.options.fsyncIntervalMs ?? 1000)))
        await this.sync();
      if (this.failing) {
        this.failing = undefined;
        this.events.recovered?.();
      }
    } catch (error) {
      const reason = failureReason(error);
      if (!this.failing || this.failing.reason !== reason)
        this.failing = { reason, message: (error as Error).message, since: this.now() };
      this.events.failed?.(reason, error as Error);
      // A line cut short by the failure is taken back; the next attempt writes it whole.
      await this.handle?.truncate(this.size).catch(() => undefined);
    }
  }

  private async append(lines: readonly string[]): Promise<void> {
    if (!this.handle) await this.openNext();
    const text = Buffer.from(`${lines.join("\n")}\n`, "utf8");
    let offset = 0;
    while (offset < text.length) {
      const { bytesWritten } = await this.handle!.write(
        text,
        offset,
        text.length - offset,
        this.size + offset,
      );
      offset += bytesWritten;
    }
    this.size += text.length;
    this.dirty = true;
    if (this.options.fsync === "every") await this.sync();
  }

  private async sync(): Promise<void> {
    await this.handle?.datasync();
    this.dirty = false;
    this.lastSync = this.now();
  }

  private async writeCheckpoint(): Promise<void> {
    const saved = this.chain.state;
    const line = this.chain.append<CheckpointLine>(signedCheckpoint(this.chain, this.key, this.iso()));
    try {
      await this.append([line]);
    } catch (error) {
      this.chain = new EvidenceChain(this.chainId, saved);
      throw error;
    }
    this.checkpointDue = false;
    this.lastCheckpointAt = this.now();
  }

  /** The current file ends with a checkpoint, synced; the next one starts. */
  private async rotate(): Promise<void> {
    await this.writeCheckpoint();
    await this.sync();
    await this.handle?.close();
    this.handle = undefined;
    await this.openNext();
  }

  private async openNext(): Promise<void> {
    const next = this.fileNumber + 1;
    await mkdir(this.dir, { recursive: true });
    const handle = await open(join(this.dir, chainFileName(next)), "wx");
    this.handle = handle;
    this.fileNumber = next;
    this.fileOpened = this.now();
    this.size = 0;
    this.rotateDue = false;
    const { count } = this.chain.state;
    const saved = this.chain.state;
    const line = this.chain.append<FileLine>({
      type: "file",
      time: this.iso(),
      file: next,
      count,
      retainDays: this.options.retainDays,
    });
    try {
      await this.append([line]);
    } catch (error) {
      this.chain = new EvidenceChain(this.chainId, saved);
      throw error;
    }
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

  /** Removes chain files last written more than retainDays ago (never this chain's current file). */
  private async sweep(): Promise<void> {
    this.lastSweep = this.now();
    if (this.options.retainDays <= 0) return;
    const before = this.now() - this.options.retainDays * 86_400_000;
    const root = join(this.options.folder, CHAINS);
    try {
      for (const chain of await readdir(root)) {
        const dir = join(root, chain);
        for (const name of (await readdir(dir)).sort()) {
          const path = join(dir, name);
          if (chain === this.chainId && name === chainFileName(this.fileNumber)) continue;
          const info = await stat(path);
          if (info.mtimeMs < before) await unlink(path);
        }
      }
    } catch {
      // Another worker swept the same file, or the folder is failing: the writer reports that.
    }
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }
}

/** PEM of a certificate's DER. */
export function pemOf(der: Uint8Array): string {
  return new X509Certificate(der).toString();
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
