/**
 * The evidence store in PostgreSQL, for gateways at scale: the same chains, lines and checkpoints as
 * the folder (record.ts, checkpoint.ts), written by the same bounded queue and writer
 * (queued-store.ts), so the request path never waits for the database. One table holds every
 * instance's chains, a row per line, keyed by (instance, chain, seq):
 *
 *     evidence_lines          instance, chain, seq, segment, request_id, line (the canonical text, as a
 *                             file would hold it); segments play the files' part (a `file` line opens
 *                             each, a checkpoint closes it; retention deletes whole segments)
 *     evidence_certificates   each signing certificate (and CA of its path) once, by SHA-256
 *     evidence_reports        each validation report a record rests on, once
 *     evidence_keys           the public key of every checkpoint key used (and its QSealC)
 *     evidence_own_key        the database's own checkpoint key, made at first start when the gateway
 *                             has no response-signing QSealC (as checkpoint-key.pem in a folder)
 *
 * A batch is one INSERT: all its lines or none. A batch whose commit was lost with the connection is
 * sent again; rows already there with the same text count as written, other text is a conflict.
 * The only module of evidence/ that talks to PostgreSQL.
 */

import { createPrivateKey } from "node:crypto";
import { hostname } from "node:os";
import pg from "pg";
import { type CheckpointKey, checkpointKeyOf, newCheckpointKey } from "./checkpoint.js";
import {
  defaultInstanceId,
  type EvidenceFolder,
  pemOf,
  reportToKeep,
  type ValidationEvidence,
} from "./file-store.js";
import { type ChainedText, QueuedEvidenceStore, type QueueOptions } from "./queued-store.js";
import type { ChainFile, ChainFolder } from "./verify.js";

