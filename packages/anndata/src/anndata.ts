/**
 * AnnData (.h5ad and .zarr) as a {@link MatrixSource}, written once over a {@link Tree}.
 *
 * Understands the current on-disk encoding (encoding-type attributes: csr_matrix, csc_matrix,
 * dense arrays, dataframe, categorical, nullable-*, string-array) and the pre-0.7 one (obs/var as
 * compound datasets with categories in `uns/<col>_categories`, sparse groups with `h5sparse_*`
 * attributes, `raw.X`/`raw.var`).
 */

import {
  type BlockSize,
  type CellRange,
  cscBlocks,
  csrBlocks,
  denseBlocks,
  type MatrixShape,
  type SparseLayout,
} from "./blocks.js";
import { countProblem } from "./canonical.js";
import { frameReader, readDataFrame, rowName } from "./dataframe.js";
import { AnndataError, objectIn } from "./errors.js";
import { obsmKeys, obsmShape, readObsmEntry } from "./obsm.js";
import { BaseSource } from "./source.js";
import { attrString, joinPath, type Tree, type TreeArray, toNumbers } from "./tree.js";
import type {
  CanonicalRowBlock,
  ColumnTable,
  ColumnTableReader,
  Embedding,
  InputFormat,
  InputInventory,
  MatrixSource,
  OpenInputOptions,
} from "./types.js";

type Layout = SparseLayout | { kind: "dense"; array: TreeArray };

/** How many stored values of another matrix a refusal samples before suggesting it. */
const SAMPLE_VALUES = 4096;

