#!/usr/bin/env python3
"""Generates the benchmark's request bodies for POST /v1/sessions/{s}/compact.

The bodies are shaped like real agent contexts: short protected facts (paths,
ids, constraints), tool calls paired with their results in a group, tool
outputs of a few hundred to a few thousand tokens, assistant messages, stale
duplicates marked redundant, and (in the spill workload) bodies where only
protected units carry text. Tokens are counted as ceil(bytes / 4). The seed is
fixed, so every run sends the same bytes.

Usage: gen_bodies.py OUTDIR [--scaling 100,1000,10000,100000]
Writes OUTDIR/<workload>.json and OUTDIR/manifest.json, which records for each
body its size, unit count, budget and the plan the bench expects (how many
protected units are externalized and how many bytes that writes to Redis).
"""

import argparse
import json
import math
import os
import random
import sys

SEED = 20240501
POINTER_OVERHEAD = 39  # pointer_tokens = key bytes + 39 (service/core/pointer.h)

# ---- Text that looks like what agents carry ----

WORDS = (
    "build test parser lexer config token budget context session request handler "
    "error warning retry cache index schema migration worker queue socket buffer "
    "allocate release commit branch merge patch review deploy rollback metric "
    "latency thread mutex signal timeout connection redis json http route"
).split()
DIRS = ["src", "lib", "tests", "api", "service", "store", "docs", "scripts", "vendor", "include"]
EXTS = [".c", ".h", ".py", ".go", ".rs", ".md", ".json", ".yaml", ".sh"]
UNICODE = ["é", "ü", "→", "✓", "…", "日本", "Ω", "—"]


def path(rng):
    parts = [rng.choice(DIRS)] + [rng.choice(WORDS) for _ in range(rng.randint(0, 2))]
    return "/".join(parts) + "/" + rng.choice(WORDS) + "_" + str(rng.randint(1, 99)) + rng.choice(EXTS)


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def log_line(rng):
    return "2024-05-%02dT%02d:%02d:%02dZ %s %s: %s (%d ms)" % (
        rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
        rng.choice(["INFO", "WARN", "ERROR", "DEBUG"]), path(rng), sentence(rng, rng.randint(3, 9)),
        rng.randint(1, 5000))


def code_line(rng):
    name = rng.choice(WORDS)
    return rng.choice([
        '    if (%s_len > MAX_%s) return -1;' % (name, name.upper()),
        '    fprintf(stderr, "%s: %%s\\n", strerror(errno));' % name,
        '    char *%s = strndup(buf + off, n); /* "%s" */' % (name, sentence(rng, 2)),
        'static int %s_%s(const char *s, size_t n)' % (name, rng.choice(WORDS)),
        '    for (size_t i = 0; i < n; i++) %s[i] = tolower(s[i]);' % name,
        '}',
        '    return json_pack("{s:s, s:I}", "%s", v, "n", (json_int_t)n);' % name,
    ])


def listing_line(rng):
    return "-rw-r--r-- 1 agent agent %7d May %2d %02d:%02d %s" % (
        rng.randint(10, 900000), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59), path(rng))


def test_line(rng):
    mark = rng.choice(["PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"])
    line = "%s::test_%s_%s %s" % (path(rng), rng.choice(WORDS), rng.choice(WORDS), mark)
    if mark == "FAILED":
        line += "\n    AssertionError: expected '%s' got \"%s\" %s" % (
            sentence(rng, 2), sentence(rng, 2), rng.choice(UNICODE))
    return line


def json_line(rng):
    return json.dumps({"id": rng.randint(1, 10 ** 6), "path": path(rng), "status": rng.choice(
        ["ok", "error", "pending"]), "note": sentence(rng, 4) + " " + rng.choice(UNICODE)},
        ensure_ascii=False)


TOOL_KINDS = [log_line, code_line, listing_line, test_line, json_line]


def fit_text(text, nbytes):
    """Cuts text to at most nbytes of UTF-8 without splitting a character."""
    raw = text.encode("utf-8")[:nbytes]
    return raw.decode("utf-8", errors="ignore")


def tool_output(rng, tokens):
    kind = rng.choice(TOOL_KINDS)
    want = tokens * 4
    lines, size = [], 0
    while size < want:
        line = kind(rng)
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    return fit_text("\n".join(lines), want)


