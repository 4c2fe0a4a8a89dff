"""Case 18, `mirrors`: one file from three nginx mirrors (each its own server behind a proxy forwarding RATE
bytes a second to each connection, at most 256 MiB): resumectl --mirror and a Metalink with piece hashes against
aria2c -x2 -s6 over the same URLs and the same Metalink; and two mirrors of three connections each against one
mirror of three."""

import hashlib
import os

from ..peers import CountingProxy, Nginx
from ..util import MiB, human, log

NUMBER = 18
NAME = "mirrors"
FILES = {"seg.bin"}  # made once by the harness before any case
PEERS = set()  # its three nginx servers are its own
COMMANDS = ("aria2c",)
PY_MODULES = ()
PIECE = 1 * MiB
RATE = 4 * MiB  # a connection; a proxy in Python forwards six of these with room to spare on 2 cores


def metalink(path, name, size, digest, urls):
    """RFC 5854 Metalink of the file with sha-256 pieces of PIECE bytes."""
    pieces = []
    with open(path, "rb") as f:
        while chunk := f.read(PIECE):
            pieces.append(hashlib.sha256(chunk).hexdigest())
    hashes = "\n".join(f"        <hash>{h}</hash>" for h in pieces)
    links = "\n".join(f'      <url priority="{i + 1}">{u}</url>' for i, u in enumerate(urls))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="urn:ietf:params:xml:ns:metalink">
  <file name="{name}">
    <size>{size}</size>
    <hash type="sha-256">{digest}</hash>
    <pieces length="{PIECE}" type="sha-256">
{hashes}
    </pieces>
{links}
  </file>
</metalink>
"""


def run(bench):
    path = os.path.join(bench.www, "seg.bin")
    size, digest = bench.seg_size, bench.files["seg.bin"]
    mirrors = [Nginx(os.path.join(bench.tmp, f"mirror{i}"), bench.www, bench.slow_rate, bench.seg_rate).start()
               for i in range(3)]
    # Three hosts, as mirrors are: aria2c's -x counts connections to a host, whatever its port.
    proxies = [CountingProxy(m.port, rate=RATE, host=f"127.0.0.{i + 1}") for i, m in enumerate(mirrors)]
    try:
        urls = [f"{p.url}/seg.bin" for p in proxies]
        meta = os.path.join(bench.tmp, "seg.meta4")
        with open(meta, "w") as f:
            f.write(metalink(path, "seg.bin", size, digest, urls))
        b, out = bench.bin, os.path.join(bench.out, "seg.bin")
        given = [a for u in urls[1:] for a in ("--mirror", u)]
        aria = ["aria2c", "-q", "-x2", "-s6", "-k1M", "--allow-overwrite=true", "--auto-file-renaming=false",
                "-d", bench.out, "-o", "seg.bin"]
        cmds = {
            "resumectl 3 mirrors": [b, "download", "-q", "--force", urls[0], *given, "--checksum",
                                    f"sha256={digest}", "--connections", "6", "-o", out],
            "resumectl metalink": [b, "download", "-q", "--force", meta, "--connections", "6", "-o", out],
            # the same six connections where each mirror takes three: two mirrors against one
            "resumectl 2 mirrors x3": [b, "download", "-q", "--force", urls[0], "--mirror", urls[1], "--checksum",
                                       f"sha256={digest}", "--connections", "6", "--per-mirror", "3", "-o", out],
            "resumectl 1 mirror x3": [b, "download", "-q", "--force", urls[0], "--connections", "3", "-o", out],
            "aria2c 3 mirrors": aria + [f"--checksum=sha-256={digest}", *urls],
            "aria2c metalink": aria + ["-M", meta],
        }
        check = lambda rnd, verify: bench.check_file(out, size, digest, verify)
        tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
        log(f"\n== case 18: {human(size)} from three mirrors, {RATE} B/s a connection")
        runs = bench.run_rounds(tools, servers=mirrors)
        bench.finish_case("18-mirrors", f"case 18 (3 mirrors, {RATE} B/s a connection): {human(size)}, "
                          "ratio = resumectl 3 mirrors/tool", list(cmds), runs, "resumectl 3 mirrors", size,
                          {"urls": urls, "commands": cmds})
    finally:
        for p in proxies:
            p.stop()
        for m in mirrors:
            m.stop()
