/**
 * What every evidence store shares: the bounded queue the request path offers records to (it never
 * waits), and the one async writer that turns them into chain lines (record.ts), with gap lines for
 * records not kept, a signed checkpoint every `checkpointSeconds`, and segments rotated by size and
 * age, each opened by a `file` line and closed by a checkpoint. Where the lines go is the subclass's:
 * append-only files (file-store.ts) or a PostgreSQL table (postgres-store.ts).
 *
 * A batch is acknowledged to the chain only once the subclass says it was written; on a failure the
 * chain is set back, the batch stays queued, and the store is `failing` until a write works again.
 */

import type { CheckpointKey } from "./checkpoint.js";
import { signedCheckpoint } from "./checkpoint.js";
import {
  type CheckpointLine,
  EvidenceChain,
  type EvidenceLine,
  type FileLine,
  type GapLine,
  type RequestCapture,
  type ResponseEvidence,
  type ResponseLine,
  type Unchained,
} from "./record.js";
import type { ResponseEvidenceSink } from "./response.js";
import type { EvidenceSink } from "./step.js";

/** What metrics and logs hear of. */
export interface EvidenceEvents {
  /** A batch of `records` lines reached the store (synced, with `fsync: every`) in `seconds`. */
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
  /** The folder, or the database (its URL without the password). */
  readonly folder: string;
  readonly chain: string;
  /** The current file, or segment. */
  readonly file: string;
  readonly queued: number;
  readonly queueLength: number;
  readonly written: number;
  readonly dropped: number;
  /** When the last checkpoint was written (epoch ms), if any. */
  readonly lastCheckpoint: number | undefined;
  readonly failing: { readonly reason: string; readonly message: string; readonly since: number } | undefined;
}

/** The options every store takes. */
export interface QueueOptions {
  readonly rotateBytes: number;
  readonly rotateSeconds: number;
  /** Segments whose last write is older are removed; 0 keeps them for ever. */
  readonly retainDays: number;
  readonly queueLength: number;
  readonly checkpointSeconds: number;
  readonly now?: () => number;
  readonly events?: EvidenceEvents;
}

/** One line as the writer hands it to the store: its place in the chain and its text (no newline). */
export interface ChainedText {
  readonly seq: number;
  readonly text: string;
  readonly requestId?: string;
}

/** Lines per write: a long queue is written in a few large writes, not one huge one. */
const BATCH = 512;
/**
 * How long offered records wait for others before they are written together. Records are
 * acknowledged when queued, not when written, so this delays no answer; what it buys is fewer
 * writes: each asynchronous file write costs 110–170 µs of CPU on the bench machine (a thread-pool
 * round trip), and at 5 ms they were about 7 % of the gateway's CPU under load (issue 40).
 */
const GATHER_MS = 50;
const MAX_KNOWN = 100_000;
const RETENTION_SWEEP_MS = 3600_000;

export abstract class QueuedEvidenceStore implements EvidenceSink, ResponseEvidenceSink {
  protected readonly now: () => number;
  protected readonly events: EvidenceEvents;
  protected chain: EvidenceChain;
  /** The current segment (file) number, from 1. */
  protected segment = 0;
  private queue: (RequestCapture | ResponseEvidence)[] = [];
  /** A segment is open for lines (not between a rotation's close and the next open). */
  private segmentOpen = false;
  private segmentOpened = 0;
  private segmentBytes = 0;
  private lastCheckpointAt: number | undefined;
  private checkpointDue = false;
  private rotateDue = false;
  private writing: Promise<void> | undefined;
  private scheduled = false;
  protected closed = false;
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

  protected constructor(
    readonly chainId: string,
    protected readonly key: CheckpointKey,
    private readonly queueOptions: QueueOptions,
  ) {
    this.now = queueOptions.now ?? Date.now;
    this.events = queueOptions.events ?? {};
    this.chain = new EvidenceChain(chainId);
  }

  // ---- what a store does with the lines ----

  /** Writes the lines of the current segment, in order; resolves once they are kept (throws otherwise). */
  protected abstract writeLines(lines: readonly ChainedText[], segment: number): Promise<void>;
  /** Makes segment `n` ready for its first line (a new file). */
  protected abstract openSegment(n: number): Promise<void>;
  /** The current segment is done (synced and closed). */
  protected abstract closeSegment(): Promise<void>;
  /** After each round of writes (files: the fsync interval); `closing` at close. */
  protected abstract settle(closing: boolean): Promise<void>;
  /** A failed write may have left part of a batch: take it back. */
  protected abstract undoPartial(): Promise<void>;
  /** A bounded label for a failed write's error. */
  protected abstract failureReason(error: unknown): string;
  protected abstract storeCertificate(fingerprint: string, der: Uint8Array): Promise<void>;
  /** The validation report `id` (and the CAs of its path) once. */
  protected abstract storeReport(id: string): Promise<void>;
  /** Removes segments last written before `before` (epoch ms), never the current one. */
  protected abstract sweep(before: number): Promise<void>;
  /** Releases what the store holds (file handle, connections), after the last checkpoint. */
  protected abstract release(): Promise<void>;
  /** Where the store keeps its lines and which segment is current (status). */
  protected abstract where(): { folder: string; file: string };

