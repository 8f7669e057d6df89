/**
 * Which bad outcomes each class tolerates: a known defect until its fix is merged, or a documented
 * limit of the design. The CI test fails on any wrong answer, crash, hang or unnamed refusal that
 * is not listed here. After merging a fix, replace that class's line by `STRICT` and rerun (see
 * docs/reliability.md): the test then fails if the defect is still there.
 */
import type { CaseResult, Outcome } from "./outcome.js";
import { GOOD } from "./outcome.js";

export interface Expectation {
  /** What fixes the tolerated outcomes, or why they stay. */
  fixedBy?: string;
  /**
   * Per fault kind, the bad outcomes tolerated until then. A key is a kind (`indices chunk/swap`),
   * a prefix (`stall/*`: every kind starting `stall/`), a suffix (a key starting with `*` and a
   * slash, as in network's validate line: every kind ending so) or `*` (every kind of the class).
   */
  tolerate: Readonly<Record<string, readonly Outcome[]>>;
}

export const STRICT: Expectation = { tolerate: {} };

function known(fixedBy: string, tolerate: Record<string, Outcome[]>): Expectation {
  return { fixedBy, tolerate };
}

/** One line per class: flip a `known(...)` to `STRICT` once its fix is merged. */
export const EXPECTATIONS: Readonly<Record<string, Expectation>> = {
  // Corrupt-tile errors of ds.cells()/export that do not name the tile key.
  "tile-mutants": STRICT,
  "killed-convert": STRICT,
  "killed-stream": STRICT,
  // No stall timeout (a stalled server hangs every reader); binary error bodies pasted into
  // messages; validate labels HTTP failures [Error].
  network: STRICT,
  "concurrent-slices": STRICT,
  // By design, not a defect: a swapped or flipped `indices` chunk (or a missing `indptr` chunk of
  // leading slices) that keeps every position inside the axis breaks the positions' order only,
  // which the reader checks when asked (`checkIndices`: 1.15-2.1x on warm batches,
  // bench/sporadik/index-check.ts, so off by default) and `deltacells validate` and `deltacells
  // slice` always check. Checksums leave the swaps (a sibling chunk carries a valid checksum of its
  // own) and the missing first `indptr` chunk (legal zeros for leading empty slices, no chunk to check).
  "sporadik-damage": known("opt-in checkIndices (validate and slice always refuse)", {
    "indices chunk/*": ["wrong"],
    "indptr chunk/*": ["wrong"],
    "checksummed indices chunk/swap": ["wrong"],
    "checksummed indptr chunk/swap": ["wrong"],
    "checksummed indptr chunk/delete": ["wrong"],
  }),
  // lzf damage spins inside HDF5 (no watchdog); HDF5 and WASM failures reach the user untagged.
  "h5ad-damage": STRICT,
  // validate refuses a manifest's escaping metadata.sporadik with an untagged Error (companionOf).
  "hostile-keys": STRICT,
  // A flipped byte of a cached obs column was served by every later read, and never replaced.
  "obs-cache": STRICT,
};

/**
 * What the formats cannot detect, and stays tolerated after every fix. Without checksums (zstd's is
 * off, as Python sporadik writes by default, byte for byte) a `data` chunk flipped where zstd still
 * decodes reads as other numbers; with or without them, a `data` chunk replaced by another valid
 * chunk of the same array (a swap: its checksum is its own) does. validate catches these when the
 * maxima or the two layouts' sums disagree. A missing `data` chunk is no longer one: it is refused.
 */
export const FORMAT_LIMITS: Readonly<Record<string, Readonly<Record<string, readonly Outcome[]>>>> = {
  "sporadik-damage": {
    "data chunk/swap": ["wrong"],
    "data chunk/flip": ["wrong"],
    "checksummed data chunk/swap": ["wrong"],
  },
};

function matches(key: string, kind: string): boolean {
  if (key === "*" || key === kind) return true;
  if (key.endsWith("/*")) return kind.startsWith(key.slice(0, -1));
  return key.startsWith("*/") && kind.endsWith(key.slice(1));
}

/**
 * How a result stands against the expectations: a good outcome, a format limit, a known defect
 * (tolerated until its fix is merged), or a violation (the CI test fails).
 */
export function standing(className: string, r: CaseResult): "good" | "limit" | "known" | "violation" {
  if (GOOD.has(r.outcome)) return "good";
  const listed = (table: Readonly<Record<string, readonly Outcome[]>>) =>
    Object.entries(table).some(([key, outcomes]) => matches(key, r.kind) && outcomes.includes(r.outcome));
  if (listed(FORMAT_LIMITS[className] ?? {})) return "limit";
  return listed((EXPECTATIONS[className] ?? STRICT).tolerate) ? "known" : "violation";
}

/** The results the expectations do not allow: what makes the CI test fail. */
export function violations(className: string, results: readonly CaseResult[]): CaseResult[] {
  return results.filter((r) => standing(className, r) === "violation");
}
