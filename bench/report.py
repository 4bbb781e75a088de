#!/usr/bin/env python3
"""The bench's bookkeeping, called by bench/run.

  report.py check MANIFEST WORKLOAD RESPONSE_FILE
      Checks one compactd answer for a workload's body: every unit in exactly
      one list, used_tokens <= budget, and as many externalized units as the
      generator planned. Exits 1 with a message when it is wrong.

  report.py table RUNDIR OUTFILE
      Reads what bench/run left in RUNDIR (manifest.json, machine.json,
      wrk/*.json, rss/*.json, redis/*.json, parse/*.json), prints the one
      table, and writes it with every raw figure as JSON to OUTFILE.
      Ratios are compactd's req/s over each floor's; "x JSON CPU" is
      compactd's CPU time per request over the JSON floor's (json_loadb),
      "x read CPU" over the read floor's (compactd's own parse, so what is
      left is what compactd does beyond parsing); "x parse" is over the
      parse floor (simdjson, the limit of reading a request) and "x spill"
      over the spill floor (simdjson and the spilled texts stored in
      Redis); scaling rows use the median latency per unit.
"""

import glob
import json
import os
import sys

LISTS = ("preserved", "summarized", "externalized", "dropped")


def check(manifest_path, workload, response_path):
    m = json.load(open(manifest_path))[workload]
    units = json.load(open(m["file"]))["units"]
    resp = json.load(open(response_path))
    seen = []
    for name in LISTS:
        seen += [e["key"] for e in resp.get(name, [])]
    want = [u["key"] for u in units]
    if sorted(seen) != sorted(want):
        sys.exit("check %s: the lists do not hold every unit exactly once" % workload)
    if resp["used_tokens"] > m["budget"]:
        sys.exit("check %s: used_tokens %d > budget %d" % (workload, resp["used_tokens"], m["budget"]))
    ext = len(resp["externalized"])
    if ext != m["expected_externalized"]:
        sys.exit("check %s: %d externalized, the generator planned %d" % (
            workload, ext, m["expected_externalized"]))
    print("check %s: ok (%d preserved, %d summarized, %d externalized, %d dropped, used %d of %d)" % (
        workload, len(resp["preserved"]), len(resp["summarized"]), ext, len(resp["dropped"]),
        resp["used_tokens"], m["budget"]))


# ---- The table ----

def load_dir(rundir, sub):
    out = {}
    for f in sorted(glob.glob(os.path.join(rundir, sub, "*.json"))):
        out[os.path.basename(f)[:-5]] = json.load(open(f))
    return out


