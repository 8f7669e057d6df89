/**
 * AnnData (.h5ad and .zarr) as a {@link MatrixSource}, written once over a {@link Tree}.
 *
 * Understands the current on-disk encoding (encoding-type attributes: csr_matrix, csc_matrix,
 * dense arrays, dataframe, categorical, nullable-*, string-array) and the pre-0.7 one (obs/var as
 * compound datasets with categories in `uns/<col>_categories`, sparse groups with `h5sparse_*`
 * attributes, `raw.X`/`raw.var`).
 */

import { cscBlocks, csrBlocks, denseBlocks, type MatrixShape, type SparseLayout } from "./blocks.js";
import { InputError } from "./errors.js";
import { BaseSource } from "./source.js";
import { attrString, joinPath, type Tree, type TreeArray, type TreeGroup, toNumbers } from "./tree.js";
import type {
  ColumnTable,
  InputFormat,
  MatrixSource,
  NumericValues,
  OpenInputOptions,
  RowBlock,
  TableColumn,
} from "./types.js";

type Layout = SparseLayout | { kind: "dense"; array: TreeArray };

/** Opens the AnnData matrix chosen by `opts` (X, a layer, or raw) of an opened tree. */
export async function openAnnData(
  tree: Tree,
  format: InputFormat,
  opts: OpenInputOptions,
): Promise<MatrixSource> {
  const loc = tree.location;
  if (opts.layer !== undefined && opts.raw) {
    throw new InputError("MalformedInput", `${loc}: choose either a layer or raw, not both.`, {
      location: loc,
    });
  }
  const legacyRaw = (await tree.get("raw.X")) !== undefined;
  const candidates =
    opts.layer !== undefined
      ? [`layers/${opts.layer}`]
      : opts.raw
        ? legacyRaw
          ? ["raw.X"]
          : ["raw/X"]
        : ["X"];
  const matrixPath = candidates[0] as string;
  const node = await tree.get(matrixPath);
  const others = await otherMatrices(tree, matrixPath);
  if (node === undefined) {
    const what = opts.layer !== undefined ? `layer ${JSON.stringify(opts.layer)}` : opts.raw ? "raw/X" : "X";
    throw new InputError(
      "MissingMatrix",
      `${loc}: has no ${what}.` +
        (others.length > 0 ? ` Available: ${others.join(", ")}.` : " It holds no other matrix either."),
      { location: loc, object: matrixPath },
    );
  }
  const layout = await layoutOf(tree, matrixPath);
  const shape = layout.kind === "dense" ? layout.array.shape : await sparseShape(tree, layout.group);
  const [nCells, nGenes] = shape as [number, number];
  const varPath = opts.raw ? (legacyRaw ? "raw.var" : "raw/var") : "var";
  return new AnnDataSource(tree, format, matrixPath, nCells, nGenes, layout, varPath, others);
}

/** The other matrices of the file, as CLI options, for error messages. */
async function otherMatrices(tree: Tree, current: string): Promise<string[]> {
  const out: string[] = [];
  const layers = await tree.get("layers");
  if (layers?.kind === "group") {
    for (const name of await layers.keys()) if (`layers/${name}` !== current) out.push(`--layer ${name}`);
  }
  for (const raw of ["raw/X", "raw.X"]) {
    if (raw !== current && (await tree.get(raw)) !== undefined) out.push("--raw");
  }
  return out;
}

async function layoutOf(tree: Tree, path: string): Promise<Layout> {
  const loc = tree.location;
  const node = await tree.get(path);
  if (node?.kind === "array") {
    if (node.shape.length !== 2) {
      throw new InputError(
        "MalformedInput",
        `${loc}: ${path} is a ${node.shape.length}-d array, expected 2-d.`,
        {
          location: loc,
          object: path,
        },
      );
    }
    return { kind: "dense", array: node };
  }
  const attrs = (await node?.attrs()) ?? {};
  const enc = attrString(attrs["encoding-type"]) ?? attrString(attrs.h5sparse_format);
  const kind =
    enc === "csr_matrix" || enc === "csr" ? "csr" : enc === "csc_matrix" || enc === "csc" ? "csc" : undefined;
  if (kind === undefined) {
    throw new InputError(
      "Unsupported",
      `${loc}: ${path} has encoding ${JSON.stringify(enc ?? null)}; expected a dense array, csr_matrix or csc_matrix.`,
      { location: loc, object: path },
    );
  }
  const part = async (name: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, name));
    if (a?.kind !== "array") {
      throw new InputError("MalformedInput", `${loc}: sparse matrix ${path} has no ${name} array.`, {
        location: loc,
        object: joinPath(path, name),
      });
    }
    return a;
  };
  return {
    kind,
    group: path,
    indptr: await part("indptr"),
    indices: await part("indices"),
    data: await part("data"),
  };
}

