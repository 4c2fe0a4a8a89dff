#!/usr/bin/env python3
"""Benchmark resumectl against curl, wget and aria2c on loopback (standard library only).

    python3 scripts/bench.py --bin .build/release/resumectl            # cases 1-5, 1 GiB, 5 pairs
    python3 scripts/bench.py --quick                                     # 64 MiB, 3 pairs
    python3 scripts/bench.py --cases 1,3 --size 256M --pairs 7
    python3 scripts/bench.py --cases 6 --tus-size 256M                # tus upload to tuspyserver
    python3 scripts/bench.py --cases 7 --s3-size 256M                 # S3 multipart upload to moto
    python3 scripts/bench.py --cases 8,9                                 # streams: stdin upload, download to stdout

Everything lives in a temp folder: the served files, nginx (own config, 127.0.0.1, free port; one
location unthrottled, one throttled for the resume case, one throttled per connection for the
segmented case), the upload peer (`resumectl serve DIR --port 0`), the outputs and resumectl's
state dir. Servers and any running tool are stopped at the end, on errors and on Ctrl-C.

Each case runs its tools in rounds (A B A B ..., or A B C D A B C D ... with more tools): one
warm-up round, then --pairs timed rounds. Before every run the outputs are removed and os.sync()
is called. Wall time is time.monotonic() around spawn..wait4; CPU (user+sys) and peak RSS come from
os.wait4(). Every tool's output is checked by SHA-256 in the warm-up round (and by size in every
round); a wrong result is a failure, not a number. The ratio columns are the median of the
per-round ratios subject/tool, which cancels the slow drift that page-cache writeback causes.
After every run os.sync() is timed too: "wall+sync" is the time until the data is on disk, which
compares a tool that fsyncs as it goes (resumectl commits) with one that leaves dirty pages behind.
"mach CPU" is the whole machine's busy CPU (/proc/stat) over the run and that sync: a tool's own
rusage misses the kernel threads that write back the pages it left dirty, the whole machine does not.

Case 7 uploads to moto's S3 server (scripts/moto_server.py, SigV4 checked) with resumectl and with
`aws s3 cp` (AWS CLI v1 run as `python3 -m awscli`, configured in a temp AWS_CONFIG_FILE with
multipart_chunksize 8MB and max_concurrent_requests 4, the same part size and concurrency as
resumectl's defaults); then each tool is killed (SIGKILL) once half of the file crossed a counting
proxy in front of moto and run again (resumectl: `resume TOKEN`; the AWS CLI cannot resume, so the
same `aws s3 cp` again): "sent twice" = bytes through the proxy over both runs − the file size.

Results are printed as tables and written to .bench/results-<timestamp>.json and .bench/latest.json.
Exit status: 0 if every run succeeded and every checksum matched, 1 otherwise, 130 on Ctrl-C.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

# Tools in flight ([launcher Popen, tool pid]) that must not outlive the harness; servers are separate.
_live_entries = []
_live_lock = threading.Lock()


class Failure(Exception):
    """A run failed or produced a wrong result."""


def log(msg=""):
    print(msg, flush=True)


def parse_size(text):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)(i?[bB])?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("size: a number with an optional k, M or G suffix")
    return int(m.group(1)) * {"": 1, "k": KiB, "m": MiB, "g": GiB}[m.group(2).lower()]


def human(n):
    for unit, f in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} B"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def proc_cpu(pid):
    """utime+stime of a live process in seconds (for the servers' CPU per run)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def timed_sync():
    """os.sync() right after a run: what the run left dirty in the page cache. A tool that
    fsyncs as it goes pays for durability inside its wall time, one that does not leaves it
    here; wall+sync compares the two on equal terms (time until the data is on disk)."""
    t = time.monotonic()
    os.sync()
    return time.monotonic() - t


def machine_cpu():
    """CPU seconds the whole machine has been busy (all cores, /proc/stat), for deltas. Unlike a
    tool's own rusage this counts the kernel threads that write back what a tool left dirty."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    user, nice, system, idle, iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def make_random_file(path, size, chunk=8 * MiB):
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            block = os.urandom(min(chunk, left))
            h.update(block)
            f.write(block)
            left -= len(block)
    return h.hexdigest()


def stop_process(p, sig=signal.SIGTERM, grace=5.0):
    if p is None or p.poll() is not None:
        return
    try:
        p.send_signal(sig)
        p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------------------------
# Servers


class Nginx:
    """nginx on 127.0.0.1, single process, with a private prefix and a parseable access log."""

    def __init__(self, prefix, root, slow_rate, seg_rate):
        self.prefix, self.root = prefix, root
        self.slow_rate, self.seg_rate = slow_rate, seg_rate
        self.proc = None
        self.port = None
        self.access_log = os.path.join(prefix, "access.log")

    def config(self, port):
        p, r = self.prefix, self.root
        temps = "\n".join(f"    {k}_temp_path {p}/tmp/{k};" for k in
                          ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        return f"""daemon off;
master_process off;
worker_processes 1;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    types {{ }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    log_format bench '$msec $request_method $uri $status $body_bytes_sent "$http_range"';
    access_log {p}/access.log bench;
{temps}
    server {{
        listen 127.0.0.1:{port};
        root {r};
        # resume case: the first attempt is throttled so it can be stopped half-way
        location /slow/ {{ alias {r}/; limit_rate {self.slow_rate}; }}
        # segmented case: the limit is per connection (per request), so segments add up
        location /seg/ {{ alias {r}/; limit_rate {self.seg_rate}; }}
    }}
}}
"""

    def start(self):
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        conf = os.path.join(self.prefix, "nginx.conf")
        for _ in range(5):  # the free port can be taken between probe and bind: retry
            port = free_port()
            with open(conf, "w") as f:
                f.write(self.config(port))
            err = open(os.path.join(self.prefix, "stderr.log"), "ab")
            self.proc = subprocess.Popen(
                [NGINX, "-p", self.prefix + "/", "-c", conf, "-e", os.path.join(self.prefix, "error.log")],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
            err.close()
            if wait_port(port, self.proc):
                self.port = port
                return self
            stop_process(self.proc, signal.SIGQUIT)
        raise RuntimeError("nginx did not start; see " + os.path.join(self.prefix, "error.log"))

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def cpu(self):
        return proc_cpu(self.proc.pid)

    def log_offset(self):
        try:
            return os.path.getsize(self.access_log)
        except OSError:
            return 0

    def log_entries(self, offset):
        """[(uri, status, body_bytes_sent, range)] appended since offset."""
        out = []
        with open(self.access_log, "rb") as f:
            f.seek(offset)
            for line in f.read().decode(errors="replace").splitlines():
                parts = line.split(" ", 5)
                if len(parts) == 6:
                    out.append((parts[2], int(parts[3]), int(parts[4]), parts[5].strip('"')))
        return out

    def stop(self):
        stop_process(self.proc, signal.SIGQUIT)


class TusPeer:
    """tuspyserver under uvicorn (scripts/tus_server.py): prints `PORT n`, exits when stdin closes."""

    def __init__(self, directory, logdir, env):
        self.dir, self.logdir, self.env = directory, logdir, env
        self.proc = None
        self.endpoint = None

    def start(self):
        err = open(os.path.join(self.logdir, "tus.log"), "ab")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "scripts", "tus_server.py"), self.dir, "--exit-on-stdin-eof"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=self.env, start_new_session=True)
        err.close()
        line = [None]
        t = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(30)
        m = re.match(r"PORT (\d+)", (line[0] or b"").decode())
        if not m:
            self.stop()
            raise RuntimeError(f"tuspyserver did not start (make deps); see {self.logdir}/tus.log")
        self.endpoint = f"http://127.0.0.1:{m.group(1)}/files/"
        return self

    def clear(self):
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            if os.path.isfile(path):
                os.unlink(path)

    def stored(self):
        return [os.path.join(self.dir, n) for n in os.listdir(self.dir)
                if not n.endswith(".info") and not n.startswith(".") and os.path.isfile(os.path.join(self.dir, n))]

    def cpu(self):
        return proc_cpu(self.proc.pid)

    def stop(self):
        stop_process(self.proc, signal.SIGTERM)


# tus-py-client (PyPI tuspy) as an application would call it: one uploader, the whole file per PATCH.
TUSPY = r"""
import os, sys
from tusclient import client
path, url = sys.argv[1], sys.argv[2]
up = client.TusClient(url).uploader(path, metadata={"filename": os.path.basename(path), "filetype": "application/octet-stream"})
up.upload()
"""

# curl doing what a tus client does: POST for the upload URL, then one streamed PATCH (-T, not --data-binary,
# which would read the file into memory).
CURL_TUS = r"""
set -e
size=$(stat -c %s "$1")
loc=$(curl -sS -o /dev/null -D - -X POST -H 'Tus-Resumable: 1.0.0' -H "Upload-Length: $size" \
  -H 'Upload-Metadata: filename YmlnLmJpbg==,filetype YXBwbGljYXRpb24vb2N0ZXQtc3RyZWFt' "$2" \
  | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
curl -sS -f -o /dev/null -X PATCH -T "$1" -H 'Tus-Resumable: 1.0.0' -H 'Upload-Offset: 0' \
  -H 'Content-Type: application/offset+octet-stream' -H 'Expect:' "$loc"
"""


class MotoPeer:
    """moto's S3 server (scripts/moto_server.py), SigV4 checked: prints one JSON line with its port and
    an access key, exits when stdin closes. tool() runs scripts/s3_tool.py (boto3) against it."""

    def __init__(self, logdir, env):
        self.logdir, self.env = logdir, env
        self.proc = None
        self.endpoint = self.port = self.access_key = self.secret_key = None

    def start(self):
        err = open(os.path.join(self.logdir, "moto.log"), "ab")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "scripts", "moto_server.py"), "--exit-on-stdin-eof"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=self.env, start_new_session=True)
        err.close()
        line = [None]
        t = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(60)
        try:
            info = json.loads((line[0] or b"").decode())
        except ValueError:
            info = None
        if not info:
            self.stop()
            raise RuntimeError(f"moto did not start (make deps); see {self.logdir}/moto.log")
        self.port = info["port"]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.access_key, self.secret_key = info["accessKey"], info["secretKey"]
        return self

    def tool(self, *args, endpoint=None):
        r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "s3_tool.py"), "--endpoint",
                            endpoint or self.endpoint, "--access-key", self.access_key, "--secret-key",
                            self.secret_key] + [str(a) for a in args],
                           capture_output=True, text=True, env=self.env, timeout=600)
        if r.returncode != 0:
            raise Failure(f"s3_tool.py {args[0]}: {r.stderr.strip()[-500:]}")
        return json.loads(r.stdout)

    def cpu(self):
        return proc_cpu(self.proc.pid)

    def stop(self):
        stop_process(self.proc, signal.SIGTERM)


class CountingProxy:
    """A TCP relay on 127.0.0.1 in front of a server that counts the bytes clients send (case 7's
    "sent twice"). One thread per direction and connection."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.upstream = 0
        self.connections = 0
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.closed = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections += 1
            threading.Thread(target=self.pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, False), daemon=True).start()

    def pump(self, src, dst, count):
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        try:
            while True:
                n = src.recv_into(buf)
                if n <= 0:
                    break
                dst.sendall(view[:n])
                if count:
                    with self.lock:
                        self.upstream += n
        except OSError:
            pass
        for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass

    def sent(self):
        with self.lock:
            return self.upstream

    def stop(self):
        self.closed = True
        self.listener.close()


