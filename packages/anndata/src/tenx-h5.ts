/**
 * 10x Genomics Cell Ranger / Space Ranger HDF5 matrices as a {@link MatrixSource}.
 *
 * Both layouts store the matrix as genes x cells CSC, i.e. cells x genes CSR (indptr over
 * barcodes), so blocks are hyperslabs as for CSR h5ad:
 * - v3+ (`matrix/` with `features/`): var as scanpy's read_10x_h5 makes it: index
 *   `features/name` (gene symbols; probe names in a probe-barcode matrix), gene_ids
 *   (`features/id`, or `features/gene_id` in a probe-barcode matrix, whose `id` becomes
 *   probe_ids), feature_types, then every other dataset of `features/` in name order (e.g. genome;
 *   gene_name, filtered_probes, probe_region), booleans as booleans; obs gets filtered_barcodes;
 * - v2 (one group per genome with `genes`/`gene_names`): var index = gene_names, column gene_ids.
 *   A file with several genomes needs `genome` (scanpy raises the same way).
 * Symbols are not made unique (scanpy's var_names_make_unique is a separate, optional step): the
 * var table keeps them as in the file, with gene_ids as the unique key.
 */

import { type BlockSize, type CellRange, csrBlocks, type MatrixShape, type SparseLayout } from "./blocks.js";
import { AnndataError, objectIn } from "./errors.js";
import { BaseSource } from "./source.js";
import { joinPath, type Tree, type TreeArray, toNumbers } from "./tree.js";
import type { CanonicalRowBlock, ColumnTable, TableColumn } from "./types.js";

export async function openTenxH5(tree: Tree, genome: string | undefined): Promise<TenxH5Source> {
  const loc = tree.location;
  const root = await tree.get("");
  const keys = root?.kind === "group" ? await root.keys() : [];
  let group: string;
  let v3: boolean;
  if (keys.includes("matrix")) {
    group = "matrix";
    v3 = true;
  } else {
    const genomes: string[] = [];
    for (const k of keys) {
      const g = await tree.get(k);
      if (g?.kind === "group" && (await g.keys()).includes("genes")) genomes.push(k);
    }
    if (genome !== undefined) {
      if (!genomes.includes(genome)) {
        throw new AnndataError(
          `${loc}: no genome ${JSON.stringify(genome)}; the file has ${genomes.join(", ") || "none"}.`,
          { tag: "MissingMatrix", object: objectIn(loc, genome) },
        );
      }
      group = genome;
    } else if (genomes.length === 1) {
      group = genomes[0] as string;
    } else {
      throw new AnndataError(
        genomes.length === 0
          ? `${loc}: not a 10x HDF5 matrix (no matrix/ group and no genome group with genes).`
          : `${loc}: the file holds several genomes (${genomes.join(", ")}): choose one of them.`,
        {
          tag: "MissingMatrix",
          object: loc,
          hint: genomes.length ? { kind: "choose-genome", genomes } : undefined,
        },
      );
    }
    v3 = false;
  }
  if (v3 && genome !== undefined) {
    // v3 files mix genomes in one matrix (features/genome); selecting is not supported
    throw new AnndataError(
      `${loc}: the genome option applies to Cell Ranger v2 files only; a v3 file has one matrix for every genome.`,
      { tag: "Unsupported", object: loc, hint: { kind: "drop-option", option: "genome" } },
    );
  }
  const arr = async (name: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(group, name));
    if (a?.kind !== "array") {
      throw new AnndataError(`${loc}: 10x matrix ${group} has no ${name} dataset.`, {
        tag: "MalformedInput",
        object: objectIn(loc, joinPath(group, name)),
      });
    }
    return a;
  };
  const shape = Array.from(toNumbers(await (await arr("shape")).read()));
  if (shape.length !== 2) {
    throw new AnndataError(`${loc}: ${group}/shape is not 2 numbers.`, {
      tag: "MalformedInput",
      object: objectIn(loc, `${group}/shape`),
    });
  }
  const [nGenes, nCells] = shape as [number, number];
  const layout: SparseLayout = {
    kind: "csr",
    group,
    indptr: await arr("indptr"),
    indices: await arr("indices"),
    data: await arr("data"),
  };
  return new TenxH5Source(tree, v3 ? "matrix" : `${group}/`, group, v3, nCells, nGenes, layout);
}

