/**
 * How every command writes a number for people: counts with thousands separators ("10,000"),
 * byte sizes in binary units ("60.0 KiB", as `--stats` does), never a bare figure beside a
 * formatted one. `--json` keeps the plain numbers.
 */
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
