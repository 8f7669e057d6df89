/**
 * Killed streams: a real `deltacells stream` of a 700-cell dataset (44 batches of 16) SIGKILLed
 * once its consumer has read a seeded number of bytes, and the uninterrupted stream cut at every
 * message boundary (what a reader sees of a producer killed between two messages: an Arrow stream
 * that ends cleanly). Three consumers read each: apache-arrow with the end check of the stream's
 * documentation (the last batch, of no rows, carries `deltacells.end` counting the batches before
 * it), pyarrow with the same check, and the Python example module (examples/python), its command
 * replaced by one that replays the bytes and exits 0 (an exit code lost by a wrapper). Each must
 * get the whole epoch (the same batches as the uninterrupted stream) or an error; a consumer that
 * takes part of an epoch for all of it is wrong.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { RecordBatchReader } from "apache-arrow";
import { COMMAND_ARGS } from "../../test-utils/command.js";
import { mulberry32 } from "../../test-utils/prng.js";
import type { FaultClass, RunOptions } from "./classes.js";
import { deltacells } from "./cli.js";
import { PYTHON, REPO, workDir } from "./fixtures.js";
import { type CaseResult, firstLine, inParallel } from "./outcome.js";

const INPUT = join(REPO, "data/pbmc68k-counts/pbmc68k_counts.h5ad");
const STREAM = ["--batch-size", "16", "--seed", "3", "--threads", "1", "--obs", "louvain"];

/** What a consumer made of a stream: the whole epoch (its batches and a digest of their cells), or an error. */
type Whole = { complete: true; batches: number; cells: string };
type Read = Whole | { error: string };

/** The documented check, with apache-arrow: every batch before the end batch, which must count them. */
function readChecked(bytes: Uint8Array): Read {
  try {
    const digest = createHash("sha256");
    let batches = 0;
    let end: { batches: number } | undefined;
    for (const batch of RecordBatchReader.from(bytes)) {
      const meta = batch.metadata.get("deltacells.end");
      if (meta !== undefined) {
        end = JSON.parse(meta);
        continue;
      }
      // apache-arrow yields an empty placeholder for a stream of no batches: not a batch.
      if (batch.numRows === 0) continue;
      batches++;
      const cells = batch.getChild("cell")!.toArray() as BigInt64Array;
      digest.update(new Uint8Array(cells.buffer, cells.byteOffset, cells.byteLength));
    }
    if (end === undefined || end.batches !== batches)
      return { error: `incomplete epoch: ${batches} batches and no end batch counting them` };
    return { complete: true, batches, cells: digest.digest("hex") };
  } catch (err) {
    return { error: firstLine(err) };
  }
}

/** `deltacells stream` of `dataset` with its stdout collected, SIGKILLed once `killAfter` bytes came (never if undefined). */
function streamBytes(
  dataset: string,
  killAfter: number | undefined,
): Promise<{ bytes: Buffer; killed: boolean }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [...COMMAND_ARGS, "stream", dataset, ...STREAM], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "ignore"],
    });
    const parts: Buffer[] = [];
    let got = 0;
    let killed = false;
    const deadline = setTimeout(() => child.kill("SIGKILL"), 120_000);
    if (killAfter === 0) {
      killed = true;
      child.kill("SIGKILL");
    }
    child.stdout.on("data", (d: Buffer) => {
      parts.push(d);
      got += d.length;
      if (killAfter !== undefined && !killed && got >= killAfter) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    child.on("error", fail);
    child.on("close", (_code, signal) => {
      clearTimeout(deadline);
      ok({ bytes: Buffer.concat(parts), killed: signal === "SIGKILL" });
    });
  });
}

/** The byte offsets where the stream's messages end (continuation, length, metadata, body). */
function messageEnds(bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ends: number[] = [];
  let at = 0;
  while (at + 8 <= bytes.length) {
    const length = view.getInt32(at + 4, true);
    if (length === 0) break; // the end-of-stream marker
    // The message's flatbuffer holds its body length: read it through apache-arrow's own parser.
    const bodyLength = messageBodyLength(bytes.subarray(at + 8, at + 8 + length));
    at += 8 + length + bodyLength;
    ends.push(at);
  }
  return ends;
}

/** A message's body length, from its flatbuffer header (Message.bodyLength: the int64 at field 3). */
function messageBodyLength(header: Uint8Array): number {
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const table = view.getUint32(0, true);
  const vtable = table - view.getInt32(table, true);
  const vtableSize = view.getUint16(vtable, true);
  // Fields: version (0), header_type (1), header (2), bodyLength (3).
  const slot = 4 + 2 * 3;
  if (slot >= vtableSize) return 0;
  const offset = view.getUint16(vtable + slot, true);
  return offset === 0 ? 0 : Number(view.getBigInt64(table + offset, true));
}

