"""Small helpers every part of the bench uses: sizes, ports, processes, files, CPU counters."""

import argparse
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

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