  /** The first segment written, then the timer: call once the subclass is ready. */
  protected async begin(): Promise<void> {
    await this.openNext();
    await this.flush();
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
    void this.retain();
  }

  // EvidenceSink: called on the request path; never waits.
  offer(evidence: RequestCapture, mustKeep: boolean): boolean {
    const full = this.queue.length >= this.queueOptions.queueLength;
    if (this.closed || full || (mustKeep && this.failing)) {
      const reason = full ? "queue-full" : "store-failing";
      this.events.failed?.(reason);
      if (!mustKeep) this.drop(reason);
      return false;
    }
    this.queue.push(evidence);
    this.keepReport(evidence.validationReport);
    this.schedule();
    return true;
  }

  /** The validation report a record names, written once (with its path's CAs) for the bundle. */
  private keepReport(report: string | undefined): void {
    if (report === undefined || this.reports.has(report)) return;
    if (this.reports.size >= MAX_KNOWN) this.reports.clear();
    this.reports.add(report);
    void this.storeReport(report).catch((error: Error) => {
      this.reports.delete(report);
      this.events.failed?.("report", error);
    });
  }

  /**
   * A response's record is never grounds to withhold the bank's answer (the call has happened):
   * one that cannot be queued is counted, and the chain gets a gap line.
   */
  offerResponse(evidence: ResponseEvidence): boolean {
    if (this.closed || this.failing || this.queue.length >= this.queueOptions.queueLength) {
      const reason = this.queue.length >= this.queueOptions.queueLength ? "queue-full" : "store-failing";
      this.events.failed?.(reason);
      this.drop(reason);
      return false;
    }
    this.queue.push(evidence);
    this.keepReport(evidence.validationReport);
    this.schedule();
    return true;
  }

  private drop(reason: string): void {
    this.droppedSince += 1;
    this.dropped += 1;
    this.droppedReason = reason;
  }

  accepting(): boolean {
    return !this.closed && !this.failing && this.queue.length < this.queueOptions.queueLength;
  }

  hasCertificate(fingerprint: string): boolean {
    return this.certificates.has(fingerprint);
  }

  putCertificate(fingerprint: string, der: Uint8Array): void {
    if (this.certificates.size >= MAX_KNOWN) this.certificates.clear();
    this.certificates.add(fingerprint);
    void this.storeCertificate(fingerprint, der).catch((error: Error) => {
      this.certificates.delete(fingerprint);
      this.events.failed?.("certificate", error);
    });
  }

  status(): EvidenceStoreStatus {
    return {
      ...this.where(),
      chain: this.chainId,
      queued: this.queue.length,
      queueLength: this.queueOptions.queueLength,
      written: this.written,
      dropped: this.dropped,
      lastCheckpoint: this.lastCheckpointAt,
      failing: this.failing,
    };
  }

  /** Writes what is queued and a last checkpoint, then releases the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.writing;
    this.checkpointDue = true;
    await this.flush();
    try {
      await this.release();
    } catch (error) {
      this.events.failed?.(this.failureReason(error), error as Error);
    }
  }

  /** Whether a flush is due for time's sake (files: an fsync interval passed). */
  protected settleDue(_now: number): boolean {
    return false;
  }

  private tick(): void {
    const now = this.now();
    if (
      this.lastCheckpointAt === undefined ||
      now - this.lastCheckpointAt >= this.queueOptions.checkpointSeconds * 1000
    )
      this.checkpointDue = true;
    if (now - this.segmentOpened >= this.queueOptions.rotateSeconds * 1000) this.rotateDue = true;
    // A failing store is tried again with a checkpoint: it works again once that is written.
    if (this.failing) this.checkpointDue = true;
    if (this.queueOptions.retainDays > 0 && now - this.lastSweep >= RETENTION_SWEEP_MS) void this.retain();
    if (this.checkpointDue || this.rotateDue || this.failing || this.droppedSince > 0 || this.settleDue(now))
      this.schedule();
  }

  private async retain(): Promise<void> {
    this.lastSweep = this.now();
    if (this.queueOptions.retainDays <= 0) return;
    try {
      await this.sweep(this.now() - this.queueOptions.retainDays * 86_400_000);
    } catch {
      // Another worker swept the same segment, or the store is failing: the writer reports that.
    }
  }

