/** Format detection and options that only some formats take. */

import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { isAnndataError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { detectFormat } from "../src/open.js";
import { DATA, gather } from "./helpers.js";

test("every input kind is detected from its path and content", async () => {
  const expect: [string, string][] = [
    [join(DATA, "anndata", "csr.h5ad"), "h5ad"],
    [join(DATA, "legacy-anndata", "pbmc68k_reduced.h5ad"), "h5ad"],
    [join(DATA, "anndata", "csr-v2.zarr"), "anndata-zarr"],
    [join(DATA, "anndata", "csr-v3.zarr"), "anndata-zarr"],
    [join(DATA, "anndata", "bare-v3.zarr"), "zarr-array"],
    [join(DATA, "mouse-10k-subset", "10x-10k-subset.zarr"), "anndata-zarr"],
    [join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix.h5"), "10x-h5"],
    [join(DATA, "10x-v2", "multiple_genomes.h5"), "10x-h5"],
    [join(DATA, "visium", "raw_probe_bc_matrix.h5"), "10x-h5"],
    [join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix"), "10x-mtx"],
    [join(DATA, "seurat-pbmc-small", "pbmc_small_counts.mtx"), "mtx"],
  ];
  for (const [path, format] of expect) assert.equal(await detectFormat(path), format, path);
});

test("a gzipped plain Matrix Market file is detected and reads like the plain one", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-test-"));
  try {
    const plain = join(DATA, "seurat-pbmc-small", "pbmc_small_counts.mtx");
    const gz = join(dir, "counts.mtx.gz");
    writeFileSync(gz, gzipSync(readFileSync(plain)));
    assert.equal(await detectFormat(gz), "mtx");
    assert.deepEqual(await gather(await openInput(gz), 10), await gather(await openInput(plain), 10));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a 10x v2 folder with plain genes.tsv and barcodes.tsv reads symbols and ids", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-test-"));
  try {
    // the v2 matrix with made-up names: 343 genes x 12 cells
    copyFileSync(join(DATA, "10x-v2", "hg19_chr21_matrix.mtx"), join(dir, "matrix.mtx"));
    writeFileSync(
      join(dir, "genes.tsv"),
      Array.from({ length: 343 }, (_, i) => `ENSG${i}\tSYM${i % 300}\n`).join(""),
    );
    writeFileSync(join(dir, "barcodes.tsv"), Array.from({ length: 12 }, (_, i) => `BC${i}-1\n`).join(""));
    const src = await openInput(dir);
    assert.equal(src.format, "10x-mtx");
    const v = await src.var();
    assert.equal(v.index[301], "SYM1", "duplicate symbols are kept as they are");
    assert.deepEqual(
      v.columns.map((c) => c.name),
      ["gene_ids"],
    );
    assert.deepEqual((await src.obs()).index.slice(0, 2), ["BC0-1", "BC1-1"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("transpose is refused for inputs other than plain Matrix Market", async () => {
  await assert.rejects(openInput(join(DATA, "anndata", "csr.h5ad"), { transpose: true }), (err: unknown) =>
    isAnndataError(err, "Unsupported"),
  );
});

test("a missing layer of a zarr store is refused listing its layers", async () => {
  await assert.rejects(
    openInput(join(DATA, "anndata", "csr-v3.zarr"), { layer: "spliced" }),
    (err: unknown) => {
      assert.ok(isAnndataError(err, "MissingMatrix"));
      assert.match(err.message, /layers\/counts/);
      assert.match(err.message, /raw\/X/);
      assert.doesNotMatch(err.message, /--/);
      return true;
    },
  );
});

test("an aborted signal stops the iteration", async () => {
  const src = await openInput(join(DATA, "anndata", "csr.h5ad"));
  const ac = new AbortController();
  let blocks = 0;
  await assert.rejects(
    async () => {
      for await (const _ of src.rowBlocks({ blockCells: 5, signal: ac.signal })) {
        blocks++;
        ac.abort();
      }
    },
    (err: unknown) => err instanceof Error && err.name === "AbortError",
  );
  assert.equal(blocks, 1);
  await src.close();
});

test("a file:// URL opens as its path", async () => {
  const src = await openInput(pathToFileURL(join(DATA, "anndata", "csr.h5ad")).href);
  try {
    assert.equal(src.format, "h5ad");
  } finally {
    await src.close();
  }
});

test("URL inputs read from local files only are refused with the copy command, before any request", async () => {
  const cases: [string, RegExp][] = [
    ["s3://bucket/runs/pbmc.h5ad", /aws s3 cp s3:\/\/bucket\/runs\/pbmc\.h5ad \.\/pbmc\.h5ad/],
    [
      "https://example.org/data/filtered_feature_bc_matrix.h5",
      /curl -fL -o \.\/filtered_feature_bc_matrix\.h5 https:/,
    ],
  ];
  for (const [url, says] of cases) {
    await assert.rejects(
      openInput(url, {
        openStore: () => {
          throw new Error("no store should be opened");
        },
      }),
      (e: unknown) => isAnndataError(e, "NotLocal") && says.test((e as Error).message),
    );
  }
  await assert.rejects(openInput("s3://bucket/store.zarr"), (e: unknown) => isAnndataError(e, "Unsupported"));
  await assert.rejects(openInput("ftp://host/x.zarr"), /not ftp:\/\//);
});

/** A read-only store over a local folder, as the storage layer would serve it over a URL. */
function folderAsStore(folder: string) {
  return {
    get: async (key: string) => {
      try {
        return new Uint8Array(readFileSync(join(folder, key)));
      } catch {
        return undefined;
      }
    },
  };
}

/** {@link folderAsStore} with ranged reads, logging each call as `op key` (a zero-length range as `exists key`). */
function countingFolderStore(folder: string, log: string[]) {
  const whole = folderAsStore(folder);
  return {
    get: (key: string) => {
      log.push(`get ${key}`);
      return whole.get(key);
    },
    getRange: async (key: string, range: { offset: number; length: number } | { suffixLength: number }) => {
      const empty = "length" in range && range.length === 0;
      log.push(`${empty ? "exists" : "getRange"} ${key}`);
      const bytes = await whole.get(key);
      if (bytes === undefined || empty) return bytes && new Uint8Array(0);
      return "suffixLength" in range
        ? bytes.slice(bytes.length - range.suffixLength)
        : bytes.slice(range.offset, range.offset + range.length);
    },
  };
}

test("a pre-0.7 AnnData zarr group (obs and var record arrays) is AnnData, local or remote, with its cell table", async () => {
  const path = join(DATA, "mouse-10k-subset", "10x-10k-subset.zarr");
  for (const src of [
    await openInput(path),
    await openInput("s3://bucket/10x-10k-subset.zarr", { openStore: () => folderAsStore(path) }),
  ]) {
    try {
      assert.equal(src.format, "anndata-zarr");
      assert.equal(src.matrixPath, "X");
      const obs = await src.obs();
      assert.equal(obs.indexName, "index");
      assert.equal(obs.index.length, 10_000);
      assert.deepEqual(obs.index.slice(0, 2), ["AAACCTGAGATAGGAG-1", "AAACCTGAGCGGCTTC-1"]);
      const vars = await src.var();
      assert.deepEqual(vars.index.slice(0, 2), ["Xkr4", "Gm1992"]);
      assert.deepEqual(
        vars.columns.map((c) => c.name),
        ["gene_ids"],
      );
    } finally {
      await src.close();
    }
  }
});

test("a remote 10x folder is detected without reading its matrix: each file is fetched once, by the copy", async () => {
  const log: string[] = [];
  const served = join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix");
  const src = await openInput("s3://bucket/runs/filtered_feature_bc_matrix", {
    openStore: () => countingFolderStore(served, log),
  });
  try {
    assert.equal(src.format, "10x-mtx");
    const fetched = log.filter((line) => !line.startsWith("exists "));
    assert.deepEqual(fetched, [
      "get zarr.json",
      "get matrix.mtx.gz",
      "get features.tsv.gz",
      "get barcodes.tsv.gz",
    ]);
    assert.ok(log.includes("exists matrix.mtx.gz"), log.join(", "));
  } finally {
    await src.close();
  }
});

test("Matrix Market URLs (a file, a 10x folder) are read through the store, as their local copies", async () => {
  const cases: [string, string, string][] = [
    [
      "https://example.org/seurat/pbmc_small_counts.mtx",
      join(DATA, "seurat-pbmc-small"),
      join(DATA, "seurat-pbmc-small", "pbmc_small_counts.mtx"),
    ],
    [
      "s3://bucket/runs/filtered_feature_bc_matrix",
      join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix"),
      join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix"),
    ],
  ];
  for (const [url, served, local] of cases) {
    const remote = await openInput(url, { openStore: () => folderAsStore(served) });
    const copy = await openInput(local);
    try {
      assert.equal(remote.format, copy.format);
      assert.deepEqual((await remote.var()).index, (await copy.var()).index);
      assert.deepEqual(await gather(remote, 100), await gather(copy, 100));
    } finally {
      await remote.close();
      await copy.close();
    }
  }
});
