"""One timed run of a tool: spawned through a small launcher that reports its wall time, CPU and
peak RSS (os.wait4), with any tool still in flight killed by the harness on the way out."""

import os
import signal
import subprocess
import sys
import threading
import time

from .util import stop_process

# Tools in flight ([launcher Popen, tool pid]) that must not outlive the harness; servers are separate.
_live_entries = []
_live_lock = threading.Lock()


def kill_live():
    """SIGKILLs every tool still in flight and its launcher (teardown)."""
    with _live_lock:
        live = list(_live_entries)
    for launcher, pid in live:
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        stop_process(launcher, signal.SIGKILL, 2)


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

