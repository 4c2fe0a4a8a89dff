"""The peers the cases measure against, all started from here (Peers.start) and stopped together
(Peers.stop): nginx (downloads), `resumectl serve` (uploads), tuspyserver (tus), moto (S3), and the
counting proxy a case puts in front of a peer (bytes each way, requests by method)."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from .util import NGINX, REPO, Failure, free_port, proc_cpu, stop_process, wait_port

class Nginx:
    """nginx on 127.0.0.1, single process, with a private prefix and a parseable access log."""

    def __init__(self, prefix, root, slow_rate, seg_rate, tls=None):
        self.prefix, self.root = prefix, root
        self.slow_rate, self.seg_rate = slow_rate, seg_rate
        self.tls = tls  # a Certificate: also serve the root over HTTPS (HTTP/2 offered) on tls_port
        self.proc = None
        self.port = self.tls_port = None
        self.access_log = os.path.join(prefix, "access.log")

    def config(self, port, tls_port):
        p, r = self.prefix, self.root
        https = "" if not self.tls else f"""
    server {{
        listen 127.0.0.1:{tls_port} ssl http2;
        ssl_certificate {self.tls.cert};
        ssl_certificate_key {self.tls.key};
        root {r};
    }}"""
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
        # folder-down case: the root's listings (nginx's HTML autoindex)
        location /listed/ {{ alias {r}/; autoindex on; }}
    }}{https}
}}
"""

    def start(self):
        os.makedirs(os.path.join(self.prefix, "tmp"), exist_ok=True)
        conf = os.path.join(self.prefix, "nginx.conf")
        for _ in range(5):  # the free port can be taken between probe and bind: retry
            port, tls_port = free_port(), free_port()
            with open(conf, "w") as f:
                f.write(self.config(port, tls_port))
            err = open(os.path.join(self.prefix, "stderr.log"), "ab")
            self.proc = subprocess.Popen(
                [NGINX, "-p", self.prefix + "/", "-c", conf, "-e", os.path.join(self.prefix, "error.log")],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
            err.close()
            if wait_port(port, self.proc) and (not self.tls or wait_port(tls_port, self.proc)):
                self.port, self.tls_port = port, tls_port
                return self
            stop_process(self.proc, signal.SIGQUIT)
        raise RuntimeError("nginx did not start; see " + os.path.join(self.prefix, "error.log"))

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def tls_url(self, path):
        return f"https://127.0.0.1:{self.tls_port}/{path.lstrip('/')}"

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


class RequestCounter:
    """Counts the HTTP/1.1 requests in one connection's client-to-server bytes: a head up to its blank
    line (its method counted), then its body skipped by Content-Length or by its chunks (RFC 9112 6.3,
    7.1), so that a body's bytes are never read as a request line."""

    def __init__(self):
        self.buf = bytearray()
        self.state = "head"  # head | body | size | chunk | trailer
        self.left = 0
        self.methods = {}

    def feed(self, data):
        self.buf += data
        while self.buf:
            if self.state in ("body", "chunk"):
                n = min(self.left, len(self.buf))
                del self.buf[:n]
                self.left -= n
                if self.left:
                    return
                self.state = "size" if self.state == "chunk" else "head"
                continue
            end = self.buf.find(b"\r\n\r\n" if self.state == "head" else b"\r\n")
            if end < 0:
                return
            line = bytes(self.buf[:end])
            del self.buf[:end + (4 if self.state == "head" else 2)]
            if self.state == "head":
                lines = line.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                self.methods[method] = self.methods.get(method, 0) + 1
                fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
                if "chunked" in fields.get("transfer-encoding", "").lower():
                    self.state = "size"
                elif int(fields.get("content-length") or 0) > 0:
                    self.state, self.left = "body", int(fields["content-length"])
            elif self.state == "size":
                size = int(line.split(b";")[0].strip() or b"0", 16)
                self.state, self.left = ("trailer", 0) if size == 0 else ("chunk", size + 2)
            elif not line:  # the blank line that ends a chunked body's trailer
                self.state = "head"


class CountingProxy:
    """A TCP relay on 127.0.0.1 in front of a server that counts the bytes clients send (case 7's
    "sent twice") and receive, and the requests they make (by method; RequestCounter). One thread per
    direction and connection; reset() zeroes the counts between runs. `rate` bytes/s per connection and
    direction: a link with a per-connection limit (cases 18 and 20; nginx's limit_rate sends a response's
    first second at once, so it does not slow 1 MiB ranges); `host` another loopback address."""

    def __init__(self, upstream_port, rate=None, host="127.0.0.1"):
        self.upstream_port = upstream_port
        self.rate = rate
        self.lock = threading.Lock()
        self.upstream = self.downstream = 0
        self.connections = 0
        self.counters = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
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
            counter = RequestCounter()
            with self.lock:
                self.connections += 1
                self.counters.append(counter)
            threading.Thread(target=self.pump, args=(client, server, counter), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, None), daemon=True).start()

    def pump(self, src, dst, counter):
        """counter: the client's side (bytes sent, requests); None: the server's (bytes received)."""
        # Throttled: reads of at most a twentieth of a second's bytes, each sent on schedule.
        buf = bytearray(max(4096, self.rate // 20) if self.rate else 1 << 20)
        view = memoryview(buf)
        start, moved = time.monotonic(), 0
        try:
            while True:
                n = src.recv_into(buf)
                if n <= 0:
                    break
                if self.rate:
                    moved += n
                    ahead = moved / self.rate - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
                dst.sendall(view[:n])
                with self.lock:
                    if counter:
                        self.upstream += n
                        counter.feed(view[:n])
                    else:
                        self.downstream += n
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

    def received(self):
        with self.lock:
            return self.downstream

    def requests(self, method=None):
        """{method: count} of every request so far, or the count of one method."""
        with self.lock:
            out = {}
            for c in self.counters:
                for m, k in c.methods.items():
                    out[m] = out.get(m, 0) + k
        return out if method is None else out.get(method, 0)

    def reset(self):
        with self.lock:
            self.upstream = self.downstream = 0
            for c in self.counters:
                c.methods.clear()

    def stop(self):
        self.closed = True
        self.listener.close()


class Certificate:
    """A self-signed P-256 certificate for 127.0.0.1 and localhost (openssl), the CA file of the TLS
    cases: nginx and `resumectl serve` present it, curl and resumectl trust it with --cacert."""

    def __init__(self, directory):
        os.makedirs(directory, exist_ok=True)
        self.cert, self.key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-keyout", self.key, "-out", self.cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("openssl could not make the bench certificate: " + r.stderr.strip()[-300:])


class ServePeer:
    """`resumectl serve DIR --port 0 [ARGS…]`: the first stdout line is the URL."""

    def __init__(self, binary, directory, logdir, env, args=(), name="serve"):
        self.binary, self.dir, self.logdir, self.env = binary, directory, logdir, env
        self.args, self.name = list(args), name
        self.proc = None
        self.base = None

    def start(self):
        err = open(os.path.join(self.logdir, self.name + ".log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", self.dir, "--host", "127.0.0.1", "--port", "0"] + self.args,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=self.env,
            start_new_session=True)
        err.close()
        line = [None]
        t = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(15)
        text = (line[0] or b"").decode().strip()
        m = re.match(r"listening on (https?://\S+)", text)
        if not m:
            self.stop()
            raise RuntimeError(f"resumectl serve did not print its URL (got {text!r}); see {self.logdir}/{self.name}.log")
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


class Peers:
    """The long-lived peers of one bench run, started once for every case that needs them (in the
    order nginx, tuspyserver, moto, resumectl serve) and stopped together. A case names what it
    needs in its PEERS; it reaches a peer as bench.nginx, bench.tus, bench.moto or bench.peer.
    "nginx-tls" is nginx with an HTTPS server too (bench.cert, a Certificate, is its CA file);
    "serve-www" are two more `resumectl serve --read-only` of the test files, plain and HTTPS
    (bench.serve_www, bench.serve_www_tls)."""

    ORDER = ("nginx", "tus", "moto", "serve", "serve-www")

    def __init__(self):
        self.nginx = self.tus = self.moto = self.serve = None
        self.serve_www = self.serve_www_tls = None
        self.cert = None

    def start(self, needed, bench, log):
        for name in self.ORDER:
            wants_tls = "nginx-tls" in needed or "serve-www" in needed
            if name not in needed and not (name == "nginx" and wants_tls):
                continue
            if wants_tls and not self.cert:
                self.cert = Certificate(os.path.join(bench.tmp, "tls"))
            if name == "nginx":
                self.nginx = Nginx(os.path.join(bench.tmp, "nginx"), bench.www, bench.slow_rate,
                                   bench.seg_rate, tls=self.cert if wants_tls else None).start()
                log(f"nginx on {self.nginx.url('')} (pid {self.nginx.proc.pid}); /slow/ limit_rate "
                    f"{bench.slow_rate} B/s, /seg/ limit_rate {bench.seg_rate} B/s per connection"
                    + (f"; HTTPS (HTTP/2 offered) on {self.nginx.tls_url('')}" if wants_tls else ""))
            elif name == "tus":
                tus_dir = os.path.join(bench.tmp, "tus")
                os.makedirs(tus_dir)
                self.tus = TusPeer(tus_dir, bench.logs, bench.env).start()
                log(f"tus peer: tuspyserver on {self.tus.endpoint} (pid {self.tus.proc.pid})")
            elif name == "moto":
                self.moto = MotoPeer(bench.logs, bench.env).start()
                self.moto.tool("create-bucket", "bench")
                log(f"S3 peer: moto on {self.moto.endpoint} (pid {self.moto.proc.pid}), signatures checked")
            elif name == "serve":
                self.serve = ServePeer(bench.bin, bench.uploads, bench.logs, bench.env).start()
                log(f"upload peer: resumectl serve on {self.serve.base} (pid {self.serve.proc.pid})")
            elif name == "serve-www":
                self.serve_www = ServePeer(bench.bin, bench.www, bench.logs, bench.env, ["--read-only"],
                                           "serve-www").start()
                self.serve_www_tls = ServePeer(bench.bin, bench.www, bench.logs, bench.env,
                                               ["--read-only", "--tls-cert", self.cert.cert, "--tls-key",
                                                self.cert.key], "serve-www-tls").start()
                log(f"download peers: resumectl serve --read-only of the test files on {self.serve_www.base} "
                    f"and {self.serve_www_tls.base}")

    @staticmethod
    def counting_proxy(upstream_port):
        """A fresh CountingProxy in front of a peer (one per killed upload, stopped by the caller)."""
        return CountingProxy(upstream_port)

    def stop(self):
        for p in (self.serve_www_tls, self.serve_www, self.serve, self.tus, self.moto, self.nginx):
            if p:
                p.stop()