def median_rounds(rounds, key):
    """Groups "target.run.N" records by "target.run" and keeps the median
    round by key (the lower middle one for an even count)."""
    groups = {}
    for name, rec in rounds.items():
        groups.setdefault(name.rsplit(".", 1)[0], []).append(rec)
    out = {}
    for name, recs in groups.items():
        recs.sort(key=lambda r: r[key])
        out[name] = dict(recs[(len(recs) - 1) // 2], rounds=[r[key] for r in recs])
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def verdict(value, limit, lower_is_better):
    if value is None:
        return "n/a"
    ok = value <= limit if lower_is_better else value >= limit
    return "met" if ok else "NOT MET"


def table(rundir, outfile):
    manifest = json.load(open(os.path.join(rundir, "manifest.json")))
    machine = json.load(open(os.path.join(rundir, "machine.json")))
    wrk_rounds = load_dir(rundir, "wrk")
    rss_rounds = load_dir(rundir, "rss")
    wrk = median_rounds(wrk_rounds, "rps")
    rss = median_rounds(rss_rounds, "vmhwm_kb")
    redis = load_dir(rundir, "redis")
    parse = load_dir(rundir, "parse")

    def rps(target, run):
        r = wrk.get("%s.%s" % (target, run))
        return r["rps"] if r else None

    rows = []
    runs = [k.split(".", 1)[1] for k in wrk
            if k.startswith(("compactd.", "json.", "read.", "http.", "parse."))]
    order = ["fit", "spill", "large", "large_c1"]
    scaling = sorted({r for r in runs if r.startswith("scaling_")}, key=lambda r: int(r.split("_")[1]))
    for run in order + scaling:
        if run not in runs:
            continue
        workload = "large" if run == "large_c1" else run
        c = wrk.get("compactd." + run)
        row = {
            "workload": run,
            "body_bytes": manifest[workload]["bytes"],
            "units": manifest[workload]["units"],
            "connections": (c or wrk.get("json." + run) or {}).get("connections"),
            "rps": c["rps"] if c else None,
            "p50_ms": c["p50_ms"] if c else None,
            "p99_ms": c["p99_ms"] if c else None,
            "mean_ms": c["mean_ms"] if c else None,
            "errors": c["errors"] if c else None,
            "peak_rss_kb": rss.get("compactd." + run, {}).get("vmhwm_kb"),
            "idle_rss_kb": rss.get("compactd." + run, {}).get("idle_kb"),
            "json_floor_peak_rss_kb": rss.get("json." + run, {}).get("vmhwm_kb"),
            "json_floor_idle_rss_kb": rss.get("json." + run, {}).get("idle_kb"),
            "http_floor_rps": rps("http", run),
            "json_floor_rps": rps("json", run),
            "read_floor_rps": rps("read", run),
            "parse_floor_rps": rps("parse", run),
            "spill_floor_rps": rps("spillfloor", run),
            "http_floor_p50_ms": (wrk.get("http." + run) or {}).get("p50_ms"),
            "json_floor_p50_ms": (wrk.get("json." + run) or {}).get("p50_ms"),
            "redis_floor_rps": redis.get(run, {}).get("per_compaction_rps"),
            "target": "",
        }
        for name, key in (("compactd", ""), ("json", "json_floor_"), ("read", "read_floor_"),
                          ("http", "http_floor_"), ("parse", "parse_floor_"),
                          ("spillfloor", "spill_floor_")):
            r = wrk.get("%s.%s" % (name, run))
            # CPU per request of the server under test, and of Redis meanwhile
            for what, field in (("cpu_us", "server_cpu_s"), ("redis_cpu_us", "redis_cpu_s")):
                row[key + what] = (r[field] * 1e6 / r["requests"]
                                   if r and r.get("requests") and field in r else None)
        row["x_json_cpu"] = ratio(row["cpu_us"], row["json_floor_cpu_us"])
        row["x_http"] = ratio(row["rps"], row["http_floor_rps"])
        row["x_json"] = ratio(row["rps"], row["json_floor_rps"])
        row["x_read"] = ratio(row["rps"], row["read_floor_rps"])
        row["x_read_cpu"] = ratio(row["cpu_us"], row["read_floor_cpu_us"])
        row["x_redis"] = ratio(row["rps"], row["redis_floor_rps"])
        row["x_parse"] = ratio(row["rps"], row["parse_floor_rps"])
        row["x_parse_cpu"] = ratio(row["cpu_us"], row["parse_floor_cpu_us"])
        row["x_spill_floor"] = ratio(row["rps"], row["spill_floor_rps"])
        row["x_spill_floor_cpu"] = ratio(row["cpu_us"], row["spill_floor_cpu_us"])
        if run == "fit":
            row["target"] = "x JSON >= 0.8: %s; x parse >= 0.5: %s" % (
                verdict(row["x_json"], 0.8, False), verdict(row["x_parse"], 0.5, False))
        elif run == "spill":
            row["target"] = "x JSON >= 0.8: %s; x spill >= 0.4: %s" % (
                verdict(row["x_json"], 0.8, False), verdict(row["x_spill_floor"], 0.4, False))
        rows.append(row)

    byrun = {r["workload"]: r for r in rows}

    def grown(r, prefix=""):
        peak = r[prefix + "peak_rss_kb"]
        return None if peak is None else (peak - (r[prefix + "idle_rss_kb"] or 0)) * 1024

    large = byrun.get("large_c1")
    if large:
        # Server time: compactd's median latency over the HTTP floor's for the
        # same body on one connection (the transport both pay), against
        # json_loadb of the body timed alone.
        p = parse.get("large", {})
        loadb = p.get("median_ms")
        server = json_server = None
        if large["p50_ms"] is not None and large["http_floor_p50_ms"] is not None:
            server = large["p50_ms"] - large["http_floor_p50_ms"]
        if large["json_floor_p50_ms"] is not None and large["http_floor_p50_ms"] is not None:
            json_server = large["json_floor_p50_ms"] - large["http_floor_p50_ms"]
        large["server_ms"] = server
        large["json_loadb_ms"] = loadb
        large["json_floor_server_ms"] = json_server
        large["x_loadb"] = ratio(server, loadb)
        large["x_json_floor_server"] = ratio(server, json_server)
        # The same from CPU time, which other load on the machine moves less.
        cpu_server = None
        if large["cpu_us"] is not None and large["http_floor_cpu_us"] is not None:
            cpu_server = (large["cpu_us"] - large["http_floor_cpu_us"]) / 1000
        large["server_cpu_ms"] = cpu_server
        large["x_loadb_cpu"] = ratio(cpu_server, loadb)
        large["jansson_tree_per_body"] = p.get("tree_per_body")
        g = grown(large)
        large["rss_per_body"] = g / large["body_bytes"] if g is not None else None
        gj = grown(large, "json_floor_")
        large["json_floor_rss_per_body"] = gj / large["body_bytes"] if gj is not None else None
        large["target"] = ("server %s ms = %sx loadb (%s ms) <= 1.3: %s (by CPU %sx); "
                           "RSS +%sx body (JSON floor +%sx) <= 4: %s") % (
            fmt(server, ".1f"), fmt(large["x_loadb"], ".2f"), fmt(loadb, ".1f"),
            verdict(large["x_loadb"], 1.3, True), fmt(large["x_loadb_cpu"], ".2f"),
            fmt(large["rss_per_body"], ".1f"),
            fmt(large["json_floor_rss_per_body"], ".1f"), verdict(large["rss_per_body"], 4.0, True))
    big = byrun.get("large")
    if big and big["peak_rss_kb"] is not None and big["connections"]:
        big["rss_per_body"] = grown(big) / (big["body_bytes"] * big["connections"])
        big["target"] = "RSS +%sx body per request in flight <= 4: %s" % (
            fmt(big["rss_per_body"], ".2f"), verdict(big["rss_per_body"], 4.0, True))
    per_unit = {}
    for run in scaling:
        r = byrun[run]
        if r["p50_ms"] is not None:
            per_unit[run] = r["p50_ms"] * 1000 / r["units"]
            r["us_per_unit"] = per_unit[run]
        loadb = parse.get(run, {}).get("median_ms")
        if loadb is not None:
            r["json_loadb_us_per_unit"] = loadb * 1000 / r["units"]
        r["target"] = "%s us/unit (json_loadb %s)" % (
            fmt(r.get("us_per_unit"), ".2f"), fmt(r.get("json_loadb_us_per_unit"), ".2f"))
    base = per_unit.get("scaling_1000")
    for run in scaling:
        if int(run.split("_")[1]) > 1000 and base and run in per_unit:
            x = per_unit[run] / base
            byrun[run]["x_per_unit_1k"] = x
            byrun[run]["target"] += "; %.2fx of 1k <= 1.5: %s" % (x, verdict(x, 1.5, True))

    head = ("workload", "conns", "req/s", "p50 ms", "p99 ms", "peak RSS MB", "CPU us/req",
            "x HTTP", "x JSON", "x read", "x parse", "x spill", "x Redis", "x JSON CPU",
            "x read CPU", "x parse CPU", "target")
    lines = [head]
    for r in rows:
        lines.append((
            r["workload"], fmt(r["connections"], "d"), fmt(r["rps"], ".0f"),
            fmt(r["p50_ms"], ".2f"), fmt(r["p99_ms"], ".2f"),
            fmt(r["peak_rss_kb"] / 1024 if r["peak_rss_kb"] is not None else None, ".1f"),
            fmt(r["cpu_us"], ".0f"), fmt(r["x_http"], ".2f"), fmt(r["x_json"], ".2f"),
            fmt(r["x_read"], ".2f"), fmt(r["x_parse"], ".2f"), fmt(r["x_spill_floor"], ".2f"),
            fmt(r["x_redis"], ".2f"), fmt(r["x_json_cpu"], ".2f"), fmt(r["x_read_cpu"], ".2f"),
            fmt(r["x_parse_cpu"], ".2f"), r["target"]))
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(head))]
    text = []
    for n, l in enumerate(lines):
        text.append("| " + " | ".join(str(v).ljust(widths[i]) for i, v in enumerate(l)) + " |")
        if n == 0:
            text.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    floors = ["floor req/s (HTTP / JSON / read / parse / spill / Redis), and CPU us per request"
              " of the server (and of Redis) for parse / spill / compactd:"]
    for r in rows:
        floors.append("  %-15s %s / %s / %s / %s / %s / %s; CPU %s / %s (%s) / %s (%s)" % (
            r["workload"], fmt(r["http_floor_rps"], ".0f"), fmt(r["json_floor_rps"], ".0f"),
            fmt(r["read_floor_rps"], ".0f"), fmt(r["parse_floor_rps"], ".0f"),
            fmt(r["spill_floor_rps"], ".0f"), fmt(r["redis_floor_rps"], ".0f"),
            fmt(r["parse_floor_cpu_us"], ".0f"), fmt(r["spill_floor_cpu_us"], ".0f"),
            fmt(r["spill_floor_redis_cpu_us"], ".0f"), fmt(r["cpu_us"], ".0f"),
            fmt(r["redis_cpu_us"], ".0f")))
    errors = [r["workload"] for r in rows if r["errors"] and any(r["errors"].values())]
    out = "\n".join(text)
    print(out)
    print("\n".join(floors))
    if errors:
        print("wrk reported errors for: %s (see %s)" % (", ".join(errors), outfile))
    print("machine: %s" % machine.get("summary", ""))

    result = {"machine": machine, "manifest": manifest, "rows": rows, "table": out,
              "raw": {"wrk": wrk_rounds, "rss": rss_rounds, "redis": redis, "parse": parse}}
    os.makedirs(os.path.dirname(os.path.abspath(outfile)), exist_ok=True)
    with open(outfile, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("wrote %s" % outfile)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
