#!/usr/bin/env bash
# `make lint`, also run by .ci/run: Sources and Tests are as `swift format` (the toolchain's, configured by
# .swift-format: 4 spaces, 120 columns, layout only) leaves them, no line is longer than 120 characters (strings
# and comments, which the formatter does not break, included), and no comment cites a file outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
swift format lint --strict --configuration .swift-format --recursive --parallel Sources Tests || status=1
python3 - <<'PY' || status=1
import pathlib, sys
long = [f"{p}:{n}: {len(line)} characters" for p in sorted(pathlib.Path(".").glob("[ST]*/**/*.swift"))
        if p.parts[0] in ("Sources", "Tests")
        for n, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1) if len(line) > 120]
print("\n".join(long), file=sys.stderr) if long else None
sys.exit(1 if long else 0)
PY
if grep -rnE 'DESIGN\.md|\.\./shared/' Sources Tests Fuzz scripts Makefile; then
    echo "lint: a comment cites a file that is not in the repository" >&2
    status=1
fi
[ "$status" -eq 0 ] && echo "lint: ok"
exit "$status"
