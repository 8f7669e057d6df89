/**
 * The workers of a {@link TilePool}: started with the first job (or by `start()`), each holding up to {@link WORKER_DEPTH} jobs
 * (the one it runs and the next), replaced when one crashes (its jobs are rejected), stopped by
 * `close()`. How a worker starts depends on the environment (`#threads`: worker_threads under
 * Node, module Web Workers in browsers); what the jobs are is the pool's business (see pool.ts).
 */
import { spawnWorker } from "#threads";
import { DeltacellsError } from "../../errors.js";
import { nextTask } from "../../next-task.js";
import { canShareMemory } from "../recycle.js";
import {
  CLAIM_RECALLED,
  CLAIM_WAITING,
  deserializeError,
  type Request,
  type Response,
  WorkerColumnMaps,
} from "./protocol.js";
import type { WorkerLike } from "./threads.js";

/** Runs requests on a set of workers. */
export interface WorkerHost {
  /**
   * Runs `req` on the first idle worker (queued until one is); rejects with the worker's error.
   * Once the workers are up, a job a worker has room for is posted before `run` returns.
   * `req` may be a function that builds the request when a worker takes it (the pool then takes
   * an output buffer only when it is about to be written: see pool.ts); if it throws, the job
   * fails with its error.
   */
  run(req: Request | (() => Request), transfer: ArrayBuffer[]): Promise<Response>;
  /** Jobs running or queued. */
  load(): number;
  /** Workers with nothing to do and no job queued for them: how many parts a new tile is worth. */
  idle(): number;
  /** Starts the workers now instead of with the first job (nothing once closed or started). */
  start(): void;
  /** Stops the workers; pending jobs are rejected. */
  close(): Promise<void>;
}

interface Slot {
  worker: WorkerLike;
  busy: number;
  /** Ids of the jobs this worker holds, in the order they were sent (it runs them in that order). */
  jobs: Set<number>;
  /** Claim cells sent to this worker and not yet given back by its answers. */
  cells: Set<number>;
  /** Incremented when a crashed worker is replaced. */
  generation: number;
  /** The column maps this worker holds (a new worker holds none). */
  maps: WorkerColumnMaps;
}

type Job = {
  req: Request | (() => Request);
  transfer: ArrayBuffer[];
  resolve: (r: Response) => void;
  reject: (e: Error) => void;
  /** The request once built (sent again as it is when the job moves to another worker). */
  built?: Request;
  /** Its claim cell while a worker holds it (none: that worker runs it, it cannot be taken back). */
  cell?: number;
};

/** `req` as sent to a worker holding `maps`: a column map goes along only when the worker lacks it. */
function withColumnMap(req: Request, maps: WorkerColumnMaps): Request {
  if (req.op === "compress" || req.columns === undefined) return req;
  const { id } = req.columns;
  if (maps.has(id)) return { ...req, columns: { id } };
  maps.add(id);
  return req;
}

/**
 * Jobs sent to one worker at a time: the one it runs and the next, so that it starts the next as
 * soon as it answers instead of waiting for the calling thread to hear the answer and send
 * another (that thread shares the cores with the workers: on 2 cores it is often descheduled
 * right then, and each worker idled between tiles: bench/RESULTS.md, "Decoding on a pool"). A
 * job goes to a worker that already has one only when no worker is free.
 */
export const WORKER_DEPTH = 2;

/**
 * Claim cells per worker: one for each job it may hold and one for each job taken back from it
 * whose answer has not come yet. When none is free a job goes without one (it then stays where
 * it was sent).
 */
const CELLS_PER_WORKER = 4 * WORKER_DEPTH;

/** A host of `threads` workers. */
export function startWorkerHost(threads: number): WorkerHost {
  return new Host(threads);
}

/** The workers of a pool, the jobs sent to them, and the queue of those waiting for one. */
class Host implements WorkerHost {
  private slots: Promise<Slot[]> | undefined;
  private readonly pending = new Map<number, Job>();
  private readonly queue: Job[] = [];
  private closed = false;
  // A job sent to a busy worker waits behind its current one; a worker left idle meanwhile
  // (nothing queued: the end of a pass) takes it back if it has not started (see `steal`). That
  // needs memory both ends see: without it (pages that are not cross-origin isolated) jobs stay
  // where they were sent.
  private readonly cells: Int32Array | undefined;
  private readonly freeCells: number[];
  // Workers stay unref'd, so that an idle pool does not keep a Node process alive; while jobs are
  // pending or queued a timer does. (Toggling the workers' own ref() per job stalled replies here: a reply
  // already posted by a worker sat undelivered until the pool was closed.)
  private alive: ReturnType<typeof setInterval> | undefined;
  /** The workers, once all have started (empty until then). */
  private ready: Slot[] = [];
  /** Jobs given to `run` that have not reached the queue yet (see `run`). */
  private entering = 0;
  private pumpScheduled = false;

