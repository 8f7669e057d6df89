// `node tied-child.mjs CMD ARGS...`: runs CMD for as long as this process's stdin stays open.
//
// The tests start their servers (moto, serve) through it with stdin a pipe from the test process.
// However that process ends (its `after` hooks skipped: a test file killed at its timeout, SIGKILL),
// the kernel closes the pipe, and the server is killed here instead of outliving the test and
// holding its port. Plain JavaScript: it runs without tsx, from any package's tests.
import { spawn } from "node:child_process";

const [cmd, ...args] = process.argv.slice(2);
const child = spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit"] });
const end = () => child.kill("SIGKILL");
process.stdin.on("end", end);
process.stdin.on("error", end);
process.stdin.resume();
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, end);
child.on("exit", (code) => process.exit(code ?? 1));
child.on("error", (err) => {
  console.error(`${cmd}: ${err.message}`);
  process.exit(127);
});
