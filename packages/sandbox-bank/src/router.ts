/**
 * A route table matched segment by segment: `:name` segments capture, the rest must be equal.
 * A path that some route knows under another method answers 405 with Allow, not 404.
 */

export interface RouteDefinition<Handler> {
  readonly method: string;
  /** For example `/v1/accounts/:accountId/balances`. */
  readonly path: string;
  readonly handler: Handler;
}

export type RouteMatch<Handler> =
  | { readonly kind: "found"; readonly handler: Handler; readonly params: readonly string[] }
  | { readonly kind: "method-not-allowed"; readonly allow: readonly string[] }
  | { readonly kind: "not-found" };

interface CompiledRoute<Handler> {
  readonly method: string;
  /** Literal segments, or undefined where the route captures. */
  readonly literals: readonly (string | undefined)[];
  readonly handler: Handler;
}

export class Router<Handler> {
  /** Routes grouped by segment count, so a lookup only compares routes of the right length. */
  private readonly byLength = new Map<number, CompiledRoute<Handler>[]>();

  constructor(routes: readonly RouteDefinition<Handler>[]) {
    for (const route of routes) {
      if (!route.path.startsWith("/")) throw new Error(`route path ${route.path} must start with /`);
      const literals = route.path
        .slice(1)
        .split("/")
        .map((segment) => (segment.startsWith(":") ? undefined : segment));
      const group = this.byLength.get(literals.length) ?? [];
      group.push({ method: route.method, literals, handler: route.handler });
      this.byLength.set(literals.length, group);
    }
  }

  match(method: string, segments: readonly string[]): RouteMatch<Handler> {
    const candidates = this.byLength.get(segments.length);
    if (candidates === undefined) return { kind: "not-found" };
    let allow: string[] | undefined;
    for (const route of candidates) {
      const params = capture(route.literals, segments);
      if (params === undefined) continue;
      if (route.method === method) return { kind: "found", handler: route.handler, params };
      allow ??= [];
      if (!allow.includes(route.method)) allow.push(route.method);
    }
    return allow === undefined ? { kind: "not-found" } : { kind: "method-not-allowed", allow };
  }
}

function capture(
  literals: readonly (string | undefined)[],
  segments: readonly string[],
): string[] | undefined {
  const params: string[] = [];
  for (let i = 0; i < literals.length; i++) {
    const literal = literals[i];
    const segment = segments[i]!;
    if (literal === undefined) {
      // An empty segment (`/v1/accounts//balances`) never names a resource.
      if (segment.length === 0) return undefined;
      params.push(segment);
    } else if (literal !== segment) {
      return undefined;
    }
  }
  return params;
}