/** stream_end_check.py's verdicts on `files`, by file. */
function pythonReads(files: string[]): Promise<Map<string, { pyarrow: Read; example: Read }>> {
  return new Promise((ok, fail) => {
    const child = spawn(PYTHON, [join(REPO, "conformance/stream_end_check.py"), ...files], { cwd: REPO });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.on("error", fail);
    child.on("close", (code) => {
      if (code !== 0) return fail(new Error(`stream_end_check.py failed (${code}): ${err}`));
      const map = new Map<string, { pyarrow: Read; example: Read }>();
      for (const line of out.trim().split("\n")) {
        const r = JSON.parse(line);
        map.set(r.file, { pyarrow: r.pyarrow, example: r.example });
      }
      ok(map);
    });
  });
}

/** One consumer's verdict: on a whole stream the whole epoch; on part of one, an error. */
function judge(read: Read, whole: Whole, isWhole: boolean): Pick<CaseResult, "outcome" | "detail" | "tag"> {
  if ("error" in read)
    return { outcome: isWhole ? "crash" : "refused", tag: "IncompleteEpoch", detail: read.error };
  if (read.batches === whole.batches && read.cells === whole.cells) return { outcome: "correct" };
  return { outcome: "wrong", detail: `took ${read.batches} of ${whole.batches} batches for the whole epoch` };
}

/** Where a cut at `at` bytes falls among the messages ending at `ends`. */
function cutKind(at: number, ends: number[]): string {
  const last = ends.at(-1)!;
  if (at === 0) return "cut: before the schema";
  if (at >= last) return at > last ? "cut: none (whole stream)" : "cut: the end-of-stream marker only";
  if (at === ends[0]) return "cut: after the schema";
  if (at === ends.at(-2)) return "cut: before the end batch";
  return ends.includes(at) ? "cut: between two batches" : "cut: inside a message";
}

async function run({ seed, long, cases: count, log }: RunOptions): Promise<CaseResult[]> {
  const kills = count ?? (long ? 40 : 4);
  const work = workDir("killed-stream");
  try {
    const dataset = join(work.dir, "ds");
    const flags = ["--tile-size", "64", "--level", "3", "--quiet"];
    const converted = await deltacells(["convert", INPUT, dataset, ...flags], 300_000).done;
    if (converted.code !== 0) throw new Error(`the conversion failed: ${converted.stderr}`);
    const reference = await streamBytes(dataset, undefined);
    const whole = readChecked(reference.bytes);
    if (!("complete" in whole)) throw new Error(`the uninterrupted stream is not complete: ${whole.error}`);
    const ends = messageEnds(reference.bytes);
    const last = ends.at(-1)!;
    log(
      `killed-stream: ${reference.bytes.length} bytes in ${ends.length} messages, ${whole.batches} batches`,
    );
    // The whole stream cut at every message boundary, and as written.
    const cases: { id: string; kind: string; bytes: Uint8Array }[] = [0, ...ends, reference.bytes.length].map(
      (at) => ({
        id: `cut at ${at} of ${reference.bytes.length} bytes`,
        kind: cutKind(at, ends),
        bytes: reference.bytes.subarray(0, at),
      }),
    );
    // Real kills, once the consumer has read a seeded number of bytes (the first before any).
    const rnd = mulberry32(seed);
    const killed = await inParallel(
      Array.from({ length: kills }, (_, n) => async () => {
        const at = n === 0 ? 0 : Math.floor(rnd() * reference.bytes.length * 1.05);
        const got = await streamBytes(dataset, at);
        const state = got.bytes.length >= last ? "after the end batch" : "mid-epoch";
        return {
          id: `kill ${n}: SIGKILL once ${at} bytes came (${got.bytes.length} read)${got.killed ? "" : ", finished first"}`,
          kind: got.killed ? `SIGKILL ${state}` : "SIGKILL too late: finished",
          bytes: got.bytes,
        };
      }),
      2,
    );
    cases.push(...killed);
    const files = cases.map((c, i) => {
      const file = join(work.dir, `stream-${i}.arrows`);
      writeFileSync(file, c.bytes);
      return file;
    });
    const python = await pythonReads(files);
    return cases.flatMap((c, i) => {
      const isWhole = c.bytes.length >= last;
      const py = python.get(files[i]!)!;
      const reads = [
        ["apache-arrow", readChecked(c.bytes)],
        ["pyarrow", py.pyarrow],
        ["example module", py.example],
      ] as const;
      return reads.map(([consumer, read]) => ({
        id: `${c.id} (${consumer})`,
        kind: `${c.kind}/${consumer}`,
        ...judge(read, whole, isWhole),
      }));
    });
  } finally {
    work.dispose();
  }
}

export const killedStream: FaultClass = {
  name: "killed-stream",
  summary:
    "a real `deltacells stream` SIGKILLed after a seeded number of bytes, and the whole stream cut at every message boundary; read by apache-arrow and pyarrow with the documented end check and by the Python example: the whole epoch or an error",
  needsPython: true,
  run,
};
