/**
 * `deltacells validate` checks every store the manifest names besides the tiles: the statistics
 * (each object's size and CRC-32, the cells' totals against the tiles' counts) and the rows in
 * embedding order (their block, `order.npy` against the recorded digest and the embedding, rows
 * against the companion's, every chunk). Each damage here (a byte flipped, an object removed, an
 * order that is not the recorded one) makes it exit 1 with a problem naming the object.
 */
import assert from "node:assert/strict";
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { before, test } from "node:test";
import { crc32 } from "node:zlib";
import { orderDigest } from "@deltacells/core";
import { cli, REPO, tempDir } from "./cli-helpers.js";

const PBMC = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
const dir = tempDir();
const original = join(dir, "pbmc");
let copies = 0;

before(async () => {
  // Tiles of 100 cells: the statistics' cell totals are checked against each tile's counts.
  const r = await cli(
    "convert",
    PBMC,
    original,
    "--sporadik",
    "--tile-size",
    "100",
    "--quiet",
    "--threads",
    "1",
  );
  assert.equal(r.code, 0, r.stderr);
});

/** A copy of the dataset with `damage` done to it, and validate's answer on it. */
async function damaged(damage: (ds: string) => void): Promise<{ code: number; stdout: string; ds: string }> {
  const ds = join(dir, `copy-${copies++}`);
  cpSync(original, ds, { recursive: true });
  damage(ds);
  const r = await cli("validate", ds, "--quiet", "--threads", "1");
  return { code: r.code, stdout: r.stdout, ds };
}

function flipByte(path: string, at = 20): void {
  const bytes = readFileSync(path);
  bytes[at]! ^= 0xff;
  writeFileSync(path, bytes);
}

/** The cell of each row, as `order.npy` holds it (int32 after a 128-byte header). */
function orderOf(ds: string): { header: Buffer; order: Uint32Array } {
  const bytes = readFileSync(join(ds, "sporadik-rows/order.npy"));
  const headerLength = 10 + bytes.readUInt16LE(8);
  const body = bytes.subarray(headerLength);
  return {
    header: bytes.subarray(0, headerLength),
    order: new Uint32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)),
  };
}

function setManifestDigest(ds: string, digest: string): void {
  const manifest = JSON.parse(readFileSync(join(ds, "manifest.json"), "utf8"));
  manifest.metadata.sporadik_rows.digest = digest;
  writeFileSync(join(ds, "manifest.json"), JSON.stringify(manifest));
}

test("a dataset with its companion, statistics and rows in embedding order validates, naming each", async () => {
  const r = await cli("validate", original, "--quiet", "--threads", "1");
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /; sporadik companion valid; statistics valid; rows in embedding order valid\)/);
});

test("a byte flipped in a chunk of the rows in embedding order is named", async () => {
  const r = await damaged((ds) => flipByte(join(ds, "sporadik-rows/layouts/axis0/data/c/0")));
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /INVALID/);
  assert.match(r.stdout, /sporadik-rows\/layouts\/axis0\/data\/c\/0: \[/);
});

test("the rows' order.npy removed, or their block, is named", async () => {
  const noOrder = await damaged((ds) => rmSync(join(ds, "sporadik-rows/order.npy")));
  assert.equal(noOrder.code, 1, noOrder.stdout);
  assert.match(noOrder.stdout, /sporadik-rows\/order\.npy: \[NotFound\] .*order\.npy is missing/);
  const noBlock = await damaged((ds) => rmSync(join(ds, "sporadik-rows/zarr.json")));
  assert.equal(noBlock.code, 1, noBlock.stdout);
  assert.match(
    noBlock.stdout,
    /sporadik-rows: \[\w+\] the manifest names rows in embedding order at "sporadik-rows", which cannot be read/,
  );
});