def multipart_etag(path, part_size):
    """S3's ETag of a multipart upload of path in part_size parts: md5(concatenated part MD5s)-N."""
    digests = []
    with open(path, "rb") as f:
        while True:
            block = f.read(part_size)
            if not block:
                break
            digests.append(hashlib.md5(block).digest())
    return f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(digests)}"'


class ServePeer:
    """`resumectl serve DIR --port 0`: NIOResumableUpload; the first stdout line is the URL."""

    def __init__(self, binary, directory, logdir, env):
        self.binary, self.dir, self.logdir, self.env = binary, directory, logdir, env
        self.proc = None
        self.base = None

    def start(self):
        err = open(os.path.join(self.logdir, "serve.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", self.dir, "--host", "127.0.0.1", "--port", "0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=self.env,
            start_new_session=True)
        err.close()
        line = [None]
        t = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(15)
        text = (line[0] or b"").decode().strip()
        m = re.match(r"listening on (http://\S+)", text)
        if not m:
            self.stop()
            raise RuntimeError(f"resumectl serve did not print its URL (got {text!r}); see {self.logdir}/serve.log")
        self.base = m.group(1).rstrip("/")
        # Keep draining stdout so the peer never blocks on a full pipe.
        threading.Thread(target=lambda: self.proc.stdout.read(), daemon=True).start()
        return self

    def url(self, name):
        return f"{self.base}/{name}"

    def cpu(self):
        return proc_cpu(self.proc.pid)

    def stop(self):
        stop_process(self.proc, signal.SIGTERM)


# --------------------------------------------------------------------------------------------
# One timed run


class Run:
    def __init__(self, tool, rnd):
        self.tool, self.round = tool, rnd
        self.ok = True
        self.error = None
        self.wall = self.cpu = float("nan")
        self.rss_kib = 0
        self.srv_cpu = float("nan")
        self.rc = None
        self.extra = {}

    def as_dict(self):
        d = {"round": self.round, "ok": self.ok, "wall_s": round(self.wall, 4), "cpu_s": round(self.cpu, 4),
             "peak_rss_kib": self.rss_kib, "server_cpu_s": round(self.srv_cpu, 3), "exit": self.rc}
        if self.error:
            d["error"] = self.error
        d.update(self.extra)
        return d


# Tools are started through this small launcher, a fresh `python3 -S` that forks and execs the tool
# and reports its pid, then its wait4() result. Linux carries a process's peak RSS across fork and
# exec, so a tool forked straight from the harness would report at least the harness's own RSS;
# the launcher keeps that floor at about 6 MiB (below curl's real peak of about 11 MiB).
LAUNCHER = r"""
import os, sys, time, signal
fd = int(sys.argv[1])
signal.signal(signal.SIGINT, signal.SIG_IGN)
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(s, signal.SIG_DFL)
    os.close(fd)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as e:
        os.write(2, ("exec %s: %s\n" % (sys.argv[2], e)).encode())
    os._exit(127)
os.write(fd, ("%d %r\n" % (pid, t0)).encode())
while True:
    try:
        _, st, ru = os.wait4(pid, 0)
        break
    except InterruptedError:
        pass
t1 = time.monotonic()
os.write(fd, ("%d %r %r %r %d\n" % (st, t1, ru.ru_utime, ru.ru_stime, ru.ru_maxrss)).encode())
"""


def spawn_and_wait(argv, *, env, logdir, timeout, stdout=None, watch=None, on_spawn=None, servers=()):
    """Runs argv via the launcher and returns a dict: wall (fork..wait4 in the launcher), cpu
    (ru_utime+ru_stime), rss (ru_maxrss KiB), rc, stderr tail, and, if watch is "stdout" or
    "stderr", that stream's lines with their time since the fork. on_spawn(pid, t0) runs once the
    tool's pid is known (e.g. to signal it later)."""
    err_path = os.path.join(logdir, "last.stderr")
    lines = []
    out_target = subprocess.DEVNULL
    err_target = open(err_path, "wb")
    if stdout:
        out_target = open(stdout, "wb")
    if watch == "stdout":
        out_target = subprocess.PIPE
    elif watch == "stderr":
        err_target.close()
        err_target = subprocess.PIPE
    srv0 = [s.cpu() for s in servers]
    r, w = os.pipe()
    try:
        p = subprocess.Popen([sys.executable, "-S", "-E", "-c", LAUNCHER, str(w)] + list(argv),
                             stdin=subprocess.DEVNULL, stdout=out_target, stderr=err_target, env=env,
                             pass_fds=(w,))
    finally:
        os.close(w)
    status = os.fdopen(r, "rb")
    entry = [p, None]
    with _live_lock:
        _live_entries.append(entry)
    reader = None
    kept = []
    if watch:
        stream = p.stdout if watch == "stdout" else p.stderr

        def read():
            for raw in stream:
                lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))
                if watch == "stderr":
                    kept.append(raw)
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
    timed_out = []

    def expire():
        timed_out.append(True)
        for pid in (entry[1], p.pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        first = status.readline().split()
        if len(first) == 2:
            entry[1] = int(first[0])
            t0 = float(first[1])
            if on_spawn:
                on_spawn(entry[1], t0)
            done = status.readline().split()
        else:
            done = []
        p.wait()
    finally:
        timer.cancel()
        status.close()
    with _live_lock:  # on an exception the entry stays, so teardown kills the tool
        _live_entries.remove(entry)
    if reader:
        reader.join(5)
    for f in (out_target, err_target):
        if hasattr(f, "close"):
            f.close()
    if watch == "stderr":
        with open(err_path, "wb") as f:
            f.write(b"".join(kept))
    with open(err_path, "rb") as f:
        tail = f.read()[-2000:].decode(errors="replace").strip()
    if len(done) != 5:
        return {"wall": float("nan"), "t0": 0, "t1": 0, "cpu": float("nan"), "rss": 0,
                "rc": f"launcher failed ({p.returncode})", "timed_out": bool(timed_out), "stderr": tail,
                "lines": [], "srv_cpu": float("nan")}
    st, t1, ut, stime, rss = int(done[0]), float(done[1]), float(done[2]), float(done[3]), int(done[4])
    return {"wall": t1 - t0, "t0": t0, "t1": t1, "cpu": ut + stime, "rss": rss,
            "rc": os.waitstatus_to_exitcode(st), "timed_out": bool(timed_out), "stderr": tail,
            "lines": [(t - t0, l) for t, l in lines],
            "srv_cpu": sum(s.cpu() - c for s, c in zip(servers, srv0)) if servers else float("nan")}


# --------------------------------------------------------------------------------------------
# Statistics and tables


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x, spec):
    return "–" if x is None or x != x else format(x, spec)


