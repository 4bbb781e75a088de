#!/usr/bin/env python3
"""Reads a callgrind file of N requests (bench/profile) and prints where a
compaction's instructions go, per request.

  profile_phases.py total FILE
      The file's total instructions.
  profile_phases.py perf FILE
      The same phases from a perf record -g of compactd under load (FILE:
      its `perf script -F comm,ip,sym` output), as shares of the samples:
      each sample goes to the innermost phase function on its stack, and
      the kernel's by the system call it is in. Stacks through libc lose
      frames (it keeps no frame pointers), so some samples stay
      unattributed.
  profile_phases.py phases FILE N
      compactd's request split into its phases (inclusive costs of the
      functions that begin each, below), then its costliest functions by
      their own instructions. callgrind runs SHA-256 in its portable
      rounds (it does not emulate the SHA extensions that compactd uses
      where the CPU has them, about ten times fewer cycles), so the
      digests are a phase of their own.

bench/profile zeroes the counters after the warm-up requests, so calls
that were under way then (the threads' loops) are counted 0 times;
callgrind_annotate takes the cost of a call counted 0 times for the
caller's own, so such calls are counted once here before it reads them.
"""

import os
import re
import subprocess
import sys
import tempfile

# (label, expression): a function's inclusive instructions, or A - B.
# Function names are matched without their file and without gcc's
# .part.N / .constprop.N / .isra.N suffixes.
PHASES = [
    # A handler runs under http_run_handler() on a pool's thread or, for a
    # small compaction, on the connection's own.
    ("HTTP: MHD threads and pools (read, hand-offs, access log, send)",
     "TOTAL - http_run_handler"),
    ("routing, checks, answer framing",
     "http_run_handler - json_decode_compact - ops_compact_plan - compact_finish"),
    ("decode: shape scan of the raw body", "shape_scan"),
    ("decode: parse into the jansson tree (json_read, region)", "json_region_loadb"),
    ("decode: typed request from the tree",
     "json_decode_compact - json_parse_request - json_direct_compact"),
    ("decode: straight into the typed request (json_direct_compact)", "json_direct_compact"),
    ("plan (ops_compact_plan), digests aside", "ops_compact_plan - pricing_digest_spills"),
    ("SHA-256 of the spilled texts (pricing_digest_spills)", "pricing_digest_spills"),
    ("answer check: each spill's escaped size (spills_returnable)", "spills_returnable"),
    ("answer encoding (json_encode_plan)", "json_encode_plan"),
    ("log-entry encoding (compaction_entry)", "compaction_entry"),
    ("commit: its name (commit_name: snprintf, SHA-256 of the plan)",
     "compaction_commit - store_commit_keyed - store_event_defer"),
    ("commit: Redis command (store_commit_keyed, store_event_defer)",
     "store_commit_keyed + store_event_defer"),
    ("freeing the request (compact_input_free)", "compact_input_free"),
]

LINE = re.compile(r"^\s*([0-9,]+)\s+\([ 0-9.]+%\)\s+(?:[*<>]\s+)?(\S.*?)(?:\s+\[.*\])?$")
SUFFIX = re.compile(r"(\.(part|constprop|isra|cold)\.\d+)+$")


def fixed_copy(path):
    """The file with calls counted 0 times counted once (see above)."""
    out = tempfile.NamedTemporaryFile("w", suffix=".callgrind", delete=False)
    with open(path) as f:
        for line in f:
            out.write("calls=1 " + line[8:] if line.startswith("calls=0 ") else line)
    out.close()
    return out.name


def annotate(path, inclusive):
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=%s" % ("yes" if inclusive else "no"),
         "--threshold=100", "--auto=no", path], capture_output=True, text=True, check=True).stdout
    costs, rows, total, started = {}, [], 0, False
    for line in text.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
        if "file:function" in line:
            started = True
            continue
        if costs and line.startswith("----"):
            break
        m = LINE.match(line) if started else None
        if not m:
            continue
        name = m.group(2)
        func = SUFFIX.sub("", name.rsplit(":", 1)[-1])
        n = int(m.group(1).replace(",", ""))
        rows.append((n, name))
        # A function inlined into several objects shows once per object:
        # the largest is the one called.
        if n > costs.get(func, (0, ""))[0]:
            costs[func] = (n, name)
    return total, costs, rows