async function sparseShape(tree: Tree, path: string): Promise<number[]> {
  const attrs = (await (await tree.get(path))?.attrs()) ?? {};
  const raw = attrs.shape ?? attrs.h5sparse_shape;
  const shape = raw === undefined ? [] : Array.from(raw as ArrayLike<number | bigint>, Number);
  if (shape.length !== 2 || !shape.every((n) => Number.isInteger(n) && n >= 0)) {
    throw new InputError(
      "MalformedInput",
      `${tree.location}: sparse matrix ${path} has no valid shape attribute.`,
      {
        location: tree.location,
        object: path,
      },
    );
  }
  return shape;
}

class AnnDataSource extends BaseSource {
  constructor(
    private readonly tree: Tree,
    readonly format: InputFormat,
    readonly matrixPath: string,
    readonly nCells: number,
    readonly nGenes: number,
    private readonly layout: Layout,
    private readonly varPath: string,
    others: string[],
  ) {
    super();
    this.suggestions = others;
  }

  get location(): string {
    return this.tree.location;
  }

  protected readVar(): Promise<ColumnTable> {
    return readDataFrame(this.tree, this.varPath, this.nGenes);
  }

  protected readObs(): Promise<ColumnTable> {
    return readDataFrame(this.tree, "obs", this.nCells);
  }

  protected blocks(blockCells: number, signal?: AbortSignal): AsyncGenerator<RowBlock> {
    const m: MatrixShape = { location: this.location, nCells: this.nCells, nGenes: this.nGenes };
    if (this.layout.kind === "dense") return denseBlocks(m, this.layout.array, blockCells, signal);
    if (this.layout.kind === "csr") return csrBlocks(m, this.layout, blockCells, signal);
    return cscBlocks(m, this.layout, blockCells, signal);
  }

  async close(): Promise<void> {
    await this.tree.close();
  }
}

// ---------------------------------------------------------------------------------------------
// data frames

/** Reads obs or var: the current group encoding or the legacy compound dataset. */
export async function readDataFrame(tree: Tree, path: string, nRows: number): Promise<ColumnTable> {
  const loc = tree.location;
  const node = await tree.get(path);
  if (node === undefined) {
    // anndata allows a missing raw/var only in broken files; an absent obs/var means no names
    return { indexName: null, index: Array.from({ length: nRows }, (_, i) => String(i)), columns: [] };
  }
  const table = node.kind === "array" ? await legacyFrame(tree, node) : await groupFrame(tree, node);
  if (table.index.length !== nRows) {
    throw new InputError(
      "MalformedInput",
      `${loc}: ${path} has ${table.index.length} rows, but the matrix has ${nRows} along that axis.`,
      { location: loc, object: path },
    );
  }
  return table;
}

async function groupFrame(tree: Tree, group: TreeGroup): Promise<ColumnTable> {
  const loc = tree.location;
  const attrs = await group.attrs();
  const indexKey = attrString(attrs._index) ?? "_index";
  const indexNode = await tree.get(joinPath(group.path, indexKey));
  if (indexNode?.kind !== "array") {
    throw new InputError(
      "MalformedInput",
      `${loc}: data frame ${group.path} has no index array ${indexKey}.`,
      {
        location: loc,
        object: group.path,
      },
    );
  }
  const index = await indexNode.readStrings();
  const order = attrs["column-order"];
  const names =
    order === undefined || order === null
      ? []
      : typeof order === "string"
        ? [order]
        : Array.from(order as ArrayLike<unknown>, (x) => attrString(x) ?? String(x));
  const columns: TableColumn[] = [];
  for (const name of names) columns.push(await readColumn(tree, joinPath(group.path, name), name));
  return { indexName: indexKey === "_index" ? null : indexKey, index, columns };
}

