/**
 * How an atlas merges its inputs: the gene space (outer, inner, declared, a given order, keys that
 * repeat, a var column as key), the obs schema (promotions, conflicts refused with both inputs
 * named, category and string), embeddings kept, dropped or filled, the source column's names.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { promoteNumeric } from "../src/atlas/promote.js";
import {
  ConflictingObsColumn,
  isDeltacellsError,
  openDataset,
  sourceNames,
  type TableColumn,
  UnknownObsExclude,
} from "../src/index.js";
import { atlasInput, type BuildOptions, buildOnce, cells, genes } from "./atlas-fixtures.js";

type Input = ReturnType<typeof atlasInput>;

async function geneNamesOf(inputs: Input[], opts: BuildOptions = {}): Promise<string[]> {
  const ds = await openDataset(await buildOnce(inputs, { tileSize: 8, ...opts }));
  const names = (await ds.geneNames())!;
  await ds.close();
  return names;
}

test("an inner join keeps the genes every input has; the dropped genes are reported with their share of counts", async () => {
  const a = atlasInput("a.h5ad", 10, genes(0, 6), 1);
  const b = atlasInput("b.h5ad", 12, genes(3, 6), 2);
  const store = await buildOnce([a, b], { tileSize: 8, genes: { join: "inner" } });
  const ds = await openDataset(store);
  assert.deepEqual([...(await ds.geneNames())!].sort(), ["G3", "G4", "G5"]);
  assert.equal(ds.manifest.metadata.gene_space, "inner");
  await ds.close();
});

test("a declared gene list refuses genes outside it, naming how many and which input, unless they are dropped; listed genes no input has are columns of zeros", async () => {
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1);
  const b = atlasInput("b.h5ad", 12, genes(2, 4), 2);
  await assert.rejects(
    buildOnce([a, b], { genes: { genes: ["G0", "G1", "G2", "G3", "G9"] } }),
    (err: unknown) => {
      assert.ok(isDeltacellsError(err, "InvalidInput"));
      assert.equal(err.object, "b.h5ad");
      assert.match(err.message, /b\.h5ad: 2 of its 4 genes are not in the declared gene list \("G4", "G5"\)/);
      return true;
    },
  );
  const names = await geneNamesOf([a, b], {
    genes: { genes: ["G0", "G1", "G2", "G3", "G9"], dropUnlisted: true },
  });
  assert.equal(names.length, 5);
  assert.equal(names.at(-1), "G9", "a gene no input has comes last (total 0)");
});

test("a given gene order is the output order; one that misses or repeats a gene is refused", async () => {
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1);
  const b = atlasInput("b.h5ad", 12, genes(2, 4), 2);
  const order = ["G5", "G0", "G3", "G1", "G4", "G2"];
  assert.deepEqual(await geneNamesOf([a, b], { genes: { order } }), order);
  await assert.rejects(
    buildOnce([a, b], { genes: { order: order.slice(1) } }),
    /gene order lists 5 genes, the gene space has 6: missing "G5"/,
  );
  await assert.rejects(
    buildOnce([a, b], { genes: { order: [...order.slice(1), "G0"] } }),
    /lists "G0" twice/,
  );
});

test("repeated gene keys are refused when inputs are matched, with the way out; one input keeps them", async () => {
  const dup = ["G0", "G1", "G1"];
  const a = atlasInput("a.h5ad", 10, dup, 1, { ids: ["ENS-G0", "ENS-G1", "ENS-G7"] });
  const b = atlasInput("b.h5ad", 12, genes(0, 2), 2);
  await assert.rejects(
    buildOnce([a, b]),
    /a\.h5ad: gene key "G1" appears twice.*var key option, e\.g\. gene_ids/,
  );
  assert.equal((await geneNamesOf([a])).length, 3);
  // matched on a unique var column instead
  const ds = await openDataset(await buildOnce([a, b], { varKey: "gene_ids", tileSize: 8 }));
  assert.equal(ds.nGenes, 3);
  assert.equal(ds.manifest.metadata.var_key, "gene_ids");
  await ds.close();
});

test("a column that is a string in one input and a number in another is refused, naming the column and both inputs", async () => {
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1, {
    obs: cells("a", 10, [{ name: "age", kind: "numeric", values: new Int32Array(10) }]),
  });
  const b = atlasInput("b.h5ad", 12, genes(0, 4), 2, {
    obs: cells("b", 12, [{ name: "age", kind: "string", values: new Array(12).fill("40-50") }]),
  });
  await assert.rejects(buildOnce([a, b]), (err: unknown) => {
    assert.ok(err instanceof ConflictingObsColumn);
    assert.equal(err.column, "age");
    assert.deepEqual(err.inputs, ["a.h5ad", "b.h5ad"]);
    assert.match(err.message, /obs column "age" is numeric \(int32\) in a\.h5ad but string in b\.h5ad/);
    return true;
  });
  const ds = await openDataset(await buildOnce([a, b], { obs: { exclude: ["age"] }, tileSize: 8 }));
  assert.deepEqual(
    (await ds.obsSchema()).columns.map((c) => c.name),
    ["obs_names", "source"],
  );
  await ds.close();
  await assert.rejects(
    buildOnce([a, b], { obs: { exclude: ["agee"] } }),
    (err: unknown) => err instanceof UnknownObsExclude,
  );
});

test("a category and a bool are a conflict; a category and a string become a string column", async () => {
  const flag: TableColumn = { name: "x", kind: "bool", values: new Uint8Array(10) };
  const cat = (n: number): TableColumn => ({
    name: "x",
    kind: "category",
    codes: new Int32Array(n),
    categories: ["u"],
    ordered: false,
  });
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1, { obs: cells("a", 10, [flag]) });
  const b = atlasInput("b.h5ad", 12, genes(0, 4), 2, { obs: cells("b", 12, [cat(12)]) });
  await assert.rejects(buildOnce([a, b]), /obs column "x" is bool in a\.h5ad but categorical in b\.h5ad/);
  const s = atlasInput("s.h5ad", 10, genes(0, 4), 1, {
    obs: cells("s", 10, [{ name: "x", kind: "string", values: new Array(10).fill("v") }]),
  });
  const ds = await openDataset(await buildOnce([b, s], { tileSize: 8 }));
  const x = (await ds.obsSchema()).columns.find((c) => c.name === "x")!;
  assert.equal(x.kind, "string");
  const frame = await ds.obs(["x"]);
  assert.deepEqual([frame.rows(11, 13)], [[["u"], ["v"]]]);
  await ds.close();
});

test("numeric types promote as numpy does; uint64 with a signed integer has no exact type", () => {
  assert.equal(promoteNumeric("int8", "int32"), "int32");
  assert.equal(promoteNumeric("uint8", "int8"), "int16");
  assert.equal(promoteNumeric("uint32", "int32"), "int64");
  assert.equal(promoteNumeric("int16", "float"), "float");
  assert.equal(promoteNumeric("int32", "float"), "double");
  assert.equal(promoteNumeric("float", "double"), "double");
  assert.equal(promoteNumeric("uint64", "int8"), undefined);
});

test("embeddings are kept where every input has them, else dropped with a note, or kept with nulls under obsm fill", async () => {
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1, { obs: cells("a", 10, []), umap: 2 });
  const b = atlasInput("b.h5ad", 12, genes(0, 4), 2, { obs: cells("b", 12, []) });
  const dropped = await openDataset(await buildOnce([a, b], { tileSize: 8 }));
  assert.deepEqual(
    (await dropped.obsSchema()).columns.map((c) => c.name),
    ["obs_names", "source"],
  );
  await dropped.close();
  const filled = await openDataset(await buildOnce([a, b], { tileSize: 8, obs: { obsmFill: true } }));
  assert.deepEqual(filled.manifest.metadata.obs_embeddings, { X_umap: 2 });
  const frame = await filled.obs(["X_umap_0"]);
  assert.deepEqual([frame.rows(9, 11)], [[[1 + (9 * 2) / 8], [null]]]);
  await filled.close();
  await assert.rejects(
    buildOnce([a, b], { obs: { obsm: ["X_umap"] } }),
    /obsm "X_umap" is missing from 1 of the 2 inputs \(b\.h5ad\); pass the obsm fill option/,
  );
});

test("the source column is named after the files, with parent folders where names repeat; a clash with an obs column is refused", async () => {
  assert.deepEqual(sourceNames(["/x/pbmc.h5ad", "s3://b/k/lung.zarr/", "mouse.mtx.gz"]), [
    "pbmc",
    "lung",
    "mouse",
  ]);
  assert.deepEqual(
    sourceNames([
      "runs/s1/filtered_feature_bc_matrix.h5",
      "runs/s2/filtered_feature_bc_matrix.h5",
      "other.h5ad",
    ]),
    ["s1/filtered_feature_bc_matrix", "s2/filtered_feature_bc_matrix", "other"],
  );
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1, {
    obs: cells("a", 10, [{ name: "source", kind: "string", values: new Array(10).fill("lab") }]),
  });
  const b = atlasInput("b.h5ad", 12, genes(0, 4), 2, { obs: cells("b", 12, []) });
  await assert.rejects(
    buildOnce([a, b]),
    /two obs columns would be named "source".*name the source column otherwise/,
  );
  const ds = await openDataset(
    await buildOnce([a, b], { tileSize: 8, sourceColumn: "dataset", names: ["first", "second"] }),
  );
  const col = (await ds.obsSchema()).columns.find((c) => c.name === "dataset")!;
  assert.deepEqual(col.categories, ["first", "second"]);
  await ds.close();
  await assert.rejects(
    buildOnce([a, b], { names: ["same", "same"] }),
    /inputs 0 \(a\.h5ad\) and 1 \(b\.h5ad\) would both be named "same"/,
  );
});

test("a column kept as text from another type (a datetime64 as ISO-8601) stays listed in metadata.obs_text_from", async () => {
  const when = (n: number): TableColumn => ({
    name: "when",
    kind: "string",
    values: Array.from({ length: n }, (_, i) => `2024-01-0${1 + (i % 9)}T00:00:00`),
    textFrom: "datetime64[ns]",
  });
  const a = atlasInput("a.h5ad", 10, genes(0, 4), 1, { obs: cells("a", 10, [when(10)]) });
  const b = atlasInput("b.h5ad", 12, genes(0, 4), 2, { obs: cells("b", 12, []) });
  const ds = await openDataset(await buildOnce([a, b], { tileSize: 8 }));
  assert.deepEqual(ds.manifest.metadata.obs_text_from, { when: "datetime64[ns]" });
  await ds.close();
});
