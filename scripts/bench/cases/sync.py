"""Case 19, `sync`: keeping a tree equal once 10 % of it changed (issue #55). The tree: 2,000 files (1,900 × 4 KiB,
100 × 1 MiB, four folders deep, case 14's names; --folder-scale scales the counts); its second version has every
tenth file rewritten (same size, new content, a newer time), the rest hard links of the first. Each round gives
every tool a target of its own, filled by that tool's own sync of the first version (not timed: each keeps the
times it keeps, rclone's in its metadata), then times its sync of the second version through a counting proxy
(bytes each way and requests by method: peers.CountingProxy). (19a) up to moto (SigV4 checked): `resumectl sync
--delete` against `rclone sync` and `aws s3 sync --delete`; (19b) down from nginx's HTML autoindex: `resumectl
sync --delete` against `rclone sync --http-url`. Every tool with its defaults (resumectl 4 files at once, rclone
4 transfers and 8 checkers, the AWS CLI 10 requests). Every run is checked by its files, the warm-up by every
SHA-256."""

import os
import subprocess
import sys
import time

from .folder import NAMES
from .folderdown import check_tree
from .s3 import s3_env
from ..table import med
from ..util import KiB, MiB, Failure, human, log, make_random_file

NUMBER = 19
NAME = "sync"
FILES = set()  # the trees are made by the case (their size follows --folder-scale)
PEERS = {"moto", "nginx"}
COMMANDS = ("rclone",)
PY_MODULES = (("boto3", "boto3 (make deps)"), ("awscli", "awscli (pip install awscli)"))


def make_trees(www, scale):
    """The two versions under www/sync-v1 and www/sync-v2: (v2's relative path → SHA-256, the changed paths,
    the changed bytes, the bytes in all). The first version's files are two hours old."""
    v1, v2 = os.path.join(www, "sync-v1"), os.path.join(www, "sync-v2")
    files, changed, changed_bytes, total, n = {}, [], 0, 0, 0
    old = time.time() - 7200
    for count, size in ((1900, 4 * KiB), (100, MiB)):
        for _ in range(max(1, int(count * scale))):
            folders = [f"{NAMES[(d + n) % len(NAMES)]} {d % 3}" for d in range(n % 5)]
            rel = "/".join(folders + [f"{NAMES[n % len(NAMES)]} {n}.bin"])
            for root in (v1, v2):
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            files[rel] = make_random_file(os.path.join(v1, rel), size)
            os.utime(os.path.join(v1, rel), (old, old))
            if n % 10 == 3:
                files[rel] = make_random_file(os.path.join(v2, rel), size)
                changed.append(rel)
                changed_bytes += size
            else:
                os.link(os.path.join(v1, rel), os.path.join(v2, rel))
            total += size
            n += 1
    return v1, v2, files, changed, changed_bytes, total


def run(bench):
    v1, v2, files, changed, changed_bytes, total = make_trees(bench.www, bench.args.folder_scale)
    log(f"\n== case 19: a tree of {len(files)} files ({human(total)}), {len(changed)} changed "
        f"({human(changed_bytes)}), synced again")
    trees = (v1, v2, files, changed, changed_bytes, total)
    to_moto(bench, trees)
    from_nginx(bench, trees)


def touch(v2, changed):
    """The changed files get a time later than any copy made so far (S3 and HTTP times are whole seconds)."""
    time.sleep(1.1)
    now = time.time()
    for rel in changed:
        os.utime(os.path.join(v2, rel), (now, now))


def first_sync(argv, env):
    """The tool's own first sync (not timed); None, or a command that fails the timed run with why."""
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode == 0:
        return None
    why = f"the first sync exited {r.returncode}: {r.stderr.strip()[-500:]}"
    return ["sh", "-c", 'echo "$0" >&2; exit 1', why]


def proxy_counts(proxy):
    return {"requests": sum(proxy.requests().values()), "methods": proxy.requests(), "sent_bytes": proxy.sent(),
            "received_bytes": proxy.received()}


def counted(names, runs, stats):
    """Puts each run's proxy counts into its extra fields; the summary gets their medians."""
    for n in names:
        for r in runs[n]:
            r.extra.update(stats.get((n, r.round), {}))

    def extra(summary):
        for n in names:
            timed = [r for r in runs[n] if r.round > 0 and r.ok]
            summary[n]["requests"] = med([r.extra.get("requests", float("nan")) for r in timed])
            summary[n]["sent_mib"] = med([r.extra.get("sent_bytes", float("nan")) / MiB for r in timed])
            summary[n]["received_mib"] = med([r.extra.get("received_bytes", float("nan")) / MiB for r in timed])
        for n in names:
            last = next((r for r in reversed(runs[n]) if r.ok), None)
            if last:
                log(f"  {n}: requests of round {last.round} by method: {last.extra.get('methods')}")
    return extra


