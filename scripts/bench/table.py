"""Medians, per-round ratios and the tables: one per case as it ends, and the summary table at the
end of the run (each case's subject against its peers, the ratios, and the limit where there is one)."""

import statistics

from .util import KiB, MiB, log


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x, spec):
    return "–" if x is None or x != x else format(x, spec)


def summarize(tools, runs, subject, nbytes):
    """Per-tool medians over the timed rounds and median per-round ratios subject/tool."""
    timed = {t: [r for r in runs[t] if r.round > 0 and r.ok] for t in tools}
    by_round = {t: {r.round: r for r in timed[t]} for t in tools}
    out = {}
    for t in tools:
        rs = timed[t]
        walls = [r.wall for r in rs]
        s = {"runs": len(rs), "failed": any(not r.ok for r in runs[t]),
             "wall_median_s": med(walls), "wall_min_s": min(walls) if walls else float("nan"),
             "wall_max_s": max(walls) if walls else float("nan"),
             "cpu_median_s": med([r.cpu for r in rs]),
             "peak_rss_mib": max((r.rss_kib for r in rs), default=0) / KiB,
             "server_cpu_median_s": med([r.srv_cpu for r in rs]),
             "wall_plus_sync_median_s": med([r.wall + r.extra.get("sync_s", float("nan")) for r in rs]),
             "machine_cpu_median_s": med([r.extra.get("machine_cpu_s", float("nan")) for r in rs])}
        s["mib_per_s"] = nbytes / MiB / s["wall_median_s"] if nbytes and walls else float("nan")
        if t != subject and subject in tools:
            common = sorted(set(by_round[t]) & set(by_round[subject]))
            s["ratio_rounds"] = len(common)
            s["wall_ratio"] = med([by_round[subject][k].wall / by_round[t][k].wall for k in common])
            s["cpu_ratio"] = med([by_round[subject][k].cpu / by_round[t][k].cpu for k in common
                                  if by_round[t][k].cpu > 0])
            ws = lambda r: r.wall + r.extra.get("sync_s", float("nan"))
            s["wall_plus_sync_ratio"] = med([ws(by_round[subject][k]) / ws(by_round[t][k]) for k in common])
            mc = lambda r: r.extra.get("machine_cpu_s", float("nan"))
            s["machine_cpu_ratio"] = med([mc(by_round[subject][k]) / mc(by_round[t][k]) for k in common
                                          if mc(by_round[t][k]) > 0])
        out[t] = s
    return out


def print_table(title, tools, summary, subject, extra_cols=()):
    """extra_cols: [(header, key, format)] read from summary[tool]."""
    log(f"\n{title}")
    cols = [("tool", 16, "<"), ("wall s (min–max)", 20, ">"), ("MiB/s", 7, ">"), ("CPU s", 6, ">"),
            ("RSS MiB", 7, ">"), ("srv CPU", 7, ">"), ("wall+sync", 9, ">"), ("mach CPU", 8, ">")]
    cols += [(h, max(7, len(h)), ">") for h, _, _ in extra_cols]
    cols += [("wall ratio", 10, ">"), ("CPU ratio", 9, ">"), ("w+s ratio", 9, ">"), ("mCPU ratio", 10, ">")]
    log("  ".join(f"{h:{a}{w}}" for h, w, a in cols))
    for t in tools:
        s = summary[t]
        cells = [t + (" FAILED" if s["failed"] else ""),
                 f"{fmt(s['wall_median_s'], '.3f')} ({fmt(s['wall_min_s'], '.2f')}–{fmt(s['wall_max_s'], '.2f')})",
                 fmt(s["mib_per_s"], ".1f"), fmt(s["cpu_median_s"], ".3f"), fmt(s["peak_rss_mib"], ".1f"),
                 fmt(s["server_cpu_median_s"], ".3f"), fmt(s["wall_plus_sync_median_s"], ".3f"),
                 fmt(s["machine_cpu_median_s"], ".2f")]
        cells += [fmt(s.get(k), f) for _, k, f in extra_cols]
        cells += [fmt(s.get("wall_ratio"), ".3f") if t != subject else "(subject)",
                  fmt(s.get("cpu_ratio"), ".3f") if t != subject else "",
                  fmt(s.get("wall_plus_sync_ratio"), ".3f") if t != subject else "",
                  fmt(s.get("machine_cpu_ratio"), ".3f") if t != subject else ""]
        log("  ".join(f"{c:{a}{w}}" for c, (_, w, a) in zip(cells, cols)))

