/**
 * A bare 2-d zarr array (cells x genes) at the root ("zarr-array"): no names, no cell table.
 * A group given this format is read as the AnnData group it is. Browser-safe.
 */

import { openAnnData } from "./anndata.js";
import { type BlockSize, type CellRange, denseBlocks, type MatrixShape } from "./blocks.js";
import { AnndataError } from "./errors.js";
import { BaseSource } from "./source.js";
import type { Tree, TreeArray } from "./tree.js";
import type { CanonicalRowBlock, ColumnTable, MatrixSource, OpenInputOptions } from "./types.js";

export async function openZarrArray(tree: Tree, opts: OpenInputOptions): Promise<MatrixSource> {
  const root = await tree.get("");
  if (root?.kind === "group") return openAnnData(tree, "anndata-zarr", opts);
  if (root?.kind !== "array" || root.shape.length !== 2) {
    throw new AnndataError(`${tree.location}: expected a 2-d zarr array (cells x genes) at the root.`, {
      tag: "MalformedInput",
      object: tree.location,
    });
  }
  if (opts.layer !== undefined || opts.raw) {
    throw new AnndataError(`${tree.location}: a bare zarr array has no layers or raw matrix.`, {
      tag: "MissingMatrix",
      object: tree.location,
    });
  }
  return new BareArraySource(tree, root);
}

const positions = (n: number) => Array.from({ length: n }, (_, i) => String(i));

class BareArraySource extends BaseSource {
  readonly format = "zarr-array" as const;
  readonly matrixPath = "";
  override readonly unnamed = { cells: true, genes: true };
  readonly nCells: number;
  readonly nGenes: number;

  constructor(
    private readonly tree: Tree,
    private readonly array: TreeArray,
  ) {
    super();
    [this.nCells, this.nGenes] = array.shape as [number, number];
  }

  get location(): string {
    return this.tree.location;
  }

  protected async readVar(): Promise<ColumnTable> {
    return { indexName: null, index: positions(this.nGenes), columns: [] };
  }

  protected async readObs(): Promise<ColumnTable> {
    return { indexName: null, index: positions(this.nCells), columns: [] };
  }

  protected blocks(
    size: BlockSize,
    signal?: AbortSignal,
    range?: CellRange,
  ): AsyncGenerator<CanonicalRowBlock> {
    const m: MatrixShape = { location: this.location, nCells: this.nCells, nGenes: this.nGenes };
    return denseBlocks(m, this.array, size, signal, undefined, range);
  }

  async close(): Promise<void> {
    await this.tree.close();
  }
}
