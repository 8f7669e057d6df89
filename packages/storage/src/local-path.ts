import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseLocation } from "./location.js";

/**
 * The absolute local path a location names (a path, resolved against the working folder, or a
 * `file://` URL), or undefined for any other URL (see `parseLocation`).
 */
export function localPath(location: string): string | undefined {
  const parsed = parseLocation(location);
  if (parsed.kind === "path") return resolve(parsed.path);
  return parsed.scheme === "file" ? fileURLToPath(parsed.url) : undefined;
}
