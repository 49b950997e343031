"""backfill_otlp.py — a backfill for compaction to chew on: OTLP profiles
(protojson, as an OpenTelemetry exporter sends them) of HOSTS hosts, one
profile per 10-minute bucket over BUCKETS buckets from DAY0, each with SPP
samples drawn from 3,000 stacks of 400 functions, every value known.

Usage: python3 backfill_otlp.py DAY0 HOSTS BUCKETS SPP OUTDIR
Writes OUTDIR/host-H.json (one ExportProfilesServiceRequest per host, its
own dictionary) and OUTDIR/expected.folded: the stacks and their totals in
nanoseconds (a value counts one sample of the 10 ms period), what a query
over the whole range must answer.  Standard library only."""
import json
import os
import sys

DAY0, HOSTS, BUCKETS, SPP = (int(a) for a in sys.argv[1:5])
OUT = sys.argv[5]
PERIOD_NS = 10_000_000
N_FUNCS, N_STACKS = 400, 3000

funcs = ["main"] + ["f%d" % i for i in range(N_FUNCS)]
strings = ["", "samples", "count", "cpu", "nanoseconds"] + funcs
S = {s: i for i, s in enumerate(strings)}
# function k and location k are funcs[k - 1]; index 0 of every table is the unset sentinel
functions = [{}] + [{"nameStrindex": S[f]} for f in funcs]
locations = [{}] + [{"lines": [{"functionIndex": k}]} for k in range(1, len(funcs) + 1)]
stacks, names = [{}], [None]
for i in range(1, N_STACKS + 1):  # main;f(a);f(b), leaf first in the table
    a, b = 1 + i % N_FUNCS, 1 + (i * 7 // N_FUNCS) % N_FUNCS
    if a == b:
        stacks.append({"locationIndices": [a + 1, 1]})
        names.append("main;%s" % funcs[a])
    else:
        stacks.append({"locationIndices": [b + 1, a + 1, 1]})
        names.append("main;%s;%s" % (funcs[a], funcs[b]))
dictionary = {"stringTable": strings, "mappingTable": [{}], "functionTable": functions,
              "locationTable": locations, "stackTable": stacks}

expected = {}
for h in range(HOSTS):
    profiles = []
    for k in range(BUCKETS):
        samples = []
        for j in range(SPP):
            si = 1 + (h * 11 + k * 3 + j * 5) % N_STACKS
            v = 1 + (h + k + j) % 7
            samples.append({"stackIndex": si, "values": [str(v)]})
            expected[names[si]] = expected.get(names[si], 0) + v * PERIOD_NS
        profiles.append({"sampleType": {"typeStrindex": S["samples"], "unitStrindex": S["count"]},
                         "periodType": {"typeStrindex": S["cpu"], "unitStrindex": S["nanoseconds"]},
                         "period": str(PERIOD_NS), "timeUnixNano": str((DAY0 + k * 600) * 10**9),
                         "durationNano": str(600 * 10**9), "samples": samples})
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "backfill"}},
                               {"key": "host.name", "value": {"stringValue": "h%d" % h}}]}
    request = {"dictionary": dictionary,
               "resourceProfiles": [{"resource": resource, "scopeProfiles": [{"profiles": profiles}]}]}
    with open(os.path.join(OUT, "host-%d.json" % h), "w") as f:
        json.dump(request, f)
with open(os.path.join(OUT, "expected.folded"), "w") as f:
    for name in sorted(expected):
        f.write("%s %d\n" % (name, expected[name]))
