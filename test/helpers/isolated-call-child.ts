/**
 * Child side of isolated-call.ts: imports a module, calls one export with the arguments sent,
 * and reports whether it returned (and what kind of value) or threw (and what class).
 * Runs under `node --import tsx`, so it can import the TypeScript sources directly.
 */

interface CallMessage {
  readonly id: number;
  readonly moduleUrl: string;
  readonly exportName: string;
  readonly args: unknown[];
}

function isCallMessage(value: unknown): value is CallMessage {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  return (
    typeof m.id === "number" &&
    typeof m.moduleUrl === "string" &&
    typeof m.exportName === "string" &&
    Array.isArray(m.args)
  );
}

/** A coarse description of a result, enough for the parent to tell a value from a rejection. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "object" && value.constructor?.name === "Rejection") return "rejection";
  return typeof value === "object" ? "object" : typeof value;
}

process.on("message", async (message: unknown) => {
  if (!isCallMessage(message)) return;
  const { id } = message;
  try {
    const module: Record<string, unknown> = await import(message.moduleUrl);
    const fn = module[message.exportName];
    if (typeof fn !== "function") throw new TypeError(`${message.exportName} is not a function export`);
    const result: unknown = fn(...message.args);
    process.send?.({ id, outcome: "returned", kind: kindOf(result) });
  } catch (error) {
    const errorClass = error instanceof Error ? error.constructor.name : typeof error;
    const text = error instanceof Error ? error.message : String(error);
    process.send?.({ id, outcome: "threw", errorClass, message: text.slice(0, 300) });
  }
});

// The parent going away ends the child (unless it is stuck in a synchronous loop: then the parent kills it).
process.on("disconnect", () => process.exit(0));