  constructor(private readonly threads: number) {
    this.cells = canShareMemory()
      ? new Int32Array(new SharedArrayBuffer(4 * CELLS_PER_WORKER * threads))
      : undefined;
    this.freeCells = this.cells === undefined ? [] : Array.from(this.cells.keys()).reverse();
  }

  run(req: Request | (() => Request), transfer: ArrayBuffer[]): Promise<Response> {
    if (this.closed)
      return Promise.reject(
        new DeltacellsError("the tile pool is closed", {
          tag: "InvalidState",
          field: "pool",
          found: "closed",
        }),
      );
    // Workers up: the job is posted now, before a caller that reads the next tile by a blocking
    // call (ds.tiles() from a folder) goes on to do so.
    if (this.ready.length > 0) return this.enqueue(req, transfer);
    // Counted by idle() until it is queued, after the workers start: the decodes submitted
    // meanwhile (a loop starting 4 tiles at once) would each see every worker idle and be split
    // between all of them.
    this.entering++;
    return this.startSlots().then(
      () => {
        this.entering--;
        return this.enqueue(req, transfer);
      },
      (err: unknown) => {
        this.entering--;
        throw err;
      },
    );
  }

  start(): void {
    // A failure to start is not lost: the next run() gets the same rejected promise.
    if (!this.closed) this.startSlots().catch(() => {});
  }

  load(): number {
    return this.pending.size + this.queue.length;
  }

  idle(): number {
    // Before the workers are up (`ready` empty, nothing pending yet) every worker counts as idle.
    let busy = 0;
    for (const s of this.ready) if (s.busy > 0) busy++;
    return Math.max(0, this.threads - busy - this.queue.length - this.entering);
  }

  async close(): Promise<void> {
    this.closed = true;
    const s = this.slots ? await this.slots : [];
    this.fail(
      new DeltacellsError("the tile pool was closed", {
        tag: "InvalidState",
        field: "pool",
        found: "closed",
      }),
    );
    // Workers are unref'd: without ref() an event loop with nothing else to do could end while
    // `await pool.close()` still waits for them to exit.
    await Promise.all(
      s.map((x) => {
        x.worker.ref?.();
        return x.worker.terminate();
      }),
    );
  }

  /** Rejects every job, running or queued (on close: a queued job would otherwise be posted later
   * to a terminated worker, never answered, and its keep-alive timer would hold the process). */
  private fail(err: Error): void {
    for (const job of this.pending.values()) job.reject(err);
    for (const job of this.queue.splice(0)) job.reject(err);
    this.pending.clear();
    this.keepAlive();
  }

  private keepAlive(): void {
    const jobs = this.pending.size + this.queue.length;
    if (jobs > 0 && this.alive === undefined) this.alive = setInterval(() => {}, 1 << 30);
    else if (jobs === 0 && this.alive !== undefined) {
      clearInterval(this.alive);
      this.alive = undefined;
    }
  }

  /** Starts every worker once; the same promise after that. */
  private startSlots(): Promise<Slot[]> {
    this.slots ??= Promise.all(
      Array.from({ length: this.threads }, async () => {
        const slot: Slot = {
          worker: undefined as unknown as WorkerLike,
          busy: Number.POSITIVE_INFINITY,
          jobs: new Set(),
          generation: 0,
          maps: new WorkerColumnMaps(),
          cells: new Set(),
        };
        await this.launch(slot);
        return slot;
      }),
    ).then((s) => (this.ready = s));
    return this.slots;
  }

  /** Starts (or restarts, after a crash) the worker of a slot; its in-flight jobs are rejected. */
  private async launch(slot: Slot): Promise<void> {
    const generation = ++slot.generation;
    slot.jobs.clear();
    // A stopped worker answers nothing more: the cells it held are free.
    for (const cell of slot.cells) this.freeCells.push(cell);
    slot.cells.clear();
    slot.maps = new WorkerColumnMaps();
    slot.worker = spawnWorker(
      (m) => this.answered(slot, m),
      (err) => this.crashed(slot, generation, err),
    );
    slot.busy = 0;
  }

  /** A worker's answer to a job. */
  private answered(slot: Slot, m: Response): void {
    // A reply after close() is for a job already rejected.
    if (this.closed) return;
    if (m.claim !== undefined && slot.cells.delete(m.claim)) this.freeCells.push(m.claim);
    // A job taken back: the host counted it off this worker when it did.
    if (m.ok && m.recalled) return;
    const job = this.pending.get(m.id);
    this.pending.delete(m.id);
    slot.jobs.delete(m.id);
    slot.busy--;
    this.keepAlive();
    job?.resolve(m);
    // A worker left without work gets a job now; one still holding its next job is refilled
    // after this task, once the caller has had the answer and could release the tile: the job
    // sent then reuses that output buffer, just written and still in cache, instead of taking
    // another (a buffer more in rotation costs CPU per tile: bench/RESULTS.md, "Decoding on a
    // pool").
    this.pump(1);
    if (this.queue.length > 0) this.pumpSoon();
    else if (slot.busy === 0) this.steal(slot);
  }

