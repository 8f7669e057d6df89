// The atlas inputs of conformance/atlas_inputs.py, read back through our own readers: they differ
// the way an atlas's inputs do, and anndata's concatenation of them holds every cell's counts.
import assert from "node:assert/strict";
import { readFile, rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { type ColumnTable, openInput, type TableColumn } from "@deltacells/anndata/node";
import { type AtlasFile, type AtlasInputs, writeAtlasInputs } from "./atlas-inputs.js";

interface Read {
  var: ColumnTable;
  obs: ColumnTable;
  /** Per cell (by obs name), its nonzero counts by var name. */
  cells: Map<string, Map<string, number>>;
  total: number;
  nnz: number;
}

async function readAll(path: string): Promise<Read> {
  const src = await openInput(path);
  try {
    const vars = await src.var();
    const obs = await src.obs();
    const cells = new Map<string, Map<string, number>>();
    let total = 0;
    let nnz = 0;
    for await (const block of src.rowBlocks({ blockCells: 512 })) {
      for (let r = 0; r < block.nRows; r++) {
        const counts = new Map<string, number>();
        for (let p = block.indptr[r]!; p < block.indptr[r + 1]!; p++) {
          counts.set(vars.index[block.indices[p]!]!, block.data[p]!);
          total += block.data[p]!;
          nnz++;
        }
        cells.set(obs.index[block.rowStart + r]!, counts);
      }
    }
    return { var: vars, obs, cells, total, nnz };
  } finally {
    await src.close();
  }
}

function column(table: ColumnTable, name: string): TableColumn | undefined {
  return table.columns.find((c) => c.name === name);
}

function stringColumn(table: ColumnTable, name: string): string[] {
  const c = column(table, name);
  assert.ok(c !== undefined, `column ${name}`);
  if (c.kind === "string") return c.values.map((v) => v ?? "");
  assert.equal(c.kind, "category", `${name} holds text`);
  return Array.from(c.codes, (k) => (k < 0 ? "" : c.categories[k]!));
}

describe("the atlas inputs written by conformance/atlas_inputs.py", () => {
  let atlas: AtlasInputs;
  const read = new Map<string, Read>();
  const of = (f: AtlasFile) => read.get(f.name)!;

  before(async () => {
    atlas = await writeAtlasInputs();
    for (const f of [...atlas.inputs, atlas.conflict, atlas.expected.byIndex, atlas.expected.byGeneIds])
      read.set(f.name, await readAll(f.path));
  });
  after(async () => {
    if (atlas) await rm(atlas.dir, { recursive: true, force: true });
  });

  test("are seven inputs, six h5ad and one AnnData zarr, read by our readers with the shapes the manifest gives", () => {
    assert.equal(atlas.inputs.length, 7);
    assert.deepEqual(
      atlas.inputs.map((f) => f.format),
      ["h5ad", "h5ad", "h5ad", "zarr", "h5ad", "h5ad", "h5ad"],
    );
    for (const f of [...atlas.inputs, atlas.conflict]) {
      const r = of(f);
      assert.equal(r.obs.index.length, f.nObs, f.name);
      assert.equal(r.var.index.length, f.nVars, f.name);
      assert.equal(r.nnz, f.nnz, f.name);
      assert.equal(r.total, f.totalCounts, f.name);
      assert.deepEqual(r.var.index.slice(0, 3), f.firstVarNames, f.name);
      assert.ok(column(r.var, "gene_ids") !== undefined, `${f.name} has gene_ids for --var-key`);
    }
    const names = atlas.inputs.flatMap((f) => of(f).obs.index);
    assert.equal(new Set(names).size, names.length, "no two cells share an obs name");
  });

  test("have gene sets that overlap without being equal, and gene_ids that match genes the var index does not", () => {
    const genes = atlas.inputs.map((f) => new Set(of(f).var.index));
    for (let a = 0; a < genes.length; a++)
      for (let b = a + 1; b < genes.length; b++)
        assert.notDeepEqual(genes[a], genes[b], `${atlas.inputs[a]!.name} and ${atlas.inputs[b]!.name}`);
    const [pbmcA, pbmcB, chr21A, chr21B, ensembl, , synthetic] = atlas.inputs.map((f) => of(f));
    const shared = (x: Read, y: Read) => x.var.index.filter((g) => y.var.index.includes(g)).length;
    assert.ok(shared(pbmcA!, pbmcB!) > 0 && shared(pbmcA!, pbmcB!) < pbmcA!.var.index.length);
    assert.ok(shared(chr21A!, chr21B!) > 0 && shared(chr21B!, chr21A!) === chr21B!.var.index.length);
    const others = new Set(atlas.inputs.slice(0, 6).flatMap((f) => of(f).var.index));
    assert.ok(
      synthetic!.var.index.filter((g) => !others.has(g)).length >= 20,
      "genes only the synthetic input has",
    );

    // chr21-ensembl: by var index nothing in common with chr21-a, by gene_ids all of its genes.
    assert.equal(shared(ensembl!, chr21A!), 0);
    const ids = new Set(stringColumn(chr21A!.var, "gene_ids"));
    assert.ok(stringColumn(ensembl!.var, "gene_ids").every((id) => ids.has(id)));

    const byIndex = new Set(genes.flatMap((s) => [...s]));
    const byIds = new Set(atlas.inputs.flatMap((f) => stringColumn(of(f).var, "gene_ids")));
    assert.equal(atlas.expected.byIndex.nVars, byIndex.size);
    assert.equal(atlas.expected.byGeneIds.nVars, byIds.size);
    assert.ok(byIds.size < byIndex.size);
    assert.deepEqual(new Set(of(atlas.expected.byGeneIds).var.index), byIds);
  });

  test("have obs columns that differ between inputs: missing, int in one and float in another, other categories, bool", () => {
    const [pbmcA, pbmcB, , chr21B, , tenx, synthetic] = atlas.inputs.map((f) => of(f));
    assert.ok(column(pbmcA!.obs, "phase") !== undefined && column(pbmcB!.obs, "phase") === undefined);
    assert.equal(tenx!.obs.columns.length, 0, "an input without obs columns");

    const nGenes = (r: Read) => {
      const c = column(r.obs, "n_genes");
      assert.ok(c?.kind === "numeric");
      return c.values.constructor.name;
    };
    assert.equal(nGenes(pbmcA!), "BigInt64Array");
    assert.equal(nGenes(pbmcB!), "Float64Array");
    assert.equal(nGenes(chr21B!), "Int32Array");

    const categories = (r: Read, name: string) => {
      const c = column(r.obs, name);
      assert.ok(c?.kind === "category", name);
      return c.categories;
    };
    const labelsA = categories(pbmcA!, "bulk_labels");
    const labelsB = categories(pbmcB!, "bulk_labels");
    assert.ok(labelsB.includes("Unassigned") && !labelsA.includes("Unassigned"));
    const common = labelsA.filter((c) => labelsB.includes(c));
    assert.ok(common.length > 5);
    assert.notDeepEqual(
      labelsB.filter((c) => common.includes(c)),
      common,
      "the labels both inputs have in another order",
    );
    assert.deepEqual(categories(pbmcA!, "phase"), ["G1", "G2M", "S"]);
    assert.deepEqual(categories(synthetic!, "phase"), ["S", "G2M", "G1"]);
    assert.ok(categories(synthetic!, "louvain").length > categories(pbmcA!, "louvain").length);
    assert.equal(column(pbmcB!.obs, "is_doublet")?.kind, "bool");
    assert.equal(column(synthetic!.obs, "is_doublet")?.kind, "bool");
  });

  test("include a conflict input whose n_genes holds text where the inputs hold numbers", () => {
    const c = column(of(atlas.conflict).obs, atlas.conflict.column);
    assert.equal(atlas.conflict.column, "n_genes");
    assert.ok(c?.kind === "category" || c?.kind === "string");
    for (const f of atlas.inputs) {
      const n = column(of(f).obs, "n_genes");
      if (n !== undefined) assert.equal(n.kind, "numeric", f.name);
    }
  });

  test("come with anndata's concatenation: every cell once, in input order, with its source and its counts", () => {
    for (const expected of [atlas.expected.byIndex, atlas.expected.byGeneIds]) {
      const e = of(expected);
      assert.deepEqual(
        e.obs.index,
        atlas.inputs.flatMap((f) => of(f).obs.index),
        expected.name,
      );
      const source = column(e.obs, atlas.sourceColumn);
      assert.ok(source?.kind === "category");
      assert.deepEqual(
        source.categories,
        atlas.inputs.map((f) => f.name),
      );
      assert.deepEqual(
        Array.from(source.codes),
        atlas.inputs.flatMap((f, k) => Array(f.nObs).fill(k)),
      );
      assert.equal(
        e.total,
        atlas.inputs.map((f) => f.totalCounts).reduce((a, b) => a + b),
      );
      assert.equal(e.nnz, expected.nnz);
    }
    // Each cell's counts, gene by gene: by var name, and by gene id through each input's gene_ids.
    const byIndex = of(atlas.expected.byIndex);
    const byIds = of(atlas.expected.byGeneIds);
    for (const f of atlas.inputs) {
      const r = of(f);
      const idOf = new Map(r.var.index.map((g, i) => [g, stringColumn(r.var, "gene_ids")[i]!]));
      for (const [cell, counts] of r.cells) {
        assert.deepEqual(byIndex.cells.get(cell), counts, `${f.name} ${cell}`);
        assert.deepEqual(
          byIds.cells.get(cell),
          new Map([...counts].map(([g, n]) => [idOf.get(g)!, n])),
          `${f.name} ${cell} by gene_ids`,
        );
      }
    }
  });

  test("are the same when written again (a fixed seed)", async () => {
    const again = await writeAtlasInputs();
    try {
      const manifest = async (a: AtlasInputs) => readFile(`${a.dir}/manifest.json`, "utf8");
      assert.equal(await manifest(again), await manifest(atlas));
      const b = await readAll(again.inputs[6]!.path);
      assert.deepEqual(b.cells, of(atlas.inputs[6]!).cells);
    } finally {
      await rm(again.dir, { recursive: true, force: true });
    }
  });
});
