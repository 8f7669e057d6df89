/**
 * The optional native kernel (native/kernel.c, built by node-gyp at install): the decoder's hot
 * loops and the CRC in C (AVX2 and PCLMULQDQ where the CPU has them, chosen at load time; SSE2
 * otherwise), writing straight into the caller's typed arrays. Node only (`#native` resolves to
 * a loader per environment, see package.json); browsers, and Node hosts where it did not build,
 * use the TypeScript loops in kernel.ts, which give identical results. `DELTACELLS_NATIVE=0`
 * disables it.
 */
import { loadAddon } from "#native";
import type { NativeKernel } from "./native/addon.js";

export type { NativeKernel } from "./native/addon.js";

let active: NativeKernel | undefined;
let loaded: NativeKernel | undefined;
/** Why the kernel is not loaded, when it was tried. */
let unavailable: string | undefined;

/** Why the native kernel is not in use (disabled, not built, failed to load), or undefined when it is. */
export function nativeKernelUnavailable(): string | undefined {
  if (active !== undefined) return undefined;
  return loaded !== undefined ? "switched off (useNativeKernel(false))" : unavailable;
}

/** The native kernel when loaded and enabled. */
export function nativeKernel(): NativeKernel | undefined {
  return active;
}

/** Switches between the native and the TypeScript loops (tests and benchmarks compare them). */
export function useNativeKernel(on: boolean): boolean {
  active = on ? loaded : undefined;
  return active !== undefined;
}

/** Loads the addon (once); resolves to undefined (TypeScript loops) when it is unavailable. */
export async function loadNativeKernel(): Promise<NativeKernel | undefined> {
  if (loaded === undefined && unavailable === undefined) {
    const load = loadAddon();
    loaded = load.kernel;
    active = loaded;
    // Decoding still works, with the TypeScript loops; codecInfo() tells why (and how much slower).
    unavailable = load.unavailable;
    // A stale or broken build would otherwise only show as decoding several times slower.
    if (load.warn) {
      console.warn(
        `deltacells: the native decode kernel is not used: ${load.unavailable}. Decoding runs on the TypeScript loops, several times slower; the results are the same.`,
      );
    }
  }
  return active;
}
