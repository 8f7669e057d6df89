/**
 * The sporadik companion of a dataset (`convert --sporadik`): a sporadik store inside the dataset's
 * prefix, at the path named by the manifest's `metadata.sporadik`, holding the same cells x genes
 * counts with genes in the source's order. It answers "one gene across all cells" in two reads,
 * which the tiles (built to stream whole cells) cannot; the viewer colours cells by it.
 *
 * Order of writes: the dataset (manifest last), then the store (block last), then the manifest again
 * with the companion named. A run cut anywhere leaves a valid dataset that names no companion, or
 * names one that is complete.
 */
import { join } from "node:path";
import { type Dataset, DeltacellsError } from "@deltacells/core";
import { MANIFEST_KEY, parseManifest } from "@deltacells/core/internal";
import { describe as describeStore } from "@deltacells/sporadik";
import { CliError } from "./errors.js";
import { openCounted } from "./io.js";
import type { ProgressBar } from "./progress.js";
import { validateSporadik } from "./sporadik-info.js";

/** The companion's path inside the dataset, as recorded in `metadata.sporadik`. */
export const COMPANION_PATH = "sporadik";

/** A path inside a dataset location (a folder, file:// or another URL). */
export function insideLocation(location: string, rel: string): string {
  return /^[a-z][a-z0-9+.-]+:\/\//i.test(location)
    ? `${location.replace(/\/+$/, "")}/${rel}`
    : join(location, rel);
}

/** The companion named by a dataset's manifest, or undefined; a name that could leave the prefix is refused. */
export function companionOf(ds: Dataset): string | undefined {
  const rel = ds.manifest.metadata.sporadik;
  if (rel === undefined) return undefined;
  if (
    typeof rel !== "string" ||
    !/^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/.test(rel)
  ) {
    throw new DeltacellsError(
      `${ds.url}/manifest.json: metadata.sporadik must be a relative path inside the dataset (e.g. "sporadik"), got ${JSON.stringify(rel)}`,
      {
        tag: "InconsistentManifest",
        object: `${ds.url}/manifest.json`,
        field: "metadata.sporadik",
        expected: "a relative path inside the dataset",
        found: rel,
      },
    );
  }
  return rel;
}

/**
 * Writes the companion of the dataset just written at `output`, then names it in the manifest.
 * With `checksums` (the default of `--sporadik`) every chunk carries zstd's content checksum, which
 * the viewer's reader (zarrita's WebAssembly zstd) verifies as it decodes.
 */
export async function writeCompanion(output: string, threads: number, bar: ProgressBar, checksums: boolean) {
  const { convertToSporadik } = await import("./convert-sporadik.js");
  const result = await convertToSporadik({
    input: output,
    output: insideLocation(output, COMPANION_PATH),
    axes: [0, 1],
    byteAddressable: false,
    checksums,
    overwrite: false,
    breakLock: false,
    maxNnz: undefined,
    tmpDir: undefined,
    threads,
    inputOptions: {},
    bar,
  });
  const store = openCounted(output);
  const bytes = await store.get(MANIFEST_KEY);
  if (bytes === undefined)
    throw new CliError(`${store.url}/${MANIFEST_KEY} vanished while the companion was written`, {
      tag: "ConcurrentChange",
      object: `${store.url}/${MANIFEST_KEY}`,
    });
  const manifest = parseManifest(bytes, `${store.url}/${MANIFEST_KEY}`);
  manifest.metadata = { ...manifest.metadata, sporadik: COMPANION_PATH };
  // The writer's own serialisation: compact JSON on one line.
  await store.set(MANIFEST_KEY, new TextEncoder().encode(`${JSON.stringify(manifest)}\n`));
  return result;
}

/** Problems of a dataset's companion: its own validation, and its shape against the manifest's. */
export async function validateCompanion(
  ds: Dataset,
  location: string,
): Promise<{ problems: { object: string; tag: string; message: string }[]; checked: boolean }> {
  const rel = companionOf(ds);
  if (rel === undefined) return { problems: [], checked: false };
  const store = openCounted(insideLocation(location, rel));
  let info: Awaited<ReturnType<typeof describeStore>>;
  try {
    info = await describeStore(store);
  } catch (err) {
    const e = err as Error & { _tag?: string };
    return {
      problems: [
        {
          object: store.url,
          tag: e._tag ?? e.name,
          message: `the manifest names a sporadik companion at ${JSON.stringify(rel)}, which cannot be read: ${e.message}`,
        },
      ],
      checked: true,
    };
  }
  const problems = [];
  const [cells, genes] = info.shape;
  if (info.shape.length !== 2 || cells !== ds.nCells || genes !== ds.nGenes) {
    problems.push({
      object: `${store.url}/zarr.json`,
      tag: "CompanionMismatch",
      message: `the companion's shape is [${info.shape.join(", ")}], the dataset's [${ds.nCells}, ${ds.nGenes}]: it holds another matrix. Convert again with --sporadik.`,
    });
  }
  const own = (await validateSporadik(store, info)).json as { problems: typeof problems };
  problems.push(...own.problems);
  return { problems, checked: true };
}
