// Module hooks for bench processes: an import that resolves into src/ loads the built file in
// dist/ instead (src/x/y.ts -> dist/x/y.js), so that what a bench measures is what runs in
// production (tsc's output, not tsx's on-the-fly transpile). Registered by dist-loader.mjs.
const SRC = new URL("../src/", import.meta.url).href;
const DIST = new URL("../dist/", import.meta.url).href;

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (!resolved.url.startsWith(SRC)) return resolved;
  const url = DIST + resolved.url.slice(SRC.length).replace(/\.ts$/, ".js");
  return { ...resolved, url, format: "module" };
}
