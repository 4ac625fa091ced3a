#!/usr/bin/env python3
"""Runs the workspace's test binaries, several at a time.

`scripts/test.sh` builds everything, then calls this; called alone, it
builds the workspace's host and libraries first. Every test binary of
the workspace is built once (`cargo test --workspace --no-run`, so both
passes use the same build) and run on SQLite; the tests that start
platforms (the integration tests, the test kit's and the storage's) run a
second time with every database on PostgreSQL. The
doc tests run as one more job. Binaries run `--jobs` at a time (default 2),
the slowest first by the times of the previous run (kept in
target/test-times.json); each one's output is kept in target/test-logs/ and
printed when it fails.

    scripts/run-tests.py [--jobs N] [--only sqlite|postgres] [FILTER ...]

FILTERs are handed to every test binary (libtest's name filters and
options, e.g. `like_ --exact`); with a filter the doc tests are skipped.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
LOGS = TARGET / "test-logs"
TIMES = TARGET / "test-times.json"

# The packages whose tests start platforms (host processes, or the test
# kit's in-process hosts) or stores: run again on PostgreSQL.
DATABASE_PACKAGES = {
    "platform-tests",
    "platform-store",
    "example-host",
    "svc-extension",
    "hello-extension",
    "bookmarks-extension",
}


class Job:
    def __init__(self, name, argv, cwd, env):
        self.name = name
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.status = None
        self.seconds = 0.0
        self.summary = ""
        self.log = LOGS / (name.replace("/", "_").replace(" ", "_") + ".log")


def test_binaries():
    """(package, target name, kind, executable, package folder) of every
    test binary of the workspace, built now."""
    # The process tests start the workspace's host and load its libraries:
    # built first, so that a run after a change never starts an older host.
    print("==> building the workspace (cargo build --workspace)", flush=True)
    if subprocess.run(["cargo", "build", "--workspace"], cwd=ROOT).returncode != 0:
        sys.exit("building the workspace failed")
    print("==> building the test binaries (cargo test --workspace --no-run)", flush=True)
    out = subprocess.run(
        ["cargo", "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    if out.returncode != 0:
        sys.exit("building the tests failed")
    found = []
    for line in out.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            continue
        target = msg["target"]
        package = msg["package_id"]
        manifest = Path(msg["manifest_path"])
        name = package_name(package, manifest)
        found.append((name, target["name"], target["kind"][0], msg["executable"], manifest.parent))
    return found


def package_name(package_id, manifest):
    """The package's name, as its manifest's `[package]` gives it."""
    section = None
    for line in manifest.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[package]" and line.startswith("name") and "=" in line:
            return line.split("=", 1)[1].strip().strip('"')
    return package_id


def plan(binaries, only, filters):
    jobs = []
    for package, target, kind, exe, folder in binaries:
        # A package's library and its binaries each have unit tests: a
        # binary's are labelled by its name, so that no two jobs share a
        # label or a log.
        if kind == "test":
            label = f"{package}::{target}"
        elif kind == "bin":
            label = f"{package} (unit, bin {target})"
        else:
            label = f"{package} (unit)"
        backends = ["sqlite"]
        if package in DATABASE_PACKAGES:
            backends.append("postgres")
        for backend in backends:
            if only and backend != only:
                continue
            env = dict(os.environ, TEST_DB=backend)
            jobs.append(Job(f"{backend} {label}", [exe, *filters], folder, env))
    if not filters and only != "postgres":
        jobs.append(
            Job("doc tests", ["cargo", "test", "--workspace", "--doc"], ROOT, dict(os.environ))
        )
    return jobs


def run(job):
    started = time.monotonic()
    with open(job.log, "w") as log:
        proc = subprocess.run(job.argv, cwd=job.cwd, env=job.env, stdout=log, stderr=subprocess.STDOUT)
    job.seconds = time.monotonic() - started
    job.status = proc.returncode
    results = [l for l in job.log.read_text(errors="replace").splitlines() if l.startswith("test result:")]
    passed = failed = 0
    for line in results:
        words = line.replace(";", "").split()
        for count, word in zip(words, words[1:]):
            if word == "passed":
                passed += int(count)
            elif word == "failed":
                failed += int(count)
    job.summary = f"{passed} passed" + (f", {failed} failed" if failed else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("TEST_JOBS", "2")))
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("filters", nargs="*")
    args = parser.parse_args()

    LOGS.mkdir(parents=True, exist_ok=True)
    jobs = plan(test_binaries(), args.only, args.filters)
    try:
        previous = json.loads(TIMES.read_text())
    except (OSError, ValueError):
        previous = {}
    # Slowest first, so that the last to finish are short ones.
    jobs.sort(key=lambda j: -previous.get(j.name, 1000.0))

    print(f"==> running {len(jobs)} test binaries, {args.jobs} at a time (logs: {LOGS})", flush=True)
    started = time.monotonic()
    pending = list(jobs)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                job = pending.pop(0)
            run(job)
            with lock:
                verdict = "ok    " if job.status == 0 else "FAILED"
                print(f"{verdict} {job.seconds:6.1f} s  {job.name} ({job.summary})", flush=True)
                if job.status != 0:
                    sys.stdout.write(job.log.read_text(errors="replace"))
                    print(f"------ end of {job.name}", flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    if not args.filters:
        TIMES.write_text(json.dumps({j.name: round(j.seconds, 1) for j in jobs}, indent=1, sort_keys=True))
    failed = [j for j in jobs if j.status != 0]
    total = time.monotonic() - started
    print(f"==> {len(jobs) - len(failed)} of {len(jobs)} test binaries passed in {total:.0f} s")
    for job in failed:
        print(f"    failed: {job.name} (log: {job.log})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