  private schedule(): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    const flush = () => {
      this.scheduled = false;
      void this.flush();
    };
    // Records gather so that one write (and, with fsync: every, one sync) takes many (GATHER_MS).
    // A full batch, a failing store and closing go at once.
    if (this.queue.length >= BATCH || this.failing || this.closed) setImmediate(flush);
    else setTimeout(flush, GATHER_MS).unref();
  }

  /** The one writer: queued records, gap, checkpoint and rotation lines, in chain order. */
  protected flush(): Promise<void> {
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
      // A rotation whose next segment could not be opened: open it before any line takes a seq, so
      // that its `file` line comes first.
      if (!this.segmentOpen) await this.openNext();
      while (this.queue.length > 0 || this.droppedSince > 0) {
        const started = performance.now();
        const batch = this.queue.slice(0, BATCH);
        const saved = this.chain.state;
        const lines: ChainedText[] = [];
        const dropped = this.droppedSince;
        if (dropped > 0) {
          lines.push(
            this.line<GapLine>({ type: "gap", time: this.iso(), dropped, reason: this.droppedReason }),
          );
        }
        for (const evidence of batch) lines.push(this.recordLine(evidence));
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
        if (this.segmentBytes >= this.queueOptions.rotateBytes) this.rotateDue = true;
        // What arrived during this write gathers for the next (flush's `finally` schedules it):
        // going on at once wrote a batch of one or two records per write under load, a thread-pool
        // round trip each (issue 40). A full batch, and closing, go on at once.
        if (this.queue.length < BATCH && !this.closed) break;
      }
      // Closing ends the chain with its checkpoint: a rotation then would leave a next segment
      // holding only its `file` line, after the last checkpoint (the next start is a chain of its own).
      if (this.rotateDue && !this.closed) {
        await this.rotate();
      } else if (this.checkpointDue) {
        await this.writeCheckpoint();
      }
      await this.settle(this.closed);
      if (this.failing) {
        this.failing = undefined;
        this.events.recovered?.();
      }
    } catch (error) {
      const reason = this.failureReason(error);
      if (!this.failing || this.failing.reason !== reason)
        this.failing = { reason, message: (error as Error).message, since: this.now() };
      this.events.failed?.(reason, error as Error);
      // A line cut short by the failure is taken back; the next attempt writes it whole.
      await this.undoPartial().catch(() => undefined);
    }
  }

  private recordLine(evidence: RequestCapture | ResponseEvidence): ChainedText {
    const seq = this.chain.nextSeq;
    const text =
      "type" in evidence ? this.chain.append<ResponseLine>(evidence) : this.chain.appendRequest(evidence);
    return evidence.requestId !== undefined ? { seq, text, requestId: evidence.requestId } : { seq, text };
  }

  private line<L extends EvidenceLine>(content: Unchained<L>, requestId?: string): ChainedText {
    const seq = this.chain.nextSeq;
    const text = this.chain.append<L>(content);
    return requestId !== undefined ? { seq, text, requestId } : { seq, text };
  }

  private async append(lines: readonly ChainedText[]): Promise<void> {
    await this.writeLines(lines, this.segment);
    for (const l of lines) this.segmentBytes += Buffer.byteLength(l.text) + 1;
  }

  /** One line written on its own (file, checkpoint): the chain set back when it fails. */
  private async appendOne<L extends EvidenceLine>(content: Unchained<L>): Promise<void> {
    const saved = this.chain.state;
    const line = this.line<L>(content);
    try {
      await this.append([line]);
    } catch (error) {
      this.chain = new EvidenceChain(this.chainId, saved);
      throw error;
    }
  }

  private async writeCheckpoint(): Promise<void> {
    await this.appendOne<CheckpointLine>(signedCheckpoint(this.chain, this.key, this.iso()));
    this.checkpointDue = false;
    this.lastCheckpointAt = this.now();
  }

  /** The current segment ends with a checkpoint, synced; the next one starts. */
  private async rotate(): Promise<void> {
    await this.writeCheckpoint();
    await this.closeSegment();
    this.segmentOpen = false;
    await this.openNext();
  }

  private async openNext(): Promise<void> {
    const next = this.segment + 1;
    await this.openSegment(next);
    this.segmentOpen = true;
    this.segment = next;
    this.segmentOpened = this.now();
    this.segmentBytes = 0;
    this.rotateDue = false;
    await this.appendOne<FileLine>({
      type: "file",
      time: this.iso(),
      file: next,
      count: this.chain.state.count,
      retainDays: this.queueOptions.retainDays,
    });
  }

  protected iso(): string {
    return new Date(this.now()).toISOString();
  }
}
