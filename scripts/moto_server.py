#!/usr/bin/env python3
"""moto's S3 server on 127.0.0.1, for resumectl's end-to-end tests and bench.

By default every request must carry a valid AWS Signature Version 4 by a known key: the server starts
with authentication off (moto's INITIAL_NO_AUTH_ACTION_COUNT, "let the first N requests through"),
creates an IAM user, its access key and an allow-all inline policy through boto3 against itself, then
switches authentication on for every later request (the same switch as INITIAL_NO_AUTH_ACTION_COUNT=3,
without depending on how many requests boto3 needed for those three calls). Signatures are checked over
the request line as sent (see verify_signatures_over_the_sent_url), so listings under a prefix and keys
holding `+`, `%` or non-ASCII letters verify as on S3. With --no-verify nothing is checked, any key is
accepted (for a test whose proxy drops a signed header).

Once it serves, it prints one JSON line to stdout (and, with --info-file, writes it there too):
    {"port": 40123, "accessKey": "AKIA…", "secretKey": "…", "verify": true}
It exits when its parent dies (and, with --exit-on-stdin-eof, when its standard input closes), so a
killed test run leaves no server behind.

usage: moto_server.py [--no-verify] [--info-file PATH] [--exit-on-stdin-eof] [--part-min-size BYTES]
"""
import argparse
import json
import os
import sys
import threading
import time


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


def verify_signatures_over_the_sent_url() -> None:
    """moto 5.2.1 checks a SigV4 signature against `self.uri`, which is werkzeug's `request.url`: an IRI
    rebuilt from the decoded path and query (werkzeug's `get_current_url` + `uri_to_iri`), not the bytes
    sent. `prefix=pre%2F` comes back as `prefix=pre/`, a key `a%2Bb` as `a+b`, `%25` as `%`, `%C3%A9` as
    `é`, so every correct signature over such a query or key (boto3's too) is refused. S3 signs what was
    sent: here the signature is checked against the request line as it came (werkzeug's `RAW_URI`)."""
    from moto.s3.responses import S3Response

    original = S3Response._authenticate_and_authorize_s3_action

    def wrapped(self, *args, **kwargs):
        raw = getattr(getattr(self, "request", None), "environ", {}).get("RAW_URI")
        if not raw:
            return original(self, *args, **kwargs)
        rebuilt = self.uri
        self.uri = raw
        try:
            return original(self, *args, **kwargs)
        finally:
            self.uri = rebuilt

    S3Response._authenticate_and_authorize_s3_action = wrapped


def serialize_conditional_writes() -> None:
    """moto 5.2 checks If-None-Match / If-Match and then writes, as two steps on each request's own
    thread: two conditional writes of one key at the same moment could both pass. S3 decides them
    atomically, and `serve --store s3://` locks uploads on that; here they are decided one at a time."""
    from moto.s3.responses import S3Response

    lock = threading.Lock()
    for name in ("put_object", "delete_object", "_key_response_post"):
        original = getattr(S3Response, name)

        def wrapped(self, *args, _original=original, **kwargs):
            if self.headers.get("If-None-Match") or self.headers.get("If-Match"):
                with lock:
                    return _original(self, *args, **kwargs)
            return _original(self, *args, **kwargs)

        setattr(S3Response, name, wrapped)


def list_modules_once() -> None:
    """moto 5.2.1 finds each request's backend under one global lock, and on the way lists its own package
    folder (`os.listdir` and an `isdir` for each of ~170 entries) for every request. That serialises every
    request behind a directory scan (a tenth of the server's samples in a folder upload; real S3 has no such
    cost, and it is the same for every client). The folder does not change while the server runs: list it once."""
    import moto.backends as backends

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules


ALLOW_ALL = json.dumps({"Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-verify", action="store_true", help="accept any request, signed or not")
    parser.add_argument("--info-file", help="also write the JSON line here (atomically)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument("--part-min-size", type=int,
                        help="S3_UPLOAD_PART_MIN_SIZE (default: moto's, 5 MiB, as S3)")
    args = parser.parse_args()
    watch_parent(os.getppid(), args.exit_on_stdin_eof)

    # moto reads its settings from the environment at import: set them first. Authentication stays off
    # (infinite no-auth count) until the bootstrap below is done.
    os.environ.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
    if args.part_min_size:
        os.environ["S3_UPLOAD_PART_MIN_SIZE"] = str(args.part_min_size)
    # Objects live in spooled temp files; past this many bytes each goes to disk, not the heap.
    os.environ.setdefault("MOTO_S3_DEFAULT_KEY_BUFFER_SIZE", str(4 << 20))
    # boto3 of the bootstrap must not read the user's ~/.aws or talk through a proxy.
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                 "https_proxy", "ALL_PROXY", "all_proxy"):
        os.environ.pop(name, None)
    os.environ["AWS_CONFIG_FILE"] = os.devnull
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    from moto import settings
    from moto.server import ThreadedMotoServer
    serialize_conditional_writes()
    list_modules_once()
    verify_signatures_over_the_sent_url()

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    endpoint = f"http://127.0.0.1:{port}"

    if args.no_verify:
        info = {"port": port, "accessKey": "AKIAIOSFODNN7EXAMPLE",
                "secretKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "verify": False}
    else:
        import boto3

        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="resumectl")
        iam.put_user_policy(UserName="resumectl", PolicyName="allow-all", PolicyDocument=ALLOW_ALL)
        key = iam.create_access_key(UserName="resumectl")["AccessKey"]
        # From here on every request is authenticated (what /moto-api/reset-auth with 0 does).
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        info = {"port": port, "accessKey": key["AccessKeyId"], "secretKey": key["SecretAccessKey"],
                "verify": True}

    line = json.dumps(info)
    if args.info_file:
        tmp = args.info_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(line + "\n")
        os.replace(tmp, args.info_file)
    print(line, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