def fact(rng):
    return rng.choice([
        lambda: "Working directory: /home/agent/work/%s" % path(rng),
        lambda: "Task: make %s pass without changing its assertions" % path(rng),
        lambda: "Constraint: never modify files under %s/; the user owns them" % rng.choice(DIRS),
        lambda: "Issue id: PROJ-%d, branch fix/%s-%s" % (rng.randint(100, 9999), rng.choice(WORDS),
                                                         rng.choice(WORDS)),
        lambda: "User said: keep the public API of %s stable %s" % (path(rng), rng.choice(UNICODE)),
        lambda: "Credentials live in the vault at secret/%s/%s; never print them" % (
            rng.choice(WORDS), rng.choice(WORDS)),
        lambda: "Deadline: release %d.%d.%d is cut on Friday; %s" % (
            rng.randint(1, 9), rng.randint(0, 20), rng.randint(0, 9), sentence(rng, 6)),
    ])()


def tool_call(rng):
    return json.dumps({"tool": rng.choice(["bash", "read_file", "grep", "run_tests", "search"]),
                       "args": {"cmd": "%s %s" % (rng.choice(WORDS), path(rng))}})


def message(rng, lo, hi):
    return fit_text(sentence(rng, rng.randint(lo, hi)) + " " + rng.choice(UNICODE), hi * 10)


def ntok(text):
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


def log_uniform(rng, lo, hi):
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


# ---- Units ----

def protected(key, text):
    return {"key": key, "class": "protected", "tokens": ntok(text), "text": text}


def derivable(rng, key, text, tokens=None, group=None, summary=None):
    u = {"key": key, "class": "derivable", "tokens": tokens if tokens is not None else ntok(text)}
    if text is not None:
        u["text"] = text
    priority = rng.choice([0, 0, 0, 1, 1, 2])
    if priority:  # 0 is the default; clients leave it out
        u["priority"] = priority
    if group is not None:
        u["group"] = group
    if summary is not None:
        u["summary"] = {"text": summary, "tokens": ntok(summary)}
    return u


def redundant(key, text):
    u = {"key": key, "class": "redundant", "tokens": ntok(text) if text else 50}
    if text:
        u["text"] = text
    return u


def tool_pair(rng, i, tokens, with_text=True):
    """A tool call and its result, placed or dropped together."""
    g = "g%05d" % i
    call = tool_call(rng)
    out = tool_output(rng, tokens)
    summ = None
    if rng.random() < 0.5:
        summ = "Summary: %s; %d lines, %s" % (sentence(rng, rng.randint(8, 20)), out.count("\n") + 1,
                                             rng.choice(["all passed", "2 failures", "no match"]))
    c = derivable(rng, "call/%05d" % i, call if with_text else None, ntok(call), group=g)
    r = derivable(rng, "result/%05d" % i, out if with_text else None, ntok(out), group=g,
                  summary=summ)
    if rng.random() < 0.3:
        r["reacquire"] = "re-run: %s" % call
    return [c, r]


# ---- The plan's protected step, to check what a budget does ----

def protected_plan(units, budget):
    """Returns (externalized indices, protected cost) under the planner's rule:
    externalize the largest saving first, ties earliest, until the rest fit."""
    prot = [(i, u) for i, u in enumerate(units) if u["class"] == "protected"]
    cost = sum(u["tokens"] for _, u in prot)
    cands = []
    for i, u in prot:
        saving = u["tokens"] - (len(u["key"].encode("utf-8")) + POINTER_OVERHEAD)
        if saving > 0:
            cands.append((-saving, i))
    cands.sort()
    out = []
    for neg, i in cands:
        if cost <= budget:
            break
        cost += neg
        out.append(i)
    if cost > budget:
        raise SystemExit("gen_bodies: budget %d cannot hold the protected units" % budget)
    return sorted(out), cost


def body(units, budget):
    return {"budget": budget, "units": units, "mode": "strict"}


# ---- Workloads ----

def fit_workload():
    """32 units, about 12 KB; the budget holds everything, so nothing spills."""
    rng = random.Random(SEED + 1)
    units = []
    for i in range(6):
        units.append(protected("fact/%02d" % i, fact(rng)))
    for i in range(5):
        units += tool_pair(rng, i, rng.randint(160, 300))
    for i in range(13):
        units.append(derivable(rng, "msg/%02d" % i, message(rng, 10, 40)))
    for i in range(3):
        units.append(redundant("stale/%02d" % i, message(rng, 10, 30)))
    assert len(units) == 32
    budget = sum(u["tokens"] for u in units if u["class"] != "redundant") + 500
    return units, budget


