/** The `backend.forwardedHeaders` block as the names the ingress handler writes (false: not written). */

import type { ForwardedHeaderNames } from "../ingress/forwarded.js";

export function forwardedHeaderNames(
  config: Readonly<Record<keyof ForwardedHeaderNames, string | false>>,
): ForwardedHeaderNames {
  const name = (value: string | false) => (value === false ? undefined : value);
  return {
    forwarded: name(config.forwarded),
    for: name(config.for),
    proto: name(config.proto),
    host: name(config.host),
    port: name(config.port),
    prefix: name(config.prefix),
    realIp: name(config.realIp),
  };
}
