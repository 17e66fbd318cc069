# SPDX-License-Identifier: BSD-3-Clause
"""check_trace.py TRACE LOG [expect...] — checks a graft profile.

TRACE is the Chrome trace-event JSON that GRAFT_PROFILE or gf_profiler_write
wrote; LOG is the stderr of the same run with GRAFT_LOG=debug (or "-" for
none). Checks: the JSON parses; every event has the fields its phase needs;
op events carry the call, device, plugin, inputs and outputs; when LOG is
given, the op events are exactly the dispatches logged (the same ops on the
same devices, as many of each) and the summary table was printed. Each
further argument is "cat:regex": some event of that category has a name or
call matching regex."""
import collections
import json
import re
import sys


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


def main():
    trace_path, log_path, expects = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(trace_path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    ops = collections.Counter()
    for e in events:
        for key in ("name", "ph", "pid"):
            if key not in e:
                fail("event without %s: %r" % (key, e))
        if e["ph"] in ("X", "i", "C") and not isinstance(e.get("ts"), (int, float)):
            fail("event without a numeric ts: %r" % e)
        if e["ph"] == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            fail("complete event without a duration: %r" % e)
        if e.get("cat") == "op":
            a = e.get("args", {})
            for key in ("call", "device", "plugin", "inputs", "outputs", "layout"):
                if key not in a:
                    fail("op event without args.%s: %r" % (key, e))
            if not a["call"].endswith(e["name"]):
                fail("op event whose call does not end with its op: %r" % e)
            ops[(e["name"], a["device"])] += 1
    print("%d events, %d op events of %d kinds" % (len(events), sum(ops.values()), len(ops)))
    for want in expects:
        cat, rx = want.split(":", 1)
        if not any(e.get("cat") == cat and (re.search(rx, e["name"]) or
                   re.search(rx, e.get("args", {}).get("call", ""))) for e in events):
            fail("no %s event matches %r" % (cat, rx))
    if log_path == "-":
        return
    logged = collections.Counter()
    summary = False
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"graft\[debug\]: dispatch (?:.* \u2192 )?(\S+) on (\S+?)(?: via \S+)?: ",
                         line)
            if m:
                logged[(m.group(1), m.group(2))] += 1
            if line.startswith("graft profile:"):
                summary = True
    if not summary:
        fail("the summary table was not printed")
    if logged != ops:
        diff = (logged - ops) + (ops - logged)
        fail("op events and logged dispatches differ: %r" % dict(diff.most_common(10)))
    print("op events match the %d dispatches logged" % sum(logged.values()))


main()
