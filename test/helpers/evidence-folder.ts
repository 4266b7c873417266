/** Reading an evidence folder as a test does: every line of every chain file, parsed. */

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface EvidenceLineRead {
  readonly type: string;
  readonly seq: number;
  readonly chain: string;
  readonly requestId?: string;
  readonly [field: string]: unknown;
}

/** Every line of every chain under `folder`/chains, in file order per chain. */
export function evidenceLines(folder: string): EvidenceLineRead[] {
  const chains = join(folder, "chains");
  return readdirSync(chains).flatMap((chain) =>
    readdirSync(join(chains, chain))
      .sort()
      .flatMap((file) =>
        readFileSync(join(chains, chain, file), "utf8")
          .trimEnd()
          .split("\n")
          .map((l) => JSON.parse(l) as EvidenceLineRead),
      ),
  );
}
