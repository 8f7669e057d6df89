/**
 * A dataset's optional gene files (`var_names.txt`, `gene_order.npy`, `var.parquet`): each read
 * under the version pin when first asked for, and checked against the manifest's `n_genes`.
 */
import type { ReadableStore } from "@deltacells/storage";
import { permutationFault } from "../codec/columns.js";
import { DeltacellsError } from "../errors.js";
import { type DatasetManifest, GENE_ORDER_KEY, VAR_NAMES_KEY, VAR_TABLE_KEY } from "./manifest.js";
import { decodeNpyInt32 } from "./npy.js";
import { pinned, rethrowChanged } from "./pin.js";
import type { ColumnTable } from "./source.js";
import { decodeVarTable } from "./var-table-read.js";

/** The gene files of one dataset; names and order are read once and kept. */
export class GeneFiles {
  private readonly store: ReadableStore;
  private readonly manifest: DatasetManifest;
  private readonly url: string;
  private readonly openedAt: number | undefined;
  private readonly nGenes: number;
  private geneNamesCache: Promise<string[] | undefined> | undefined;
  private geneOrderCache: Promise<Int32Array | undefined> | undefined;

  constructor(parts: {
    store: ReadableStore;
    manifest: DatasetManifest;
    url: string;
    openedAt: number | undefined;
  }) {
    this.store = parts.store;
    this.manifest = parts.manifest;
    this.url = parts.url;
    this.openedAt = parts.openedAt;
    this.nGenes = parts.manifest.n_genes;
  }

  private async optional(flag: boolean, key: string): Promise<Uint8Array | undefined> {
    if (!flag) return undefined;
    const bytes = await this.store
      .get(key, pinned(this.openedAt))
      .catch((err: unknown) => rethrowChanged(err, this.url, key));
    if (bytes === undefined) {
      throw new DeltacellsError(
        `${this.url}/${key} is missing although the manifest says it exists (has_* flag set): the dataset is damaged`,
        { tag: "InconsistentManifest", object: `${this.url}/${key}`, field: key },
      );
    }
    return bytes;
  }

  /** Gene names in output column order (`var_names.txt`), or undefined when the dataset has none. */
  geneNames(): Promise<string[] | undefined> {
    this.geneNamesCache ??= (async () => {
      const bytes = await this.optional(this.manifest.has_var_names, VAR_NAMES_KEY);
      if (!bytes) return undefined;
      const text = new TextDecoder().decode(bytes);
      const names = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
      if (names.length !== this.nGenes) {
        throw new DeltacellsError(
          `${this.url}/${VAR_NAMES_KEY} has ${names.length} names but the dataset has ${this.nGenes} genes`,
          {
            tag: "InconsistentManifest",
            object: `${this.url}/${VAR_NAMES_KEY}`,
            expected: this.nGenes,
            found: names.length,
          },
        );
      }
      return names;
    })();
    return this.geneNamesCache;
  }

  /** `geneOrder()[j]` is the source column of output column j, or undefined when not recorded. */
  geneOrder(): Promise<Int32Array | undefined> {
    this.geneOrderCache ??= (async () => {
      const bytes = await this.optional(this.manifest.has_gene_order, GENE_ORDER_KEY);
      if (!bytes) return undefined;
      const object = `${this.url}/${GENE_ORDER_KEY}`;
      const order = decodeNpyInt32(bytes, object);
      const fault = permutationFault(order, this.nGenes);
      if (fault !== undefined) {
        const found =
          "length" in fault ? `${fault.length} entries` : `gene_order[${fault.at}] = ${fault.value}`;
        throw new DeltacellsError(
          `${object} is not a permutation of 0 .. ${this.nGenes - 1}: ${found}; rewrite the dataset`,
          { tag: "InconsistentManifest", object, expected: `a permutation of ${this.nGenes} genes`, found },
        );
      }
      return order;
    })();
    return this.geneOrderCache;
  }

  /** The raw bytes of `var.parquet` (pandas reads them as the source's gene table), or undefined. */
  varTableBytes(): Promise<Uint8Array | undefined> {
    return this.optional(this.manifest.has_var_table, VAR_TABLE_KEY);
  }

  /** The gene table in output column order (`var.parquet`), or undefined when the dataset has none. */
  async varTable(): Promise<ColumnTable | undefined> {
    const bytes = await this.varTableBytes();
    if (!bytes) return undefined;
    const object = `${this.url}/${VAR_TABLE_KEY}`;
    const table = await decodeVarTable(bytes, object);
    if (table.index.length !== this.nGenes) {
      throw new DeltacellsError(
        `${object} has ${table.index.length} rows but the dataset has ${this.nGenes} genes`,
        { tag: "InconsistentManifest", object, expected: this.nGenes, found: table.index.length },
      );
    }
    return table;
  }
}
