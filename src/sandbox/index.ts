/**
 * The built-in demo bank ("the legacy core") that `npm start`, the tests and the benchmarks put
 * behind the gateway. See server.ts for the behaviour and psu.ts for how PSU-ID picks a customer.
 */

export { DEFAULT_SEED } from "./data.js";
export { DEFAULT_IDENTITY_HEADERS, type GatewayIdentity, type IdentityHeaderNames } from "./identity.js";
export type {
  Account,
  Agreement,
  BankData,
  BookedTransaction,
  CardAcceptorAddress,
  CardAccount,
  CardTransaction,
  Customer,
  CustomerType,
  Money,
  PendingTransaction,
} from "./model.js";
export { DOMESTIC_PRODUCT } from "./payment-body.js";
export { SANDBOX_ONE_TIME_CODE } from "./sca.js";
export {
  createSandboxBank,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_PUBLIC_URL,
  DEFAULT_SCA_LINK_TTL_SECONDS,
  type SandboxBank,
  type SandboxBankOptions,
  type SandboxListener,
} from "./server.js";
export { STATE_FILE_VERSION, StateFileError, type StateSnapshot } from "./state-file.js";