export class TenxH5Source extends BaseSource {
  readonly format = "10x-h5" as const;

  constructor(
    private readonly tree: Tree,
    readonly matrixPath: string,
    private readonly group: string,
    private readonly v3: boolean,
    readonly nCells: number,
    readonly nGenes: number,
    private readonly layout: SparseLayout,
  ) {
    super();
  }

  get location(): string {
    return this.tree.location;
  }

  override get nnz(): number {
    return this.layout.data.shape[0] as number;
  }

  private async strings(path: string, n: number): Promise<string[]> {
    const a = await this.tree.get(path);
    if (a?.kind !== "array" || a.shape[0] !== n) {
      throw new AnndataError(`${this.location}: ${path} is missing or does not have ${n} entries.`, {
        tag: "MalformedInput",
        object: objectIn(this.location, path),
      });
    }
    return a.readStrings();
  }

  protected async readVar(): Promise<ColumnTable> {
    const n = this.nGenes;
    if (!this.v3) {
      const index = await this.strings(`${this.group}/gene_names`, n);
      const ids = await this.strings(`${this.group}/genes`, n);
      return { indexName: null, index, columns: [{ name: "gene_ids", kind: "string", values: ids }] };
    }
    const f = `${this.group}/features`;
    const index = await this.strings(`${f}/name`, n);
    const group = await this.tree.get(f);
    const names = group?.kind === "group" ? await group.keys() : [];
    // A probe-barcode matrix (Visium, Flex): `id` names the probe, `gene_id` the gene it targets.
    const probes = names.includes("gene_id");
    const columns: TableColumn[] = [
      {
        name: "gene_ids",
        kind: "string",
        values: await this.strings(`${f}/${probes ? "gene_id" : "id"}`, n),
      },
    ];
    if (probes) columns.push({ name: "probe_ids", kind: "string", values: await this.strings(`${f}/id`, n) });
    columns.push({
      name: "feature_types",
      kind: "string",
      values: await this.strings(`${f}/feature_type`, n),
    });
    const taken = new Set(["name", "feature_type", "id", "gene_id", "_all_tag_keys"]);
    // h5py lists a group's members in name order, and scanpy appends them in that order.
    for (const name of [...names].sort()) {
      if (taken.has(name)) continue;
      const column = await this.column(`${f}/${name}`, name, n);
      if (column) columns.push(column);
    }
    return { indexName: null, index, columns };
  }

  /**
   * A per-row dataset as scanpy reads it (`astype(bool)` for booleans, else `astype(str)`);
   * undefined for a subgroup (e.g. `target_sets`), which scanpy skips.
   */
  private async column(path: string, name: string, n: number): Promise<TableColumn | undefined> {
    const a = await this.tree.get(path);
    if (a?.kind !== "array") return undefined;
    if (a.shape.length !== 1 || a.shape[0] !== n) {
      throw new AnndataError(
        `${this.location}: ${path} has shape [${a.shape.join(", ")}], not one entry per row (${n}).`,
        { tag: "MalformedInput", object: objectIn(this.location, path) },
      );
    }
    if (a.element === "bool")
      return { name, kind: "bool", values: Uint8Array.from(toNumbers(await a.read())) };
    if (a.element === "string") return { name, kind: "string", values: await a.readStrings() };
    const numbers = toNumbers(await a.read());
    return { name, kind: "string", values: Array.from(numbers, (v) => String(v)) };
  }

  protected async readObs(): Promise<ColumnTable> {
    const index = await this.strings(`${this.group}/barcodes`, this.nCells);
    const filtered = this.v3
      ? await this.column(`${this.group}/filtered_barcodes`, "filtered_barcodes", this.nCells)
      : undefined;
    return { indexName: null, index, columns: filtered ? [filtered] : [] };
  }

  protected blocks(
    size: BlockSize,
    signal?: AbortSignal,
    range?: CellRange,
  ): AsyncGenerator<CanonicalRowBlock> {
    const m: MatrixShape = { location: this.location, nCells: this.nCells, nGenes: this.nGenes };
    return csrBlocks(m, this.layout, size, signal, range);
  }

  async close(): Promise<void> {
    await this.tree.close();
  }
}
