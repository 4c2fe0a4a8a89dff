#!/usr/bin/env python3
"""Writes scripts/link-order.txt, the order in which `make release` has the linker place functions: those
that common transfers run first, the rest after. The kernel maps a binary's code in 64 KiB windows around
each page a process touches, so hot code spread through 13 MB of text keeps most of it resident; packed
together it keeps a fraction (docs/performance.md, "Where the memory goes").

    python3 scripts/link-order.py [.build/release]   # needs valgrind; run after a `make release`

It starts `resumectl-serve` (plain, HTTPS with a throw-away certificate, and an upload folder) on
127.0.0.1, runs each transfer below under callgrind, and lists every function of `resumectl` that ran, in
the order first seen. A function missing from the list (new code) still links, only further away; rerun
this when the transfer paths change."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "scripts", "link-order.txt")


def serve(binary, folder, *extra):
    proc = subprocess.Popen([binary, folder, "--port", "0", *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        sys.exit(f"link-order: resumectl-serve did not start ({line.strip()!r})")
    return proc, line.split()[-1]


def functions_run(trace, binary_name):
    """The functions of `binary_name` in a callgrind file, mangled, in the order the file names them."""
    objects, functions, names, current = {}, {}, [], None
    for line in open(trace):
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                objects[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                current = objects.get(m.group(2))
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):  # a name is given once, where its number first appears (as caller or callee)
                functions[m.group(2)] = m.group(3)
            if m.group(1) == "fn" and current and os.path.basename(current) == binary_name and m.group(2) in functions:
                names.append(functions[m.group(2)])
    return names


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, ".build", "release")
    if not shutil.which("valgrind"):
        sys.exit("link-order: needs valgrind (apt-get install valgrind)")
    work = tempfile.mkdtemp(prefix="resumectl-link-order-")
    try:
        # valgrind cannot read the release build's DWARF; the symbol table is all it needs.
        binary = os.path.join(work, "resumectl")
        subprocess.run(["strip", "--strip-debug", "-o", binary, os.path.join(build, "resumectl")], check=True)
        files, uploads, state = (os.path.join(work, d) for d in ("files", "uploads", "state"))
        for d in (files, uploads):
            os.makedirs(d)
        sample = os.path.join(files, "sample.bin")
        with open(sample, "wb") as f:
            f.write(os.urandom(3 << 20))
        key, cert = os.path.join(work, "key.pem"), os.path.join(work, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        server = os.path.join(build, "resumectl-serve")
        peers = [serve(server, files, "--read-only"), serve(server, files, "--read-only", "--tls-cert", cert, "--tls-key", key),
                 serve(server, uploads)]
        (_, plain), (_, tls), (_, up) = peers
        out = os.path.join(work, "out")
        runs = [
            ["download", "-q", f"{plain}/sample.bin", "-o", out + "1"],
            ["download", "-q", "--cacert", cert, f"{tls}/sample.bin", "-o", out + "2"],
            ["download", f"{plain}/sample.bin", "-o", out + "3"],
            ["download", "--json", "--connections", "4", f"{plain}/sample.bin", "-o", out + "4"],
            ["download", "-q", f"{plain}/sample.bin", "-o", "-"],
            ["upload", "-q", sample, f"{up}/a.bin"],
            ["upload", "-q", "--protocol", "tus", sample, f"{up}/b.bin"],
            ["upload", "-q", "-", f"{up}/c.bin"],
            ["list"],
        ]
        names, seen = [], set()
        for i, args in enumerate(runs):
            trace = os.path.join(work, f"callgrind.{i}")
            stdin = open(sample, "rb") if args[:3] == ["upload", "-q", "-"] else subprocess.DEVNULL
            done = subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={trace}", binary, *args],
                                  stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, RESUMECTL_STATE_DIR=state))
            if done.returncode != 0:
                sys.exit(f"link-order: resumectl {' '.join(args)} failed:\n{done.stderr[-2000:]}")
            for name in functions_run(trace, "resumectl"):
                if name not in seen:
                    seen.add(name)
                    names.append(name)
        for proc, _ in peers:
            proc.terminate()
        # Symbol names, for lld's --symbol-ordering-file (Swift and the runtime's C++ are built with one section
        # a function, so each can be placed on its own).
        with open(OUT, "w") as f:
            f.writelines(f"{n}\n" for n in names)
        print(f"link-order: {len(names)} functions from {len(runs)} transfers → {os.path.relpath(OUT, REPO)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
