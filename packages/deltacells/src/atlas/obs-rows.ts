/**
 * A tile's obs rows, assembled from the inputs its cells come from: each input's values are read by
 * row range and moved into the atlas's columns (categories to global codes, numbers to the
 * promoted type, a column an input lacks as nulls, the source column as the input's name), then
 * handed to the shard writer in the representation one input's conversion gives it, so one input
 * converts to the same bytes either way. Memory is one tile of rows per tile in flight.
 */
import type {
  ColumnTableReader,
  DatasetSource,
  SourceEmbedding,
  TableColumnReader,
} from "../dataset/source.js";
import { numericRows } from "../obs/plan.js";
import { openObs } from "../obs/prepare.js";
import { newNumericArray, type ObsNumericType } from "../obs/schema.js";
import type { AtlasObsColumn } from "./obs-merge.js";
import type { AtlasPlan } from "./plan.js";
import { invalidInput } from "./scan.js";
import { copyNumeric, positions, vocabularyMap } from "./values.js";

type Numbers = ArrayLike<number | bigint> & { [i: number]: number | bigint };

/** One column's buffer for a tile. */
type Buffer =
  | { kind: "string"; values: (string | null)[] }
  | { kind: "category"; codes: Int32Array }
  | { kind: "numeric"; type: ObsNumericType; values: Numbers; nulls: Uint8Array }
  | { kind: "bool"; values: Uint8Array; nulls: Uint8Array };

/** The obs rows of one tile being filled. */
export class ObsTileRows {
  count = 0;
  readonly buffers: Buffer[];

  constructor(
    readonly columns: AtlasObsColumn[],
    capacity: number,
  ) {
    this.buffers = columns.map(({ schema }): Buffer => {
      switch (schema.kind) {
        case "category":
          return { kind: "category", codes: new Int32Array(capacity).fill(-1) };
        case "numeric": {
          const type = schema.arrow_type as ObsNumericType;
          return {
            kind: "numeric",
            type,
            values: newNumericArray(type, capacity),
            nulls: new Uint8Array(capacity).fill(1),
          };
        }
        case "bool":
          return { kind: "bool", values: new Uint8Array(capacity), nulls: new Uint8Array(capacity).fill(1) };
        default:
          return { kind: "string", values: new Array<string | null>(capacity).fill(null) };
      }
    });
  }

  /** The tile's columns as the shard writer takes them. */
  data(): ArrayLike<unknown>[] {
    const n = this.count;
    return this.buffers.map((b) => {
      switch (b.kind) {
        case "string":
          return b.values.length === n ? b.values : b.values.slice(0, n);
        case "category":
          return b.codes.subarray(0, n);
        case "numeric":
          return numericRows(b.type, b.values, b.nulls, 0, n);
        default:
          return Array.from({ length: n }, (_, i) => (b.nulls[i] ? null : b.values[i] !== 0));
      }
    });
  }
}

/** Fills rows `[a, b)` of one input into column `k` of a tile, from offset `o`. */
type Fill = (tile: ObsTileRows, k: number, a: number, b: number, o: number) => Promise<void>;

function columnFill(
  location: string,
  column: AtlasObsColumn,
  src: TableColumnReader | undefined,
): Fill | undefined {
  if (src === undefined) return undefined;
  const { schema } = column;
  const changed = () =>
    invalidInput(
      location,
      `obs column ${JSON.stringify(schema.name)} is ${src.kind} here, which does not fit the plan's ${schema.kind} column; the input changed since it was scanned: make the plan again`,
      { field: schema.name },
    );
  if (src.kind === "category") {
    const { categories } = src;
    if (schema.kind === "category") {
      const map = vocabularyMap(categories, positions(schema.categories!));
      return async (tile, k, a, b, o) => {
        const codes = await src.read(a, b);
        const out = (tile.buffers[k] as Extract<Buffer, { kind: "category" }>).codes;
        for (let i = 0; i < codes.length; i++) {
          const c = codes[i]!;
          const g = c === -1 ? -1 : map[c];
          if (g === undefined || g < -1 || (c !== -1 && g === -1))
            throw invalidInput(
              location,
              `obs column ${JSON.stringify(schema.name)}: cell ${a + i} has category code ${c}, outside -1 .. ${categories.length - 1}`,
              { field: schema.name, found: c },
            );
          out[o + i] = g;
        }
      };
    }
    if (schema.kind !== "string") throw changed();
    return async (tile, k, a, b, o) => {
      const codes = await src.read(a, b);
      const out = (tile.buffers[k] as Extract<Buffer, { kind: "string" }>).values;
      for (let i = 0; i < codes.length; i++) out[o + i] = codes[i]! < 0 ? null : categories[codes[i]!]!;
    };
  }
  if (src.kind === "string") {
    if (schema.kind !== "string") throw changed();
    return async (tile, k, a, b, o) => {
      const values = await src.read(a, b);
      const out = (tile.buffers[k] as Extract<Buffer, { kind: "string" }>).values;
      for (let i = 0; i < values.length; i++) out[o + i] = values[i]!;
    };
  }
  if (src.kind !== schema.kind) throw changed();
  return async (tile, k, a, b, o) => {
    const { values, nulls } = await src.read(a, b);
    const buf = tile.buffers[k] as Extract<Buffer, { kind: "numeric" | "bool" }>;
    copyNumeric(values as Numbers, 0, b - a, buf.values, o);
    if (nulls) buf.nulls.set(nulls.subarray(0, b - a), o);
    else buf.nulls.fill(0, o, o + b - a);
  };
}

