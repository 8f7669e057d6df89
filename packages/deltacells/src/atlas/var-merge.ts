/**
 * The gene table of an atlas: one row per gene of the space, in first-seen order, each taken from
 * the first input that has the gene (its index value and its columns), as `anndata.concat(...,
 * merge="first")` would for a gene alone. Columns are those of the inputs that give at least one
 * gene, merged by the obs rules (promoted numbers, one vocabulary); a column with a real conflict
 * is left out with a note, since no option could repair a gene table. A gene declared but in no
 * input gets its key as index (and in the key column) and nulls elsewhere. One input's gene table
 * is kept as it is.
 */
import type { SourceColumn, SourceTable } from "../dataset/source.js";
import { newNumericArray, type ObsColumnSchema, type ObsNumericType } from "../obs/schema.js";
import type { GeneSpace } from "./genes.js";
import { ConflictingObsColumn, mergeColumn, type Seen } from "./obs-merge.js";
import type { ColumnScan } from "./scan.js";
import { copyNumeric, positions } from "./values.js";

/** What the merge knows of an input's gene table before reading it. */
export interface VarSummary {
  location: string;
  varIndexName: string | null;
  varColumns: ColumnScan[];
}

type NumericColumn = Extract<SourceColumn, { kind: "numeric" }>;

/** A column of `n` missing values, to be filled gene by gene. */
function emptyColumn(schema: ObsColumnSchema, n: number, nullable: boolean, ordered: boolean): SourceColumn {
  const name = schema.name;
  const flag = nullable ? { nullable } : {};
  switch (schema.kind) {
    case "numeric": {
      const values = newNumericArray(schema.arrow_type as ObsNumericType, n) as NumericColumn["values"];
      return { name, kind: "numeric", values, nulls: new Uint8Array(n).fill(1), ...flag };
    }
    case "bool":
      return { name, kind: "bool", values: new Uint8Array(n), nulls: new Uint8Array(n).fill(1), ...flag };
    case "category":
      return {
        name,
        kind: "category",
        codes: new Int32Array(n).fill(-1),
        categories: schema.categories!,
        ordered,
      };
    default:
      return { name, kind: "string", values: new Array<string | null>(n).fill(null), ...flag };
  }
}

/** The value of `col` at `row` as a label (for a column merged into strings or categories). */
function label(col: SourceColumn, row: number): string | null {
  if (col.kind === "category") {
    const c = col.codes[row]!;
    return c < 0 ? null : col.categories[c]!;
  }
  return col.kind === "string" ? col.values[row]! : null;
}

/** Copies the rows of the genes whose first input is `input` from its column `src`. */
function fillColumn(col: SourceColumn, src: SourceColumn, space: GeneSpace, input: number): void {
  const { firstOf, rowOf } = space;
  const where = col.kind === "category" ? positions(col.categories) : undefined;
  for (let u = 0; u < firstOf.length; u++) {
    if (firstOf[u] !== input) continue;
    const r = rowOf[u]!;
    if (col.kind === "numeric" && src.kind === "numeric") {
      if (src.nulls?.[r]) continue;
      copyNumeric(src.values, r, r + 1, col.values, u);
      col.nulls![u] = 0;
    } else if (col.kind === "bool" && src.kind === "bool") {
      if (src.nulls?.[r]) continue;
      col.values[u] = src.values[r]!;
      col.nulls![u] = 0;
    } else if (col.kind === "category") {
      const l = label(src, r);
      col.codes[u] = l === null ? -1 : where!.get(l)!;
    } else if (col.kind === "string") {
      col.values[u] = label(src, r);
    }
  }
}

/** A filled column without a null mask where nothing is missing (as the readers hand columns over). */
function finishColumn(col: SourceColumn): SourceColumn {
  if ((col.kind === "numeric" || col.kind === "bool") && !col.nullable && !col.nulls!.some((x) => x !== 0)) {
    const { nulls: _, ...rest } = col;
    return rest as SourceColumn;
  }
  return col;
}

/**
 * The atlas's gene table over `space` (see the module comment). `inputs` describe the inputs'
 * gene tables; `table(i)` reads input i's, asked only of inputs that give genes, one at a time;
 * `notes` receives what was left out.
 */
export async function mergeVar(
  space: GeneSpace,
  inputs: VarSummary[],
  table: (i: number) => Promise<SourceTable>,
  varKey: string | undefined,
  notes: string[],
): Promise<SourceTable> {
  if (!space.matched) return table(0);
  const n = space.keys.length;
  const giving = [...new Set(space.firstOf)].filter((i) => i >= 0).sort((a, b) => a - b);
  const uses = new Map<string, Seen[]>();
  for (const i of giving) {
    for (const c of inputs[i]!.varColumns) {
      const list = uses.get(c.name) ?? [];
      if (list.length === 0) uses.set(c.name, list);
      list.push({ location: inputs[i]!.location, scan: c });
    }
  }
  const columns: SourceColumn[] = [];
  for (const [name, list] of uses) {
    let schema: ObsColumnSchema;
    try {
      schema = mergeColumn(name, list, Number.POSITIVE_INFINITY);
    } catch (err) {
      if (!(err instanceof ConflictingObsColumn)) throw err;
      notes.push(
        `var column ${JSON.stringify(name)} is ${err.kinds[0]} in ${err.inputs[0]} but ${err.kinds[1]} in ${err.inputs[1]}: left out of var.parquet`,
      );
      continue;
    }
    const vocabulary = (u: Seen) => u.scan.categories?.join("\n");
    const ordered = list.every((u) => u.scan.ordered && vocabulary(u) === vocabulary(list[0]!));
    columns.push(
      emptyColumn(
        schema,
        n,
        list.some((u) => u.scan.nullable),
        ordered,
      ),
    );
  }
  const index = space.keys.slice();
  const keyColumn = varKey === undefined ? undefined : columns.find((c) => c.name === varKey);
  if (keyColumn?.kind === "string") for (let u = 0; u < n; u++) keyColumn.values[u] = space.keys[u]!;
  for (const i of giving) {
    const t = await table(i);
    for (let u = 0; u < n; u++) if (space.firstOf[u] === i) index[u] = t.index[space.rowOf[u]!]!;
    for (const col of columns) {
      const src = t.columns.find((c) => c.name === col.name);
      if (src !== undefined) fillColumn(col, src, space, i);
    }
  }
  const head = giving.length > 0 ? inputs[giving[0]!]! : inputs[0]!;
  return { indexName: head.varIndexName, index, columns: columns.map(finishColumn) };
}
