// A fault-injecting HTTP proxy for retry tests: each request takes the next planned fault (or
// the default), and is otherwise forwarded unchanged to the upstream server.
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** What the proxy does to one request. */
export type Fault =
  | "pass" // forward unchanged
  | "503" // answer 503 without forwarding
  | "429" // answer 429 with Retry-After: 0
  | "500"
  | "403"
  | "reset" // destroy the connection before any answer
  | "truncate" // forward the status and headers, send half the body, then destroy the socket
  | "stall" // never answer (the connection stays open)
  | "stall-body" // forward the status and headers and half the body, then send nothing more
  | { status: number; body: Uint8Array; headers?: Record<string, string> } // answer this, without forwarding
  | { delayMs: number } // wait, then forward
  | { parts: number; everyMs: number }; // forward the status and headers, then the body in parts, one every everyMs

export class FaultProxy {
  readonly url: string;
  /** Faults for the next requests, consumed in order. */
  plan: Fault[] = [];
  /** What to do once `plan` is empty. */
  otherwise: Fault = "pass";
  /**
   * A fault chosen by the request itself (e.g. stall the upload of one key), taken before `plan`
   * and `otherwise` when it returns one; requests it lets pass consume the plan as before.
   */
  rule: ((req: { method: string; path: string }) => Fault | undefined) | undefined;
  /** Every request seen: method, path and the fault applied. */
  readonly seen: { method: string; path: string; range: string | undefined; fault: Fault }[] = [];
  private readonly sockets = new Set<Socket>();
  private waiters: { count: number; resolve: () => void }[] = [];

  private constructor(
    private readonly server: Server,
    private readonly upstream: URL,
  ) {
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  static async start(upstream: string): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const proxy = new FaultProxy(server, new URL(upstream));
    server.on("request", (req, res) => proxy.handle(req, res));
    return proxy;
  }

  /** Sets the plan and clears the log. */
  reset(plan: Fault[] = [], otherwise: Fault = "pass"): void {
    this.plan = plan;
    this.otherwise = otherwise;
    this.seen.length = 0;
  }

  /** Resolves once `count` requests have arrived since the last reset: wait on that, not on a clock. */
  arrived(count: number): Promise<void> {
    if (this.seen.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const fault =
      this.rule?.({ method: req.method ?? "GET", path: req.url ?? "" }) ??
      this.plan.shift() ??
      this.otherwise;
    const range = req.headers.range;
    this.seen.push({ method: req.method ?? "GET", path: req.url ?? "", range, fault });
    const ready = this.waiters.filter((w) => w.count <= this.seen.length);
    this.waiters = this.waiters.filter((w) => w.count > this.seen.length);
    for (const w of ready) w.resolve();
    if (fault === "503" || fault === "429" || fault === "500" || fault === "403") {
      res.writeHead(Number(fault), fault === "429" ? { "retry-after": "0" } : {});
      res.end(`injected ${fault}`);
      return;
    }
    if (fault === "stall") return;
    if (typeof fault === "object" && "status" in fault) {
      res.writeHead(fault.status, { "content-type": "application/octet-stream", ...fault.headers });
      res.end(fault.body);
      return;
    }
    if (fault === "reset") {
      req.socket.destroy();
      return;
    }
    if (typeof fault === "object" && "parts" in fault) {
      this.forward(req, res, fault);
      return;
    }
    const forward = () =>
      this.forward(req, res, fault === "truncate" ? "truncate" : fault === "stall-body" ? "stall" : "pass");
    if (typeof fault === "object") {
      // Forget the delayed forward when the client goes away, so no timer outlives the test.
      const timer = setTimeout(forward, fault.delayMs);
      res.on("close", () => clearTimeout(timer));
    } else forward();
  }

  private forward(
    req: IncomingMessage,
    res: ServerResponse,
    cut: "pass" | "truncate" | "stall" | { parts: number; everyMs: number },
  ): void {
    const up = httpRequest(
      {
        host: this.upstream.hostname,
        port: this.upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: this.upstream.host },
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        if (cut === "pass") {
          upRes.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        upRes.on("data", (c: Buffer) => chunks.push(c));
        upRes.on("end", () => {
          const body = Buffer.concat(chunks);
          if (typeof cut === "object") {
            // A slow but moving body: part k goes out k * everyMs after the headers.
            const size = Math.ceil(body.length / cut.parts);
            let k = 0;
            const next = () => {
              const part = body.subarray(k * size, (k + 1) * size);
              k++;
              if (k >= cut.parts) res.end(part);
              else res.write(part, () => timers.push(setTimeout(next, cut.everyMs)));
            };
            const timers: ReturnType<typeof setTimeout>[] = [];
            res.on("close", () => {
              for (const t of timers) clearTimeout(t);
            });
            next();
            return;
          }
          // Content-Length promised body.length bytes: send half, then cut the connection.
          res.write(body.subarray(0, Math.floor(body.length / 2)), () => {
            if (cut === "truncate") res.socket?.destroy();
          });
        });
      },
    );
    up.on("error", () => res.socket?.destroy());
    req.pipe(up);
  }
}