export interface PostgresStoreOptions extends QueueOptions {
  /** postgres://user:password@host:port/database */
  readonly url: string;
  /** Names this process's chain; default host, pid and start time. */
  readonly instanceId?: string;
  /** The gateway the chain is of (the table's first key column); default the host name. */
  readonly instance?: string;
  /** The response-signing QSealC's key (and certificate); otherwise the database's own key. */
  readonly key?: CheckpointKey;
  readonly validation?: (reportId: string) => ValidationEvidence | undefined;
  /** A query that has not answered by then fails (the store is then failing, and retried). */
  readonly queryTimeoutMs?: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS evidence_lines (
  instance text NOT NULL,
  chain text NOT NULL,
  seq bigint NOT NULL,
  segment integer NOT NULL,
  request_id text,
  line text NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (instance, chain, seq)
);
CREATE INDEX IF NOT EXISTS evidence_lines_request_id ON evidence_lines (request_id) WHERE request_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS evidence_certificates (fingerprint text PRIMARY KEY, pem text NOT NULL);
CREATE TABLE IF NOT EXISTS evidence_reports (id text PRIMARY KEY, report text NOT NULL);
CREATE TABLE IF NOT EXISTS evidence_keys (id text PRIMARY KEY, pem text NOT NULL, certificate_pem text);
CREATE TABLE IF NOT EXISTS evidence_own_key (one boolean PRIMARY KEY DEFAULT true CHECK (one), pem text NOT NULL);
`;

/** Several gateways starting at once make the tables once: CREATE … IF NOT EXISTS races otherwise. */
const SCHEMA_LOCK = 0x70736432;

/** What a failed query's error means, as a bounded label (the same as the folder's). */
export function postgresFailureReason(error: unknown): string {
  const code = (error as { code?: string }).code;
  if (code === "53100" || code === "53200") return "disk-full";
  if (code === "25006" || code === "42501") return "read-only";
  if (code === "23505") return "conflict";
  if (
    code === undefined ||
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    code === "57P01" ||
    code === "57P03" ||
    code?.startsWith("08")
  )
    return "gone";
  return "io";
}

/** The URL without its password, for logs and status. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}

function poolOf(url: string, queryTimeoutMs: number, max: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: queryTimeoutMs,
    query_timeout: queryTimeoutMs,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection the server dropped: the next query finds out, and the writer reports it.
  pool.on("error", () => undefined);
  return pool;
}

export class PostgresEvidenceStore extends QueuedEvidenceStore {
  private readonly instance: string;
  /** Certificates and reports on their way: close waits for them before it ends the pool. */
  private readonly pending = new Set<Promise<unknown>>();

  private constructor(
    private readonly options: PostgresStoreOptions,
    private readonly pool: pg.Pool,
    key: CheckpointKey,
  ) {
    const chainId = options.instanceId ?? defaultInstanceId((options.now ?? Date.now)());
    super(chainId, key, options);
    this.instance = options.instance ?? hostname();
  }

  /** Makes the tables (once), the key and the chain's first segment; throws (nothing started) when it cannot. */
  static async open(options: PostgresStoreOptions): Promise<PostgresEvidenceStore> {
    const pool = poolOf(options.url, options.queryTimeoutMs ?? 10_000, 2);
    try {
      await ensureSchema(pool);
      const key = options.key ?? (await databaseCheckpointKey(pool));
      const store = new PostgresEvidenceStore(options, pool, key);
      const taken = await pool.query(
        "SELECT 1 FROM evidence_lines WHERE instance = $1 AND chain = $2 LIMIT 1",
        [store.instance, store.chainId],
      );
      if ((taken.rowCount ?? 0) > 0)
        throw new Error(
          `the evidence table already holds chain ${store.chainId}: give each gateway process its own evidence.instanceId`,
        );
      await pool.query(
        "INSERT INTO evidence_keys (id, pem, certificate_pem) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
        [key.id, key.publicKey.export({ type: "spki", format: "pem" }), key.certificatePem ?? null],
      );
      await store.begin();
      return store;
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  protected where(): { folder: string; file: string } {
    return { folder: redactedUrl(this.options.url), file: `segment ${this.segment}` };
  }

  protected failureReason(error: unknown): string {
    return postgresFailureReason(error);
  }

  protected async writeLines(lines: readonly ChainedText[], segment: number): Promise<void> {
    const seqs = lines.map((l) => l.seq);
    const inserted = await this.pool.query<{ seq: string }>(
      `INSERT INTO evidence_lines (instance, chain, seq, segment, request_id, line)
       SELECT $1, $2, s, $3, r, l FROM unnest($4::bigint[], $5::text[], $6::text[]) AS t(s, r, l)
       ON CONFLICT (instance, chain, seq) DO NOTHING RETURNING seq`,
      [
        this.instance,
        this.chainId,
        segment,
        seqs,
        lines.map((l) => l.requestId ?? null),
        lines.map((l) => l.text),
      ],
    );
    if (inserted.rowCount === lines.length) return;
    // Rows already there: an earlier attempt committed before its connection was lost, or not ours.
    const done = new Set(inserted.rows.map((r) => Number(r.seq)));
    const rest = lines.filter((l) => !done.has(l.seq));
    const there = await this.pool.query<{ seq: string; line: string }>(
      "SELECT seq, line FROM evidence_lines WHERE instance = $1 AND chain = $2 AND seq = ANY($3::bigint[])",
      [this.instance, this.chainId, rest.map((l) => l.seq)],
    );
    const byseq = new Map(there.rows.map((r) => [Number(r.seq), r.line]));
    for (const l of rest)
      if (byseq.get(l.seq) !== l.text)
        throw Object.assign(
          new Error(`chain ${this.chainId} seq ${l.seq} is already in the table with other content`),
          { code: "23505" },
        );
  }

  /** A write beside the chain, waited for at close. */
  private aside<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    void work.catch(() => undefined).finally(() => this.pending.delete(work));
    return work;
  }

  protected async storeCertificate(fingerprint: string, der: Uint8Array): Promise<void> {
    await this.aside(
      this.pool.query(
        "INSERT INTO evidence_certificates (fingerprint, pem) VALUES ($1, $2) ON CONFLICT (fingerprint) DO NOTHING",
        [fingerprint, pemOf(der)],
      ),
    );
  }

  protected async storeReport(id: string): Promise<void> {
    const found = reportToKeep(this, this.options.validation, id);
    if (!found) return;
    await this.aside(
      this.pool.query(
        "INSERT INTO evidence_reports (id, report) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
        [id, `${JSON.stringify(found.report, null, 2)}\n`],
      ),
    );
  }

  /** Segments are rows: nothing to open or close; a commit is durable as the server's fsync makes it. */
  protected async openSegment(): Promise<void> {}
  protected async closeSegment(): Promise<void> {}
  protected async settle(): Promise<void> {}
  /** A failed INSERT wrote nothing. */
  protected async undoPartial(): Promise<void> {}

  /** Deletes whole segments whose newest line is older than `before`, never this chain's current one. */
  protected async sweep(before: number): Promise<void> {
    await this.pool.query(
      `DELETE FROM evidence_lines e USING (
         SELECT instance, chain, segment FROM evidence_lines GROUP BY instance, chain, segment
         HAVING max(written_at) < $1
       ) old
       WHERE e.instance = old.instance AND e.chain = old.chain AND e.segment = old.segment
         AND NOT (e.instance = $2 AND e.chain = $3 AND e.segment = $4)`,
      [new Date(before), this.instance, this.chainId, this.segment],
    );
  }

  protected async release(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    await this.pool.end();
  }
}

async function ensureSchema(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [SCHEMA_LOCK]);
    await client.query(SCHEMA);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** The database's own checkpoint key: made by the first gateway to start, shared by the rest. */
async function databaseCheckpointKey(pool: pg.Pool): Promise<CheckpointKey> {
  const made = newCheckpointKey();
  await pool.query("INSERT INTO evidence_own_key (pem) VALUES ($1) ON CONFLICT (one) DO NOTHING", [
    made.privateKey.export({ type: "pkcs8", format: "pem" }),
  ]);
  const row = await pool.query<{ pem: string }>("SELECT pem FROM evidence_own_key");
  return checkpointKeyOf(createPrivateKey(row.rows[0]!.pem));
}

/** Whether `location` names a database rather than a folder. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//.test(location);
}

/**
 * Every chain of the database, read back as the folder's are (the CLI's verify, show, bundle and
 * status): segments as files, and each line named by its row's key, so that `verify` names the row
 * altered, removed or reordered.
 */
export async function readPostgresEvidence(url: string): Promise<EvidenceFolder> {
  const pool = poolOf(url, 30_000, 1);
  try {
    const tables = await pool.query("SELECT to_regclass('evidence_lines') AS t");
    if (tables.rows[0]?.t === null)
      throw new Error(`${redactedUrl(url)} holds no evidence (it has no evidence_lines table)`);
    const rows = await pool.query<{
      instance: string;
      chain: string;
      seq: string;
      segment: number;
      line: string;
    }>("SELECT instance, chain, seq, segment, line FROM evidence_lines ORDER BY instance, chain, seq");
    const certificates = await keyed(pool, "SELECT fingerprint AS k, pem AS v FROM evidence_certificates");
    const reports = await keyed(pool, "SELECT id AS k, report AS v FROM evidence_reports");
    const keys = await keyed(pool, "SELECT id AS k, pem AS v FROM evidence_keys");
    const keyCertificates = await keyed(
      pool,
      "SELECT id AS k, certificate_pem AS v FROM evidence_keys WHERE certificate_pem IS NOT NULL",
    );
    return {
      folder: redactedUrl(url),
      chains: chainsOf(rows.rows),
      publicKeyPem: (id) => keys.get(id),
      keyCertificatePem: (id) => keyCertificates.get(id),
      certificatePem: (fp) => certificates.get(fp),
      reportJson: (id) => reports.get(id),
    };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

async function keyed(pool: pg.Pool, sql: string): Promise<Map<string, string>> {
  const result = await pool.query<{ k: string; v: string }>(sql);
  return new Map(result.rows.map((r) => [r.k, r.v]));
}

interface Row {
  readonly instance: string;
  readonly chain: string;
  readonly seq: string;
  readonly segment: number;
  readonly line: string;
}

/** Rows in key order, as chains of segment "files"; each line remembers its row's key. */
export function chainsOf(rows: readonly Row[]): ChainFolder[] {
  const chains: ChainFolder[] = [];
  let i = 0;
  while (i < rows.length) {
    const { instance, chain } = rows[i]!;
    const keys = new Map<ChainFile, string[]>();
    const files: ChainFile[] = [];
    while (i < rows.length && rows[i]!.instance === instance && rows[i]!.chain === chain) {
      const segment = rows[i]!.segment;
      const texts: string[] = [];
      const seqs: string[] = [];
      while (
        i < rows.length &&
        rows[i]!.instance === instance &&
        rows[i]!.chain === chain &&
        rows[i]!.segment === segment
      ) {
        // A line holds no newline; one edited in would split it, so it is kept visibly escaped.
        texts.push(rows[i]!.line.replaceAll("\n", "\\n"));
        seqs.push(rows[i]!.seq);
        i++;
      }
      const file: ChainFile = {
        name: `segment ${segment}`,
        number: segment,
        text: `${texts.join("\n")}\n`,
      };
      files.push(file);
      keys.set(file, seqs);
    }
    const table = `evidence_lines (instance '${instance}', chain '${chain}'`;
    chains.push({
      id: chain,
      files,
      locate: (file, line) => {
        const seq = line === undefined ? undefined : keys.get(file)?.[line - 1];
        return seq === undefined ? `${table}, ${file.name})` : `${table}, seq ${seq})`;
      },
    });
  }
  return chains;
}
