/**
 * Trust material from local folders: the file-system edge in front of the pure eIDAS layer.
 * Files that cannot be read are reported as problems, not fatal: the rest still loads.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ParsedCertificate } from "../eidas/index.js";
import {
  CrlRevocationChecker,
  certificatesFromFile,
  crlsFromFile,
  type RevocationList,
  TrustStore,
} from "../eidas/index.js";

const CERTIFICATE_FILE = /\.(pem|crt|cer|der)$/i;
const CRL_FILE = /\.(crl|pem)$/i;

/** The regular files of a folder whose names match, sorted (so reloads see the same order). */
function filesIn(folder: string, pattern: RegExp): string[] {
  return readdirSync(folder)
    .sort()
    .filter((name) => pattern.test(name))
    .map((name) => join(folder, name))
    .filter((file) => statSync(file).isFile());
}

/** Every CA certificate in a folder's PEM (and single DER) files. */
export function trustStoreFromFolder(folder: string): { store: TrustStore; problems: string[] } {
  const certificates: ParsedCertificate[] = [];
  const problems: string[] = [];
  for (const file of filesIn(folder, CERTIFICATE_FILE)) {
    const found = certificatesFromFile(file, readFileSync(file));
    certificates.push(...found.certificates);
    problems.push(...found.problems);
  }
  return { store: new TrustStore(certificates), problems };
}

/**
 * Every CRL in a folder whose signature a CA of `cas` verifies; `rejected` names each list (file,
 * or file#n) that was not kept and why, for `trust status`.
 */
export function crlCheckerFromFolder(
  folder: string,
  cas: readonly ParsedCertificate[],
): { checker: CrlRevocationChecker; problems: string[]; rejected: CrlRejection[] } {
  const lists: RevocationList[] = [];
  const problems: string[] = [];
  const rejected: CrlRejection[] = [];
  let files: string[] = [];
  try {
    files = filesIn(folder, CRL_FILE);
  } catch (error) {
    problems.push(`cannot read CRL folder ${folder}: ${(error as Error).message}`);
    rejected.push({ source: folder, reason: `cannot read the folder: ${(error as Error).message}` });
  }
  for (const file of files) {
    const found = crlsFromFile(file, readFileSync(file), cas);
    lists.push(...found.lists);
    problems.push(...found.problems);
    rejected.push(...found.rejected);
  }
  return { checker: new CrlRevocationChecker(lists), problems, rejected };
}

/** A CRL in a file that is not used: unreadable, or no trusted CA signed it. */
export interface CrlRejection {
  readonly source: string;
  readonly reason: string;
}
