#!/usr/bin/env node
// Installs the Chromium that the real-browser tests (packages/*/test/*.browser.test.ts) drive
// through playwright-core. Idempotent: when /usr/bin/chromium exists it does nothing, so
// `npm test` can call it every time. We use the Debian package rather than Playwright's own
// browser download so that CI needs nothing beyond apt.
import { existsSync } from "node:fs";
import { aptInstall } from "./apt-install.mjs";

const chromium = "/usr/bin/chromium";
const missing = () => (existsSync(chromium) ? [] : [chromium]);
if (missing().length > 0)
  aptInstall({ label: "browser setup", what: "Chromium", packages: ["chromium"], missing });
