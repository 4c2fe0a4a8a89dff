"""Case 5, `many`: Many small files (--files × --file-size, default 1,000 × 4 KiB), 8 at a time: resumectl
-i LIST --parallel 8 against curl -Z --parallel-max 8 and aria2c -j 8, and wget -i (one at a time: wget has
no parallel downloads). Neither peer syncs what it wrote; resumectl's files are on disk when it ends."""

import os

from ..util import Failure, human, log

NUMBER = 5
NAME = "many"
FILES = {"many"}  # made once by the harness before any case
PEERS = {"nginx"}  # started once by peers.Peers
COMMANDS = ("curl", "aria2c", "wget")  # on PATH besides resumectl and nginx
PY_MODULES = ()


def run(bench):
    if not (bench.has_input_file and bench.has_parallel):
        missing = " and ".join(x for x, ok in (("--input-file/-i", bench.has_input_file),
                                               ("--parallel", bench.has_parallel)) if not ok)
        log(f"\ncase 5 skipped: resumectl has no {missing} yet")
        bench.results["5-many-files"] = {"skipped": f"resumectl has no {missing} yet"}
        return
    b = bench.bin
    names = sorted(bench.many)
    urls = [bench.nginx.url(f"many/{n}") for n in names]
    lst = os.path.join(bench.tmp, "list.txt")
    with open(lst, "w") as f:
        f.write("".join(u + "\n" for u in urls))
    cfg = os.path.join(bench.tmp, "curl.cfg")
    with open(cfg, "w") as f:
        f.write("".join(f'url = "{u}"\n' for u in urls))
    outdir = bench.out  # a new empty folder before every run (resumectl wants an existing folder)
    cmds = {
        "resumectl": [b, "download", "-q", "-i", lst, "--parallel", "8", "-o", outdir],
        "curl": ["curl", "-s", "-Z", "--parallel-max", "8", "--output-dir", outdir,
                 "--remote-name-all", "-K", cfg],
        "aria2c": ["aria2c", "-q", "-i", lst, "-j", "8", "-d", outdir, "--allow-overwrite=true",
                   "--auto-file-renaming=false"],
        "wget": ["wget", "-q", "-i", lst, "-P", outdir],
    }

    def check(rnd, verify):
        got = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
        if got != names:
            extra = sorted(set(got) - set(names))[:5]
            raise Failure(f"{outdir}: {len(got)} files, want {len(names)}" + (f"; unexpected {extra}" if extra else ""))
        for n in names:
            bench.check_file(os.path.join(outdir, n), bench.args.file_size, bench.many[n], verify)
    tools = [(n, (lambda a: lambda rnd: a)(a), check) for n, a in cmds.items()]
    total = len(names) * bench.args.file_size
    log(f"\n== case 5: {len(names)} files of {human(bench.args.file_size)}, 8 at a time")
    runs = bench.run_rounds(tools, servers=[bench.nginx], set_aside=True)

    def extra(summary):
        for t in cmds:
            w = summary[t]["wall_median_s"]
            summary[t]["files_per_s"] = len(names) / w if w == w and w > 0 else float("nan")
    bench.finish_case("5-many-files", f"case 5: {len(names)} × {human(bench.args.file_size)}, 8 in parallel, "
                     "ratio = resumectl/tool", list(cmds), runs, "resumectl", total,
                     {"files": len(names), "file_size": bench.args.file_size, "commands": cmds},
                     [("files/s", "files_per_s", ".0f")], extra)
