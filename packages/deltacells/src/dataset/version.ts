/** Recorded in every dataset's `metadata.converter`; keep in step with package.json. */
export const CONVERTER_NAME = "deltacells-js";
export const CONVERTER_VERSION = "0.1.0";
