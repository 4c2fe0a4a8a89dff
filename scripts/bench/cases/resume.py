"""Case 3, `resume`: Resume cost: a --size download from a throttled nginx location stopped by SIGTERM at about
50 %, then resumed from the unthrottled one: resumectl (-v and --json) against curl -C -."""

import json
import os
import re
import signal
import subprocess
import time

from ..runner import Run, spawn_and_wait
from ..table import med
from ..util import KiB, MiB, Failure, human, log, timed_sync

NUMBER = 3
NAME = "resume"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("curl",)  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    slow = bench.nginx.url("slow/big.bin")
    fast = bench.nginx.url("big.bin")
    out = os.path.join(bench.out, "big.bin")
    b = bench.bin
    stop_at = 2.5
    tools = ["resumectl", "resumectl --json", "curl"]
    runs = {t: [] for t in tools}
    dead = set()
    log(f"\n== case 3: resume cost: {human(bench.size)} from {slow} (limit_rate {bench.slow_rate} B/s), "
        f"SIGTERM after {stop_at} s, resume from {fast}")
    for rnd in range(bench.rounds()):
        for tool in tools:
            if tool in dead:
                continue
            run = Run(tool, rnd)
            res = None
            try:
                res = once(bench, tool, rnd, slow, fast, out, stop_at, run)
            except Failure as e:
                bench.record_failure(run, getattr(e, "res", res), str(e))
                dead.add(tool)
            runs[tool].append(run)
        log(f"  {'warm-up' if rnd == 0 else f'round {rnd}'}: " + ", ".join(
            f"{t} resume {runs[t][-1].wall:.2f}s twice {runs[t][-1].extra.get('fetched_twice_bytes', -1) / KiB:.0f}KiB"
            for t in tools if runs[t] and runs[t][-1].round == rnd))

    def extra(summary):
        for t in tools:
            rs = [r for r in runs[t] if r.round > 0 and r.ok]
            s = summary[t]
            for k in ("stop_s", "resumed_from_bytes", "first_byte_s", "first_progress_s",
                      "fetched_twice_bytes", "resume_bytes"):
                s[k + "_median"] = med([r.extra.get(k, float("nan")) for r in rs])
            s["fetched_twice_max_kib"] = max((r.extra.get("fetched_twice_bytes", 0) for r in rs), default=0) / KiB
            s["fetched_twice_median_kib"] = s["fetched_twice_bytes_median"] / KiB
            s["resumed_from_mib"] = s["resumed_from_bytes_median"] / MiB
            s["mib_per_s"] = (s["resume_bytes_median"] / MiB / s["wall_median_s"]
                              if rs else float("nan"))
    cols = [("stop s", "stop_s_median", ".3f"), ("from MiB", "resumed_from_mib", ".1f"),
            ("1st byte s", "first_byte_s_median", ".4f"),
            ("twice KiB med", "fetched_twice_median_kib", ".0f"),
            ("twice KiB max", "fetched_twice_max_kib", ".0f")]
    bench.finish_case(
        "3-resume", f"case 3: resume cost ({human(bench.size)}; wall/CPU/RSS/MiB/s are the resume run only; "
        "stop s = SIGTERM→exit; 1st byte s = spawn→the 2xx status line of the -v trace (--json: the "
        "'started' event); twice = bytes nginx sent over both attempts − file size)",
        tools, runs, "resumectl", 0,
        {"slow_url": slow, "fast_url": fast, "slow_rate": bench.slow_rate, "stop_after_s": stop_at,
         "commands": {
             "resumectl": [[b, "download", "-q", "--force", slow, "-o", out],
                           [b, "resume", "TOKEN", "--url", fast, "-q", "-v"]],
             "resumectl --json": [[b, "download", "-q", "--force", slow, "-o", out],
                                  [b, "resume", "TOKEN", "--url", fast, "-q", "--json"]],
             "curl": [["curl", "-s", "-o", out, slow],
                      ["curl", "-s", "-v", "-C", "-", "-o", out, "-w", "%{time_starttransfer}", fast]]}},
        cols, extra)


