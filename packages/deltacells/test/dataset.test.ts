import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore, withStats } from "@deltacells/storage";
import { MANIFEST_KEY, tileKey } from "../src/dataset/manifest.js";
import { encodeNpyInt32 } from "../src/dataset/npy.js";
import { orderGenesByTotal } from "../src/dataset/writer.js";
import {
  autoTileSize,
  createTilePool,
  type DatasetManifest,
  decodeTile,
  encodeTile,
  isDeltacellsError,
  nnzOf,
  openDataset,
  type TileDecoder,
  type TileEncoder,
  validateDataset,
  writeDataset,
} from "../src/index.js";
import { zstdCompressor } from "../src/node.js";
import { denseToBlock, geneTable, memorySource, randomMatrix } from "./dataset-fixtures.js";

const compress = zstdCompressor(3);

/** The real codec, counting how many tiles are being encoded at once. */
const codec: TileEncoder & TileDecoder & { active: number; maxConcurrent: number } = {
  active: 0,
  maxConcurrent: 0,
  async encode(rows, opts) {
    this.active++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.active);
    try {
      await new Promise((r) => setTimeout(r, 2)); // let the writer queue more if it would
      return await encodeTile(rows, { ...opts, level: 3 });
    } finally {
      this.active--;
    }
  },
  decode: decodeTile,
};

async function written(nCells = 53, nGenes = 31, tileSize = 8) {
  const m = randomMatrix(nCells, nGenes, 7);
  const store = new MemoryStore();
  const src = memorySource(m, { blockCells: 6 });
  const result = await writeDataset(src, store, { encoder: codec, compress, tileSize, nChunks: 2, level: 3 });
  return { m, store, src, result };
}

/** The expected rows in output column order: each source row's genes renumbered and sorted. */
function expectedRow(m: ReturnType<typeof randomMatrix>, order: Int32Array, c: number): [number[], number[]] {
  const idx: number[] = [];
  const val: number[] = [];
  for (let j = 0; j < m.nGenes; j++) {
    const v = m.values[c * m.nGenes + order[j]!]!;
    if (v) {
      idx.push(j);
      val.push(v);
    }
  }
  return [idx, val];
}

test("genes are ordered by decreasing total counts, ties kept in source order", () => {
  assert.deepEqual(Array.from(orderGenesByTotal(Float64Array.from([5, 9, 5, 0, 9, 1]))), [1, 4, 0, 2, 5, 3]);
});

test("a written dataset reads back cell for cell, in output gene order, through every access path", async () => {
  const { m, store, src, result } = await written();
  assert.equal(src.passes, 2, "two passes over the source");
  const ds = await openDataset(store, { decoder: codec });
  const order = (await ds.geneOrder())!;
  assert.equal(ds.nCells, 53);
  assert.equal(ds.nTiles, 7);
  assert.deepEqual(ds.manifest.tile_cells, [8, 8, 8, 8, 8, 8, 5]);
  // nnzOf: the manifest's total, every stored nonzero of the input counted once
  assert.equal(nnzOf(result.manifest), m.values.filter((v) => v !== 0).length);
  // totals decrease along the output columns
  const totals = Array.from(order, (g) => {
    let s = 0;
    for (let c = 0; c < m.nCells; c++) s += m.values[c * m.nGenes + g]!;
    return s;
  });
  for (let j = 1; j < totals.length; j++) assert.ok(totals[j - 1]! >= totals[j]!);
  // every cell via cell(), a straddling range via cells(), every tile via tiles()
  for (let c = 0; c < m.nCells; c++) {
    const { indices, data } = await ds.cell(c);
    const [idx, val] = expectedRow(m, order, c);
    assert.deepEqual([Array.from(indices), Array.from(data)], [idx, val], `cell ${c}`);
  }
  const rows = await ds.cells(5, 30, { values: "float32" });
  assert.equal(rows.nCells, 25);
  assert.ok(rows.data instanceof Float32Array);
  for (let r = 0; r < 25; r++) {
    const [idx, val] = expectedRow(m, order, 5 + r);
    const a = rows.indptr[r]!;
    const b = rows.indptr[r + 1]!;
    assert.deepEqual(
      [Array.from(rows.indices.subarray(a, b)), Array.from(rows.data.subarray(a, b))],
      [idx, val],
    );
  }
  let seen = 0;
  for await (const { index, cellStart, tile } of ds.tiles()) {
    assert.equal(index, seen++);
    assert.equal(cellStart, index * 8);
    assert.equal(tile.nCells, ds.manifest.tile_cells[index]);
  }
  assert.equal(seen, 7);
  assert.deepEqual(ds.locate(0), { tile: 0, cell: 0 });
  assert.deepEqual(ds.locate(8), { tile: 1, cell: 0 });
  assert.deepEqual(ds.locate(52), { tile: 6, cell: 4 });
  const names = (await ds.geneNames())!;
  assert.deepEqual(
    names,
    Array.from(order, (g) => `GENE${g}`),
  );
});

