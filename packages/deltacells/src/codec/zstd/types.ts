/** The one small interface the codec needs from zstd, whatever implements it. */
export interface ZstdBackend {
  /** Which implementation this is (for benchmarks and error messages). */
  readonly name: string;
  /**
   * Decompresses the single zstd frame `src` into `dst` (whose length is the expected size) and
   * returns the number of bytes written. Throws if the frame is corrupt or does not fit.
   */
  decompressInto(src: Uint8Array, dst: Uint8Array): number;
  /** Compresses `src` into one frame with its content size; undefined where only decoding is available. */
  compress?: (src: Uint8Array, level: number) => Uint8Array;
}
