/** What went wrong, in words a user can act on, from the tagged errors of the libraries. */

interface Tagged {
  _tag?: string;
  object?: string;
  status?: number;
  message?: string;
  name?: string;
  cause?: unknown;
}

/** A sentence for the page when opening or reading `location` failed with `err`. */
export function explain(err: unknown, location: string): string {
  const e = (err ?? {}) as Tagged;
  const cause = (e.cause ?? {}) as Tagged;
  const text = e.message ?? String(err);
  if (e._tag === "HttpStatus" && (e.status === 403 || e.status === 401)) {
    return `Access denied (HTTP ${e.status}) reading ${location}. The bucket or server refuses anonymous reads: make the objects public-readable, or serve them with \`deltacells serve\`.`;
  }
  if (e._tag === "IncompleteDataset") {
    return `${location} is not a deltacells dataset: it has no manifest.json (or its conversion never finished; the manifest is written last). Check the URL, or convert the data with \`deltacells convert\`.`;
  }
  // A chunk of the companion missing or failing a check (its checksum, its positions): not torn.
  if ((e._tag === "IncompleteError" || e._tag === "LayoutError") && /\/c\/\d+$/.test(e.object ?? "")) {
    return `The sporadik store of ${location} is damaged: ${text} Convert again with --sporadik (or copy the dataset again).`;
  }
  if (e._tag === "IncompleteError" || e._tag === "Incomplete") {
    return `The sporadik store of ${location} is torn (its completion block is missing or says incomplete): convert again with --sporadik. ${text}`;
  }
  if (
    e._tag === "Network" ||
    e.name === "TypeError" ||
    cause.name === "TypeError" ||
    /Failed to fetch|NetworkError/i.test(text)
  ) {
    return `The browser could not read ${location}: the server is unreachable, or it does not allow cross-origin reads (CORS: it must send Access-Control-Allow-Origin and allow the Range header). \`deltacells serve\` does both. (${text})`;
  }
  if (e._tag === "UnsupportedUrl") {
    return `${location} is not a URL this page can read: use /NAME/ on a \`deltacells serve\` server, an http(s):// address, or s3://bucket/prefix.`;
  }
  if (e._tag === "ManifestError" || e._tag === "FormatVersion" || /manifest/i.test(text)) {
    return `${location} has a manifest this page cannot use: ${text}`;
  }
  return `Could not read ${location}: ${e._tag ? `[${e._tag}] ` : ""}${text}`;
}
