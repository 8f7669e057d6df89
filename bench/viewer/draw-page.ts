/**
 * The page of bench/viewer/draw.ts: the viewer's plot alone (apps/viewer/src/scatter.ts, or another
 * `createScatter` of the same interface handed in), on `n` cells in 12 square clusters, timed from
 * its creation: the first frame, every cell drawn, a colouring by category after that, and the
 * main thread's gaps (a timer every 10 ms; a gap over 100 ms is the page not answering input).
 */
import type { createScatter as CreateScatter } from "../../apps/viewer/src/scatter.js";

export async function run(createScatter: typeof CreateScatter, n: number) {
  const box = document.createElement("div");
  box.style.cssText = "position:relative;width:900px;height:600px";
  const canvas = document.createElement("canvas");
  box.appendChild(canvas);
  document.body.appendChild(box);
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  const codes = new Uint8Array(n);
  let seed = 1;
  const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  for (let i = 0; i < n; i++) {
    const k = i % 12;
    codes[i] = k;
    x[i] = Math.cos(k) * 0.6 + (rand() - 0.5) * 0.3;
    y[i] = Math.sin(k * 1.3) * 0.6 + (rand() - 0.5) * 0.3;
  }
  const gaps: number[] = [];
  let last = performance.now();
  let ticking = true;
  const tick = () => {
    const now = performance.now();
    if (now - last > 100) gaps.push(now - last);
    last = now;
    if (ticking) setTimeout(tick, 10);
  };
  tick();
  const t0 = performance.now();
  let firstFrame = 0;
  let frames = 0;
  const scatter = createScatter(
    canvas,
    { x, y },
    {
      hover() {},
      select() {},
      drawn: () => frames++,
      firstFrame: () => (firstFrame = performance.now() - t0),
    },
  );
  // As the page opens a dataset: no colouring yet; then every cell.
  await scatter.setColouring({ kind: "none" });
  const shown = performance.now() - t0;
  await ("allDrawn" in scatter ? scatter.allDrawn : Promise.resolve());
  const allCells = performance.now() - t0;
  const t1 = performance.now();
  await scatter.setColouring({ kind: "category", codes, nCategories: 12 });
  const colour = performance.now() - t1;
  // Frames a colouring leaves behind (a redraw it asked for after its own).
  const before = frames;
  await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => requestAnimationFrame(r));
  const after = frames - before;
  ticking = false;
  scatter.destroy();
  box.remove();
  return {
    firstFrame,
    shown,
    allCells,
    colour,
    framesAfterColour: after,
    longestGap: Math.max(0, ...gaps),
    gapsOver100: gaps.reduce((a, b) => a + b, 0),
  };
}
