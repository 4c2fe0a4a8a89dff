"""Case 14, `folder`: a folder as one upload (issue #32). The tree: 2,000 files (1,500 × 4 KiB, 450 × 1 MiB,
50 × 40 MiB, four folders deep; --folder-scale scales the counts, 0.1 with --quick). (14a) to moto (SigV4
checked): `resumectl upload DIR s3://bench/P/ --parallel 8` against `aws s3 cp --recursive` and `aws s3 sync`
(max_concurrent_requests 8, 8 MiB parts and threshold, as resumectl's). (14b) to `resumectl serve`:
resumectl against curl -T of every file (-Z, 8 at a time) and, when Debian's rclone is installed,
`rclone copy --transfers 8` to `rclone serve webdav`. Names keep to what moto's SigV4 check takes
(spaces, #, ~, _, -, .). Every run is checked by its file count, the warm-up by every SHA-256."""

import os
import socket
import subprocess
import sys
import time
from urllib.parse import quote

from .s3 import s3_env
from ..util import MiB, KiB, Failure, human, log, make_random_file, stop_process

NUMBER = 14
NAME = "folder"
FILES = set()  # the tree is made by the case (its size follows --folder-scale)
PEERS = {"moto", "serve"}
COMMANDS = ("curl",)
PY_MODULES = (("boto3", "boto3 (make deps)"), ("awscli", "awscli (pip install awscli)"))
NAMES = ["a b", "#hash", "t~x", "u_v", "w-x", "y.z"]


def make_tree(root, scale):
    """relative path → SHA-256, and the bytes in all."""
    files, total, n = {}, 0, 0
    for count, size in ((1500, 4 * KiB), (450, MiB), (50, 40 * MiB)):
        for _ in range(max(1, int(count * scale))):
            folders = [f"{NAMES[(d + n) % len(NAMES)]} {d % 3}" for d in range(n % 5)]
            rel = "/".join(folders + [f"{NAMES[n % len(NAMES)]} {n}.bin"])
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            files[rel] = make_random_file(os.path.join(root, rel), size)
            total += size
            n += 1
    return files, total


def run(bench):
    tree = os.path.join(bench.tmp, "tree")
    scale = bench.args.folder_scale
    files, total = make_tree(tree, scale)
    log(f"\n== case 14: a folder of {len(files)} files, {human(total)}")
    to_moto(bench, tree, files, total)
    to_serve(bench, tree, files, total)


def to_moto(bench, tree, files, total):
    env = s3_env(bench)
    for setting, value in (("default.s3.multipart_chunksize", "8MB"), ("default.s3.multipart_threshold", "8MB"),
                           ("default.s3.max_concurrent_requests", "8")):
        subprocess.run([sys.executable, "-m", "awscli", "configure", "set", setting, value], env=env, check=True)
    ep, b = bench.moto.endpoint, bench.bin
    aws = [sys.executable, "-m", "awscli", "s3"]
    # A bucket per run, the tree at its root.
    cmds = {
        "resumectl": lambda bk: [b, "upload", "-q", tree, f"s3://{bk}/", "--endpoint-url", ep, "--parallel", "8"],
        "aws s3 cp": lambda bk: aws + ["cp", "--recursive", "--only-show-errors", tree, f"s3://{bk}/", "--endpoint-url", ep],
        "aws s3 sync": lambda bk: aws + ["sync", "--only-show-errors", tree, f"s3://{bk}/", "--endpoint-url", ep],
    }
    buckets = {}

    def argv(name):
        def f(rnd):
            buckets[name] = f"folder-{name.replace(' ', '-')}-{rnd}"
            bench.moto.tool("create-bucket", buckets[name])
            bench.clear_state()
            return cmds[name](buckets[name])
        return f

    def check(name):
        def f(rnd, verify):
            bk = buckets[name]
            try:
                if verify:
                    got = bench.moto.tool("digests", bk)
                    if got != files:
                        raise Failure(f"s3://{bk}/: {len(got)} objects, {sum(got.get(k) == v for k, v in files.items())} "
                                      f"equal of {len(files)}")
                else:
                    keys = bench.moto.tool("keys", bk)
                    if len(keys) != len(files):
                        raise Failure(f"s3://{bk}/: {len(keys)} objects, want {len(files)}")
            finally:
                bench.moto.tool("clear", bk)
        return f
    names = list(cmds)
    runs = bench.run_rounds([(n, argv(n), check(n)) for n in names], servers=[bench.moto], env=env)
    bench.finish_case("14a-folder-s3", f"case 14a: {len(files)} files ({human(total)}) to moto, 8 at a time, "
                      "ratio = resumectl/tool (targets: wall ≤ 0.8, CPU ≤ 0.5 against aws)", names, runs, "resumectl", total,
                      {"files": len(files), "commands": {n: cmds[n]("BUCKET") for n in names}},
                      [("files/s", "files_per_s", ".0f")], files_per_s(cmds, len(files)))


