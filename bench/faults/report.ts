/** The campaign's tables: one row per fault kind, one column per outcome, as markdown. */
import type { FaultClass } from "./classes.js";
import { EXPECTATIONS, violations } from "./expectations.js";
import { type CaseResult, OUTCOMES, tally } from "./outcome.js";

export function outcomeTable(results: readonly CaseResult[]): string {
  const rows = [...tally(results)].sort(([a], [b]) => a.localeCompare(b));
  const total = tally(results.map((r) => ({ ...r, kind: "all" }))).get("all");
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [
    line(["kind", ...OUTCOMES]),
    line(["---", ...OUTCOMES.map(() => "---:")]),
    ...rows.map(([kind, counts]) => line([kind, ...OUTCOMES.map((o) => counts[o])])),
    ...(total ? [line(["**all**", ...OUTCOMES.map((o) => `**${total[o]}**`)])] : []),
  ].join("\n");
}

/** A class's section of the report: its table, the tags seen, and what breaks the expectations. */
export function classReport(cls: FaultClass, results: readonly CaseResult[], seconds: number): string {
  const tags = new Map<string, number>();
  for (const r of results) if (r.tag) tags.set(r.tag, (tags.get(r.tag) ?? 0) + 1);
  const bad = violations(cls.name, results);
  const known = results.filter((r) => !["correct", "refused"].includes(r.outcome) && !bad.includes(r));
  const expectation = EXPECTATIONS[cls.name];
  const examples = (list: CaseResult[]) =>
    list
      .slice(0, 8)
      .map((r) => `  - ${r.outcome}: ${r.id}${r.tag ? ` [${r.tag}]` : ""}${r.detail ? `: ${r.detail}` : ""}`);
  return [
    `## ${cls.name}: ${results.length} cases in ${seconds.toFixed(1)} s`,
    "",
    cls.summary,
    "",
    outcomeTable(results),
    "",
    `tags: ${[...tags].map(([t, n]) => `${t} ${n}`).join(", ") || "none"}`,
    ...(known.length
      ? [`known (fixed by ${expectation?.fixedBy ?? "?"}): ${known.length} cases, e.g.`, ...examples(known)]
      : []),
    ...(bad.length ? [`UNEXPECTED: ${bad.length} cases, e.g.`, ...examples(bad)] : []),
    "",
  ].join("\n");
}
