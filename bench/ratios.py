#!/usr/bin/env python3
"""Prints a markdown table of Ares vs Ray from two JSON-lines files of the same run,
with the bars of the foundation issue. Usage: ratios.py ray_micro.jsonl ares_micro.jsonl"""
import json, sys

def load(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            d = json.loads(line)
            if d.get("bench") != "meta":
                out[d["bench"]] = d
    return out

ray, ares = load(sys.argv[1]), load(sys.argv[2])
bars = {"a_sync_tasks": 30, "b_async_tasks": 50, "d_put_small": 100, "d_get_small": 20,
        "f_chain_tasks": 30, "g_fanin_tasks": 50, "e_put_100MB": 2, "e_get_100MB": 2}
print("| bench | unit | Ray 2.60 | Ares | Ares / Ray | bar | memcpy (same run) | Ares / memcpy |")
print("|---|---|---|---|---|---|---|---|")
for b in ["a_sync_tasks", "b_async_tasks", "d_put_small", "d_get_small", "e_put_100MB", "e_get_1MB",
          "e_get_100MB", "e_get_1GB", "f_chain_tasks", "g_fanin_tasks"]:
    a = ares.get(b)
    if not a:
        continue
    r = ray.get(b) or (ray.get("e_get_100MB") if b.startswith("e_get") else None)
    size = b.split("_")[-1] if b.startswith("e_") else None
    mc = ares.get("memcpy_" + size) if size else None
    ratio = a["value"] / r["value"] if r else float("nan")
    bar = bars.get(b, 2 if b.startswith("e_get") else None)
    ok = "" if bar is None else ("≥ %d× ✓" % bar if ratio >= bar else "≥ %d× ✗" % bar)
    mcs = "%.1f GB/s" % mc["value"] if mc else ""
    frac = "%.0f%%" % (100 * a["value"] / mc["value"]) if mc else ""
    rv = "%.4g" % r["value"] + ("" if ray.get(b) else " (100 MB)") if r else "-"
    print(f"| `{b}` | {a['unit']} | {rv} | {a['value']:.4g} | {ratio:.1f}× | {ok} | {mcs} | {frac} |")
