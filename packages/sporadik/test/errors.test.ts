/**
 * Every failure the public API can be driven into raises a tagged sporadik error: the guard says
 * so (PositionError included), `_tag` names it, `object` says which path of the store where there
 * is one, and the deltacells family brand is on it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isDeltacellsFamilyError, MemoryStore } from "@deltacells/storage";
import { thrownBy } from "../../../test-utils/thrown.js";
import {
  describe,
  isSporadikError,
  layoutFromCoords,
  MemorySpill,
  openReader,
  type SporadikErrorTag,
  writeStore,
} from "../src/index.js";
import { randomCoords } from "./helpers.js";

const SHAPE = [8, 6];

/** A small store, both axes, byte-addressable; `edit` may damage its objects before it is read. */
async function store(edit?: (s: MemoryStore) => Promise<void>): Promise<MemoryStore> {
  const spec = randomCoords(SHAPE, 0.4, 5);
  const s = new MemoryStore("memory://s");
  await writeStore(
    s,
    [0, 1].map((axis) => layoutFromCoords(SHAPE, spec.coords, new Float32Array(spec.values), axis)),
    { byteAddressable: true },
  );
  await edit?.(s);
  return s;
}

async function editRoot(
  s: MemoryStore,
  edit: (json: { attributes: { sporadik: Record<string, unknown> } }) => void,
) {
  const json = JSON.parse(new TextDecoder().decode(await s.get("zarr.json")));
  edit(json);
  await s.set("zarr.json", new TextEncoder().encode(JSON.stringify(json)));
}

interface Case {
  name: string;
  run: () => Promise<unknown>;
  tag: SporadikErrorTag;
  object?: RegExp;
  found?: unknown;
}

const CASES: Case[] = [
  { name: "an empty prefix", run: () => describe(new MemoryStore()), tag: "IncompleteError" },
  {
    name: "a store not marked complete",
    run: async () =>
      describe(await store((s) => editRoot(s, (j) => (j.attributes.sporadik.complete = false)))),
    tag: "IncompleteError",
  },
  {
    name: "an unknown spec version",
    run: async () => describe(await store((s) => editRoot(s, (j) => (j.attributes.sporadik.spec = "99")))),
    tag: "SpecError",
    found: "99",
  },
  {
    name: "a layout path outside the prefix",
    run: async () =>
      describe(
        await store((s) =>
          editRoot(
            s,
            (j) => ((j.attributes.sporadik.layouts as { path: string }[])[0]!.path = "../elsewhere"),
          ),
        ),
      ),
    tag: "LayoutError",
  },
  {
    name: "a truncated data object",
    run: async () => {
      const s = await store(async (m) => {
        const keys = (await m.list("")).filter((k) => /axis0\/data\/c\/0$/.test(k));
        for (const k of keys) await m.set(k, (await m.get(k))!.subarray(0, 3));
      });
      const reader = await openReader(s, { axis: 0 });
      for (let p = 0; p < SHAPE[0]!; p++) await reader.sliceAt(p);
    },
    tag: "IncompleteError",
    object: /data/,
  },
  {
    name: "a position past the axis",
    run: async () => (await openReader(await store(), { axis: 1 })).sliceAt(6),
    tag: "PositionError",
    found: 6,
  },
  {
    name: "a run past the axis",
    run: async () => (await openReader(await store(), { axis: 0 })).slicesOver(2, 9),
    tag: "PositionError",
    found: 8,
  },
  {
    name: "a reversed run",
    run: async () => (await openReader(await store(), { axis: 0 })).slicesOver(3, 1),
    tag: "InvalidArgument",
  },
  {
    name: "a row outside a selection",
    run: async () => (await (await openReader(await store(), { axis: 0 })).slicesAt([1, 2])).sliceAt(2),
    tag: "InvalidArgument",
    found: 2,
  },
  {
    name: "a chunk of 0 elements",
    run: async () =>
      writeStore(
        new MemoryStore(),
        layoutFromCoords([2, 2], [Int32Array.of(0), Int32Array.of(1)], Float32Array.of(1), 0),
        {
          chunk: 0,
        },
      ),
    tag: "InvalidArgument",
    found: 0,
  },
  {
    name: "a spill file read after it was removed",
    run: async () => {
      const file = await new MemorySpill().create("part");
      await file.remove();
      return file.read(0, 1);
    },
    tag: "StateError",
    object: /^part$/,
  },
];

for (const c of CASES) {
  test(`tagged: ${c.name} -> ${c.tag}`, async () => {
    const thrown = await thrownBy(c.run);
    assert.ok(isSporadikError(thrown), `not a SporadikError: ${String(thrown)}`);
    assert.ok(isDeltacellsFamilyError(thrown));
    assert.equal(thrown._tag, c.tag, thrown.message);
    assert.equal(thrown.name, c.tag);
    if (c.object !== undefined) assert.match(thrown.object ?? "", c.object);
    if ("found" in c) assert.deepEqual(thrown.found, c.found);
  });
}
