import type { NodeGet } from "./http-read.js";

/** Browsers read with `fetch`: there is no other client (see `http-get-node.ts`). */
export const nodeGet: NodeGet | undefined = undefined;
