/** `#native` outside Node: there is no addon; the TypeScript loops of kernel.ts decode. */
import type { AddonLoad } from "./addon.js";

export function loadAddon(): AddonLoad {
  return { unavailable: "not under Node (browsers use the TypeScript loops)" };
}
