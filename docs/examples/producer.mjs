// Enqueues delayq jobs over HTTP, for Node 18 or newer with no packages (the built-in fetch).
//
// Each argument is one job as the API takes it, in JSON; they go in one batch request, and each
// succeeds or fails alone:
//
//     node producer.mjs '{"id": "order-42", "body": {"order": 42}, "delay_ms": 1800000}'
//
// Settings, from the environment: DELAYQ_URL (default http://127.0.0.1:7070), DELAYQ_TOPIC
// (default orders), DELAYQ_TOKEN (an API token, when the server requires one). Exits 1 when a
// job was not enqueued.

const URL = (process.env.DELAYQ_URL || "http://127.0.0.1:7070").replace(/\/+$/, "");
const TOPIC = process.env.DELAYQ_TOPIC || "orders";
const TOKEN = process.env.DELAYQ_TOKEN || "";

// enqueueBatch POSTs up to 1000 jobs at once and returns one result per job, in order:
// {job} or {error: {code, message}}. Jobs with ids are never stored twice: after a lost answer,
// send the batch again and take already_exists for a job as success.
async function enqueueBatch(jobs) {
  const headers = { "Content-Type": "application/json" };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  const res = await fetch(`${URL}/v1/topics/${TOPIC}/jobs/batch`, {
    method: "POST",
    headers,
    body: JSON.stringify({ jobs }),
    signal: AbortSignal.timeout(30000),
  });
  if (!res.ok) {
    // The whole request was refused.
    console.error(`enqueue: ${res.status} ${await res.text()}`);
    process.exit(1);
  }
  return (await res.json()).results;
}

const jobs = process.argv.slice(2).map((arg) => JSON.parse(arg));
const results = await enqueueBatch(jobs);
let failed = 0;
results.forEach((result, i) => {
  if (result.error) {
    failed++;
    console.log("failed", `${jobs[i].id ?? "(no id)"}:`, result.error.code, result.error.message);
  } else {
    console.log("enqueued", result.job.id, result.job.state, "run_at", result.job.run_at);
  }
});
process.exitCode = failed ? 1 : 0;
