#!/usr/bin/env python3
"""`make soak-serve`: `resumectl serve` under a mixed load while it is killed with SIGKILL and restarted.

For DURATION seconds UPLOADS resumable uploads run at all times, each 1-64 MiB from a pool of random
files: the IETF draft through the built `resumectl upload --protocol ietf`, tus 1.0 through tuspy, plain
PUTs through http.client, a third each. Every upload goes through a proxy of its own that counts the bytes
the client sent; a fifth of them (CUT_FRACTION) are cut there once, at a random byte. Beside them
GET_CONNECTIONS keep-alive connections ask for ranged GETs of seeded files and check every byte (a process
of their own, asyncio), and a HEAD observer asks the upload URLs for their offsets all the time. Every
KILL_INTERVAL seconds serve is sent SIGKILL (after a check that it is alive) and started again on the same
port and folder (with --store s3://, one of the instances in turn).

What is measured, and how:
- acknowledged then lost: an offset the server reported (a HEAD answer, a tus PATCH answer, the offset
  resumectl's token recorded from the server, a 2xx that finished an upload) is an acknowledgement. Every
  later HEAD is compared with the largest offset acknowledged *before that HEAD was sent*; right before each
  kill every upload is asked (a fresh acknowledgement) and right after the restart again. A finished file
  that is gone after the next restart counts whole.
- SHA-256: every finished upload's file (the folder's file, or the S3 object read with boto3 straight from
  moto) against its source; then its size again after the next restart, then it is deleted.
- re-sent bytes: what the upload's proxy carried upstream minus the file's size (request heads included,
  a few hundred bytes each), summed over the uploads that were not cut, divided by the kills.
- HEAD and GET latency: the observer's HEADs and the ranged GETs (send to last byte, answered ones only).
- serve's peak RSS: VmHWM of every serve process, sampled twice a second and just before each kill.
- descriptors: /proc/PID/fd of serve once it listens and before any load; again once the load has
  stopped and the uploads drained (it may take some seconds to come back).

usage: soak_serve.py --bin .build/release/resumectl [--store folder|s3] [--duration S] [--uploads N]
                     [--get-connections N] [--kill-interval S] [--instances N] [--json PATH] …
Every option has an environment variable (SOAK_DURATION, SOAK_UPLOADS, SOAK_GETS, SOAK_KILL_INTERVAL,
SOAK_STORE, SOAK_INSTANCES, SOAK_MAX_SIZE …; flags win). Exit status 0 when every must-hold row holds.
"""
import argparse
import asyncio
import hashlib
import http.client
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

MiB = 1 << 20
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = "/usr/sbin/nginx"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_size(text):
    text = str(text).strip()
    units = {"k": 1 << 10, "K": 1 << 10, "M": MiB, "G": 1 << 30}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def percentile(values, p):
    if not values:
        return None
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, math.ceil(p / 100.0 * len(xs)) - 1))]  # nearest rank


# ---------------------------------------------------------------------------------------------------------
# The proxy each upload goes through: counts upstream bytes, cuts once at a byte if asked.

class UploadProxy:
    """A TCP proxy on 127.0.0.1 for one upload. Bytes move with splice(2) (no copies through Python);
    `upstream` counts what the client sent, over every connection. With `cut_at`, the connection that
    carries the cut_at-th byte is closed (FIN both ways) right after it: once per upload."""

    def __init__(self, upstream_port, cut_at=None, gate=None):
        self.upstream_port = upstream_port
        self.gate = gate  # while it is clear, accepted connections wait before they reach serve
        self.cut_at = cut_at
        self.cut_done = False
        self.upstream = 0
        self.downstream = 0
        self.connections = 0
        self.lock = threading.Lock()
        self.closed = False
        self.live = set()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                break
            if self.gate is not None:
                self.gate.wait()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()  # serve is down: the client sees its connection closed, as on a refusal
                continue
            with self.lock:
                self.connections += 1
                conn = _ProxyConnection(self, client, upstream)
                self.live.add(conn)
            conn.start()

    def close(self):
        self.closed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            live = list(self.live)
        for conn in live:
            conn.cut()