def once(bench, tool, rnd, slow, fast, out, stop_at, run):
    b = bench.bin
    bench.clear_outputs()
    os.sync()
    log_from = bench.nginx.log_offset()
    first = ([b, "download", "-q", "--force", slow, "-o", out] if tool.startswith("resumectl")
             else ["curl", "-s", "-o", out, slow])
    sig = {}

    def stopper(pid, t0):
        time.sleep(max(0, t0 + stop_at - time.monotonic()))
        sig["t"] = time.monotonic()
        os.kill(pid, signal.SIGTERM)
    r1 = spawn_and_wait(first, env=bench.env, logdir=bench.logs, timeout=bench.timeout, on_spawn=stopper)
    run.extra["stop_s"] = r1["t1"] - sig.get("t", r1["t1"])
    run.extra["first_attempt_exit"] = r1["rc"]
    want_rc = (75,) if tool.startswith("resumectl") else (-signal.SIGTERM,)
    if r1["rc"] not in want_rc:
        e = Failure(f"first attempt: exit status {r1['rc']}, want {want_rc[0]} after SIGTERM")
        e.res = r1
        raise e
    if tool.startswith("resumectl"):
        part = out + ".part"
        listing = subprocess.run([b, "list", "--state-dir", bench.state], capture_output=True, text=True,
                                 env=bench.env)
        rows = [l.split() for l in listing.stdout.splitlines() if l.strip()]
        if len(rows) != 1:
            raise Failure(f"resumectl list shows {len(rows)} tokens: {listing.stdout!r} {listing.stderr!r}")
        token = rows[0][0]
        run.extra["committed_part_bytes"] = os.path.getsize(part) if os.path.exists(part) else 0
        argv = [b, "resume", token, "--url", fast, "-q"]
        argv += ["--json"] if tool.endswith("--json") else ["-v"]
        watch = "stdout" if tool.endswith("--json") else "stderr"
    else:
        run.extra["committed_part_bytes"] = os.path.getsize(out) if os.path.exists(out) else 0
        argv = ["curl", "-s", "-v", "-C", "-", "-o", out, "-w", "%{time_starttransfer}", fast]
        watch = "stderr"
    os.sync()
    wout = os.path.join(bench.logs, "w.out")
    res = spawn_and_wait(argv, env=bench.env, logdir=bench.logs, timeout=bench.timeout, watch=watch,
                         stdout=wout if watch == "stderr" else None, servers=[bench.nginx])
    run.wall, run.cpu, run.rss_kib, run.rc, run.srv_cpu = (
        res["wall"], res["cpu"], res["rss"], res["rc"], res["srv_cpu"])
    run.extra["sync_s"] = timed_sync()
    if res["timed_out"] or res["rc"] != 0:
        e = Failure(f"resume: exit status {res['rc']}" + (" (timed out)" if res["timed_out"] else ""))
        e.res = res
        raise e
    if tool == "resumectl --json":
        for t, line in res["lines"]:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("event") == "started" and "first_byte_s" not in run.extra:
                run.extra["first_byte_s"] = t
                run.extra["resumed_from_bytes"] = ev.get("offset")
            elif ev.get("event") == "progress" and "first_progress_s" not in run.extra:
                run.extra["first_progress_s"] = t
    else:  # both print libcurl's -v trace: the first 2xx status line is the response's arrival
        for t, line in res["lines"]:
            if re.match(r"< HTTP/\S+ 2\d\d", line):
                run.extra["first_byte_s"] = t
                break
        run.extra["resumed_from_bytes"] = run.extra["committed_part_bytes"]
        if tool == "curl":
            with open(wout) as f:
                try:
                    run.extra["curl_time_starttransfer_s"] = float(f.read().strip())
                except ValueError:
                    pass
    run.extra["resume_bytes"] = bench.size - (run.extra.get("resumed_from_bytes") or 0)
    bench.check_file(out, bench.size, bench.files["big.bin"], rnd == 0 or bench.args.verify_all)
    # nginx logs a request when it ends; the cut one is logged when nginx notices the close.
    end = time.monotonic() + 5
    while True:
        entries = [e for e in bench.nginx.log_entries(log_from) if e[0].endswith("/big.bin")]
        sent = sum(e[2] for e in entries)
        if sent >= bench.size or time.monotonic() > end:
            break
        time.sleep(0.05)
    run.extra["requests"] = [[u, s, n, r] for u, s, n, r in entries]
    run.extra["fetched_twice_bytes"] = sent - bench.size
    if sent < bench.size:
        raise Failure(f"nginx logged only {sent} body bytes for {bench.size}-byte file")
