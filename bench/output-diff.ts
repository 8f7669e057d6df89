/**
 * Two conversions' outputs compared file by file, byte for byte (tiles, gene files, obs, manifest,
 * a companion store): what the conversion benches check a change against a reference checkout with.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/** Every file under `dir`, as paths relative to it, sorted. */
export function outputFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      if (e.isDirectory()) walk(path);
      else found.push(relative(dir, path));
    }
  };
  walk(dir);
  return found.sort();
}

/** Differences between two outputs: files on one side only, or whose bytes differ (and, for a manifest, which fields). */
export function outputDifferences(reference: string, other: string): string[] {
  const fa = outputFiles(reference);
  const fb = outputFiles(other);
  const out: string[] = [];
  for (const f of new Set([...fa, ...fb])) {
    if (!fa.includes(f) || !fb.includes(f)) {
      out.push(`${f}: only in ${fa.includes(f) ? "the reference" : "this checkout"}`);
      continue;
    }
    const x = readFileSync(join(reference, f));
    const y = readFileSync(join(other, f));
    if (x.equals(y)) continue;
    if (f.endsWith("manifest.json")) {
      const mx = JSON.parse(x.toString());
      const my = JSON.parse(y.toString());
      const fields = [...new Set([...Object.keys(mx), ...Object.keys(my)])].filter(
        (k) => JSON.stringify(mx[k]) !== JSON.stringify(my[k]),
      );
      out.push(`${f} differs (${fields.join(", ") || "key order only"})`);
    } else
      out.push(
        `${f}: ${statSync(join(reference, f)).size} vs ${statSync(join(other, f)).size} bytes, not equal`,
      );
  }
  return out;
}
