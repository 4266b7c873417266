/** `psd2-gateway health`: asks a running gateway's admin listener (Docker HEALTHCHECK, scripts). */

import { request } from "undici";
import { loadConfigFile } from "../config/load.js";
import { defineCommand } from "./command.js";
import { DEFAULT_CONFIG } from "./paths.js";

export const healthCommand = defineCommand({
  name: "health",
  summary: "ask a running gateway's admin listener whether it is alive (or ready)",
  usage: `psd2-gateway health [--config <file>] [--ready] [--json]

  --config <file>  the running gateway's configuration: where its admin listener is
                   (admin.host, admin.port); default config/default.yaml
  --ready          ask /readyz (can it serve?) instead of /healthz (is it alive?)
  --json           print the admin listener's answer as JSON

Exits 0 when the answer is 200, 1 otherwise.`,
  options: {
    config: { type: "string", path: "file" },
    ready: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  },
  async run(values) {
    const config = loadConfigFile(values.config ?? DEFAULT_CONFIG);
    if (!config.admin.enabled) {
      console.error("psd2-gateway health: admin.enabled is false in this configuration; nothing to ask");
      return 1;
    }
    if (config.admin.tls) {
      // Mutual TLS: this command holds no client certificate from admin.tls.clientCa.
      console.error(
        "psd2-gateway health: the admin listener requires a client certificate (admin.tls); ask it with curl --cert <yours> --key <yours> --cacert <its CA>",
      );
      return 1;
    }
    // A listener on every interface is reached on loopback from inside the container.
    const host = ["0.0.0.0", "::"].includes(config.admin.host) ? "127.0.0.1" : config.admin.host;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${config.admin.port}/${values.ready ? "readyz" : "healthz"}`;
    try {
      const response = await request(url, { headersTimeout: 2_000, bodyTimeout: 2_000 });
      const text = await response.body.text();
      if (values.json) console.log(text);
      else console.log(`${response.statusCode} ${url}`);
      return response.statusCode === 200 ? 0 : 1;
    } catch (error) {
      console.error(`psd2-gateway health: ${url} did not answer (${(error as Error).message})`);
      return 1;
    }
  },
});