test("the manifest has every field of the spec and the source recorded", async () => {
  const { result, store } = await written();
  const man = JSON.parse(new TextDecoder().decode(await store.get(MANIFEST_KEY))) as DatasetManifest;
  assert.deepEqual(man, result.manifest);
  for (const key of [
    "format",
    "version",
    "n_cells",
    "n_genes",
    "tile_size",
    "tile_cells",
    "tile_nnz",
    "tile_bytes",
    "n_chunks",
    "zstd_level",
    "has_gene_order",
    "has_var_names",
    "has_var_table",
    "has_obs",
    "metadata",
  ]) {
    assert.ok(key in man, key);
  }
  assert.equal(man.format, "deltacells-dataset");
  assert.equal(man.version, 2);
  assert.equal(man.n_chunks, 2);
  assert.equal(man.zstd_level, 3);
  assert.equal(man.has_obs, false);
  for (let i = 0; i < man.tile_cells.length; i++)
    assert.equal((await store.get(tileKey(i)))!.length, man.tile_bytes[i]);
  assert.equal(man.metadata.source, "memory://fixture");
  assert.equal(man.metadata.matrix_path, "X");
  assert.match(String(man.metadata.converter), /^deltacells-js \d/);
});

test("no more tiles are encoded at once than the in-flight bound allows", async () => {
  const m = randomMatrix(64, 10, 3);
  codec.maxConcurrent = 0;
  await writeDataset(memorySource(m), new MemoryStore(), {
    encoder: codec,
    compress,
    tileSize: 2,
    inFlight: 3,
  });
  assert.ok(codec.maxConcurrent <= 3, `max ${codec.maxConcurrent}`);
  assert.ok(codec.maxConcurrent >= 2, "tiles are encoded in parallel");
});

test("without a tile size the writer sizes tiles to about a million nonzeros, 64 .. 4096 cells", async () => {
  assert.equal(autoTileSize(10_000, 691_914), 4096, "sparse data keeps the largest tiles");
  assert.equal(autoTileSize(12_000, 25_686_502), 448, "~2,100 genes per cell");
  assert.equal(autoTileSize(10, 100_000_000), 64, "never below 64 cells");
  assert.equal(autoTileSize(0, 0), 4096);
  const m = randomMatrix(300, 6000, 5, 0.9);
  const store = new MemoryStore();
  const { manifest } = await writeDataset(memorySource(m, { blockCells: 50 }), store, {
    encoder: codec,
    compress,
    level: 1,
  });
  const nnz = nnzOf(manifest);
  assert.ok(nnz > 1_200_000, `${nnz} nonzeros`);
  assert.equal(manifest.tile_size, autoTileSize(300, nnz));
  assert.equal(manifest.tile_size, 192);
  assert.deepEqual(manifest.tile_cells, [192, 108]);
  const report = await validateDataset(await openDataset(store, { decoder: codec }));
  assert.ok(report.valid, JSON.stringify(report.problems));
  assert.equal(report.nnz, nnz);
});

