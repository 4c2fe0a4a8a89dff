#!/usr/bin/env python3
"""Checks that the README's move to docs/ (issue 45) lost nothing and copied nothing.

Reads README.md as it was before the move (git show REV:README.md, REV the first argument, default the
last commit before the move) and cuts it into units: the sentences and clauses of its prose (split at
". " and "; "), each cell of its tables, each line of its code blocks. Every unit of 12 or more
characters must occur in the new README.md or docs/*.md (markdown links, bold and line breaks ignored)
on exactly one page. A unit whose wording had to change (a "below" that is now a link, the trace that is
now a list) is listed in EDITED with a phrase that must occur instead; a bold lead-in ("**Limits**: …")
that became a heading ("## Limits") is accepted as such. Also checks that no paragraph of the new pages
is on two pages. Prints what is missing or repeated, and a summary; exits 1 when a unit is missing or a
paragraph repeated (MIN=N in the environment changes the 12).

    python3 scripts/docs-moved.py [REV]
"""
import glob, os, re, subprocess, sys

REV = sys.argv[1] if len(sys.argv) > 1 else "3530f8c"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN = int(os.environ.get("MIN", 12))

# Units reworded in the move: old text (as cut, normalised; or its start) -> a phrase of the new text that
# carries it.
EDITED = {
    # make deps was split (deps-build, deps-test, deps-deb): the sentence says so now.
    "`make deps` installs the Debian packages it needs (`libcurl4-openssl-dev`, `libxml2-dev`, `pkg-config`, "
    "`nginx-light`, `curl`, and for the tests `openssl`, `tinyproxy`, `iproute2`, `man-db`) with `apt-get`":
        "`make deps` installs with `apt-get` whatever is missing of three sets",
    "see \"Where the memory goes\" under Performance)": "see \"Where the memory goes\" in Performance history)",
    "`scripts/check-deb.sh` checks each packaged program with Debian's `hardening-check` (from devscripts, which "
    "`make deps` installs) for PIE, RELRO and BIND_NOW and fails otherwise (fortify is checked on `resumectl-serve`, "
    "the one with fortifiable C in it":
        "(from devscripts, which `make deps-deb` installs) for PIE, RELRO and BIND_NOW",
    "`make bench` compares resumectl with curl, wget and aria2c (see Performance below)":
        "`make bench` compares resumectl with curl, wget and aria2c.",
    # The synopsis: one command a line (the docs test checks each), the S3 and serve options on their pages.
    "resumectl upload FILE s3://BUCKET/KEY [--part-size SIZE] [--parallel N] (S3 options below)":
        "resumectl upload FILE s3://BUCKET/KEY [--part-size SIZE] [--parallel N] (S3 options: docs/s3.md)",
    "resumectl download URL --detach [--start-at TIME] · upload FILE URL --detach [--start-at TIME]":
        "resumectl upload FILE URL --detach [--start-at TIME]",
    "resumectl list [--all] [--json] | show TOKEN | log TOKEN [--follow] | cancel TOKEN [--keep-parts]":
        "resumectl log TOKEN [--follow]",
    # The layout's docs/ line names the new pages first.
    "docs/ performance.md: the memory step by step": "docs/ the reference, a page a topic (README.md links each; "
        "DocsTests checks them); performance.md: the memory step by step, what made the difference, earlier runs",
    # "below" and "above" that are now links to another page.
    "See \"What `kill -9` and a power loss cost\" below": "See What `kill -9` and a power loss cost.",
    "What the token keeps is used again by `resume`, and an option given to `resume` replaces the kept one "
    "(`\"connection\"` in the token, see below)":
        "(`\"connection\"` in the token, see the token schema)",
    "the count starts again after any attempt that made progress (see \"Faults\" below: the same rules hold on "
    "every path)": "made progress (see Faults: the same rules hold on every path)",
    "Uploads: which protocol": "## Which protocol",
    "Uploads: IETF draft": "## IETF draft",
    "Uploads: tus 1.0.0": "## tus 1.0.0",
    "Then the list's small files went into one pass on the network threads (`SmallFilePass`, see `-i` above "
    "and docs/performance.md)": "(`SmallFilePass`, see `-i` on Downloads and docs/performance.md)",
    "events arrive as `TransferEvent`s, failures as a `TransferError` with the exit status above and, when "
    "resumable, the `tokenID` to resume": "a `TransferError` with the exit status of the table and, when resumable",
    # The trace of a retried download: now a list of files, one a line, that the docs test reads.
    "One dropped connection of a plain download, from the command to libcurl and back (9 files): "
    "`ResumeCLI/QuickDownload.swift` (the command line `download URL -o F`":
        "One dropped connection of a plain download, from the command to libcurl and back (9 files)",
    "`Download.swift` reads any other) → `ResumeKit/Client/TransferClient.swift` (`downloadBlocking`: options":
        "Sources/ResumeKit/Client/TransferClient.swift downloadBlocking: options",
    "`download` runs it on a thread of its own) → `Client/TransferClient+Open.swift`":
        "Sources/ResumeKit/Client/TransferClient+Open.swift openDownload: the one opening of a download — route, "
        "checks, id, lock, token Sources/ResumeKit/Download/DownloadOperation.swift the job: its attempt is a closure "
        "Sources/ResumeKit/Retry/Retrier.swift run: the one attempt loop",
    "backoff, `Retry-After`, events, the sleep that `pause` ends) → `Download/DownloadStateMachine.swift`":
        "backoff, Retry-After, events, the sleep that pause ends Sources/ResumeKit/Download/DownloadStateMachine.swift "
        "verdict: the exchange's outcome and head become .fault(Fault) or a decision Sources/ResumeKit/Retry/Fault.swift "
        "what the fault is Sources/ResumeKit/Curl/CurlSession.swift perform: one exchange "
        "Sources/ResumeKit/Curl/ExchangeContext.swift bytes, the stall timer, the seek callback",
    "a claim on each path in `run/outputs.lock` keeps a second process out, see \"Tokens and processes\")":
        "a claim on each path in `run/outputs.lock` keeps a second process out, see Tokens and processes) and read "
        "each output folder once: H (release of cf39727",
}