def to_serve(bench, tree, files, total):
    b = bench.bin
    cfg = os.path.join(bench.tmp, "curl-folder.cfg")
    cmds = {"resumectl": lambda p: [b, "upload", "-q", tree, bench.peer.url(p) + "/", "--parallel", "8"],
            "curl -T": lambda p: ["curl", "-sS", "-f", "-Z", "--parallel-max", "8", "-K", cfg]}
    rclone = None
    if subprocess.run(["sh", "-c", "command -v rclone"], capture_output=True).returncode == 0:
        rclone = start_rclone(bench)
        cmds["rclone"] = lambda p: ["rclone", "copy", "--transfers", "8", "--webdav-url", rclone[1], tree, f":webdav:{p}"]
    else:
        log("  rclone is not installed (apt-get install rclone): curl only")
    folders = {}

    def argv(name):
        def f(rnd):
            folders[name] = f"{name.split()[0]}-{rnd}"
            bench.clear_state()
            if name == "curl -T":
                with open(cfg, "w") as out:
                    for rel in files:
                        url = bench.peer.url(folders[name] + "/" + quote(rel))
                        out.write(f'upload-file = "{os.path.join(tree, rel)}"\nurl = "{url}"\n')
            return cmds[name](folders[name])
        return f

    def check(name):
        def f(rnd, verify):
            root = os.path.join(rclone[2] if name == "rclone" else bench.uploads, folders[name])
            try:
                for rel, digest in files.items():
                    bench.check_file(os.path.join(root, rel), os.path.getsize(os.path.join(tree, rel)), digest, verify)
            finally:
                bench.clear(root)
        return f
    names = list(cmds)
    try:
        runs = bench.run_rounds([(n, argv(n), check(n)) for n in names], servers=[bench.peer])
    finally:
        if rclone:
            stop_process(rclone[0])
    bench.finish_case("14b-folder-serve", f"case 14b: {len(files)} files ({human(total)}) to resumectl serve, 8 at a time, "
                      "ratio = resumectl/tool", names, runs, "resumectl", total,
                      {"files": len(files), "commands": {n: cmds[n]("P") for n in names}},
                      [("files/s", "files_per_s", ".0f")], files_per_s(cmds, len(files)))


def start_rclone(bench):
    """`rclone serve webdav` of a folder of its own on a free port: (process, URL, folder)."""
    folder = os.path.join(bench.tmp, "rclone")
    os.makedirs(folder, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_file = open(os.path.join(bench.logs, "rclone.log"), "ab")
    proc = subprocess.Popen(["rclone", "serve", "webdav", folder, "--addr", f"127.0.0.1:{port}"], stdout=log_file,
                            stderr=log_file, start_new_session=True)
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/", folder
        time.sleep(0.1)
    stop_process(proc)
    raise Failure("rclone serve webdav did not listen")


def files_per_s(cmds, count):
    def extra(summary):
        for t in cmds:
            w = summary[t]["wall_median_s"]
            summary[t]["files_per_s"] = count / w if w == w and w > 0 else float("nan")
    return extra
