/**
 * The named checks of a TPP request and their runner, shared by ingress mode (every request) and
 * `psd2-gateway verify` (explain mode): one list, no second copy of the rules.
 */

export { type CharacterPolicy, checkHeaderCharacters, PERMISSIVE_POLICY, Utf8Scanner } from "./characters.js";
export { CheckContext, type Route, type TppIdentity, type TrustedCertificate } from "./context.js";
export { requestMessage } from "./dialects/index.js";
export {
  AUTHENTICATES,
  type Authenticates,
  CAVAGE_ONLY,
  DIALECTS,
  type Dialect,
  type DialectPolicy,
  type DialectRoute,
  dialectChooser,
  dialectsPresent,
  headBoundByTls,
  verifiedBeforeSending,
} from "./dialects.js";
export { checkRequiredHeaders, hasBody } from "./required-headers.js";
export { type RoleRoute, RoleTable, routeClass, routingPath, underPrefix } from "./routes.js";
export {
  Chain,
  type Holder,
  type MaybePromise,
  type ResponseHold,
  runSteps,
  type Step,
  type StepCounts,
  type StepObserver,
  type StepResult,
  type StepTrace,
} from "./runner.js";
export {
  type CertificateVerifier,
  type CheckOptions,
  type ClientCertificatePolicy,
  IMPLEMENTED_DIALECTS,
  RESPONSE_SIGNING,
  type ResponseSigner,
  requestChecks,
} from "./steps.js";
