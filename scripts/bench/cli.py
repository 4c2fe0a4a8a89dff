"""The command line: options, the choice of cases, the checks for what must be installed, and the run."""

import argparse
import os
import shutil
import signal
import sys
import time

from . import __doc__ as DOC
from . import cases as registry
from .harness import Bench
from .table import final_rows, print_final
from .util import GiB, KiB, MiB, NGINX, REPO, human, log, parse_size


def main():
    ap = argparse.ArgumentParser(prog="bench", description=DOC.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, ".build/release/resumectl"), help="resumectl binary")
    ap.add_argument("--cases", default="all",
                    help="cases by name or number, separated by commas or spaces: " +
                    ", ".join(f"{c.NAME} ({c.NUMBER})" for c in registry.ALL) + " (default: all)")
    ap.add_argument("--size", type=parse_size, default=None, help="big file size, e.g. 1G, 256M (default 1G)")
    ap.add_argument("--pairs", type=int, default=None, help="timed rounds after the warm-up (default 5)")
    ap.add_argument("--quick", action="store_true", help="size 64 MiB and 3 pairs (unless given)")
    ap.add_argument("--files", type=int, default=1000, help="file count of case 5 (default 1000)")
    ap.add_argument("--file-size", type=parse_size, default=4 * KiB, help="file size of case 5 (default 4k)")
    ap.add_argument("--loop", type=int, default=100, help="runs in one shell loop of cases 12 and 13 (default 100)")
    ap.add_argument("--tus-size", type=parse_size, default=256 * MiB,
                    help="file size of case 6 (default 256M: the Python server, not the client, sets the pace)")
    ap.add_argument("--tus-rate", type=parse_size, default=8_000_000,
                    help="per-connection limit of case 20's relay in bytes/s (default 8000000)")
    ap.add_argument("--s3-size", type=parse_size, default=GiB,
                    help="file size of case 7 (default 1G)")
    ap.add_argument("--browser-size", type=parse_size, default=None,
                    help="file size of case 11's browser upload (default 256M; 64M with --quick)")
    ap.add_argument("--seg-rate", type=parse_size, default=50 * MiB,
                    help="per-connection limit_rate of case 4's throttled run in bytes/s (default 50M)")
    ap.add_argument("--folder-scale", type=float, default=None,
                    help="case 14's tree: this share of 2,000 files (default 1; 0.1 with --quick)")
    ap.add_argument("--verify-all", action="store_true", help="SHA-256 every output, not once per tool and case")
    ap.add_argument("--tmpdir", default=None, help="where the temp folder goes (default: $TMPDIR or /tmp)")
    ap.add_argument("--out-dir", default=os.path.join(REPO, ".bench"), help="where the JSON goes (default .bench/)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (logs, configs) for debugging")
    args = ap.parse_args()
    args.size = args.size or (64 * MiB if args.quick else GiB)
    args.browser_size = args.browser_size or (64 * MiB if args.quick else 256 * MiB)
    args.folder_scale = args.folder_scale if args.folder_scale is not None else (0.1 if args.quick else 1.0)
    args.pairs = args.pairs if args.pairs is not None else (3 if args.quick else 5)
    try:
        cases = registry.select(args.cases)
    except ValueError as e:
        ap.error(f"--cases: unknown {e}; the cases are " + ", ".join(c.NAME for c in registry.ALL))
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    args.cases = [c.NUMBER for c in cases]
    need = sorted({cmd for c in cases for cmd in c.COMMANDS})
    missing = [t for t in need if not shutil.which(t)]
    if not os.access(args.bin, os.X_OK):
        missing.append(args.bin)
    for module, package in dict.fromkeys(mp for c in cases for mp in c.PY_MODULES):
        try:
            __import__(module)
        except ImportError:
            if package not in missing:
                missing.append(package)
    if any("nginx" in c.PEERS for c in cases) and not os.access(NGINX, os.X_OK):
        missing.append("nginx (apt-get install nginx-light)")
    if missing:
        print("bench: missing: " + ", ".join(missing), file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t_start = time.monotonic()
    bench = Bench(args)
    try:
        env = bench.environment()
        log(f"resumectl bench: {env['versions']['resumectl']} ({bench.bin}, built {env['binary_mtime']}), "
            f"git {str(env['git_commit'])[:10]}, {env['cpus']} CPUs, size {human(args.size)}, "
            f"{args.pairs} pairs, cases {', '.join(f'{c.NUMBER} {c.NAME}' for c in cases)}")
        log("columns: medians over the timed rounds; RSS = peak; srv CPU = the server's CPU during the run; "
            "wall+sync = wall + os.sync() right after;\n         mach CPU = the whole machine's busy CPU over run + sync "
            "(counts the kernel's writeback of what a tool leaves dirty);\n         ratios = subject/tool, the median of the "
            "per-round ratios (subject: resumectl, in case 4 resumectl -c4)")
        bench.setup(cases)
        for c in cases:
            c.run(bench)
        rows = final_rows(bench.results)
        print_final(rows)
        env["duration_s"] = round(time.monotonic() - t_start, 1)
        bench.write_json(env, rows)
    except KeyboardInterrupt:
        print("\nbench: interrupted; stopping servers", file=sys.stderr)
        bench.teardown()
        return 130
    except Exception:
        bench.teardown()
        raise
    bench.teardown()
    log(f"total {time.monotonic() - t_start:.0f} s; " + ("FAILED (see FAIL lines above)" if bench.failed else "all runs ok"))
    return 1 if bench.failed else 0