async function readColumn(tree: Tree, path: string, name: string): Promise<TableColumn> {
  const loc = tree.location;
  const node = await tree.get(path);
  if (node === undefined) {
    throw new InputError("MalformedInput", `${loc}: column ${path} is listed in column-order but missing.`, {
      location: loc,
      object: path,
    });
  }
  if (node.kind === "array") return arrayColumn(node, name);
  const enc = attrString((await node.attrs())["encoding-type"]);
  const child = async (n: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, n));
    if (a?.kind !== "array") {
      throw new InputError("MalformedInput", `${loc}: ${enc} column ${path} has no ${n} array.`, {
        location: loc,
        object: path,
      });
    }
    return a;
  };
  if (enc === "categorical") {
    const codesRaw = toNumbers(await (await child("codes")).read());
    const catNode = await child("categories");
    const categories =
      catNode.element === "string"
        ? await catNode.readStrings()
        : Array.from(toNumbers(await catNode.read()), String);
    const ordered = Boolean((await node.attrs()).ordered);
    return { name, kind: "category", codes: Int32Array.from(codesRaw), categories, ordered };
  }
  if (enc === "nullable-integer" || enc === "nullable-boolean" || enc === "nullable-string-array") {
    const values = await child("values");
    const mask = Uint8Array.from(toNumbers(await (await child("mask")).read()));
    if (enc === "nullable-string-array") {
      const strings = await values.readStrings();
      return { name, kind: "string", values: strings.map((s, i) => (mask[i] ? null : s)) };
    }
    const v = await values.read();
    if (enc === "nullable-boolean")
      return { name, kind: "bool", values: Uint8Array.from(toNumbers(v)), nulls: mask };
    return { name, kind: "numeric", values: v, nulls: mask };
  }
  throw new InputError(
    "Unsupported",
    `${loc}: column ${path} has encoding ${JSON.stringify(enc ?? null)}, which is not supported.`,
    {
      location: loc,
      object: path,
    },
  );
}

async function arrayColumn(a: TreeArray, name: string): Promise<TableColumn> {
  if (a.element === "string") return { name, kind: "string", values: await a.readStrings() };
  const v = await a.read();
  if (a.element === "bool") return { name, kind: "bool", values: Uint8Array.from(toNumbers(v)) };
  return { name, kind: "numeric", values: v };
}

/** Pre-0.7 anndata: a compound dataset; categorical columns keep codes, categories in uns. */
async function legacyFrame(tree: Tree, a: TreeArray): Promise<ColumnTable> {
  const loc = tree.location;
  if (!a.fields) {
    throw new InputError(
      "MalformedInput",
      `${loc}: ${a.path} is neither a data frame group nor a record array.`,
      {
        location: loc,
        object: a.path,
      },
    );
  }
  const cols = await a.readCompound();
  const index = cols.get("index");
  if (!Array.isArray(index)) {
    throw new InputError(
      "MalformedInput",
      `${loc}: legacy data frame ${a.path} has no string field "index".`,
      {
        location: loc,
        object: a.path,
      },
    );
  }
  const columns: TableColumn[] = [];
  for (const f of a.fields) {
    if (f.name === "index") continue;
    const v = cols.get(f.name);
    if (v === undefined) continue;
    if (Array.isArray(v)) {
      columns.push({ name: f.name, kind: "string", values: v });
      continue;
    }
    const cats = await tree.get(`uns/${f.name}_categories`);
    if (cats?.kind === "array" && (f.kind === "int" || f.kind === "uint")) {
      const categories =
        cats.element === "string"
          ? await cats.readStrings()
          : Array.from(toNumbers(await cats.read()), String);
      columns.push({
        name: f.name,
        kind: "category",
        codes: Int32Array.from(toNumbers(v)),
        categories,
        ordered: false,
      });
    } else if (f.kind === "bool") {
      columns.push({ name: f.name, kind: "bool", values: Uint8Array.from(toNumbers(v as NumericValues)) });
    } else {
      columns.push({ name: f.name, kind: "numeric", values: v });
    }
  }
  return { indexName: "index", index, columns };
}
