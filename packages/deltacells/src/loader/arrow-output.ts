/**
 * An Arrow IPC stream written to a Node stream (stdout) with backpressure: each record batch is
 * serialised into views of its own buffers and `write` resolves only when the destination has
 * taken every byte, so a slow reader holds the producer back instead of growing memory, and the
 * batch's buffers may be reused afterwards. A reader that goes away (EPIPE) ends the stream with
 * {@link ReaderGone}, which the command treats as a normal end.
 */
import { AsyncByteQueue, type RecordBatch, RecordBatchStreamWriter, type Schema } from "apache-arrow";

/**
 * Where the stream goes: what {@link ArrowOutput} needs of a Node `Writable` (stdout, a socket, a
 * file stream). `write`'s callback runs once the bytes were handed on, in order.
 */
export interface ByteSink {
  write(chunk: Uint8Array, callback?: (error?: Error | null) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  off(event: "error", listener: (error: Error) => void): unknown;
}

/** The reading end was closed (EPIPE): the consumer stopped early, which is not an error. */
export class ReaderGone extends Error {
  readonly _tag = "ReaderGone";
  constructor(cause: unknown) {
    super("the reader closed the stream", { cause });
    this.name = "ReaderGone";
  }
}

/** The writer's sink: collects the chunks of one message synchronously (views, no copies). */
class Chunks extends AsyncByteQueue {
  private parts: Uint8Array[] = [];
  override write(value: Uint8Array): void {
    if (value.byteLength > 0) this.parts.push(value);
  }
  take(): Uint8Array[] {
    const parts = this.parts;
    this.parts = [];
    return parts;
  }
}

/**
 * One Arrow IPC stream written to `out`: {@link start} (the schema), {@link write} for each record
 * batch, {@link end}; each resolves once `out` took the bytes, and rejects with
 * {@link ReaderGone} when the reader closed its end.
 */
export class ArrowOutput {
  private readonly chunks = new Chunks();
  private readonly writer = new RecordBatchStreamWriter();
  private failure: Error | undefined;
  private readonly onError = (err: Error) => {
    this.failure ??= toFailure(err);
  };

  constructor(
    private readonly out: ByteSink,
    schema: Schema,
  ) {
    out.on("error", this.onError);
    this.writer.reset(this.chunks as never, schema);
  }

  /** Writes the schema (and dictionaries, with the first batch) and waits until `out` took it. */
  start(): Promise<void> {
    return this.flush();
  }

  /** Writes one record batch; resolves once `out` has taken all of it. */
  write(batch: RecordBatch): Promise<void> {
    this.writer.write(batch);
    return this.flush();
  }

  /** Writes the end-of-stream marker. */
  async end(): Promise<void> {
    this.writer.close();
    await this.flush();
  }

  /** Stops listening to `out` (which stays open: it is stdout). */
  detach(): void {
    this.out.off("error", this.onError);
  }

  private flush(): Promise<void> {
    const parts = joinSmall(this.chunks.take());
    if (this.failure) return Promise.reject(this.failure);
    if (parts.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      for (let i = 0; i < parts.length - 1; i++) this.out.write(parts[i]!);
      // Callbacks run in order: the last one means every part has been handed to the OS.
      this.out.write(parts.at(-1)!, (err) => {
        const failure = this.failure ?? (err ? toFailure(err) : undefined);
        if (failure) reject(failure);
        else resolve();
      });
    });
  }
}

/** Parts below this size are joined with their neighbours below it into one write. */
const SMALL_PART = 1 << 16;

/**
 * A message's parts with each run of small ones (the continuation marker, the length, the
 * flatbuffer header, padding: 7 parts for a message of no rows) joined into one array: a write,
 * and a wake-up of the reader, per run instead of per part. Large parts stay views of the batch's
 * buffers (no copy).
 */
function joinSmall(parts: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let from = 0;
  const end = (to: number) => {
    if (to - from === 1) out.push(parts[from]!);
    else if (to - from > 1) {
      const run = parts.slice(from, to);
      const joined = new Uint8Array(run.reduce((n, p) => n + p.byteLength, 0));
      let at = 0;
      for (const p of run) {
        joined.set(p, at);
        at += p.byteLength;
      }
      out.push(joined);
    }
  };
  for (let i = 0; i < parts.length; i++) {
    if (parts[i]!.byteLength < SMALL_PART) continue;
    end(i);
    out.push(parts[i]!);
    from = i + 1;
  }
  end(parts.length);
  return out;
}

function toFailure(err: Error): Error {
  return (err as Error & { code?: unknown }).code === "EPIPE" ? new ReaderGone(err) : err;
}
