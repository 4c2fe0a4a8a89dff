"""Case 9, `stdout`: --size downloaded to stdout into sha256sum: resumectl download -o - against curl -s."""

import os

from ..util import Failure, human, log

NUMBER = 9
NAME = "stdout"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("curl",)  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    """The big file downloaded to stdout into sha256sum: `resumectl download -o -` against `curl -s`."""
    url = bench.nginx.url("big.bin")
    digest = bench.files["big.bin"]
    out = os.path.join(bench.out, "sum")
    cmds = {
        "resumectl": ["sh", "-c", '"$1" download -q --state-dir "$2" "$3" -o - | sha256sum > "$4"', "stdout-download",
                      bench.bin, bench.state, url, out],
        "curl": ["sh", "-c", 'curl -s "$1" | sha256sum > "$2"', "stdout-download", url, out],
    }

    def check(rnd, verify):
        with open(out) as f:
            got = f.read().split()[0]
        if got != digest:
            raise Failure(f"sha256 of the piped body is {got}, want {digest}")
    tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
    log(f"\n== case 9: {human(bench.size)} download to stdout into sha256sum")
    runs = bench.run_rounds(tools, servers=[bench.nginx])
    bench.finish_case("9-stdout-download", f"case 9: {human(bench.size)} download to stdout | sha256sum "
                     f"(target: wall ≤ 1.0×; CPU, RSS include sha256sum and sh)",
                     list(cmds), runs, "resumectl", bench.size, {"url": url, "commands": cmds})
