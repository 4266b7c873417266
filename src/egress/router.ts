/**
 * Which bank a request from the TPP's application is for: by Host, by path prefix (whole
 * segments, removed before forwarding), or both. A profile with a Host beats one without;
 * among the rest the longest prefix wins.
 */

export interface Routable {
  readonly name: string;
  readonly prefix?: string | undefined;
  readonly host?: string | undefined;
}

export interface Route<P extends Routable> {
  readonly profile: P;
  /** The request target below the prefix: `/demo/v1/accounts?x=1` → `/v1/accounts?x=1`. */
  readonly target: string;
}

export class BankRouter<P extends Routable> {
  private readonly ordered: readonly P[];
  /** Each profile's host as `hostOnly` writes a Host header's: `::1` → `[::1]`, `bank:8443` → `bank`. */
  private readonly hosts: Map<P, string>;

  constructor(profiles: readonly P[]) {
    const weight = (p: P) => (p.host !== undefined ? 1_000_000 : 0) + (p.prefix?.length ?? 0);
    this.ordered = [...profiles].sort((a, b) => weight(b) - weight(a));
    this.hosts = new Map();
    for (const p of profiles) {
      if (p.host === undefined) continue;
      const bareIpv6 = !p.host.startsWith("[") && p.host.split(":").length > 2;
      this.hosts.set(p, hostOnly(bareIpv6 ? `[${p.host}]` : p.host));
    }
  }

  route(hostHeader: string | undefined, target: string): Route<P> | undefined {
    const host = hostOnly(hostHeader);
    for (const profile of this.ordered) {
      if (profile.host !== undefined && this.hosts.get(profile) !== host) continue;
      if (profile.prefix === undefined) return { profile, target };
      const rest = belowPrefix(target, profile.prefix);
      if (rest !== undefined) return { profile, target: rest };
    }
    return undefined;
  }

  /** For the 404 text: how the configured banks are reached. */
  describe(): string {
    return this.ordered
      .map(
        (p) =>
          `${p.name} (${[p.host && `Host ${p.host}`, p.prefix && `${p.prefix}/…`].filter(Boolean).join(", ")})`,
      )
      .join("; ");
  }
}

function hostOnly(header: string | undefined): string {
  if (header === undefined) return "";
  const value = header.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  const colon = value.lastIndexOf(":");
  return colon >= 0 ? value.slice(0, colon) : value;
}

function belowPrefix(target: string, prefix: string): string | undefined {
  if (!target.startsWith(prefix)) return undefined;
  const rest = target.slice(prefix.length);
  if (rest === "") return "/";
  if (rest.startsWith("/")) return rest;
  if (rest.startsWith("?")) return `/${rest}`;
  return undefined; // `/demo2` is not under `/demo`
}
