#!/usr/bin/env node
// The `deltacells` command. This file is committed (and executable) so that npm can link it
// before anything is built; it runs the compiled command in dist/.
try {
  await import("../dist/main.js");
} catch (err) {
  if (err?.code !== "ERR_MODULE_NOT_FOUND" || !String(err.message).includes("dist/main.js")) throw err;
  process.stderr.write("deltacells: the command is not built yet: run `npm run build` in the repository\n");
  process.exitCode = 1;
}
