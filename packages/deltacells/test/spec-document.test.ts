/**
 * docs/spec/deltacells-v2.md is the normative text; these tests read its byte-layout tables and its
 * worked example and check them against what the codec writes, so the page cannot drift from the code.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { decodeTile, encodeTile, loadZstd, readTileHeader } from "@deltacells/core";
import { CHUNK_ENTRY_SIZE, CHUNK_FIELDS, HEADER_SIZE, readChunkEntry } from "../src/codec/format.js";

const SPEC = readFileSync(join(import.meta.dirname, "../../../docs/spec/deltacells-v2.md"), "utf8");

/** The markdown between a heading that starts with `title` and the next heading. */
function section(title: string): string {
  const start = SPEC.indexOf(`\n### ${title}`);
  assert.ok(start >= 0, `the spec has a section "${title}"`);
  const end = SPEC.indexOf("\n#", start + 1);
  return SPEC.slice(start, end < 0 ? undefined : end);
}

test("the header table's offsets, sizes and fields are where the codec writes them", async () => {
  const rows = [...section("5.1 Header").matchAll(/^\| (\d+) \| (\d+) \| `(\w+)` \| (\w+) \|/gm)].map(
    (m) => ({ offset: Number(m[1]), size: Number(m[2]), field: m[3]!, type: m[4]! }),
  );
  assert.deepEqual(
    rows.map((r) => r.field),
    [
      "magic",
      "version",
      "flags",
      "n_cells",
      "nnz",
      "n_genes",
      "n_chunks",
      "indptr_off",
      "total_size",
      "crc32",
      "reserved",
    ],
  );
  let next = 0;
  for (const r of rows) {
    assert.equal(r.offset, next, `${r.field} follows the previous field`);
    next += r.size;
  }
  assert.equal(next, HEADER_SIZE);

  const tile = await encodeTile(
    {
      nGenes: 300_000,
      indptr: [0, 3, 5],
      indices: new Int32Array([0, 65536, 200000, 7, 9]),
      data: new Int32Array([1, 70000, 2, 3, 4]),
    },
    { nChunks: 2 },
  );
  const h = readTileHeader(tile);
  const expected: Record<string, number> = {
    version: h.version,
    flags: h.flags,
    n_cells: h.nCells,
    nnz: h.nnz,
    n_genes: h.nGenes,
    n_chunks: h.nChunks,
    indptr_off: h.indptrOff,
    total_size: h.totalSize,
    crc32: h.crc32,
    reserved: h.reserved,
  };
  const view = new DataView(tile.buffer, tile.byteOffset, tile.byteLength);
  for (const r of rows) {
    if (r.field === "magic") {
      assert.equal(new TextDecoder().decode(tile.subarray(r.offset, r.offset + r.size)), "DELTACEL");
      continue;
    }
    const found = r.size === 4 ? view.getUint32(r.offset, true) : Number(view.getBigUint64(r.offset, true));
    assert.equal(found, expected[r.field], r.field);
    assert.equal(r.type, r.size === 4 ? "uint32" : "uint64", `${r.field} is documented with its width`);
  }
  assert.equal(h.indptrOff, HEADER_SIZE + 2 * CHUNK_ENTRY_SIZE, "the compact layout the spec recommends");
  assert.equal(h.totalSize, tile.length);
});

test("the chunk table lists the twelve uint64 fields in the codec's order", () => {
  const fields = [...section("5.2 Chunk table").matchAll(/^\| [\d, ]+ \| (`\w+`(?:, `\w+`)?) \|/gm)].flatMap(
    (m) => [...m[1]!.matchAll(/`(\w+)`/g)].map((f) => f[1]!),
  );
  assert.deepEqual(fields, [...CHUNK_FIELDS]);
  assert.equal(CHUNK_ENTRY_SIZE, 8 * fields.length);
});

test("the worked exception example is what the encoder writes, and decodes back", async () => {
  const example = /gexc\s+positions \[([\d, ]+)\]\s+payloads \[([\d, ]+)\]/.exec(SPEC);
  assert.ok(example, "the spec shows the gap-exception frame of its example");
  const numbers = (list: string) => list.split(",").map(Number);
  const genes = [0, 65536, 200000];
  const tile = await encodeTile({
    nGenes: 300_000,
    indptr: [0, 3],
    indices: new Int32Array(genes),
    data: new Int32Array([1, 1, 1]),
  });
  const chunk = readChunkEntry(new DataView(tile.buffer, tile.byteOffset, tile.byteLength), 0, undefined);
  const zstd = await loadZstd();
  const words = new Uint32Array(2 * numbers(example[1]!).length);
  zstd.decompressInto(
    tile.subarray(chunk.gexcOff, chunk.gexcOff + chunk.gexcLen),
    new Uint8Array(words.buffer),
  );
  const k = words.length / 2;
  assert.deepEqual([...words.subarray(0, k)], numbers(example[1]!));
  assert.deepEqual([...words.subarray(k)], numbers(example[2]!));
  assert.deepEqual([...(await decodeTile(tile)).indices], genes);
});
