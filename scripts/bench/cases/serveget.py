"""Case 16, `serve-get`: requests a second from `resumectl serve` against nginx (issue 47), under
`wrk -t1 -c256 -d10s` (one wrk thread, 256 keep-alive connections, 10 s): (16a) a 1 MiB file, (16b) a
64 KiB file, (16c) a ranged GET of 1 MiB from a 1 GiB file (`Range: bytes=N-N+1MiB-1`, N moving over
the file, wrk's Lua). Both servers serve the same folder: `resumectl serve DIR` as it starts with no
options (uploads on, metrics on, one log line a request to its stderr, a file here), and nginx with one
worker, `sendfile on`, `access_log off`. Rounds alternate serve and nginx within each sub-case (a
warm-up, then --pairs); the ratio is the median of the per-round ratios of requests a second, serve /
nginx. Target: ≥ 0.8 in each. Every run must answer every request with a 2xx of the full length (wrk's
status errors, bytes per request); the warm-up checks each answer's bytes once (urllib, SHA-256)."""

import hashlib
import json
import os
import signal
import subprocess
import urllib.request

from ..peers import ServePeer
from ..runner import spawn_and_wait
from ..table import fmt, med
from ..util import NGINX, GiB, KiB, MiB, Failure, free_port, log, make_random_file, proc_cpu, stop_process, wait_port

NUMBER = 16
NAME = "serve-get"
FILES = set()  # the case makes its own folder (one.bin, small.bin, and a 1 GiB file)
PEERS = set()  # its own serve and nginx, configured for this case
COMMANDS = ("wrk",)
PY_MODULES = ()

SECONDS, CONNECTIONS, TARGET = 10, 256, 0.8

# done() writes wrk's own totals as JSON to $WRK_RESULT; request() (16c only) asks for a 1 MiB range,
# its start moving over the file's 1,024 MiB.
LUA = """
local n = 0
{request}
done = function(summary, latency, requests)
  local e = summary.errors
  local f = io.open(os.getenv("WRK_RESULT"), "w")
  f:write(string.format('{{"requests": %d, "duration_us": %d, "bytes": %d, "connect": %d, "read": %d, '
    .. '"write": %d, "status": %d, "timeout": %d, "p50_us": %d, "p99_us": %d}}',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
  f:close()
end
"""
RANGED = """
request = function()
  n = n + 1
  local first = (n * 7919 % 1023) * 1048576
  return wrk.format("GET", nil, {["Range"] = "bytes=" .. first .. "-" .. (first + 1048575)})
end
"""

# (key, title, file, body bytes a request, ranged)
SUBCASES = (("16a-serve-get-1m", "1 MiB file", "one.bin", MiB, False),
            ("16b-serve-get-64k", "64 KiB file", "small.bin", 64 * KiB, False),
            ("16c-serve-get-range", "1 MiB range of a 1 GiB file", "huge.bin", MiB, True))


