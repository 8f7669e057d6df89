/**
 * The sporadik companion of a dataset (`convert --sporadik`): a sporadik store inside the dataset's
 * prefix, at the path named by the manifest's `metadata.sporadik`, holding the same cells x genes
 * counts with genes in the source's order. It answers "one gene across all cells" in two reads,
 * which the tiles (built to stream whole cells) cannot; the viewer colours cells by it.
 *
 * `convert --sporadik` (one input or an atlas) writes it from the same cells as the tiles, in the
 * tile pass, under the conversion's staging prefix (`companion` of `convertToDataset` and
 * `buildAtlasAt`): the dataset moves into place with it, named, or not at all.
 *
 * `append --sporadik` writes it again from the dataset once the cells are added (the old cells
 * are read back from their tiles): the store (block last), then the manifest again with the
 * companion named. A run cut anywhere leaves a valid dataset that names no companion, or names
 * one that is complete.
 */
import {
  COMPANION_PATH,
  companionOf,
  type Dataset,
  nameCompanion,
  type WriteStatsResult,
} from "@deltacells/core";
import { type CompanionWriter, writeDatasetStats } from "@deltacells/core/node";
import { describe as describeStore } from "@deltacells/sporadik";
import { joinLocation, type Store } from "@deltacells/storage";
import { validateSporadik } from "../inspect/sporadik.js";
import type { Locations } from "../locations.js";
import type { ProgressBar } from "../progress.js";
import { writeStoreAt } from "./sporadik.js";

/** What a written companion reports, as the commands' summaries show it. */
export interface CompanionReport {
  json: { output: string; bytes: number; checksums: boolean };
}

/**
 * The companion's writer for `convertToDataset` and `buildAtlasAt` (`companion`): both layouts,
 * with maxima, at the location it is given under the staging prefix; `report()` says what it
 * wrote once it is complete (where it is once the dataset is in place at `output`). With
 * `checksums` (the default of `--sporadik`) every chunk carries zstd's content checksum, which the
 * viewer's reader (zarrita's WebAssembly zstd) verifies as it decodes. The bar shows the tiles'
 * pass, then the companion's genes.
 */
export function companionWriter(
  locations: Locations,
  o: { output: string; threads: number; bar: ProgressBar; checksums: boolean },
): { write: CompanionWriter; report(): CompanionReport | undefined } {
  let report: CompanionReport | undefined;
  const write: CompanionWriter = async (rows, to) => {
    const { store } = await writeStoreAt(locations, to.location, rows, {
      source: o.output,
      shape: [to.nCells, to.nGenes],
      nnz: to.nnz,
      axes: [0, 1],
      byteAddressable: false,
      checksums: o.checksums,
      // Written while the tiles' pass holds its own blocks and tiles: the genes-contiguous layout
      // is transposed through temporary files (under the staging prefix) rather than in memory,
      // so the companion adds little to the conversion's peak. The bytes are the same.
      transposeMemory: 0,
      threads: o.threads,
      // The staging prefix is the conversion's own: it is dropped after a failure anyway.
      removeOnFailure: true,
      bar: o.bar,
      rowsPhase: undefined,
    });
    report = {
      json: {
        output: locations.openCounted(joinLocation(o.output, COMPANION_PATH)).url,
        bytes: store.stats.bytesWritten,
        checksums: o.checksums,
      },
    };
  };
  return { write, report: () => report };
}

/**
 * Writes the companion of the dataset at `output` again from its tiles (after an append), then
 * names it in the manifest.
 * With `checksums` (the default of `--sporadik`) every chunk carries zstd's content checksum, which
 * the viewer's reader (zarrita's WebAssembly zstd) verifies as it decodes.
 */
export async function writeCompanion(
  locations: Locations,
  output: string,
  threads: number,
  bar: ProgressBar,
  checksums: boolean,
) {
  const { convertToSporadik } = await import("./sporadik.js");
  const result = await convertToSporadik(locations, {
    input: output,
    output: joinLocation(output, COMPANION_PATH),
    axes: [0, 1],
    byteAddressable: false,
    checksums,
    // The dataset's own companion, written again after an append: replaced, staged (the old
    // one stays readable until the new one is complete).
    overwrite: true,
    breakLock: false,
    maxNnz: undefined,
    tmpDir: undefined,
    threads,
    inputOptions: {},
    bar,
  });
  await nameCompanion(locations.openCounted(output), COMPANION_PATH);
  return result;
}

/**
 * The statistics of the dataset in `store` (docs/stats.md), written after its companion by a
 * command holding the dataset's lock (`convert`, `append` and an atlas with `--sporadik`).
 */
export async function writeStatsWithBar(
  store: Store,
  threads: number,
  bar: ProgressBar,
): Promise<WriteStatsResult> {
  bar.phase("stats");
  const result = await writeDatasetStats(store, {
    threads,
    onProgress: (done, total) => bar.update(done, total, "tiles"),
  });
  bar.finish();
  return result;
}

/** Problems of a dataset's companion: its own validation, and its shape against the manifest's. */
export async function validateCompanion(
  locations: Locations,
  ds: Dataset,
  location: string,
): Promise<{ problems: { object: string; tag: string; message: string }[]; checked: boolean }> {
  const rel = companionOf(ds);
  if (rel === undefined) return { problems: [], checked: false };
  const store = locations.openCounted(joinLocation(location, rel));
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
