/**
 * The options every atlas step takes (`convert` of several inputs, `plan`, `plan --scan`, `plan
 * --merge`, `append`): the inputs (positional or `--inputs LIST`), how genes are matched and
 * joined, the source column, and the task index a scheduler hands a job array's task.
 */
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import {
  type AtlasPlanOptions,
  ConflictingObsColumn,
  DeltacellsError,
  isDeltacellsError,
  type ObsWriteOptions,
  type OpenedSource,
} from "@deltacells/core";
import { parseLocation } from "@deltacells/storage";
import { intOption, UsageError } from "./args.js";
import type { Locations } from "./locations.js";

export const ATLAS_PARSE_OPTIONS = {
  inputs: { type: "string" },
  "var-key": { type: "string" },
  join: { type: "string" },
  genes: { type: "string" },
  "drop-unlisted-genes": { type: "boolean" },
  "gene-order": { type: "string" },
  "source-column": { type: "string" },
  "source-names": { type: "string" },
  "no-source-column": { type: "boolean" },
  "obsm-fill": { type: "boolean" },
} as const;

/** The options of how inputs are read, which the plan records for its tasks. */
export const READ_PARSE_OPTIONS = {
  layer: { type: "string" },
  raw: { type: "boolean" },
  transpose: { type: "boolean" },
  genome: { type: "string" },
  "hdf5-timeout": { type: "string" },
} as const;

export const ATLAS_HELP = `  --inputs LIST  a text file of inputs, one path or URL a line (after any given as arguments);
                 blank lines and lines starting with # are skipped, a relative path is relative
                 to the file's folder, and a name after a tab is the input's source name
  --var-key COL  match genes on this var column (e.g. gene_ids: Ensembl IDs) instead of the
                 var index
  --join J       outer (default, as anndata.concat): every input's genes; inner: the genes all
                 inputs have
  --genes FILE   a declared gene space, one key a line: an input's gene outside it is refused,
                 naming how many and which input (genes listed that no input has are columns of
                 zeros)
  --drop-unlisted-genes
                 with --genes: drop the genes outside it instead, reporting them and their share
                 of each input's counts
  --gene-order FILE
                 the output's gene order, one key a line (each gene of the space once), instead
                 of decreasing total counts
  --source-column NAME
                 the obs column naming each cell's input (default "source" with several inputs)
  --source-names A,B,...
                 the inputs' names in that column (default: their file names without extension)
  --no-source-column
                 no such column
  --obsm-fill    keep an embedding some inputs lack, null for their cells (default: kept only
                 where every input has it, else left out with a note)`;

/** Lines of a list file: blank ones and `#` comments skipped. */
function lines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trimEnd())
    .filter((l) => l.trim().length > 0 && !l.trimStart().startsWith("#"));
}

/** A local path made absolute (tasks may run in another folder or on another machine); URLs as they are. */
export function absoluteInput(path: string, base = process.cwd()): string {
  return parseLocation(path).kind === "url" ? path : resolve(base, path);
}

/** The inputs: the positional ones, then those of `--inputs LIST`, with the names a list gives. */
export async function atlasInputs(
  positionals: string[],
  values: Record<string, unknown>,
): Promise<{ paths: string[]; names: (string | undefined)[] }> {
  const paths = positionals.map((p) => absoluteInput(p));
  const names: (string | undefined)[] = positionals.map(() => undefined);
  const list = values.inputs as string | undefined;
  if (list !== undefined) {
    let text: string;
    try {
      text = await readFile(list, "utf8");
    } catch (cause) {
      throw new UsageError(`--inputs ${list}: ${(cause as Error).message}`, { object: list, cause });
    }
    for (const line of lines(text)) {
      const [path, name] = line.split("\t");
      paths.push(absoluteInput(path!.trim(), dirname(resolve(list))));
      names.push(name?.trim() || undefined);
    }
    if (lines(text).length === 0) throw new UsageError(`--inputs ${list} lists no input`);
  }
  return { paths, names };
}

/** One key a line, for --genes and --gene-order. */
async function keyList(flag: string, file: string | undefined): Promise<string[] | undefined> {
  if (file === undefined) return undefined;
  try {
    return lines(await readFile(file, "utf8")).map((l) => l.trim());
  } catch (cause) {
    throw new UsageError(`--${flag} ${file}: ${(cause as Error).message}`, { object: file, cause });
  }
}

/** The reading options the plan records (and `--hdf5-timeout`, which only this process uses). */
export function readOptions(values: Record<string, unknown>): {
  read: Record<string, unknown>;
  hdf5Timeout?: number;
} {
  const read: Record<string, unknown> = {};
  if (values.layer !== undefined) read.layer = values.layer;
  if (values.raw === true) read.raw = true;
  if (values.transpose === true) read.transpose = true;
  if (values.genome !== undefined) read.genome = values.genome;
  return { read, hdf5Timeout: intOption(values, "hdf5-timeout", undefined, 0, 86400) };
}