test("an order.npy that is not the order the manifest records, or rows that are not the companion's rows in that order, are named", async () => {
  const swap = (ds: string) => {
    const { header, order } = orderOf(ds);
    [order[0], order[1]] = [order[1]!, order[0]!];
    writeFileSync(join(ds, "sporadik-rows/order.npy"), Buffer.concat([header, Buffer.from(order.buffer)]));
    return order;
  };
  const other = await damaged((ds) => swap(ds));
  assert.equal(other.code, 1, other.stdout);
  assert.match(
    other.stdout,
    /sporadik-rows\/order\.npy: \[InconsistentManifest\] the order in .* has digest [0-9a-f]{8}, the manifest records/,
  );
  // The order and its digest agree, but the rows were sorted by the other order: the rows at 0
  // and 1 are not the companion's rows of the cells order.npy now puts there.
  const moved = await damaged((ds) => setManifestDigest(ds, orderDigest(swap(ds))));
  assert.equal(moved.code, 1, moved.stdout);
  assert.match(
    moved.stdout,
    /sporadik-rows: \[InconsistentManifest\] row 0 of the rows in embedding order is not the companion's row of cell/,
  );
  assert.match(
    moved.stdout,
    /manifest\.json: \[InconsistentManifest\] the order of the cells along X_umap_0\/X_umap_1 has digest/,
  );
});

test("a byte flipped in a statistics object, or one removed, is named", async () => {
  const genes = (ds: string) => readdirSync(join(ds, "stats")).find((k) => k.startsWith("genes-"))!;
  const flipped = await damaged((ds) => flipByte(join(ds, "stats", genes(ds))));
  assert.equal(flipped.code, 1, flipped.stdout);
  assert.match(
    flipped.stdout,
    /stats\/genes-[0-9a-f]{8}\.bin: \[FormatError\] .*has CRC-32 [0-9a-f]{8}, stats\.json says/,
  );
  const cells = (ds: string) => readdirSync(join(ds, "stats")).find((k) => k.startsWith("cells-"))!;
  const removed = await damaged((ds) => rmSync(join(ds, "stats", cells(ds))));
  assert.equal(removed.code, 1, removed.stdout);
  assert.match(
    removed.stdout,
    /stats\/cells-[0-9a-f]{8}\.bin: \[NotFound\] .*is missing, though stats\.json names it/,
  );
  const index = await damaged((ds) => rmSync(join(ds, "stats/stats.json")));
  assert.equal(index.code, 1, index.stdout);
  assert.match(
    index.stdout,
    /stats\/stats\.json: \[NotFound\] .*is missing, though the manifest names statistics/,
  );
});

test("statistics whose cells' totals are not the tiles' counts are named, though every object is intact", async () => {
  const zstd = createRequire(import.meta.url)("zstd-napi") as {
    compress(b: Uint8Array): Buffer;
    decompress(b: Uint8Array): Buffer;
  };
  const r = await damaged((ds) => {
    const indexPath = join(ds, "stats/stats.json");
    const index = JSON.parse(readFileSync(indexPath, "utf8"));
    const raw = zstd.decompress(readFileSync(join(ds, "stats", index.cells.key)));
    const totals = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    // Two cells of different tiles trade totals: every sum over all cells stays the same.
    const last = totals.length - 1;
    assert.notEqual(totals[0], totals[last]);
    [totals[0], totals[last]] = [totals[last]!, totals[0]!];
    const stored = zstd.compress(new Uint8Array(totals.buffer));
    const crc = crc32(stored).toString(16).padStart(8, "0");
    index.cells = { ...index.cells, key: `cells-${crc}.bin`, bytes: stored.length, crc32: crc };
    writeFileSync(join(ds, "stats", index.cells.key), stored);
    writeFileSync(indexPath, JSON.stringify(index));
  });
  assert.equal(r.code, 1, r.stdout);
  assert.match(
    r.stdout,
    /stats\/cells-[0-9a-f]{8}\.bin: \[InconsistentManifest\] the cells of tile 0 total \d+ counts in the statistics, \d+ in the tile/,
  );
});
