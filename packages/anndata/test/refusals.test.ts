/** Inputs that must be refused with a clear, tagged error, never read as data. */

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openAnnData } from "../src/anndata.js";
import { openHdf5 } from "../src/hdf5-thread.js";
import { AnndataError, isAnndataError, NotCountsError, UnsupportedFilterError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { counting, DATA, drain } from "./helpers.js";

const LEGACY = join(DATA, "legacy-anndata", "pbmc68k_reduced.h5ad");
const A = (f: string) => join(DATA, "anndata", f);

test("a scaled X (legacy pbmc68k) is refused naming the cell and gene, and what its log-normalised raw.X holds instead of suggesting it", async () => {
  await assert.rejects(drain(LEGACY), (err: unknown) => {
    assert.ok(err instanceof NotCountsError);
    assert.equal(err._tag, "NotCounts");
    assert.equal(err.reason, "negative");
    assert.equal(err.cell, 0);
    assert.equal(err.cellName, "AAAGCCTGGCTAAC-1");
    assert.equal(err.gene, 0);
    assert.equal(err.geneName, "HES4");
    // raw.X is log-normalised: suggesting it would lead to a second refusal
    assert.deepEqual(err.alternatives, []);
    assert.equal(err.hint, undefined);
    assert.equal(err.notCountsEither.length, 1);
    assert.equal(err.notCountsEither[0]!.matrix, "raw.X");
    assert.equal(err.notCountsEither[0]!.reason, "not-integer");
    assert.match(err.message, /AAAGCCTGGCTAAC-1/);
    assert.match(err.message, /HES4/);
    assert.match(
      err.message,
      /Nor do its other matrices: raw\.X holds a value that is not an integer \(\d+\.\d+\)\. This file holds processed values only/,
    );
    assert.doesNotMatch(err.message, /--/, "a library message names no command-line flag");
    return true;
  });
});

test("the cell named by a NotCounts error is read alone: obs index entry only, no obs column", async () => {
  const tree = await openHdf5(A("negative.h5ad"));
  const calls = { get: 0, attrs: 0, paths: [] as string[] };
  try {
    const src = await openAnnData(counting(tree, calls), "h5ad", {});
    calls.paths.length = 0; // what opening read is not the point
    await assert.rejects(
      async () => {
        for await (const _ of src.rowBlocks()) {
          // reading is the point
        }
      },
      (err: unknown) =>
        err instanceof NotCountsError && err.cellName !== undefined && err.geneName !== undefined,
    );
    const obs = calls.paths.filter((p) => p === "obs" || p.startsWith("obs/"));
    assert.deepEqual(obs, ["obs", "obs/barcode"]);
  } finally {
    await tree.close();
  }
});

test("a log-normalised raw.X (legacy pbmc68k) is refused as not integer, at the cell's first offending gene", async () => {
  await assert.rejects(drain(LEGACY, { raw: true }), (err: unknown) => {
    assert.ok(err instanceof NotCountsError);
    assert.equal(err.reason, "not-integer");
    assert.match(err.object ?? "", /\.h5ad\/raw\.X$/);
    assert.equal(err.cell, 0);
    assert.equal(err.cellName, "AAAGCCTGGCTAAC-1");
    // the row is stored starting at gene 764 (2.177); the error names the smallest gene index,
    // as anndata shows: raw.X[0] sorted starts with PARK7 (gene 3) = 1.591
    assert.equal(err.gene, 3);
    assert.equal(err.geneName, "PARK7");
    assert.equal(err.value, Math.fround(1.591));
    return true;
  });
});

test("a negative count is refused naming the cell and gene", async () => {
  await assert.rejects(drain(A("negative.h5ad")), (err: unknown) => {
    assert.ok(err instanceof NotCountsError);
    assert.equal(err.reason, "negative");
    assert.equal(err.value, -2);
    assert.equal(err.cell, 5);
    assert.equal(err.cellName, "cell-005");
    assert.equal(err.gene, 7);
    assert.equal(err.geneName, "GENE7");
    assert.deepEqual(err.alternatives, []);
    assert.equal(err.hint, undefined);
    return true;
  });
});

test("an HDF5 dataset with a filter nobody can decode is refused naming the dataset and filter", async () => {
  await assert.rejects(drain(A("unknown-filter.h5ad")), (err: unknown) => {
    assert.ok(err instanceof UnsupportedFilterError);
    assert.equal(err._tag, "UnsupportedFilter");
    assert.match(err.object ?? "", /unknown-filter\.h5ad\/X\/data$/);
    assert.equal(err.filterId, 32999);
    assert.match(err.message, /X\/data/);
    assert.match(err.message, /32999/);
    return true;
  });
});

test("an lzf dataset is refused, not read as garbage, when the filter plugins are unavailable", async () => {
  const tree = await openHdf5(A("csr-lzf.h5ad"), { plugins: false });
  try {
    const src = await openAnnData(tree, "h5ad", {});
    await assert.rejects(
      async () => {
        for await (const _ of src.rowBlocks()) {
          // reading is the point
        }
      },
      (err: unknown) => {
        assert.ok(err instanceof UnsupportedFilterError);
        assert.equal(err.filterId, 32000);
        assert.equal(err.filterName, "lzf");
        assert.match(err.object ?? "", /\.h5ad\/X\/(indptr|indices|data)$/);
        return true;
      },
    );
  } finally {
    await tree.close();
  }
});

test("lzf-compressed string datasets read first (before the plugin is loaded) decode, equal to the gzip copy", async () => {
  const tables = async (path: string) => {
    const src = await openInput(path);
    const t = [await src.var(), await src.obs()];
    await src.close();
    return t;
  };
  assert.deepEqual(await tables(A("csr-lzf.h5ad")), await tables(A("csr.h5ad")));
});

test("an lzf-compressed X decodes through the local h5wasm plugins and equals the gzip copy", async () => {
  const blocks = async (path: string) => {
    const src = await openInput(path);
    const out: number[][] = [];
    for await (const b of src.rowBlocks({ blockCells: 10 }))
      out.push([...b.indptr], [...b.indices], [...b.data]);
    await src.close();
    return out;
  };
  assert.deepEqual(await blocks(A("csr-lzf.h5ad")), await blocks(A("csr.h5ad")));
});

test("a missing layer is refused listing what the file has", async () => {
  await assert.rejects(openInput(A("csr.h5ad"), { layer: "spliced" }), (err: unknown) => {
    assert.ok(isAnndataError(err, "MissingMatrix"));
    assert.match(err.object ?? "", /csr\.h5ad\/layers\/spliced$/);
    assert.match(err.message, /layers\/counts/);
    assert.match(err.message, /raw\/X/);
    assert.deepEqual(err.hint, { kind: "other-matrices", matrices: ["layers/counts", "raw/X"] });
    assert.doesNotMatch(err.message, /--/);
    return true;
  });
});

test("raw is refused on a file without raw", async () => {
  await assert.rejects(openInput(A("dense.h5ad"), { raw: true }), (err: unknown) =>
    isAnndataError(err, "MissingMatrix"),
  );
});

test("a multi-genome Cell Ranger v2 file without a genome is refused listing the genomes", async () => {
  await assert.rejects(openInput(join(DATA, "10x-v2", "multiple_genomes.h5")), (err: unknown) => {
    assert.ok(isAnndataError(err, "MissingMatrix"));
    assert.match(err.message, /another_genome, hg19_chr21/);
    assert.deepEqual(err.hint, { kind: "choose-genome", genomes: ["another_genome", "hg19_chr21"] });
    assert.doesNotMatch(err.message, /--/);
    return true;
  });
});

test("a genome is refused for an input that has no genomes, rather than ignored", async () => {
  await assert.rejects(openInput(A("csr.h5ad"), { genome: "hg19" }), (err: unknown) => {
    assert.ok(isAnndataError(err, "Unsupported"));
    assert.match(err.message, /genome option applies to Cell Ranger HDF5 files only, not to h5ad/);
    assert.deepEqual(err.hint, { kind: "drop-option", option: "genome" });
    return true;
  });
});

test("a truncated .h5ad is refused saying so in one line, with nothing printed", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-test-"));
  try {
    const path = join(dir, "cut.h5ad");
    writeFileSync(path, readFileSync(A("csr.h5ad")).subarray(0, 50_000));
    const write = process.stderr.write;
    let printed = "";
    process.stderr.write = ((chunk: string) => {
      printed += chunk;
      return true;
    }) as typeof process.stderr.write;
    try {
      await assert.rejects(openInput(path), (err: unknown) => {
        assert.ok(isAnndataError(err, "MalformedInput"));
        assert.match(err.message, /the file is truncated \(50,000 of its 92,136 bytes are there\)/);
        assert.equal(err.message.split("\n").length, 1);
        return true;
      });
    } finally {
      process.stderr.write = write;
    }
    assert.doesNotMatch(printed, /HDF5-DIAG/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test("an unknown format is refused", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-test-"));
  try {
    const txt = join(dir, "notes.txt");
    writeFileSync(txt, "hello\n");
    await assert.rejects(openInput(txt), (err: unknown) => isAnndataError(err, "UnknownFormat"));
    await assert.rejects(openInput(dir), (err: unknown) => isAnndataError(err, "UnknownFormat"));
    await assert.rejects(openInput(join(dir, "missing.h5ad")), (err: unknown) =>
      isAnndataError(err, "UnknownFormat"),
    );
    await assert.rejects(
      openInput(txt, { format: "loom" as never }),
      (err: unknown) => err instanceof AnndataError && err._tag === "UnknownFormat",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a Matrix Market file whose entry count contradicts its size line is refused", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-test-"));
  try {
    const p = join(dir, "short.mtx");
    writeFileSync(p, "%%MatrixMarket matrix coordinate integer general\n3 2 3\n1 1 4\n2 2 1\n");
    await assert.rejects(drain(p), (err: unknown) => {
      assert.ok(isAnndataError(err, "MalformedInput"));
      assert.match(err.message, /announces 3 entries, the file has 2/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a fractional count in a Matrix Market file is refused naming the cell and gene", async () => {
  const dir = mkdtempSync(join(tmpdir(), "anndata-test-"));
  try {
    const p = join(dir, "frac.mtx");
    // genes x cells: gene 2, cell 2 holds 0.5
    writeFileSync(p, "%%MatrixMarket matrix coordinate real general\n3 2 2\n1 1 4\n2 2 0.5\n");
    await assert.rejects(drain(p), (err: unknown) => {
      assert.ok(err instanceof NotCountsError);
      assert.equal(err.reason, "not-integer");
      assert.equal(err.cell, 1);
      assert.equal(err.gene, 1);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
