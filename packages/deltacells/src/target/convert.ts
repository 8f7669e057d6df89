/**
 * A conversion into a dataset at a location, as `deltacells convert` makes it: the target's writer
 * lock taken and the target checked before any input is opened, the dataset written under the
 * staging prefix and moved into place once its manifest is there, the staging dropped after a
 * failure (an old dataset stays as it was), and the lock released however it ends. One input
 * ({@link convertToDataset}) or several, an atlas built in this process ({@link buildAtlasAt}),
 * either with its sporadik companion written in the same pass (`companion`).
 */
import { joinLocation, type StatsStore, type Store } from "@deltacells/storage";
import { localPath } from "@deltacells/storage/node";
import {
  type AtlasInputRef,
  type BuildAtlasOptions,
  type BuildAtlasResult,
  buildAtlas,
} from "../atlas/build.js";
import type { SecondOutput, SecondOutputMatrix } from "../atlas/second-output.js";
import { COMPANION_PATH, nameCompanion } from "../dataset/companion.js";
import { type LeftOutPart, leftOut } from "../dataset/left-out.js";
import { MANIFEST_KEY } from "../dataset/manifest.js";
import type { CanonicalRowBlock, DatasetSource } from "../dataset/source.js";
import type { WriteDatasetOptions, WriteDatasetResult } from "../dataset/writer.js";
import { writeDataset } from "../dataset/writer.js";
import { type OpenTargetOptions, openTarget, TargetError } from "./target.js";

/** A source the conversion opens, once its target is known to be writable, and closes. */
export type ClosableSource = DatasetSource & { close(): Promise<void> };

/**
 * Writes a dataset's sporadik companion at `location` from `rows`, the cells of the tile pass (as
 * a {@link SecondOutput}: every cell in order, genes in the source's order, read to the end). This
 * package never writes sporadik: the caller brings the writer (`convertToStore` of
 * @deltacells/sporadik/node).
 */
export type CompanionWriter = (
  rows: AsyncIterable<CanonicalRowBlock>,
  to: SecondOutputMatrix & { location: string },
) => Promise<void>;

/** What else goes into the dataset under its lock. */
interface AlongWith {
  /**
   * The dataset's sporadik companion, written from the same cells as the tiles while they are
   * cut (one read of the inputs for both), under the staging prefix at {@link COMPANION_PATH};
   * the manifest names it (`metadata.sporadik`) once it is complete, and the dataset moves into
   * place with it: a run cut anywhere leaves the target as it was, never a dataset naming a half
   * companion. Its failure fails the conversion.
   */
  companion?: CompanionWriter;
  /**
   * Runs once the dataset is in place, before the lock is released: what else goes into the
   * dataset under the same lock. A failure fails the conversion; the dataset stays in place.
   */
  afterCommit?: (store: StatsStore) => Promise<void>;
}

/** Options of {@link convertToDataset}: the writer's, and the target's. */
export interface ConvertToDatasetOptions
  extends Omit<WriteDatasetOptions, "secondOutput">,
    OpenTargetOptions,
    AlongWith {}

/** What {@link convertToDataset} wrote, and where. */
export interface ConvertToDatasetResult<S> extends WriteDatasetResult {
  /** The target, counting every request of the conversion (the staging writes and moves included). */
  store: StatsStore;
  /** The source, closed. */
  source: S;
  /** Temporary files of killed writers removed from the target (a folder) once the lock was taken. */
  removedTempFiles: string[];
  /** What the input holds that the dataset does not (see {@link leftOut}); [] when it cannot tell. */
  leftOut: LeftOutPart[];
}

/** Options of {@link buildAtlasAt}: the build's, and the target's (every input is refused as the target). */
export interface BuildAtlasAtOptions
  extends Omit<BuildAtlasOptions, "secondOutput">,
    Omit<OpenTargetOptions, "input">,
    AlongWith {}

/** What {@link buildAtlasAt} wrote, and where. */
export interface BuildAtlasAtResult extends BuildAtlasResult {
  /** The target, counting every request of the build (the staging writes and moves included). */
  store: StatsStore;
  /** Temporary files of killed writers removed from the target (a folder) once the lock was taken. */
  removedTempFiles: string[];
}

