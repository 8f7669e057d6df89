/**
 * Every input kind, read by openInput, equals what the reference Python tools read for the same
 * file (anndata, scipy.io.mmread, h5py, zarr): shape, names, tables and the exact canonical CSR.
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import type { OpenInputOptions } from "../src/index.js";
import { openInput } from "../src/node.js";
import {
  assertObsmMatch,
  assertTablesMatch,
  DATA,
  gather,
  type PyDump,
  pythonDumps,
  REPO,
} from "./helpers.js";

interface Case {
  name: string;
  path: string;
  opts?: OpenInputOptions;
  format: string;
  matrixPath: string;
  py: [kind: string, option?: string];
  /** Compare obs/var tables column by column (AnnData and 10x inputs). */
  tables?: boolean;
  blockCells?: number;
}

const A = (f: string) => join(DATA, "anndata", f);

const cases: Case[] = [
  {
    name: "an h5ad whose X is CSR with unsorted indices, duplicates and explicit zeros",
    path: A("csr.h5ad"),
    format: "h5ad",
    matrixPath: "X",
    py: ["h5ad"],
    tables: true,
  },
  {
    name: "an h5ad layer (--layer counts, int32 CSR)",
    path: A("csr.h5ad"),
    opts: { layer: "counts" },
    format: "h5ad",
    matrixPath: "layers/counts",
    py: ["h5ad", "layer:counts"],
  },
  {
    name: "an h5ad raw/X with raw/var",
    path: A("csr.h5ad"),
    opts: { raw: true },
    format: "h5ad",
    matrixPath: "raw/X",
    py: ["h5ad", "raw"],
    tables: true,
  },
  {
    name: "an h5ad whose X is CSC (gzip)",
    path: A("csc.h5ad"),
    format: "h5ad",
    matrixPath: "X",
    py: ["h5ad"],
    tables: true,
  },
  {
    name: "an h5ad whose X is a dense int32 array",
    path: A("dense.h5ad"),
    format: "h5ad",
    matrixPath: "X",
    py: ["h5ad"],
    blockCells: 5,
  },
  {
    name: "an AnnData zarr v3 store (CSR X, string dtype, zstd)",
    path: A("csr-v3.zarr"),
    format: "anndata-zarr",
    matrixPath: "X",
    py: ["zarr"],
    tables: true,
  },
  {
    name: "an AnnData zarr v2 store's raw/X (blosc, vlen-utf8)",
    path: A("csr-v2.zarr"),
    opts: { raw: true },
    format: "anndata-zarr",
    matrixPath: "raw/X",
    py: ["zarr", "raw"],
    tables: true,
  },
  {
    name: "an h5ad whose obsm holds dense, sparse (CSR, CSC) and data frame entries",
    path: A("obsm.h5ad"),
    format: "h5ad",
    matrixPath: "X",
    py: ["h5ad"],
  },
  {
    name: "an AnnData zarr v2 store whose obsm holds every entry kind",
    path: A("obsm-v2.zarr"),
    format: "anndata-zarr",
    matrixPath: "X",
    py: ["zarr"],
  },
  {
    name: "an AnnData zarr v3 store whose obsm holds every entry kind",
    path: A("obsm-v3.zarr"),
    format: "anndata-zarr",
    matrixPath: "X",
    py: ["zarr"],
  },
  {
    name: "an AnnData zarr v3 store whose X is CSC",
    path: A("csc-v3.zarr"),
    format: "anndata-zarr",
    matrixPath: "X",
    py: ["zarr"],
  },
  {
    name: "an AnnData zarr v2 store whose X is dense",
    path: A("dense-v2.zarr"),
    format: "anndata-zarr",
    matrixPath: "X",
    py: ["zarr"],
  },
  {
    name: "a Cell Ranger v3 HDF5 file",
    path: join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix.h5"),
    format: "10x-h5",
    matrixPath: "matrix",
    py: ["10x-h5"],
    tables: true,
    blockCells: 100,
  },
  {
    name: "a 10x Matrix Market folder (gzipped, features.tsv.gz)",
    path: join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix"),
    format: "10x-mtx",
    matrixPath: "matrix.mtx.gz",
    py: ["10x-mtx"],
    tables: true,
    blockCells: 100,
  },
  {
    name: "a Cell Ranger v2 HDF5 file (one genome group)",
    path: join(DATA, "10x-v2", "filtered_gene_bc_matrices_h5.h5"),
    format: "10x-h5",
    matrixPath: "hg19_chr21/",
    py: ["10x-h5", "hg19_chr21"],
    tables: true,
  },
  {
    name: "a Cell Ranger v2 HDF5 file with two genomes, one chosen",
    path: join(DATA, "10x-v2", "multiple_genomes.h5"),
    opts: { genome: "another_genome" },
    format: "10x-h5",
    matrixPath: "another_genome/",
    py: ["10x-h5", "another_genome"],
    tables: true,
  },
  {
    name: "a Space Ranger probe-level HDF5 file",
    path: join(DATA, "visium", "raw_probe_bc_matrix.h5"),
    format: "10x-h5",
    matrixPath: "matrix",
    py: ["10x-h5"],
    tables: true,
    blockCells: 1000,
  },
  {
    name: "a plain Matrix Market file, genes x cells (Seurat)",
    path: join(DATA, "seurat-pbmc-small", "pbmc_small_counts.mtx"),
    format: "mtx",
    matrixPath: "matrix",
    py: ["mtx"],
    blockCells: 16,
  },
  {
    name: "a plain Matrix Market file, v2 10x layout",
    path: join(DATA, "10x-v2", "hg19_chr21_matrix.mtx"),
    format: "mtx",
    matrixPath: "matrix",
    py: ["mtx"],
  },
  {
    name: "a cells x genes Matrix Market file read with transpose",
    path: A("cells-by-genes.mtx"),
    opts: { transpose: true },
    format: "mtx",
    matrixPath: "matrix",
    py: ["mtx", "transpose"],
  },
  {
    name: "a cells x genes Matrix Market file whose entries are grouped by gene",
    path: A("cells-by-genes-by-gene.mtx"),
    opts: { transpose: true },
    format: "mtx",
    matrixPath: "matrix",
    py: ["mtx", "transpose"],
  },
  {
    name: "a bare zarr v3 array (cells x genes, no AnnData group)",
    path: A("bare-v3.zarr"),
    format: "zarr-array",
    matrixPath: "",
    py: ["zarr-array"],
    blockCells: 8,
  },
  {
    name: "a pre-0.7 AnnData zarr group (dense blosc-lz4 float32 X, obs and var as record arrays)",
    path: join(DATA, "mouse-10k-subset", "10x-10k-subset.zarr"),
    format: "anndata-zarr",
    matrixPath: "X",
    py: ["zarr"],
    tables: true,
    blockCells: 3000,
  },
];