test("rewriting a prefix with fewer tiles removes the stale ones", async () => {
  const { store } = await written(53, 31, 8);
  const m = randomMatrix(10, 31, 2);
  await writeDataset(memorySource(m), store, { encoder: codec, compress, tileSize: 8 });
  assert.deepEqual(await store.list("tiles/"), [tileKey(0), tileKey(1)]);
  assert.equal((await openDataset(store, { decoder: codec })).nCells, 10);
});

test("a source with unsorted gene indices is refused naming the cell", async () => {
  const m = randomMatrix(4, 6, 1, 0.9);
  const src = memorySource(m);
  src.rowBlocks = async function* () {
    const b = denseToBlock(m, 0, 4);
    b.indices.reverse();
    yield b;
  };
  await assert.rejects(
    writeDataset(src, new MemoryStore(), { encoder: codec, compress }),
    (e) => isDeltacellsError(e, "InvalidInput") && /cell 0/.test(e.message),
  );
});

test("a source with zero cells gives an empty dataset with no tiles", async () => {
  const store = new MemoryStore();
  await writeDataset(memorySource({ nCells: 0, nGenes: 3, values: new Int32Array(0) }), store, {
    encoder: codec,
    compress,
  });
  const ds = await openDataset(store, { decoder: codec });
  assert.equal(ds.nTiles, 0);
  assert.equal((await ds.cells(0, 0)).nCells, 0);
});

test("reading cells makes one GET per tile they touch and nothing else", async () => {
  const { store } = await written();
  const counted = withStats(store);
  const ds = await openDataset(counted);
  counted.reset();
  await ds.cells(6, 17); // tiles 0, 1 and 2
  assert.deepEqual(counted.stats.requests, { get: 3, getRange: 0, set: 0, delete: 0, list: 0 });
  counted.reset();
  await ds.cell(52);
  assert.equal(counted.totalRequests, 1);
});

test("a failing encoder fails the conversion and leaves no manifest behind", async () => {
  const store = new MemoryStore();
  let calls = 0;
  const failing: TileEncoder = {
    async encode(rows) {
      if (++calls === 3) throw new Error("disk on fire");
      return encodeTile(rows, { level: 1 });
    },
  };
  await assert.rejects(
    writeDataset(memorySource(randomMatrix(40, 12, 5)), store, { encoder: failing, compress, tileSize: 4 }),
    /disk on fire/,
  );
  assert.equal(await store.get(MANIFEST_KEY), undefined);
  await assert.rejects(openDataset(store), (e) => isDeltacellsError(e, "IncompleteDataset"));
});

// ---- refusals: one test each ----

async function withManifest(edit: (m: Record<string, unknown>) => void) {
  const { store } = await written();
  const man = JSON.parse(new TextDecoder().decode(await store.get(MANIFEST_KEY))) as Record<string, unknown>;
  edit(man);
  await store.set(MANIFEST_KEY, new TextEncoder().encode(JSON.stringify(man)));
  return store;
}

test("a prefix without a manifest is refused as an incomplete dataset", async () => {
  const { store } = await written();
  await store.delete(MANIFEST_KEY);
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "IncompleteDataset") && /never finished/.test(e.message),
  );
});

test("a binary manifest is refused showing its first 8 bytes escaped, not raw", async () => {
  const { store } = await written();
  // an HDF5 file's start, then more binary: JSON.parse's message quoted it raw (\r, \n, \x1a)
  const bytes = Uint8Array.of(0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0x22, 0x5c, 0xff, 0x1b);
  await store.set(MANIFEST_KEY, bytes);
  await assert.rejects(openDataset(store, { decoder: codec }), (e) => {
    assert.ok(isDeltacellsError(e, "FormatError"));
    assert.match(e.message, /is not valid JSON \(it starts with "\\x89HDF\\r\\n\\x1a\\n"\.\.\.\)/);
    assert.ok(
      [...e.message].every((c) => c >= " " && c <= "~"),
      "printable ASCII only, one line",
    );
    return true;
  });
});

