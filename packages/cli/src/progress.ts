/**
 * A one-line progress bar with rate and ETA on stderr, drawn only on a terminal; for a program
 * (`DELTACELLS_STDERR=json`), the same updates as `{"progress": ...}` lines.
 */

import { formatCount } from "./format.js";
import { progressLine, stderrIsJson } from "./stderr-json.js";

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "--:--";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

function rate(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

export class ProgressBar {
  private label = "";
  private start = 0;
  private last = 0;
  private drawn = false;

  constructor(
    private readonly out: NodeJS.WriteStream = process.stderr,
    readonly enabled = Boolean(process.stderr.isTTY),
    /** Write `{"progress": ...}` lines instead of drawing. */
    private readonly json = false,
  ) {}

  /** Start (or restart, for a new phase) counting from zero. */
  phase(label: string): void {
    if (this.drawn && !this.json) this.out.write("\n");
    this.label = label;
    this.start = performance.now();
    this.last = 0;
    this.drawn = false;
  }

  /** A line for the person at the terminal (where temporary files go, what was removed): only where the bar is drawn. */
  say(line: string): void {
    if (this.enabled) this.out.write(`${line}\n`);
  }

  /** Redraw at most ten times a second, and always at 100%. */
  update(done: number, total: number, unit: string): void {
    if (!this.enabled) return;
    const now = performance.now();
    if (done < total && now - this.last < 100) return;
    this.last = now;
    if (this.json) {
      this.out.write(progressLine(this.label, done, total, unit));
      return;
    }
    const elapsed = (now - this.start) / 1000;
    // The first blocks arrive in a burst: a rate over less than half a second means nothing.
    const perSec = elapsed > 0.5 ? done / elapsed : 0;
    const frac = total > 0 ? Math.min(1, done / total) : 1;
    const width = 24;
    const filled = Math.round(frac * width);
    const eta = perSec > 0 ? (total - done) / perSec : Number.POSITIVE_INFINITY;
    const line = `${this.label.padEnd(7)} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}% ${formatCount(done)}/${formatCount(total)} ${unit} ${perSec ? rate(perSec) : "--"} ${unit}/s ETA ${duration(eta)}`;
    this.out.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  /** End the line so the next output starts clean. */
  finish(): void {
    if (this.drawn) this.out.write("\n");
    this.drawn = false;
  }
}

/**
 * The bar of a command taking `--quiet` and `--json`: drawn on a terminal unless either is given;
 * for a program (`DELTACELLS_STDERR=json`) as progress lines unless `--quiet`.
 */
export function commandBar(values: { quiet?: unknown; json?: unknown }): ProgressBar {
  if (stderrIsJson()) return new ProgressBar(process.stderr, values.quiet !== true, true);
  return new ProgressBar(process.stderr, Boolean(process.stderr.isTTY) && !values.quiet && !values.json);
}
