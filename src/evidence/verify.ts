/**
 * Checking an evidence folder's chains: every line canonical and pointing at the one before, seq
 * without gaps, files without gaps, every checkpoint's count and signature. The first problem of
 * each chain is named by file, line, seq and X-Request-ID: a record altered, removed or reordered.
 * Pure, and line by line (ChainVerifier): a folder's files (read by file-store.ts's readEvidenceFolder)
 * and a database's rows as their pages arrive (postgres-store.ts) go through the same checks.
 */

import { createPublicKey, type KeyObject } from "node:crypto";
import { checkpointSignatureHolds } from "./checkpoint.js";
import { type CheckpointLine, canonicalJson, type EvidenceLine, GENESIS, sha256Hex } from "./record.js";

/** One file of a chain, as read. */
export interface ChainFile {
  /** `000001.jsonl` */
  readonly name: string;
  readonly number: number;
  readonly text: string;
}

export interface ChainFolder {
  readonly id: string;
  readonly files: readonly ChainFile[];
  /**
   * How a file, or a line of it (1-based), is named in problems; default `chains/<id>/<file>:<line>`.
   * A database names its row instead.
   */
  readonly locate?: (file: ChainFile, lineNumber?: number) => string;
}

/** Where a file or one of its lines is, as its chain names it. */
export function placeOf(chain: ChainFolder, file: ChainFile, lineNumber?: number): string {
  if (chain.locate) return chain.locate(file, lineNumber);
  const where = `chains/${chain.id}/${file.name}`;
  return lineNumber === undefined ? where : `${where}:${lineNumber}`;
}

export type ProblemKind = "altered" | "removed" | "reordered" | "checkpoint" | "cut-short";

export interface Problem {
  readonly kind: ProblemKind;
  /** `chains/<id>/000001.jsonl:5` */
  readonly where: string;
  readonly seq?: number;
  readonly requestId?: string;
  readonly text: string;
}

export interface ChainReport {
  readonly chain: string;
  readonly files: number;
  readonly records: number;
  readonly checkpoints: number;
  /** Records after the last checkpoint (not yet covered by a signature). */
  readonly uncovered: number;
  /** The last line is a checkpoint (the chain was closed or rotated then). */
  readonly endsWithCheckpoint: boolean;
  readonly lastTime: string | undefined;
  readonly lastCheckpointTime: string | undefined;
  /** Records the store did not keep (gap lines, under onFailure: continue). */
  readonly dropped: number;
  /** Earlier files were removed by retention: the chain is checked from the first one left. */
  readonly startsAtFile: number;
  readonly problem: Problem | undefined;
}

export interface ParsedLine {
  readonly text: string;
  readonly line: EvidenceLine;
  readonly file: ChainFile;
  /** 1-based. */
  readonly lineNumber: number;
}

/** Every line of a chain that parses as JSON, in file order (for show and bundle). */
export function* chainLines(chain: ChainFolder): Generator<ParsedLine> {
  for (const file of chain.files) {
    const texts = file.text.split("\n");
    for (let i = 0; i < texts.length; i++) {
      const text = texts[i]!;
      if (text === "") continue;
      try {
        yield { text, line: JSON.parse(text) as EvidenceLine, file, lineNumber: i + 1 };
      } catch {
        // verify names it
      }
    }
  }
}

/** A chain's files, sorted, fed line by line to one ChainVerifier: the folder's verify. */
export function verifyChain(
  chain: ChainFolder,
  publicKey: (id: string) => KeyObject | undefined,
  now: number = Date.now(),
): ChainReport {
  const files = [...chain.files].sort((a, b) => a.number - b.number);
  const verifier = new ChainVerifier(chain.id, publicKey, now, chain.locate ? "segments" : "files");
  for (const file of files) {
    verifier.file(file.number, placeOf(chain, file));
    const texts = file.text.split("\n");
    const last = texts.pop();
    for (let i = 0; i < texts.length; i++) verifier.line(texts[i]!, placeOf(chain, file, i + 1));
    if (last !== "") verifier.cutShort(last!, placeOf(chain, file, texts.length + 1));
  }
  return verifier.end();
}

const named = (seq: number | undefined, requestId: string | undefined) =>
  `${seq !== undefined ? `seq ${seq}` : "a line"}${requestId !== undefined ? ` (X-Request-ID ${requestId})` : ""}`;

