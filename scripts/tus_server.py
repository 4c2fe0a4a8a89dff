#!/usr/bin/env python3
"""tuspyserver (FastAPI router under uvicorn) on 127.0.0.1, for resumectl's end-to-end tests and bench.

Binds a free port itself and prints `PORT <n>` once it listens. It exits when its standard input
reaches EOF or its parent dies, so a killed test run leaves no server behind.

usage: tus_server.py FILES_DIR [--expire-seconds S] [--max-size BYTES]
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


def watch_parent(parent: int) -> None:
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

    threading.Thread(target=stdin_closed, daemon=True).start()
    threading.Thread(target=parent_gone, daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files_dir")
    parser.add_argument("--expire-seconds", type=float, default=5 * 86400)
    parser.add_argument("--max-size", type=int, default=128849018880)
    args = parser.parse_args()
    watch_parent(os.getppid())

    app = FastAPI()
    app.include_router(create_tus_router(
        prefix="files", files_dir=args.files_dir, max_size=args.max_size,
        days_to_keep=args.expire_seconds / 86400))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
