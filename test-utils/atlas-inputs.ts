/**
 * The inputs of an atlas test, written by `conformance/atlas_inputs.py` (anndata, pinned in
 * conformance/.venv): seven inputs whose genes overlap without being equal and whose obs columns
 * differ (six h5ad, one AnnData zarr), an input an atlas must refuse (a column of text where the
 * others hold numbers), and anndata's own concatenation of the seven to compare an atlas against.
 * See the script's docstring for what each input holds.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const python = join(repoRoot, "conformance/.venv/bin/python");
const script = join(repoRoot, "conformance/atlas_inputs.py");

/** One file written by the script, as its manifest describes it. */
export interface AtlasFile {
  /** The file's name without extension: an input's `source` category in the expected result. */
  name: string;
  /** Absolute path. */
  path: string;
  format: "h5ad" | "zarr";
  nObs: number;
  nVars: number;
  /** Nonzero counts, and their sum. */
  nnz: number;
  totalCounts: number;
  /** obs columns (in file order) and their pandas dtype: `category`, `int64`, `float32`, `bool`... */
  obs: Record<string, string>;
  /** var columns, in file order (every input has `gene_ids`). */
  var: string[];
  /** The first three var names. */
  firstVarNames: string[];
}

export interface AtlasInputs {
  /** The folder written: `inputs/`, `conflict/`, `expected/`, `manifest.json`. */
  dir: string;
  /** The seven inputs, in the order of the expected result's cells and `source` categories. */
  inputs: AtlasFile[];
  /** The input to refuse; `column` is the obs column of text that is numeric in the inputs. */
  conflict: AtlasFile & { column: string };
  /**
   * `anndata.concat(inputs, join="outer", label="source", keys=names)` as h5ad: genes matched by
   * var index (`byIndex`) or by the `gene_ids` column (`byGeneIds`, var index = gene_ids). Genes
   * in anndata's order (sorted): compare genes by name. Counts as float32 CSR.
   */
  expected: { byIndex: AtlasFile; byGeneIds: AtlasFile };
  /** The obs column of the expected results naming each cell's input: `source`. */
  sourceColumn: string;
  /** The script's random seed (the output is the same for every run). */
  seed: number;
}

/**
 * Runs `conformance/atlas_inputs.py` into `dir` (a new temporary folder when not given; an
 * existing folder must be empty) and resolves with what it wrote. The caller removes `dir`. Takes
 * a few seconds (loading anndata, writing nine files).
 */
export async function writeAtlasInputs(dir?: string): Promise<AtlasInputs> {
  if (!existsSync(python)) {
    throw new Error(
      `the atlas inputs are written with anndata from ${python}, which does not exist: ` +
        "run `node scripts/setup-conformance.mjs` (npm test and npm run test:conformance do)",
    );
  }
  const out = dir ?? (await mkdtemp(join(tmpdir(), "atlas-inputs-")));
  await new Promise<void>((resolve, reject) => {
    execFile(python, [script, out], { encoding: "utf8" }, (err, _stdout, stderr) => {
      if (err)
        reject(new Error(`conformance/atlas_inputs.py ${out} failed: ${stderr.trim()}`, { cause: err }));
      else resolve();
    });
  });
  const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8")) as Omit<AtlasInputs, "dir">;
  const absolute = <F extends AtlasFile>(f: F): F => ({ ...f, path: join(out, f.path) });
  return {
    ...manifest,
    dir: out,
    inputs: manifest.inputs.map(absolute),
    conflict: absolute(manifest.conflict),
    expected: {
      byIndex: absolute(manifest.expected.byIndex),
      byGeneIds: absolute(manifest.expected.byGeneIds),
    },
  };
}
