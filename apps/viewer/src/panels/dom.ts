/** Building small pieces of the page without a framework. */

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

const SVG = "http://www.w3.org/2000/svg";

export function svg(tag: string, attrs: Record<string, string | number> = {}, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A number for a table cell: 3 significant digits, exponents for the very small or large. */
export function short(v: number): string {
  if (!Number.isFinite(v)) return v > 0 ? "∞" : v < 0 ? "-∞" : "–";
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a < 1e-3 || a >= 1e5 ? v.toExponential(2) : v.toPrecision(3);
}
