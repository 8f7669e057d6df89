#!/usr/bin/env node
// The `deltacells` command. This file is committed (and executable) so that npm can link it
// before anything is built; it runs the compiled command: the bundle `npm run build` makes
// (dist/bundle/, see scripts/bundle-cli.mjs: a few files per command start several times faster
// than the hundreds of modules of dist/), unless a later `tsc -b` left it behind the packages'
// dist/; else dist/main.js.
import { statSync } from "node:fs";

const modified = (path) => statSync(new URL(path, import.meta.url), { throwIfNoEntry: false })?.mtimeMs;
const bundle = modified("../dist/bundle/main.js");
const compiled = ["cli", "deltacells", "storage", "sporadik", "anndata"].map((p) =>
  modified(`../../${p}/dist/.tsbuildinfo`),
);
const fresh = bundle !== undefined && compiled.every((t) => t === undefined || t <= bundle);
try {
  await import(fresh ? "../dist/bundle/main.js" : "../dist/main.js");
} catch (err) {
  if (err?.code !== "ERR_MODULE_NOT_FOUND" || !String(err.message).includes("dist/main.js")) throw err;
  process.stderr.write("deltacells: the command is not built yet: run `npm run build` in the repository\n");
  process.exitCode = 1;
}
