/** What decodes tiles in this process: {@link codecInfo}. */
import { nativeKernel, nativeKernelUnavailable } from "./native.js";
import { loadZstd } from "./zstd/load.js";

/** The decoding machinery in use, for logs and benchmark reports. */
export interface CodecInfo {
  /** `"native"`: the C kernel (Node); `"typescript"`: the loops of kernel.ts (browsers, or Node without the addon). */
  kernel: "native" | "typescript";
  /** The native loops' instruction set (x86-64: AVX2 and a VPCLMULQDQ or PCLMULQDQ CRC, or SSE2; else plain C). */
  isa?: "avx2+vpclmulqdq" | "avx2+pclmulqdq" | "sse2" | "c";
  /** Why the native kernel is not in use, when it is not. */
  kernelUnavailable?: string;
  /** The zstd backend (`zstd-napi`, or a WebAssembly build, with why the native one failed). */
  zstd: string;
  /** Whether a tile is decoded by one native call, zstd included (the kernel's own zstd build). */
  fused: boolean;
}

const ISA_NAMES = ["c", "sse2", "avx2+pclmulqdq", "avx2+vpclmulqdq"] as const;

/** Loads the codec (as the first decode would) and describes it. */
export async function codecInfo(): Promise<CodecInfo> {
  const zstd = await loadZstd();
  const k = nativeKernel();
  if (k === undefined) {
    return {
      kernel: "typescript",
      kernelUnavailable: nativeKernelUnavailable(),
      zstd: zstd.name,
      fused: false,
    };
  }
  return {
    kernel: "native",
    isa: ISA_NAMES[Math.max(0, Math.min(3, k.isa()))],
    zstd: zstd.name,
    fused: zstd.name === "zstd-napi",
  };
}

/**
 * One line for logs and reports: `native kernel (avx2+vpclmulqdq), zstd: zstd-napi, one native
 * call per tile`, or `typescript kernel (why the native one is not in use), zstd: zstddec`.
 */
export function formatCodecInfo(info: CodecInfo): string {
  const kernel = `${info.kernel} kernel${info.isa ? ` (${info.isa})` : ""}${info.kernelUnavailable ? ` (${info.kernelUnavailable})` : ""}`;
  return `${kernel}, zstd: ${info.zstd}${info.fused ? ", one native call per tile" : ""}`;
}
