/**
 * The one composition root: a validated config becomes a running gateway of its mode. The
 * command line (src/cli/) calls this; tests and benchmarks call it the same way. Per-mode builders
 * live in src/app/; the components they assemble (ingress/, checks/, forward/, eidas/, limits/,
 * trust/, observability/) receive plain options and never read the config themselves.
 */

import { type IngressDependencies, type IngressGateway, startIngressGateway } from "./app/ingress.js";
import type { GatewayConfig } from "./config/schema.js";

export type { IngressDependencies, IngressGateway, StartedBackend } from "./app/ingress.js";

export type GatewayDependencies = IngressDependencies;
export type Gateway = IngressGateway;

export function startGateway(config: GatewayConfig, deps: GatewayDependencies): Promise<Gateway> {
  switch (config.mode) {
    case "ingress":
      return startIngressGateway(config, deps);
  }
}