def summarize(tools, runs, subject, nbytes):
    """Per-tool medians over the timed rounds and median per-round ratios subject/tool."""
    timed = {t: [r for r in runs[t] if r.round > 0 and r.ok] for t in tools}
    by_round = {t: {r.round: r for r in timed[t]} for t in tools}
    out = {}
    for t in tools:
        rs = timed[t]
        walls = [r.wall for r in rs]
        s = {"runs": len(rs), "failed": any(not r.ok for r in runs[t]),
             "wall_median_s": med(walls), "wall_min_s": min(walls) if walls else float("nan"),
             "wall_max_s": max(walls) if walls else float("nan"),
             "cpu_median_s": med([r.cpu for r in rs]),
             "peak_rss_mib": max((r.rss_kib for r in rs), default=0) / KiB,
             "server_cpu_median_s": med([r.srv_cpu for r in rs]),
             "wall_plus_sync_median_s": med([r.wall + r.extra.get("sync_s", float("nan")) for r in rs]),
             "machine_cpu_median_s": med([r.extra.get("machine_cpu_s", float("nan")) for r in rs])}
        s["mib_per_s"] = nbytes / MiB / s["wall_median_s"] if nbytes and walls else float("nan")
        if t != subject and subject in tools:
            common = sorted(set(by_round[t]) & set(by_round[subject]))
            s["ratio_rounds"] = len(common)
            s["wall_ratio"] = med([by_round[subject][k].wall / by_round[t][k].wall for k in common])
            s["cpu_ratio"] = med([by_round[subject][k].cpu / by_round[t][k].cpu for k in common
                                  if by_round[t][k].cpu > 0])
            ws = lambda r: r.wall + r.extra.get("sync_s", float("nan"))
            s["wall_plus_sync_ratio"] = med([ws(by_round[subject][k]) / ws(by_round[t][k]) for k in common])
            mc = lambda r: r.extra.get("machine_cpu_s", float("nan"))
            s["machine_cpu_ratio"] = med([mc(by_round[subject][k]) / mc(by_round[t][k]) for k in common
                                          if mc(by_round[t][k]) > 0])
        out[t] = s
    return out


def print_table(title, tools, summary, subject, extra_cols=()):
    """extra_cols: [(header, key, format)] read from summary[tool]."""
    log(f"\n{title}")
    cols = [("tool", 16, "<"), ("wall s (min–max)", 20, ">"), ("MiB/s", 7, ">"), ("CPU s", 6, ">"),
            ("RSS MiB", 7, ">"), ("srv CPU", 7, ">"), ("wall+sync", 9, ">"), ("mach CPU", 8, ">")]
    cols += [(h, max(7, len(h)), ">") for h, _, _ in extra_cols]
    cols += [("wall ratio", 10, ">"), ("CPU ratio", 9, ">"), ("w+s ratio", 9, ">"), ("mCPU ratio", 10, ">")]
    log("  ".join(f"{h:{a}{w}}" for h, w, a in cols))
    for t in tools:
        s = summary[t]
        cells = [t + (" FAILED" if s["failed"] else ""),
                 f"{fmt(s['wall_median_s'], '.3f')} ({fmt(s['wall_min_s'], '.2f')}–{fmt(s['wall_max_s'], '.2f')})",
                 fmt(s["mib_per_s"], ".1f"), fmt(s["cpu_median_s"], ".3f"), fmt(s["peak_rss_mib"], ".1f"),
                 fmt(s["server_cpu_median_s"], ".3f"), fmt(s["wall_plus_sync_median_s"], ".3f"),
                 fmt(s["machine_cpu_median_s"], ".2f")]
        cells += [fmt(s.get(k), f) for _, k, f in extra_cols]
        cells += [fmt(s.get("wall_ratio"), ".3f") if t != subject else "(subject)",
                  fmt(s.get("cpu_ratio"), ".3f") if t != subject else "",
                  fmt(s.get("wall_plus_sync_ratio"), ".3f") if t != subject else "",
                  fmt(s.get("machine_cpu_ratio"), ".3f") if t != subject else ""]
        log("  ".join(f"{c:{a}{w}}" for c, (_, w, a) in zip(cells, cols)))


# --------------------------------------------------------------------------------------------
# The harness


