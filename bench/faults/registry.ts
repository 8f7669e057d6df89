/** Every fault class of the campaign, in the order the runner and docs/reliability.md list them. */
import type { FaultClass } from "./classes.js";
import { concurrentSlices } from "./concurrent-slices.js";
import { h5adDamage } from "./h5ad-damage.js";
import { hostileKeys } from "./hostile-keys.js";
import { killedConvert } from "./killed-convert.js";
import { killedStream } from "./killed-stream.js";
import { network } from "./network.js";
import { obsCache } from "./obs-cache.js";
import { sporadikDamage } from "./sporadik-damage.js";
import { tileMutants } from "./tile-mutants.js";

export const CLASSES: readonly FaultClass[] = [
  tileMutants,
  killedConvert,
  killedStream,
  network,
  concurrentSlices,
  sporadikDamage,
  h5adDamage,
  hostileKeys,
  obsCache,
];

/** The seed CI runs (faults.test.ts) and the runner defaults to. */
export const CI_SEED = 14;
