/**
 * What a Node program loads before it runs a line of its own: the static import graph of an
 * entry, as esbuild bundles it for Node (the packages' `source` condition, dynamic imports split
 * off into chunks loaded on demand). Start-up tests check that heavy modules stay out of it.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The files `entry` (a package specifier, or a path from the repository's root) loads up front,
 * as paths from the repository's root (`node_modules/apache-arrow/...`, `packages/...`).
 */
export async function upFront(entry: string): Promise<Set<string>> {
  const specifier = entry.startsWith("packages/") ? `./${entry}` : entry;
  const result = await build({
    stdin: { contents: `import * as m from "${specifier}"; globalThis.__m = m;`, resolveDir: repo },
    bundle: true,
    splitting: true,
    write: false,
    outdir: join(repo, "bench/out/up-front"),
    format: "esm",
    platform: "node",
    target: "node20",
    conditions: ["source"],
    // The native zstd binding (CommonJS around a .node file) is not the question here.
    external: ["zstd-napi", "zstd-napi/*"],
    metafile: true,
    logLevel: "silent",
  });
  return staticInputs(result.metafile);
}

/**
 * The inputs of a bundle's own entry chunk and of the chunks it imports statically: what loads up
 * front. (With splitting, every dynamically imported chunk has an `entryPoint` too: the bundle's
 * entry is the one built from stdin.)
 */
export function staticInputs(meta: Metafile): Set<string> {
  const outputs = meta.outputs;
  const entryOut = Object.keys(outputs).find((o) => outputs[o]!.entryPoint === "<stdin>")!;
  const seen = new Set<string>();
  const inputs = new Set<string>();
  const visit = (o: string) => {
    if (seen.has(o)) return;
    seen.add(o);
    for (const i of Object.keys(outputs[o]!.inputs)) inputs.add(i);
    for (const imp of outputs[o]!.imports)
      if (imp.kind === "import-statement" && !imp.external) visit(imp.path);
  };
  visit(entryOut);
  return inputs;
}

/** The npm packages among `files` (`apache-arrow`, `@scope/name`). */
export function packagesOf(files: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const f of files) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f);
    if (m) out.add(m[1]!);
  }
  return out;
}
