#!/usr/bin/env python3
"""tuspyserver (FastAPI router under uvicorn) on 127.0.0.1, for resumectl's end-to-end tests and bench.

Binds a free port itself and prints `PORT <n>` once it listens. It exits when its parent dies (and,
with --exit-on-stdin-eof, when its standard input closes), so a killed test run leaves no server behind.

usage: tus_server.py FILES_DIR [--expire-seconds S] [--max-size BYTES] [--without EXTENSION]… [--exit-on-stdin-eof]

--without EXTENSION leaves the extension out of the OPTIONS answer's Tus-Extension (and refuses a
creation with Upload-Concat when it is concatenation, as a server without it would not understand one):
a tus server without concatenation, which tuspyserver cannot be configured to be.
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


def without_extensions(app: FastAPI, left_out: set) -> None:
    from starlette.responses import Response

    @app.middleware("http")
    async def leave_out(request, call_next):
        if "concatenation" in left_out and request.method == "POST" and "upload-concat" in request.headers:
            return Response(status_code=400, content=b"concatenation is not offered")
        response = await call_next(request)
        offered = response.headers.get("tus-extension")
        if offered is not None:
            kept = [e for e in offered.split(",") if e.strip() not in left_out]
            response.headers["Tus-Extension"] = ",".join(kept)
        return response


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files_dir")
    parser.add_argument("--expire-seconds", type=float)
    parser.add_argument("--max-size", type=int, default=128849018880)
    parser.add_argument("--without", action="append", default=[])
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
    if args.without:
        without_extensions(app, set(args.without))
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
