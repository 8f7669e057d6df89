/**
 * The view as the page's URL keeps it, beside `data` (and `sporadik`, `endpoint`, `region`), so a
 * link opens the same view: `gene` (a name, or names separated by commas: a gene set), `gene2`
 * (side by side), `color` (an obs column), `scale`, `range` (`lo,hi`: fixed), `emb` (the
 * embedding), `cells` (a selection's code, selection-code.ts) or `cats` (categories of `color`,
 * by index), `vs` (the markers' reference category), `hide` (hidden categories), `dot` (the dot
 * plot's genes).
 */
export interface ViewState {
  gene?: string | undefined;
  gene2?: string | undefined;
  colour?: string | undefined;
  scale?: string | undefined;
  range?: [number, number] | undefined;
  embedding?: string | undefined;
  selection?: { cells: string } | { categories: number[] } | undefined;
  reference?: number | undefined;
  hidden?: number[] | undefined;
  dotplot?: string[] | undefined;
}

const KEYS = ["gene", "gene2", "color", "scale", "range", "emb", "cells", "cats", "vs", "hide", "dot"];

const indices = (text: string | null) =>
  text === null || text === ""
    ? undefined
    : text
        .split(",")
        .map(Number)
        .filter((k) => Number.isInteger(k) && k >= 0);

export function readViewState(q: URLSearchParams): ViewState {
  const range = q.get("range")?.split(",").map(Number);
  const cats = indices(q.get("cats"));
  const cells = q.get("cells");
  const vs = q.get("vs");
  return {
    gene: q.get("gene") ?? undefined,
    gene2: q.get("gene2") ?? undefined,
    colour: q.get("color") ?? undefined,
    scale: q.get("scale") ?? undefined,
    range: range?.length === 2 && range.every(Number.isFinite) ? [range[0]!, range[1]!] : undefined,
    embedding: q.get("emb") ?? undefined,
    selection: cats ? { categories: cats } : cells ? { cells } : undefined,
    reference: vs !== null && Number.isInteger(Number(vs)) ? Number(vs) : undefined,
    hidden: indices(q.get("hide")),
    dotplot: q.get("dot")?.split(",").filter(Boolean),
  };
}

/** Writes `v` into `q`, replacing the view's keys (the location's are left alone). */
export function writeViewState(q: URLSearchParams, v: ViewState): void {
  for (const k of KEYS) q.delete(k);
  const set = (k: string, value: string | undefined) => {
    if (value !== undefined && value !== "") q.set(k, value);
  };
  set("gene", v.gene);
  set("gene2", v.gene2);
  set("color", v.colour);
  if (v.scale !== "counts") set("scale", v.scale);
  set("range", v.range?.join(","));
  set("emb", v.embedding);
  if (v.selection && "cells" in v.selection) set("cells", v.selection.cells);
  if (v.selection && "categories" in v.selection) set("cats", v.selection.categories.join(","));
  set("vs", v.reference?.toString());
  set("hide", v.hidden?.join(","));
  set("dot", v.dotplot?.join(","));
}
