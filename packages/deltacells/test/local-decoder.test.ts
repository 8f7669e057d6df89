/**
 * The calling-thread decoder a dataset reader uses without threads: it must refuse a damaged tile
 * exactly as {@link decodeTileSync} does (the CRC first, before anything read from the damaged
 * bytes), and decode an intact one to the same numbers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeTileSync, encodeTile, isDeltacellsError, loadZstd } from "@deltacells/core";
import { inspectTile } from "../src/codec/layout.js";
import { createLocalDecoder } from "../src/codec/local-decoder.js";
import { prng, randomCsr } from "./codec-helpers.js";

/** What a call threw, as `tag field: message`, or "ok". */
async function outcome(run: () => unknown): Promise<string> {
  try {
    await run();
    return "ok";
  } catch (err) {
    assert.ok(isDeltacellsError(err), `not a DeltacellsError: ${String(err)}`);
    return `${err._tag} ${err.field ?? ""}: ${err.message}`;
  }
}

test("the local decoder refuses every damaged byte of a tile with decodeTileSync's error, the CRC first", async () => {
  await loadZstd();
  const rows = randomCsr(prng(7), { nCells: 40, nGenes: 500, perCell: 12, emptyRate: 0.1 });
  const tile = await encodeTile(rows, { level: 3, nChunks: 3 });
  const layout = inspectTile(tile);
  const decoder = createLocalDecoder();
  // Every byte of the indptr and the chunk table, and a stride through the frames.
  const at: number[] = [];
  for (let i = 64; i < tile.length; i += i < layout.chunks[0]!.gapsOff ? 1 : 97) at.push(i);
  let crc = 0;
  for (const i of at) {
    const bad = tile.slice();
    bad[i]! ^= 0x5a;
    const object = `tiles/damaged-at-${i}.dct`;
    const expected = await outcome(() => decodeTileSync(bad, { object }));
    const found = await outcome(async () => (await decoder.decode(bad, { object })).release());
    assert.equal(found, expected, `byte ${i}`);
    if (/crc32/.test(found)) crc++;
  }
  assert.equal(crc, at.length, "every damaged byte past the header is a crc32 refusal");
  // An intact tile decodes to the same numbers; a cell range to its part.
  const whole = decodeTileSync(tile);
  const lent = await decoder.decode(tile, { cells: [5, 30] });
  try {
    assert.equal(lent.nCells, 25);
    assert.deepEqual([...lent.indices], [...whole.indices.subarray(whole.indptr[5], whole.indptr[30])]);
    assert.deepEqual([...lent.data], [...whole.data.subarray(whole.indptr[5], whole.indptr[30])]);
  } finally {
    lent.release();
  }
});
