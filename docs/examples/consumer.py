#!/usr/bin/env python3
"""A delayq consumer over HTTP, with the Python standard library only.

It reserves one job at a time, works on it while a thread renews its lease (touch), then acks
it, or nacks it when the work raised. Run it as:

    DELAYQ_URL=http://127.0.0.1:7070 DELAYQ_TOPIC=orders python3 consumer.py

Settings, from the environment:
  DELAYQ_URL    the server (default http://127.0.0.1:7070)
  DELAYQ_TOPIC  the topic to consume (default orders)
  DELAYQ_TOKEN  an API token, when the server requires one
  DELAYQ_DRAIN  1: take the jobs that are due now, then exit, instead of waiting for more

SIGINT or SIGTERM stops it: at once while it waits for a job, after the current job otherwise.
"""

import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

URL = os.environ.get("DELAYQ_URL", "http://127.0.0.1:7070").rstrip("/")
TOPIC = os.environ.get("DELAYQ_TOPIC", "orders")
TOKEN = os.environ.get("DELAYQ_TOKEN", "")
DRAIN = os.environ.get("DELAYQ_DRAIN") == "1"
WAIT_MS = 0 if DRAIN else 30000  # a long poll: the server answers as soon as a job is due


class APIError(Exception):
    """An error answer of the API: {"error": {"code", "message"}}."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code = status, code


def call(method, path, body=None, timeout=10.0):
    """Sends one API request and returns its decoded JSON answer (None for 204)."""
    req = urllib.request.Request(URL + path, method=method)
    req.add_header("Content-Type", "application/json")
    if TOKEN:
        req.add_header("Authorization", "Bearer " + TOKEN)
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(req, data, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        try:
            err = json.load(e)["error"]
        except (ValueError, KeyError, TypeError):
            err = {"code": "http_error", "message": e.reason}
        raise APIError(e.code, err["code"], err["message"]) from None
    return json.loads(raw) if raw else None


def job_path(job, action):
    # Ids may hold any printable character but white space: escape every reserved one.
    job_id = urllib.parse.quote(job["id"], safe="")
    return f"/v1/topics/{TOPIC}/jobs/{job_id}/{action}"


def work(job):
    """The job's actual work: replace it with yours. Raising an exception nacks the job.

    This one understands the demonstration bodies of docs/consumers.md: {"work_ms": n} takes
    n milliseconds, {"fail": "why"} fails with that reason.
    """
    body = job.get("body")
    if isinstance(body, dict):
        time.sleep(body.get("work_ms", 0) / 1000)
        if "fail" in body:
            raise RuntimeError(body["fail"])
    print("processed", job["id"], json.dumps(body), flush=True)


class LeaseKeeper(threading.Thread):
    """Touches a job's lease every third of its TTR until stopped, so that a long piece of work
    keeps the job: without touches, the lease ends after the TTR and the job is delivered again."""

    def __init__(self, job):
        super().__init__(daemon=True)
        self.job = job
        self.done = threading.Event()

    def run(self):
        every = self.job["ttr_ms"] / 3000
        while not self.done.wait(every):
            try:
                res = call("POST", job_path(self.job, "touch"), {"lease": self.job["lease"]})
                print("touched", self.job["id"], "lease until", res["lease_deadline"], flush=True)
            except APIError as e:
                if e.code == "lease_lost":  # expired, cancelled or requeued: the ack will fail
                    print("lost", self.job["id"], e, flush=True)
                    return
                print("touch failed, trying again:", e, file=sys.stderr, flush=True)
            except OSError as e:  # the server is unreachable for a moment
                print("touch failed, trying again:", e, file=sys.stderr, flush=True)

    def stop(self):
        self.done.set()
        self.join()


def settle(job, action, body):
    """Acks or nacks a job. Retrying is safe: a repeated ack or nack answers what the first did."""
    for attempt in range(5):
        try:
            call("POST", job_path(job, action), body)
            return True
        except APIError as e:
            if e.code == "lease_lost":
                print("lost", job["id"], e, flush=True)  # someone else holds or ended the job
                return False
            if e.status < 500:
                raise
            error = e
        except OSError as e:
            error = e
        time.sleep(0.5 * 2**attempt)
    print(action, "failed:", error, "- the job comes back after its TTR", file=sys.stderr, flush=True)
    return False


def handle(job):
    keeper = LeaseKeeper(job)
    keeper.start()
    try:
        work(job)
    except Exception as e:
        keeper.stop()
        if settle(job, "nack", {"lease": job["lease"], "error": str(e)}):
            print("nacked", job["id"] + ":", e, flush=True)
    else:
        keeper.stop()
        if settle(job, "ack", {"lease": job["lease"]}):
            print("acked", job["id"], flush=True)


stopping = threading.Event()
waiting = False  # in a reserve, holding no job: a signal may end the process at once


def on_signal(signum, frame):
    stopping.set()
    if waiting:
        # A reserve cut short leases nothing (the server puts back what it could not hand over).
        sys.exit(0)


def main():
    global waiting
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not stopping.is_set():
        waiting = True
        try:
            res = call("POST", f"/v1/topics/{TOPIC}/reserve", {"max": 1, "wait_ms": WAIT_MS},
                       timeout=WAIT_MS / 1000 + 10)
        except (APIError, OSError) as e:
            waiting = False
            if DRAIN:
                sys.exit(f"reserve: {e}")
            print("reserve failed, trying again in 1 s:", e, file=sys.stderr, flush=True)
            time.sleep(1)
            continue
        waiting = False
        if not res["jobs"] and DRAIN:
            return
        for job in res["jobs"]:
            handle(job)


if __name__ == "__main__":
    main()
