"""Case 1, `download`: 1 GiB (--size) download to disk: resumectl against curl, wget and aria2c -x1, from nginx."""

import os

from ..util import human, log

NUMBER = 1
NAME = "download"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("curl", "wget", "aria2c")  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    url = bench.nginx.url("big.bin")
    out = os.path.join(bench.out, "big.bin")
    b = bench.bin
    cmds = {
        "resumectl": [b, "download", "-q", "--force", url, "-o", out],
        "curl": ["curl", "-s", "-o", out, url],
        "wget": ["wget", "-q", "-O", out, url],
        "aria2c": ["aria2c", "-q", "-x1", "--allow-overwrite=true", "--auto-file-renaming=false",
                   "-d", bench.out, "-o", "big.bin", url],
    }
    check = lambda rnd, verify: bench.check_file(out, bench.size, bench.files["big.bin"], verify)
    tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
    log(f"\n== case 1: {human(bench.size)} download to disk")
    runs = bench.run_rounds(tools, servers=[bench.nginx])
    bench.finish_case("1-download", f"case 1: {human(bench.size)} download to disk, "
                     f"{bench.args.pairs} rounds after a warm-up",
                     list(cmds), runs, "resumectl", bench.size, {"url": url, "commands": cmds})
