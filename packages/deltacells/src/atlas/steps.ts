/**
 * The steps of an atlas build, each one call against the output's store, all taking the same
 * options (so a job script passes the same arguments to each): scan one input (`plan --scan`),
 * make the plan from the scans (`plan --merge`), run one task (`convert --plan --task`), and
 * finalize (`finalize`, in ./finalize.ts). A one-process build runs them in turn.
 */
import type { ReadableStore, WritableStore } from "@deltacells/storage";
import type { DatasetSource } from "../dataset/source.js";
import type { Compress } from "../dataset/var-table.js";
import { DeltacellsError } from "../errors.js";
import { sha256Hex } from "../obs/fingerprint.js";
import { scanKey } from "./layout.js";
import { type AtlasPlan, type AtlasPlanOptions, makePlan } from "./plan.js";
import { type InputIdentity, type InputScan, scanInput } from "./scan.js";
import { readPlan, type ScanProblem, storedScans, writePlan, writeScan } from "./store.js";
import { runTask, type TaskOptions, type TaskRecord } from "./task.js";

type AtlasStore = ReadableStore & WritableStore & { url?: string };

/** The hash of what the scans depend on: a merge refuses records made with other inputs or options. */
export async function scanDigest(opts: AtlasPlanOptions): Promise<string> {
  const canonical = {
    paths: opts.paths,
    read: opts.read ?? {},
    var_key: opts.varKey ?? null,
    obs: {
      skip: opts.obs?.skip ?? false,
      exclude: opts.obs?.exclude ?? [],
      obsm: opts.obs?.obsm ?? "auto",
      max_categories: opts.obs?.maxCategories ?? null,
    },
  };
  return (await sha256Hex(new TextEncoder().encode(JSON.stringify(canonical)))).slice(0, 24);
}

/** The merge refused: scan records are missing or belong to another build (see `problems`). */
export class MissingScans extends DeltacellsError {
  readonly problems: ScanProblem[];
  constructor(message: string, options: { object: string; problems: ScanProblem[] }) {
    super(message, {
      tag: "IncompleteDataset",
      object: options.object,
      field: "scans",
      found: options.problems,
    });
    this.problems = options.problems;
  }

  /** The message (one line), `rerun(inputs)` saying how to scan those inputs (a CLI gives its command). */
  static describe(
    where: string,
    problems: ScanProblem[],
    total: number,
    rerun: (inputs: number[]) => string,
  ): string {
    const listed = problems
      .slice(0, 10)
      .map(
        (p) =>
          `input ${p.input} ${p.problem === "missing" ? "is not scanned" : "was scanned with other inputs or options"}`,
      );
    const more = problems.length > 10 ? `; and ${problems.length - 10} more` : "";
    const one = problems.length === 1;
    return `${where}: ${problems.length} of the ${total} inputs ${one ? "has" : "have"} no scan record of this build, so no plan was made: ${listed.join("; ")}${more}. Scan ${one ? "it" : "them"}: ${rerun(problems.map((p) => p.input))}`;
  }
}

export interface ScanStepOptions {
  identity?: InputIdentity | null;
  blockCells?: number;
  signal?: AbortSignal;
  onProgress?: (cellsDone: number) => void;
}

/** Scan input `i` (opened as `source`) of the build `opts` and record it under `store`. */
export async function scanStep(
  store: AtlasStore,
  opts: AtlasPlanOptions,
  i: number,
  source: DatasetSource,
  step: ScanStepOptions = {},
): Promise<InputScan> {
  const n = opts.paths.length;
  if (!Number.isSafeInteger(i) || i < 0 || i >= n) {
    throw new DeltacellsError(`input ${i} is not one of the ${n} inputs (0 .. ${n - 1})`, {
      tag: "InvalidInput",
      field: "task",
      expected: `0 .. ${n - 1}`,
      found: i,
    });
  }
  const scan = await scanInput(source, {
    varKey: opts.varKey,
    obs: opts.obs,
    tolerant: n > 1,
    identity: step.identity ?? null,
    blockCells: step.blockCells,
    signal: step.signal,
    onProgress: step.onProgress,
  });
  await writeScan(store, scan, { input: i, inputs: n, digest: await scanDigest(opts) }, step.signal);
  return scan;
}

/**
 * Make the plan of the build `opts` from the scan records under `store` and write it, with the
 * gene files; refused with {@link MissingScans} while a record is missing or of another build.
 */
export async function planStep(
  store: AtlasStore,
  opts: AtlasPlanOptions,
  compress: Compress,
  put?: (key: string, value: Uint8Array) => Promise<void>,
): Promise<AtlasPlan> {
  const scans = storedScans(store, opts.paths.length, await scanDigest(opts));
  const problems = await scans.check();
  if (problems.length > 0) {
    const where = store.url ?? "the atlas";
    throw new MissingScans(
      MissingScans.describe(where, problems, opts.paths.length, (inputs) => `inputs ${inputs.join(", ")}`),
      { object: `${where}/${scanKey(problems[0]!.input)}`, problems },
    );
  }
  const { plan, varTable } = await makePlan(scans, opts);
  await writePlan(store, plan, varTable, compress, put);
  return plan;
}

/** Run task `t` of the plan under `store`. */
export async function taskStep(
  store: AtlasStore,
  t: number,
  opts: TaskOptions,
): Promise<{ plan: AtlasPlan; record: TaskRecord }> {
  const plan = await readPlan(store, opts.signal);
  if (plan === undefined) {
    const where = store.url ?? "the atlas";
    throw new DeltacellsError(`${where} has no atlas plan: make the plan before running its tasks`, {
      tag: "NotFound",
      object: `${where}/.deltacells-atlas/plan.json`,
    });
  }
  return { plan, record: await runTask(store, plan, t, opts) };
}