/** Opens the AnnData matrix chosen by `opts` (X, a layer, or raw) of an opened tree. */
export async function openAnnData(
  tree: Tree,
  format: InputFormat,
  opts: OpenInputOptions,
): Promise<MatrixSource> {
  const loc = tree.location;
  if (opts.layer !== undefined && opts.raw) {
    throw new AnndataError(`${loc}: choose either a layer or raw, not both.`, {
      tag: "MalformedInput",
      object: loc,
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
    throw new AnndataError(
      `${loc}: has no ${what}.` +
        (others.length > 0 ? ` Available: ${others.join(", ")}.` : " It holds no other matrix either."),
      {
        tag: "MissingMatrix",
        object: objectIn(loc, matrixPath),
        hint: others.length ? { kind: "other-matrices", matrices: others } : undefined,
      },
    );
  }
  const layout = await layoutOf(tree, matrixPath);
  const shape = layout.kind === "dense" ? layout.array.shape : await sparseShape(tree, layout.group);
  const [nCells, nGenes] = shape as [number, number];
  const varPath = opts.raw ? (legacyRaw ? "raw.var" : "raw/var") : "var";
  return new AnnDataSource(tree, format, matrixPath, nCells, nGenes, layout, varPath, others);
}

/** The other matrices of the file ("layers/NAME", "raw/X"), for error messages and hints. */
async function otherMatrices(tree: Tree, current: string): Promise<string[]> {
  const out: string[] = [];
  const layers = await tree.get("layers");
  if (layers?.kind === "group") {
    for (const name of await layers.keys()) if (`layers/${name}` !== current) out.push(`layers/${name}`);
  }
  for (const raw of ["raw/X", "raw.X"]) {
    if (raw !== current && (await tree.get(raw)) !== undefined) out.push(raw);
  }
  return out;
}

async function layoutOf(tree: Tree, path: string): Promise<Layout> {
  const loc = tree.location;
  const node = await tree.get(path);
  if (node?.kind === "array") {
    if (node.shape.length !== 2) {
      throw new AnndataError(`${loc}: ${path} is a ${node.shape.length}-d array, expected 2-d.`, {
        tag: "MalformedInput",
        object: objectIn(loc, path),
      });
    }
    return { kind: "dense", array: node };
  }
  const attrs = (await node?.attrs()) ?? {};
  const enc = attrString(attrs["encoding-type"]) ?? attrString(attrs.h5sparse_format);
  const kind =
    enc === "csr_matrix" || enc === "csr" ? "csr" : enc === "csc_matrix" || enc === "csc" ? "csc" : undefined;
  if (kind === undefined) {
    throw new AnndataError(
      `${loc}: ${path} has encoding ${JSON.stringify(enc ?? null)}; expected a dense array, csr_matrix or csc_matrix.`,
      { tag: "Unsupported", object: objectIn(loc, path) },
    );
  }
  const part = async (name: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, name));
    if (a?.kind !== "array") {
      throw new AnndataError(`${loc}: sparse matrix ${path} has no ${name} array.`, {
        tag: "MalformedInput",
        object: objectIn(loc, joinPath(path, name)),
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
    throw new AnndataError(`${tree.location}: sparse matrix ${path} has no valid shape attribute.`, {
      tag: "MalformedInput",
      object: objectIn(tree.location, path),
    });
  }
  return shape;
}

/** AnnData groups no reader here reads: a conversion says it left them out when they hold something. */
const UNREAD_GROUPS = ["uns", "obsp", "varm", "varp"];

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
    this.alternatives = others;
  }

  get location(): string {
    return this.tree.location;
  }

  override get nnz(): number | undefined {
    return this.layout.kind === "dense" ? undefined : this.layout.data.shape[0];
  }

  protected readVar(): Promise<ColumnTable> {
    return readDataFrame(this.tree, this.varPath, this.nGenes);
  }

  protected override async firstNonCount(path: string) {
    const layout = await layoutOf(this.tree, path);
    // The first stored values (a sparse matrix's data, a dense one's first rows): enough to tell
    // a normalised or scaled matrix, whose values are almost all fractions, without reading it.
    const values =
      layout.kind === "dense"
        ? await layout.array.read(
            0,
            Math.min(
              layout.array.shape[0]!,
              Math.max(1, Math.floor(SAMPLE_VALUES / Math.max(1, layout.array.shape[1] ?? 1))),
            ),
          )
        : await layout.data.read(0, Math.min(layout.data.shape[0]!, SAMPLE_VALUES));
    const numbers = toNumbers(values);
    for (let i = 0; i < numbers.length; i++) {
      const reason = countProblem(numbers[i]!);
      if (reason !== undefined) return { reason, value: numbers[i]! };
    }
    return undefined;
  }

  protected readObs(exclude: ReadonlySet<string>): Promise<ColumnTable> {
    return readDataFrame(this.tree, "obs", this.nCells, exclude);
  }

  protected override cellName(i: number): Promise<string | undefined> {
    return rowName(this.tree, "obs", i);
  }

  protected override async readObsReader(
    exclude: ReadonlySet<string>,
  ): Promise<ColumnTableReader | undefined> {
    // zarr too: its columns are read through a window of whole chunks (see row-window.ts)
    return frameReader(this.tree, "obs", this.nCells, exclude);
  }

  override async inventory(): Promise<InputInventory> {
    const matrices = [...(this.matrixPath === "X" ? [] : ["X"]), ...this.alternatives];
    const groups: InputInventory["groups"] = [];
    // A pre-0.7 file keeps the categories of its compound obs and var in uns/<column>_categories,
    // which are read with them.
    const legacy = (await this.tree.get("obs"))?.kind === "array";
    for (const name of UNREAD_GROUPS) {
      const node = await this.tree.get(name);
      let keys = node?.kind === "group" ? await node.keys() : [];
      if (legacy && name === "uns") keys = keys.filter((k) => !k.endsWith("_categories"));
      if (keys.length > 0) groups.push({ name, keys });
    }
    const obsm: InputInventory["obsm"] = [];
    for (const key of await obsmKeys(this.tree))
      obsm.push({ key, ...(await obsmShape(this.tree, key, this.nCells)) });
    return { matrices, groups, obsm };
  }

  protected override readObsmKeys(): Promise<string[]> {
    return obsmKeys(this.tree);
  }

  protected override readObsmEntry(key: string): Promise<Embedding> {
    return readObsmEntry(this.tree, key, this.nCells);
  }

  protected blocks(
    size: BlockSize,
    signal?: AbortSignal,
    range?: CellRange,
  ): AsyncGenerator<CanonicalRowBlock> {
    const m: MatrixShape = { location: this.location, nCells: this.nCells, nGenes: this.nGenes };
    if (this.layout.kind === "dense")
      return denseBlocks(m, this.layout.array, size, signal, undefined, range);
    if (this.layout.kind === "csr") return csrBlocks(m, this.layout, size, signal, range);
    return cscBlocks(m, this.layout, size.cells, signal);
  }

  async close(): Promise<void> {
    await this.tree.close();
  }
}
