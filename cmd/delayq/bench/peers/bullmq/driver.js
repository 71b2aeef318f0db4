// BullMQ contestant of delayq's peer benchmark.
//
// The contestant's Go process starts `node driver.js <redis-url>` and sends one JSON command per
// line on stdin, each with an id; the driver answers each with one JSON line on stdout carrying
// the same id ({"id": …, "error": "..."} on failure). Commands run concurrently, so that one
// topic can be loaded with jobs while another's deliveries are awaited.
// Commands: version; open {topic}; produce {topic, n, producers, batch, delay_ms, at_us,
// step_us}; consume {topic, concurrency}; await {topic, n, timeout_ms}; stop {topic};
// close {topic}. Times are Unix microseconds.
'use strict';

const readline = require('node:readline');
const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');

const BODY_SIZE = 100;
const INDEX_DIGITS = 10;

const url = new URL(process.argv[2] || 'redis://127.0.0.1:6379');
// Connection options, not an ioredis instance, as BullMQ's guide on connections shows first:
// the Queue and the Worker each make their own connections from them, and the Worker sets
// maxRetriesPerRequest to null on its blocking connection itself.
const connection = { host: url.hostname, port: Number(url.port || 6379) };

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

function body(i) {
  return String(i).padStart(INDEX_DIGITS, '0') + 'x'.repeat(BODY_SIZE - INDEX_DIGITS);
}

// Jobs are removed once done, as delayq and asynq remove acked jobs.
const jobOpts = { removeOnComplete: true, removeOnFail: true };

// The open topics: topic → { queue, worker, deliveries }.
const topics = new Map();

function topicOf(cmd) {
  const t = topics.get(cmd.topic);
  if (!t) throw new Error(`topic ${cmd.topic} is not open`);
  return t;
}

function delayOf(cmd, i) {
  if (cmd.at_us) {
    const dueMs = (cmd.at_us + i * cmd.step_us) / 1000;
    // BullMQ makes a job due at its creation time (Date.now()) + delay: round up, never early.
    return Math.max(0, Math.ceil(dueMs - Date.now()));
  }
  return cmd.delay_ms || 0;
}

async function produce(cmd) {
  const { queue } = topicOf(cmd);
  const batch = Math.max(1, cmd.batch || 1);
  let next = 0;
  const start = nowUs();
  const producer = async () => {
    for (;;) {
      const from = next;
      next += batch;
      if (from >= cmd.n) return;
      const to = Math.min(from + batch, cmd.n);
      if (batch === 1) {
        await queue.add('bench', body(from), { ...jobOpts, delay: delayOf(cmd, from) });
        continue;
      }
      const jobs = [];
      for (let i = from; i < to; i++) {
        jobs.push({ name: 'bench', data: body(i), opts: { ...jobOpts, delay: delayOf(cmd, i) } });
      }
      await queue.addBulk(jobs);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, cmd.producers || 1) }, producer));
  return { start_us: start, end_us: nowUs() };
}

async function consume(cmd) {
  const t = topicOf(cmd);
  const worker = new Worker(
    cmd.topic,
    async (job) => {
      t.deliveries.push([Number(job.data.slice(0, INDEX_DIGITS)), nowUs()]);
    },
    { connection, concurrency: cmd.concurrency, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } },
  );
  worker.on('error', (err) => process.stderr.write(`bullmq worker: ${err}\n`));
  t.worker = worker;
  await worker.waitUntilReady();
  return {};
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function awaitDeliveries(cmd) {
  const t = topicOf(cmd);
  const deadline = Date.now() + (cmd.timeout_ms || 120000);
  while (t.deliveries.length < cmd.n) {
    if (Date.now() > deadline) throw new Error(`got ${t.deliveries.length} of ${cmd.n} deliveries`);
    await sleep(1);
  }
  for (;;) {
    const c = await t.queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused');
    if (Object.values(c).every((v) => v === 0)) break;
    if (Date.now() > deadline) throw new Error(`jobs left unfinished: ${JSON.stringify(c)}`);
    await sleep(1);
  }
  const done = nowUs();
  const out = t.deliveries;
  t.deliveries = [];
  return { deliveries: out, done_us: done };
}

async function stop(t) {
  if (t.worker) {
    const w = t.worker;
    t.worker = null;
    await w.close();
  }
  return {};
}

async function close(topic) {
  const t = topics.get(topic);
  if (!t) return {};
  topics.delete(topic);
  await stop(t);
  await t.queue.close();
  return {};
}

async function handle(cmd) {
  switch (cmd.cmd) {
    case 'version':
      return { bullmq: require('bullmq/package.json').version, node: process.version };
    case 'open': {
      await close(cmd.topic);
      const queue = new Queue(cmd.topic, { connection });
      await queue.waitUntilReady();
      topics.set(cmd.topic, { queue, worker: null, deliveries: [] });
      return {};
    }
    case 'produce':
      return produce(cmd);
    case 'consume':
      return consume(cmd);
    case 'await':
      return awaitDeliveries(cmd);
    case 'stop':
      return stop(topicOf(cmd));
    case 'close':
      return close(cmd.topic);
    default:
      throw new Error(`unknown command ${cmd.cmd}`);
  }
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
const running = new Set();
rl.on('line', (line) => {
  const run = (async () => {
    let cmd = {};
    let reply;
    try {
      cmd = JSON.parse(line);
      reply = await handle(cmd);
    } catch (err) {
      reply = { error: String((err && err.stack) || err) };
    }
    process.stdout.write(JSON.stringify({ id: cmd.id, ...reply }) + '\n');
  })();
  running.add(run);
  run.finally(() => running.delete(run));
});
rl.on('close', async () => {
  await Promise.allSettled([...running]);
  for (const topic of [...topics.keys()]) await close(topic);
  process.exit(0);
});
