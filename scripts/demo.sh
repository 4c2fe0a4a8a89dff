#!/usr/bin/env bash
# The main job on a fresh machine: serve a 256 MiB file, download it while cutting the transfer once
# (SIGINT, as Ctrl-C would) and resume it, upload it back the same way, and check both SHA-256s.
set -euo pipefail
bin=$(realpath "${1:-.build/debug/resumectl}")
work=$(mktemp -d /tmp/resumectl-demo.XXXXXX)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
export RESUMECTL_STATE_DIR="$work/state"
mkdir -p "$work/served" "$work/here"

step() { printf '\n== %s\n' "$*"; }

step "making a 256 MiB file to serve"
head -c $((256 * 1024 * 1024)) /dev/urandom > "$work/served/demo.bin"
want=$(sha256sum "$work/served/demo.bin" | cut -d' ' -f1)

step "resumectl serve on a free port"
"$bin" serve "$work/served" --port 0 > "$work/serve.out" 2> "$work/serve.log" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.05; done
base=$(sed -n 's/^listening on //p' "$work/serve.out")
echo "server: $base"

# A transfer cut by SIGINT must exit 130 with its token kept; anything else is a failure of the demo.
cut_after() {
    local seconds=$1; shift
    "$bin" "$@" --limit-rate 64M & local pid=$!
    sleep "$seconds"
    kill -INT "$pid"
    local status=0
    wait "$pid" || status=$?
    [ "$status" -eq 130 ] || { echo "expected exit 130 after SIGINT, got $status" >&2; exit 1; }
}

step "download, cut by SIGINT after 1.5 s"
cd "$work/here"
cut_after 1.5 download "$base/demo.bin" -o demo.bin
token=$("$bin" list | awk '$2 == "download" {print $1}')
echo "token: $token ($("$bin" list | awk '$2 == "download" {print $4}') bytes committed)"

step "resumectl resume $token"
"$bin" resume "$token"
got=$(sha256sum demo.bin | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "download sha256 mismatch: $got != $want" >&2; exit 1; }

step "upload, cut by SIGINT after 1.5 s"
cut_after 1.5 upload demo.bin "$base/inbox/demo.bin"
token=$("$bin" list | awk '$2 == "upload" {print $1}')
echo "token: $token"

step "resumectl resume $token"
"$bin" resume "$token"
up=$(sha256sum "$work/served/inbox/demo.bin" | cut -d' ' -f1)
[ "$up" = "$want" ] || { echo "upload sha256 mismatch: $up != $want" >&2; exit 1; }

step "summary"
echo "download: cut once, resumed, sha256 $got  OK"
echo "upload:   cut once, resumed, sha256 $up  OK"
echo "tokens left: $("$bin" list | wc -l)"
