"""Case 15, `s3serve`: `resumectl serve --store s3://bench/serve/` in front of moto (SigV4 checked).
15a: an --s3-size upload by `resumectl upload` through serve (IETF draft; serve stores it as an S3
multipart upload in 8 MiB parts) next to `aws s3 cp` of the same file straight to moto (8 MiB parts, 4 at
a time). Target: wall ≤ 1.3× aws s3 cp. 15b: a ranged GET of the whole object through serve (curl -r,
serve streams moto's ranged GET) next to the same ranged GET signed straight to moto (curl --aws-sigv4)."""

import os
import subprocess
import sys

from ..peers import ServePeer
from ..util import Failure, human, log
from .s3 import configure_aws, s3_clean, s3_env

NUMBER = 15
NAME = "s3serve"
FILES = {"s3.bin"}  # made once by the harness before any case
PEERS = {"moto"}  # started once by peers.Peers
COMMANDS = ("curl",)  # on PATH besides resumectl and nginx
PY_MODULES = (("moto", "moto[server] (make deps)"), ("boto3", "boto3 (make deps)"),
              ("awscli", "awscli (pip install awscli)"))


def run(bench):
    src = os.path.join(bench.www, "s3.bin")
    size, digest = bench.s3_size, bench.files["s3.bin"]
    env = s3_env(bench)
    configure_aws(env)
    ep = bench.moto.endpoint
    serve = ServePeer(bench.bin, bench.tmp, bench.logs, env,
                      ["--store", "s3://bench/serve/", "--endpoint-url", ep], name="serve-s3").start()
    try:
        upload(bench, serve, src, size, digest, env, ep)
        download(bench, serve, src, size, digest, env, ep)
    finally:
        serve.stop()
        s3_clean(bench)


def upload(bench, serve, src, size, digest, env, ep):
    aws = [sys.executable, "-m", "awscli", "s3", "cp", "--only-show-errors"]
    cmds = {"resumectl → serve": lambda rnd: [bench.bin, "upload", "-q", src, serve.url(f"up-{rnd}.bin")],
            "aws s3 cp": lambda rnd: aws + [src, f"s3://bench/serve/aws-{rnd}.bin", "--endpoint-url", ep]}
    keys = {"resumectl → serve": "serve/up-{}.bin", "aws s3 cp": "serve/aws-{}.bin"}

    def check(name):
        def f(rnd, verify):
            key = keys[name].format(rnd)
            try:
                head = bench.moto.tool("head", "bench", key)
                if head["size"] != size:
                    raise Failure(f"s3://bench/{key}: {head['size']} bytes, want {size}")
                if verify and bench.moto.tool("sha256", "bench", key) != digest:
                    raise Failure(f"s3://bench/{key}: wrong sha256")
            finally:
                s3_clean(bench)
        return f
    tools = [(n, cmds[n], check(n)) for n in cmds]
    log(f"\n== case 15a: {human(size)} upload through resumectl serve --store s3:// against aws s3 cp, both to moto")
    runs = bench.run_rounds(tools, servers=[bench.moto, serve], env=env)
    bench.finish_case("15a-s3serve-upload", f"case 15a: {human(size)} upload to moto through one serve --store s3:// "
                      "(resumectl upload, IETF) vs aws s3 cp straight to moto, 8 MiB parts (target: wall ≤ 1.3×; "
                      "srv CPU = moto + serve)", list(cmds), runs, "resumectl → serve", size,
                      {"endpoint": ep, "commands": {n: cmds[n]("N") for n in cmds}})


def download(bench, serve, src, size, digest, env, ep):
    key = "serve/get.bin"
    subprocess.run([sys.executable, "-m", "awscli", "s3", "cp", "--only-show-errors", src, f"s3://bench/{key}",
                    "--endpoint-url", ep], env=env, check=True)
    span = f"0-{size - 1}"
    flags = ["-sS", "--http1.1", "-o", "/dev/null", "-w", "%{size_download}", "-r", span]
    cmds = {"curl ← serve": ["curl"] + flags + [serve.url("get.bin")],
            "curl ← moto": ["curl"] + flags + ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                                               f"{bench.moto.access_key}:{bench.moto.secret_key}",
                                               "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", f"{ep}/bench/{key}"]}
    tools = [(n, (lambda a: lambda rnd: a)(a), None) for n, a in cmds.items()]
    log(f"\n== case 15b: {human(size)} ranged GET through resumectl serve --store s3:// against the same GET from moto")
    runs = bench.run_rounds(tools, servers=[bench.moto, serve], env=env)
    bench.finish_case("15b-s3serve-get", f"case 15b: {human(size)} ranged GET (curl -r {span}) through serve "
                      "--store s3:// vs signed straight to moto; srv CPU = moto + serve", list(cmds), runs,
                      "curl ← serve", size, {"endpoint": ep, "commands": {n: a[:3] + ["…"] for n, a in cmds.items()}})
