/**
 * The openssl binary, run in a folder: the credential tests make their keys, certificates and
 * PKCS#12 bundles with it, as a bank or QTSP hands them out.
 */

import { execFileSync } from "node:child_process";

export type Openssl = (...args: string[]) => Buffer;

/** `openssl …` in `dir`; a failure says these tests need the binary. */
export function opensslIn(dir: string): Openssl {
  return (...args) => {
    try {
      return execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
    } catch (error) {
      throw new Error(`these tests need the openssl binary on PATH; openssl ${args[0]} failed: ${error}`);
    }
  };
}

/** `openssl pkcs12 -export` of `<name>.key` and `<name>.pem` into `file`, with `extra` options. */
export function exportPkcs12(
  openssl: Openssl,
  file: string,
  name: string,
  password: string,
  ...extra: string[]
): void {
  openssl(
    "pkcs12",
    "-export",
    "-inkey",
    `${name}.key`,
    "-in",
    `${name}.pem`,
    "-out",
    file,
    "-passout",
    `pass:${password}`,
    ...extra,
  );
}