test("a manifest of another format is refused", async () => {
  const store = await withManifest((m) => {
    m.format = "something-else";
  });
  await assert.rejects(openDataset(store, { decoder: codec }), (e) => isDeltacellsError(e, "FormatError"));
});

test("a manifest of an unknown version is refused", async () => {
  const store = await withManifest((m) => {
    m.version = 3;
  });
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "UnsupportedVersion") && /version 3/.test(e.message),
  );
});

test("a manifest whose tile cells do not sum to n_cells is refused", async () => {
  const store = await withManifest((m) => {
    m.n_cells = 54;
  });
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "InconsistentManifest") && e.field === "tile_cells",
  );
});

test("a manifest whose per-tile lists differ in length is refused", async () => {
  const store = await withManifest((m) => {
    (m.tile_bytes as number[]).pop();
  });
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "InconsistentManifest") && e.field === "tile_bytes",
  );
});

test("a manifest breaking the tile-size rule is refused", async () => {
  const store = await withManifest((m) => {
    const cells = m.tile_cells as number[];
    cells[0] = 7;
    cells[6] = 6;
  });
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "InconsistentManifest") && /tile 0 holds 7 cells/.test(e.message),
  );
});

test("a manifest with a mistyped field is refused", async () => {
  const store = await withManifest((m) => {
    m.has_var_names = "yes";
  });
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "InconsistentManifest") && e.field === "has_var_names",
  );
});

test("a has_obs manifest without its obs fields is refused", async () => {
  const store = await withManifest((m) => {
    m.has_obs = true;
  });
  await assert.rejects(
    openDataset(store, { decoder: codec }),
    (e) => isDeltacellsError(e, "InconsistentManifest") && e.field === "obs_tiles_per_file",
  );
});

test("a has_var_names flag without var_names.txt is refused when the names are read", async () => {
  const { store } = await written();
  await store.delete("var_names.txt");
  const ds = await openDataset(store, { decoder: codec });
  await assert.rejects(
    ds.geneNames(),
    (e) => isDeltacellsError(e, "InconsistentManifest") && /var_names\.txt is missing/.test(e.message),
  );
});

test("a has_gene_order flag without gene_order.npy is refused when the order is read", async () => {
  const { store } = await written();
  await store.delete("gene_order.npy");
  const ds = await openDataset(store, { decoder: codec });
  await assert.rejects(ds.geneOrder(), (e) => isDeltacellsError(e, "InconsistentManifest"));
});

test("a gene_order.npy that is not a permutation of the genes is refused when the order is read", async () => {
  const cases: [string, (order: Int32Array) => Int32Array, RegExp][] = [
    ["a repeated gene", (o) => o.with(3, o[2]!), /gene_order\[3\] = \d+/],
    ["a gene out of range", (o) => o.with(0, 31), /gene_order\[0\] = 31/],
    ["a negative gene", (o) => o.with(5, -1), /gene_order\[5\] = -1/],
    ["a gene too few", (o) => o.subarray(1), /30 entries/],
  ];
  for (const [what, damage, says] of cases) {
    const { store } = await written();
    const order = (await (await openDataset(store, { decoder: codec })).geneOrder())!;
    await store.set("gene_order.npy", encodeNpyInt32(damage(order)));
    const ds = await openDataset(store, { decoder: codec });
    await assert.rejects(
      ds.geneOrder(),
      (e) =>
        isDeltacellsError(e, "InconsistentManifest") &&
        /gene_order\.npy is not a permutation of 0 \.\. 30/.test(e.message) &&
        says.test(e.message),
      what,
    );
  }
});

test("a tile whose size differs from tile_bytes is refused", async () => {
  const { store } = await written();
  const bytes = (await store.get(tileKey(2)))!;
  await store.set(tileKey(2), bytes.subarray(0, bytes.length - 1));
  const ds = await openDataset(store, { decoder: codec });
  await assert.rejects(ds.cell(17), (e) => isDeltacellsError(e, "CorruptTile") && e.field === "tile_bytes");
});

