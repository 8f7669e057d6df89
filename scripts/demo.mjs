#!/usr/bin/env node
// The README's main job: convert an embedded real dataset (10x Genomics, Cell Ranger v3 HDF5,
// chr21 genes of a PBMC run; see data/README.md) to a deltacells dataset with the `deltacells`
// command, inspect and validate it, then read cells back through the library.
// Runs the built CLI (dist/, made by `npm ci` through `prepare`).
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openDataset } from "@deltacells/core";
import { FolderStore } from "@deltacells/storage/node";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const input = join(repo, "data/10x-v3-chr21/filtered_feature_bc_matrix.h5");
const output = join(mkdtempSync(join(tmpdir(), "deltacells-demo-")), "pbmc-chr21");
const cli = join(repo, "packages/cli/dist/main.js");

function deltacells(...args) {
  console.log(`\n$ deltacells ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

deltacells("convert", input, output, "--tile-size", "256");
deltacells("inspect", output);
deltacells("validate", output, "--stats");

const ds = await openDataset(new FolderStore(output));
const names = await ds.geneNames();
const { indices, data } = await ds.cell(42);
const top = Array.from(indices.slice(0, 5), (g, k) => `${names[g]}=${data[k]}`).join(", ");
console.log(
  `\ncell 42 expresses ${indices.length} of ${ds.nGenes} genes; the first in dataset order: ${top}`,
);
