/**
 * A second output written from the rows a build reads anyway (`BuildAtlasOptions.secondOutput`):
 * the tile pass hands each block of cells to another writer (a sporadik companion) as it reads
 * it, so that output needs no read of the inputs of its own, nor a decoding of the tiles just
 * written.
 *
 * The two go in step: a block is handed over only once the other writer has asked for it, so
 * the next block is read from the input only once the other writer is done with the one before
 * (a reader may reuse a block's memory for the next). The pass ends only once the other writer
 * has finished. A failure of either fails both: the other writer's rows then end with an error,
 * never with a clean end (which would complete a store of some of the cells).
 */
import type { CanonicalRowBlock } from "../dataset/source.js";
import { DeltacellsError } from "../errors.js";

/** The matrix a second output is written from, as the plan knows it before the tile pass. */
export interface SecondOutputMatrix {
  nCells: number;
  nGenes: number;
  /** The nonzeros the rows hold (the genes the build keeps). */
  nnz: number;
}

/**
 * Writes a second output from `rows`: every cell of the dataset in order, canonical CSR, columns
 * in the dataset's source gene order (`gene_order.npy`'s: an input's own, or an atlas's gene
 * space in first-seen order). It must read the rows to their end, and may keep a block only
 * until it asks for the next.
 */
export type SecondOutput = (
  rows: AsyncIterable<CanonicalRowBlock>,
  matrix: SecondOutputMatrix,
) => Promise<void>;

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // awaited where it matters; never an unhandled rejection
  return { promise, resolve, reject };
}

function stopped(message: string): DeltacellsError {
  return new DeltacellsError(message, { tag: "InvalidState" });
}

/**
 * Where a pass hands its blocks: each given, then, before the next block is read, waited back.
 * Both throw the other writer's error when it failed or stopped reading.
 */
export interface RowSink {
  /** Hands `block` over once the other writer has asked for it. */
  give(block: CanonicalRowBlock): Promise<void>;
  /** Resolves once the other writer is done with the block given last (it asked for the next). */
  returned(): Promise<void>;
}

/** The producer's side of a second output: hand blocks over, end, or fail (see the module). */
export interface Handover extends RowSink {
  /** Ends the rows, then waits for the other writer to finish (throwing its error). */
  end(): Promise<void>;
  /** The pass failed: the other writer's rows end with `error`; resolves once it has settled. */
  fail(error: unknown): Promise<void>;
}

/** Starts `write` on rows handed over block by block (see {@link Handover}). */
export function handOver(write: SecondOutput, matrix: SecondOutputMatrix): Handover {
  /** Resolved when the writer asks for the next block: it is done with the one before. */
  let asked = deferred<void>();
  /** The writer's pending `next()`. */
  let answer: Deferred<IteratorResult<CanonicalRowBlock>> | undefined;
  let failure: { error: unknown } | undefined;
  /** Settles with the writer: rejected with its error. */
  const finished = deferred<void>();
  const rows: AsyncIterable<CanonicalRowBlock> = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        if (failure) return Promise.reject(failure.error);
        answer = deferred();
        asked.resolve();
        return answer.promise;
      },
      // A writer that stops early settles its own promise: with its error, or before the end.
      return: async () => ({ value: undefined, done: true }),
    }),
  };
  const written = write(rows, matrix);
  written.then(
    () => finished.resolve(),
    (error: unknown) => finished.reject(error),
  );
  const wanted = (): Promise<void> =>
    Promise.race([
      asked.promise,
      finished.promise.then(() => {
        throw stopped("the second output stopped reading the rows before their end");
      }),
    ]);
  return {
    async give(block) {
      await wanted();
      asked = deferred();
      answer!.resolve({ value: block, done: false });
    },
    returned: wanted,
    async end() {
      await wanted();
      answer!.resolve({ value: undefined, done: true });
      await written;
    },
    async fail(error) {
      failure = { error };
      answer?.reject(error);
      await written.catch(() => undefined);
    },
  };
}
