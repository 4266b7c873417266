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

import { createPrivateKey, type KeyObject } from "node:crypto";
import { hostname } from "node:os";
import pg from "pg";
import {
  type CheckpointKey,
  checkpointKeyOf,
  checkpointSignatureHolds,
  newCheckpointKey,
} from "./checkpoint.js";
import {
  defaultInstanceId,
  type EvidenceFolder,
  pemOf,
  reportToKeep,
  type ValidationEvidence,
} from "./file-store.js";
import { type ChainedText, QueuedEvidenceStore, type QueueOptions } from "./queued-store.js";
import type { EvidenceLine } from "./record.js";
import {
  type ChainFile,
  type ChainFolder,
  type ChainReport,
  ChainVerifier,
  checkpointKeys,
  type Problem,
} from "./verify.js";

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

/**
 * What marks a gap line in `evidence_lines.line` (canonical JSON escapes any quote inside a value,
 * so no other line has this text). One spelling for the partial index and the query that sums the
 * gaps, so that the planner can use the one for the other.
 */
const IS_GAP_LINE = `LIKE '%"type":"gap"%'`;

/** The records chain `alias` (a row with instance and chain) did not keep: its gap lines' sum. */
export function droppedOf(alias: string): string {
  // Read from the text, not cast to jsonb: an edited row must not fail status.
  return `SELECT coalesce(sum(substring(e.line FROM '"dropped":([0-9]{1,15})[,}]')::bigint), 0) FROM evidence_lines e
    WHERE e.instance = ${alias}.instance AND e.chain = ${alias}.chain AND e.line ${IS_GAP_LINE}`;
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
-- The few gap lines of each chain, for status: without it, summing them reads every row of the chain.
CREATE INDEX IF NOT EXISTS evidence_lines_gaps ON evidence_lines (instance, chain) WHERE line ${IS_GAP_LINE};
-- Retention's hourly sweep: each segment and its newest line without reading the rows between.
CREATE INDEX IF NOT EXISTS evidence_lines_segments ON evidence_lines (instance, chain, segment, written_at);
CREATE TABLE IF NOT EXISTS evidence_certificates (fingerprint text PRIMARY KEY, pem text NOT NULL);
CREATE TABLE IF NOT EXISTS evidence_reports (id text PRIMARY KEY, report text NOT NULL);
CREATE TABLE IF NOT EXISTS evidence_keys (id text PRIMARY KEY, pem text NOT NULL, certificate_pem text);
CREATE TABLE IF NOT EXISTS evidence_own_key (one boolean PRIMARY KEY DEFAULT true CHECK (one), pem text NOT NULL);
`;

/**
 * Retention's sweep ($1 the cutoff; $2, $3, $4 the sweeping chain's instance, chain and current
 * segment, never deleted). The segments are walked one index probe each (a loose index scan over
 * evidence_lines_segments), and each one's newest line is the last entry of its range: the sweep
 * reads a few rows per segment and the rows it deletes, not the table (a GROUP BY over every row,
 * once an hour, grew with the years a bank keeps; bench/evidence-sweep.ts).
 */
export const RETENTION_SWEEP = `WITH RECURSIVE segments AS (
  (SELECT instance, chain, segment FROM evidence_lines ORDER BY instance, chain, segment LIMIT 1)
  UNION ALL
  SELECT next.instance, next.chain, next.segment FROM segments s CROSS JOIN LATERAL (
    SELECT e.instance, e.chain, e.segment FROM evidence_lines e
    WHERE (e.instance, e.chain, e.segment) > (s.instance, s.chain, s.segment)
    ORDER BY e.instance, e.chain, e.segment LIMIT 1
  ) next
), old AS (
  SELECT s.instance, s.chain, s.segment FROM segments s
  WHERE NOT (s.instance = $2 AND s.chain = $3 AND s.segment = $4)
    AND (SELECT max(e.written_at) FROM evidence_lines e
         WHERE e.instance = s.instance AND e.chain = s.chain AND e.segment = s.segment) < $1
)
DELETE FROM evidence_lines e USING old
WHERE e.instance = old.instance AND e.chain = old.chain AND e.segment = old.segment`;

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

function poolOf(url: string, queryTimeoutMs: number, max: number, sessionOptions?: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    // Settings for each session (libpq's `options`); an `options` in the URL takes their place.
    ...(sessionOptions !== undefined ? { options: sessionOptions } : {}),
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
    await this.pool.query(RETENTION_SWEEP, [new Date(before), this.instance, this.chainId, this.segment]);
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

/*
 * A line's kind is matched as text (`"type":"checkpoint"`), not cast to jsonb: a row edited into
 * something that is not JSON must not fail the query (verify names it). Canonical lines are flat
 * but for a response's signature headers, whose keys are header names, so the text is the kind.
 */

/** Rows read per query by `verify`: a bank's table grows to millions of rows, read a page at a time. */
const PAGE_ROWS = 10_000;

/** What a read of the database holds besides its chains: the lookups the bundle and verify need. */
export type EvidenceSources = Omit<EvidenceFolder, "chains">;

/**
 * A pool for `evidence status`, `verify`, `show` and `bundle`: one connection, its JIT off. Their
 * queries are index walks of a few rows, but a long chain's row estimates put the head query above
 * jit_above_cost, and compiling it took 0.57 s of a 0.57 s status at 300,000 rows (its execution:
 * 1 ms; bench/RESULTS.md).
 */
export async function openEvidenceReadPool(url: string): Promise<pg.Pool> {
  const pool = poolOf(url, 30_000, 1, "-c jit=off");
  try {
    const tables = await pool.query("SELECT to_regclass('evidence_lines') AS t");
    if (tables.rows[0]?.t === null)
      throw new Error(`${redactedUrl(url)} holds no evidence (it has no evidence_lines table)`);
    return pool;
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}

/** The lookups, each table read only for the keys asked (none asked: the whole table, for `verify`'s keys). */
async function sourcesOf(
  pool: pg.Pool,
  url: string,
  wanted:
    | { certificates: readonly string[]; reports: readonly string[]; keys: readonly string[] }
    | undefined,
): Promise<EvidenceSources> {
  const read = async (table: string, key: string, value: string, ids: readonly string[] | undefined) => {
    const result = await pool.query<{ k: string; v: string | null }>(
      `SELECT ${key} AS k, ${value} AS v FROM ${table}${ids === undefined ? "" : ` WHERE ${key} = ANY($1::text[])`}`,
      ids === undefined ? [] : [ids],
    );
    return new Map(result.rows.flatMap((r) => (r.v === null ? [] : [[r.k, r.v] as const])));
  };
  const reports = await read("evidence_reports", "id", "report", wanted?.reports);
  // A report's path names the CAs the bundle writes beside the certificate.
  const cas = [...reports.values()].flatMap((text) => {
    try {
      const path = (JSON.parse(text) as { path?: { sha256?: unknown }[] }).path ?? [];
      return path.flatMap((p) => (typeof p.sha256 === "string" ? [p.sha256] : []));
    } catch {
      return [];
    }
  });
  const certificates = await read(
    "evidence_certificates",
    "fingerprint",
    "pem",
    wanted && [...wanted.certificates, ...cas],
  );
  const keys = await read("evidence_keys", "id", "pem", wanted?.keys);
  const keyCertificates = await read("evidence_keys", "id", "certificate_pem", wanted?.keys);
  return {
    folder: redactedUrl(url),
    publicKeyPem: (id) => keys.get(id),
    keyCertificatePem: (id) => keyCertificates.get(id),
    certificatePem: (fp) => certificates.get(fp),
    reportJson: (id) => reports.get(id),
  };
}

/** Every row of the table in key order (instance, chain, seq), read a page at a time. */
async function* rowsInKeyOrder(pool: pg.Pool, pageRows: number): AsyncGenerator<Row> {
  let after: Row | undefined;
  for (;;) {
    const page = await pool.query<Row>(
      after === undefined
        ? "SELECT instance, chain, seq, segment, line FROM evidence_lines ORDER BY instance, chain, seq LIMIT $1"
        : `SELECT instance, chain, seq, segment, line FROM evidence_lines
           WHERE (instance, chain, seq) > ($2, $3, $4::bigint) ORDER BY instance, chain, seq LIMIT $1`,
      after === undefined ? [pageRows] : [pageRows, after.instance, after.chain, after.seq],
    );
    yield* page.rows;
    if (page.rows.length < pageRows) return;
    after = page.rows.at(-1);
  }
}

/**
 * `verify` of the database: the rows read in pages by their key and checked as they arrive, by the
 * same ChainVerifier as a folder's files, so that what is held is a page and the line before, never a
 * chain (a bank's chain grows to millions of rows). Segments are files; each line is named by its
 * row's key, so that verify names the row altered, removed or reordered.
 */
export async function verifyPostgresEvidence(
  url: string,
  publicKey: (pem: string) => KeyObject | undefined,
  pageRows: number = PAGE_ROWS,
  now: number = Date.now(),
): Promise<{ readonly folder: string; readonly reports: ChainReport[] }> {
  const pool = await openEvidenceReadPool(url);
  try {
    const sources = await sourcesOf(pool, url, undefined);
    const keyOf = checkpointKeys((id) => sources.publicKeyPem(id), publicKey);
    const reports: ChainReport[] = [];
    let current: { instance: string; chain: string; table: string; segment: number } | undefined;
    let verifier: ChainVerifier | undefined;
    for await (const row of rowsInKeyOrder(pool, pageRows)) {
      if (!current || current.instance !== row.instance || current.chain !== row.chain) {
        if (verifier) reports.push(verifier.end());
        verifier = new ChainVerifier(row.chain, keyOf, now, "segments");
        current = {
          instance: row.instance,
          chain: row.chain,
          table: `evidence_lines (instance '${row.instance}', chain '${row.chain}'`,
          segment: Number.NaN,
        };
      }
      if (row.segment !== current.segment) {
        current.segment = row.segment;
        verifier!.file(row.segment, `${current.table}, segment ${row.segment})`);
      }
      // A line holds no newline; one edited in is kept visibly escaped, as chainsOf does.
      verifier!.line(row.line.replaceAll("\n", "\\n"), `${current.table}, seq ${row.seq})`);
    }
    if (verifier) reports.push(verifier.end());
    return { folder: sources.folder, reports };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/**
 * Every chain of the database, whole (tests, and small databases): the rows read in pages by their
 * key; segments are read as files, and each line is named by its row's key. `verify` streams
 * instead (verifyPostgresEvidence).
 */
export async function readPostgresEvidence(
  url: string,
  pageRows: number = PAGE_ROWS,
): Promise<EvidenceFolder> {
  const pool = await openEvidenceReadPool(url);
  try {
    const sources = await sourcesOf(pool, url, undefined);
    const rows: Row[] = [];
    for await (const row of rowsInKeyOrder(pool, pageRows)) rows.push(row);
    return { ...sources, chains: chainsOf(rows) };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/**
 * The records with this X-Request-ID and what their bundle needs, found by the request_id index:
 * in each chain that holds one, the lines from the first of them to the first checkpoint after the
 * last (or the chain's end), and the certificates, reports and keys those lines name. `show` and
 * `bundle` read this, never the table.
 */
export async function readPostgresEvidenceOf(url: string, requestId: string): Promise<EvidenceFolder> {
  const pool = await openEvidenceReadPool(url);
  try {
    const found = await pool.query<{ instance: string; chain: string; first: string; last: string }>(
      `SELECT instance, chain, min(seq) AS first, max(seq) AS last FROM evidence_lines
       WHERE request_id = $1 GROUP BY instance, chain ORDER BY instance, chain`,
      [requestId],
    );
    const rows: Row[] = [];
    for (const f of found.rows) {
      const checkpoint = await pool.query<{ seq: string }>(
        `SELECT seq FROM evidence_lines WHERE instance = $1 AND chain = $2 AND seq > $3::bigint
           AND line LIKE '%"type":"checkpoint"%' ORDER BY seq LIMIT 1`,
        [f.instance, f.chain, f.last],
      );
      const to = checkpoint.rows[0]?.seq ?? null;
      const part = await pool.query<Row>(
        `SELECT instance, chain, seq, segment, line FROM evidence_lines
         WHERE instance = $1 AND chain = $2 AND seq >= $3::bigint AND ($4::bigint IS NULL OR seq <= $4::bigint)
         ORDER BY seq`,
        [f.instance, f.chain, f.first, to],
      );
      rows.push(...part.rows);
    }
    const named = { certificates: new Set<string>(), reports: new Set<string>(), keys: new Set<string>() };
    for (const row of rows) {
      const line = parsedOrUndefined(row.line);
      if (line?.type === "request" || line?.type === "response") {
        if (line.certificate) named.certificates.add(line.certificate);
        if (line.validationReport) named.reports.add(line.validationReport);
      } else if (line?.type === "checkpoint") named.keys.add(line.key);
    }
    const sources = await sourcesOf(pool, url, {
      certificates: [...named.certificates],
      reports: [...named.reports],
      keys: [...named.keys],
    });
    return { ...sources, chains: chainsOf(rows) };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

function parsedOrUndefined(text: string): EvidenceLine | undefined {
  try {
    return JSON.parse(text) as EvidenceLine;
  } catch {
    return undefined;
  }
}

/** What `status` says of a chain: read from its head, not from its every line. */
export interface ChainHead {
  readonly chain: string;
  readonly files: number;
  readonly records: number;
  readonly lastTime: string | undefined;
  readonly lastCheckpointTime: string | undefined;
  readonly endsWithCheckpoint: boolean;
  /** Records the store did not keep: the sum of the chain's gap lines, as verify counts them. */
  readonly dropped: number;
  /** The last checkpoint's signature does not hold, or its key is unknown. */
  readonly problem: Problem | undefined;
}

/**
 * Each chain's head, for `status`: the chains found by a skip scan of the primary key, then per
 * chain its first and last rows, its last checkpoint (its signature checked) and last record, and
 * the records after the last `file` or checkpoint line (whose `count` says how many came before),
 * each a short walk back along the key, and the records its gap lines say were dropped (gap lines
 * are anywhere in it: found by their partial index, evidence_lines_gaps).
 * A whole chain is checked by `verify`.
 */
export async function postgresChainHeads(
  url: string,
  publicKey: (pem: string) => KeyObject | undefined,
): Promise<{ readonly folder: string; readonly heads: ChainHead[] }> {
  const pool = await openEvidenceReadPool(url);
  try {
    const heads = await pool.query<{
      instance: string;
      chain: string;
      first_segment: number;
      last_segment: number;
      last_line: string;
      checkpoint: string | null;
      last_record: string | null;
      counted: string | null;
      after_counted: string;
      dropped: string;
    }>(
      `WITH RECURSIVE chains AS (
         (SELECT instance, chain FROM evidence_lines ORDER BY instance, chain LIMIT 1)
         UNION ALL
         SELECT n.instance, n.chain FROM chains c CROSS JOIN LATERAL (
           SELECT e.instance, e.chain FROM evidence_lines e
           WHERE (e.instance, e.chain) > (c.instance, c.chain) ORDER BY e.instance, e.chain LIMIT 1
         ) n
       )
       SELECT c.instance, c.chain, first.segment AS first_segment, last.segment AS last_segment,
         last.line AS last_line, ck.line AS checkpoint, rec.line AS last_record,
         counted.line AS counted,
         (SELECT count(*) FROM evidence_lines e
           WHERE e.instance = c.instance AND e.chain = c.chain AND e.seq > coalesce(counted.seq, -1)
             AND (e.line LIKE '%"type":"request"%' OR e.line LIKE '%"type":"response"%')) AS after_counted,
         (${droppedOf("c")}) AS dropped
       FROM chains c
       CROSS JOIN LATERAL (SELECT segment FROM evidence_lines e
         WHERE e.instance = c.instance AND e.chain = c.chain ORDER BY seq LIMIT 1) first
       CROSS JOIN LATERAL (SELECT segment, line FROM evidence_lines e
         WHERE e.instance = c.instance AND e.chain = c.chain ORDER BY seq DESC LIMIT 1) last
       LEFT JOIN LATERAL (SELECT line FROM evidence_lines e
         WHERE e.instance = c.instance AND e.chain = c.chain AND e.line LIKE '%"type":"checkpoint"%'
         ORDER BY seq DESC LIMIT 1) ck ON true
       LEFT JOIN LATERAL (SELECT line FROM evidence_lines e
         WHERE e.instance = c.instance AND e.chain = c.chain
           AND (e.line LIKE '%"type":"request"%' OR e.line LIKE '%"type":"response"%')
         ORDER BY seq DESC LIMIT 1) rec ON true
       LEFT JOIN LATERAL (SELECT seq, line FROM evidence_lines e
         WHERE e.instance = c.instance AND e.chain = c.chain
           AND (e.line LIKE '%"type":"checkpoint"%' OR e.line LIKE '%"type":"file"%')
         ORDER BY seq DESC LIMIT 1) counted ON true
       ORDER BY c.instance, c.chain`,
    );
    const keys = await sourcesOf(pool, url, {
      certificates: [],
      reports: [],
      keys: heads.rows.flatMap((h) => {
        const line = h.checkpoint === null ? undefined : parsedOrUndefined(h.checkpoint);
        return line?.type === "checkpoint" ? [line.key] : [];
      }),
    });
    return {
      folder: redactedUrl(url),
      heads: heads.rows.map((h) => {
        const checkpoint = h.checkpoint === null ? undefined : parsedOrUndefined(h.checkpoint);
        const counted = h.counted === null ? undefined : parsedOrUndefined(h.counted);
        const before = counted?.type === "checkpoint" || counted?.type === "file" ? counted.count : 0;
        const where = `evidence_lines (instance '${h.instance}', chain '${h.chain}'`;
        let problem: Problem | undefined;
        if (checkpoint?.type === "checkpoint") {
          const pem = keys.publicKeyPem(checkpoint.key);
          const key = pem === undefined ? undefined : publicKey(pem);
          if (!key || !checkpointSignatureHolds(checkpoint, key))
            problem = {
              kind: "checkpoint",
              where: `${where}, seq ${checkpoint.seq})`,
              seq: checkpoint.seq,
              text: `${where}, seq ${checkpoint.seq}): the last checkpoint's signature does not hold${key ? "" : " (its key is not in evidence_keys)"}; run evidence verify`,
            };
        }
        return {
          chain: h.chain,
          files: h.last_segment - h.first_segment + 1,
          records: before + Number(h.after_counted),
          lastTime: h.last_record === null ? undefined : parsedOrUndefined(h.last_record)?.time,
          lastCheckpointTime: checkpoint?.time,
          endsWithCheckpoint: parsedOrUndefined(h.last_line)?.type === "checkpoint",
          dropped: Number(h.dropped),
          problem,
        };
      }),
    };
  } finally {
    await pool.end().catch(() => undefined);
  }
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
