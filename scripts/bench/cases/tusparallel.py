"""Case 20, `tus-parallel`: a --tus-size tus upload to tuspyserver (uvicorn) through a relay that forwards each
connection at --tus-rate bytes/s (a link with a per-connection limit): resumectl --connections 4 (tus
concatenation: four partial uploads at once, then the final one) against tus-py-client (tuspy, one stream) and
resumectl --connections 1."""

import os
import sys

from ..peers import CountingProxy
from ..util import Failure, human, log
from .tus import TUSPY

NUMBER = 20
NAME = "tus-parallel"
FILES = {"tus.bin"}  # made once by the harness before any case
PEERS = {"tus"}  # started once by peers.Peers
COMMANDS = ()
PY_MODULES = (("tusclient", "tuspy (pip install tuspy)"),)

SUBJECT = "resumectl 4 connections"


def run(bench):
    src = os.path.join(bench.www, "tus.bin")
    size, digest = bench.tus_size, bench.files["tus.bin"]
    proxy = CountingProxy(int(bench.tus.endpoint.rsplit(":", 1)[1].split("/")[0]), rate=bench.tus_rate)
    url = proxy.url + "/files/"
    try:
        cmds = {
            SUBJECT: [bench.bin, "upload", "-q", "--protocol", "tus", "--connections", "4", src, url],
            "tuspy": [sys.executable, "-c", TUSPY, src, url],
            "resumectl 1 connection": [bench.bin, "upload", "-q", "--protocol", "tus", "--connections", "1", src, url],
        }
        posts = {}

        def argv(name, a):
            def make(rnd):
                bench.tus.clear()  # each run starts with an empty server
                posts[name] = proxy.requests("POST")
                return a
            return make

        def checker(name, want):
            def check(rnd, verify):
                # tuspyserver drops the partial uploads once the final one joined them: one file either way.
                stored = bench.tus.stored()
                if len(stored) != 1:
                    raise Failure(f"tuspyserver holds {len(stored)} uploads, want 1")
                made = proxy.requests("POST") - posts[name]
                if made != want:
                    raise Failure(f"{name}: {made} POSTs through the relay, want {want}")
                bench.check_file(stored[0], size, digest, verify)
            return check

        want = {SUBJECT: 5, "tuspy": 1, "resumectl 1 connection": 1}
        tools = [(n, argv(n, a), checker(n, want[n])) for n, a in cmds.items()]
        log(f"\n== case 20: {human(size)} tus upload to tuspyserver, {human(bench.tus_rate)}/s a connection")
        runs = bench.run_rounds(tools, servers=[bench.tus])
        bench.finish_case("20-tus-parallel", f"case 20: {human(size)} tus upload to tuspyserver at "
                          f"{human(bench.tus_rate)}/s a connection, ratio = {SUBJECT}/tool", list(cmds), runs,
                          SUBJECT, size,
                          {"url": url, "rate": bench.tus_rate,
                           "commands": {n: a[:2] + ["…"] if n == "tuspy" else a for n, a in cmds.items()}})
    finally:
        proxy.stop()