test("a missing tile is reported as not found", async () => {
  const { store } = await written();
  await store.delete(tileKey(6));
  const ds = await openDataset(store, { decoder: codec });
  await assert.rejects(ds.tile(6), (e) => isDeltacellsError(e, "NotFound"));
});

test("a cell outside the dataset is refused", async () => {
  const { store } = await written();
  const ds = await openDataset(store, { decoder: codec });
  assert.throws(
    () => ds.locate(53),
    (e) => isDeltacellsError(e, "InvalidInput"),
  );
  await assert.rejects(ds.cells(10, 54), (e) => isDeltacellsError(e, "InvalidInput"));
});

test("validation passes a sound dataset and lists every problem of a damaged one", async () => {
  const { store } = await written();
  const sound = await validateDataset(await openDataset(store));
  assert.deepEqual(sound.problems, []);
  assert.equal(sound.tilesChecked, 7);
  assert.equal(sound.valid, true);

  await store.set(tileKey(9), new Uint8Array(8)); // debris beyond the manifest's tiles
  const bytes = (await store.get(tileKey(3)))!.slice();
  bytes[bytes.length - 1]! ^= 1; // a flipped bit: the CRC catches it
  await store.set(tileKey(3), bytes);
  await store.set("var_names.txt", new TextEncoder().encode("just one name\n"));
  const report = await validateDataset(await openDataset(store));
  assert.equal(report.valid, false);
  assert.deepEqual(
    report.problems.map((p) => [p.object, p.tag]),
    [
      [tileKey(3), "CorruptTile"],
      [tileKey(9), "InconsistentManifest"],
      ["var_names.txt", "InconsistentManifest"],
    ],
  );
});

test("the gene table reads back in output order with its index, kinds, widths and vocabularies", async () => {
  const { store } = await written();
  const ds = await openDataset(store);
  const order = (await ds.geneOrder())!;
  const table = (await ds.varTable())!;
  const src = geneTable(31);
  assert.equal(table.indexName, "gene_symbols");
  assert.deepEqual(
    table.index,
    Array.from(order, (g) => src.index[g]),
  );
  assert.deepEqual(
    table.columns.map((c) => [c.name, c.kind]),
    src.columns.map((c) => [c.name, c.kind]),
  );
  for (const [k, col] of table.columns.entries()) {
    const want = src.columns[k]!;
    if (col.kind === "category" && want.kind === "category") {
      assert.deepEqual(col.categories, want.categories, "unused and out-of-appearance categories kept");
      assert.deepEqual(
        Array.from(col.codes),
        Array.from(order, (g) => want.codes[g]),
      );
    } else if (col.kind === "numeric" && want.kind === "numeric") {
      assert.equal(col.values.constructor, want.values.constructor, col.name);
      assert.deepEqual(
        Array.from(col.values as ArrayLike<unknown>),
        Array.from(order, (g) => want.values[g]),
      );
    } else if (col.kind === "bool" && want.kind === "bool") {
      assert.deepEqual(
        Array.from(col.values),
        Array.from(order, (g) => want.values[g]),
      );
    } else if (col.kind === "string" && want.kind === "string") {
      assert.deepEqual(
        col.values,
        Array.from(order, (g) => want.values[g]),
      );
    }
  }
});

test("a TilePool decoder answers every tile and closes while tiles are still being read ahead", async () => {
  // This used to hang: with the workers ref'd and unref'd per job, a reply a worker had posted sat
  // undelivered until the pool was closed, and `close()` then waited forever on that worker.
  const { store } = await written(83, 40, 16);
  for (let round = 0; round < 8; round++) {
    const pool = createTilePool({ threads: 2 });
    const ds = await openDataset(store, { decoder: pool });
    for (let k = 0; k < 3; k++)
      for await (const { tile } of ds.tiles({ prefetch: 2 })) assert.ok(tile.nnz > 0);
    for await (const { index } of ds.tiles({ prefetch: 3 })) if (index === 1) break;
    assert.equal((await ds.tile(0)).nCells, 16);
    await pool.close();
  }
});
