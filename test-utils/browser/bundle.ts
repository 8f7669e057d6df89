/**
 * Bundles browser test entries with esbuild the way an application's bundler would (platform
 * "browser", ESM, workspace packages resolved to their TypeScript sources), and refuses any bundle
 * that reaches a Node built-in: that is the proof that an entry is browser-safe.
 */
import { builtinModules } from "node:module";
import { build, type Metafile } from "esbuild";

/** A bundle that is not browser-safe: it imports Node built-ins, or esbuild could not build it. */
export class BrowserBundleError extends Error {
  readonly _tag = "BrowserBundleError";
  /** `importer -> specifier` for every Node built-in the bundle would pull in. */
  readonly nodeImports: string[];

  constructor(message: string, nodeImports: string[], options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BrowserBundleError";
    this.nodeImports = nodeImports;
  }
}

export interface BundleOptions {
  /** Output name (without `.js`) -> entry source file. Each becomes `<outdir>/<name>.js`. */
  entryPoints: Record<string, string>;
  outdir: string;
}

const builtins = new Set(builtinModules);

function isNodeBuiltin(specifier: string): boolean {
  return specifier.startsWith("node:") || builtins.has(specifier) || builtins.has(specifier.split("/")[0]!);
}

/** Node built-ins reached by any statically analysable import in the bundle's inputs. */
function nodeImportsOf(meta: Metafile): string[] {
  const found: string[] = [];
  for (const [file, input] of Object.entries(meta.inputs)) {
    for (const imp of input.imports) {
      if (isNodeBuiltin(imp.original ?? imp.path)) found.push(`${file} -> ${imp.original ?? imp.path}`);
    }
  }
  return found;
}

/**
 * Bundles each entry into `outdir/<name>.js` (plus its source map). Rejects with a
 * {@link BrowserBundleError} when an entry imports a Node built-in (esbuild cannot resolve them
 * for the browser platform, and any it kept external would break in a page).
 */
export async function bundleForBrowser(opts: BundleOptions): Promise<{ files: string[] }> {
  let meta: Metafile;
  try {
    const result = await build({
      entryPoints: opts.entryPoints,
      outdir: opts.outdir,
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "chrome120",
      conditions: ["source"],
      sourcemap: "linked",
      metafile: true,
      logLevel: "silent",
      // Application bundlers do not rewrite `new URL("./x.js", import.meta.url)`: keep it as is.
      supported: { "import-meta": true, "top-level-await": true },
    });
    meta = result.metafile;
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { file: string } | null }[] }).errors ?? [];
    // For the browser platform esbuild cannot resolve built-ins: `Could not resolve "node:fs"`.
    const nodeImports = errors
      .filter((e) => isNodeBuiltin(/Could not resolve "([^"]+)"/.exec(e.text)?.[1] ?? ""))
      .map((e) => `${e.location?.file ?? "?"}: ${e.text}`);
    const detail = errors.map((e) => `${e.location?.file ?? "?"}: ${e.text}`).join("\n  ");
    throw new BrowserBundleError(
      nodeImports.length > 0
        ? `the browser bundle imports Node built-ins; browser-safe entries must not:\n  ${detail}`
        : `esbuild could not bundle ${Object.values(opts.entryPoints).join(", ")} for the browser:\n  ${detail}`,
      nodeImports,
      { cause: err },
    );
  }
  const nodeImports = nodeImportsOf(meta);
  if (nodeImports.length > 0) {
    throw new BrowserBundleError(
      `the browser bundle imports Node built-ins; browser-safe entries must not:\n  ${nodeImports.join("\n  ")}`,
      nodeImports,
    );
  }
  return { files: Object.keys(meta.outputs) };
}
