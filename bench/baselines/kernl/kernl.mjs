// The kernl baseline of skein-bench's `runs` and `latency` workloads: N threads x R
// runs through the real kernl package (the version package.json pins), its default
// in-memory storage and the mock model kernl ships with its own tests
// (createMockModel), answering "ok" after D ms (awaited inside `generate`, as kernl's
// dist/agent/__tests__/concurrency.test.js does). Every thread at once on the one
// event loop, each thread's runs one after another (kernl refuses a second run on a
// running thread). runs: R = 10, D = 0; latency: R = 1, D = 1000.
//
//   node bench/baselines/kernl/kernl.mjs --threads N --runs R --delay-ms D
//
// Prints one JSON line on stdout, last (kernl's pino logger may print before it):
//   {"system":"kernl","version":string,"node":string,"storage":"in-memory",
//    "model":"createMockModel","threads":N,"runs_per_thread":R,"delay_ms":D,"runs":uint,
//    "events":uint,"seconds":number,"runs_per_s":number,"p50_us":number,"p99_us":number,
//    "rss_start_bytes":uint,"rss_peak_bytes":uint,"failures":0}
// rss_peak_bytes is the process's peak resident set (getrusage ru_maxrss), Node included.
// Exit codes: 0 done and verified, 1 a run failed or the store lost something, 64 bad usage.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { Agent, Kernl } from "kernl";
import { message } from "@kernl-sdk/protocol";
// Not in kernl's exports map, so imported by path.
import { createMockModel } from "./node_modules/kernl/dist/thread/__tests__/fixtures/mock-model.js";

const limits = { "--threads": [1, 10_000_000], "--runs": [1, 10_000_000], "--delay-ms": [0, 600_000] };
const events_per_run = 2;  // the user message and the model's answer

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  const [name, value] = [process.argv[i], Number(process.argv[i + 1])];
  const [min, max] = limits[name] ?? [];
  if (min === undefined || !Number.isInteger(value) || value < min || value > max || Object.keys(args).length === 3) {
    process.stderr.write(`kernl.mjs: bad argument '${name}'\n`);
    process.exit(64);
  }
  args[name.slice(2).replace("-", "_")] = value;
}
if (Object.keys(args).length !== 3) {
  process.stderr.write("usage: node kernl.mjs --threads N --runs R --delay-ms D (all three)\n");
  process.exit(64);
}
const { threads, runs, delay_ms } = args;

async function main() {
  // Kernl builds a memory encoder at construction and by default resolves an OpenAI
  // embedding model for it, which needs a provider package and a key. The agent has
  // memory disabled, so this one is never called; it says so if it ever is.
  const unused_embedder = { spec: "1.0", provider: "none", modelId: "unused", async embed() {
    throw new Error("kernl.mjs: the agent has memory disabled; nothing may embed");
  } };
  const kernl = new Kernl({ memory: { embeddingModel: unused_embedder } });
  const model = createMockModel(async () => {
    if (delay_ms > 0) await new Promise((resolve) => setTimeout(resolve, delay_ms));
    return { content: [message({ role: "assistant", text: "ok" })], finishReason: "stop",
             usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, warnings: [] };
  });
  const agent = new Agent({ id: "bench", name: "bench", instructions: "Be brief.", model });
  kernl.register(agent);
  // Created before the clock starts, as skein-bench creates its threads.
  const tids = [];
  for (let i = 0; i < threads; ++i) {
    tids.push((await kernl.threads.create({ tid: `bench_${i}`, agentId: agent.id, model })).tid);
  }
  const rss_start_bytes = process.memoryUsage().rss;

  // Every thread's first run starts before any can end (the delay is a timer, and
  // the map runs to its end before the event loop turns); each run is timed from its
  // own start. A run that ended sooner than the model's delay did not wait for it.
  const latencies_ms = [];
  const start = performance.now();
  await Promise.all(tids.map(async (tid) => {
    for (let r = 0; r < runs; ++r) {
      const sent = performance.now();
      const result = await agent.run(`run ${r}`, { threadId: tid });
      const took = performance.now() - sent;
      latencies_ms.push(took);
      if (result.response !== "ok" || result.state !== "stopped")
        throw new Error(`thread ${tid} run ${r}: ${JSON.stringify(result)}`);
      // setTimeout may fire up to a millisecond early by the performance clock.
      if (took < delay_ms - 1) throw new Error(`thread ${tid}: ended after ${took} ms, before the model's ${delay_ms}`);
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const rss_peak_bytes = process.resourceUsage().maxRSS * 1024;  // ru_maxrss in kilobytes

  // The store must hold every run: user message then "ok", seqs 0.. without a gap.
  let events = 0;
  for (const tid of tids) {
    const history = await kernl.storage.threads.history(tid);
    if (history.length !== runs * events_per_run)
      throw new Error(`thread ${tid}: ${history.length} events, expected ${runs * events_per_run}`);
    history.forEach((e, i) => {
      const role = i % events_per_run === 0 ? "user" : "assistant";
      if (e.seq !== i || e.kind !== "message" || e.role !== role)
        throw new Error(`thread ${tid}: event ${i} is ${e.kind}/${e.role} seq ${e.seq}`);
    });
    events += history.length;
  }
  // Nearest rank, in microseconds, as skein-bench's quantile_us.
  latencies_ms.sort((a, b) => a - b);
  const quantile_us = (q) => latencies_ms.length === 0 ? 0 :
    latencies_ms[Math.min(Math.max(Math.ceil(q * latencies_ms.length), 1), latencies_ms.length) - 1] * 1000;
  const url = new URL("./node_modules/kernl/package.json", import.meta.url);
  const version = JSON.parse(readFileSync(url, "utf8")).version;
  process.stdout.write(JSON.stringify({
    system: "kernl", version, node: process.version, storage: "in-memory", model: "createMockModel", threads,
    runs_per_thread: runs, delay_ms, runs: latencies_ms.length, events, seconds,
    runs_per_s: seconds > 0 ? latencies_ms.length / seconds : 0, p50_us: quantile_us(0.5), p99_us: quantile_us(0.99),
    rss_start_bytes, rss_peak_bytes, failures: 0,
  }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`kernl.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
