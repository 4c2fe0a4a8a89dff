"""Benchmark resumectl against curl, wget and aria2c on loopback (standard library only).

    make bench                                      # every case, 1 GiB, 5 pairs
    make bench CASE=s3                              # one case (by name or number)
    make bench CASE="download resume" BENCH_ARGS=--quick
    python3 scripts/bench --bin .build/release/resumectl --quick         # 64 MiB, 3 pairs
    python3 scripts/bench --cases download,resume --size 256M --pairs 7
    python3 scripts/bench --cases tus --tus-size 256M                  # tus upload to tuspyserver
    python3 scripts/bench --cases s3 --s3-size 256M                    # S3 multipart upload to moto
    python3 scripts/bench --cases stdin,stdout                         # streams: stdin upload, download to stdout
    python3 scripts/bench --cases small,startup --loop 100             # a small transfer's fixed cost

The cases (scripts/bench/cases/, one module each; a name or its number selects it):
    1 download   plain download to disk          curl, wget, aria2c      nginx
    2 upload     one-request upload (interop 6)  curl -T                 resumectl serve
    3 resume     resume after SIGTERM at 50 %    curl -C -               nginx (throttled, then not)
    4 segmented  --connections 4                 --connections 1, aria2c nginx (per-connection limit)
    5 many       1,000 × 4 KiB, 8 at a time      curl -Z, aria2c, wget   nginx
    6 tus        tus upload                      tuspy, curl POST+PATCH  tuspyserver
    7 s3         S3 multipart upload, and killed aws s3 cp               moto (+ counting proxy)
    8 stdin      cat FILE | upload -             curl -T -               resumectl serve
    9 stdout     download -o - | sha256sum       curl -s                 nginx
   10 tls        download over HTTPS             curl                    nginx (TLS)
   11 serve      serve's downloads and uploads   (see cases/serve.py)    resumectl serve
   12 small      4 KiB download ×100, a loop     curl && sync, curl,     nginx
                                                 resumectl --json
   13 startup    --version ×100, a loop          curl --version          -
   14 folder     a 2,000-file folder             aws s3 cp/sync; curl,   moto; resumectl serve
                                                 rclone (webdav)
   15 s3serve    upload and ranged GET through   aws s3 cp, curl signed  moto behind
                 serve --store s3://                                     resumectl serve
   16 serve-get  GETs a second: 1 MiB, 64 KiB,   wrk -t1 -c256 -d10s     resumectl serve against
                 1 MiB ranges of a 1 GiB file                            nginx (one worker)
Only the files and peers the chosen cases use are made and started (scripts/bench/peers.py).

Everything lives in a temp folder: the served files, nginx (own config, 127.0.0.1, free port; one
location unthrottled, one throttled for the resume case, one throttled per connection for the
segmented case), the upload peer (`resumectl serve DIR --port 0`), the outputs and resumectl's
state dir. Servers and any running tool are stopped at the end, on errors and on Ctrl-C.

Each case runs its tools in rounds (A B A B ..., or A B C D A B C D ... with more tools): one
warm-up round, then --pairs timed rounds. Before every run the outputs are removed and os.sync()
is called. Wall time is time.monotonic() around spawn..wait4; CPU (user+sys) and peak RSS come from
os.wait4(). Every tool's output is checked by SHA-256 in the warm-up round (and by size in every
round); a wrong result is a failure, not a number. The ratio columns are the median of the
per-round ratios subject/tool, which cancels the slow drift that page-cache writeback causes.
After every run os.sync() is timed too: "wall+sync" is the time until the data is on disk, which
compares a tool that fsyncs as it goes (resumectl commits) with one that leaves dirty pages behind.
"mach CPU" is the whole machine's busy CPU (/proc/stat) over the run and that sync: a tool's own
rusage misses the kernel threads that write back the pages it left dirty, the whole machine does not.

Case 7 uploads to moto's S3 server (scripts/moto_server.py, SigV4 checked) with resumectl and with
`aws s3 cp` (AWS CLI v1 run as `python3 -m awscli`, configured in a temp AWS_CONFIG_FILE with
multipart_chunksize 8MB and max_concurrent_requests 4, the same part size and concurrency as
resumectl's defaults); then each tool is killed (SIGKILL) once half of the file crossed a counting
proxy in front of moto and run again (resumectl: `resume TOKEN`; the AWS CLI cannot resume, so the
same `aws s3 cp` again): "sent twice" = bytes through the proxy over both runs − the file size.

Case 1's limit is the disk's own durable write of the same size into the same folder (`dd
conv=fdatasync`, timed after the tools' rounds, a warm-up then --pairs runs): a plain download that
is durable when it ends cannot beat it. The run ends with a summary table: per case, the subject's
and each peer's median wall, the paired wall, CPU and wall+sync ratios, peak RSS, and the limit.

Results are printed as tables and written to .bench/results-<timestamp>.json and .bench/latest.json.
Exit status: 0 if every run succeeded and every checksum matched, 1 otherwise, 130 on Ctrl-C.
"""
