/** Small charts drawn without a library: a histogram on a canvas, legends and bars in HTML. */
import { categoryColours, viridis } from "./colors.js";

/** Bin edges for integer counts 1..max: unit bins up to 40 values, then 40 equal bins. */
export function histogram(values: ArrayLike<number>, max: number): { edges: number[]; counts: number[] } {
  const nBins = Math.max(1, Math.min(40, Math.ceil(max)));
  const width = Math.max(1, max) / nBins;
  const counts = new Array<number>(nBins).fill(0);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!(v > 0)) continue;
    const b = Math.min(nBins - 1, Math.floor((v - (width >= 1 ? 1 : 0)) / width));
    counts[Math.max(0, b)]!++;
  }
  const edges = Array.from({ length: nBins + 1 }, (_, i) => (width >= 1 ? 1 : 0) + i * width);
  return { edges, counts };
}

export function drawHistogram(
  canvas: HTMLCanvasElement,
  h: { edges: number[]; counts: number[] },
  label: string,
): void {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const { width, height } = canvas;
  ctx.clearRect(0, 0, width, height);
  const top = Math.max(1, ...h.counts);
  const pad = 18;
  const bw = (width - 2) / h.counts.length;
  const colours = viridis(h.counts.length);
  h.counts.forEach((c, i) => {
    const bh = ((height - pad - 4) * c) / top;
    ctx.fillStyle = colours[i]!;
    ctx.fillRect(1 + i * bw, height - pad - bh, Math.max(1, bw - 1), bh);
  });
  ctx.fillStyle = "#333";
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillText(`${h.edges[0]}`, 1, height - 4);
  const last = `${Math.round(h.edges.at(-1)!)}`;
  ctx.fillText(last, width - ctx.measureText(last).width - 1, height - 4);
  ctx.fillText(label, width / 2 - ctx.measureText(label).width / 2, height - 4);
  ctx.fillText(`${top} cells`, 2, 11);
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A legend of categories with their cell counts (missing values last, when any). */
export function categoryLegend(
  target: HTMLElement,
  title: string,
  categories: string[],
  counts: number[],
): void {
  target.replaceChildren(el("div", { class: "legend-title" }, title));
  const colours = categoryColours(categories.length);
  const list = el("ul", { class: "legend-list" });
  [...categories, "(missing)"].forEach((name, i) => {
    if (i === categories.length && !counts[i]) return;
    const item = el("li", { "data-category": name });
    item.append(
      el("span", { class: "swatch", style: `background:${colours[i]}` }),
      ` ${name} `,
      el("span", { class: "count" }, `${counts[i] ?? 0}`),
    );
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