/** The library's plan options from the command line. */
export async function planOptions(
  values: Record<string, unknown>,
  inputs: { paths: string[]; names: (string | undefined)[] },
  extra: { tileSize?: number; nChunks?: number; level?: number; obs: ObsWriteOptions; tasks?: number },
): Promise<AtlasPlanOptions> {
  const join = (values.join as string | undefined) ?? "outer";
  if (join !== "outer" && join !== "inner")
    throw new UsageError(`--join must be outer or inner, got ${JSON.stringify(join)}`);
  const genes = await keyList("genes", values.genes as string | undefined);
  if (values["drop-unlisted-genes"] && genes === undefined)
    throw new UsageError("--drop-unlisted-genes applies with --genes FILE (the declared gene space)");
  if (genes !== undefined && values.join !== undefined)
    throw new UsageError("--join and --genes exclude each other: --genes declares the gene space");
  const noSource = values["no-source-column"] === true;
  if (noSource && (values["source-column"] !== undefined || values["source-names"] !== undefined))
    throw new UsageError("--no-source-column excludes --source-column and --source-names");
  let names: string[] | undefined;
  if (values["source-names"] !== undefined) {
    names = (values["source-names"] as string).split(",").map((s) => s.trim());
    if (names.length !== inputs.paths.length)
      throw new UsageError(`--source-names gives ${names.length} names for ${inputs.paths.length} inputs`);
  } else if (inputs.names.some((n) => n !== undefined)) {
    const { sourceNames } = await import("@deltacells/core");
    const derived = sourceNames(inputs.paths);
    names = inputs.names.map((n, i) => n ?? derived[i]!);
  }
  const sourceColumn = noSource ? null : ((values["source-column"] as string | undefined) ?? undefined);
  if (extra.obs.skip && sourceColumn) throw new UsageError("--source-column needs obs: drop --no-obs");
  return {
    paths: inputs.paths,
    ...(names ? { names } : {}),
    sourceColumn: extra.obs.skip ? null : sourceColumn,
    varKey: values["var-key"] as string | undefined,
    genes: {
      join,
      ...(genes ? { genes, dropUnlisted: values["drop-unlisted-genes"] === true } : {}),
      ...(values["gene-order"] !== undefined
        ? { order: await keyList("gene-order", values["gene-order"] as string) }
        : {}),
    },
    obs: { ...extra.obs, obsmFill: values["obsm-fill"] === true },
    tileSize: extra.tileSize,
    nChunks: extra.nChunks,
    level: extra.level,
    tasks: extra.tasks,
    read: readOptions(values).read,
  };
}

/** Whether the command line asks for an atlas (options only atlases take). */
export function asksForAtlas(values: Record<string, unknown>): boolean {
  return Object.keys(ATLAS_PARSE_OPTIONS).some((k) => values[k] !== undefined);
}

/** Where a scheduler puts a job array task's index, in the order they are looked at. */
export const TASK_INDEX_VARIABLES = [
  "SLURM_ARRAY_TASK_ID",
  "AWS_BATCH_JOB_ARRAY_INDEX",
  "JOB_COMPLETION_INDEX",
];

/**
 * The task index: `--task` when given, else the first of {@link TASK_INDEX_VARIABLES} set, else
 * 0 when there is a single task; `count` tasks in all.
 */
export function taskIndex(
  values: Record<string, unknown>,
  count: number,
  what: string,
  env = process.env,
): number {
  const given = intOption(values, "task", undefined, 0);
  if (given !== undefined) return given;
  for (const name of TASK_INDEX_VARIABLES) {
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    if (!/^\d+$/.test(raw)) throw new UsageError(`${name} is ${JSON.stringify(raw)}, not a task index`);
    return Number(raw);
  }
  if (count === 1) return 0;
  throw new UsageError(
    `which ${what}? pass --task I (0 .. ${count - 1}), or run this as a job array's task (${TASK_INDEX_VARIABLES.join(", ")} give the index)`,
  );
}

/** Opens atlas inputs as `convert` opens its input (local files, s3:// and http(s):// zarr). */
export function inputOpener(
  locations: Locations,
  read: Record<string, unknown>,
  hdf5Timeout: number | undefined,
): (path: string) => Promise<OpenedSource> {
  return async (path) => {
    // Loaded here, not at the top: the HDF5 reader costs seconds to start.
    const { openInput } = await import("@deltacells/anndata/node");
    const source = await openInput(path, {
      ...read,
      hdf5Timeout,
      openStore: (url: string) => locations.openCounted(url),
    });
    return { source, release: () => source.close() };
  };
}

const WORDING: [RegExp, string][] = [
  [/the var key option/g, "--var-key"],
  [/the drop-unlisted-genes option/g, "--drop-unlisted-genes"],
  [/the obsm fill option/g, "--obsm-fill"],
  [/the obsm option/g, "--obsm"],
  [/the source column option/g, "--source-column"],
  [/the source names option/g, "--source-names"],
  [/the obs exclude option/g, "--obs-exclude"],
  [/the sporadik option/g, "--sporadik"],
];

/** The library's words for its options replaced by the command's flags. */
export function cliWords(text: string): string {
  let out = text;
  for (const [re, flag] of WORDING) out = out.replace(re, flag);
  return out;
}

/** A library refusal of the atlas options, told with the command's flags. */
export function explainAtlasError(err: unknown): unknown {
  if (!isDeltacellsError(err)) return err;
  let message =
    err instanceof ConflictingObsColumn
      ? ConflictingObsColumn.describe(
          err.column,
          [err.inputs[0], err.kinds[0]],
          [err.inputs[1], err.kinds[1]],
          `Leave it out with --obs-exclude ${err.column}`,
        )
      : err.message;
  message = cliWords(message);
  if (message === err.message) return err;
  return new DeltacellsError(message, {
    tag: err._tag,
    object: err.object,
    field: err.field,
    expected: err.expected,
    found: err.found,
    cause: err,
  });
}
