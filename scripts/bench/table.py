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



def final_rows(results):
    """One row per case and peer (the case's subject against that tool), in the order the cases ran:
    medians, the paired ratios, peak RSS, and the case's limit where it has one."""
    rows = []
    for key, r in results.items():
        if "skipped" in r:
            rows.append({"case": key, "skipped": r["skipped"]})
            continue
        if "rows" in r:  # 7b: each tool killed once and run again, no rounds
            tools = list(r["rows"])
            subject = tools[0]
            sub = r["rows"][subject]
            for t in tools[1:]:
                o = r["rows"][t]
                ok = sub.get("ok") and o.get("ok")
                rows.append({
                    "case": key, "subject": subject, "peer": t + ("" if o.get("ok") else " FAILED"),
                    "subject_wall_s": sub.get("second_wall_s"), "peer_wall_s": o.get("second_wall_s"),
                    "wall_ratio": sub["second_wall_s"] / o["second_wall_s"] if ok else None,
                    "cpu_ratio": sub["second_cpu_s"] / o["second_cpu_s"] if ok and o["second_cpu_s"] else None,
                    "subject_rss_mib": sub.get("second_peak_rss_kib", 0) / KiB if sub.get("ok") else None,
                    "peer_rss_mib": o.get("second_peak_rss_kib", 0) / KiB if o.get("ok") else None,
                    "note": "second run; sent twice " + " vs ".join(
                        fmt(r["rows"][x].get("sent_twice_bytes", float("nan")) / MiB, ".1f") for x in (subject, t))
                            + " MiB"})
            continue
        if "rps" in r:  # 16: requests a second under wrk, not the time of one run
            s = r["rps"]
            rows.append({"case": key, "subject": "serve", "peer": "nginx",
                         "rps_ratio": s["ratio"], "subject_rps": s["serve"]["rps_median"], "peer_rps": s["nginx"]["rps_median"],
                         "note": f"req/s {fmt(s['serve']['rps_median'], ',.0f')} vs {fmt(s['nginx']['rps_median'], ',.0f')}: "
                                 f"{fmt(s['ratio'], '.3f')}× (target ≥ {r['target']}×)"})
            continue
        subject, summary = r["subject"], r["summary"]
        sub = summary.get(subject, {})
        limit = r.get("limit")
        for i, t in enumerate(t for t in summary if t != subject):
            s = summary[t]
            row = {"case": key, "subject": subject + (" FAILED" if sub.get("failed") else ""),
                   "peer": t + (" FAILED" if s["failed"] else ""),
                   "subject_wall_s": sub.get("wall_median_s"), "peer_wall_s": s["wall_median_s"],
                   "wall_ratio": s.get("wall_ratio"), "cpu_ratio": s.get("cpu_ratio"),
                   "wall_plus_sync_ratio": s.get("wall_plus_sync_ratio"),
                   "subject_rss_mib": sub.get("peak_rss_mib"), "peer_rss_mib": s["peak_rss_mib"]}
            if limit and i == 0:
                row["limit"] = (f"{limit['what']} {fmt(limit['wall_median_s'], '.2f')} s, "
                                f"{subject} {fmt(limit['subject_ratio'], '.2f')}×")
                row["limit_wall_s"], row["limit_ratio"] = limit["wall_median_s"], limit["subject_ratio"]
            rows.append(row)
    return rows


def print_final(rows):
    """The table at the end of the run: every case's subject against each peer."""
    log("\nsummary: medians over the timed rounds; ratios = subject/peer, the median of the per-round "
        "ratios (7b: its second runs);\n         w+s = counting until the data is on disk (wall + os.sync()); "
        "limit = the machine's own bound for the case, where it has one")
    cols = [("case", 23, "<"), ("subject", 16, "<"), ("peer", 16, "<"), ("subject s", 9, ">"),
            ("peer s", 8, ">"), ("wall ratio", 10, ">"), ("CPU ratio", 9, ">"), ("w+s ratio", 9, ">"),
            ("RSS MiB", 11, ">"), ("limit", 8, "<"), ("", 0, "<")]
    log("  ".join(f"{h:{a}{w}}" for h, w, a in cols).rstrip())
    for row in rows:
        if "skipped" in row:
            log(f"{row['case']:<23}  skipped: {row['skipped']}")
            continue
        cells = [row["case"], row["subject"], row["peer"], fmt(row.get("subject_wall_s"), ".3f"),
                 fmt(row.get("peer_wall_s"), ".3f"), fmt(row.get("wall_ratio"), ".3f"),
                 fmt(row.get("cpu_ratio"), ".3f"), fmt(row.get("wall_plus_sync_ratio"), ".3f"),
                 f"{fmt(row.get('subject_rss_mib'), '.1f')}/{fmt(row.get('peer_rss_mib'), '.1f')}",
                 row.get("limit", "–"), row.get("note", "")]
        log("  ".join(f"{c:{a}{w}}" for c, (_, w, a) in zip(cells, cols)).rstrip())