def spill_workload():
    """64 units, about 40 KB, where only protected units carry text and about
    12 protected units must be externalized to fit the budget."""
    rng = random.Random(SEED + 2)
    units = []
    for i in range(14):
        key = "file/%s" % path(rng)
        units.append(protected(key, tool_output(rng, rng.randint(420, 740))))
    for i in range(10):
        units.append(protected("fact/%02d" % i, fact(rng)))
    for i in range(10):
        units += tool_pair(rng, i, log_uniform(rng, 300, 3000), with_text=False)
    for i in range(12):
        u = derivable(rng, "msg/%02d" % i, None, rng.randint(20, 200))
        units.append(u)
    for i in range(8):
        units.append(redundant("stale/%02d" % i, None))
    rng.shuffle(units)
    assert len(units) == 64
    # The least budget at which exactly 12 protected units are externalized,
    # plus a little room for derivable units that is less than the saving of
    # one more pointer (so the 12th pointer is still needed).
    prot_total = sum(u["tokens"] for u in units if u["class"] == "protected")
    savings = sorted((u["tokens"] - len(u["key"].encode()) - POINTER_OVERHEAD
                      for u in units if u["class"] == "protected"), reverse=True)
    need12 = prot_total - sum(savings[:12])
    budget = need12 + min(400, savings[11] - 1)
    return units, budget


def context_workload(n, seed):
    """n units in the mix of a long agent session: 6% protected facts, 2% tool
    calls and 2% tool results (300-3000 tokens) paired in groups, 80% short
    messages, 10% stale redundant units. 5,000 units make about 1 MB."""
    rng = random.Random(seed)
    n_fact = max(1, n * 6 // 100)
    n_pair = max(1, n * 2 // 100)
    n_red = n // 10
    n_msg = n - n_fact - 2 * n_pair - n_red
    units = []
    kinds = ["f"] * n_fact + ["p"] * n_pair + ["m"] * n_msg + ["r"] * n_red
    rng.shuffle(kinds)
    counts = {"f": 0, "p": 0, "m": 0, "r": 0}
    for k in kinds:
        i = counts[k]
        counts[k] += 1
        if k == "f":
            units.append(protected("fact/%06d" % i, fact(rng)))
        elif k == "p":
            units += tool_pair(rng, i, log_uniform(rng, 300, 3000))
        elif k == "m":
            units.append(derivable(rng, "msg/%06d" % i, message(rng, 2, 10)))
        else:
            units.append(redundant("stale/%06d" % i, message(rng, 3, 10)))
    assert len(units) == n
    total = sum(u["tokens"] for u in units if u["class"] != "redundant")
    return units, total * 55 // 100


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--scaling", default="100,1000,10000,100000",
                    help="unit counts of the scaling bodies (comma-separated)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)

    work = [("fit",) + fit_workload(), ("spill",) + spill_workload(),
            ("large",) + context_workload(5000, SEED + 3)]
    for n in [int(x) for x in args.scaling.split(",") if x]:
        work.append(("scaling_%d" % n,) + context_workload(n, SEED + 4))

    manifest = {}
    for name, units, budget in work:
        raw = json.dumps(body(units, budget), ensure_ascii=False,
                         separators=(",", ":")).encode("utf-8")
        fname = os.path.join(args.outdir, name + ".json")
        with open(fname, "wb") as f:
            f.write(raw)
        ext, prot_cost = protected_plan(units, budget)
        spilled = [len(units[i]["text"].encode("utf-8")) for i in ext]
        manifest[name] = {
            "file": os.path.abspath(fname),
            "bytes": len(raw),
            "units": len(units),
            "budget": budget,
            "context_tokens": sum(u["tokens"] for u in units),
            "protected_units": sum(1 for u in units if u["class"] == "protected"),
            "units_with_text": sum(1 for u in units if "text" in u),
            "text_bytes": sum(len(u["text"].encode("utf-8")) for u in units if "text" in u),
            "expected_externalized": len(ext),
            "spill_bytes_mean": (sum(spilled) // len(spilled)) if spilled else 0,
            "spill_bytes_total": sum(spilled),
        }
        print("%-16s %6d units %10d bytes budget %8d externalized %d" % (
            name, len(units), len(raw), budget, len(ext)), file=sys.stderr)
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