def norm(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)   # [text](target) -> text
    text = text.replace("**", "")
    return re.sub(r"\s+", " ", text).strip()

def units(markdown):
    out, para, in_code = [], [], False
    def flush():
        if para:
            joined = norm(" ".join(para))
            joined = re.sub(r"^(#+|-|\d+\.)\s+", "", joined)
            out.extend(u.rstrip(".;") for u in re.split(r"(?<=[.;])\s+", joined))
            para.clear()
    for line in markdown.split("\n"):
        if line.startswith("```"):
            flush(); in_code = not in_code; continue
        if in_code:
            out.append(norm(line)); continue
        if line.startswith("|"):
            flush()
            out.extend(norm(c) for c in line.strip().strip("|").split("|") if set(c.strip()) - set("- "))
            continue
        if not line.strip() or line.startswith("#") or re.match(r"\s*(-|\d+\.)\s", line):
            flush()
        para.append(line) if line.strip() else None
    flush()
    return [u for u in out if u]

old = subprocess.run(["git", "-C", ROOT, "show", f"{REV}:README.md"], capture_output=True, text=True, check=True).stdout
pages = {"README.md": open(os.path.join(ROOT, "README.md")).read()}
for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
    pages["docs/" + os.path.basename(p)] = open(p).read()
flat = {name: norm(text.replace("|", " | ")) for name, text in pages.items()}
flat_cells = {name: norm(text) for name, text in pages.items()}

all_units = units(old)
checked = [u for u in all_units if len(u) >= MIN]
missing, repeated, edited_found, headed, seen = [], [], 0, 0, set()
for u in checked:
    if u in seen:          # the old README itself said it twice: one check is enough
        continue
    seen.add(u)
    key = next((k for k in EDITED if u.startswith(k)), None)   # a key may be the unit's start
    want = EDITED[key] if key else u
    where = [n for n in pages if want in flat[n] or want in flat_cells[n]]
    lead = re.match(r"([^:]{2,40}): ", u)
    if not where and not key and lead:   # a bold lead-in ("**Limits**: …") that became a heading ("## Limits")
        want = "## " + lead.group(1) + " " + u[lead.end():]
        where = [n for n in pages if want in flat[n]]
        headed += bool(where)
    if key and not where:
        print("EDITED, BUT ITS NEW PHRASE IS NOT FOUND:", want)
    if key and where:
        edited_found += 1
    if not where:
        missing.append(u)
    elif len(where) > 1 and not key:
        repeated.append((u, where))

for u in missing:
    print("MISSING:", u)
for u, where in repeated:
    print("ON", len(where), "PAGES:", ", ".join(where), "::", u[:100])
print(f"old README: {len(old.splitlines())} lines, {len(all_units)} units, {len(seen)} distinct of >= {MIN} chars "
      f"({len(all_units) - len(checked)} shorter ones not checked)")
print(f"found: {len(seen) - len(missing)} ({edited_found} of them reworded, listed in EDITED; {headed} whose lead-in became "
      f"a heading); missing: {len(missing)}; "
      f"on more than one page: {len(repeated)}")
# No page repeats another's paragraphs: every paragraph (blank-line separated, 80 characters or more, the
# navigation lines aside) of the new pages is on one page only.
paragraphs = {}
for name, text in pages.items():
    for block in re.split(r"\n\s*\n", text):
        b = norm(block)
        if len(b) >= 80 and not b.startswith(("README ·", "--- README")):
            paragraphs.setdefault(b, set()).add(name)
shared = [(b, sorted(names)) for b, names in paragraphs.items() if len(names) > 1]
for b, names in shared:
    print("PARAGRAPH ON", ", ".join(names), "::", b[:100])
print(f"new pages: {len(pages)}, {len(paragraphs)} paragraphs of >= 80 chars, {len(shared)} on more than one page")
sys.exit(1 if missing or shared else 0)
