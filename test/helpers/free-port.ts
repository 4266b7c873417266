/** The one free-port probe of the tests. */

import { createServer } from "node:net";

/**
 * A loopback port the kernel just handed out and released (probed with listen(0)): for a config
 * file or a server started by another process right after. Another process may take it in
 * between; the tests that use it start their server at once.
 */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
