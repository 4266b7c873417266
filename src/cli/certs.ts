/** `psd2-gateway certs`: the development PKI (never for production). */

import { defineCommand } from "./command.js";
import { DEV_CERTS_DIR } from "./paths.js";
import { ensureDevCertificates } from "./start.js";

export const certsCommand = defineCommand({
  name: "certs",
  summary: "generate the development PKI",
  usage: `psd2-gateway certs [--out <dir>] [--force]

  --out <dir>   where to write it (default certs/dev)
  --force       generate anew even when it exists

Writes a demo QTSP (root and issuing CA), the gateway's TLS certificate, two demo TPPs with PSD2
QWACs and QSealCs, an expired, a revoked and an unregistered certificate, the TPP register and a
CRL. Private keys stay in that folder; never commit them.`,
  options: { out: { type: "string", path: "new-folder" }, force: { type: "boolean" } },
  async run(values) {
    const out = values.out ?? DEV_CERTS_DIR;
    const generated = await ensureDevCertificates((m) => console.error(m), values.force ?? false, out);
    // Silence would read as "done" when nothing was (re)generated.
    if (!generated)
      console.error(
        `development certificates already in ${out}; psd2-gateway certs --force generates them anew`,
      );
    return 0;
  },
});