class _ProxyConnection:
    def __init__(self, proxy, client, upstream):
        self.proxy, self.client, self.upstream = proxy, client, upstream
        self.done = 0
        self.lock = threading.Lock()

    def start(self):
        threading.Thread(target=self._pump, args=(self.client, self.upstream, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.upstream, self.client, False), daemon=True).start()

    def cut(self):
        for s in (self.client, self.upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _pump(self, src, dst, upstream):
        proxy = self.proxy
        r, w = os.pipe()
        try:
            while True:
                limit = 1 << 20
                if upstream and proxy.cut_at is not None and not proxy.cut_done:
                    with proxy.lock:
                        limit = max(1, min(limit, proxy.cut_at - proxy.upstream))
                try:
                    n = os.splice(src.fileno(), w, limit)
                except OSError:
                    n = 0
                if n == 0:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    if not upstream:
                        self.cut()  # serve went away (or answered and closed): end the client's side too
                    break
                moved = 0
                try:
                    while moved < n:
                        moved += os.splice(r, dst.fileno(), n - moved)
                except OSError:
                    self.cut()
                    break
                cut_now = False
                with proxy.lock:
                    if upstream:
                        proxy.upstream += n
                        if proxy.cut_at is not None and not proxy.cut_done and proxy.upstream >= proxy.cut_at:
                            proxy.cut_done = cut_now = True
                    else:
                        proxy.downstream += n
                if cut_now:
                    self.cut()
                    break
        finally:
            os.close(r)
            os.close(w)
            with self.lock:
                self.done += 1
                last = self.done == 2
            if last:
                self.client.close()
                self.upstream.close()
                with proxy.lock:
                    proxy.live.discard(self)


# ---------------------------------------------------------------------------------------------------------
# Peers: serve (folder or S3), moto, nginx.

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeInstance:
    """One `resumectl-serve` process; `restart()` starts it again on the same port with the same arguments."""

    def __init__(self, binary, args, env, logdir, name):
        self.binary, self.args, self.env, self.logdir, self.name = binary, args, env, logdir, name
        self.port = 0
        self.proc = None
        self.generation = 0
        self.peak_rss = 0  # KiB, VmHWM over every process
        self.idle_fds = None
        self.start()

    def start(self):
        self.generation += 1
        err = open(os.path.join(self.logdir, f"{self.name}.{self.generation}.log"), "wb")
        deadline = time.monotonic() + 60
        while True:
            self.proc = subprocess.Popen([self.binary] + self.args + ["--port", str(self.port)], env=self.env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
            line = self.proc.stdout.readline().decode(errors="replace")
            if line.startswith("listening on "):
                break
            self.proc.wait()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start: {line!r}; see {err.name}")
            time.sleep(0.2)  # the port may still be held a moment after a kill: try again
        err.close()
        self.port = int(line.strip().rsplit(":", 1)[1])
        # stdout says nothing more; drain it anyway so a line never blocks serve.
        threading.Thread(target=lambda p=self.proc: p.stdout.read(), daemon=True).start()

    def alive(self):
        if self.proc.poll() is not None:
            return False
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except OSError:
            return False

    def sample(self):
        """(VmRSS, VmHWM) in KiB and the open descriptors, or None once it is gone."""
        try:
            rss = hwm = 0
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
                    elif line.startswith("VmHWM:"):
                        hwm = int(line.split()[1])
            fds = len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return None
        self.peak_rss = max(self.peak_rss, hwm)
        return rss, hwm, fds

    def kill(self):
        """SIGKILL, after checking it is alive; returns whether it was."""
        was_alive = self.alive()
        self.sample()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        return was_alive

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def tcp_sockets():
    """inode -> (local port, remote port, state) of every TCP socket of the machine."""
    table = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    table[parts[9]] = (int(parts[1].rsplit(":", 1)[1], 16), int(parts[2].rsplit(":", 1)[1], 16),
                                       int(parts[3], 16))
        except OSError:
            pass
    return table


def unix_sockets():
    try:
        with open("/proc/net/unix") as f:
            next(f)
            return {line.split()[6] for line in f if len(line.split()) > 6}
    except OSError:
        return set()


def fd_breakdown(pid, own_port, s3_port):
    """What a process's descriptors are: client connections, connections to S3, listeners, other."""
    sockets = tcp_sockets()
    unix = unix_sockets()
    kinds = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return kinds
    for fd in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kind = "other"
        if target.startswith("socket:["):
            info = sockets.get(target[8:-1])
            if info is None:
                kind = "unix socket" if target[8:-1] in unix else "socket (closed TCP, or UDP)"
            elif info[2] == 0x0A:
                kind = "listening"
            elif info[0] == own_port:
                kind = "client connection"
            elif s3_port and info[1] == s3_port:
                kind = "to S3"
            else:
                kind = "TCP (other)"
        elif target.startswith("pipe:") or target.startswith("anon_inode:"):
            kind = target.split(":")[0].split("[")[0]
        elif target.startswith("/"):
            kind = "file"
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


class Moto:
    def __init__(self, logdir):
        err = open(os.path.join(logdir, "moto.log"), "wb")
        self.proc = subprocess.Popen([sys.executable, os.path.join(REPO, "scripts", "moto_server.py")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("{"):
            raise RuntimeError(f"moto did not start (make deps-test installs moto[server]): {line!r}")
        info = json.loads(line)
        self.port, self.access_key, self.secret_key = info["port"], info["accessKey"], info["secretKey"]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        import boto3
        from botocore.config import Config
        self.s3 = boto3.client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                          request_checksum_calculation="when_required",
                          response_checksum_validation="when_required",
                          max_pool_connections=32))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Nginx:
    """nginx round-robin over the serve instances, as S3ServeCluster configures it."""

    def __init__(self, prefix, ports):
        os.makedirs(prefix, exist_ok=True)
        servers = " ".join(f"server 127.0.0.1:{p} max_fails=0;" for p in ports)
        for _ in range(5):
            port = free_port()
            conf = os.path.join(prefix, "nginx.conf")
            with open(conf, "w") as f:
                f.write(f"""daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream serves {{ {servers} keepalive 32; }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 0;
        location / {{
            proxy_pass http://serves;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_request_buffering off;
            proxy_buffering off;
            proxy_read_timeout 60s;
        }}
    }}
}}
""")
            self.proc = subprocess.Popen([NGINX, "-p", prefix + "/", "-c", conf, "-e", prefix + "/error.log"],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            for _ in range(200):
                if self.proc.poll() is not None:
                    break
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    self.port = port
                    return
                except OSError:
                    time.sleep(0.05)
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError(f"nginx did not start; see {prefix}/error.log")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


# ---------------------------------------------------------------------------------------------------------
# What the run keeps about every upload.

class Upload:
    def __init__(self, seq, protocol, source, name, cut_at):
        self.seq, self.protocol, self.source, self.name, self.cut_at = seq, protocol, source, name, cut_at
        self.size = source["size"]
        self.url = None            # the upload URL (path), once known
        self.interop = 8           # draft interop version, from resumectl's token
        self.state_dir = None
        self.acks = []             # (monotonic time received, offset)
        self.lost = 0              # the largest shortfall seen against an earlier acknowledgement
        self.pending_gone = 0      # acknowledged bytes of an upload whose URL answered 404: lost unless it finishes
        self.finished = False
        self.failed = None
        self.proxy = None
        self.sent = 0
        self.attempts = 0
        self.lock = threading.Lock()

    def ack(self, offset, at=None):
        with self.lock:
            self.acks.append((at if at is not None else time.monotonic(), offset))

    def acked_before(self, t):
        with self.lock:
            return max((o for (at, o) in self.acks if at < t), default=0)

    def observe(self, sent_at, offset):
        """A HEAD sent at `sent_at` answered `offset`: any acknowledgement before it must still hold."""
        before = self.acked_before(sent_at)
        with self.lock:
            if offset < before:
                self.lost = max(self.lost, before - offset)
            self.acks.append((time.monotonic(), offset))


class Run:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = tempfile.mkdtemp(prefix="resumectl-soak-", dir=args.workdir)
        self.logdir = os.path.join(self.work, "logs")
        os.makedirs(self.logdir)
        self.stop_uploads = threading.Event()
        self.gate = threading.Event()  # the upload proxies pass new connections on while it is set
        self.gate.set()
        self.finished_urls = []    # finished draft and tus uploads, whose URLs the observer asks
        self.forgotten = []        # finished uploads whose URL stopped answering as finished
        self.stop_all = threading.Event()
        self.lock = threading.Lock()
        self.uploads = []
        self.active = set()
        self.seq = 0
        self.kills = []            # dicts per kill
        self.head_latency = []
        self.head_errors = 0
        self.recheck = []          # finished uploads whose file is checked again after the next restart
        self.differing = []
        self.missing = []
        self.late = []             # (upload, seconds): the client was done before the file was in place
        self.samples = []
        self.moto = self.nginx = None
        self.instances = []
        self.children = set()      # resumectl uploads and the GET process, killed if the run is cut short
        self.env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
        self.env["NO_PROXY"] = self.env["no_proxy"] = "127.0.0.1,localhost"
        for k in PROXY_VARS:
            os.environ.pop(k, None)
        os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

    # -- set-up --------------------------------------------------------------------------------------

    def make_pool(self):
        """Source files: sizes spread over [min, max] (the ends included), random bytes, their SHA-256."""
        a = self.args
        pool_dir = os.path.join(self.work, "pool")
        os.makedirs(pool_dir)
        n = a.pool
        sizes = [a.min_size, a.max_size] + [self.rng.randint(a.min_size, a.max_size) for _ in range(n - 2)]
        self.pool = []
        for i, size in enumerate(sizes):
            path = os.path.join(pool_dir, f"src{i:02d}.bin")
            h = hashlib.sha256()
            with open(path, "wb") as f:
                left = size
                while left:
                    chunk = os.urandom(min(left, 4 * MiB))
                    h.update(chunk)
                    f.write(chunk)
                    left -= len(chunk)
            self.pool.append({"path": path, "size": size, "sha256": h.hexdigest()})
        log(f"{n} source files, {sum(sizes) / MiB:.0f} MiB")

    def make_get_files(self):
        """Files the ranged GETs read: written into the folder, or put into the bucket."""
        self.get_dir = os.path.join(self.work, "getsrc")
        os.makedirs(self.get_dir)
        self.get_files = []
        for i in range(self.args.get_files):
            path = os.path.join(self.get_dir, f"g{i}.bin")
            with open(path, "wb") as f:
                f.write(os.urandom(self.args.get_file_size))
            self.get_files.append(path)

    def start_peers(self):
        a = self.args
        serve_bin = os.path.join(os.path.dirname(os.path.abspath(a.bin)), "resumectl-serve")
        if not os.access(serve_bin, os.X_OK):
            raise RuntimeError(f"no resumectl-serve beside {a.bin}")
        self.root = os.path.join(self.work, "root")
        os.makedirs(os.path.join(self.root, "up"))
        os.makedirs(os.path.join(self.root, "get"))
        if a.store == "folder":
            for p in self.get_files:
                shutil.copy(p, os.path.join(self.root, "get", os.path.basename(p)))
            inst = ServeInstance(serve_bin, [self.root], self.env, self.logdir, "serve")
            self.instances = [inst]
            self.front_port = inst.port
        else:
            self.moto = Moto(self.logdir)
            self.bucket = "soak-" + "%08x" % self.rng.getrandbits(32)
            self.moto.s3.create_bucket(Bucket=self.bucket)
            for p in self.get_files:
                with open(p, "rb") as f:
                    self.moto.s3.put_object(Bucket=self.bucket, Key="inbox/get/" + os.path.basename(p), Body=f)
            home = os.path.join(self.work, "home")
            os.makedirs(home)
            env = {k: v for k, v in self.env.items() if not k.startswith("AWS_")}
            env.update({"HOME": home, "AWS_CONFIG_FILE": home + "/.aws/config",
                        "AWS_SHARED_CREDENTIALS_FILE": home + "/.aws/credentials", "AWS_REGION": "us-east-1",
                        "AWS_ACCESS_KEY_ID": self.moto.access_key,
                        "AWS_SECRET_ACCESS_KEY": self.moto.secret_key})
            args = ["--store", f"s3://{self.bucket}/inbox/", "--endpoint-url", self.moto.endpoint,
                    "--lock-seconds", str(a.lock_seconds)]
            self.instances = [ServeInstance(serve_bin, args, env, self.logdir, f"serve{i}")
                              for i in range(a.instances)]
            self.nginx = Nginx(os.path.join(self.work, "nginx"), [i.port for i in self.instances])
            self.front_port = self.nginx.port
        time.sleep(1.0)  # let start-up settle (the S3 store's probe, the sweep) before counting descriptors
        for inst in self.instances:
            inst.idle_fds = inst.sample()[2]
            inst.idle_kinds = fd_breakdown(inst.proc.pid, inst.port, self.moto.port if self.moto else None)
        log(f"serve on {[i.port for i in self.instances]} ({a.store}), front port {self.front_port}, "
            f"idle descriptors {[i.idle_fds for i in self.instances]}")

    # -- uploads ---------------------------------------------------------------------------------------

    def new_upload(self, slot):
        a = self.args
        with self.lock:
            self.seq += 1
            seq = self.seq
        protocol = ("ietf", "tus", "plain")[seq % 3]
        source = self.rng.choice(self.pool)
        cut_at = self.rng.randint(1, source["size"]) if self.rng.random() < a.cut_fraction else None
        u = Upload(seq, protocol, source, f"u{seq:05d}-{protocol}.bin", cut_at)
        with self.lock:
            self.uploads.append(u)
            self.active.add(u)
        return u

    def upload_slot(self, slot):
        while not self.stop_uploads.is_set():
            u = self.new_upload(slot)
            u.proxy = UploadProxy(self.front_port, u.cut_at, self.gate)
            started = time.monotonic()
            try:
                getattr(self, "upload_" + u.protocol)(u)
            except Exception as e:  # noqa: BLE001 — any failure is reported, never swallowed
                u.failed = f"{type(e).__name__}: {e}"
            finally:
                u.proxy.close()
                u.sent = u.proxy.upstream
                u.seconds = time.monotonic() - started
                with self.lock:
                    self.active.discard(u)
            if u.failed:
                log(f"upload {u.name} failed: {u.failed}")
            else:
                u.finished = True
                u.ack(u.size)
                self.verify(u)
                if u.url:
                    with self.lock:
                        self.finished_urls.append(u)
                        del self.finished_urls[:-200]

    def backoff(self, attempt):
        time.sleep(min(2.0, 0.25 * (1 + attempt)))

    def upload_ietf(self, u):
        u.state_dir = os.path.join(self.work, "state", u.name)
        os.makedirs(u.state_dir)
        url = f"http://127.0.0.1:{u.proxy.port}/up/{u.name}"
        # Every other one in appends of 8 MiB: each answer then acknowledges an offset (in the token).
        chunked = ["--chunk-size", "8M"] if u.seq % 2 else []
        p = subprocess.Popen([self.args.bin, "upload", u.source["path"], url, "--protocol", "ietf",
                              "--retries", "inf", "--retry-delay", "0.5", "--json", "-q",
                              "--state-dir", u.state_dir] + chunked,
                             env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        with self.lock:
            self.children.add(p)
        try:
            out, err = p.communicate(timeout=self.args.upload_timeout)
        finally:
            with self.lock:
                self.children.discard(p)
        events = [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")]
        u.attempts = 1 + sum(1 for e in events if e.get("event") == "retry")
        u.restarts = [e for e in events if e.get("event") == "restarted"]
        done = [e for e in events if e.get("event") == "completed"]
        if p.returncode != 0 or not done:
            raise RuntimeError(f"resumectl exited {p.returncode}: {err.decode(errors='replace').strip()[-300:]}")
        if done[0].get("sha256") not in (None, u.source["sha256"]):
            raise RuntimeError(f"resumectl reports sha256 {done[0].get('sha256')}")
        if u.restarts:
            # The draft client started over (its upload URL answered 404): what was acknowledged was lost.
            with u.lock:
                u.pending_gone = max(u.pending_gone, max((o for _, o in u.acks), default=0))

    def read_token(self, u):
        """The upload URL and acknowledged offset resumectl's token holds (it writes them atomically)."""
        try:
            tokens = os.path.join(u.state_dir, "tokens")
            for name in os.listdir(tokens):
                if name.endswith(".json"):
                    with open(os.path.join(tokens, name)) as f:
                        t = json.load(f)
                    part = t.get("upload") or {}
                    return part.get("uploadURL"), part.get("acknowledgedBytes", 0), part.get("interopVersion")
        except (OSError, ValueError):
            pass
        return None, 0, None

    def upload_tus(self, u):
        from tusclient import client as tus_client
        from tusclient.exceptions import TusCommunicationError, TusUploadFailed
        endpoint = f"http://127.0.0.1:{u.proxy.port}/up/"
        client = tus_client.TusClient(endpoint)
        attempt = 0
        while True:  # creation: an answer lost to a kill leaves an empty upload behind, which expires
            u.attempts += 1
            try:
                uploader = client.uploader(u.source["path"], chunk_size=self.args.tus_chunk,
                                           metadata={"filename": u.name}, retries=0)
                uploader.set_url(uploader.create_url())
                break
            except (TusCommunicationError, TusUploadFailed, OSError) as e:
                attempt += 1
                if attempt > 200:
                    raise RuntimeError(f"tus creation: {e}")
                self.backoff(attempt)
        u.url = "/" + uploader.url.split("/", 3)[3]
        uploader.offset = 0
        failures = 0
        while uploader.offset < u.size:
            try:
                uploader.upload_chunk()
                u.ack(uploader.offset)
                failures = 0
            except (TusCommunicationError, TusUploadFailed, OSError) as e:
                failures += 1
                u.attempts += 1
                if failures > 200:
                    raise RuntimeError(f"tus append: {e}")
                self.backoff(failures)
                while True:
                    sent_at = time.monotonic()
                    try:
                        offset = uploader.get_offset()  # through the proxy, which may hold it: not timed
                        break
                    except (TusCommunicationError, TusUploadFailed, OSError) as e2:
                        failures += 1
                        if failures > 200:
                            raise RuntimeError(f"tus offset: {e2}")
                        self.backoff(failures)
                u.observe(sent_at, offset)
                uploader.offset = offset

    def upload_plain(self, u):
        attempt = 0
        while True:
            attempt += 1
            u.attempts = attempt
            conn = http.client.HTTPConnection("127.0.0.1", u.proxy.port, timeout=120)
            try:
                conn.putrequest("PUT", f"/up/{u.name}")
                conn.putheader("Content-Length", str(u.size))
                conn.endheaders()
                with open(u.source["path"], "rb") as f:
                    while True:
                        block = f.read(256 << 10)
                        if not block:
                            break
                        conn.send(block)
                r = conn.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                status = None
            finally:
                conn.close()
            if status is not None and 200 <= status < 300:
                return
            if status == 409 and attempt > 1:
                return  # an earlier attempt finished but its answer was lost; verify() checks the file
            if status is not None and status not in (409, 500, 502, 503, 504):
                raise RuntimeError(f"PUT answered {status}")
            if attempt > 200:
                raise RuntimeError(f"PUT failed {attempt} times (last {status})")
            self.backoff(attempt)

    # -- checks of finished files ----------------------------------------------------------------------

    def object_digest(self, key):
        h = hashlib.sha256()
        body = self.moto.s3.get_object(Bucket=self.bucket, Key=key)["Body"]
        for chunk in iter(lambda: body.read(1 << 20), b""):
            h.update(chunk)
        return h.hexdigest()

    def read_digest(self, u):
        if self.args.store == "folder":
            h = hashlib.sha256()
            with open(os.path.join(self.root, "up", u.name), "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            return h.hexdigest()
        return self.object_digest("inbox/up/" + u.name)

    def verify(self, u):
        """The finished file against its source. A client may hear "complete" (a tus HEAD whose offset is
        the length) a moment before the file is in place: it is looked for during 10 s, and counted late."""
        missing_since = None
        while True:
            try:
                digest = self.read_digest(u)
                break
            except Exception as e:  # noqa: BLE001 — a missing file is a finding, never a crash
                now = time.monotonic()
                missing_since = missing_since or now
                if now - missing_since > 10:
                    log(f"{u.name} finished but is not there 10 s later: {e}")
                    self.missing.append(u)
                    return
                time.sleep(0.05)
        if missing_since is not None:
            with self.lock:
                self.late.append((u, time.monotonic() - missing_since))
        if digest != u.source["sha256"]:
            log(f"{u.name} differs: {digest} != {u.source['sha256']}")
            self.differing.append(u)
        with self.lock:
            self.recheck.append(u)

    def recheck_finished(self, final=False):
        """After a restart: every file verified before it must still be there whole; then it goes."""
        with self.lock:
            batch, self.recheck = self.recheck, []
        for u in batch:
            try:
                if self.args.store == "folder":
                    path = os.path.join(self.root, "up", u.name)
                    size = os.stat(path).st_size
                    os.remove(path)
                else:
                    key = "inbox/up/" + u.name
                    size = self.moto.s3.head_object(Bucket=self.bucket, Key=key)["ContentLength"]
                    self.moto.s3.delete_object(Bucket=self.bucket, Key=key)
            except Exception:  # noqa: BLE001
                size = -1
            if size != u.size:
                log(f"{u.name} was verified, then after a restart its size is {size}, not {u.size}")
                self.missing.append(u)

    # -- the HEAD observer -------------------------------------------------------------------------------

    def poll_token(self, u):
        """A draft upload's URL and acknowledged offset, from the token resumectl keeps (never a request)."""
        if u.protocol != "ietf" or not u.state_dir:
            return
        url, acked, interop = self.read_token(u)
        if url:
            u.url = "/" + url.split("/", 3)[3] if url.startswith("http") else url
            u.interop = interop or u.interop
        if acked:
            u.ack(acked)

    def head(self, u, conn_holder):
        """HEAD the upload URL straight at the front (serve, or nginx); returns (sent_at, offset or None,
        status) or None when nothing answered. A HEAD stops a request writing to the upload (serve
        answers with what is durable, as tusd does): it is sent only where no client is writing — a
        finished upload, or every upload while the proxies hold their clients back after a restart."""
        if not u.url:
            return None
        headers = {"Tus-Resumable": "1.0.0"} if u.protocol == "tus" else \
            {"Upload-Draft-Interop-Version": str(u.interop)}
        sent_at = time.monotonic()
        try:
            conn = conn_holder.get("conn")
            if conn is None:
                conn = conn_holder["conn"] = http.client.HTTPConnection("127.0.0.1", self.front_port, timeout=10)
            conn.request("HEAD", u.url, headers=headers)
            r = conn.getresponse()
            r.read()
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn_holder["conn"] = None
        except (OSError, http.client.HTTPException):
            conn_holder["conn"] = None
            with self.lock:
                self.head_errors += 1
            return None
        with self.lock:
            self.head_latency.append(time.monotonic() - sent_at)
        offset = r.getheader("Upload-Offset")
        if r.status in (200, 204) and offset is not None:
            u.observe(sent_at, int(offset))
            return sent_at, int(offset), r.status
        if r.status == 404 and not u.finished:
            before = u.acked_before(sent_at)
            with u.lock:
                u.pending_gone = max(u.pending_gone, before)
        return sent_at, None, r.status

    def observer(self):
        """HEADs finished uploads' URLs all the time (they must answer with the whole length, also after a
        restart), and reads the draft clients' tokens for the offsets the server acknowledged."""
        holder = {}
        next_tokens = 0.0
        while not self.stop_all.is_set():
            now = time.monotonic()
            if now >= next_tokens:
                next_tokens = now + 0.5
                with self.lock:
                    active = [u for u in self.active if u.protocol == "ietf"]
                for u in active:
                    self.poll_token(u)
            with self.lock:
                done = list(self.finished_urls)
            if done and self.gate.is_set():
                u = self.rng.choice(done)
                answer = self.head(u, holder)
                if answer and answer[1] != u.size:
                    with self.lock:
                        self.forgotten.append((u.name, answer[2], answer[1]))
            time.sleep(self.args.head_interval)

    def head_all(self):
        with self.lock:
            active = list(self.active)
        local = threading.local()

        def one(u):
            if not hasattr(local, "holder"):
                local.holder = {}
            return self.head(u, local.holder)
        if not active:
            return []
        with ThreadPoolExecutor(min(64, len(active))) as pool:  # all at once: the proxies hold their clients meanwhile
            return list(pool.map(one, active))

    # -- serve's resources -----------------------------------------------------------------------------

    def sampler(self):
        while not self.stop_all.is_set():
            for inst in self.instances:
                s = inst.sample()
                if s:
                    self.samples.append((time.monotonic(), inst.name, s))
            time.sleep(0.5)

    # -- kills ---------------------------------------------------------------------------------------------

    def killer(self):
        a = self.args
        n = 0
        next_at = self.t0 + a.kill_interval
        while not self.stop_uploads.is_set():
            if self.stop_uploads.wait(max(0.0, next_at - time.monotonic())):
                break
            inst = self.instances[n % len(self.instances)]
            n += 1
            with self.lock:
                active = list(self.active)
            for u in active:
                self.poll_token(u)  # the latest acknowledgements the draft clients hold
            in_flight = len(active)
            # New connections wait at the proxies until every upload was asked after the restart (a HEAD
            # would stop a client's request); the ones open now die with serve.
            self.gate.clear()
            killed_at = time.monotonic()
            alive = inst.kill()
            try:
                inst.start()
                back = time.monotonic() - killed_at
                self.head_all()  # every upload: nothing acknowledged may be gone
            finally:
                self.gate.set()
                held = time.monotonic() - killed_at
            self.recheck_finished()
            self.kills.append({"instance": inst.name, "alive": alive, "restart_seconds": round(back, 3),
                               "held_seconds": round(held, 3),
                               "uploads_in_flight": in_flight, "at": round(killed_at - self.t0, 1)})
            log(f"kill {n}: {inst.name} (alive: {alive}), back in {back:.2f} s, clients held {held:.2f} s, "
                f"{in_flight} uploads in flight")
            next_at += a.kill_interval

    # -- the run -----------------------------------------------------------------------------------------------

    def getter_process(self):
        a = self.args
        cmd = [sys.executable, os.path.abspath(__file__), "--role", "getter", "--port", str(self.front_port),
               "--get-connections", str(a.get_connections), "--get-interval", str(a.get_interval),
               "--get-max-range", str(a.get_max_range), "--seed", str(a.seed)] + \
              [x for p in self.get_files for x in ("--get-file", p)]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
        with self.lock:
            self.children.add(p)
        return p

    def cleanup(self):
        with self.lock:
            children = list(self.children)
        for p in children:
            if p.poll() is None:
                p.kill()
                p.wait()
        for inst in self.instances:
            inst.stop()
        for peer in (self.nginx, self.moto):
            if peer:
                peer.stop()

    def run(self):
        a = self.args
        self.make_pool()
        self.make_get_files()
        self.start_peers()
        getter = self.getter_process()
        self.t0 = time.monotonic()
        threads = [threading.Thread(target=self.upload_slot, args=(i,), daemon=True) for i in range(a.uploads)]
        helpers = [threading.Thread(target=f, daemon=True) for f in (self.observer, self.sampler)]
        killer = threading.Thread(target=self.killer, daemon=True)
        for t in threads + helpers + [killer]:
            t.start()
        log(f"load started: {a.uploads} uploads, {a.get_connections} GET connections, "
            f"a kill every {a.kill_interval} s for {a.duration} s")
        next_note = self.t0 + 30
        while time.monotonic() < self.t0 + a.duration:
            time.sleep(1)
            if a.progress and time.monotonic() >= next_note:
                next_note += 30
                with self.lock:
                    done = sum(1 for u in self.uploads if u.finished)
                log(f"{int(time.monotonic() - self.t0)} s: {done} uploads finished, {len(self.kills)} kills")
        self.stop_uploads.set()
        killer.join()
        getter.stdin.close()  # the getter stops, then prints its numbers
        log("load stopped; waiting for the uploads in flight")
        drain_deadline = time.monotonic() + a.drain
        for t in threads:
            t.join(max(0.1, drain_deadline - time.monotonic()))
        unfinished = [u for u in self.uploads if not u.finished and not u.failed]
        log(f"uploads drained ({len(unfinished)} unfinished)")
        get_out = getter.stdout.read()
        getter.wait()
        gets = json.loads(get_out.decode() or "{}")
        if unfinished:
            self.gate.clear()
            time.sleep(0.5)
            self.head_all()
        self.stop_all.set()
        self.recheck_finished(final=True)
        if self.nginx:
            self.nginx.stop()  # its keep-alive connections to the instances are no client's
            self.nginx = None
        # Descriptors: back to the idle count once the clients are gone (closes take a moment).
        fds_after = {}
        deadline = time.monotonic() + a.fd_wait
        for inst in self.instances:
            while True:
                s = inst.sample()
                fds_after[inst.name] = s[2] if s else None
                if not s or s[2] <= inst.idle_fds or time.monotonic() > deadline:
                    break
                time.sleep(0.25)
        log(f"descriptors counted: {fds_after}")
        result = self.report(gets, unfinished, fds_after)
        return result

    def report(self, gets, unfinished, fds_after):
        a = self.args
        finished = [u for u in self.uploads if u.finished]
        failed = [u for u in self.uploads if u.failed]
        lost = sum(u.lost for u in self.uploads) + sum(u.pending_gone for u in self.uploads if not u.finished) \
            + sum(u.size for u in self.missing)
        lost_uploads = [u.name for u in self.uploads if u.lost or (u.pending_gone and not u.finished)] + \
            [u.name for u in self.missing]
        kills = len(self.kills)

        def resent(us):
            return sum(max(0, u.sent - u.size) for u in us)
        uncut = [u for u in finished if u.cut_at is None]
        cut = [u for u in finished if u.cut_at is not None]
        resumable_uncut = [u for u in uncut if u.protocol != "plain"]
        plain_uncut = [u for u in uncut if u.protocol == "plain"]
        peak_rss_kib = max(i.peak_rss for i in self.instances)
        fds_ok = all(fds_after[i.name] == i.idle_fds for i in self.instances)
        by_proto = {p: sum(1 for u in finished if u.protocol == p) for p in ("ietf", "tus", "plain")}
        result = {
            "store": a.store, "instances": len(self.instances), "duration": a.duration,
            "uploads_concurrent": a.uploads, "get_connections": a.get_connections,
            "kill_interval": a.kill_interval,
            "uploads_started": len(self.uploads), "uploads_finished": len(finished),
            "uploads_finished_by_protocol": by_proto,
            "uploads_cut": sum(1 for u in self.uploads if u.cut_at is not None and u.proxy and u.proxy.cut_done),
            "uploads_failed": len(failed), "failures": [f"{u.name}: {u.failed}" for u in failed][:20],
            "uploads_unfinished": len(unfinished),
            "bytes_finished": sum(u.size for u in finished),
            "acknowledged_then_lost_bytes": lost, "lost_uploads": lost_uploads[:20],
            "late_files": len(self.late), "late_max_seconds": round(max((t for _, t in self.late), default=0), 3),
            "late": [(u.name, round(t, 3)) for u, t in self.late][:50],
            "late_by_protocol": {p: sum(1 for u, _ in self.late if u.protocol == p) for p in ("ietf", "tus", "plain")},
            "sha256_differs": len(self.differing), "differing": [u.name for u in self.differing][:20],
            "kills": kills, "kills_alive": sum(1 for k in self.kills if k["alive"]),
            "kill_log": self.kills,
            "resent_bytes_per_kill_resumable": resent(resumable_uncut) / kills if kills else None,
            "resent_bytes_per_kill_plain": resent(plain_uncut) / kills if kills else None,
            "resent_bytes_per_cut": resent(cut) / len(cut) if cut else None,
            "head_count": len(self.head_latency), "head_errors": self.head_errors,
            "finished_urls_forgotten": len(self.forgotten), "forgotten": self.forgotten[:20],
            "head_p50_ms": _ms(percentile(self.head_latency, 50)), "head_p99_ms": _ms(percentile(self.head_latency, 99)),
            "get_count": gets.get("count", 0), "get_errors": gets.get("errors"),
            "get_bytes": gets.get("bytes", 0), "get_mismatches": gets.get("mismatches"),
            "get_other_statuses": gets.get("statuses"), "get_error_kinds": gets.get("error_kinds"),
            "get_p50_ms": gets.get("p50_ms"), "get_p99_ms": gets.get("p99_ms"),
            "peak_rss_mib": round(peak_rss_kib / 1024, 1), "rss_limit_mib": a.rss_limit,
            "peak_rss_by_instance_mib": {i.name: round(i.peak_rss / 1024, 1) for i in self.instances},
            "idle_fds": {i.name: i.idle_fds for i in self.instances}, "fds_after": fds_after,
            "idle_fd_kinds": {i.name: i.idle_kinds for i in self.instances},
            "fd_kinds_after": {i.name: fd_breakdown(i.proc.pid, i.port, self.moto.port if self.moto else None)
                               for i in self.instances},
            "resent_bytes_per_kill_by_protocol": {
                p: (resent([u for u in uncut if u.protocol == p]) / kills if kills else None)
                for p in ("ietf", "tus", "plain")},
            "workdir": self.work,
            "upload_log": [{"name": u.name, "size": u.size, "sent": u.sent, "attempts": u.attempts,
                            "cut_at": u.cut_at, "seconds": round(getattr(u, "seconds", 0), 2),
                            "lost": u.lost, "failed": u.failed} for u in self.uploads],
        }
        checks = {
            "acknowledged then lost = 0": lost == 0,
            "SHA-256 differs = 0": not self.differing,
            f"peak RSS <= {a.rss_limit} MiB": peak_rss_kib <= a.rss_limit * 1024,
            "descriptors back to idle": fds_ok,
            "GET bodies that differ = 0": gets.get("mismatches") == 0 and gets.get("count", 0) > 0,
            "every kill hit a live serve": kills > 0 and all(k["alive"] for k in self.kills),
            "uploads failed = 0": not failed and not unfinished,
            "finished upload URLs answer finished": not self.forgotten,
        }
        result["checks"] = checks
        result["ok"] = all(checks.values())
        return result


def _ms(x):
    return None if x is None else round(x * 1000, 1)


def _mean(xs):
    xs = list(xs)
    return round(sum(xs) / len(xs), 2) if xs else "-"


def fmt_bytes(n):
    if n is None:
        return "-"
    return f"{n / MiB:,.1f} MiB" if n >= MiB or n == 0 else f"{n / 1024:,.1f} KiB"


def print_table(r):
    rows = [
        ("store", f"{r['store']}, {r['instances']} instance(s)" + (" behind nginx" if r["instances"] > 1 else "")),
        ("load", f"{r['uploads_concurrent']} uploads + {r['get_connections']} GET connections, "
                 f"{r['duration']} s, a kill every {r['kill_interval']} s"),
        ("uploads finished", f"{r['uploads_finished']} ({fmt_bytes(r['bytes_finished'])}; draft "
                             f"{r['uploads_finished_by_protocol']['ietf']}, tus {r['uploads_finished_by_protocol']['tus']}, "
                             f"PUT {r['uploads_finished_by_protocol']['plain']}; {r['uploads_cut']} cut at the proxy)"),
        ("uploads failed / unfinished", f"{r['uploads_failed']} / {r['uploads_unfinished']}"),
        ("bytes acknowledged then lost", f"{r['acknowledged_then_lost_bytes']}"),
        ("files whose SHA-256 differs", f"{r['sha256_differs']}"),
        ("in place after the client was done", f"{r['late_files']} (at most {r['late_max_seconds']} s later; "
                                               f"{r['late_by_protocol']})"),
        ("kills (alive when killed)", f"{r['kills']} ({r['kills_alive']}); back in "
                                      f"{_mean(k['restart_seconds'] for k in r['kill_log'])} s, new connections held "
                                      f"{_mean(k.get('held_seconds', 0) for k in r['kill_log'])} s (means)"),
        ("re-sent per kill, draft + tus", fmt_bytes(r["resent_bytes_per_kill_resumable"])),
        ("re-sent per kill, plain PUT", fmt_bytes(r["resent_bytes_per_kill_plain"])),
        ("re-sent per cut (cut uploads)", fmt_bytes(r["resent_bytes_per_cut"])),
        ("HEAD p50 / p99", f"{r['head_p50_ms']} / {r['head_p99_ms']} ms ({r['head_count']} answered, "
                           f"{r['head_errors']} unanswered; {r['finished_urls_forgotten']} finished URLs answered wrong)"),
        ("GET p50 / p99", f"{r['get_p50_ms']} / {r['get_p99_ms']} ms ({r['get_count']} ranged GETs, "
                          f"{fmt_bytes(r['get_bytes'])}, {r['get_mismatches']} differ; {r['get_errors']} failed"
                          + (f" {r['get_other_statuses']}" if r['get_other_statuses'] else "")
                          + (f" {r['get_error_kinds']}" if r.get('get_error_kinds') else "") + ")"),
        ("serve peak RSS", f"{r['peak_rss_mib']} MiB (limit {r['rss_limit_mib']})"
                           + (f" {r['peak_rss_by_instance_mib']}" if r["instances"] > 1 else "")),
        ("descriptors idle -> after", ", ".join(f"{k}: {r['idle_fds'][k]} -> {r['fds_after'][k]}"
                                                for k in r["idle_fds"])),
    ]
    for k in r["idle_fds"]:
        if r["fds_after"][k] != r["idle_fds"][k]:
            rows.append((f"  {k} descriptors", f"idle {r['idle_fd_kinds'][k]} -> after {r['fd_kinds_after'][k]}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"soak-serve | {k:<{width}} | {v}")
    for name, ok in r["checks"].items():
        print(f"soak-serve | {'must hold':<{width}} | {'ok  ' if ok else 'FAIL'} {name}")
    print(f"soak-serve | {'result':<{width}} | {'PASS' if r['ok'] else 'FAIL'}", flush=True)


# ---------------------------------------------------------------------------------------------------------
# The GET load: its own process, asyncio, keep-alive connections, every byte checked.

def getter_main(args):
    files = []
    for p in args.get_file:
        with open(p, "rb") as f:
            files.append(("/get/" + os.path.basename(p), f.read()))
    rng = random.Random(args.seed + 1)
    stats = {"count": 0, "errors": 0, "mismatches": 0, "bytes": 0, "statuses": {}, "error_kinds": {}}
    latencies = []
    stop = asyncio.Event()

    async def connection():
        reader = writer = None
        while not stop.is_set():
            path, data = rng.choice(files)
            length = rng.randint(1, min(args.get_max_range, len(data)))
            start = rng.randint(0, len(data) - length)
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
                sent = time.monotonic()
                writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes={start}-{start + length - 1}\r\n\r\n".encode())
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                lines = head.decode("latin-1").split("\r\n")
                status = int(lines[0].split()[1])
                fields = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
                body = await asyncio.wait_for(reader.readexactly(int(fields.get("content-length", "0"))), 30)
                latencies.append(time.monotonic() - sent)
                stats["count"] += 1
                stats["bytes"] += len(body)
                if status != 206:
                    key = str(status)
                    stats["statuses"][key] = stats["statuses"].get(key, 0) + 1
                    latencies.pop()
                    stats["count"] -= 1
                    stats["bytes"] -= len(body)
                    stats["errors"] += 1
                elif body != data[start:start + length] or \
                        fields.get("content-range") != f"bytes {start}-{start + length - 1}/{len(data)}":
                    stats["mismatches"] += 1
                if fields.get("connection", "").lower() == "close":
                    writer.close()
                    writer = None
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError, IndexError) as e:
                stats["errors"] += 1
                kind = type(e).__name__
                stats["error_kinds"][kind] = stats["error_kinds"].get(kind, 0) + 1
                if writer is not None:
                    writer.close()
                writer = None
                await asyncio.sleep(0.1)
                continue
            if args.get_interval > 0:
                await asyncio.sleep(rng.uniform(0, 2 * args.get_interval))
        if writer is not None:
            writer.close()

    async def main():
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()

        def stdin_closed():
            if not os.read(fd, 4096):
                loop.remove_reader(fd)
                stop.set()
        loop.add_reader(fd, stdin_closed)
        await asyncio.gather(*(connection() for _ in range(args.get_connections)))

    asyncio.run(main())
    stats["p50_ms"] = _ms(percentile(latencies, 50))
    stats["p99_ms"] = _ms(percentile(latencies, 99))
    print(json.dumps(stats), flush=True)


# ---------------------------------------------------------------------------------------------------------

def options():
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--role", default="soak", choices=("soak", "getter"))
    p.add_argument("--bin", default=env("SOAK_BIN", os.path.join(REPO, ".build", "release", "resumectl")),
                   help="the resumectl binary (resumectl-serve is taken from beside it)")
    p.add_argument("--store", default=env("SOAK_STORE", "folder"), choices=("folder", "s3"))
    p.add_argument("--duration", type=float, default=float(env("SOAK_DURATION", 600)))
    p.add_argument("--uploads", type=int, default=None, help="uploads at all times (folder 100, s3 25)")
    p.add_argument("--get-connections", type=int, default=None, help="GET connections (folder 200, s3 50)")
    p.add_argument("--kill-interval", type=float, default=float(env("SOAK_KILL_INTERVAL", 60)))
    p.add_argument("--instances", type=int, default=None, help="serve instances (folder 1, s3 3)")
    p.add_argument("--min-size", type=parse_size, default=parse_size(env("SOAK_MIN_SIZE", "1M")))
    p.add_argument("--max-size", type=parse_size, default=parse_size(env("SOAK_MAX_SIZE", "64M")))
    p.add_argument("--pool", type=int, default=int(env("SOAK_POOL", 24)), help="source files")
    p.add_argument("--cut-fraction", type=float, default=float(env("SOAK_CUT_FRACTION", 0.2)))
    p.add_argument("--tus-chunk", type=parse_size, default=parse_size(env("SOAK_TUS_CHUNK", "8M")))
    p.add_argument("--get-files", type=int, default=4)
    p.add_argument("--get-file-size", type=parse_size, default=parse_size("16M"))
    p.add_argument("--get-max-range", type=parse_size, default=parse_size(env("SOAK_GET_MAX_RANGE", "256k")))
    p.add_argument("--get-interval", type=float, default=float(env("SOAK_GET_INTERVAL", 0.25)),
                   help="mean pause between one connection's GETs (seconds)")
    p.add_argument("--head-interval", type=float, default=0.02)
    p.add_argument("--lock-seconds", type=float, default=float(env("SOAK_LOCK_SECONDS", 10)))
    p.add_argument("--drain", type=float, default=float(env("SOAK_DRAIN", 180)),
                   help="seconds the uploads in flight get to finish after the load stopped")
    p.add_argument("--fd-wait", type=float, default=None,
                   help="seconds serve gets to close what the load opened (folder 15; s3 75: idle S3 sessions "
                        "go after an expiry sweep, every 30 s, without use)")
    p.add_argument("--upload-timeout", type=float, default=3600.0)
    p.add_argument("--rss-limit", type=float, default=float(env("SOAK_RSS_LIMIT_MIB", 128)))
    p.add_argument("--seed", type=int, default=int(env("SOAK_SEED", 47)))
    p.add_argument("--workdir", default=env("SOAK_WORKDIR"), help="where the run's temp folder goes")
    p.add_argument("--keep", action="store_true", help="keep the run's folder (logs, sources)")
    p.add_argument("--json", default=env("SOAK_JSON"), help="also write the result here as JSON")
    p.add_argument("--progress", action="store_true", default=env("SOAK_PROGRESS") == "1")
    # getter role
    p.add_argument("--port", type=int)
    p.add_argument("--get-file", action="append", default=[])
    a = p.parse_args()
    s3 = a.store == "s3"
    if a.uploads is None:
        a.uploads = int(env("SOAK_UPLOADS", 25 if s3 else 100))
    if a.get_connections is None:
        a.get_connections = int(env("SOAK_GETS", 50 if s3 else 200))
    if a.fd_wait is None:
        a.fd_wait = 75.0 if s3 else 15.0
    if a.instances is None:
        a.instances = int(env("SOAK_INSTANCES", 3 if s3 else 1))
    if a.store == "folder" and a.instances != 1:
        p.error("the folder store runs one instance")
    if a.min_size < 1 or a.max_size < a.min_size or a.pool < 2:
        p.error("sizes: 1 <= --min-size <= --max-size, --pool >= 2")
    return a


def main():
    a = options()
    if a.role == "getter":
        getter_main(a)
        return 0
    if not os.access(a.bin, os.X_OK):
        print(f"soak_serve.py: no resumectl binary at {a.bin} (make release, or --bin)", file=sys.stderr)
        return 2
    try:
        import tusclient  # noqa: F401
    except ImportError:
        print("soak_serve.py: tuspy is not installed (make deps-test)", file=sys.stderr)
        return 2

    def interrupted(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)
    # A hard end of its own, so that a run never outlives whoever started it by much: past it, everything
    # it started is stopped and it exits 3.
    signal.signal(signal.SIGALRM, interrupted)
    signal.alarm(int(a.duration + a.drain + a.fd_wait + 300))
    threading.stack_size(512 << 10)
    run = Run(a)
    try:
        result = run.run()
    except KeyboardInterrupt as e:
        print(f"soak_serve.py: stopped ({e}); logs in {run.work}", file=sys.stderr)
        return 3
    finally:
        signal.alarm(0)
        run.cleanup()
    print_table(result)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if not a.keep and result["ok"]:
        shutil.rmtree(run.work, ignore_errors=True)
    else:
        print(f"soak-serve | logs and sources kept in {run.work}", flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
