/**
 * Damaged stores get a tagged refusal, never a crash, a hang or a silently wrong answer that breaks
 * an invariant: random edits to every zarr.json and random bytes in chunks.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStore } from "@deltacells/storage";
import { describe, isSporadikError, layoutFromCoords, openReader, writeStore } from "../src/index.js";
import { random, randomCoords } from "./helpers.js";

const JUNK: unknown[] = [null, "x", -1, 0, 1.5, 1e20, [], {}, [1, 2], true, "csr_matrix", [3], "1"];

async function pristine(byteAddressable: boolean): Promise<Map<string, Uint8Array>> {
  const spec = randomCoords([6, 5, 4], 0.3, 61);
  const store = new MemoryStore();
  await writeStore(
    store,
    [0, 1, 2].map((axis) => layoutFromCoords([6, 5, 4], spec.coords, new Float32Array(spec.values), axis)),
    { byteAddressable, chunk: byteAddressable ? undefined : 8 },
  );
  const files = new Map<string, Uint8Array>();
  for (const key of await store.list("")) files.set(key, (await store.get(key)) as Uint8Array);
  return files;
}

function mutateJson(value: unknown, next: () => number): unknown {
  if (Array.isArray(value)) {
    if (value.length === 0 || next() < 0.2) return JUNK[Math.floor(next() * JUNK.length)];
    const copy = [...value];
    const k = Math.floor(next() * copy.length);
    copy[k] = mutateJson(copy[k], next);
    return copy;
  }
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    if (keys.length === 0 || next() < 0.15) return JUNK[Math.floor(next() * JUNK.length)];
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const key = keys[Math.floor(next() * keys.length)] as string;
    if (next() < 0.15) delete copy[key];
    else copy[key] = mutateJson(copy[key], next);
    return copy;
  }
  return JUNK[Math.floor(next() * JUNK.length)];
}

/** Read everything the reader offers; only sporadik's own errors may escape. */
async function readAll(store: MemoryStore): Promise<void> {
  try {
    const info = await describe(store);
    for (const axis of info.layouts.keys()) {
      const reader = await openReader(store, { axis });
      for (let p = 0; p < Math.min(reader.info.slices, 8); p++) {
        const { positions, values } = await reader.sliceAt(p);
        assert.equal(positions.length, values.length);
      }
      await reader.slicesAt([0, 0]);
      await reader.maxima();
    }
  } catch (error) {
    if (isSporadikError(error)) return;
    throw error;
  }
}

for (const byteAddressable of [false, true]) {
  test(`random edits to the metadata of a ${byteAddressable ? "byte-addressable" : "chunked"} store are refused with tagged errors`, async () => {
    const files = await pristine(byteAddressable);
    const metadata = [...files.keys()].filter((key) => key.endsWith("zarr.json"));
    const next = random(byteAddressable ? 71 : 73);
    for (let round = 0; round < 150; round++) {
      const store = new MemoryStore();
      for (const [key, bytes] of files) await store.set(key, bytes);
      const key = metadata[Math.floor(next() * metadata.length)] as string;
      const json = JSON.parse(new TextDecoder().decode(files.get(key)));
      await store.set(key, new TextEncoder().encode(JSON.stringify(mutateJson(json, next))));
      await readAll(store);
    }
  });

  test(`random bytes in the chunks of a ${byteAddressable ? "byte-addressable" : "chunked"} store never crash the reader`, async () => {
    const files = await pristine(byteAddressable);
    const chunks = [...files.keys()].filter((key) => !key.endsWith("zarr.json"));
    const next = random(byteAddressable ? 75 : 77);
    for (let round = 0; round < 100; round++) {
      const store = new MemoryStore();
      for (const [key, bytes] of files) await store.set(key, bytes);
      const key = chunks[Math.floor(next() * chunks.length)] as string;
      const damaged = (files.get(key) as Uint8Array).slice(
        0,
        Math.floor(next() * 1.2 * (files.get(key) as Uint8Array).length),
      );
      for (let i = 0; i < damaged.length; i++) if (next() < 0.05) damaged[i] = Math.floor(next() * 256);
      await store.set(key, damaged);
      await readAll(store);
    }
  });
}
