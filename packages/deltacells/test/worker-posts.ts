/** What this thread posts to worker threads (the pools' requests among them), seen by tests. */
import { Worker } from "node:worker_threads";

/**
 * Calls `seen(message, worker)` after each message this thread posts to a worker_thread (tsx's
 * loader thread gets some too: look at `op`), until the returned function is called.
 */
export function watchWorkerPosts(seen: (message: unknown, worker: Worker) => void): () => void {
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: Worker, message: unknown, transfer?: never) {
    post.call(this, message, transfer);
    seen(message, this);
  };
  return () => {
    Worker.prototype.postMessage = post;
  };
}