class PlainNginx:
    """nginx as the issue names it: one worker, sendfile on, no access log, nothing else."""

    def __init__(self, prefix, root):
        self.prefix, self.root, self.proc, self.port = prefix, root, None, None

    def start(self):
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        conf = os.path.join(self.prefix, "nginx.conf")
        temps = "\n".join(f"    {k}_temp_path {self.prefix}/tmp/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        for _ in range(5):
            self.port = free_port()
            with open(conf, "w") as f:
                f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    types {{ }}
    default_type application/octet-stream;
    sendfile on;
    access_log off;
    keepalive_requests 100000;
{temps}
    server {{ listen 127.0.0.1:{self.port}; root {self.root}; }}
}}
""")
            self.proc = subprocess.Popen([NGINX, "-p", self.prefix + "/", "-c", conf, "-e", f"{self.prefix}/error.log"],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            if wait_port(self.port, self.proc):
                return self
            stop_process(self.proc, signal.SIGQUIT)
        raise RuntimeError(f"nginx did not start; see {self.prefix}/error.log")

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def cpu(self):
        return proc_cpu(self.proc.pid)

    def stop(self):
        stop_process(self.proc, signal.SIGQUIT)


def run(bench):
    root = os.path.join(bench.tmp, "get")
    os.makedirs(root)
    digests = {"one.bin": make_random_file(os.path.join(root, "one.bin"), MiB),
               "small.bin": make_random_file(os.path.join(root, "small.bin"), 64 * KiB),
               "huge.bin": make_random_file(os.path.join(root, "huge.bin"), GiB)}
    scripts = {}
    for ranged in (False, True):
        scripts[ranged] = os.path.join(bench.tmp, f"wrk-{'range' if ranged else 'plain'}.lua")
        with open(scripts[ranged], "w") as f:
            f.write(LUA.format(request=RANGED if ranged else ""))
    servers = {"serve": ServePeer(bench.bin, root, bench.logs, bench.env, name="serve-get").start(),
               "nginx": PlainNginx(os.path.join(bench.tmp, "nginx-get"), root).start()}
    log(f"\n== case 16: wrk -t1 -c{CONNECTIONS} -d{SECONDS}s against resumectl serve {servers['serve'].base} "
        f"(default log to {bench.logs}/serve-get.log) and nginx 127.0.0.1:{servers['nginx'].port} "
        "(one worker, sendfile on, access_log off), the same folder")
    try:
        check_answers(servers, root, digests)
        for key, title, name, body, ranged in SUBCASES:
            subcase(bench, servers, key, title, name, body, scripts[ranged])
    finally:
        for s in servers.values():
            s.stop()
        bench.clear(root)


def check_answers(servers, root, digests):
    """Each file whole and one range, from both servers, byte for byte."""
    for name, digest in digests.items():
        for server, s in servers.items():
            first = 3 * MiB if name == "huge.bin" else 0
            wanted = [("", None, digest)] if name != "huge.bin" else []
            with open(os.path.join(root, name), "rb") as f:
                f.seek(first)
                wanted.append((f"bytes={first}-{first + 4095}", 206, hashlib.sha256(f.read(4096)).hexdigest()))
            for rng, status, want in wanted:
                req = urllib.request.Request(s.url(name), headers={"Range": rng} if rng else {})
                with urllib.request.urlopen(req, timeout=60) as r:
                    if status and r.status != status:
                        raise Failure(f"{server} {name} {rng}: status {r.status}, want {status}")
                    got = hashlib.sha256(r.read()).hexdigest()
                if got != want:
                    raise Failure(f"{server} {name} {rng or 'whole'}: wrong bytes")


def subcase(bench, servers, key, title, name, body, script):
    runs = {n: [] for n in servers}
    for rnd in range(bench.rounds()):
        for server, s in servers.items():
            result = os.path.join(bench.tmp, "wrk-result.json")
            if os.path.exists(result):
                os.unlink(result)
            argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{SECONDS}s", "-s", script, s.url(name)]
            res = spawn_and_wait(argv, env=dict(bench.env, WRK_RESULT=result), logdir=bench.logs,
                                 timeout=SECONDS + 60, servers=[s])
            run = {"round": rnd, "ok": True, "wrk_cpu_s": res["cpu"], "server_cpu_s": res["srv_cpu"]}
            try:
                if res["rc"] != 0 or res["timed_out"]:
                    raise Failure(f"wrk exit {res['rc']}{' (timed out)' if res['timed_out'] else ''}: {res['stderr'][-300:]}")
                with open(result) as f:
                    w = json.load(f)
                run.update(w)
                run["rps"] = w["requests"] / (w["duration_us"] / 1e6)
                if w["status"]:
                    raise Failure(f"{w['status']} answers were not 2xx/3xx")
                if w["requests"] == 0 or w["bytes"] < w["requests"] * body:
                    raise Failure(f"{w['bytes']} bytes for {w['requests']} requests of {body} bytes each")
            except (Failure, OSError, ValueError, KeyError) as e:
                run["ok"], run["error"] = False, str(e)
                bench.failed = True
                log(f"  FAIL {server} (round {rnd}): {e}")
            runs[server].append(run)
        done = ", ".join(f"{n} {fmt(r[-1].get('rps'), ',.0f')} req/s" for n, r in runs.items())
        log(f"  {'warm-up' if rnd == 0 else f'round {rnd}'}: {done}")
    timed = {n: {r["round"]: r for r in rs if r["round"] > 0 and r["ok"]} for n, rs in runs.items()}
    common = sorted(set(timed["serve"]) & set(timed["nginx"]))
    summary = {n: {"rps_median": med([r["rps"] for r in t.values()]),
                   "rps_min": min((r["rps"] for r in t.values()), default=float("nan")),
                   "rps_max": max((r["rps"] for r in t.values()), default=float("nan")),
                   "p99_ms_median": med([r["p99_us"] / 1000 for r in t.values()]),
                   "server_cpu_median_s": med([r["server_cpu_s"] for r in t.values()]),
                   "wrk_cpu_median_s": med([r["wrk_cpu_s"] for r in t.values()]),
                   "socket_errors": sum(r["connect"] + r["read"] + r["write"] + r["timeout"] for r in t.values())}
               for n, t in timed.items()}
    ratio = med([timed["serve"][k]["rps"] / timed["nginx"][k]["rps"] for k in common])
    summary["ratio"], summary["ratio_rounds"] = ratio, len(common)
    title = f"case {key[:3]}: {title}, wrk -t1 -c{CONNECTIONS} -d{SECONDS}s, resumectl serve vs nginx (target: ≥ {TARGET}× nginx's req/s)"
    log(f"\n{title}")
    log(f"{'server':<8}  {'req/s (min–max)':>26}  {'p99 ms':>7}  {'srv CPU s':>9}  {'wrk CPU s':>9}  {'sock err':>8}  ratio")
    for n in servers:
        s = summary[n]
        log(f"{n:<8}  {fmt(s['rps_median'], ',.0f'):>8} ({fmt(s['rps_min'], ',.0f')}–{fmt(s['rps_max'], ',.0f')})".ljust(36)
            + f"  {fmt(s['p99_ms_median'], '.1f'):>7}  {fmt(s['server_cpu_median_s'], '.2f'):>9}"
            + f"  {fmt(s['wrk_cpu_median_s'], '.2f'):>9}  {s['socket_errors']:>8}  "
            + (f"{fmt(ratio, '.3f')} ({'met' if ratio >= TARGET else 'NOT met'})" if n == "serve" else "(peer)"))
    bench.results[key] = {"title": title, "rps": summary, "target": TARGET,
                          "params": {"file": name, "body_bytes": body, "wrk": ["-t1", f"-c{CONNECTIONS}", f"-d{SECONDS}s"]},
                          "runs": runs}