def finish(bench, key, where, trees, names, runs, stats, commands):
    _, _, files, changed, changed_bytes, total = trees
    bench.finish_case(key, f"case {key[:3]}: {len(files)} files ({human(total)}) synced again {where} after "
                      f"{len(changed)} changed ({human(changed_bytes)}), ratio = resumectl/tool "
                      "(target: wall ≤ 1.0 against rclone)", names, runs, "resumectl", changed_bytes,
                      {"files": len(files), "changed": len(changed), "commands": commands},
                      COLUMNS, counted(names, runs, stats))


COLUMNS = [("requests", "requests", ".0f"), ("sent MiB", "sent_mib", ".1f"), ("recv MiB", "received_mib", ".1f")]


def to_moto(bench, trees):
    v1, v2, files, changed, changed_bytes, total = trees
    env = s3_env(bench)
    env.pop("AWS_CA_BUNDLE", None)  # rclone's S3 client cannot load one into its transport (and HTTP needs none)
    proxy = bench.peers.counting_proxy(bench.moto.port)
    for remote, endpoint in (("MOTO", bench.moto.endpoint), ("MOTOPX", proxy.url)):
        env.update({f"RCLONE_CONFIG_{remote}_{k}": v for k, v in (
            ("TYPE", "s3"), ("PROVIDER", "Other"), ("ACCESS_KEY_ID", bench.moto.access_key),
            ("SECRET_ACCESS_KEY", bench.moto.secret_key), ("ENDPOINT", endpoint), ("REGION", "us-east-1"),
            ("FORCE_PATH_STYLE", "true"))})
    b = bench.bin
    aws = [sys.executable, "-m", "awscli", "s3", "sync", "--only-show-errors", "--delete"]
    cmds = {
        "resumectl": lambda src, bk, ep: [b, "sync", "-q", src, f"s3://{bk}/", "--delete", "--endpoint-url", ep],
        "rclone sync": lambda src, bk, ep: ["rclone", "sync", "-q", src,
                                            f"{'MOTOPX' if ep == proxy.url else 'MOTO'}:{bk}"],
        "aws s3 sync": lambda src, bk, ep: aws + [src, f"s3://{bk}/", "--endpoint-url", ep],
    }
    buckets, stats = {}, {}

    def argv(name):
        def f(rnd):
            bk = buckets[name] = f"sync-{name.split()[0]}-{rnd}"
            bench.moto.tool("create-bucket", bk)
            failed = first_sync(cmds[name](v1, bk, bench.moto.endpoint), env)
            if failed:
                return failed
            touch(v2, changed)
            proxy.reset()
            return cmds[name](v2, bk, proxy.url)
        return f

    def check(name):
        def f(rnd, verify):
            bk = buckets[name]
            stats[(name, rnd)] = proxy_counts(proxy)
            try:
                if verify:
                    got = bench.moto.tool("digests", bk)
                    if got != files:
                        raise Failure(f"s3://{bk}/: {len(got)} objects, "
                                      f"{sum(got.get(k) == v for k, v in files.items())} equal of {len(files)}")
                elif len(bench.moto.tool("keys", bk)) != len(files):
                    raise Failure(f"s3://{bk}/: not {len(files)} objects")
                if proxy.sent() < changed_bytes:
                    raise Failure(f"{proxy.sent()} bytes sent, fewer than the {changed_bytes} changed")
            finally:
                bench.moto.tool("clear", bk)
        return f
    names = list(cmds)
    try:
        runs = bench.run_rounds([(n, argv(n), check(n)) for n in names], servers=[bench.moto], env=env)
    finally:
        proxy.stop()
    finish(bench, "19a-sync-s3", "to moto", trees, names, runs, stats,
           {n: cmds[n]("SRC", "BUCKET", "PROXY") for n in names})


def from_nginx(bench, trees):
    v1, v2, files, changed, changed_bytes, total = trees
    proxy = bench.peers.counting_proxy(bench.nginx.port)
    b = bench.bin
    cmds = {
        "resumectl": lambda url, dst: [b, "sync", "-q", url, dst, "--delete"],
        "rclone sync": lambda url, dst: ["rclone", "sync", "-q", "--http-url", url, ":http:", dst],
    }
    stats = {}

    def dest(name):
        return os.path.join(bench.out, name.split()[0])

    def argv(name):
        def f(rnd):
            failed = first_sync(cmds[name](bench.nginx.url("listed/sync-v1/"), dest(name)), bench.env)
            if failed:
                return failed
            touch(v2, changed)
            proxy.reset()
            return cmds[name](proxy.url + "/listed/sync-v2/", dest(name))
        return f

    def check(name):
        def f(rnd, verify):
            stats[(name, rnd)] = proxy_counts(proxy)
            check_tree(bench, dest(name), v2, files, verify)
            if proxy.received() < changed_bytes:
                raise Failure(f"{proxy.received()} bytes received, fewer than the {changed_bytes} changed")
        return f
    names = list(cmds)
    try:
        runs = bench.run_rounds([(n, argv(n), check(n)) for n in names], servers=[bench.nginx], set_aside=True)
    finally:
        proxy.stop()
    finish(bench, "19b-sync-http", "from nginx's autoindex", trees, names, runs, stats,
           {n: cmds[n]("URL", "DIR") for n in names})
