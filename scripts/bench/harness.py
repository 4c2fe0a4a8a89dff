"""The harness the cases share: the temp folder, the test files, the peers (started once, from
peers.Peers), the rounds of timed runs, the checks of every result, and the JSON report."""

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

from .peers import Peers
from .runner import Run, kill_live, spawn_and_wait
from .table import print_table, summarize
from .util import (MiB, NGINX, REPO, Failure, log, machine_cpu, make_random_file, sha256_file,
                   timed_sync)


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
        self.peers = Peers()
        self.size = args.size
        self.seg_size = min(self.size, 256 * MiB)
        self.tus_size = args.tus_size
        self.tus_rate = args.tus_rate
        self.s3_size = args.s3_size
        self.browser_size = args.browser_size
        self.timeout = 60 + self.size / (20 * MiB)
        # Throttle for the resume case: nginx paces each response at limit_rate (it waits
        # sent/rate after every sendfile chunk), so at size/5 the full transfer takes 5 s and the
        # SIGTERM after 2.5 s lands at about 50 %.
        self.slow_rate = max(1, self.size // 5)
        self.seg_rate = args.seg_rate
        self.files = {}
        self.many = {}
        help_text = subprocess.run([self.bin, "download", "--help"], capture_output=True, text=True,
                                   env=self.env).stdout
        self.has_connections = "--connections" in help_text
        self.has_input_file = "--input-file" in help_text or re.search(r"(^|\s)-i[,\s]", help_text) is not None
        self.has_parallel = "--parallel" in help_text
        upload_help = subprocess.run([self.bin, "upload", "--help"], capture_output=True, text=True,
                                     env=self.env).stdout
        self.has_s3 = "--endpoint-url" in upload_help

    # The peers, as the cases name them.
    nginx = property(lambda self: self.peers.nginx)
    peer = property(lambda self: self.peers.serve)  # resumectl serve, the upload peer
    tus = property(lambda self: self.peers.tus)
    moto = property(lambda self: self.peers.moto)
    cert = property(lambda self: self.peers.cert)  # the TLS cases' certificate (its CA file)
    serve_www = property(lambda self: self.peers.serve_www)  # resumectl serve --read-only of www/
    serve_www_tls = property(lambda self: self.peers.serve_www_tls)  # the same over HTTPS

    # ---- setup / teardown

    def setup(self, cases):
        """Makes the files the selected cases use (FILES) and starts the peers they need (PEERS)."""
        files = set().union(*(c.FILES for c in cases))
        t = time.monotonic()

        def big_or_own(name, size):  # a hard link to big.bin when it is made anyway at the same size
            if "big.bin" in files and size == self.size:
                self.files[name] = self.files["big.bin"]
                os.link(os.path.join(self.www, "big.bin"), os.path.join(self.www, name))
            else:
                self.files[name] = make_random_file(os.path.join(self.www, name), size)
        if "big.bin" in files:
            self.files["big.bin"] = make_random_file(os.path.join(self.www, "big.bin"), self.size)
        if "seg.bin" in files:
            big_or_own("seg.bin", self.seg_size)
        if "many" in files:
            os.makedirs(os.path.join(self.www, "many"))
            for i in range(self.args.files):
                name = f"f{i:04d}.bin"
                self.many[name] = make_random_file(os.path.join(self.www, "many", name), self.args.file_size)
        if "small.bin" in files:
            self.files["small.bin"] = make_random_file(os.path.join(self.www, "small.bin"), 4 * 1024)
        if "tus.bin" in files:
            self.files["tus.bin"] = make_random_file(os.path.join(self.www, "tus.bin"), self.tus_size)
        if "s3.bin" in files:
            big_or_own("s3.bin", self.s3_size)
        if "browser.bin" in files:
            big_or_own("browser.bin", self.browser_size)
        log(f"test files made in {time.monotonic() - t:.1f} s under {self.tmp}")
        self.peers.start(set().union(*(c.PEERS for c in cases)), self, log)

    def teardown(self):
        kill_live()
        self.peers.stop()
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

    def clear_outputs(self, aside=None):
        """Empties the output and state folders before a run. With `aside` (a folder), they are renamed
        into it instead of deleted: the root file system here is mounted with `discard`, so deleting
        thousands of small files queues TRIMs that slowed every later run of every tool (a case's rounds
        went from 0.3-0.7 s to 1.1-1.5 s). `drop_aside` deletes them after the case."""
        if aside is None:
            self.clear(self.out)
            self.clear_state()
        else:
            os.makedirs(aside, exist_ok=True)
            for p in (self.out, self.state):
                if os.path.lexists(p):
                    os.rename(p, os.path.join(aside, f"{os.path.basename(p)}-{len(os.listdir(aside))}"))
            os.makedirs(self.state)
        os.makedirs(self.out)

    def drop_aside(self, aside):
        """Deletes what `clear_outputs(aside)` set aside, then waits out what the deletion costs others:
        on ext4 without a journal (this machine's root) a new file does not take the inode of one deleted
        less than 60 s ago (fs/ext4/ialloc.c: RECENTCY_MIN; 300 s more while its inode table block is
        dirty, hence the sync first) and scans past each such inode, so thousands of fresh deletions made
        every file creation after them slow (kernel: recently_deleted); and until the disk has had no
        request in flight (the TRIMs of `discard`) for 0.2 s, at most 60 s."""
        self.clear(aside)
        os.sync()
        log("  (waiting 65 s after deleting the case's outputs: see Bench.drop_aside)")
        time.sleep(65)
        st = os.stat(self.tmp)
        inflight = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/inflight"
        deadline, quiet_since = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            try:
                with open(inflight) as f:
                    busy = any(int(x) for x in f.read().split())
            except OSError:
                return
            now = time.monotonic()
            quiet_since = None if busy else (quiet_since or now)
            if quiet_since and now - quiet_since >= 0.2:
                return
            time.sleep(0.02)

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
            # Not serve's own hidden store of unfinished uploads: removing it under a running server
            # leaves it nowhere to put the next one.
            for fn in os.listdir(self.uploads):
                if not fn.startswith("."):
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

    def settle_page_cache(self, warm=()):
        """Writes back and drops the page cache, then reads `warm` into it again: every run starts with
        no dirty pages of an earlier one (whose writeback would land in its wall time) and its input
        cached. Needs root; without it the case says so once and runs as it is."""
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError as e:
            if not getattr(self, "_said_no_drop", False):
                log(f"  (cannot drop the page cache: {e.strerror}; dirty pages of earlier runs may weigh on later ones)")
                self._said_no_drop = True
        for path in warm:
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass

    def run_rounds(self, tools, servers=(), env=None, settle=None, set_aside=False):
        """tools: [(name, argv_fn(round), check_fn(round, verify) or None)]. Returns {name: [Run]}.
        servers: the peers whose CPU during each run is summed into srv CPU. settle: called before
        each run (after its outputs are cleared), e.g. settle_page_cache. set_aside: the outputs of
        each run are renamed aside and deleted after the last (cases of many small files)."""
        aside = os.path.join(self.tmp, "aside") if set_aside else None
        try:
            return self._run_rounds(tools, servers, env, settle, aside)
        finally:
            if aside:
                self.drop_aside(aside)

    def _run_rounds(self, tools, servers, env, settle, aside):
        runs = {name: [] for name, _, _ in tools}
        dead = set()
        for rnd in range(self.rounds()):
            for name, argv_fn, check in tools:
                if name in dead:
                    continue
                self.clear_outputs(aside)
                os.sync()
                if settle:
                    settle()
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
                    # A check may return the seconds the transfer itself took (the browser's upload,
                    # timed inside the page): that replaces the process's wall, kept as process_wall_s.
                    took = check(rnd, rnd == 0 or self.args.verify_all) if check else None
                    if isinstance(took, float):
                        run.extra["process_wall_s"], run.wall = run.wall, took
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

    def write_json(self, env, table=()):
        outdir = self.args.out_dir
        os.makedirs(outdir, exist_ok=True)
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        doc = {"environment": env, "ok": not self.failed, "cases": self.results, "table": list(table)}

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

