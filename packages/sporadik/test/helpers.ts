/** Shared by the sporadik tests: the Python bridge, temp folders, a counting store, test arrays. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { mulberry32 as random } from "../../../test-utils/prng.js";
import type { ReadableStore, WritableStore } from "../src/store.js";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const PYTHON = join(REPO, "conformance/.venv/bin/python");
const SCRIPT = join(REPO, "conformance/sporadik_interop.py");

/** Run a subcommand of conformance/sporadik_interop.py and parse its JSON answer. */
export function python<T = Record<string, unknown>>(...args: string[]): T {
  const out = execFileSync(PYTHON, [SCRIPT, ...args], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  return JSON.parse(out) as T;
}

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "sporadik-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Write `value` as JSON into `dir/name` and return the path. */
export function jsonFile(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

/** One request as the counting store saw it. */
export interface Request {
  kind: "get" | "getRange" | "set" | "delete";
  key: string;
  bytes: number;
}

/** A store wrapper recording every request and the bytes it moved. */
export function counting<S extends WritableStore>(
  inner: S,
): S & { requests: Request[]; waves(): number; maxInFlight(): number; reset(): void } {
  const requests: Request[] = [];
  // +1 when a read starts, -1 when it ends. A wave is a stretch during which some read is in flight:
  // reads issued without waiting on each other's bytes keep it going, even through a concurrency
  // limit; a read that needs an earlier one's answer can only start after the store fell idle.
  const events: number[] = [];
  const proxy = {
    requests,
    reset() {
      requests.length = 0;
      events.length = 0;
    },
    /** The most reads that were ever in flight at once. */
    maxInFlight() {
      let most = 0;
      let inFlight = 0;
      for (const event of events) {
        inFlight += event;
        most = Math.max(most, inFlight);
      }
      return most;
    },
    /** How many waves of reads there were: times a read started while none was in flight. */
    waves() {
      let waves = 0;
      let inFlight = 0;
      for (const event of events) {
        if (event === 1 && inFlight === 0) waves++;
        inFlight += event;
      }
      return waves;
    },
    async get(key: string, options?: { signal?: AbortSignal }) {
      events.push(1);
      const bytes = await inner.get(key, options);
      events.push(-1);
      requests.push({ kind: "get", key, bytes: bytes?.byteLength ?? 0 });
      return bytes;
    },
    async getRange(
      key: string,
      range: { offset: number; length: number },
      options?: { signal?: AbortSignal },
    ) {
      events.push(1);
      const bytes = await (inner.getRange as NonNullable<ReadableStore["getRange"]>).call(
        inner,
        key,
        range,
        options,
      );
      events.push(-1);
      requests.push({ kind: "getRange", key, bytes: bytes?.byteLength ?? 0 });
      return bytes;
    },
    async set(key: string, value: Uint8Array) {
      requests.push({ kind: "set", key, bytes: value.byteLength });
      await inner.set(key, value);
    },
    async delete(key: string) {
      requests.push({ kind: "delete", key, bytes: 0 });
      await inner.delete?.(key);
    },
  };
  return proxy as unknown as S & {
    requests: Request[];
    waves(): number;
    maxInFlight(): number;
    reset(): void;
  };
}

/** A small deterministic generator, so test arrays are the same on every run. */
export { random };

/** Coordinates and values of a sparse array: unique cells, float32-exact values. */
export interface CoordSpec {
  shape: number[];
  coords: number[][];
  values: number[];
  dtype: string;
}

/** A random sparse array of `shape` with about `density` of its cells set, values in 1..100. */
export function randomCoords(shape: number[], density: number, seed: number, dtype = "float32"): CoordSpec {
  const next = random(seed);
  const total = shape.reduce((a, b) => a * b, 1);
  const coords: number[][] = shape.map(() => []);
  const values: number[] = [];
  for (let flat = 0; flat < total; flat++) {
    if (next() >= density) continue;
    let rest = flat;
    for (let axis = shape.length - 1; axis >= 0; axis--) {
      const size = shape[axis] as number;
      (coords[axis] as number[]).push(rest % size);
      rest = Math.floor(rest / size);
    }
    values.push(1 + Math.floor(next() * 100) + (dtype.startsWith("float") ? 0.5 : 0));
  }
  // Shuffle, so the writer has to sort.
  for (let i = values.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    for (const c of [...coords, values]) [c[i], c[j]] = [c[j] as number, c[i] as number];
  }
  return { shape, coords, values, dtype };
}

/** A typed array's elements as plain numbers, for comparisons. */
export function plain(array: unknown): number[] {
  return Array.from(array as ArrayLike<number | bigint>, Number);
}
