/**
 * The development PKI and the demo QTSP that `npm start`, `psd2-gateway certs`, the tests and the
 * benchmarks use: certificates, CRLs, OCSP, trusted lists and the EBA-format register of a made-up
 * QTSP. Never part of a production gateway: `psd2-gateway start` loads it only for the demo.
 */

export * from "./demo-qtsp.js";
export * from "./eba-register.js";
export * from "./pki.js";
export * from "./qtsp/ocsp-responder.js";
export * from "./qtsp/server.js";
export * from "./trusted-lists.js";
