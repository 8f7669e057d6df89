/** The marker genes table: a comparison's top genes by score, as scanpy's `rank_genes_groups_df` shows them. */
import type { MarkerTable } from "@deltacells/core";
import { el, short } from "./dom.js";

/** One ranked gene, with the statistics scanpy reports for it. */
export interface MarkerRow {
  gene: string;
  score: number;
  logFoldChange: number;
  pval: number;
  pvalAdj: number;
  /** Fraction of the group's cells expressing the gene, and of the reference's. */
  pts: number;
  ptsRest: number;
}

/** The `n` best-ranked genes of `table` (columns named by `nameOfColumn`). */
export function markerRows(table: MarkerTable, nameOfColumn: readonly string[], n: number): MarkerRow[] {
  return Array.from(table.order.subarray(0, n), (j) => ({
    gene: nameOfColumn[j]!,
    score: table.scores[j]!,
    logFoldChange: table.logFoldChanges[j]!,
    pval: table.pvals[j]!,
    pvalAdj: table.pvalsAdj[j]!,
    pts: table.pts[j]!,
    ptsRest: table.ptsRest[j]!,
  }));
}

/** The table of `rows`; clicking a gene calls `onGene` (the page colours by it). */
export function renderMarkers(target: HTMLElement, rows: MarkerRow[], onGene: (gene: string) => void): void {
  const head = el(
    "tr",
    {},
    ...["gene", "score", "log2 FC", "% in", "% rest", "adj. p"].map((h) => el("th", {}, h)),
  );
  const body = rows.map((r) => {
    const name = el("button", { type: "button", class: "gene-link", title: `colour by ${r.gene}` }, r.gene);
    name.addEventListener("click", () => onGene(r.gene));
    return el(
      "tr",
      { "data-gene": r.gene },
      el("td", {}, name),
      el("td", {}, short(r.score)),
      el("td", {}, short(r.logFoldChange)),
      el("td", {}, (100 * r.pts).toFixed(0)),
      el("td", {}, (100 * r.ptsRest).toFixed(0)),
      el("td", {}, short(r.pvalAdj)),
    );
  });
  target.replaceChildren(el("table", { class: "markers" }, el("thead", {}, head), el("tbody", {}, ...body)));
}
