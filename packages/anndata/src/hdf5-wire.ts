/** The messages between {@link openHdf5}'s main-thread tree and its worker (hdf5-worker.ts). */

import type { AnndataErrorTag, InputHint } from "./errors.js";
import type { CompoundField, ElementKind } from "./tree.js";

/** A request without its id. */
export type HdfCall =
  | { op: "open"; path: string; plugins: boolean }
  | { op: "close" }
  | { op: "get" | "attrs" | "keys" | "readCompound"; path: string }
  | { op: "read" | "readStrings"; path: string; start: number | undefined; end: number | undefined };

export type HdfRequest = HdfCall & { id: number };

/** A tree node without its methods: what the main thread needs to stand in for it. */
export type NodeInfo =
  | { kind: "group"; path: string }
  | {
      kind: "array";
      path: string;
      shape: number[];
      element: ElementKind;
      itemSize: number;
      fields?: CompoundField[];
      dtype?: string;
    };

/** An error thrown in the worker, rebuilt as the same error class on the main thread. */
export interface WireError {
  /** Absent for an error that is not an AnndataError (a bug). */
  tag?: AnndataErrorTag;
  message: string;
  object?: string | undefined;
  expected?: unknown;
  found?: unknown;
  hint?: InputHint | undefined;
  /** The message of the error's cause (HDF5's stack), kept for `--debug`. */
  cause?: string | undefined;
  /** Present for an UnsupportedFilterError. */
  filter?: { id: number; name: string; why: string };
  /** What h5wasm printed last, for an error that is not an AnndataError. */
  printed?: string[];
}

export type HdfReply =
  | { id: number; value: unknown }
  | { id: number; error: WireError }
  /** Sent once, when the worker has loaded h5wasm and listens. */
  | { ready: true };
