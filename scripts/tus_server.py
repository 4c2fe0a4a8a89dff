#!/usr/bin/env python3
"""tuspyserver (FastAPI router under uvicorn) on 127.0.0.1, for resumectl's end-to-end tests and bench.

Binds a free port itself and prints `PORT <n>` once it listens. It exits when its parent dies (and,
with --exit-on-stdin-eof, when its standard input closes), so a killed test run leaves no server behind.

usage: tus_server.py FILES_DIR [--expire-seconds S] [--max-size BYTES] [--exit-on-stdin-eof]
"""
import argparse
import os
import socket
import sys
import threading
import time

import uvicorn
from fastapi import FastAPI
from tuspyserver import create_tus_router


def watch_parent(parent: int, stdin: bool) -> None:
    def stdin_closed() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        finally:
            os._exit(0)

    def parent_gone() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    if stdin:
        threading.Thread(target=stdin_closed, daemon=True).start()
    threading.Thread(target=parent_gone, daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files_dir")
    parser.add_argument("--expire-seconds", type=float)
    parser.add_argument("--max-size", type=int, default=128849018880)
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    args = parser.parse_args()
    watch_parent(os.getppid(), args.exit_on_stdin_eof)

    days = 5
    if args.expire_seconds is not None:
        # tuspyserver keeps uploads a whole number of days; its routes compute the expiry with
        # timedelta(days=…), so for tests of expiration one "day" becomes --expire-seconds.
        import datetime
        from tuspyserver.routes import core, creation

        def scaled(days: float = 0, **_: float) -> datetime.timedelta:
            return datetime.timedelta(seconds=days * args.expire_seconds)

        core.timedelta = creation.timedelta = scaled
        days = 1
    app = FastAPI()
    app.include_router(create_tus_router(
        prefix="files", files_dir=args.files_dir, max_size=args.max_size, days_to_keep=days))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
