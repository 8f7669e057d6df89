/**
 * datetime64 values as text, against numpy's own `datetime_as_string`: every unit numpy has,
 * scaled units, values around the epoch, the int64 extremes and NaT, and a seeded sample over
 * the int64 range of each unit (where numpy's own arithmetic does not overflow).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { mulberry32 } from "../../../test-utils/prng.js";
import { datetimeText, parseDatetimeUnit } from "../src/datetime-text.js";
import { REPO } from "./helpers.js";

const PYTHON = join(REPO, "conformance", ".venv", "bin", "python");
/** Units per day of each unit (calendar units: none; their limit is in years or months). */
const PER_DAY: Record<string, bigint | undefined> = {
  W: 1n, // a week is 7 days: 2^40 weeks is still inside numpy's range
  D: 1n,
  "3D": 1n, // (a third of one: 2^40 of them is still inside numpy's range)
  h: 24n,
  m: 1440n,
  s: 86_400n,
  "10s": 8640n, // 8,640 ten-second units a day
  ms: 86_400_000n,
  "250ms": 345_600n,
  us: 86_400_000_000n,
  ns: 86_400_000_000_000n,
  ps: 2n ** 63n,
  fs: 2n ** 63n,
  as: 2n ** 63n,
};
const UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "10s", "250ms", "3D"];

test("datetime64 text is numpy.datetime_as_string's, for every unit, the extremes and a seeded sample", () => {
  const rnd = mulberry32(64);
  const cases: [string, string][] = [];
  for (const unit of UNITS) {
    const values = [
      0n,
      1n,
      -1n,
      59n,
      -61n,
      86_399n,
      -86_401n,
      2n ** 62n,
      -(2n ** 62n),
      2n ** 63n - 1n,
      -(2n ** 63n) + 1n,
    ];
    for (let i = 0; i < 40; i++) {
      // magnitudes of every size, both signs
      const bits = BigInt(Math.floor(rnd() * 63));
      const v = BigInt(Math.floor(rnd() * 2 ** 31)) * 2n ** bits + BigInt(Math.floor(rnd() * 2 ** 20));
      values.push(rnd() < 0.5 ? -v : v);
    }
    // numpy's own arithmetic wraps around for years beyond about 2^40 (its day and year counts
    // overflow): compared up to 2^40 days (or years) from 1970, what int64 ns covers many times over
    const perDay = PER_DAY[unit];
    const limit = perDay === undefined ? 2n ** 40n : 2n ** 40n * perDay;
    const scaled = 2n ** 63n / BigInt(parseDatetimeUnit(unit)!.scale); // numpy scales in int64 too
    const bound = [limit, scaled].reduce((a, b) => (a < b ? a : b));
    for (const v of values) if (v > -bound && v < bound) cases.push([String(v), unit]);
    cases.push([String(-(2n ** 63n)), unit]); // NaT
  }
  const py = execFileSync(
    PYTHON,
    [
      "-c",
      [
        "import json, sys, numpy as np",
        "out = []",
        "for v, unit in json.loads(sys.stdin.read()):",
        "    try:",
        "        s = str(np.datetime_as_string(np.array([int(v)], dtype='int64').view(f'M8[{unit}]'))[0])",
        "    except (OverflowError, ValueError):",
        "        s = 'unprintable'",
        "    out.append(None if s == 'NaT' else s)",
        "print(json.dumps(out))",
      ].join("\n"),
    ],
    { input: JSON.stringify(cases), maxBuffer: 16 * 1024 * 1024 },
  ).toString();
  const want = JSON.parse(py) as (string | null)[];
  let compared = 0;
  cases.forEach(([v, unit], i) => {
    if (want[i] === "unprintable") return; // numpy's own range ends before int64's for some units
    assert.equal(datetimeText(BigInt(v), parseDatetimeUnit(unit)!), want[i], `${v} [${unit}]`);
    compared++;
  });
  assert.ok(compared > cases.length * 0.8, `${compared} of ${cases.length} compared`);
});