/**
 * Checks a chain as its lines arrive (a folder's files, or a database's rows in pages), holding
 * only the line before, so that memory does not grow with the chain. Feed `file` as each file (or
 * segment) begins, then its lines in order, then `end`. After a seq out of place the rest is read
 * only to find where the expected seq went, which tells a line moved from one removed.
 */
export class ChainVerifier {
  private files = 0;
  private fileNumber: number | undefined;
  private fileWhere = "";
  private startsAtFile: number | undefined;
  private records = 0;
  private checkpoints = 0;
  private uncovered = 0;
  private dropped = 0;
  private lastTime: string | undefined;
  private lastCheckpointTime: string | undefined;
  private endsWithCheckpoint = false;
  private problem: Problem | undefined;
  private expectedSeq: number | undefined;
  private prevHash: string | undefined;
  private previous: { seq: number; requestId: string | undefined; where: string } | undefined;
  /** A seq out of place, waiting for the rest to say where the expected one is. */
  private misplaced:
    | { line: EvidenceLine; requestId: string | undefined; at: string; expected: number; elsewhere?: string }
    | undefined;

  constructor(
    private readonly chainId: string,
    private readonly publicKey: (id: string) => KeyObject | undefined,
    private readonly now: number = Date.now(),
    /** A database's segments or a folder's files, as a missing run of them is named. */
    private readonly unit: "files" | "segments" = "files",
  ) {}

  file(number: number, where: string): void {
    this.files += 1;
    const before = this.fileNumber;
    this.fileNumber = number;
    this.fileWhere = where;
    this.startsAtFile ??= number;
    if (this.problem || this.misplaced || before === undefined || number === before + 1) return;
    this.problem = {
      kind: "removed",
      where,
      text:
        this.unit === "segments"
          ? `segments ${before + 1} to ${number - 1} are missing before ${where}`
          : `files ${chainFileNameOf(before + 1)} to ${chainFileNameOf(number - 1)} are missing before ${where}`,
    };
  }

  /** The file's last line, without its newline: named unless a line before it fails first. */
  cutShort(text: string, at: string): void {
    if (this.misplaced) this.look(text, at);
    else if (!this.problem)
      this.problem = {
        kind: "cut-short",
        where: at,
        text: `${this.fileWhere} ends in a line cut short (no newline): written when the gateway stopped mid-write, or edited`,
      };
  }

  line(text: string, at: string): void {
    if (this.misplaced) this.look(text, at);
    else if (!this.problem) this.problem = this.check(text, at);
  }

  private look(text: string, at: string): void {
    const m = this.misplaced!;
    try {
      // The last line holding the expected seq, as a whole read would find it.
      if ((JSON.parse(text) as EvidenceLine).seq === m.expected) m.elsewhere = at;
    } catch {
      // not JSON: not it
    }
  }

  private check(text: string, at: string): Problem | undefined {
    const file = this.fileNumber ?? 1;
    let line: EvidenceLine;
    try {
      line = JSON.parse(text) as EvidenceLine;
    } catch {
      return { kind: "altered", where: at, text: `${at} is not JSON: the line was altered` };
    }
    const requestId = line.type === "request" || line.type === "response" ? line.requestId : undefined;
    if (canonicalJson(line) !== text || line.chain !== this.chainId)
      return {
        kind: "altered",
        where: at,
        seq: line.seq,
        ...(requestId !== undefined ? { requestId } : {}),
        text: `${at}: ${named(line.seq, requestId)} was altered (${line.chain !== this.chainId ? `it names chain ${line.chain}` : "it is not in canonical form"})`,
      };
    const previous = this.previous;
    if (this.expectedSeq === undefined) {
      // The chain's start: its first file begins at seq 0 after the genesis hash; a later file
      // (earlier ones removed by retention) only when retention can have removed them.
      if (file === 1 && (line.seq !== 0 || line.prev !== GENESIS))
        return {
          kind: "removed",
          where: at,
          seq: line.seq,
          text: `${at}: the chain starts at ${named(line.seq, requestId)}; lines before it were removed`,
        };
      if (file > 1 && line.type === "file") {
        const retain = line.retainDays;
        if (retain <= 0 || Date.parse(line.time) > this.now - retain * 86_400_000)
          return {
            kind: "removed",
            where: at,
            text: `files before ${this.fileWhere} are missing, and retention (retainDays ${retain}) would not have removed them yet`,
          };
      }
      if (line.type === "file") this.records = line.count;
    } else if (line.seq !== this.expectedSeq) {
      this.misplaced = { line, requestId, at, expected: this.expectedSeq };
      return undefined;
    } else if (line.prev !== this.prevHash)
      return {
        kind: "altered",
        where: previous?.where ?? at,
        ...(previous ? { seq: previous.seq } : {}),
        ...(previous?.requestId !== undefined ? { requestId: previous.requestId } : {}),
        text: `${previous?.where ?? at}: ${named(previous?.seq, previous?.requestId)} was altered (the line after it, ${at}, holds another hash of it)`,
      };
    switch (line.type) {
      case "request":
      case "response":
        this.records += 1;
        this.uncovered += 1;
        this.lastTime = line.time;
        break;
      case "gap":
        this.dropped += line.dropped;
        break;
      case "file":
        if (line.file !== file || line.count !== this.records)
          return {
            kind: "altered",
            where: at,
            seq: line.seq,
            text: `${at}: the file line says file ${line.file} after ${line.count} records; it is file ${file} after ${this.records}`,
          };
        break;
      case "checkpoint": {
        const trouble = checkpointTrouble(line, this.records, this.publicKey);
        if (trouble)
          return { kind: "checkpoint", where: at, seq: line.seq, text: `${at}: checkpoint ${trouble}` };
        this.checkpoints += 1;
        this.uncovered = 0;
        this.lastCheckpointTime = line.time;
        break;
      }
    }
    this.endsWithCheckpoint = line.type === "checkpoint";
    this.expectedSeq = line.seq + 1;
    this.prevHash = sha256Hex(text);
    this.previous = { seq: line.seq, requestId, where: at };
    return undefined;
  }

