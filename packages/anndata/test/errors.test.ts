/**
 * Every failure the public API can be driven into raises a tagged input error: the guard says so,
 * `_tag` names it, `object` names the input (and the dataset or file inside it) where there is
 * one, and the deltacells family brand is on it.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { tempDir } from "../../../test-utils/temp.js";
import { thrownBy } from "../../../test-utils/thrown.js";
import { csrSliceToBlock, RowBlockBuilder } from "../src/canonical.js";
import { type AnndataErrorTag, isAnndataError } from "../src/index.js";
import { openInput } from "../src/node.js";
import { DATA, drain } from "./helpers.js";

const A = (f: string) => join(DATA, "anndata", f);
const dir = tempDir("anndata-errors-");

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

interface Case {
  name: string;
  run: () => unknown;
  tag: AnndataErrorTag;
  object?: RegExp;
}

const CASES: Case[] = [
  {
    name: "a file of no known format",
    run: () => openInput(file("notes.txt", "hello\n")),
    tag: "UnknownFormat",
    object: /notes\.txt$/,
  },
  {
    name: "an h5ad given as a URL",
    run: () => openInput("https://example.org/a.h5ad"),
    tag: "NotLocal",
    object: /^https:/,
  },
  {
    name: "a missing layer",
    run: () => openInput(A("csr.h5ad"), { layer: "spliced" }),
    tag: "MissingMatrix",
    object: /csr\.h5ad\/layers\/spliced$/,
  },
  {
    name: "negative counts",
    run: () => drain(A("negative.h5ad")),
    tag: "NotCounts",
    object: /negative\.h5ad\/X$/,
  },
  {
    name: "a filter nobody can decode",
    run: () => drain(A("unknown-filter.h5ad")),
    tag: "UnsupportedFilter",
    object: /unknown-filter\.h5ad\/X\/data$/,
  },
  {
    name: "a Matrix Market entry outside the matrix",
    run: () => drain(file("outside.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n3 1 5\n")),
    tag: "MalformedInput",
    object: /outside\.mtx/,
  },
  {
    name: "a fractional count handed to the block builder",
    run: () => csrSliceToBlock(0, 1, 3, [0, 1], [1], [0.5]),
    tag: "NotCounts",
  },
  {
    name: "a gene index outside the block",
    run: () => csrSliceToBlock(0, 1, 3, [0, 1], [7], [1]),
    tag: "MalformedInput",
  },
  {
    name: "a block finished before its announced rows",
    run: () => new RowBlockBuilder(0, 2, 3).finish(),
    tag: "InvalidArgument",
  },
];

for (const c of CASES) {
  test(`tagged: ${c.name} -> ${c.tag}`, async () => {
    const thrown = await thrownBy(c.run);
    assert.ok(isAnndataError(thrown), `not an AnndataError: ${String(thrown)}`);
    assert.equal(
      (thrown as unknown as Record<symbol, unknown>)[Symbol.for("deltacells.error")],
      "@deltacells/anndata",
    );
    assert.equal(thrown._tag, c.tag, thrown.message);
    if (c.object !== undefined) assert.match(thrown.object ?? "", c.object);
  });
}
