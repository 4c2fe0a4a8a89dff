"""Case 4, `segmented`: Segmented downloads: resumectl --connections 4 against --connections 1 and aria2c -x4 -s4, once
throttled per connection (--seg-rate, at most 256 MiB) and once unthrottled (--size)."""

import os

from ..util import human, log

NUMBER = 4
NAME = "segmented"
FILES = {"big.bin", "seg.bin"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("aria2c",)  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    if not bench.has_connections:
        log("\ncase 4 skipped: resumectl has no --connections yet")
        bench.results["4-segmented"] = {"skipped": "resumectl has no --connections yet"}
        return
    b = bench.bin
    for label, path, size, digest in (
            ("throttled", "seg/seg.bin", bench.seg_size, bench.files["seg.bin"]),
            ("unthrottled", "big.bin", bench.size, bench.files["big.bin"])):
        url = bench.nginx.url(path)
        name = os.path.basename(path)
        out = os.path.join(bench.out, name)
        cmds = {
            "resumectl -c4": [b, "download", "-q", "--force", "--connections", "4", url, "-o", out],
            "resumectl -c1": [b, "download", "-q", "--force", "--connections", "1", url, "-o", out],
            "aria2c -x4 -s4": ["aria2c", "-q", "-x4", "-s4", "--allow-overwrite=true",
                               "--auto-file-renaming=false", "-d", bench.out, "-o", name, url],
        }
        check = (lambda o, s, d: lambda rnd, verify: bench.check_file(o, s, d, verify))(out, size, digest)
        tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
        extra = f", limit_rate {bench.seg_rate} B/s per connection" if label == "throttled" else ""
        log(f"\n== case 4 ({label}): segmented {human(size)} download{extra}")
        runs = bench.run_rounds(tools, servers=[bench.nginx])
        bench.finish_case(f"4-segmented-{label}", f"case 4 ({label}{extra}): {human(size)}, "
                         "ratio = resumectl -c4/tool", list(cmds), runs, "resumectl -c4", size,
                         {"url": url, "commands": cmds})