let dumps: PyDump[] | undefined;
function reference(i: number): PyDump {
  dumps ??= pythonDumps(cases.map((c) => [c.py[0], c.path, c.py[1]]));
  return dumps[i] as PyDump;
}

cases.forEach((c, i) => {
  test(`${c.name} reads as the Python reference reads it`, async () => {
    const py = reference(i);
    const src = await openInput(c.path, c.opts);
    try {
      assert.equal(src.format, c.format);
      assert.equal(src.matrixPath, c.matrixPath);
      assert.deepEqual([src.nCells, src.nGenes], py.shape);
      const obs = await src.obs();
      const vars = await src.var();
      assert.deepEqual(obs.index, py.obs_names);
      assert.deepEqual(vars.index, py.var_names);
      if (c.tables) {
        assertTablesMatch(vars, py.var_columns);
        if (c.py[0] === "h5ad" || c.py[0] === "zarr" || c.py[0] === "10x-h5") {
          assertTablesMatch(obs, py.obs_columns);
        }
        if (c.py[0] === "h5ad" || c.py[0] === "zarr") {
          assert.deepEqual([obs.indexName, vars.indexName], py.index_names);
        }
      }
      if (c.py[0] === "h5ad" || c.py[0] === "zarr") {
        assert.deepEqual(await src.obsmKeys(), Object.keys(py.obsm).sort());
        assertObsmMatch(await src.obsm(), py.obsm);
      } else {
        assert.deepEqual(await src.obsm(), {});
      }
      const csr = await gather(src, c.blockCells ?? 7);
      assert.deepEqual(csr.indptr, py.indptr);
      assert.deepEqual(csr.indices, py.indices);
      assert.deepEqual(csr.data, py.data);
    } finally {
      await src.close();
    }
  });
});

test("the legacy (pre-0.7) h5ad's obs and var tables and obsm read as anndata reads them", async () => {
  const path = join(DATA, "legacy-anndata", "pbmc68k_reduced.h5ad");
  // the matrix is not counts (see the refusal tests); the dump script refuses it too, so read the
  // tables with anndata through the raw option's var and X's obs
  const src = await openInput(path);
  try {
    assert.equal(src.matrixPath, "X");
    assert.deepEqual([src.nCells, src.nGenes], [700, 765]);
    const obs = await src.obs();
    const vars = await src.var();
    const py = pythonTables(path);
    assert.deepEqual(obs.index, py.obs_names);
    assert.deepEqual(vars.index, py.var_names);
    assertTablesMatch(obs, py.obs_columns);
    assertTablesMatch(vars, py.var_columns);
    assert.deepEqual([obs.indexName, vars.indexName], py.index_names);
    // obsm is one compound dataset with a sub-array field per key (X_pca float32, X_umap float64)
    assert.deepEqual(await src.obsmKeys(), ["X_pca", "X_umap"]);
    assertObsmMatch(await src.obsm(), py.obsm);
  } finally {
    await src.close();
  }
});

function pythonTables(path: string): PyDump {
  const code = `
import sys, json, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, ${JSON.stringify(join(REPO, "conformance"))})
import anndata as ad
from anndata_dump import frame, obsm
a = ad.read_h5ad(${JSON.stringify(path)})
json.dump({"obs_names": list(a.obs_names), "var_names": list(a.var_names), "obs_columns": frame(a.obs),
  "var_columns": frame(a.var), "index_names": [a.obs.index.name, a.var.index.name], "obsm": obsm(a)}, sys.stdout)`;
  const r = spawnSync(join(REPO, "conformance", ".venv", "bin", "python"), ["-c", code], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as PyDump;
}
