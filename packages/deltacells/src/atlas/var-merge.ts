/**
 * The gene table of an atlas: one row per gene of the space, in first-seen order. A gene's index
 * value is the first input's that has the gene; each of its column values the first input's (in
 * input order) that has both the gene and the column, so no value any input knows is lost (what
 * `anndata.concat(..., merge="first")` gives per column, without its blanks for genes the first
 * input lacks). Columns are every input's, merged by the obs rules (promoted numbers, one
 * vocabulary); a column with a real conflict is left out with a note, since no option could
 * repair a gene table. Genes matched on a var column (`gene_ids`) have it as their index, as
 * anndata has the names it matched on, each input's own index kept as a column (named as that
 * index, `gene_symbols` when unnamed, as scanpy's `read_10x_h5(var_names="gene_ids")` does). A
 * gene declared but in no input gets its key as index and nulls elsewhere. One input's gene table
 * (matched on nothing) is kept as it is.
 */
import type { ColumnTable, TableColumn } from "../dataset/source.js";
import { newNumericArray, type ObsColumnSchema, type ObsNumericType } from "../obs/schema.js";
import type { GeneSpace } from "./genes.js";
import { geneKeys } from "./keys.js";
import { ConflictingObsColumn, mergeColumn, type Seen } from "./obs-merge.js";
import type { ColumnScan } from "./scan.js";
import { copyNumeric, positions } from "./values.js";

/** What the merge knows of an input's gene table before reading it. */
export interface VarSummary {
  location: string;
  varIndexName: string | null;
  varColumns: ColumnScan[];
}

type NumericColumn = Extract<TableColumn, { kind: "numeric" }>;

/** The column an input's own var index goes to when genes are matched on another column. */
function formerIndex(indexName: string | null): string {
  return indexName ?? "gene_symbols";
}

/** An input's gene table with `keys` (its `varKey` column) as index and its own index as a column. */
function byKey(t: ColumnTable, keys: string[], varKey: string | undefined): ColumnTable {
  if (varKey === undefined || varKey === t.indexName) return t;
  const former = formerIndex(t.indexName);
  const columns = t.columns.filter((c) => c.name !== varKey);
  if (!columns.some((c) => c.name === former))
    columns.push({ name: former, kind: "string", values: t.index });
  return { indexName: varKey, index: keys, columns };
}

/** The columns of {@link byKey}'s table, from what the scan recorded. */
function columnsByKey(inp: VarSummary, varKey: string | undefined): ColumnScan[] {
  if (varKey === undefined || varKey === inp.varIndexName) return inp.varColumns;
  const former = formerIndex(inp.varIndexName);
  const columns = inp.varColumns.filter((c) => c.name !== varKey);
  if (!columns.some((c) => c.name === former))
    columns.push({
      name: former,
      kind: "string",
      arrowType: "string",
      categories: null,
      ordered: false,
      nullable: false,
    });
  return columns;
}

/** A column of `n` missing values, to be filled gene by gene. */
function emptyColumn(schema: ObsColumnSchema, n: number, nullable: boolean, ordered: boolean): TableColumn {
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
function label(col: TableColumn, row: number): string | null {
  if (col.kind === "category") {
    const c = col.codes[row]!;
    return c < 0 ? null : col.categories[c]!;
  }
  return col.kind === "string" ? col.values[row]! : null;
}

/** Copies into `col` the value of row `rows[u]` of `src` for each gene `u` not `filled` yet (-1: the input lacks it). */
function fillColumn(col: TableColumn, src: TableColumn, rows: Int32Array, filled: Uint8Array): number {
  let n = 0;
  const where = col.kind === "category" ? positions(col.categories) : undefined;
  for (let u = 0; u < rows.length; u++) {
    const r = rows[u]!;
    if (r < 0 || filled[u]) continue;
    filled[u] = 1;
    n++;
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
  return n;
}

/** A filled column without a null mask where nothing is missing (as the readers hand columns over). */
function finishColumn(col: TableColumn): TableColumn {
  if ((col.kind === "numeric" || col.kind === "bool") && !col.nullable && !col.nulls!.some((x) => x !== 0)) {
    const { nulls: _, ...rest } = col;
    return rest as TableColumn;
  }
  return col;
}

/**
 * The atlas's gene table over `space` (see the module comment). `inputs` describe the inputs'
 * gene tables; `table(i)` reads input i's, one at a time, each once; `notes` receives what was
 * left out, and `filledBy[i]` is set when input i gave any value.
 */
export async function mergeVar(
  space: GeneSpace,
  inputs: VarSummary[],
  table: (i: number) => Promise<ColumnTable>,
  varKey: string | undefined,
  notes: string[],
  filledBy?: Uint8Array,
): Promise<ColumnTable> {
  if (!space.matched) return table(0);
  const n = space.keys.length;
  const uses = new Map<string, Seen[]>();
  for (const inp of inputs) {
    for (const c of columnsByKey(inp, varKey)) {
      const list = uses.get(c.name) ?? [];
      if (list.length === 0) uses.set(c.name, list);
      list.push({ location: inp.location, scan: c });
    }
  }
  const columns: TableColumn[] = [];
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
  const filled = columns.map(() => new Uint8Array(n));
  const index = space.keys.slice();
  const where = positions(space.keys);
  const rows = new Int32Array(n);
  for (let i = 0; i < inputs.length; i++) {
    const own = await table(i);
    const keys = geneKeys(own, varKey, inputs[i]!.location);
    const t = byKey(own, keys, varKey);
    rows.fill(-1);
    keys.forEach((k, r) => {
      const u = where.get(k);
      if (u !== undefined) rows[u] = r;
    });
    for (let u = 0; u < n; u++) if (space.firstOf[u] === i) index[u] = t.index[space.rowOf[u]!]!;
    columns.forEach((col, k) => {
      const src = t.columns.find((c) => c.name === col.name);
      if (src !== undefined && fillColumn(col, src, rows, filled[k]!) > 0 && filledBy) filledBy[i] = 1;
    });
  }
  const first = space.firstOf.find((i) => i >= 0) ?? 0;
  const indexName = varKey ?? inputs[first]!.varIndexName;
  return { indexName, index, columns: columns.map(finishColumn) };
}
