/**
 * The page's shared parts: its state (what `window.__viewer` exposes), what it has open, the
 * meter and the status line, messages, and `act`, which runs every action.
 */
import type { Moments } from "@deltacells/core";
import { explain } from "./explain.js";
import { type ActionCost, describeCost, formatBytes, Meter } from "./meter.js";
import type { ObsValues } from "./obs.js";
import type { Pair } from "./panels/compare.js";
import type { DotPlot } from "./panels/dotplot.js";
import type { MarkerRow } from "./panels/markers.js";
import type { Violins } from "./panels/violin.js";
import type { Scale } from "./scales.js";
import type { Scatter } from "./scatter.js";
import type { GeneValues, SelectionSource, Session } from "./session.js";

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** Rows of a markers table the page shows and keeps. */
export const MARKER_ROWS = 100;
export const MARKER_ROWS_SHOWN = 20;

/** The state the tests read. Arrays are copied into plain ones on request (see `snapshot`). */
export interface ViewerState {
  ready: boolean;
  error: string | undefined;
  dataset:
    | {
        url: string;
        nCells: number;
        nGenes: number;
        companion: string | undefined;
        obs: string[];
        stats: string | undefined;
      }
    | undefined;
  embedding: string | undefined;
  embeddings: string[];
  /** Page load to the embedding drawn with its colouring (above 40,000 cells on the subset first drawn) (ms). */
  firstDrawMs: number | undefined;
  /** Page load to every cell drawn (the same as the first frame up to 40,000 cells) (ms). */
  allCellsMs: number | undefined;
  /** Page load to the embedding's first frame: above 40,000 cells a subset, every cell following (ms). */
  firstFrameMs: number | undefined;
  /** How long the page took to compute the order of the rows in embedding order (ms), once it did. */
  rowsOrderMs: number | undefined;
  /** Why the rows in embedding order are named but not used. */
  rowsProblem: string | undefined;
  /** Where the latest selection's rows were read. */
  selectionRead: SelectionSource | undefined;
  gene: GeneValues | undefined;
  geneMs: number | undefined;
  /** A gene set: its genes and each cell's mean over them, on the scale. */
  geneSet: { names: string[]; values: Float32Array; max: number } | undefined;
  pair: Pair | undefined;
  scale: Scale;
  /** The colour scale's range now: the gene's own, or fixed. */
  range: { mode: "gene" | "fixed"; lo: number; hi: number };
  colourBy: { name: string; kind: string; counts?: number[] } | undefined;
  /** The histogram under the gene: bin counts and its axis's end labels. */
  histogram: { counts: number[]; labels: [string, string] } | undefined;
  selection: number[];
  /** Where the selection came from: cells picked on the plot, or categories of a column. */
  selectionFrom: { kind: "cells" } | { kind: "categories"; column: string; categories: number[] };
  hiddenCategories: number[];
  topGenes: { name: string; mean: number }[];
  markers:
    | { group: string; reference: string; nGroup: number; nReference: number; rows: MarkerRow[]; ms: number }
    | undefined;
  markersNote: string | undefined;
  allMarkers: { column: string; groups: { label: string; rows: MarkerRow[] }[]; ms: number } | undefined;
  dotplot: (DotPlot & { ms: number }) | undefined;
  violin: Violins | undefined;
  categoryMeans: { label: string; value: number }[];
  /** The fallback table without an embedding: per category, cells, cells expressing the gene, mean. */
  table: { label: string; cells: number; expressing: number; mean: number }[];
  hovered: number | undefined;
  hoverText: string;
  history: ActionCost[];
  busy: number;
  /** When the plot last redrew (ms since page load), the latest 500: the bench's frame times. */
  draws: number[];
}

export const meter = new Meter();
export const state: ViewerState = {
  ready: false,
  error: undefined,
  dataset: undefined,
  embedding: undefined,
  embeddings: [],
  firstDrawMs: undefined,
  allCellsMs: undefined,
  firstFrameMs: undefined,
  rowsOrderMs: undefined,
  rowsProblem: undefined,
  selectionRead: undefined,
  gene: undefined,
  geneMs: undefined,
  geneSet: undefined,
  pair: undefined,
  scale: "counts",
  range: { mode: "gene", lo: 0, hi: 0 },
  colourBy: undefined,
  histogram: undefined,
  selection: [],
  selectionFrom: { kind: "cells" },
  hiddenCategories: [],
  topGenes: [],
  markers: undefined,
  markersNote: undefined,
  allMarkers: undefined,
  dotplot: undefined,
  violin: undefined,
  categoryMeans: [],
  table: [],
  hovered: undefined,
  hoverText: "",
  history: meter.history,
  busy: 0,
  draws: [],
};
export const pageStart = performance.now();

/** What the page has open and draws, shared by its modules. */
export const ctx: {
  session: Session | undefined;
  scatter: Scatter | undefined;
  /** The embedding as drawn (the plot's coordinates). */
  coords: { x: Float32Array; y: Float32Array } | undefined;
  /** The obs column colouring the plot, if any. */
  colourValues: ObsValues | undefined;
  /** The reference of the markers: "rest", or a category (by index) of the selection's column. */
  reference: "rest" | number;
  /** The latest selection's moments (by companion column), while it is the selection. */
  selectionMoments: Moments | undefined;
  /** The plot's values on the current scale (per cell), reused between colourings. */
  scaled: Float32Array | undefined;
  /** The plot's own select event that follows a legend selection (its cells are the same). */
  pendingPlotSelection: number | undefined;
  /** A shared URL's view is being put back: the URL is written once, at its end. */
  restoring: boolean;
} = {
  session: undefined,
  scatter: undefined,
  coords: undefined,
  colourValues: undefined,
  reference: "rest",
  selectionMoments: undefined,
  scaled: undefined,
  pendingPlotSelection: undefined,
  restoring: false,
};

// ---- status line ----------------------------------------------------------------------------

export const statusText = $<HTMLSpanElement>("status-text");
export const cancelButton = $<HTMLButtonElement>("cancel");
cancelButton.addEventListener("click", () => meter.cancel());
meter.onLive = (live) => {
  state.busy = live ? 1 : 0;
  cancelButton.hidden = !live;
  if (live) {
    statusText.textContent = `${live.action}… ${live.requests} request${live.requests === 1 ? "" : "s"} (${live.inFlight} in flight), ${formatBytes(live.bytes)}`;
  } else {
    const last = meter.history.at(-1);
    if (last) statusText.textContent = describeCost(last);
  }
};

/** A message over the page (it never moves the plot: it is drawn over it). */
export function showMessage(text: string | undefined): void {
  const box = $<HTMLDivElement>("message");
  box.hidden = text === undefined;
  box.textContent = text ?? "";
  state.error = text;
}

/** Runs an action; a failure becomes the page's message, never a blank screen. */
export async function act<T>(
  name: string,
  where: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T | undefined> {
  try {
    return await meter.run(name, fn);
  } catch (err) {
    console.warn(err);
    showMessage(explain(err, where));
    return undefined;
  } finally {
    const last = meter.history.at(-1);
    if (last) statusText.textContent = describeCost(last);
  }
}
