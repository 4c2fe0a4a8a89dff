"""Case 12, `small`: one 4 KiB file downloaded --loop times (default 100) in a shell loop, a new process each
time, as a script that fetches file by file does: resumectl against `curl -o F && sync F` (durable when it
ends, as resumectl's output is) and plain curl, from nginx on loopback; and resumectl --json, whose events
name the id, so that it writes its token before `started` (6 syncs instead of 2). What it measures is the
fixed cost of one transfer: start-up, the token and its record, the syncs (docs/benchmarks.md, "A small download")."""

import os

from ..util import Failure, KiB, human, log

NUMBER = 12
NAME = "small"
FILES = {"small.bin"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("curl", "sh", "sync")  # on PATH besides resumectl and nginx
PY_MODULES = ()

SIZE = 4 * KiB


def run(bench):
    url = bench.nginx.url("small.bin")
    n = bench.args.loop
    out = bench.out
    # The loop is the same for every tool: sh runs it, the output names differ per iteration, and a failed
    # run stops the loop (exit status 1 fails the round).
    loop = lambda body: ["sh", "-c", f'i=0; while [ $i -lt {n} ]; do i=$((i+1)); {body} || exit 1; done']
    cmds = {
        "resumectl": loop(f'"{bench.bin}" download -q "{url}" -o "{out}/f$i" >/dev/null'),
        "resumectl --json": loop(f'"{bench.bin}" download --json "{url}" -o "{out}/f$i" >/dev/null'),
        "curl && sync": loop(f'curl -s -o "{out}/f$i" "{url}" && sync "{out}/f$i"'),
        "curl": loop(f'curl -s -o "{out}/f$i" "{url}"'),
    }

    def check(rnd, verify):
        for i in (1, n):
            bench.check_file(os.path.join(out, f"f{i}"), SIZE, bench.files["small.bin"], verify)
        got = len(os.listdir(out))
        if got != n:
            raise Failure(f"{out}: {got} files, want {n}")
    tools = [(name, (lambda a: lambda rnd: a)(a), check) for name, a in cmds.items()]
    log(f"\n== case 12: {human(SIZE)} download, {n} in a shell loop (a process each)")
    runs = bench.run_rounds(tools, servers=[bench.nginx], set_aside=True)

    def extra(summary):
        for t in cmds:
            w = summary[t]["wall_median_s"]
            summary[t]["ms_per_file"] = w / n * 1000 if w == w else float("nan")
    bench.finish_case("12-small-download", f"case 12: {human(SIZE)} download × {n} in a shell loop, "
                     "ratio = resumectl/tool", list(cmds), runs, "resumectl", SIZE * n,
                     {"url": url, "loop": n, "commands": cmds}, [("ms/file", "ms_per_file", ".2f")], extra)
