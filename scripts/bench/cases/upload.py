"""Case 2, `upload`: --size upload in one request (draft interop 6) to `resumectl serve`: resumectl against curl -T."""

import os

from ..util import human, log

NUMBER = 2
NAME = "upload"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"serve"}  # started once by peers.Peers
COMMANDS = ("curl",)  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    src = os.path.join(bench.www, "big.bin")
    b = bench.bin
    state = {}

    def argv(name):
        def f(rnd):
            state[name] = f"u-{name}-{rnd}.bin"
            url = bench.peer.url(state[name])
            if name == "resumectl":
                return [b, "upload", "-q", "--interop-version", "6", src, url]
            return ["curl", "-sS", "-f", "-o", "/dev/null", "-X", "POST", "-T", src, "-H", "Expect:",
                    "-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1", url]
        return f

    def check(name):
        return lambda rnd, verify: bench.check_upload(state[name], verify)
    names = ["resumectl", "curl"]
    tools = [(n, argv(n), check(n)) for n in names]
    log(f"\n== case 2: {human(bench.size)} upload (draft interop 6, one request) to resumectl serve")
    runs = bench.run_rounds(tools, servers=[bench.peer])
    cmds = {n: argv(n)(0) for n in names}
    bench.finish_case("2-upload", f"case 2: {human(bench.size)} upload, one request, interop 6 "
                     f"(srv CPU = the serve peer's CPU per upload)",
                     names, runs, "resumectl", bench.size, {"peer": bench.peer.base, "commands": cmds})
