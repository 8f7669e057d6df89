/**
 * The loader's memory ledger, the one count of every byte it holds: tiles (stored and decoded,
 * counted by the feed) and batch buffers (counted by the buffers themselves, as allocated and
 * grown; not the small obs arrays made for each batch and garbage-collected), against the
 * `memoryCap`. Batch buffers are made on demand (a batch must be made to go on), so the cap binds
 * through the tiles: a tile is fetched ahead only if it fits beside everything held, with the
 * batch buffers counted at least as reserved (all the buffers the loader can hold at once; see
 * `batchBuffers` in loader.ts), so an early tile never takes the room of a later buffer.
 */
export class MemoryLedger {
  /** Tile bytes held now. */
  tiles = 0;
  /** Batch buffer bytes held now (lent to batches or kept for the next ones). */
  batches = 0;
  /** The most bytes (tiles plus batch buffers) held at once. */
  peak = 0;
  /** The most tile bytes held at once. */
  peakTiles = 0;
  /** The most batch buffer bytes held at once. */
  peakBatches = 0;

  constructor(
    readonly cap: number,
    /** Bytes of batch buffers the loader can hold at once, as estimated when it was created. */
    readonly reservedBatches: number,
  ) {}

  addTiles(bytes: number): void {
    this.tiles += bytes;
    this.peakTiles = Math.max(this.peakTiles, this.tiles);
    this.note();
  }

  addBatches(bytes: number): void {
    this.batches += bytes;
    this.peakBatches = Math.max(this.peakBatches, this.batches);
    this.note();
  }

  /** Whether `bytes` more tile bytes fit under the cap beside what is held and reserved. */
  fits(bytes: number): boolean {
    return this.tiles + Math.max(this.batches, this.reservedBatches) + bytes <= this.cap;
  }

  private note(): void {
    this.peak = Math.max(this.peak, this.tiles + this.batches);
  }
}
