"""Case 7, `s3`: S3 multipart upload of --s3-size to moto (SigV4 checked): resumectl against `aws s3 cp` with the
same part size (8 MiB) and concurrency (4); then (7b) each killed at 50 % through a counting proxy
and run again, counting the bytes sent twice."""

import hashlib
import os
import signal
import subprocess
import sys
import time

from ..runner import spawn_and_wait
from ..util import MiB, Failure, human, log

NUMBER = 7
NAME = "s3"
FILES = {"s3.bin"}  # made once by the harness before any case
PEERS = {"moto"}  # started once by peers.Peers
COMMANDS = ()  # on PATH besides resumectl and nginx
PY_MODULES = (("moto", "moto[server] (make deps)"), ("flask", "moto[server] (make deps)"),
              ("boto3", "boto3 (make deps)"), ("awscli", "awscli (pip install awscli)"))


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


def configure_aws(env):
    """The AWS CLI's settings of every S3 case: 8 MiB parts, 4 at a time (as resumectl's defaults)."""
    for setting, value in (("default.s3.multipart_chunksize", "8MB"), ("default.s3.max_concurrent_requests", "4")):
        subprocess.run([sys.executable, "-m", "awscli", "configure", "set", setting, value], env=env, check=True)


def s3_env(bench):
    """The environment of both S3 clients: the server's key, us-east-1, and an AWS CLI config of
    this run only (never the user's ~/.aws)."""
    aws = os.path.join(bench.tmp, "aws")
    os.makedirs(aws, exist_ok=True)
    env = dict(bench.env, AWS_CONFIG_FILE=os.path.join(aws, "config"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(aws, "credentials"),
               AWS_ACCESS_KEY_ID=bench.moto.access_key, AWS_SECRET_ACCESS_KEY=bench.moto.secret_key,
               AWS_REGION="us-east-1", AWS_DEFAULT_REGION="us-east-1")
    for k in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
              "AWS_ENDPOINT_URL_S3"):
        env.pop(k, None)
    return env


def run(bench):
    src = os.path.join(bench.www, "s3.bin")
    size, digest = bench.s3_size, bench.files["s3.bin"]
    env = s3_env(bench)
    configure_aws(env)
    want_etag = multipart_etag(src, 8 * MiB)
    ep = bench.moto.endpoint
    aws = [sys.executable, "-m", "awscli", "s3", "cp", "--only-show-errors"]
    b = bench.bin
    cmds = {}
    if bench.has_s3:
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
                head = bench.moto.tool("head", "bench", key)
                if head["size"] != size:
                    raise Failure(f"s3://bench/{key}: {head['size']} bytes, want {size}")
                if head["etag"] != want_etag:
                    raise Failure(f"s3://bench/{key}: ETag {head['etag']}, want {want_etag} (8 MiB parts)")
                if verify:
                    got = bench.moto.tool("sha256", "bench", key)
                    if got != digest:
                        raise Failure(f"s3://bench/{key}: sha256 {got}, want {digest}")
            finally:
                s3_clean(bench)
        return f
    tools = [(n, argv(n), check(n)) for n in names]
    log(f"\n== case 7: {human(size)} S3 multipart upload to moto (SigV4 checked), 8 MiB parts, 4 at a time")
    runs = bench.run_rounds(tools, servers=[bench.moto], env=env)
    subject = "resumectl" if bench.has_s3 else "aws s3 cp"
    bench.finish_case("7-s3-upload", f"case 7: {human(size)} S3 multipart upload to moto, 8 MiB parts, "
                     "4 in parallel, ratio = resumectl/tool (targets: CPU ≤ 0.35, wall ≤ 1.0, RSS < 32 MiB)",
                     names, runs, subject, size,
                     {"endpoint": ep, "aws_config": {"multipart_chunksize": "8MB", "max_concurrent_requests": 4},
                      "commands": {n: cmds[n]("KEY") for n in names}})
    kill_and_rerun(bench, src, size, want_etag, env, names)


def s3_clean(bench):
    """Deletes every object and aborts every multipart upload of the bench bucket."""
    for key in bench.moto.tool("keys", "bench"):
        bench.moto.tool("delete", "bench", key)
    for u in bench.moto.tool("uploads", "bench"):
        bench.moto.tool("abort", "bench", u["key"], u["uploadId"])


