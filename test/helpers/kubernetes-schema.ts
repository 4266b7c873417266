/**
 * Kubernetes objects checked against the API's OpenAPI schema, as kubeconform -strict does:
 * kubernetes-models carries the schema of every built-in kind, compiled to ajv validators (types,
 * required fields, enums, formats). The API server also refuses fields it does not know (kubectl
 * apply's default --validate=strict), which those validators let through; every object is
 * therefore watched while it is validated, and a field the validator never looked at is unknown.
 */

interface Validated {
  validate(): void;
}
type ModelClass = { new (data?: unknown): Validated; readonly kind: string };

/** The kubernetes-models module of each apiVersion deploy/kubernetes uses; another is reported unknown. */
const MODULES: Readonly<Record<string, () => Promise<Record<string, unknown>>>> = {
  v1: () => import("kubernetes-models/v1"),
  "apps/v1": () => import("kubernetes-models/apps/v1"),
  "autoscaling/v2": () => import("kubernetes-models/autoscaling/v2"),
  "batch/v1": () => import("kubernetes-models/batch/v1"),
  "networking.k8s.io/v1": () => import("kubernetes-models/networking.k8s.io/v1"),
  "policy/v1": () => import("kubernetes-models/policy/v1"),
  "rbac.authorization.k8s.io/v1": () => import("kubernetes-models/rbac.authorization.k8s.io/v1"),
};

async function modelOf(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  const module = await MODULES[apiVersion]?.();
  const model = module?.[kind] as ModelClass | undefined;
  return typeof model === "function" && model.kind === kind ? model : undefined;
}

interface Watched {
  readonly proxy: unknown;
  /** Per object (by JSON pointer): its keys, the keys read, and whether its keys were listed (a map). */
  readonly objects: Map<string, { keys: string[]; read: Set<string>; listed: boolean }>;
}

function watch(value: unknown, pointer: string, objects: Watched["objects"]): unknown {
  if (Array.isArray(value)) return value.map((v, i) => watch(v, `${pointer}/${i}`, objects));
  if (value === null || typeof value !== "object") return value;
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) copy[k] = watch(v, `${pointer}/${k}`, objects);
  const seen = { keys: Object.keys(copy), read: new Set<string>(), listed: false };
  objects.set(pointer, seen);
  return new Proxy(copy, {
    get(target, key, receiver) {
      if (typeof key === "string") seen.read.add(key);
      return Reflect.get(target, key, receiver);
    },
    // A validator lists the keys of a map (labels, data, matchLabels) to check each value.
    ownKeys(target) {
      seen.listed = true;
      return Reflect.ownKeys(target);
    },
  });
}

/** What is wrong with one object (nothing when the API would take it). */
export async function schemaProblems(object: unknown): Promise<string[]> {
  const { apiVersion, kind } = (object ?? {}) as { apiVersion?: unknown; kind?: unknown };
  const name = `${String(kind)} ${JSON.stringify((object as { metadata?: { name?: unknown } })?.metadata?.name)}`;
  if (typeof apiVersion !== "string" || typeof kind !== "string") return [`${name}: no apiVersion and kind`];
  const model = await modelOf(apiVersion, kind);
  if (!model) return [`${name}: no schema for ${apiVersion} ${kind}`];
  const objects: Watched["objects"] = new Map();
  const proxy = watch(object, "", objects);
  const problems: string[] = [];
  try {
    model.prototype.validate.call(proxy);
  } catch (error) {
    problems.push(`${name}: ${(error as Error).message}`);
  }
  const unknown: string[] = [];
  for (const [pointer, seen] of objects) {
    if (seen.listed) continue;
    for (const key of seen.keys) if (!seen.read.has(key)) unknown.push(`${pointer}/${key}`);
  }
  // Name the outermost unknown field only, not everything under it.
  for (const field of unknown.sort())
    if (!unknown.some((u) => field.startsWith(`${u}/`))) problems.push(`${name}: unknown field ${field}`);
  return problems;
}