function embeddingFill(
  column: Extract<AtlasObsColumn, { role: "embedding" }>,
  e: SourceEmbedding | undefined,
): Fill | undefined {
  if (e?.values === undefined) return undefined;
  const values = e.values;
  const width = e.shape[1]!;
  const j = column.j;
  return async (tile, k, a, b, o) => {
    const buf = tile.buffers[k] as Extract<Buffer, { kind: "numeric" }>;
    for (let i = a; i < b; i++) {
      buf.values[o + i - a] = Number(values[i * width + j]!);
      buf.nulls[o + i - a] = 0;
    }
  };
}

/** One input's cell table opened for a task: what fills each of the atlas's columns. */
export class InputObs {
  private constructor(
    private readonly fills: (Fill | undefined)[],
    private readonly index: ColumnTableReader["index"] | undefined,
  ) {}

  /** The readers of input `input` of `plan`, opened on `source`. */
  static async open(source: DatasetSource, plan: AtlasPlan, input: number): Promise<InputObs> {
    const obs = plan.obs!;
    const keys = [...new Set(obs.columns.flatMap((c) => (c.role === "embedding" ? [c.key] : [])))];
    const opened = await openObs(
      source,
      { exclude: obs.exclude, obsm: keys, maxCategories: obs.max_categories },
      true,
    );
    const embeddings = new Map(opened?.embeddings ?? []);
    const byName = new Map((opened?.table.columns ?? []).map((c) => [c.name, c]));
    const fills = obs.columns.map((c): Fill | undefined => {
      switch (c.role) {
        case "index":
          return undefined;
        case "column":
          return columnFill(source.location, c, byName.get(c.schema.name));
        case "embedding":
          // A dataset appended to holds its embeddings as columns already.
          return (
            embeddingFill(c, embeddings.get(c.key)) ??
            columnFill(source.location, c, byName.get(c.schema.name))
          );
        default: {
          // A dataset appended to has its cells' sources in its own column; an input is one source.
          const own = byName.get(c.schema.name);
          if (own !== undefined) return columnFill(source.location, c, own);
          const name = plan.inputs[input]!.name;
          const code = c.schema.categories?.indexOf(name) ?? -1;
          return async (tile, k, a, b, o) => {
            const buf = tile.buffers[k]!;
            if (buf.kind === "category") buf.codes.fill(code, o, o + b - a);
            else if (buf.kind === "string") buf.values.fill(name, o, o + b - a);
          };
        }
      }
    });
    return new InputObs(fills, opened?.table.index);
  }

  /** Rows `[a, b)` of this input into `tile`, after the rows it holds. */
  async fill(tile: ObsTileRows, a: number, b: number): Promise<void> {
    const o = tile.count;
    const index = tile.buffers[0] as Extract<Buffer, { kind: "string" }>;
    if (this.index) {
      const names = await this.index(a, b);
      for (let i = 0; i < names.length; i++) index.values[o + i] = names[i]!;
    } else {
      // An input without a cell table (a Matrix Market file): its cells are named by position, as anndata names them.
      for (let i = a; i < b; i++) index.values[o + i - a] = String(i);
    }
    for (let k = 1; k < this.fills.length; k++) await this.fills[k]?.(tile, k, a, b, o);
    tile.count += b - a;
  }
}
