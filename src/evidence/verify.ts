/**
 * Checking an evidence folder's chains: every line canonical and pointing at the one before, seq
 * without gaps, files without gaps, every checkpoint's count and signature. The first problem of
 * each chain is named by file, line, seq and X-Request-ID: a record altered, removed or reordered.
 * Pure: the folder is read by file-store.ts's readEvidenceFolder.
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

export function verifyChain(
  chain: ChainFolder,
  publicKey: (id: string) => KeyObject | undefined,
  now: number = Date.now(),
): ChainReport {
  const files = [...chain.files].sort((a, b) => a.number - b.number);
  let records = 0;
  let checkpoints = 0;
  let uncovered = 0;
  let dropped = 0;
  let lastTime: string | undefined;
  let lastCheckpointTime: string | undefined;
  let endsWithCheckpoint = false;
  let problem: Problem | undefined;
  let expectedSeq: number | undefined;
  let prevHash: string | undefined;
  let previous: { seq: number; requestId: string | undefined; where: string } | undefined;
  const startsAtFile = files[0]?.number ?? 1;

  // Every seq present, to tell a line moved from one removed.
  const present = new Map<number, string>();
  for (const p of chainLines({ id: chain.id, files }))
    if (typeof p.line.seq === "number") present.set(p.line.seq, placeOf(chain, p.file, p.lineNumber));

  const named = (seq: number | undefined, requestId: string | undefined) =>
    `${seq !== undefined ? `seq ${seq}` : "a line"}${requestId !== undefined ? ` (X-Request-ID ${requestId})` : ""}`;

  outer: for (let f = 0; f < files.length; f++) {
    const file = files[f]!;
    const where = placeOf(chain, file);
    if (f > 0 && file.number !== files[f - 1]!.number + 1) {
      problem = {
        kind: "removed",
        where,
        text: chain.locate
          ? `segments ${files[f - 1]!.number + 1} to ${file.number - 1} are missing before ${where}`
          : `files ${chainFileNameOf(files[f - 1]!.number + 1)} to ${chainFileNameOf(file.number - 1)} are missing before ${where}`,
      };
      break;
    }
    const texts = file.text.split("\n");
    const last = texts.pop();
    if (last !== "") {
      problem = {
        kind: "cut-short",
        where: placeOf(chain, file, texts.length + 1),
        text: `${where} ends in a line cut short (no newline): written when the gateway stopped mid-write, or edited`,
      };
      // The complete lines before it are still checked.
    }
    for (let i = 0; i < texts.length; i++) {
      const text = texts[i]!;
      const at = placeOf(chain, file, i + 1);
      let line: EvidenceLine;
      try {
        line = JSON.parse(text) as EvidenceLine;
      } catch {
        problem = {
          kind: "altered",
          where: at,
          text: `${at} is not JSON: the line was altered`,
        };
        break outer;
      }
      const requestId = line.type === "request" || line.type === "response" ? line.requestId : undefined;
      if (canonicalJson(line) !== text || line.chain !== chain.id) {
        problem = {
          kind: "altered",
          where: at,
          seq: line.seq,
          ...(requestId !== undefined ? { requestId } : {}),
          text: `${at}: ${named(line.seq, requestId)} was altered (${line.chain !== chain.id ? `it names chain ${line.chain}` : "it is not in canonical form"})`,
        };
        break outer;
      }
      if (expectedSeq === undefined) {
        // The chain's start: its first file begins at seq 0 after the genesis hash; a later file
        // (earlier ones removed by retention) only when retention can have removed them.
        if (file.number === 1 && (line.seq !== 0 || line.prev !== GENESIS)) {
          problem = {
            kind: "removed",
            where: at,
            seq: line.seq,
            text: `${at}: the chain starts at ${named(line.seq, requestId)}; lines before it were removed`,
          };
          break outer;
        }
        if (file.number > 1 && line.type === "file") {
          const retain = line.retainDays;
          if (retain <= 0 || Date.parse(line.time) > now - retain * 86_400_000) {
            problem = {
              kind: "removed",
              where: at,
              text: `files before ${where} are missing, and retention (retainDays ${retain}) would not have removed them yet`,
            };
            break outer;
          }
        }
        if (line.type === "file") records = line.count;
      } else if (line.seq !== expectedSeq) {
        const elsewhere = present.get(expectedSeq);
        if (line.seq > expectedSeq && elsewhere === undefined) {
          const missing =
            line.seq - expectedSeq === 1 ? `seq ${expectedSeq}` : `seq ${expectedSeq} to ${line.seq - 1}`;
          problem = {
            kind: "removed",
            where: at,
            seq: expectedSeq,
            text: `${at}: ${missing} removed (between ${named(previous?.seq, previous?.requestId)} and ${named(line.seq, requestId)})`,
          };
        } else {
          problem = {
            kind: "reordered",
            where: at,
            seq: line.seq,
            ...(requestId !== undefined ? { requestId } : {}),
            text: `${at}: ${named(line.seq, requestId)} is out of order: seq ${expectedSeq} was expected here${elsewhere ? ` (it is at ${elsewhere})` : ""}`,
          };
        }
        break outer;
      } else if (line.prev !== prevHash) {
        problem = {
          kind: "altered",
          where: previous?.where ?? at,
          ...(previous ? { seq: previous.seq } : {}),
          ...(previous?.requestId !== undefined ? { requestId: previous.requestId } : {}),
          text: `${previous?.where ?? at}: ${named(previous?.seq, previous?.requestId)} was altered (the line after it, ${at}, holds another hash of it)`,
        };
        break outer;
      }
      switch (line.type) {
        case "request":
        case "response":
          records += 1;
          uncovered += 1;
          lastTime = line.time;
          break;
        case "gap":
          dropped += line.dropped;
          break;
        case "file":
          if (line.file !== file.number || line.count !== records) {
            problem = {
              kind: "altered",
              where: at,
              seq: line.seq,
              text: `${at}: the file line says file ${line.file} after ${line.count} records; it is file ${file.number} after ${records}`,
            };
            break outer;
          }
          break;
        case "checkpoint": {
          const trouble = checkpointTrouble(line, records, publicKey);
          if (trouble) {
            problem = { kind: "checkpoint", where: at, seq: line.seq, text: `${at}: checkpoint ${trouble}` };
            break outer;
          }
          checkpoints += 1;
          uncovered = 0;
          lastCheckpointTime = line.time;
          break;
        }
      }
      endsWithCheckpoint = line.type === "checkpoint";
      expectedSeq = line.seq + 1;
      prevHash = sha256Hex(text);
      previous = { seq: line.seq, requestId, where: at };
    }
    if (problem) break;
  }
  return {
    chain: chain.id,
    files: files.length,
    records,
    checkpoints,
    uncovered,
    endsWithCheckpoint,
    lastTime,
    lastCheckpointTime,
    dropped,
    startsAtFile,
    problem,
  };
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
