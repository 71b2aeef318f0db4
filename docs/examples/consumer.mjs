// A delayq consumer over HTTP, for Node 18 or newer with no packages (the built-in fetch).
//
// It reserves one job at a time, works on it while a timer renews its lease (touch), then acks
// it, or nacks it when the work threw. Run it as:
//
//     DELAYQ_URL=http://127.0.0.1:7070 DELAYQ_TOPIC=orders node consumer.mjs
//
// Settings, from the environment:
//   DELAYQ_URL    the server (default http://127.0.0.1:7070)
//   DELAYQ_TOPIC  the topic to consume (default orders)
//   DELAYQ_TOKEN  an API token, when the server requires one
//   DELAYQ_DRAIN  1: take the jobs that are due now, then exit, instead of waiting for more
//
// SIGINT or SIGTERM stops it: at once while it waits for a job, after the current job otherwise.

const URL = (process.env.DELAYQ_URL || "http://127.0.0.1:7070").replace(/\/+$/, "");
const TOPIC = process.env.DELAYQ_TOPIC || "orders";
const TOKEN = process.env.DELAYQ_TOKEN || "";
const DRAIN = process.env.DELAYQ_DRAIN === "1";
const WAIT_MS = DRAIN ? 0 : 30000; // a long poll: the server answers as soon as a job is due

// An error answer of the API: {"error": {"code", "message"}}.
class APIError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

// call sends one API request and returns its decoded JSON answer (undefined for 204).
async function call(method, path, body, { timeoutMs = 10000, signal } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  const timeout = AbortSignal.timeout(timeoutMs);
  const res = await fetch(URL + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
  const text = await res.text();
  if (!res.ok) {
    let err = { code: "http_error", message: res.statusText };
    try {
      err = JSON.parse(text).error ?? err;
    } catch {}
    throw new APIError(res.status, err.code, err.message);
  }
  return text ? JSON.parse(text) : undefined;
}

// Ids may hold any printable character but white space: escape every reserved one.
const jobPath = (job, action) => `/v1/topics/${TOPIC}/jobs/${encodeURIComponent(job.id)}/${action}`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// work is the job's actual work: replace it with yours. Throwing nacks the job.
// This one understands the demonstration bodies of docs/consumers.md: {"work_ms": n} takes
// n milliseconds, {"fail": "why"} fails with that reason.
async function work(job) {
  const body = job.body;
  if (body && typeof body === "object") {
    await sleep(body.work_ms ?? 0);
    if ("fail" in body) throw new Error(body.fail);
  }
  console.log("processed", job.id, JSON.stringify(body));
}

// keepLease touches the job's lease every third of its TTR until the returned function is
// called, so that a long piece of work keeps the job: without touches, the lease ends after
// the TTR and the job is delivered again.
function keepLease(job) {
  let stopped = false;
  let timer;
  const touch = async () => {
    try {
      const res = await call("POST", jobPath(job, "touch"), { lease: job.lease });
      if (!stopped) console.log("touched", job.id, "lease until", res.lease_deadline);
    } catch (e) {
      if (e.code === "lease_lost") {
        // Expired, cancelled or requeued: the ack will fail too.
        console.log("lost", job.id, e.message);
        return;
      }
      console.error("touch failed, trying again:", e.message);
    }
    if (!stopped) timer = setTimeout(touch, job.ttr_ms / 3);
  };
  timer = setTimeout(touch, job.ttr_ms / 3);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// settle acks or nacks a job. Retrying is safe: a repeated ack or nack answers what the first did.
async function settle(job, action, body) {
  let error;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await call("POST", jobPath(job, action), body);
      return true;
    } catch (e) {
      if (e.code === "lease_lost") {
        console.log("lost", job.id, e.message); // someone else holds or ended the job
        return false;
      }
      if (e instanceof APIError && e.status < 500) throw e;
      error = e;
    }
    await sleep(500 * 2 ** attempt);
  }
  console.error(`${action} failed: ${error.message} - the job comes back after its TTR`);
  return false;
}

async function handle(job) {
  const stopKeeping = keepLease(job);
  try {
    await work(job);
  } catch (e) {
    stopKeeping();
    if (await settle(job, "nack", { lease: job.lease, error: e.message })) {
      console.log("nacked", `${job.id}:`, e.message);
    }
    return;
  }
  stopKeeping();
  if (await settle(job, "ack", { lease: job.lease })) console.log("acked", job.id);
}

let stopping = false;
let waiting = null; // the AbortController of a reserve in flight, holding no job
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    stopping = true;
    // A reserve cut short leases nothing (the server puts back what it could not hand over).
    waiting?.abort();
  });
}

while (!stopping) {
  waiting = new AbortController();
  let res;
  try {
    res = await call("POST", `/v1/topics/${TOPIC}/reserve`, { max: 1, wait_ms: WAIT_MS }, {
      timeoutMs: WAIT_MS + 10000,
      signal: waiting.signal,
    });
  } catch (e) {
    if (stopping) break;
    if (DRAIN) {
      console.error("reserve:", e.message);
      process.exit(1);
    }
    console.error("reserve failed, trying again in 1 s:", e.message);
    await sleep(1000);
    continue;
  } finally {
    waiting = null;
  }
  if (res.jobs.length === 0 && DRAIN) break;
  for (const job of res.jobs) await handle(job);
}
