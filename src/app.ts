/**
 * The one composition root: a validated config becomes a running gateway of its mode. The
 * command line (src/cli/) calls this; tests and benchmarks call it the same way. Per-mode builders
 * live in src/app/; the components they assemble (ingress/, egress/, checks/, forward/, eidas/,
 * limits/, trust/, observability/) receive plain options and never read the config themselves.
 */

import { type EgressDependencies, type EgressGateway, startEgressGateway } from "./app/egress.js";
import { type IngressDependencies, type IngressGateway, startIngressGateway } from "./app/ingress.js";
import type { AnyGatewayConfig, EgressConfig, GatewayConfig } from "./config/schema.js";

export type { EgressDependencies, EgressGateway } from "./app/egress.js";
export type { DemoBankRequest, IngressDependencies, IngressGateway, StartedBackend } from "./app/ingress.js";

export type GatewayDependencies = IngressDependencies & Omit<EgressDependencies, "onRequest">;
export type Gateway = IngressGateway | EgressGateway;

export function startGateway(config: GatewayConfig, deps: IngressDependencies): Promise<IngressGateway>;
export function startGateway(config: EgressConfig, deps: EgressDependencies): Promise<EgressGateway>;
export function startGateway(config: AnyGatewayConfig, deps: GatewayDependencies): Promise<Gateway>;
export function startGateway(config: AnyGatewayConfig, deps: GatewayDependencies): Promise<Gateway> {
  switch (config.mode) {
    case "ingress":
      return startIngressGateway(config, deps);
    case "egress":
      return startEgressGateway(config, deps);
  }
}
