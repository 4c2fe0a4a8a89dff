"""Case 11, `serve`: `resumectl serve` as the server, next to the servers a user would run instead.

11a/11b: --size download by curl (HTTP/1.1, to /dev/null, so the server sets the pace) from
`resumectl serve --read-only` and from nginx serving the same file, plain and over TLS (same P-256
certificate, curl --cacert). Target: serve ≥ 0.9× nginx's throughput, i.e. wall ratio ≤ 1.11.
11c: a --size tus upload by `resumectl upload --protocol tus` to `serve` (POST to its folder) and to
tuspyserver. 11d: the folder page's own upload in headless chromium (selenium; timed in the page from
choosing the file until its row says done) next to `resumectl upload` of the same --browser-size file
to the same `serve`."""

import json
import os
import sys

from ..util import Failure, human, log

NUMBER = 11
NAME = "serve"
FILES = {"big.bin", "browser.bin"}  # made once by the harness before any case
PEERS = {"nginx-tls", "serve-www", "serve", "tus"}  # started once by peers.Peers
COMMANDS = ("curl", "openssl", "chromium", "chromedriver")  # on PATH besides resumectl and nginx
PY_MODULES = (("selenium", "selenium (make deps)"),)

# Chooses the file on the folder page and waits for its row to say done; prints the seconds between.
BROWSER = r"""
import json, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
url, path, result = sys.argv[1], sys.argv[2], sys.argv[3]
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get(url)
    driver.execute_script("localStorage.clear()")
    picker = driver.find_element(By.ID, "picker")
    t0 = time.monotonic()
    picker.send_keys(path)
    state = None
    while time.monotonic() - t0 < 600:
        state = driver.execute_script("var li = document.querySelector('#uploads li'); return li && li.dataset.state")
        if state == "done" or (state or "").startswith("failed"):
            break
        time.sleep(0.02)
    took = time.monotonic() - t0
finally:
    driver.quit()
if state != "done":
    sys.exit(f"the page's upload ended as {state!r}")
with open(result, "w") as f:
    json.dump({"seconds": took}, f)
"""


def run(bench):
    downloads(bench, tls=False)
    downloads(bench, tls=True)
    tus(bench)
    browser(bench)


def downloads(bench, tls):
    flags = ["-s", "--http1.1", "-o", "/dev/null"] + (["--cacert", bench.cert.cert] if tls else [])
    urls = {"serve": (bench.serve_www_tls if tls else bench.serve_www).url("big.bin"),
            "nginx": bench.nginx.tls_url("big.bin") if tls else bench.nginx.url("big.bin")}
    cmds = {n: ["curl"] + flags + ["-w", "%{size_download}", u] for n, u in urls.items()}
    tools = [(n, (lambda a: lambda rnd: a)(a), None) for n, a in cmds.items()]
    what = "HTTPS" if tls else "plain HTTP"
    key = "11b-serve-tls" if tls else "11a-serve-download"
    log(f"\n== case {key[:3]}: {human(bench.size)} download by curl over {what}: resumectl serve against nginx")
    servers = [bench.serve_www_tls if tls else bench.serve_www, bench.nginx]
    runs = bench.run_rounds(tools, servers=servers)
    bench.finish_case(key, f"case {key[:3]}: {human(bench.size)} from resumectl serve --read-only vs nginx over "
                     f"{what}, curl --http1.1 to /dev/null (target: serve wall ≤ 1.11× nginx; srv CPU = both servers)",
                     list(cmds), runs, "serve", bench.size, {"commands": cmds})


def tus(bench):
    src = os.path.join(bench.www, "big.bin")
    targets = {"serve": bench.peer.url(""), "tuspyserver": bench.tus.endpoint}
    cmds = {n: [bench.bin, "upload", "-q", "--protocol", "tus", src, u] for n, u in targets.items()}

    def argv(name):
        def make(rnd):
            bench.tus.clear()
            return cmds[name]
        return make

    def check(name):
        def f(rnd, verify):
            if name == "serve":
                return bench.check_upload("big.bin", verify)
            stored = bench.tus.stored()
            if len(stored) != 1:
                raise Failure(f"tuspyserver holds {len(stored)} uploads, want 1")
            bench.check_file(stored[0], bench.size, bench.files["big.bin"], verify)
            bench.tus.clear()
        return f
    tools = [(n, argv(n), check(n)) for n in cmds]
    log(f"\n== case 11c: {human(bench.size)} tus upload by resumectl: resumectl serve against tuspyserver")
    runs = bench.run_rounds(tools, servers=[bench.peer, bench.tus])
    bench.finish_case("11c-serve-tus", f"case 11c: {human(bench.size)} tus upload by resumectl --protocol tus, "
                     "to resumectl serve vs tuspyserver (uvicorn); srv CPU = both servers",
                     list(cmds), runs, "serve", bench.size, {"commands": cmds})


def browser(bench):
    src = os.path.join(bench.www, "browser.bin")
    size, digest = bench.browser_size, bench.files["browser.bin"]
    result = os.path.join(bench.tmp, "browser-result.json")
    cmds = {"browser page": [sys.executable, "-c", BROWSER, bench.peer.base + "/", src, result],
            "resumectl": [bench.bin, "upload", "-q", src, bench.peer.url("browser.bin")]}

    def check(name):
        def f(rnd, verify):
            stored = os.path.join(bench.uploads, "browser.bin")
            try:
                bench.check_file(stored, size, digest, verify)
            finally:
                bench.clear(stored)
            if name == "browser page":
                with open(result) as fh:
                    return float(json.load(fh)["seconds"])
            return None
        return f
    tools = [(n, (lambda a: lambda rnd: a)(a), check(n)) for n, a in cmds.items()]
    log(f"\n== case 11d: {human(size)} upload from the folder page in headless chromium against resumectl upload")
    runs = bench.run_rounds(tools, servers=[bench.peer])
    bench.finish_case("11d-serve-browser", f"case 11d: {human(size)} upload to resumectl serve: its folder page in "
                     "headless chromium (wall = in the page, from choosing the file to done; CPU = "
                     "selenium, chromedriver and chromium together, RSS = the largest of them) vs resumectl upload", list(cmds), runs, "browser page", size,
                     {"url": bench.peer.base + "/", "commands": {n: a[:2] + ["…"] for n, a in cmds.items()}})
