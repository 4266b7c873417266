/**
 * Egress mode's public surface: bank routing and the request handler. A dialect's response checks
 * live in its unit (src/checks/dialects/, `responseChecks`).
 */

export {
  type BankProfile,
  createEgressHandler,
  type EgressHandlerOptions,
  type EgressRequestChain,
  egressRequestChain,
  GATEWAY_WRITTEN_HEADERS,
  ORIGIN_HEADER,
  type ResponseVerificationMode,
} from "./handler.js";
export { RESPONSE_SIGNATURE_HEADER } from "./response-signature.js";
export { BankRouter, type Route } from "./router.js";
