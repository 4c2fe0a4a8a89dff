"""Case 10, `tls`: --size download to disk over HTTPS from nginx (HTTP/2 offered, a P-256 certificate):
resumectl against curl, both at their defaults (each negotiates HTTP/2 by ALPN) with the same --cacert.

resumectl's file is on disk when it ends and curl's is not, so besides the wall ratio the w+s ratio
(counting until the data is on disk) is the one to read for the whole job; CPU is each tool's own."""

import os

from ..util import human, log

NUMBER = 10
NAME = "tls"
FILES = {"big.bin"}  # made once by the harness before any case
PEERS = {"nginx-tls"}  # nginx with its HTTPS server, started once by peers.Peers
COMMANDS = ("curl", "openssl")  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    url = bench.nginx.tls_url("big.bin")
    out = os.path.join(bench.out, "big.bin")
    ca = bench.cert.cert
    cmds = {
        "resumectl": [bench.bin, "download", "-q", "--force", "--cacert", ca, url, "-o", out],
        "curl": ["curl", "-s", "--cacert", ca, "-o", out, url],
    }
    check = lambda rnd, verify: bench.check_file(out, bench.size, bench.files["big.bin"], verify)
    tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
    log(f"\n== case 10: {human(bench.size)} download to disk over TLS (nginx, HTTP/2 by ALPN)")
    runs = bench.run_rounds(tools, servers=[bench.nginx])
    bench.finish_case("10-tls-download", f"case 10: {human(bench.size)} download over TLS + HTTP/2 from nginx, "
                     f"{bench.args.pairs} rounds after a warm-up", list(cmds), runs, "resumectl", bench.size,
                     {"url": url, "commands": cmds})
