#!/usr/bin/env python3
"""Enqueues delayq jobs over HTTP, with the Python standard library only.

Each argument is one job as the API takes it, in JSON; they go in one batch request, and each
succeeds or fails alone:

    python3 producer.py '{"id": "order-42", "body": {"order": 42}, "delay_ms": 1800000}'

Settings, from the environment: DELAYQ_URL (default http://127.0.0.1:7070), DELAYQ_TOPIC
(default orders), DELAYQ_TOKEN (an API token, when the server requires one). Exits 1 when a job
was not enqueued.
"""

import json
import os
import sys
import urllib.error
import urllib.request

URL = os.environ.get("DELAYQ_URL", "http://127.0.0.1:7070").rstrip("/")
TOPIC = os.environ.get("DELAYQ_TOPIC", "orders")
TOKEN = os.environ.get("DELAYQ_TOKEN", "")


def enqueue_batch(jobs):
    """POSTs up to 1000 jobs at once; returns one result per job, in order: {"job": ...} or
    {"error": {"code", "message"}}. Jobs with ids are never stored twice: after a lost answer,
    send the batch again and take already_exists for a job as success."""
    req = urllib.request.Request(f"{URL}/v1/topics/{TOPIC}/jobs/batch", method="POST")
    req.add_header("Content-Type", "application/json")
    if TOKEN:
        req.add_header("Authorization", "Bearer " + TOKEN)
    try:
        with urllib.request.urlopen(req, json.dumps({"jobs": jobs}).encode(), timeout=30) as resp:
            return json.load(resp)["results"]
    except urllib.error.HTTPError as e:  # the whole request was refused
        sys.exit(f"enqueue: {e.code} {e.read().decode(errors='replace')}")


def main():
    jobs = [json.loads(arg) for arg in sys.argv[1:]]
    failed = 0
    for spec, result in zip(jobs, enqueue_batch(jobs)):
        if "error" in result:
            failed += 1
            err = result["error"]
            print("failed", spec.get("id", "(no id)") + ":", err["code"], err["message"], flush=True)
        else:
            job = result["job"]
            print("enqueued", job["id"], job["state"], "run_at", job["run_at"], flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
