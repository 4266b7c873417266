/**
 * Which listen addresses are loopback: neutral ground for the config's validation and the admin
 * listener, which both decide whether a listener is reachable from beyond this host.
 */

import { BlockList, isIPv4, isIPv6 } from "node:net";

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");
LOOPBACK.addSubnet("::ffff:127.0.0.0", 104, "ipv6");

/** Where every interface is listened on. */
export function isWildcardHost(host: string): boolean {
  return ["0.0.0.0", "::", "[::]"].includes(host);
}

/**
 * `localhost`, 127.0.0.0/8, ::1 (and ::ffff:127.0.0.0/104). Anything else, a wildcard or a DNS
 * name included, counts as beyond loopback: a name may resolve to any interface.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost") return true;
  if (isIPv4(h)) return LOOPBACK.check(h, "ipv4");
  if (isIPv6(h)) return LOOPBACK.check(h, "ipv6");
  return false;
}
