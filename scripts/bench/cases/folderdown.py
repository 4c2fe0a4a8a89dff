"""Case 17, `folder-down`: a folder down from nginx's autoindex (issue #46), the tree of case 14 (2,000 files:
1,500 × 4 KiB, 450 × 1 MiB, 50 × 40 MiB, four folders deep; --folder-scale scales it): `resumectl download
URL/ --parallel 8` against `wget -r -np -nH` (one file at a time: wget has no parallel downloads) and, when
Debian's rclone is installed, `rclone copy --transfers 8 :http:`. Every run is checked by its files, the
warm-up by every SHA-256. Target: resumectl ≤ 0.8× wget's wall time."""

import os
import subprocess

from .folder import make_tree, files_per_s
from ..util import Failure, human, log

NUMBER = 17
NAME = "folder-down"
FILES = set()  # the tree is made by the case
PEERS = {"nginx"}
COMMANDS = ("wget",)
PY_MODULES = ()


def check_tree(bench, out, tree, files, verify):
    """`out` holds exactly the files of `tree` (relative path → SHA-256), each by size (verify: by SHA-256)."""
    got = set()
    for folder, _, names in os.walk(out):
        got.update(os.path.relpath(os.path.join(folder, n), out) for n in names)
    if got != set(files):
        raise Failure(f"{out}: {len(got)} files, want {len(files)}; e.g. {sorted(got ^ set(files))[:3]}")
    for rel, digest in files.items():
        bench.check_file(os.path.join(out, rel), os.path.getsize(os.path.join(tree, rel)), digest, verify)


def run(bench):
    tree = os.path.join(bench.www, "foldertree")
    files, total = make_tree(tree, bench.args.folder_scale)
    url = bench.nginx.url("listed/foldertree/")
    out = bench.out
    b = bench.bin
    cmds = {
        "resumectl": [b, "download", "-q", url, "-o", out, "--parallel", "8"],
        "wget": ["wget", "-q", "-r", "-np", "-nH", "--cut-dirs=2", "-R", "index.html*", "-e", "robots=off", "-P", out, url],
    }
    if subprocess.run(["sh", "-c", "command -v rclone"], capture_output=True).returncode == 0:
        cmds["rclone"] = ["rclone", "copy", "--transfers", "8", "--http-url", url, ":http:", out]
    else:
        log("  rclone is not installed (apt-get install rclone): wget only")

    def check(rnd, verify):
        check_tree(bench, out, tree, files, verify)
    log(f"\n== case 17: a folder of {len(files)} files ({human(total)}) down from nginx's autoindex")
    runs = bench.run_rounds([(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()], servers=[bench.nginx], set_aside=True)
    bench.finish_case("17-folder-down", f"case 17: {len(files)} files ({human(total)}) from nginx's autoindex, "
                      "ratio = resumectl/tool (target: wall ≤ 0.8 against wget)", list(cmds), runs, "resumectl", total,
                      {"files": len(files), "commands": cmds}, [("files/s", "files_per_s", ".0f")], files_per_s(cmds, len(files)))
