/**
 * Table-driven tests named by their rows: `it.each(named(ROWS))("%s", (_name, row) => …)`.
 * (`$name` in a title would be quoted and cut after 40 characters.)
 */
export function named<Row extends { readonly name: string }>(rows: readonly Row[]): [string, Row][] {
  return rows.map((row) => [row.name, row]);
}
