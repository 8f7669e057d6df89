/** How the atlas commands tell a plan: its shape, its tasks, what it left out. */
import type { AtlasPlan } from "@deltacells/core";
import { count } from "./args.js";
import { cliWords } from "./atlas-options.js";
import { formatCount } from "./format.js";

/** The plan's tasks, told: how many, and the ranges of the first few. */
export function describePlan(plan: AtlasPlan): string {
  const nTiles = Math.ceil(plan.n_cells / plan.tile_size);
  const ranges = plan.tasks
    .slice(0, 4)
    .map(
      (t, i) =>
        `task ${i}: tiles ${t.tiles[0]} .. ${t.tiles[1] - 1} (${t.rows.map((r) => `input ${r.input} rows ${r.start}:${r.end}`).join(", ") || "nothing"})`,
    );
  const empty = plan.tasks.filter((t) => t.tiles[0] === t.tiles[1]).length;
  const dropped = plan.dropped.map(
    (d) =>
      `  ${d.location}: ${count(d.count, "gene")} left out (${d.keys.slice(0, 3).join(", ")}${d.count > 3 ? ", ..." : ""}), ${(100 * d.share).toFixed(2)}% of its counts`,
  );
  return [
    `  ${count(plan.inputs.length, "input")}: ${formatCount(plan.n_cells)} cells x ${formatCount(plan.n_genes)} genes, ${formatCount(plan.nnz)} nonzeros in ${count(nTiles, "tile")} of up to ${count(plan.tile_size, "cell")}`,
    `  ${count(plan.tasks.length, "task")}${empty ? ` (${empty} with nothing to write: more tasks than obs shards)` : ""}: ${ranges.join("; ")}${plan.tasks.length > 4 ? "; ..." : ""}`,
    ...dropped,
    ...plan.notes.map((n) => `  note: ${cliWords(n)}`),
  ].join("\n");
}

/** What `plan` prints as JSON about a plan. */
export function planJson(plan: AtlasPlan): Record<string, unknown> {
  return {
    plan: plan.id,
    n_inputs: plan.inputs.length,
    n_cells: plan.n_cells,
    n_genes: plan.n_genes,
    nnz: plan.nnz,
    tile_size: plan.tile_size,
    n_tiles: Math.ceil(plan.n_cells / plan.tile_size),
    n_tasks: plan.tasks.length,
    tasks: plan.tasks.map((t) => ({ tiles: t.tiles, rows: t.rows })),
    dropped: plan.dropped,
    notes: plan.notes,
  };
}
