// The kernl baseline of skein-bench's `runs` workload: N threads x R runs through the
// real kernl package (the version package.json pins), with kernl's default storage
// (its in-memory store) and the mock model kernl ships with its own tests
// (dist/thread/__tests__/fixtures/mock-model.js, createMockModel), answering "ok" at
// once as skein's scripted engine does.
//
//   node bench/baselines/kernl/runs.mjs --threads N --runs R
//
// Prints one JSON line on stdout, last (kernl's pino logger, at its default level,
// may print lines before it):
//   {"system":"kernl","version":string,"node":string,"storage":"in-memory",
//    "model":"createMockModel","threads":N,"runs_per_thread":R,"runs":uint,
//    "events":uint,"seconds":number,"runs_per_s":number,"p50_us":number,
//    "p99_us":number,"failures":0}
// Exit codes: 0 done and verified, 1 a run failed or the store lost something, 64 bad usage.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { Agent, Kernl } from "kernl";
import { message } from "@kernl-sdk/protocol";
// Not in kernl's exports map, so imported by path: the mock model kernl's own
// tests run agents with. It streams what `generate` returns.
import { createMockModel } from "./node_modules/kernl/dist/thread/__tests__/fixtures/mock-model.js";

const exit_failure = 1;
const exit_usage = 64;
const count_max = 10_000_000;
// What one run leaves in a thread's history: the user message and the model's answer.
const events_per_run = 2;

function usage_error(text) {
  process.stderr.write(`runs.mjs: ${text}\nusage: node runs.mjs --threads N --runs R\n`);
  process.exit(exit_usage);
}

function parse_args(argv) {
  const out = { threads: 0, runs: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    const value = Number(argv[i + 1]);
    if (name !== "--threads" && name !== "--runs") usage_error(`unknown argument '${name}'`);
    if (!Number.isInteger(value) || value < 1 || value > count_max)
      usage_error(`${name} needs an integer in [1, ${count_max}]`);
    out[name.slice(2)] = value;
  }
  if (out.threads === 0 || out.runs === 0) usage_error("--threads and --runs are both needed");
  return out;
}

function kernl_version() {
  const url = new URL("./node_modules/kernl/package.json", import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")).version;
}

// Kernl builds a memory encoder at construction and, by default, resolves an OpenAI
// embedding model for it, which needs a provider package and a key. The agent has
// memory disabled, so the encoder is never called; this one says so if it ever is.
const unused_embedder = {
  spec: "1.0",
  provider: "none",
  modelId: "unused",
  async embed() {
    throw new Error("runs.mjs: the agent has memory disabled; nothing may embed");
  },
};

function make_agent() {
  const kernl = new Kernl({ memory: { embeddingModel: unused_embedder } });
  const model = createMockModel(async () => ({
    content: [message({ role: "assistant", text: "ok" })],
    finishReason: "stop",
    usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    warnings: [],
  }));
  const agent = new Agent({ id: "bench", name: "bench", instructions: "Be brief.", model });
  kernl.register(agent);
  return { kernl, agent, model };
}

// Nearest rank, in microseconds, as skein-bench's quantile_us.
function quantile_us(sorted_ms, q) {
  if (sorted_ms.length === 0) return 0;
  const rank = Math.min(Math.max(Math.ceil(q * sorted_ms.length), 1), sorted_ms.length);
  return sorted_ms[rank - 1] * 1000;
}

// Every thread's runs one after another (kernl refuses a second run on a running
// thread), all threads at once: the event loop always has work.
async function drive(agent, tids, runs) {
  const latencies_ms = [];
  const one_thread = async (tid) => {
    for (let r = 0; r < runs; ++r) {
      const sent = performance.now();
      const result = await agent.run(`run ${r}`, { threadId: tid });
      latencies_ms.push(performance.now() - sent);
      if (result.response !== "ok" || result.state !== "stopped")
        throw new Error(`thread ${tid} run ${r}: ${JSON.stringify(result)}`);
    }
  };
  const start = performance.now();
  await Promise.all(tids.map(one_thread));
  return { seconds: (performance.now() - start) / 1000, latencies_ms };
}

// The store must hold every run: user message then "ok", seqs 0.. without a gap.
async function verify(kernl, tids, runs) {
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
  return events;
}

async function main() {
  const { threads, runs } = parse_args(process.argv.slice(2));
  const { kernl, agent, model } = make_agent();
  // Created before the clock starts, as skein-bench creates its threads.
  const tids = [];
  for (let i = 0; i < threads; ++i) {
    const t = await kernl.threads.create({ tid: `bench_${i}`, agentId: agent.id, model });
    tids.push(t.tid);
  }
  const { seconds, latencies_ms } = await drive(agent, tids, runs);
  const events = await verify(kernl, tids, runs);
  latencies_ms.sort((a, b) => a - b);
  const total = threads * runs;
  const figures = {
    system: "kernl",
    version: kernl_version(),
    node: process.version,
    storage: "in-memory",
    model: "createMockModel",
    threads,
    runs_per_thread: runs,
    runs: latencies_ms.length,
    events,
    seconds,
    runs_per_s: seconds > 0 ? total / seconds : 0,
    p50_us: quantile_us(latencies_ms, 0.5),
    p99_us: quantile_us(latencies_ms, 0.99),
    failures: 0,
  };
  process.stdout.write(JSON.stringify(figures) + "\n");
}

main().catch((err) => {
  process.stderr.write(`runs.mjs: ${err?.stack ?? err}\n`);
  process.exit(exit_failure);
});
