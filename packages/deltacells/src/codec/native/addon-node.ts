/**
 * `#native` under Node: loads the kernel addon (native/kernel.c) that node-gyp built at install,
 * and refuses one whose version is not the one these sources call, or that lacks one of their
 * functions (a stale build), so that decoding falls back to the TypeScript loops instead of
 * calling functions that are not there.
 */
import { createRequire } from "node:module";
import { isMainThread } from "node:worker_threads";
import type { AddonLoad } from "./addon.js";
import { NATIVE_KERNEL_FUNCTIONS, NATIVE_KERNEL_VERSION, type NativeKernel } from "./addon.js";

/** Where node-gyp puts the addon: src/codec/native/ and dist/codec/native/ are three levels down. */
const ADDON = new URL("../../../build/Release/deltacells_kernel.node", import.meta.url);

/** Loads the addon at `file` (tests load stand-ins for stale builds). */
export function loadAddon(file: URL = ADDON): AddonLoad {
  if (process.env.DELTACELLS_NATIVE === "0") return { unavailable: "disabled by DELTACELLS_NATIVE=0" };
  const path = file === ADDON ? "build/Release/deltacells_kernel.node" : file.pathname;
  let addon: Partial<NativeKernel>;
  try {
    addon = createRequire(import.meta.url)(file.pathname) as Partial<NativeKernel>;
  } catch (err) {
    return {
      unavailable: `${path} did not load: ${err instanceof Error ? err.message : String(err)}`,
      warn: isMainThread,
    };
  }
  if (addon.version !== NATIVE_KERNEL_VERSION) {
    return {
      unavailable:
        `${path} is version ${addon.version ?? "1 (no version field)"}, these sources need ` +
        `version ${NATIVE_KERNEL_VERSION}: rebuild it (npm rebuild @deltacells/core)`,
      warn: isMainThread,
    };
  }
  const lacking = NATIVE_KERNEL_FUNCTIONS.filter((name) => typeof addon[name] !== "function");
  if (lacking.length > 0) {
    return {
      unavailable: `${path} has no ${lacking.join(", ")} (built from older sources): rebuild it (npm rebuild @deltacells/core)`,
      warn: isMainThread,
    };
  }
  return { kernel: addon as NativeKernel };
}
