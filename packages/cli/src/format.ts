/**
 * How every command writes a number for people: counts with thousands separators ("10,000"),
 * byte sizes in binary units ("60.0 KiB", as `--stats` does), never a bare figure beside a
 * formatted one. `--json` keeps the plain numbers.
 */
import type { StoreStats } from "@deltacells/storage";
import { formatBytes } from "@deltacells/storage/internal";

export { formatBytes };

/** An integer count with thousands separators: `10,000`. */
export function formatCount(n: number | bigint): string {
  return n.toLocaleString("en-US");
}

/** `n` and `word`, pluralised in English ("1 tile", "4,096 tiles"). */
export function count(n: number, word: string, plural = `${word}s`): string {
  return `${formatCount(n)} ${n === 1 ? word : plural}`;
}

/** The `--stats` line: `12 requests (getRange 10, get 2), read 1.21 MiB, written 0 B, 1 missing, 0 errors`. */
export function formatStats(s: StoreStats): string {
  const ops = Object.entries(s.requests).filter(([, n]) => n > 0);
  const total = ops.reduce((a, [, n]) => a + n, 0);
  return `${count(total, "request")}${ops.length ? ` (${ops.map(([op, n]) => `${op} ${formatCount(n)}`).join(", ")})` : ""}, read ${formatBytes(s.bytesRead)}, written ${formatBytes(s.bytesWritten)}, ${formatCount(s.missing)} missing, ${count(s.errors, "error")}`;
}
