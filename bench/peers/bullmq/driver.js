// BullMQ contestant of delayq's peer benchmark.
//
// The Go harness starts `node driver.js <redis-url>` and sends one JSON command per line on
// stdin; the driver answers each with one JSON line on stdout ({"error": "..."} on failure).
// Commands: version; open {topic}; produce {n, producers, batch, delay_ms, at_us, step_us};
// consume {concurrency}; await {n, timeout_ms}; stop; close. Times are Unix microseconds.
'use strict';

const readline = require('node:readline');
const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');

const BODY_SIZE = 100;
const INDEX_DIGITS = 10;

const url = new URL(process.argv[2] || 'redis://127.0.0.1:6379');
const connection = {
  host: url.hostname,
  port: Number(url.port || 6379),
  maxRetriesPerRequest: null,
};

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

function body(i) {
  return String(i).padStart(INDEX_DIGITS, '0') + 'x'.repeat(BODY_SIZE - INDEX_DIGITS);
}

// Jobs are removed once done, as delayq and asynq remove acked jobs.
const jobOpts = { removeOnComplete: true, removeOnFail: true };

let queue = null;
let worker = null;
let topic = '';
let deliveries = [];

function delayOf(cmd, i) {
  if (cmd.at_us) {
    const dueMs = (cmd.at_us + i * cmd.step_us) / 1000;
    // BullMQ makes a job due at its creation time (Date.now()) + delay: round up, never early.
    return Math.max(0, Math.ceil(dueMs - Date.now()));
  }
  return cmd.delay_ms || 0;
}

async function produce(cmd) {
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
  worker = new Worker(
    topic,
    async (job) => {
      deliveries.push([Number(job.data.slice(0, INDEX_DIGITS)), nowUs()]);
    },
    { connection, concurrency: cmd.concurrency, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } },
  );
  worker.on('error', (err) => process.stderr.write(`bullmq worker: ${err}\n`));
  await worker.waitUntilReady();
  return {};
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function awaitDeliveries(cmd) {
  const deadline = Date.now() + (cmd.timeout_ms || 120000);
  while (deliveries.length < cmd.n) {
    if (Date.now() > deadline) throw new Error(`got ${deliveries.length} of ${cmd.n} deliveries`);
    await sleep(1);
  }
  for (;;) {
    const c = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused');
    if (Object.values(c).every((v) => v === 0)) break;
    if (Date.now() > deadline) throw new Error(`jobs left unfinished: ${JSON.stringify(c)}`);
    await sleep(1);
  }
  const done = nowUs();
  const out = deliveries;
  deliveries = [];
  return { deliveries: out, done_us: done };
}

async function stop() {
  if (worker) {
    await worker.close();
    worker = null;
  }
  return {};
}

async function handle(cmd) {
  switch (cmd.cmd) {
    case 'version':
      return { bullmq: require('bullmq/package.json').version, node: process.version };
    case 'open':
      await stop();
      if (queue) await queue.close();
      topic = cmd.topic;
      deliveries = [];
      queue = new Queue(topic, { connection });
      await queue.waitUntilReady();
      return {};
    case 'produce':
      return produce(cmd);
    case 'consume':
      return consume(cmd);
    case 'await':
      return awaitDeliveries(cmd);
    case 'stop':
      return stop();
    case 'close':
      await stop();
      if (queue) await queue.close();
      queue = null;
      return {};
    default:
      throw new Error(`unknown command ${cmd.cmd}`);
  }
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
let chain = Promise.resolve();
rl.on('line', (line) => {
  chain = chain.then(async () => {
    let reply;
    try {
      reply = await handle(JSON.parse(line));
    } catch (err) {
      reply = { error: String((err && err.stack) || err) };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  });
});
rl.on('close', () => {
  chain.then(async () => {
    await stop();
    if (queue) await queue.close();
    process.exit(0);
  });
});