  /** Where a seq out of place went, now that the rest has been read. */
  private misplacedProblem(): Problem {
    const { line, requestId, at, expected, elsewhere } = this.misplaced!;
    const previous = this.previous;
    if (line.seq > expected && elsewhere === undefined) {
      const missing = line.seq - expected === 1 ? `seq ${expected}` : `seq ${expected} to ${line.seq - 1}`;
      return {
        kind: "removed",
        where: at,
        seq: expected,
        text: `${at}: ${missing} removed (between ${named(previous?.seq, previous?.requestId)} and ${named(line.seq, requestId)})`,
      };
    }
    return {
      kind: "reordered",
      where: at,
      seq: line.seq,
      ...(requestId !== undefined ? { requestId } : {}),
      text: `${at}: ${named(line.seq, requestId)} is out of order: seq ${expected} was expected here${elsewhere ? ` (it is at ${elsewhere})` : ""}`,
    };
  }

  end(): ChainReport {
    return {
      chain: this.chainId,
      files: this.files,
      records: this.records,
      checkpoints: this.checkpoints,
      uncovered: this.uncovered,
      endsWithCheckpoint: this.endsWithCheckpoint,
      lastTime: this.lastTime,
      lastCheckpointTime: this.lastCheckpointTime,
      dropped: this.dropped,
      startsAtFile: this.startsAtFile ?? 1,
      problem: this.misplaced ? this.misplacedProblem() : this.problem,
    };
  }
}

function checkpointTrouble(
  line: CheckpointLine,
  records: number,
  publicKey: (id: string) => KeyObject | undefined,
): string | undefined {
  if (line.count !== records) return `counts ${line.count} records; the chain holds ${records} before it`;
  const key = publicKey(line.key);
  if (!key) return `is signed with key ${line.key}, whose public key is not in keys/`;
  if (!checkpointSignatureHolds(line, key)) return "signature does not hold: the checkpoint was altered";
  return undefined;
}

function chainFileNameOf(n: number): string {
  return `${String(n).padStart(6, "0")}.jsonl`;
}

/** A public key PEM (or certificate PEM) as a KeyObject, undefined when it does not parse. */
export function publicKeyOf(pem: string): KeyObject | undefined {
  try {
    return createPublicKey(pem);
  } catch {
    return undefined;
  }
}

/**
 * The checkpoint keys of a folder or database, by id, as the verifier asks for them: each parsed
 * once (a chain names its key at every checkpoint).
 */
export function checkpointKeys(
  publicKeyPem: (id: string) => string | undefined,
  publicKey: (pem: string) => KeyObject | undefined = publicKeyOf,
): (id: string) => KeyObject | undefined {
  const keys = new Map<string, KeyObject | undefined>();
  return (id) => {
    if (!keys.has(id)) {
      const pem = publicKeyPem(id);
      keys.set(id, pem === undefined ? undefined : publicKey(pem));
    }
    return keys.get(id);
  };
}
