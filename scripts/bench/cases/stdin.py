"""Case 8, `stdin`: --size from stdin (cat FILE |) to `resumectl serve`: resumectl upload - against curl -T -.
Its limit is the disk's durable write of --size (dd conv=fdatasync in the state folder), serve's copy: the
spool's bytes are recorded in the token by checksum before they are sent and punched out once serve
acknowledged them, unsynced, so they need not reach the disk; a spool fsynced before sending (releases
before 2026-11-26) paid a second durable write of the whole stream."""

import os

from ..util import human, log
from .download import disk_limit

NUMBER = 8
NAME = "stdin"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"serve"}  # started once by peers.Peers
COMMANDS = ("curl", "dd")  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    """The big file through a pipe into an upload (cat | tool), to resumectl serve: resumectl's
    `upload -` (spool, appends with Upload-Complete ?0 then ?1) against `curl -T -` (one chunked PUT)."""
    src = os.path.join(bench.www, "big.bin")
    b = bench.bin
    state = {}

    def argv(name):
        def f(rnd):
            state[name] = f"s-{name}-{rnd}.bin"
            url = bench.peer.url(state[name])
            if name == "resumectl":
                return ["sh", "-c", 'cat "$1" | "$2" upload -q --state-dir "$3" - "$4"', "stdin-upload", src, b, bench.state, url]
            return ["sh", "-c", 'cat "$1" | curl -sS -f -o /dev/null -T - "$2"', "stdin-upload", src, url]
        return f

    def check(name):
        return lambda rnd, verify: bench.check_upload(state[name], verify)
    names = ["resumectl", "curl"]
    tools = [(n, argv(n), check(n)) for n in names]
    log(f"\n== case 8: {human(bench.size)} from stdin (cat FILE |) to resumectl serve")
    # The upload's disk writes decide this case (1.00-1.31x in earlier runs): each run starts with no dirty
    # pages of the one before and the source in the page cache, whichever tool went first.
    runs = bench.run_rounds(tools, servers=[bench.peer], settle=lambda: bench.settle_page_cache(warm=[src]))
    cmds = {n: argv(n)(0) for n in names}
    bench.finish_case("8-stdin-upload", f"case 8: {human(bench.size)} upload from stdin, resumectl upload - "
                     f"against curl -T - (target: wall ≤ 1.1×; CPU, RSS include cat and sh; page cache dropped before each run)",
                     names, runs, "resumectl", bench.size, {"peer": bench.peer.base, "commands": cmds})
    disk_limit(bench, os.path.join(bench.out, "server-copy.bin"), case="8-stdin-upload", size=bench.size,
               what="the disk's write of the server's copy")
