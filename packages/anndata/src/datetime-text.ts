/**
 * numpy `datetime64` values as ISO-8601 text, exactly as `numpy.datetime_as_string` writes them:
 * to the precision of the unit (`2024-01-05` for days, `2024-01-05T03` for hours,
 * `2024-01-05T03:04:05.000000000` for nanoseconds), years as `%04d` (`-0221`, `10183`), NaT as
 * null. A column of such values can be stored (obs has no date type) and read back with
 * `pandas.to_datetime`. Browser-safe.
 */

/** The base units of numpy's datetime64, and how many of each make a day (calendar units: none). */
const PER_DAY: Record<string, bigint | undefined> = {
  D: 1n,
  h: 24n,
  m: 1440n,
  s: 86_400n,
  ms: 86_400_000n,
  us: 86_400_000_000n,
  ns: 86_400_000_000_000n,
  ps: 86_400_000_000_000_000n,
  fs: 86_400_000_000_000_000_000n,
  as: 86_400_000_000_000_000_000_000n,
};

/** Digits after the seconds for each sub-second unit. */
const FRACTION: Record<string, number> = { ms: 3, us: 6, ns: 9, ps: 12, fs: 15, as: 18 };

/** numpy's NaT: the smallest int64. */
const NAT = -(2n ** 63n);

/** A datetime64 unit as numpy spells it in a dtype (`ns`, `10s`, `D`): the base unit and its multiple. */
export interface DatetimeUnit {
  unit: string;
  scale: number;
}

/** `ns`, `10s` or `D` as a {@link DatetimeUnit}, or undefined when it is none of numpy's units. */
export function parseDatetimeUnit(text: string): DatetimeUnit | undefined {
  const m = /^(\d*)(Y|M|W|D|h|m|s|ms|us|μs|ns|ps|fs|as)$/.exec(text);
  if (!m) return undefined;
  const scale = m[1] ? Number(m[1]) : 1;
  if (!Number.isSafeInteger(scale) || scale < 1) return undefined;
  return { unit: m[2] === "μs" ? "us" : m[2]!, scale };
}

/** The unit as numpy prints it in a dtype name: `ns`, `10s`. */
export function unitText({ unit, scale }: DatetimeUnit): string {
  return `${scale === 1 ? "" : scale}${unit}`;
}

/** Floor division of BigInts (`/` truncates toward zero). */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

const pad = (v: bigint, width: number) => String(v).padStart(width, "0");

/** A year as C's `%04d`: `0005`, `-221`, `10183`. */
function yearText(y: bigint): string {
  return y < 0n ? `-${pad(-y, 3)}` : pad(y, 4);
}

/** The civil date of a day count from 1970-01-01 (the proleptic Gregorian calendar numpy uses). */
function civil(days: bigint): string {
  const z = days + 719_468n;
  const era = floorDiv(z, 146_097n);
  const doe = z - era * 146_097n;
  const yoe = (doe - doe / 1460n + doe / 36_524n - doe / 146_096n) / 365n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const d = doy - (153n * mp + 2n) / 5n + 1n;
  const m = mp < 10n ? mp + 3n : mp - 9n;
  const y = yoe + era * 400n + (m <= 2n ? 1n : 0n);
  return `${yearText(y)}-${pad(m, 2)}-${pad(d, 2)}`;
}

/** One stored datetime64 value (the count of units since 1970-01-01) as text; null for NaT. */
export function datetimeText(value: bigint, { unit, scale }: DatetimeUnit): string | null {
  if (value === NAT) return null;
  const v = value * BigInt(scale);
  if (unit === "Y") return yearText(1970n + v);
  if (unit === "M") return `${yearText(1970n + floorDiv(v, 12n))}-${pad(v - floorDiv(v, 12n) * 12n + 1n, 2)}`;
  if (unit === "W") return civil(v * 7n);
  const perDay = PER_DAY[unit]!;
  const days = floorDiv(v, perDay);
  const date = civil(days);
  if (unit === "D") return date;
  const inDay = v - days * perDay; // in units, 0 .. perDay - 1
  if (unit === "h") return `${date}T${pad(inDay, 2)}`;
  if (unit === "m") return `${date}T${pad(inDay / 60n, 2)}:${pad(inDay % 60n, 2)}`;
  const perSecond = perDay / 86_400n;
  const seconds = inDay / perSecond;
  const clock = `${pad(seconds / 3600n, 2)}:${pad((seconds / 60n) % 60n, 2)}:${pad(seconds % 60n, 2)}`;
  const digits = FRACTION[unit];
  return `${date}T${clock}${digits ? `.${pad(inDay % perSecond, digits)}` : ""}`;
}

/** Every value of a datetime64 column as text (NaT as null). */
export function datetimeTexts(values: BigInt64Array, unit: DatetimeUnit): (string | null)[] {
  return Array.from(values, (v) => datetimeText(v, unit));
}
