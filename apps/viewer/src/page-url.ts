/** The page's URL: where the data is, and the view (view-state.ts) written back on every change. */
import { ctx, state } from "./page.js";
import { encodeCells } from "./selection-code.js";
import { absolute, type Locations } from "./session.js";
import { type ViewState, writeViewState } from "./view-state.js";

// ---- the URL ------------------------------------------------------------------------------------

export function locationsFromPage(): Locations | undefined {
  const q = new URLSearchParams(location.search);
  const data = q.get("data");
  if (!data) return undefined;
  const sporadik = q.get("sporadik");
  return {
    data: absolute(data, location.href),
    ...(sporadik ? { sporadik: absolute(sporadik, location.href) } : {}),
    ...(q.get("endpoint") ? { endpoint: q.get("endpoint")! } : {}),
    ...(q.get("region") ? { region: q.get("region")! } : {}),
  };
}

/** The view as the URL keeps it (what a shared link opens). */
export function viewState(): ViewState {
  const from = state.selectionFrom;
  return {
    gene: state.geneSet ? state.geneSet.names.join(",") : state.gene?.name,
    gene2: state.pair?.b,
    colour: ctx.colourValues?.name,
    scale: state.scale,
    range: state.range.mode === "fixed" ? [state.range.lo, state.range.hi] : undefined,
    embedding: state.embedding,
    selection:
      from.kind === "categories"
        ? { categories: from.categories }
        : state.selection.length
          ? { cells: encodeCells(state.selection) }
          : undefined,
    reference: ctx.reference === "rest" ? undefined : ctx.reference,
    hidden: state.hiddenCategories.length ? state.hiddenCategories : undefined,
    dotplot: state.dotplot?.genes,
  };
}

export function updateUrl(): void {
  if (ctx.restoring || !ctx.session) return;
  const url = new URL(location.href);
  writeViewState(url.searchParams, viewState());
  history.replaceState(null, "", url);
}
