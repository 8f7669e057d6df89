/**
 * What a fault case can end as, and how an error is judged. The order of badness, worst first:
 * a wrong answer (numbers that differ, no error), a hang, a crash (an untagged error or an
 * aborted process), an unclear refusal (tagged, but not naming the object in its message and
 * structured fields, or a message a person cannot read: binary bytes, a page long), then the two
 * good outcomes: the correct answer, or a clear tagged refusal.
 */

export type Outcome = "correct" | "refused" | "refused-unclear" | "crash" | "hang" | "wrong";

export const OUTCOMES: readonly Outcome[] = [
  "correct",
  "refused",
  "refused-unclear",
  "crash",
  "hang",
  "wrong",
];

/** Outcomes that are acceptable whatever the expectations say. */
export const GOOD: ReadonlySet<Outcome> = new Set(["correct", "refused"]);

/** One case's result: its class, the kind of fault within the class, what happened. */
export interface CaseResult {
  /** Replays the case: the class's seed-derived case number and a short description. */
  id: string;
  kind: string;
  outcome: Outcome;
  /** The error's `_tag` (or the CLI's `[Tag]`), when there was one. */
  tag?: string;
  /** The first line of the error, or why the answer is wrong. */
  detail?: string;
}

/** The tag of `err` or of the first cause that has one. */
export function tagOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 6; depth++) {
    const tag = (e as { _tag?: unknown })._tag;
    if (typeof tag === "string") return tag;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** First line of an error's message, shortened for tables. */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0]!.slice(0, 200);
}

/**
 * Judge a thrown error: tagged and naming the object, tagged only, or a crash. An error names the
 * object when one of `names` is in its message (what a user reads) or its structured fields
 * (`object` in @deltacells/core, `where` in @deltacells/sporadik, `key`, `location` or `url` in
 * @deltacells/storage: what a caller reacts to).
 */
export function judgeError(
  err: unknown,
  names: readonly string[],
): Pick<CaseResult, "outcome" | "tag" | "detail"> {
  const tag = tagOf(err);
  const detail = firstLine(err);
  if (tag === undefined) return { outcome: "crash", detail };
  const e = err as { object?: unknown; where?: unknown; key?: unknown; location?: unknown; url?: unknown };
  const object = [e.object, e.where, e.key, e.location, e.url].map((f) => String(f ?? "")).join(" ");
  const message = err instanceof Error ? err.message : String(err);
  const named = names.some((n) => object.includes(n) || message.includes(n));
  return { outcome: named ? "refused" : "refused-unclear", tag, detail };
}

/** Resolves with `run()`'s value, or with `"timeout"` after `ms` (the run is abandoned, not stopped). */
export async function withTimeout<T>(ms: number, run: () => Promise<T>): Promise<T | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((ok) => {
    timer = setTimeout(() => ok("timeout"), ms);
  });
  try {
    return await Promise.race([run(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `tasks` with at most `limit` at once, results in task order. */
export async function inParallel<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return out;
}

/** Counts of each outcome per kind, for the report and the docs' tables. */
export function tally(results: readonly CaseResult[]): Map<string, Record<Outcome, number>> {
  const table = new Map<string, Record<Outcome, number>>();
  for (const r of results) {
    let row = table.get(r.kind);
    if (!row) {
      row = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
      table.set(r.kind, row);
    }
    row[r.outcome]++;
  }
  return table;
}
