/**
 * What the consumer of `deltacells stream --shm-fd` says on the command's stdin, one line per
 * message (ASCII):
 *
 *   release SLOT SEQ   it is done with the batch it was given in SLOT with sequence number SEQ:
 *                      the slot may hold a later batch
 *   spill              it holds so many batches that the loader could not finish the next one:
 *                      make batches in the command's own memory (sent whole over stdout) until
 *                      one is released
 *   epoch E            (`--serve`, after an epoch's end batch) stream epoch E next
 *
 * The end of stdin (the consumer exited, or was killed) stops the command.
 */
import type { Readable } from "node:stream";

export interface ShmControlHandlers {
  release(slot: number, seq: number): void;
  spill(): void;
  /** The consumer asks for epoch `epoch` next. */
  epoch(epoch: number): void;
  /** The consumer is gone (stdin ended or failed). */
  gone(): void;
  /** A line that is none of the messages. */
  bad(line: string): void;
}

/** Reads the control messages of `input` until it ends or {@link close} is called. */
export class ShmControl {
  private rest = "";
  private closed = false;
  private readonly onData = (chunk: Buffer | string) => {
    const text = this.rest + chunk.toString();
    const lines = text.split("\n");
    this.rest = lines.pop()!;
    for (const line of lines) this.line(line);
  };
  private readonly onEnd = () => {
    if (!this.closed) this.handlers.gone();
  };

  constructor(
    private readonly input: Readable,
    private readonly handlers: ShmControlHandlers,
  ) {
    input.on("data", this.onData);
    input.on("end", this.onEnd);
    input.on("error", this.onEnd);
  }

  private line(line: string): void {
    if (this.closed) return;
    const m = /^release (\d+) (\d+)$/.exec(line.trim());
    const e = /^epoch (\d+)$/.exec(line.trim());
    if (m) this.handlers.release(Number(m[1]), Number(m[2]));
    else if (e) this.handlers.epoch(Number(e[1]));
    else if (line.trim() === "spill") this.handlers.spill();
    else if (line.trim() !== "") this.handlers.bad(line);
  }

  /** Stops reading (the stream is over): stdin no longer keeps the process alive. */
  close(): void {
    this.closed = true;
    this.input.off("data", this.onData);
    this.input.off("end", this.onEnd);
    this.input.off("error", this.onEnd);
    this.input.pause();
    if (this.input === process.stdin) process.stdin.destroy();
  }
}
