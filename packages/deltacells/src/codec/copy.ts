/**
 * Copies into and out of shared memory at memory speed: V8's `TypedArray#set` copies word by word
 * with relaxed atomics as soon as either side is a SharedArrayBuffer (1.7-3x slower than memcpy
 * here), and the pool's tile bytes, its lent outputs and the loader's rows all cross shared memory.
 */
import { nativeKernel } from "./native.js";

type Copyable = Int32Array | Float32Array | Uint8Array;

/**
 * `dst[at ..] = src[s .. e)` (arrays of the same type): the native kernel's memcpy where there is
 * one, else `set`. Throws a RangeError when the range does not fit, as `set` does.
 */
export function copyRange<T extends Copyable>(dst: T, at: number, src: T, s: number, e: number): void {
  const native = nativeKernel();
  if (native !== undefined && dst.constructor === src.constructor) {
    if (!native.copy(dst, at, src, s, e))
      throw new RangeError(`copy of [${s}, ${e}) to ${at} is out of range`);
    return;
  }
  (dst as Uint8Array).set((src as Uint8Array).subarray(s, e), at);
}