class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.abspath(args.bin)
        self.failed = False
        self.results = {}
        self.tmp = tempfile.mkdtemp(prefix="resumectl-bench-", dir=args.tmpdir)
        self.www = os.path.join(self.tmp, "www")
        self.out = os.path.join(self.tmp, "out")
        self.logs = os.path.join(self.tmp, "logs")
        self.state = os.path.join(self.tmp, "state")
        self.uploads = os.path.join(self.tmp, "uploads")
        for d in (self.www, self.out, self.logs, self.state, self.uploads):
            os.makedirs(d)
        self.env = dict(os.environ, RESUMECTL_STATE_DIR=self.state, NO_PROXY="127.0.0.1,localhost",
                        no_proxy="127.0.0.1,localhost")
        for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
            self.env.pop(k, None)
        self.nginx = None
        self.peer = None
        self.tus = None
        self.moto = None
        self.size = args.size
        self.seg_size = min(self.size, 256 * MiB)
        self.timeout = 60 + self.size / (20 * MiB)
        self.files = {}
        help_text = subprocess.run([self.bin, "download", "--help"], capture_output=True, text=True,
                                   env=self.env).stdout
        self.has_connections = "--connections" in help_text
        self.has_input_file = "--input-file" in help_text or re.search(r"(^|\s)-i[,\s]", help_text) is not None
        self.has_parallel = "--parallel" in help_text
        upload_help = subprocess.run([self.bin, "upload", "--help"], capture_output=True, text=True,
                                     env=self.env).stdout
        self.has_s3 = "--endpoint-url" in upload_help

    # ---- setup / teardown

    def setup(self, cases):
        t = time.monotonic()
        self.files["big.bin"] = make_random_file(os.path.join(self.www, "big.bin"), self.size)
        if 4 in cases:
            if self.seg_size == self.size:
                self.files["seg.bin"] = self.files["big.bin"]
                os.link(os.path.join(self.www, "big.bin"), os.path.join(self.www, "seg.bin"))
            else:
                self.files["seg.bin"] = make_random_file(os.path.join(self.www, "seg.bin"), self.seg_size)
        if 5 in cases:
            os.makedirs(os.path.join(self.www, "many"))
            self.many = {}
            for i in range(self.args.files):
                name = f"f{i:04d}.bin"
                self.many[name] = make_random_file(os.path.join(self.www, "many", name), self.args.file_size)
        log(f"test files made in {time.monotonic() - t:.1f} s under {self.tmp}")
        # Throttle for the resume case: nginx paces each response at limit_rate (it waits
        # sent/rate after every sendfile chunk), so at size/5 the full transfer takes 5 s and the
        # SIGTERM after 2.5 s lands at about 50 %.
        self.slow_rate = max(1, self.size // 5)
        self.seg_rate = self.args.seg_rate
        self.nginx = Nginx(os.path.join(self.tmp, "nginx"), self.www, self.slow_rate, self.seg_rate).start()
        log(f"nginx on {self.nginx.url('')} (pid {self.nginx.proc.pid}); /slow/ limit_rate {self.slow_rate} B/s, "
            f"/seg/ limit_rate {self.seg_rate} B/s per connection")
        if 6 in cases:
            self.tus_dir = os.path.join(self.tmp, "tus")
            os.makedirs(self.tus_dir)
            self.tus_size = self.args.tus_size
            self.files["tus.bin"] = make_random_file(os.path.join(self.www, "tus.bin"), self.tus_size)
            self.tus = TusPeer(self.tus_dir, self.logs, self.env).start()
            log(f"tus peer: tuspyserver on {self.tus.endpoint} (pid {self.tus.proc.pid})")
        if 7 in cases:
            self.s3_size = self.args.s3_size
            if self.s3_size == self.size:
                self.files["s3.bin"] = self.files["big.bin"]
                os.link(os.path.join(self.www, "big.bin"), os.path.join(self.www, "s3.bin"))
            else:
                self.files["s3.bin"] = make_random_file(os.path.join(self.www, "s3.bin"), self.s3_size)
            self.moto = MotoPeer(self.logs, self.env).start()
            self.moto.tool("create-bucket", "bench")
            log(f"S3 peer: moto on {self.moto.endpoint} (pid {self.moto.proc.pid}), signatures checked")
        if {2, 8} & set(cases):
            self.peer = ServePeer(self.bin, self.uploads, self.logs, self.env).start()
            log(f"upload peer: resumectl serve on {self.peer.base} (pid {self.peer.proc.pid})")

    def teardown(self):
        with _live_lock:
            live = list(_live_entries)
        for launcher, pid in live:
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            stop_process(launcher, signal.SIGKILL, 2)
        if self.peer:
            self.peer.stop()
        if self.tus:
            self.tus.stop()
        if self.moto:
            self.moto.stop()
        if self.nginx:
            self.nginx.stop()
        if self.args.keep:
            log(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- helpers

    def clear(self, *paths):
        for p in paths:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            elif os.path.lexists(p):
                os.unlink(p)

    def clear_state(self):
        shutil.rmtree(self.state, ignore_errors=True)
        os.makedirs(self.state)

    def clear_outputs(self):
        self.clear(self.out)
        os.makedirs(self.out)
        self.clear_state()

    def check_file(self, path, size, digest, verify):
        if not os.path.isfile(path):
            raise Failure(f"no output at {path}")
        got = os.path.getsize(path)
        if got != size:
            raise Failure(f"{path}: {got} bytes, want {size}")
        if verify:
            h = sha256_file(path)
            if h != digest:
                raise Failure(f"{path}: sha256 {h}, want {digest}")

    def check_upload(self, name, verify):
        """The big file as the upload peer stored it under `name`; the peer's folder is emptied after."""
        stored = os.path.join(self.uploads, name)
        try:
            for _ in range(100):  # the peer commits just before it answers; allow a moment
                if os.path.isfile(stored) and os.path.getsize(stored) == self.size:
                    break
                time.sleep(0.02)
            self.check_file(stored, self.size, self.files["big.bin"], verify)
        finally:
            for fn in os.listdir(self.uploads):
                self.clear(os.path.join(self.uploads, fn))

    def record_failure(self, run, res, why):
        run.ok = False
        run.error = why
        self.failed = True
        log(f"  FAIL {run.tool} (round {run.round}): {why}")
        if res and res.get("stderr"):
            log("    stderr: " + res["stderr"].replace("\n", "\n            ")[-1500:])

    def rounds(self):
        return self.args.pairs + 1  # round 0 is the warm-up

    def run_rounds(self, tools, servers=(), env=None):
        """tools: [(name, argv_fn(round), check_fn(round, verify) or None)]. Returns {name: [Run]}."""
        runs = {name: [] for name, _, _ in tools}
        dead = set()
        for rnd in range(self.rounds()):
            for name, argv_fn, check in tools:
                if name in dead:
                    continue
                self.clear_outputs()
                os.sync()
                run = Run(name, rnd)
                busy0 = machine_cpu()
                res = spawn_and_wait(argv_fn(rnd), env=env or self.env, logdir=self.logs, timeout=self.timeout,
                                     servers=servers)
                run.wall, run.cpu, run.rss_kib, run.rc, run.srv_cpu = (
                    res["wall"], res["cpu"], res["rss"], res["rc"], res["srv_cpu"])
                run.extra["sync_s"] = timed_sync()
                run.extra["machine_cpu_s"] = machine_cpu() - busy0
                try:
                    if res["timed_out"]:
                        raise Failure(f"timed out after {self.timeout:.0f} s")
                    if res["rc"] != 0:
                        raise Failure(f"exit status {res['rc']}")
                    if check:
                        check(rnd, rnd == 0 or self.args.verify_all)
                except Failure as e:
                    self.record_failure(run, res, str(e))
                    dead.add(name)
                runs[name].append(run)
            done = ", ".join(f"{r[-1].tool} {r[-1].wall:.2f}s" for r in runs.values() if r and r[-1].round == rnd)
            log(f"  {'warm-up' if rnd == 0 else f'round {rnd}'}: {done}")
        return runs

    def finish_case(self, key, title, tools, runs, subject, nbytes, params, extra_cols=(), extra_summary=None):
        names = [t[0] if isinstance(t, tuple) else t for t in tools]
        summary = summarize(names, runs, subject, nbytes)
        if extra_summary:
            extra_summary(summary)
        print_table(title, names, summary, subject, extra_cols)
        self.results[key] = {"title": title, "subject": subject, "bytes": nbytes, "params": params,
                             "commands": {n: a for n, a in params.pop("commands", {}).items()},
                             "summary": summary, "runs": {n: [r.as_dict() for r in runs[n]] for n in names}}

    # ---- case 1

    def case1(self):
        url = self.nginx.url("big.bin")
        out = os.path.join(self.out, "big.bin")
        b = self.bin
        cmds = {
            "resumectl": [b, "download", "-q", "--force", url, "-o", out],
            "curl": ["curl", "-s", "-o", out, url],
            "wget": ["wget", "-q", "-O", out, url],
            "aria2c": ["aria2c", "-q", "-x1", "--allow-overwrite=true", "--auto-file-renaming=false",
                       "-d", self.out, "-o", "big.bin", url],
        }
        check = lambda rnd, verify: self.check_file(out, self.size, self.files["big.bin"], verify)
        tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
        log(f"\n== case 1: {human(self.size)} download to disk")
        runs = self.run_rounds(tools, servers=[self.nginx])
        self.finish_case("1-download", f"case 1: {human(self.size)} download to disk, "
                         f"{self.args.pairs} rounds after a warm-up",
                         list(cmds), runs, "resumectl", self.size, {"url": url, "commands": cmds})

    # ---- case 2

    def case2(self):
        src = os.path.join(self.www, "big.bin")
        b = self.bin
        state = {}

        def argv(name):
            def f(rnd):
                state[name] = f"u-{name}-{rnd}.bin"
                url = self.peer.url(state[name])
                if name == "resumectl":
                    return [b, "upload", "-q", "--interop-version", "6", src, url]
                return ["curl", "-sS", "-f", "-o", "/dev/null", "-X", "POST", "-T", src, "-H", "Expect:",
                        "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", url]
            return f

        def check(name):
            return lambda rnd, verify: self.check_upload(state[name], verify)
        names = ["resumectl", "curl"]
        tools = [(n, argv(n), check(n)) for n in names]
        log(f"\n== case 2: {human(self.size)} upload (draft interop 6, one request) to resumectl serve")
        runs = self.run_rounds(tools, servers=[self.peer])
        cmds = {n: argv(n)(0) for n in names}
        self.finish_case("2-upload", f"case 2: {human(self.size)} upload, one request, interop 6 "
                         f"(srv CPU = the serve peer's CPU per upload)",
                         names, runs, "resumectl", self.size, {"peer": self.peer.base, "commands": cmds})

    # ---- case 3

    def case3(self):
        slow = self.nginx.url("slow/big.bin")
        fast = self.nginx.url("big.bin")
        out = os.path.join(self.out, "big.bin")
        b = self.bin
        stop_at = 2.5
        tools = ["resumectl", "resumectl --json", "curl"]
        runs = {t: [] for t in tools}
        dead = set()
        log(f"\n== case 3: resume cost: {human(self.size)} from {slow} (limit_rate {self.slow_rate} B/s), "
            f"SIGTERM after {stop_at} s, resume from {fast}")
        for rnd in range(self.rounds()):
            for tool in tools:
                if tool in dead:
                    continue
                run = Run(tool, rnd)
                res = None
                try:
                    res = self.case3_once(tool, rnd, slow, fast, out, stop_at, run)
                except Failure as e:
                    self.record_failure(run, getattr(e, "res", res), str(e))
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
        self.finish_case(
            "3-resume", f"case 3: resume cost ({human(self.size)}; wall/CPU/RSS/MiB/s are the resume run only; "
            "stop s = SIGTERM→exit; 1st byte s = spawn→the 2xx status line of the -v trace (--json: the "
            "'started' event); twice = bytes nginx sent over both attempts − file size)",
            tools, runs, "resumectl", 0,
            {"slow_url": slow, "fast_url": fast, "slow_rate": self.slow_rate, "stop_after_s": stop_at,
             "commands": {
                 "resumectl": [[b, "download", "-q", "--force", slow, "-o", out],
                               [b, "resume", "TOKEN", "--url", fast, "-q", "-v"]],
                 "resumectl --json": [[b, "download", "-q", "--force", slow, "-o", out],
                                      [b, "resume", "TOKEN", "--url", fast, "-q", "--json"]],
                 "curl": [["curl", "-s", "-o", out, slow],
                          ["curl", "-s", "-v", "-C", "-", "-o", out, "-w", "%{time_starttransfer}", fast]]}},
            cols, extra)

    def case3_once(self, tool, rnd, slow, fast, out, stop_at, run):
        b = self.bin
        self.clear_outputs()
        os.sync()
        log_from = self.nginx.log_offset()
        first = ([b, "download", "-q", "--force", slow, "-o", out] if tool.startswith("resumectl")
                 else ["curl", "-s", "-o", out, slow])
        sig = {}

        def stopper(pid, t0):
            time.sleep(max(0, t0 + stop_at - time.monotonic()))
            sig["t"] = time.monotonic()
            os.kill(pid, signal.SIGTERM)
        r1 = spawn_and_wait(first, env=self.env, logdir=self.logs, timeout=self.timeout, on_spawn=stopper)
        run.extra["stop_s"] = r1["t1"] - sig.get("t", r1["t1"])
        run.extra["first_attempt_exit"] = r1["rc"]
        want_rc = (75,) if tool.startswith("resumectl") else (-signal.SIGTERM,)
        if r1["rc"] not in want_rc:
            e = Failure(f"first attempt: exit status {r1['rc']}, want {want_rc[0]} after SIGTERM")
            e.res = r1
            raise e
        if tool.startswith("resumectl"):
            part = out + ".part"
            listing = subprocess.run([b, "list", "--state-dir", self.state], capture_output=True, text=True,
                                     env=self.env)
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
        wout = os.path.join(self.logs, "w.out")
        res = spawn_and_wait(argv, env=self.env, logdir=self.logs, timeout=self.timeout, watch=watch,
                             stdout=wout if watch == "stderr" else None, servers=[self.nginx])
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
        run.extra["resume_bytes"] = self.size - (run.extra.get("resumed_from_bytes") or 0)
        self.check_file(out, self.size, self.files["big.bin"], rnd == 0 or self.args.verify_all)
        # nginx logs a request when it ends; the cut one is logged when nginx notices the close.
        end = time.monotonic() + 5
        while True:
            entries = [e for e in self.nginx.log_entries(log_from) if e[0].endswith("/big.bin")]
            sent = sum(e[2] for e in entries)
            if sent >= self.size or time.monotonic() > end:
                break
            time.sleep(0.05)
        run.extra["requests"] = [[u, s, n, r] for u, s, n, r in entries]
        run.extra["fetched_twice_bytes"] = sent - self.size
        if sent < self.size:
            raise Failure(f"nginx logged only {sent} body bytes for {self.size}-byte file")

    # ---- case 4

    def case4(self):
        if not self.has_connections:
            log("\ncase 4 skipped: resumectl has no --connections yet")
            self.results["4-segmented"] = {"skipped": "resumectl has no --connections yet"}
            return
        b = self.bin
        for label, path, size, digest in (
                ("throttled", "seg/seg.bin", self.seg_size, self.files["seg.bin"]),
                ("unthrottled", "big.bin", self.size, self.files["big.bin"])):
            url = self.nginx.url(path)
            name = os.path.basename(path)
            out = os.path.join(self.out, name)
            cmds = {
                "resumectl -c4": [b, "download", "-q", "--force", "--connections", "4", url, "-o", out],
                "resumectl -c1": [b, "download", "-q", "--force", "--connections", "1", url, "-o", out],
                "aria2c -x4 -s4": ["aria2c", "-q", "-x4", "-s4", "--allow-overwrite=true",
                                   "--auto-file-renaming=false", "-d", self.out, "-o", name, url],
            }
            check = (lambda o, s, d: lambda rnd, verify: self.check_file(o, s, d, verify))(out, size, digest)
            tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
            extra = f", limit_rate {self.seg_rate} B/s per connection" if label == "throttled" else ""
            log(f"\n== case 4 ({label}): segmented {human(size)} download{extra}")
            runs = self.run_rounds(tools, servers=[self.nginx])
            self.finish_case(f"4-segmented-{label}", f"case 4 ({label}{extra}): {human(size)}, "
                             "ratio = resumectl -c4/tool", list(cmds), runs, "resumectl -c4", size,
                             {"url": url, "commands": cmds})

    # ---- case 5

    def case5(self):
        if not (self.has_input_file and self.has_parallel):
            missing = " and ".join(x for x, ok in (("--input-file/-i", self.has_input_file),
                                                   ("--parallel", self.has_parallel)) if not ok)
            log(f"\ncase 5 skipped: resumectl has no {missing} yet")
            self.results["5-many-files"] = {"skipped": f"resumectl has no {missing} yet"}
            return
        b = self.bin
        names = sorted(self.many)
        urls = [self.nginx.url(f"many/{n}") for n in names]
        lst = os.path.join(self.tmp, "list.txt")
        with open(lst, "w") as f:
            f.write("".join(u + "\n" for u in urls))
        cfg = os.path.join(self.tmp, "curl.cfg")
        with open(cfg, "w") as f:
            f.write("".join(f'url = "{u}"\n' for u in urls))
        outdir = self.out  # emptied and re-made before every run (resumectl wants an existing folder)
        cmds = {
            "resumectl": [b, "download", "-q", "-i", lst, "--parallel", "8", "-o", outdir],
            "curl": ["curl", "-s", "-Z", "--parallel-max", "8", "--output-dir", outdir,
                     "--remote-name-all", "-K", cfg],
            "aria2c": ["aria2c", "-q", "-i", lst, "-j", "8", "-d", outdir, "--allow-overwrite=true",
                       "--auto-file-renaming=false"],
        }

        def check(rnd, verify):
            got = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
            if got != names:
                extra = sorted(set(got) - set(names))[:5]
                raise Failure(f"{outdir}: {len(got)} files, want {len(names)}" + (f"; unexpected {extra}" if extra else ""))
            for n in names:
                self.check_file(os.path.join(outdir, n), self.args.file_size, self.many[n], verify)
        tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
        total = len(names) * self.args.file_size
        log(f"\n== case 5: {len(names)} files of {human(self.args.file_size)}, 8 at a time")
        runs = self.run_rounds(tools, servers=[self.nginx])

        def extra(summary):
            for t in cmds:
                w = summary[t]["wall_median_s"]
                summary[t]["files_per_s"] = len(names) / w if w == w and w > 0 else float("nan")
        self.finish_case("5-many-files", f"case 5: {len(names)} × {human(self.args.file_size)}, 8 in parallel, "
                         "ratio = resumectl/tool", list(cmds), runs, "resumectl", total,
                         {"files": len(names), "file_size": self.args.file_size, "commands": cmds},
                         [("files/s", "files_per_s", ".0f")], extra)

    # ---- case 6

    def case6(self):
        src = os.path.join(self.www, "tus.bin")
        url = self.tus.endpoint
        size, digest = self.tus_size, self.files["tus.bin"]
        cmds = {
            "resumectl": [self.bin, "upload", "-q", "--protocol", "tus", src, url],
            "tuspy": [sys.executable, "-c", TUSPY, src, url],
            "curl POST+PATCH": ["sh", "-c", CURL_TUS, "curl-tus", src, url],
        }

        def argv(a):
            def make(rnd):
                self.tus.clear()  # each run starts with an empty server
                return a
            return make

        def check(rnd, verify):
            stored = self.tus.stored()
            if len(stored) != 1:
                raise Failure(f"tuspyserver holds {len(stored)} uploads, want 1")
            self.check_file(stored[0], size, digest, verify)
        tools = [(n, argv(a), check) for n, a in cmds.items()]
        log(f"\n== case 6: {human(size)} tus upload to tuspyserver")
        runs = self.run_rounds(tools, servers=[self.tus])
        self.finish_case("6-tus-upload", f"case 6: {human(size)} tus upload to tuspyserver (uvicorn), "
                         "ratio = resumectl/tool", list(cmds), runs, "resumectl", size,
                         {"url": url, "commands": {n: a[:2] + ["…"] if n != "resumectl" else a for n, a in cmds.items()}})

    # ---- case 8

    def case8(self):
        """The big file through a pipe into an upload (cat | tool), to resumectl serve: resumectl's
        `upload -` (spool, appends with Upload-Complete ?0 then ?1) against `curl -T -` (one chunked PUT)."""
        src = os.path.join(self.www, "big.bin")
        b = self.bin
        state = {}

        def argv(name):
            def f(rnd):
                state[name] = f"s-{name}-{rnd}.bin"
                url = self.peer.url(state[name])
                if name == "resumectl":
                    return ["sh", "-c", 'cat "$1" | "$2" upload -q --state-dir "$3" - "$4"', "stdin-upload", src, b, self.state, url]
                return ["sh", "-c", 'cat "$1" | curl -sS -f -o /dev/null -T - "$2"', "stdin-upload", src, url]
            return f

        def check(name):
            return lambda rnd, verify: self.check_upload(state[name], verify)
        names = ["resumectl", "curl"]
        tools = [(n, argv(n), check(n)) for n in names]
        log(f"\n== case 8: {human(self.size)} from stdin (cat FILE |) to resumectl serve")
        runs = self.run_rounds(tools, servers=[self.peer])
        cmds = {n: argv(n)(0) for n in names}
        self.finish_case("8-stdin-upload", f"case 8: {human(self.size)} upload from stdin, resumectl upload - "
                         f"against curl -T - (target: wall ≤ 1.1×; CPU, RSS include cat and sh)",
                         names, runs, "resumectl", self.size, {"peer": self.peer.base, "commands": cmds})

    # ---- case 9

    def case9(self):
        """The big file downloaded to stdout into sha256sum: `resumectl download -o -` against `curl -s`."""
        url = self.nginx.url("big.bin")
        digest = self.files["big.bin"]
        out = os.path.join(self.out, "sum")
        cmds = {
            "resumectl": ["sh", "-c", '"$1" download -q --state-dir "$2" "$3" -o - | sha256sum > "$4"', "stdout-download",
                          self.bin, self.state, url, out],
            "curl": ["sh", "-c", 'curl -s "$1" | sha256sum > "$2"', "stdout-download", url, out],
        }

        def check(rnd, verify):
            with open(out) as f:
                got = f.read().split()[0]
            if got != digest:
                raise Failure(f"sha256 of the piped body is {got}, want {digest}")
        tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
        log(f"\n== case 9: {human(self.size)} download to stdout into sha256sum")
        runs = self.run_rounds(tools, servers=[self.nginx])
        self.finish_case("9-stdout-download", f"case 9: {human(self.size)} download to stdout | sha256sum "
                         f"(target: wall ≤ 1.0×; CPU, RSS include sha256sum and sh)",
                         list(cmds), runs, "resumectl", self.size, {"url": url, "commands": cmds})

    # ---- case 7

    def s3_env(self):
        """The environment of both S3 clients: the server's key, us-east-1, and an AWS CLI config of
        this run only (never the user's ~/.aws)."""
        aws = os.path.join(self.tmp, "aws")
        os.makedirs(aws, exist_ok=True)
        env = dict(self.env, AWS_CONFIG_FILE=os.path.join(aws, "config"),
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(aws, "credentials"),
                   AWS_ACCESS_KEY_ID=self.moto.access_key, AWS_SECRET_ACCESS_KEY=self.moto.secret_key,
                   AWS_REGION="us-east-1", AWS_DEFAULT_REGION="us-east-1")
        for k in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                  "AWS_ENDPOINT_URL_S3"):
            env.pop(k, None)
        return env

    def case7(self):
        src = os.path.join(self.www, "s3.bin")
        size, digest = self.s3_size, self.files["s3.bin"]
        env = self.s3_env()
        for setting, value in (("default.s3.multipart_chunksize", "8MB"), ("default.s3.max_concurrent_requests", "4")):
            subprocess.run([sys.executable, "-m", "awscli", "configure", "set", setting, value], env=env, check=True)
        want_etag = multipart_etag(src, 8 * MiB)
        ep = self.moto.endpoint
        aws = [sys.executable, "-m", "awscli", "s3", "cp", "--only-show-errors"]
        b = self.bin
        cmds = {}
        if self.has_s3:
            cmds["resumectl"] = lambda key, ep=ep: [b, "upload", "-q", "--part-size", "8M", "--parallel", "4", src,
                                                    f"s3://bench/{key}", "--endpoint-url", ep]
        else:
            log("\ncase 7: resumectl has no S3 support yet (no --endpoint-url): the AWS CLI side only")
        cmds["aws s3 cp"] = lambda key, ep=ep: aws + [src, f"s3://bench/{key}", "--endpoint-url", ep]
        names = list(cmds)
        keys = {}

        def argv(name):
            def f(rnd):
                keys[name] = f"{name.split()[0]}-{rnd}.bin"
                return cmds[name](keys[name])
            return f

        def check(name):
            def f(rnd, verify):
                key = keys[name]
                try:
                    head = self.moto.tool("head", "bench", key)
                    if head["size"] != size:
                        raise Failure(f"s3://bench/{key}: {head['size']} bytes, want {size}")
                    if head["etag"] != want_etag:
                        raise Failure(f"s3://bench/{key}: ETag {head['etag']}, want {want_etag} (8 MiB parts)")
                    if verify:
                        got = self.moto.tool("sha256", "bench", key)
                        if got != digest:
                            raise Failure(f"s3://bench/{key}: sha256 {got}, want {digest}")
                finally:
                    self.s3_clean()
            return f
        tools = [(n, argv(n), check(n)) for n in names]
        log(f"\n== case 7: {human(size)} S3 multipart upload to moto (SigV4 checked), 8 MiB parts, 4 at a time")
        runs = self.run_rounds(tools, servers=[self.moto], env=env)
        subject = "resumectl" if self.has_s3 else "aws s3 cp"
        self.finish_case("7-s3-upload", f"case 7: {human(size)} S3 multipart upload to moto, 8 MiB parts, "
                         "4 in parallel, ratio = resumectl/tool (targets: CPU ≤ 0.25, wall ≤ 1.0, RSS < 32 MiB)",
                         names, runs, subject, size,
                         {"endpoint": ep, "aws_config": {"multipart_chunksize": "8MB", "max_concurrent_requests": 4},
                          "commands": {n: cmds[n]("KEY") for n in names}})
        self.case7_kill(src, size, want_etag, env, names)

    def s3_clean(self):
        """Deletes every object and aborts every multipart upload of the bench bucket."""
        for key in self.moto.tool("keys", "bench"):
            self.moto.tool("delete", "bench", key)
        for u in self.moto.tool("uploads", "bench"):
            self.moto.tool("abort", "bench", u["key"], u["uploadId"])

    def case7_kill(self, src, size, want_etag, env, names):
        """Each tool killed once half the file crossed the proxy, then run again to the end."""
        log(f"\n== case 7b: {human(size)} S3 upload killed (SIGKILL) at 50 %, then run again")
        rows = {}
        for name in names:
            proxy = CountingProxy(self.moto.port)
            try:
                rows[name] = self.case7_kill_once(name, src, size, want_etag, env, proxy)
            except Failure as e:
                self.failed = True
                rows[name] = {"ok": False, "error": str(e)}
                log(f"  FAIL {name}: {e}")
            finally:
                proxy.stop()
                self.s3_clean()
        log(f"\ncase 7b: sent twice = bytes through the proxy over both runs − {human(size)} (request heads "
            "included); target for resumectl: ≤ one part per connection (4 × 8 MiB)")
        log(f"{'tool':<12}  {'killed at MiB':>13}  {'2nd run s':>9}  {'2nd run MiB':>11}  {'sent twice MiB':>14}")
        for name, row in rows.items():
            if row.get("ok"):
                log(f"{name:<12}  {row['killed_at_bytes'] / MiB:>13.1f}  {row['second_wall_s']:>9.2f}  "
                    f"{row['second_run_bytes'] / MiB:>11.1f}  {row['sent_twice_bytes'] / MiB:>14.1f}")
            else:
                log(f"{name:<12}  FAILED: {row.get('error')}")
        self.results["7b-s3-kill"] = {"title": "case 7b: S3 upload killed at 50 %, run again", "bytes": size,
                                      "rows": rows}

    def case7_kill_once(self, name, src, size, want_etag, env, proxy):
        self.clear_state()
        key = f"kill-{name.split()[0]}.bin"
        aws = [sys.executable, "-m", "awscli", "s3", "cp", "--only-show-errors", src, f"s3://bench/{key}",
               "--endpoint-url", proxy.url]
        first = ([self.bin, "upload", "-q", "--part-size", "8M", "--parallel", "4", src, f"s3://bench/{key}",
                  "--endpoint-url", proxy.url] if name == "resumectl" else aws)
        killed = {}

        def killer(pid, t0):
            end = time.monotonic() + self.timeout
            while proxy.sent() < size // 2 and time.monotonic() < end:
                time.sleep(0.005)
            killed["bytes"] = proxy.sent()
            os.kill(pid, signal.SIGKILL)
        r1 = spawn_and_wait(first, env=env, logdir=self.logs, timeout=self.timeout, on_spawn=killer)
        if r1["rc"] != -signal.SIGKILL:
            raise Failure(f"first run: exit status {r1['rc']}, want SIGKILL at 50 %: {r1['stderr'][-300:]}")
        if name == "resumectl":
            listing = subprocess.run([self.bin, "list"], capture_output=True, text=True, env=env)
            rows = [l.split() for l in listing.stdout.splitlines() if l.strip()]
            if len(rows) != 1:
                raise Failure(f"resumectl list shows {len(rows)} tokens: {listing.stdout!r} {listing.stderr!r}")
            second = [self.bin, "resume", rows[0][0], "-q"]
        else:
            second = aws
        before = proxy.sent()
        r2 = spawn_and_wait(second, env=env, logdir=self.logs, timeout=self.timeout, servers=[self.moto])
        if r2["rc"] != 0:
            raise Failure(f"second run: exit status {r2['rc']}: {r2['stderr'][-300:]}")
        head = self.moto.tool("head", "bench", key)
        if head["size"] != size or head["etag"] != want_etag:
            raise Failure(f"s3://bench/{key}: {head}, want size {size} and ETag {want_etag}")
        total = proxy.sent()
        return {"ok": True, "killed_at_bytes": killed.get("bytes"), "first_run_bytes": before,
                "second_run_bytes": total - before, "second_wall_s": r2["wall"], "second_cpu_s": r2["cpu"],
                "second_peak_rss_kib": r2["rss"], "sent_twice_bytes": total - size,
                "connections": proxy.connections, "commands": [first, second]}

    # ---- report

    def environment(self):
        def first_line(argv):
            try:
                r = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=10)
                return (r.stdout or r.stderr).strip().splitlines()[0]
            except (OSError, IndexError, subprocess.TimeoutExpired):
                return None
        try:
            commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
        except OSError:
            commit = None
        return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                "python": platform.python_version(), "git_commit": commit, "binary": self.bin,
                "binary_mtime": datetime.datetime.fromtimestamp(os.path.getmtime(self.bin)).isoformat(timespec="seconds"),
                "versions": {"resumectl": first_line([self.bin, "--version"]),
                             "curl": first_line(["curl", "--version"]), "wget": first_line(["wget", "--version"]),
                             "aria2c": first_line(["aria2c", "--version"]),
                             "nginx": first_line([NGINX, "-v"]),
                             "aws": first_line([sys.executable, "-m", "awscli", "--version"]),
                             "moto": first_line([sys.executable, "-c",
                                                 "import importlib.metadata as m; print(m.version('moto'))"])},
                "size": self.size, "pairs": self.args.pairs, "cases": self.args.cases,
                "tmpdir": self.tmp}

    def write_json(self, env):
        outdir = self.args.out_dir
        os.makedirs(outdir, exist_ok=True)
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        doc = {"environment": env, "ok": not self.failed, "cases": self.results}

        def clean(o):  # NaN is not JSON
            if isinstance(o, float) and o != o:
                return None
            if isinstance(o, dict):
                return {k: clean(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                return [clean(v) for v in o]
            return o
        text = json.dumps(clean(doc), indent=1)
        path = os.path.join(outdir, f"results-{stamp}.json")
        for p in (path, os.path.join(outdir, "latest.json")):
            with open(p + ".tmp", "w") as f:
                f.write(text + "\n")
            os.replace(p + ".tmp", p)
        log(f"\nresults: {path} (and {os.path.join(outdir, 'latest.json')})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, ".build/release/resumectl"), help="resumectl binary")
    ap.add_argument("--cases", default="1,2,3,4,5,6,7,8,9", help="comma-separated subset of 1-9 (default: all)")
    ap.add_argument("--size", type=parse_size, default=None, help="big file size, e.g. 1G, 256M (default 1G)")
    ap.add_argument("--pairs", type=int, default=None, help="timed rounds after the warm-up (default 5)")
    ap.add_argument("--quick", action="store_true", help="size 64 MiB and 3 pairs (unless given)")
    ap.add_argument("--files", type=int, default=1000, help="file count of case 5 (default 1000)")
    ap.add_argument("--file-size", type=parse_size, default=100 * KiB, help="file size of case 5 (default 100k)")
    ap.add_argument("--tus-size", type=parse_size, default=256 * MiB,
                    help="file size of case 6 (default 256M: the Python server, not the client, sets the pace)")
    ap.add_argument("--s3-size", type=parse_size, default=GiB,
                    help="file size of case 7 (default 1G)")
    ap.add_argument("--seg-rate", type=parse_size, default=50 * MiB,
                    help="per-connection limit_rate of case 4's throttled run in bytes/s (default 50M)")
    ap.add_argument("--verify-all", action="store_true", help="SHA-256 every output, not once per tool and case")
    ap.add_argument("--tmpdir", default=None, help="where the temp folder goes (default: $TMPDIR or /tmp)")
    ap.add_argument("--out-dir", default=os.path.join(REPO, ".bench"), help="where the JSON goes (default .bench/)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (logs, configs) for debugging")
    args = ap.parse_args()
    args.size = args.size or (64 * MiB if args.quick else GiB)
    args.pairs = args.pairs if args.pairs is not None else (3 if args.quick else 5)
    try:
        cases = sorted({int(c) for c in args.cases.split(",") if c.strip()})
    except ValueError:
        ap.error("--cases takes numbers 1-9, e.g. 1,2")
    if not cases or any(c not in range(1, 10) for c in cases):
        ap.error("--cases takes numbers 1-9, e.g. 1,2")
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    args.cases = cases
    need = ["curl"] + (["wget"] if 1 in cases else []) + (["aria2c"] if {1, 4, 5} & set(cases) else [])
    missing = [t for t in need if not shutil.which(t)]
    if not os.access(args.bin, os.X_OK):
        missing.append(args.bin)
    if 6 in cases:
        try:
            import tusclient  # noqa: F401
        except ImportError:
            missing.append("tuspy (pip install tuspy)")
    if 7 in cases:
        for module, package in (("moto", "moto[server] (make deps)"), ("flask", "moto[server] (make deps)"),
                                ("boto3", "boto3 (make deps)"), ("awscli", "awscli (pip install awscli)")):
            try:
                __import__(module)
            except ImportError:
                missing.append(package)
    if not os.access(NGINX, os.X_OK):
        missing.append("nginx (apt-get install nginx-light)")
    if missing:
        print("bench.py: missing: " + ", ".join(missing), file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t_start = time.monotonic()
    bench = Bench(args)
    try:
        env = bench.environment()
        log(f"resumectl bench: {env['versions']['resumectl']} ({bench.bin}, built {env['binary_mtime']}), "
            f"git {str(env['git_commit'])[:10]}, {env['cpus']} CPUs, size {human(args.size)}, "
            f"{args.pairs} pairs, cases {','.join(map(str, cases))}")
        log("columns: medians over the timed rounds; RSS = peak; srv CPU = the server's CPU during the run; "
            "wall+sync = wall + os.sync() right after;\n         mach CPU = the whole machine's busy CPU over run + sync "
            "(counts the kernel's writeback of what a tool leaves dirty);\n         ratios = subject/tool, the median of the "
            "per-round ratios (subject: resumectl, in case 4 resumectl -c4)")
        bench.setup(cases)
        for c in cases:
            getattr(bench, f"case{c}")()
        env["duration_s"] = round(time.monotonic() - t_start, 1)
        bench.write_json(env)
    except KeyboardInterrupt:
        print("\nbench.py: interrupted; stopping servers", file=sys.stderr)
        bench.teardown()
        return 130
    except Exception:
        bench.teardown()
        raise
    bench.teardown()
    log(f"total {time.monotonic() - t_start:.0f} s; " + ("FAILED (see FAIL lines above)" if bench.failed else "all runs ok"))
    return 1 if bench.failed else 0


if __name__ == "__main__":
    sys.exit(main())