/**
 * `write` into the staging prefix of the target at `output` (with the companion, when asked, as
 * its second output), the companion named in the staged manifest, then the manifest moved into
 * place last and `afterCommit` run; the staging removed after a failure, the lock released however
 * it ends.
 */
async function throughTarget<R>(
  output: string,
  options: OpenTargetOptions & AlongWith,
  write: (staging: Store, secondOutput: SecondOutput | undefined) => Promise<R>,
): Promise<R & { store: StatsStore; removedTempFiles: string[] }> {
  const { afterCommit, companion, ...targetOptions } = options;
  const target = await openTarget(output, targetOptions);
  try {
    const location = joinLocation(target.stagingLocation, COMPANION_PATH);
    const result = await write(
      target.staging,
      companion && ((rows, matrix) => companion(rows, { ...matrix, location })),
    );
    if (companion) await nameCompanion(target.staging, COMPANION_PATH);
    await target.commit(MANIFEST_KEY);
    await afterCommit?.(target.store);
    return { ...result, store: target.store, removedTempFiles: target.removedTempFiles };
  } catch (err) {
    await target.abandon().catch(() => undefined);
    throw err;
  } finally {
    await target.lock.release();
  }
}

/** `options` split: the target's (and what goes into the dataset along with it), and the rest, the writer's. */
function targetPart<O extends OpenTargetOptions & AlongWith>(options: O) {
  const {
    input,
    overwrite,
    breakLock,
    open,
    writer,
    optionNames,
    releaseOnSignal,
    afterCommit,
    companion,
    ...rest
  } = options;
  const target = {
    input,
    overwrite,
    breakLock,
    open,
    writer,
    optionNames,
    releaseOnSignal,
    afterCommit,
    companion,
  };
  return { target, rest };
}

/**
 * Convert the source `open` opens into a dataset at `output` (a local path or URL), with the
 * target's checks and staging of {@link openTarget}: refused before `open` is called when the
 * target cannot be written; written under the staging prefix and moved into place, manifest last;
 * the staging removed after a failure. The source is closed and the lock released however it ends.
 *
 *     const { manifest } = await convertToDataset("s3://bucket/pbmc", () => openInput("pbmc.h5ad"), {
 *       input: "pbmc.h5ad",
 *       encoder: pool,
 *       compress: zstdCompressor(),
 *     });
 */
export async function convertToDataset<S extends ClosableSource>(
  output: string,
  open: () => Promise<S>,
  options: ConvertToDatasetOptions,
): Promise<ConvertToDatasetResult<S>> {
  const { target, rest: write } = targetPart(options);
  return throughTarget(output, target, async (staging, secondOutput) => {
    const source = await open();
    try {
      const written = await writeDataset(source, staging, { ...write, secondOutput });
      // What the input holds besides the matrix is said when it can be told: a listing that fails
      // (a store over HTTP lists nothing) costs the note, never the dataset just written.
      const inventory = await source.inventory?.().catch(() => undefined);
      const left = inventory ? leftOut(inventory, written.manifest, source.matrixPath) : [];
      return { ...written, source, leftOut: left };
    } finally {
      await source.close();
    }
  });
}

/** Whether two locations name the same place (local paths resolved, URLs as given). */
function samePlace(a: string, b: string): boolean {
  const pa = localPath(a);
  const pb = localPath(b);
  if (pa !== undefined || pb !== undefined) return pa === pb;
  return a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
}

/**
 * Build the atlas of `inputs` (see `buildAtlas`) into a dataset at `output`, with the target's
 * checks and staging of {@link openTarget}, as {@link convertToDataset} writes one input: refused
 * before any input is opened when `output` is one of them or cannot be written; written under the
 * staging prefix and moved into place, manifest last; the staging removed after a failure.
 */
export async function buildAtlasAt(
  output: string,
  inputs: AtlasInputRef[],
  options: BuildAtlasAtOptions,
): Promise<BuildAtlasAtResult> {
  const { target, rest: build } = targetPart(options);
  if (inputs.some((i) => samePlace(i.path, output))) {
    throw new TargetError(
      `${output} is one of the inputs: a conversion cannot replace what it reads; write to another location`,
      { tag: "TargetIsInput", object: output },
    );
  }
  return throughTarget(output, target, (staging, secondOutput) =>
    buildAtlas(inputs, staging, { ...build, secondOutput }),
  );
}