def evaluate(expr, total, costs):
    value = 0
    sign = 1
    for tok in expr.split():
        if tok in "+-":
            sign = 1 if tok == "+" else -1
            continue
        value += sign * (total if tok == "TOTAL" else costs.get(tok, (0, ""))[0])
    return value


def phases(path, n):
    fixed = fixed_copy(path)
    try:
        total, inc, _ = annotate(fixed, True)
        _, _, own = annotate(fixed, False)
    finally:
        os.unlink(fixed)
    print("%-64s %10s %7s" % ("phase", "instr/req", "share"))
    accounted = 0
    for label, expr in PHASES:
        v = evaluate(expr, total, inc)
        accounted += v
        print("%-64s %10s %6.1f%%" % (label, format(round(v / n), ","), 100.0 * v / total))
    rest = total - accounted
    print("%-64s %10s %6.1f%%" % ("the rest", format(round(rest / n), ","), 100.0 * rest / total))
    print("%-64s %10s" % ("total", format(round(total / n), ",")))
    print()
    print("costliest functions, own instructions per request:")
    top = sorted(own, reverse=True)[:30]
    for v, name in top:
        print("  %10s %5.1f%%  %s" % (format(round(v / n), ","), 100.0 * v / total,
                                     re.sub(r"^.*/(?=[^/]+:)", "", name)))


# Innermost first: a sample goes to the first of these on its stack.
PERF_USER = [
    ("decode: shape scan", ("shape_scan",)),
    ("decode: parse into the jansson tree", ("json_region_loadb", "json_read")),
    ("decode: straight into the typed request", ("json_direct_compact",)),
    ("decode: typed request from the tree", ("json_decode_compact",)),
    ("SHA-256 of the spilled texts", ("pricing_digest_spills",)),
    ("plan", ("ops_compact_plan", "compaction_plan")),
    ("answer: spills_returnable (escaped size of each spill)", ("spills_returnable",)),
    ("answer encoding", ("json_encode_plan",)),
    ("log-entry encoding", ("compaction_entry",)),
    ("commit: Redis command and reply", ("store_commit_keyed", "store_event_defer")),
    ("commit: its name (snprintf, SHA-256 of the plan)", ("compaction_commit",)),
    ("freeing the request", ("compact_input_free",)),
    ("pools: routing, hand-offs, framing", ("pool_work",)),
]
# A kernel sample by the first of these on its stack.
PERF_KERNEL = [
    ("kernel: resume the connection (eventfd)", ("eventfd_write", "eventfd_read")),
    ("kernel: pool hand-off (futex)", ("do_futex",)),
    ("kernel: send the answer (sendto, loopback delivery)", ("__sys_sendto", "__sys_sendmsg")),
    ("kernel: receive the request (recvfrom)", ("__sys_recvfrom",)),
    ("kernel: write to Redis (write)", ("ksys_write",)),
    ("kernel: read from Redis (read)", ("ksys_read",)),
    ("kernel: poll", ("do_sys_poll", "do_epoll_wait")),
]


def perf_phases(path):
    counts, total = {}, 0
    with open(path, errors="replace") as f:
        text = f.read()
    for block in text.split("\n\n"):
        lines = [l.split() for l in block.strip().splitlines()]
        if len(lines) < 2:
            continue
        comm = lines[0][0]
        syms = [l[1] for l in lines[1:] if len(l) > 1]
        if not syms:
            continue
        total += 1
        label = None
        for name, funcs in PERF_KERNEL:
            if any(s in funcs for s in syms):
                label = name
                break
        if label is None and lines[1][0].startswith("ffffffff"):
            label = "kernel: other (scheduling, interrupts, faults)"
        if label is None:
            for s in syms:
                base = SUFFIX.sub("", s)
                for name, funcs in PERF_USER:
                    if base in funcs:
                        label = name
                        break
                if label:
                    break
        if label is None:
            label = ("user: libmicrohttpd's threads" if comm == "MHD-worker"
                     else "user: unattributed (libc without frame pointers)")
        counts[label] = counts.get(label, 0) + 1
    print("%-62s %7s" % ("phase (samples of compactd's threads)", "share"))
    for label, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print("%-62s %6.1f%%" % (label, 100.0 * n / total))
    print("%-62s %7d" % ("samples", total))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "total":
        fixed = fixed_copy(sys.argv[2])
        try:
            print(annotate(fixed, False)[0])
        finally:
            os.unlink(fixed)
    elif len(sys.argv) == 3 and sys.argv[1] == "perf":
        perf_phases(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "phases":
        phases(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
