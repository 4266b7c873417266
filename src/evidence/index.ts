/**
 * Evidence for disputes: a hash-chained, checkpoint-signed record of every request the gateway
 * accepted (record.ts, checkpoint.ts), kept by the chain's last step (step.ts) in append-only files
 * (file-store.ts, the only module here that touches the disk), checked and bundled by the CLI
 * (verify.ts, bundle.ts).
 */

export {
  disputeBundle,
  type FoundRecord,
  type FoundResponse,
  findRecords,
  findResponses,
  opensslCheck,
  rawEcdsaToDer,
  responseBundle,
} from "./bundle.js";
export {
  type CheckpointKey,
  checkpointKeyOf,
  checkpointSignatureHolds,
  newCheckpointKey,
  signedCheckpoint,
} from "./checkpoint.js";
export {
  defaultInstanceId,
  type EvidenceFolder,
  FileEvidenceStore,
  type FileStoreOptions,
  readEvidenceFolder,
  type ValidationEvidence,
} from "./file-store.js";
export {
  type ChainHead,
  type EvidenceSources,
  isPostgresUrl,
  PostgresEvidenceStore,
  type PostgresStoreOptions,
  postgresChainHeads,
  postgresFailureReason,
  readPostgresEvidence,
  readPostgresEvidenceOf,
  redactedUrl,
  verifyPostgresEvidence,
} from "./postgres-store.js";
export {
  type EvidenceEvents,
  type EvidenceStoreStatus,
  QueuedEvidenceStore,
} from "./queued-store.js";
export {
  type BodyPolicy,
  canonicalJson,
  checkpointStatement,
  EvidenceChain,
  type EvidenceLine,
  GENESIS,
  type RecordLine,
  type RequestCapture,
  type RequestEvidence,
  type ResponseEvidence,
  type ResponseLine,
  sha256Hex,
} from "./record.js";
export {
  type ResponseEvidenceOptions,
  type ResponseEvidenceSink,
  signedResponseEvidence,
  verifiedResponseEvidence,
  withResponseEvidence,
} from "./response.js";
export {
  EVIDENCE_STEP,
  type EvidenceSink,
  type EvidenceStepOptions,
  evidenceStep,
  type FailurePolicy,
  keepsBody,
} from "./step.js";
export {
  type ChainReport,
  chainLines,
  checkpointKeys,
  type Problem,
  placeOf,
  publicKeyOf,
  verifyChain,
} from "./verify.js";
