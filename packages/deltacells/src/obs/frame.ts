/**
 * What `dataset.obs(columns)` returns: each column as an Arrow table with one record batch per
 * tile (memory-mapped from the local cache in Node, in memory in a browser), with the kind and
 * vocabulary of the schema, per-tile access for loaders and row access for printing.
 */
import type { Table, Vector } from "apache-arrow";
import { DeltacellsError } from "../errors.js";
import type { ObsArrowType, ObsColumnSchema, ObsKind } from "./schema.js";

/** Category labels of codes: `categories[code]`, null for -1 (missing). */
export function categoryLabels(categories: readonly string[], codes: ArrayLike<number>): (string | null)[] {
  return Array.from({ length: codes.length }, (_, i) => {
    const c = codes[i]!;
    return c < 0 ? null : (categories[c] ?? null);
  });
}

/** The shortest decimal that reads back as the same float32 (as numpy prints it): 0.1, not 0.10000000149011612. */
export function shortestFloat32(v: number): number {
  if (!Number.isFinite(v)) return v;
  for (let p = 1; p < 9; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}

/** One obs column. */
export class ObsColumn {
  readonly name: string;
  readonly kind: ObsKind;
  readonly arrowType: ObsArrowType;
  /** The global vocabulary of a category column (codes index it; -1 is missing), else null. */
  readonly categories: string[] | null;

  constructor(
    schema: ObsColumnSchema,
    /** One record batch per tile, in tile order. */
    readonly table: Table,
    /** Where the table lives: the cache file's path, or undefined when held in memory only. */
    readonly path?: string,
  ) {
    this.name = schema.name;
    this.kind = schema.kind;
    this.arrowType = schema.arrow_type;
    this.categories = schema.categories;
  }

  /**
   * The rows of tile `t` (zero-copy: a view of that tile's record batch only). For a category
   * column the values are the codes; {@link labels} turns them into strings.
   */
  tile(t: number): Vector {
    const batch = this.table.batches[t];
    if (!batch)
      throw new DeltacellsError(
        `tile ${t} does not exist: obs column ${JSON.stringify(this.name)} has ${this.table.batches.length} tiles`,
        { tag: "InvalidInput", found: t },
      );
    return batch.getChildAt(0)!;
  }

  /** Category labels of codes of this column (a category column only). */
  labels(codes: ArrayLike<number>): (string | null)[] {
    if (!this.categories)
      throw new DeltacellsError(`obs column ${JSON.stringify(this.name)} is ${this.kind}, not a category`, {
        tag: "InvalidInput",
        field: this.name,
      });
    return categoryLabels(this.categories, codes);
  }

  /** Value of global row `i` as printed: the label of a category, null when missing, numbers as numbers. */
  value(i: number): string | number | bigint | boolean | null {
    const v = this.table.getChildAt(0)?.get(i) as string | number | bigint | boolean | null | undefined;
    if (v === null || v === undefined) return null;
    if (this.categories) return (v as number) < 0 ? null : (this.categories[v as number] ?? null);
    if (this.arrowType === "float") return shortestFloat32(v as number);
    return v;
  }
}

/** The requested obs columns of a dataset. */
export class ObsFrame {
  constructor(
    readonly columns: ObsColumn[],
    readonly nCells: number,
  ) {}

  /** The column called `name`. */
  column(name: string): ObsColumn {
    const c = this.columns.find((x) => x.name === name);
    if (!c) {
      throw new DeltacellsError(
        `no obs column ${JSON.stringify(name)} was loaded; loaded: ${this.columns.map((x) => x.name).join(", ")}`,
        { tag: "NotFound", found: name },
      );
    }
    return c;
  }

  /** Rows `[a, b)` of every column as printable values (category labels, null for missing). */
  rows(a: number, b: number): (string | number | bigint | boolean | null)[][] {
    const out: (string | number | bigint | boolean | null)[][] = [];
    for (let i = a; i < b; i++) out.push(this.columns.map((c) => c.value(i)));
    return out;
  }
}
