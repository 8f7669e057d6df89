/** Small charts drawn without a library: a histogram on a canvas, legends and bars in HTML. */
import { categoryColours, viridis } from "./colors.js";
import { el } from "./panels/dom.js";

/**
 * A histogram of integer counts 1 .. max: one bin per value up to 40 values, else 40 equal bins
 * over [1, max]. `labels` are what the axis shows at its ends: the first value and the maximum.
 */
export function histogram(
  values: ArrayLike<number>,
  max: number,
): { counts: number[]; labels: [string, string]; top: number } {
  const top = Math.max(1, Math.ceil(max));
  const nBins = Math.min(40, top);
  const width = top / nBins;
  const counts = new Array<number>(nBins).fill(0);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!(v > 0)) continue;
    counts[Math.max(0, Math.min(nBins - 1, Math.floor((Math.ceil(v) - 1) / width)))]!++;
  }
  return { counts, labels: ["1", fmt(top)], top: Math.max(0, ...counts) };
}

/** Space above the bars for the "N cells" label, and below them for the axis. */
const HIST_TOP = 16;
const HIST_BOTTOM = 18;

export function drawHistogram(
  canvas: HTMLCanvasElement,
  h: { counts: number[]; labels: [string, string]; top: number },
  label: string,
): void {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const { width, height } = canvas;
  ctx.clearRect(0, 0, width, height);
  const top = Math.max(1, h.top);
  const bw = (width - 2) / h.counts.length;
  const colours = viridis(h.counts.length);
  h.counts.forEach((c, i) => {
    const bh = ((height - HIST_TOP - HIST_BOTTOM) * c) / top;
    ctx.fillStyle = colours[i]!;
    ctx.fillRect(1 + i * bw, height - HIST_BOTTOM - bh, Math.max(1, bw - 1), bh);
  });
  ctx.fillStyle = "#333";
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillText(h.labels[0], 1, height - 4);
  ctx.fillText(h.labels[1], width - ctx.measureText(h.labels[1]).width - 1, height - 4);
  ctx.fillText(label, width / 2 - ctx.measureText(label).width / 2, height - 4);
  ctx.fillText(`${top.toLocaleString("en-US")} cells`, 2, 11);
}

/**
 * A legend of categories with their cell counts (missing values last, when any). With `on`, an
 * entry is a button: a click selects the category's cells (shift adds it to the selection), its
 * eye hides or shows them. A long name is cut with an ellipsis and shown whole on hover.
 */
export function categoryLegend(
  target: HTMLElement,
  title: string,
  categories: string[],
  counts: number[],
  on?: {
    select(k: number, add: boolean): void;
    toggle(k: number): void;
    selected: ReadonlySet<number>;
    hidden: ReadonlySet<number>;
  },
): void {
  target.replaceChildren(el("div", { class: "legend-title" }, title));
  const colours = categoryColours(categories.length);
  const list = el("ul", { class: "legend-list" });
  [...categories, "(missing)"].forEach((name, i) => {
    if (i === categories.length && !counts[i]) return;
    const item = el("li", { "data-category": name, title: `${name}: ${counts[i] ?? 0} cells` });
    const label = el("span", { class: "legend-label" }, name);
    const parts = [
      el("span", { class: "swatch", style: `background:${colours[i]}` }),
      label,
      el("span", { class: "count" }, `${counts[i] ?? 0}`),
    ];
    if (on && i < categories.length) {
      if (on.selected.has(i)) item.classList.add("selected");
      if (on.hidden.has(i)) item.classList.add("hidden-category");
      const pick = el("button", { type: "button", class: "legend-pick", "data-k": String(i) }, ...parts);
      pick.addEventListener("click", (ev) => on.select(i, ev.shiftKey));
      const eye = el(
        "button",
        { type: "button", class: "legend-eye", title: on.hidden.has(i) ? `show ${name}` : `hide ${name}` },
        on.hidden.has(i) ? "◌" : "●",
      );
      eye.addEventListener("click", () => on.toggle(i));
      item.append(eye, pick);
    } else item.append(...parts);
    list.append(item);
  });
  target.append(list);
}

/** A horizontal colour bar from `lo` to `hi`. */
export function colourBar(target: HTMLElement, title: string, lo: number, hi: number): void {
  const stops = viridis(9);
  target.replaceChildren(
    el("div", { class: "legend-title" }, title),
    el("div", { class: "colour-bar", style: `background:linear-gradient(to right, ${stops.join(", ")})` }),
  );
  const ends = el("div", { class: "colour-bar-ends" });
  ends.append(el("span", {}, fmt(lo)), el("span", {}, fmt(hi)));
  target.append(ends);
}

export function fmt(v: number): string {
  if (!Number.isFinite(v)) return "–";
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3);
}

/** Labelled horizontal bars (values scaled to the largest). */
export function bars(
  target: HTMLElement,
  title: string,
  rows: { label: string; value: number; colour?: string }[],
): void {
  target.replaceChildren(el("div", { class: "legend-title" }, title));
  const top = Math.max(1e-12, ...rows.map((r) => r.value));
  const table = el("div", { class: "bars" });
  for (const r of rows) {
    const row = el("div", { class: "bar-row", "data-label": r.label, "data-value": String(r.value) });
    const bar = el("span", {
      class: "bar",
      style: `width:${(100 * r.value) / top}%;background:${r.colour ?? "#4a78b5"}`,
    });
    const track = el("span", { class: "bar-track" });
    track.append(bar);
    row.append(
      el("span", { class: "bar-label" }, r.label),
      track,
      el("span", { class: "bar-value" }, fmt(r.value)),
    );
    table.append(row);
  }
  target.append(table);
}
