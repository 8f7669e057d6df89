/** The hovered cell's tooltip beside the pointer: the cell, its barcode and its value. */
import { fmt } from "./charts.js";
import { $, ctx, state } from "./page.js";

// ---- hover ----------------------------------------------------------------------------------

/** The tooltip beside the pointer: the cell, its barcode (read with its tile's obs) and its value. */
export function onHover(cell: number | undefined, px: number, py: number): void {
  state.hovered = cell;
  const box = $("hover");
  if (cell === undefined || !ctx.session) {
    box.hidden = true;
    state.hoverText = "";
    return;
  }
  const parts = [`cell ${cell}`];
  const g = state.gene;
  if (state.geneSet) parts.push(`gene set ${fmt(state.geneSet.values[cell]!)}`);
  else if (g) parts.push(`${g.name} ${fmt(g.values[cell]!)}`);
  const c = ctx.colourValues;
  if (c?.kind === "category")
    parts.push(c.codes[cell]! === c.categories.length ? "(missing)" : c.categories[c.codes[cell]!]!);
  else if (c?.kind === "numeric") parts.push(`${c.name} ${fmt(c.values[cell]!)}`);
  const show = (text: string) => {
    box.textContent = text;
    state.hoverText = text;
  };
  show(parts.join(" · "));
  box.hidden = false;
  // Beside the pointer, kept inside the plot.
  const wrap = $("scatter-wrap").getBoundingClientRect();
  const w = box.offsetWidth;
  const h = box.offsetHeight;
  const x = px + 14 + w > wrap.width ? px - 14 - w : px + 14;
  const y = py + 14 + h > wrap.height ? py - 14 - h : py + 14;
  box.style.transform = `translate(${Math.max(0, x)}px, ${Math.max(0, y)}px)`;
  void ctx.session.barcode(cell).then(
    (code) => {
      if (code !== undefined && state.hovered === cell) show([parts[0], code, ...parts.slice(1)].join(" · "));
    },
    () => undefined,
  );
}
