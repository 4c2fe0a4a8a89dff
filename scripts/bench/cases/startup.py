"""Case 13, `startup`: `resumectl --version` --loop times (default 100) in a shell loop, against `curl --version`
the same way: what starting the program costs before it does anything (loading, relocations, the Swift
runtime, argument parsing)."""

from ..util import log

NUMBER = 13
NAME = "startup"
FILES = set()
PEERS = set()
COMMANDS = ("curl", "sh")  # on PATH besides resumectl
PY_MODULES = ()


def run(bench):
    n = bench.args.loop
    loop = lambda body: ["sh", "-c", f'i=0; while [ $i -lt {n} ]; do i=$((i+1)); {body} >/dev/null || exit 1; done']
    cmds = {
        "resumectl": loop(f'"{bench.bin}" --version'),
        "curl": loop("curl --version"),
    }
    tools = [(name, (lambda a: lambda rnd: a)(a), None) for name, a in cmds.items()]
    log(f"\n== case 13: --version, {n} in a shell loop")
    runs = bench.run_rounds(tools)

    def extra(summary):
        for t in cmds:
            w = summary[t]["wall_median_s"]
            summary[t]["ms_per_run"] = w / n * 1000 if w == w else float("nan")
    bench.finish_case("13-startup", f"case 13: --version × {n} in a shell loop, ratio = resumectl/tool",
                     list(cmds), runs, "resumectl", 0, {"loop": n, "commands": cmds},
                     [("ms/run", "ms_per_run", ".2f")], extra)
