"""The cases, one module each. A case module has NUMBER (its number in tables, JSON keys and
`--cases 1,7`), NAME (`make bench CASE=s3`), FILES and PEERS (what the harness makes and starts for
it before any case runs), COMMANDS and PY_MODULES (what must be installed), and run(bench)."""

from . import download, folder, folderdown, many, mirrors, resume, s3, s3serve, segmented, serve, serveget, small, startup, stdin, stdout, sync, tls, tus, tusparallel, upload

# In number order, the order a run takes them.
ALL = sorted((download, upload, resume, segmented, many, tus, s3, stdin, stdout, tls, serve, small, startup, folder, s3serve,
              serveget, folderdown, mirrors, sync, tusparallel),
             key=lambda c: c.NUMBER)
BY_KEY = {**{c.NAME: c for c in ALL}, **{str(c.NUMBER): c for c in ALL}}


def select(text):
    """Cases named in text: names or numbers, separated by commas or spaces; empty or "all" is every
    case. Returns them in number order; raises ValueError naming what is unknown."""
    words = [w for w in text.replace(",", " ").split()]
    if not words or words == ["all"]:
        return list(ALL)
    unknown = [w for w in words if w.lower() not in BY_KEY]
    if unknown:
        raise ValueError(", ".join(unknown))
    chosen = {BY_KEY[w.lower()] for w in words}
    return [c for c in ALL if c in chosen]
