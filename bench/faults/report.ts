/** The campaign's tables: one row per fault kind, one column per outcome, as markdown. */
import type { FaultClass } from "./classes.js";
import { EXPECTATIONS, standing } from "./expectations.js";
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

/** One line: the class, its cases and the count of each outcome seen. */
export function summaryLine(name: string, results: readonly CaseResult[], seconds: number): string {
  const counts = tally(results.map((r) => ({ ...r, kind: "all" }))).get("all");
  const seen = OUTCOMES.filter((o) => counts && counts[o] > 0).map((o) => `${o} ${counts![o]}`);
  return `${name}: ${results.length} cases in ${seconds.toFixed(1)} s: ${seen.join(", ")}`;
}

/** A class's section of the report: its table, the tags seen, and what breaks the expectations. */
export function classReport(cls: FaultClass, results: readonly CaseResult[], seconds: number): string {
  const tags = new Map<string, number>();
  for (const r of results) if (r.tag) tags.set(r.tag, (tags.get(r.tag) ?? 0) + 1);
  const of = (s: ReturnType<typeof standing>) => results.filter((r) => standing(cls.name, r) === s);
  const [bad, known, limits] = [of("violation"), of("known"), of("limit")];
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
    ...(limits.length
      ? [`format limits (see expectations.ts): ${limits.length} cases, e.g.`, ...examples(limits)]
      : []),
    ...(known.length
      ? [`known (fixed by ${expectation?.fixedBy ?? "?"}): ${known.length} cases, e.g.`, ...examples(known)]
      : []),
    ...(bad.length ? [`UNEXPECTED: ${bad.length} cases, e.g.`, ...examples(bad)] : []),
    "",
  ].join("\n");
}
