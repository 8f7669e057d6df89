import assert from "node:assert/strict";

/** The error `run` throws or rejects with; fails the test when it succeeds. */
export async function thrownBy(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  assert.fail("expected a failure");
}
