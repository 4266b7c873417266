/** Egress mode's public surface: bank routing, the request handler and response verification. */

export {
  type BankProfile,
  createEgressHandler,
  type EgressHandlerOptions,
  GATEWAY_WRITTEN_HEADERS,
  ORIGIN_HEADER,
  type ResponseVerificationMode,
} from "./handler.js";
export { RESPONSE_SIGNATURE_HEADER } from "./response-signature.js";
export {
  ResponseCheck,
  type ResponseToVerify,
  ResponseVerifier,
  type ResponseVerifierOptions,
  responseChecks,
} from "./response-verifier.js";
export { BankRouter, type Route } from "./router.js";
