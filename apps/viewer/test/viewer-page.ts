/**
 * The viewer's page as its tests drive it: open it on a dataset, wait on its state (never on
 * time), read what it holds (`window.__viewer`) and where it draws a cell. Shared by the browser
 * and conformance tests of the page.
 */
import assert from "node:assert/strict";
import { openInput } from "@deltacells/anndata/node";
import type { Browser, Page } from "playwright-core";

export interface Snapshot {
  ready: boolean;
  error?: string;
  embedding?: string;
  firstDrawMs?: number;
  dataset?: { nCells: number; nGenes: number; companion?: string };
  gene?: { name: string; values: number[]; nonzero: number; max: number };
  colourBy?: { name: string; kind: string; counts?: number[] };
  selection: number[];
  topGenes: { name: string; mean: number }[];
  categoryMeans: { label: string; value: number }[];
  table: { label: string; cells: number; expressing: number; mean: number }[];
  history: { action: string; requests: number; waves: number; bytes: number; outcome: string }[];
  busy: number;
  [more: string]: unknown;
}

/** The input's own obs table, read by `@deltacells/anndata`. */
export async function sourceObs(path: string) {
  const input = await openInput(path);
  try {
    return await input.obs();
  } finally {
    await input.close();
  }
}

/** The categorical obs column `name` of the `.h5ad` at `path`, as its reader gives it, with its cells per category. */
export async function sourceCategory(path: string, name: string) {
  const column = (await sourceObs(path)).columns.find((c) => c.name === name);
  if (column?.kind !== "category") throw new Error(`${path}: ${name} is not a categorical obs column`);
  return { ...column, cellsOf: (k: number) => [...column.codes.keys()].filter((c) => column.codes[c] === k) };
}

export const snapshot = (page: Page) =>
  page.evaluate(() => (window as unknown as { __viewer: { snapshot(): Snapshot } }).__viewer.snapshot());

/** Opens the viewer of `server` on `data` (`query`: more of the page's parameters), collecting uncaught page errors. */
export async function openViewer(
  browser: Browser,
  server: string,
  data: string,
  query = "",
  /** Run in the page before any of its own scripts (page.addInitScript). */
  init?: () => void,
): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 } });
  if (init) await page.addInitScript(init);
  // Every wait on the page only turns a hang into a failure: generous for CI's load (not 30 s).
  page.setDefaultTimeout(120_000);
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server}?data=${encodeURIComponent(data)}${query}`);
  await page.waitForFunction(
    () =>
      (window as unknown as { __viewer?: { state: { ready: boolean; error?: string } } }).__viewer?.state
        .ready || (window as unknown as { __viewer?: { state: { error?: string } } }).__viewer?.state.error,
  );
  return { page, errors };
}

/** Waits until the plot shows its latest colouring at its final size (positions hold, clicks land). */
export const plotSettled = (page: Page) =>
  page.waitForFunction(() =>
    (window as unknown as { __viewer: { plotSettled(): boolean } }).__viewer.plotSettled(),
  );

export const idle = (page: Page) =>
  page.waitForFunction(
    () => (window as unknown as { __viewer: { state: { busy: number } } }).__viewer.state.busy === 0,
  );

/** Where the plot draws `cell` now, in its pixels. */
export const screenAt = async (page: Page, cell: number): Promise<[number, number]> =>
  (await page.evaluate(
    (c) =>
      (
        window as unknown as { __viewer: { screenPosition(i: number): [number, number] | undefined } }
      ).__viewer.screenPosition(c),
    cell,
  ))!;

/**
 * The hover ring (placed by the page's own mapping of cells to the plot's pixels, the one picking
 * uses) is on `cell` where regl-scatterplot's getScreenPosition puts it: a library upgrade that
 * changes its transform would otherwise shift picking silently.
 */
export async function assertRingOn(page: Page, cell: number): Promise<void> {
  const [ring, plot] = await page.evaluate((c) => {
    const el = document.querySelector<HTMLElement>(".hover-ring")!;
    const m = /translate\(([^p]+)px, ([^p]+)px\)/.exec(el.style.transform);
    const at = (
      window as unknown as { __viewer: { screenPosition(i: number): [number, number] } }
    ).__viewer.screenPosition(c);
    return [el.hidden || !m ? undefined : ([Number(m[1]), Number(m[2])] as [number, number]), at] as const;
  }, cell);
  assert.ok(
    ring !== undefined && Math.hypot(ring[0] - plot[0], ring[1] - plot[1]) < 0.5,
    `cell ${cell}: ring at ${ring}, drawn at ${plot}`,
  );
}

/** Non-white pixels and distinct colours of a screenshot, counted by decoding it in the page. */
export async function inkOf(page: Page, png: Buffer): Promise<{ ink: number; colours: number }> {
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.width;
    c.height = img.height;
    const ctx = c.getContext("2d")!;
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    const colours = new Set<number>();
    for (let i = 0; i < d.length; i += 4) {
      if (d[i]! < 235 || d[i + 1]! < 235 || d[i + 2]! < 235) ink++;
      colours.add((d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!);
    }
    return { ink, colours: colours.size };
  }, png.toString("base64"));
}
