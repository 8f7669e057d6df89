/** The worker of page.ts: logs an error and answers. */
console.error("logged by the worker");
postMessage("done");
