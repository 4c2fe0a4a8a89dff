"""Case 6, `tus`: A --tus-size tus upload to tuspyserver (uvicorn): resumectl --protocol tus against tus-py-client
(tuspy) and curl doing POST + one streamed PATCH."""

import os
import sys

from ..util import Failure, human, log

NUMBER = 6
NAME = "tus"
FILES = {"tus.bin"}  # made once by the harness before any case
PEERS = {"tus"}  # started once by peers.Peers
COMMANDS = ("curl",)  # on PATH besides resumectl and nginx
PY_MODULES = (("tusclient", "tuspy (pip install tuspy)"),)


# tus-py-client (PyPI tuspy) as an application would call it: one uploader, the whole file per PATCH.
TUSPY = r"""
import os, sys
from tusclient import client
path, url = sys.argv[1], sys.argv[2]
up = client.TusClient(url).uploader(path, metadata={"filename": os.path.basename(path), "filetype": "application/octet-stream"})
up.upload()
"""

# curl doing what a tus client does: POST for the upload URL, then one streamed PATCH (-T, not --data-binary,
# which would read the file into memory).
CURL_TUS = r"""
set -e
size=$(stat -c %s "$1")
loc=$(curl -sS -o /dev/null -D - -X POST -H 'Tus-Resumable: 1.0.0' -H "Upload-Length: $size" \
  -H 'Upload-Metadata: filename YmlnLmJpbg==,filetype YXBwbGljYXRpb24vb2N0ZXQtc3RyZWFt' "$2" \
  | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
curl -sS -f -o /dev/null -X PATCH -T "$1" -H 'Tus-Resumable: 1.0.0' -H 'Upload-Offset: 0' \
  -H 'Content-Type: application/offset+octet-stream' -H 'Expect:' "$loc"
"""


def run(bench):
    src = os.path.join(bench.www, "tus.bin")
    url = bench.tus.endpoint
    size, digest = bench.tus_size, bench.files["tus.bin"]
    cmds = {
        "resumectl": [bench.bin, "upload", "-q", "--protocol", "tus", src, url],
        "tuspy": [sys.executable, "-c", TUSPY, src, url],
        "curl POST+PATCH": ["sh", "-c", CURL_TUS, "curl-tus", src, url],
    }

    def argv(a):
        def make(rnd):
            bench.tus.clear()  # each run starts with an empty server
            return a
        return make

    def check(rnd, verify):
        stored = bench.tus.stored()
        if len(stored) != 1:
            raise Failure(f"tuspyserver holds {len(stored)} uploads, want 1")
        bench.check_file(stored[0], size, digest, verify)
    tools = [(n, argv(a), check) for n, a in cmds.items()]
    log(f"\n== case 6: {human(size)} tus upload to tuspyserver")
    runs = bench.run_rounds(tools, servers=[bench.tus])
    bench.finish_case("6-tus-upload", f"case 6: {human(size)} tus upload to tuspyserver (uvicorn), "
                     "ratio = resumectl/tool", list(cmds), runs, "resumectl", size,
                     {"url": url, "commands": {n: a[:2] + ["…"] if n != "resumectl" else a for n, a in cmds.items()}})
