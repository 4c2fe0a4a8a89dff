"""Case 1, `download`: 1 GiB (--size) download to disk: resumectl against curl, wget and aria2c -x1, from nginx.

Its limit is the disk's own sequential write of the same size into the same folder, durable when it
ends like resumectl's download (`dd conv=fdatasync`), timed after the tools' rounds, as many times
(a warm-up, then --pairs), each after the outputs are removed and os.sync(); the median is the limit,
and resumectl's median wall over it is the ratio printed with it."""

import os

from ..runner import spawn_and_wait
from ..table import fmt, med
from ..util import MiB, human, log

NUMBER = 1
NAME = "download"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("curl", "wget", "aria2c", "dd")  # on PATH besides resumectl and nginx
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
    disk_limit(bench, out)


def disk_limit(bench, out, case="1-download", size=None, what="the disk's own write"):
    """dd of `size` (--size) zeros to out with conv=fdatasync, a warm-up then --pairs runs: the fastest a
    tool that leaves that many bytes durable on this disk can end. Its median becomes `case`'s limit."""
    size = size or bench.size
    argv = ["dd", "if=/dev/zero", f"of={out}", "bs=1M", f"count={size}", "iflag=count_bytes",
            "conv=fdatasync", "status=none"]
    walls = []
    for rnd in range(bench.rounds()):
        bench.clear_outputs()
        os.sync()
        res = spawn_and_wait(argv, env=bench.env, logdir=bench.logs, timeout=bench.timeout)
        if res["timed_out"] or res["rc"] != 0 or not os.path.isfile(out) or os.path.getsize(out) != size:
            bench.failed = True
            log(f"  FAIL dd (round {rnd}): exit status {res['rc']}: {res['stderr'][-300:]}")
            return
        if rnd > 0:
            walls.append(res["wall"])
    bench.clear_outputs()
    result = bench.results[case]
    subject = result["summary"]["resumectl"]["wall_median_s"]
    limit = {"what": "dd conv=fdatasync", "command": argv, "wall_median_s": med(walls),
             "wall_min_s": min(walls), "wall_max_s": max(walls), "walls_s": walls,
             "mib_per_s": size / MiB / med(walls), "subject_ratio": subject / med(walls)}
    result["limit"] = limit
    log(f"limit: {what} of {human(size)} with fdatasync (dd conv=fdatasync, {out}): "
        f"{fmt(limit['wall_median_s'], '.3f')} s ({fmt(limit['wall_min_s'], '.2f')}–{fmt(limit['wall_max_s'], '.2f')}), "
        f"{fmt(limit['mib_per_s'], '.1f')} MiB/s; resumectl wall / limit = {fmt(limit['subject_ratio'], '.3f')}")