  /** A worker failed or exited: its jobs fail, and a replacement starts. */
  private crashed(slot: Slot, generation: number, err: Error): void {
    // Ignore the exit of a worker already replaced (or of all of them, on close).
    if (this.closed || generation !== slot.generation) return;
    slot.busy = Number.POSITIVE_INFINITY;
    for (const id of slot.jobs) {
      this.pending.get(id)?.reject(err);
      this.pending.delete(id);
    }
    this.keepAlive();
    void slot.worker.terminate();
    // A replacement that cannot start (out of memory, say) fails the jobs waiting for one,
    // instead of an unhandled rejection that would end the caller's process.
    this.launch(slot).then(
      () => this.pump(),
      (e: unknown) => this.fail(e instanceof Error ? e : new Error(String(e))),
    );
  }

  private pumpSoon(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    nextTask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Sends a built job to a worker; one that cannot be sent fails, and the worker stays free. */
  private post(slot: Slot, job: Job, req: Request): void {
    const cells = this.cells;
    // Jobs whose buffers move to the worker cannot be sent to another one after that.
    const cell = cells !== undefined && job.transfer.length === 0 ? this.freeCells.pop() : undefined;
    if (cell !== undefined) cells![cell] = CLAIM_WAITING;
    const sent = withColumnMap(req, slot.maps);
    try {
      slot.worker.postMessage(
        cell === undefined ? sent : { ...sent, claim: { cells: cells!, at: cell } },
        job.transfer,
      );
    } catch (err) {
      if (cell !== undefined) this.freeCells.push(cell);
      // Not sent (a buffer that cannot be moved or copied): this job fails, the worker stays free.
      // Counted busy first, a job that never reaches its worker would hold it, and the process, for ever.
      // A column map counted as sent with it never arrived: forget what was counted (the maps the
      // worker does hold are sent again when needed, which it accepts).
      slot.maps = new WorkerColumnMaps();
      this.keepAlive();
      const why = err instanceof Error ? err.message : String(err);
      job.reject(
        new DeltacellsError(
          `a tile job could not be sent to its worker (${why}): its buffers must be transferable, each listed once`,
          { tag: "InvalidInput", field: "transfer", cause: err },
        ),
      );
      return;
    }
    job.built = req;
    job.cell = cell;
    if (cell !== undefined) slot.cells.add(cell);
    slot.busy++;
    slot.jobs.add(req.id);
    this.pending.set(req.id, job);
    this.keepAlive();
  }

  /** Sends queued jobs to the workers holding fewer than `depth` (idle workers first). */
  private pump(depth = WORKER_DEPTH): void {
    while (!this.closed && this.queue.length > 0) {
      const slot = this.ready.find((s) => s.busy === 0) ?? this.ready.find((s) => s.busy < depth);
      if (slot === undefined) return;
      const job = this.queue.shift()!;
      let req: Request;
      try {
        // Built here (an output buffer taken now), so a failure there, out of memory say, fails
        // this job instead of leaving it neither queued nor pending, never settled.
        req = typeof job.req === "function" ? job.req() : job.req;
      } catch (err) {
        this.keepAlive();
        job.reject(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      this.post(slot, job, req);
    }
  }

  /**
   * Gives `idle` (a worker with nothing to do, and nothing queued) a job another worker holds
   * behind its current one and has not started: at the end of a pass one worker would otherwise
   * idle while the other runs two tiles (up to a tile's decode in the 13.5 of a 27-tile pass on 2
   * workers; passes ran 1.4% faster by median, bench/RESULTS.md). The job is the idle worker's
   * only if the host changes its claim cell before the other worker starts it; that worker's
   * answer then only frees the cell.
   */
  private steal(idle: Slot): void {
    for (const other of this.ready) {
      if (other === idle || other.busy < 2) continue;
      // The job sent last, the one to start last.
      let last: number | undefined;
      for (const id of other.jobs) last = id;
      const job = last === undefined ? undefined : this.pending.get(last);
      if (job?.cell === undefined || job.built === undefined) continue;
      if (Atomics.compareExchange(this.cells!, job.cell, CLAIM_WAITING, CLAIM_RECALLED) !== CLAIM_WAITING)
        continue;
      other.jobs.delete(last!);
      other.busy--;
      this.pending.delete(last!);
      this.post(idle, job, job.built);
      return;
    }
  }

  /** Queues a job on workers that are up: synchronously, so that it is sent before the caller goes on. */
  private async enqueue(req: Request | (() => Request), transfer: ArrayBuffer[]): Promise<Response> {
    const res = await new Promise<Response>((resolve, reject) => {
      this.queue.push({ req, transfer, resolve, reject });
      this.keepAlive();
      this.pump();
    });
    if (!res.ok) throw deserializeError(res.error);
    return res;
  }
}