def kill_and_rerun(bench, src, size, want_etag, env, names):
    """Each tool killed once half the file crossed the proxy, then run again to the end."""
    log(f"\n== case 7b: {human(size)} S3 upload killed (SIGKILL) at 50 %, then run again")
    rows = {}
    for name in names:
        proxy = bench.peers.counting_proxy(bench.moto.port)
        try:
            rows[name] = kill_once(bench, name, src, size, want_etag, env, proxy)
        except Failure as e:
            bench.failed = True
            rows[name] = {"ok": False, "error": str(e)}
            log(f"  FAIL {name}: {e}")
        finally:
            proxy.stop()
            s3_clean(bench)
    log(f"\ncase 7b: sent twice = bytes through the proxy over both runs − {human(size)} (request heads "
        "included); target for resumectl: ≤ one part per connection (4 × 8 MiB)")
    log(f"{'tool':<12}  {'killed at MiB':>13}  {'2nd run s':>9}  {'2nd run MiB':>11}  {'sent twice MiB':>14}")
    for name, row in rows.items():
        if row.get("ok"):
            log(f"{name:<12}  {row['killed_at_bytes'] / MiB:>13.1f}  {row['second_wall_s']:>9.2f}  "
                f"{row['second_run_bytes'] / MiB:>11.1f}  {row['sent_twice_bytes'] / MiB:>14.1f}")
        else:
            log(f"{name:<12}  FAILED: {row.get('error')}")
    bench.results["7b-s3-kill"] = {"title": "case 7b: S3 upload killed at 50 %, run again", "bytes": size,
                                  "rows": rows}


def kill_once(bench, name, src, size, want_etag, env, proxy):
    bench.clear_state()
    key = f"kill-{name.split()[0]}.bin"
    aws = [sys.executable, "-m", "awscli", "s3", "cp", "--only-show-errors", src, f"s3://bench/{key}",
           "--endpoint-url", proxy.url]
    first = ([bench.bin, "upload", "-q", "--part-size", "8M", "--parallel", "4", src, f"s3://bench/{key}",
              "--endpoint-url", proxy.url] if name == "resumectl" else aws)
    killed = {}

    def killer(pid, t0):
        end = time.monotonic() + bench.timeout
        while proxy.sent() < size // 2 and time.monotonic() < end:
            time.sleep(0.005)
        killed["bytes"] = proxy.sent()
        os.kill(pid, signal.SIGKILL)
    r1 = spawn_and_wait(first, env=env, logdir=bench.logs, timeout=bench.timeout, on_spawn=killer)
    if r1["rc"] != -signal.SIGKILL:
        raise Failure(f"first run: exit status {r1['rc']}, want SIGKILL at 50 %: {r1['stderr'][-300:]}")
    if name == "resumectl":
        listing = subprocess.run([bench.bin, "list"], capture_output=True, text=True, env=env)
        rows = [l.split() for l in listing.stdout.splitlines() if l.strip()]
        if len(rows) != 1:
            raise Failure(f"resumectl list shows {len(rows)} tokens: {listing.stdout!r} {listing.stderr!r}")
        second = [bench.bin, "resume", rows[0][0], "-q"]
    else:
        second = aws
    before = proxy.sent()
    r2 = spawn_and_wait(second, env=env, logdir=bench.logs, timeout=bench.timeout, servers=[bench.moto])
    if r2["rc"] != 0:
        raise Failure(f"second run: exit status {r2['rc']}: {r2['stderr'][-300:]}")
    head = bench.moto.tool("head", "bench", key)
    if head["size"] != size or head["etag"] != want_etag:
        raise Failure(f"s3://bench/{key}: {head}, want size {size} and ETag {want_etag}")
    total = proxy.sent()
    return {"ok": True, "killed_at_bytes": killed.get("bytes"), "first_run_bytes": before,
            "second_run_bytes": total - before, "second_wall_s": r2["wall"], "second_cpu_s": r2["cpu"],
            "second_peak_rss_kib": r2["rss"], "sent_twice_bytes": total - size,
            "connections": proxy.connections, "commands": [first, second]}
