#!/usr/bin/env python3
"""equiv.py — two flamedb deployments holding the same data must answer
byte-identically (issue 10).  Python 3 standard library only.

Usage (the CLI is stable: tests/integration/test_equiv_layout.sh and the
cluster tests call it):

  equiv.py workload --seed S --urls URL[,URL...] [--base T] [--shuffle N]
      Pushes a seeded workload, request i to URLs[i % len(URLs)] (one URL:
      all to it).  Same seed and base: the same profiles, whatever
      --shuffle; --shuffle N (N > 0) pushes them in another order, drawn
      from N (0, the default: the workload's own order).  Prints one line
      `workload: P pushes, B bytes, base T` and exits 1 on any push that did
      not answer 200 (printing it).

  equiv.py compare --seed S --n N [--base T] [--verbose] URL_A URL_B
      N seeded random queries over every read endpoint, each sent to both
      servers; the status and the body are compared byte for byte.  Each
      difference prints `DIFF endpoint URL`, the first differing offset
      and a short excerpt of both; the last line is
      `equiv: N queries, D differ` and the exit status is 1 when D > 0.

  --base T is the workload's day boundary (unix seconds, a multiple of
  86400): profiles lie in [T - 36 h, T + 36 h).  Its default is the UTC
  midnight three days before now, so the data stays inside the default
  30-day retention; give the same --base to workload and compare (the
  default is only the same on the same day).

The workload (a few hundred series, ~2 minutes of pushing at most on two
cores): services x instances x regions x builds, types cpu (folded, rate 99
or 100 Hz: nanoseconds), cpu without a rate (unit samples: a second unit),
wall and goroutines (Pyroscope /ingest), samples (pprof), alloc_space (bytes, folded), inuse_space and
goroutines (gauges: averaged over time), and pprof bodies (cpu + samples,
with file and line for lines=1), windows of 10 s to a few minutes over
three days, crossing day partitions and the 10 min / 1 h roll-up
boundaries, all with explicit from/until.  Counts are small on purpose so
that totals tie often (ties are where layout-dependent orders show).

Fields that legitimately differ between servers: none is stripped today
(no answer carries timings or server ids).  GetProfileStats' fields and
everything else are compared as they are.  Times in queries are absolute
(unix seconds or RFC 3339); `now`-relative ranges are not generated since
their answer is not a function of the data."""
import argparse
import os
import gzip
import json
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

DAY = 86400

# ---- the workload --------------------------------------------------------

SERVICES = ["api", "shop", "auth", "batch"]
INSTANCES = ["i-1", "i-2", "i-3"]
REGIONS = ["eu", "us", "ap"]
BUILDS = ["v1", "v2"]

# A vocabulary per service: frames that recur at several depths (recursion),
# names that are prefixes of others, and names equal across services.
COMMON = ["main", "runtime.gc", "malloc", "memcpy", "syscall", "write", "read", "[unknown]"]


def vocab(rng, svc):
    own = ["%s.%s" % (svc, w) for w in ("handle", "parse", "render", "json", "sort", "query", "cache",
                                        "auth", "encode", "decode", "loop", "step", "hash", "lock")]
    own += ["%s.handle.inner" % svc, "%s.p" % svc, "%s.pa" % svc, "héllo·%s" % svc]
    rng.shuffle(own)
    return own


def make_stack(rng, words):
    depth = rng.randint(1, 9)
    st = ["main"]
    for _ in range(depth):
        st.append(rng.choice(words) if rng.random() < 0.8 else rng.choice(COMMON[1:]))
    return st


def make_profile(rng, words, n_stacks, big=False):
    """A list of (stack, count): counts small (many ties) or larger."""
    out = {}
    for _ in range(n_stacks):
        st = ";".join(make_stack(rng, words))
        c = rng.choice([1, 1, 1, 2, 2, 3, 5, 8]) if not big else rng.randint(1, 5000) * 1024
        out[st] = out.get(st, 0) + c
    return sorted(out.items())


def folded_body(prof):
    return "".join("%s %d\n" % (s, c) for s, c in prof).encode()


# the protobuf wire helpers of tests/integration/pprof_labels.py, one copy
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from pprof_labels import field_bytes as fb, field_varint as fv, varint  # noqa: E402


def pprof_body(prof, rng, with_lines):
    """profile.proto (gzip'd) with sample types samples/count and cpu/nanoseconds."""
    strings, index = [""], {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    funcs, locs = {}, {}
    body = b""
    for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
        body += fb(1, fv(1, s(t)) + fv(2, s(u)))
    samples = b""
    for st, c in prof:
        ids = []
        for name in reversed(st.split(";")):  # leaf first
            if name not in locs:
                fid = len(funcs) + 1
                funcs[name] = fid
                locs[name] = len(locs) + 1
            ids.append(locs[name])
        packed = b"".join(varint(i) for i in ids)
        vals = varint(c) + varint(c * 10000000)
        samples += fb(2, fb(1, packed) + fb(2, vals))
    body += samples
    for name, lid in locs.items():
        line = fv(1, funcs[name]) + (fv(2, 10 + (sum(map(ord, name)) % 90)) if with_lines else b"")
        body += fb(4, fv(1, lid) + fb(4, line))
    for name, fid in funcs.items():
        fn = fv(1, fid) + fv(2, s(name)) + fv(3, s(name))
        if with_lines:
            fn += fv(4, s("src/%s.go" % name.split(".")[0]))
        body += fb(5, fn)
    body += fb(11, fv(1, s("cpu")) + fv(2, s("nanoseconds"))) + fv(12, 10000000)
    body += b"".join(fb(6, x.encode()) for x in strings)
    return gzip.compress(body, mtime=0)


def workload_pushes(seed, base):
    """The pushes of the workload: (path, query dict, body, headers)."""
    rng = random.Random(seed)
    words = {svc: vocab(rng, svc) for svc in SERVICES}
    lo = base - 36 * 3600
    pushes = []

    def window():
        start = lo + rng.randrange(0, 72 * 3600)
        # a third start just before a 10 min / 1 h / day boundary, so the window crosses it
        if rng.random() < 0.33:
            b = rng.choice([600, 3600, DAY])
            start = start - start % b + b - rng.randint(1, 30)
        if rng.random() < 0.5:
            start -= start % 10
        return start, start + rng.choice([10, 10, 10, 15, 30, 60, 120, 300])

    series = [(svc, inst, reg, build) for svc in SERVICES for inst in INSTANCES for reg in REGIONS for build in BUILDS]
    for svc, inst, reg, build in series:
        labels = {"service": svc, "instance": inst, "region": reg, "build": build}
        w = words[svc]
        for _ in range(rng.randint(6, 12)):  # cpu with a rate
            f, u = window()
            q = dict(labels, type="cpu", rate=rng.choice(["99", "100"]), **{"from": str(f), "until": str(u)})
            pushes.append(("/api/v1/ingest", q, folded_body(make_profile(rng, w, rng.randint(5, 40))), {}))
        if rng.random() < 0.4:  # cpu without a rate: unit samples, a second unit of type cpu
            f, u = window()
            q = dict(labels, type="cpu", **{"from": str(f), "until": str(u)})
            pushes.append(("/api/v1/ingest", q, folded_body(make_profile(rng, w, 10)), {}))
        for _ in range(rng.randint(1, 4)):  # alloc_space, bytes
            f, u = window()
            q = dict(labels, type="alloc_space", unit="bytes", **{"from": str(f), "until": str(u)})
            pushes.append(("/api/v1/ingest", q, folded_body(make_profile(rng, w, rng.randint(3, 20), big=True)), {}))
        if build == "v1":
            for _ in range(rng.randint(1, 5)):  # inuse_space: a gauge
                f, u = window()
                q = dict(labels, type="inuse_space", unit="bytes", **{"from": str(f), "until": str(u)})
                pushes.append(("/api/v1/ingest", q, folded_body(make_profile(rng, w, rng.randint(3, 12), big=True)), {}))
        if reg == "eu":
            for _ in range(rng.randint(1, 4)):  # Pyroscope /ingest: wall (samples), goroutines (a gauge)
                f, u = window()
                typ = rng.choice(["wall", "goroutines"])
                name = "%s.%s{instance=%s,region=%s,build=%s}" % (svc, typ, inst, reg, build)
                q = {"name": name, "from": str(f), "until": str(u), "spyName": "equiv",
                     "sampleRate": "0", "units": "goroutines" if typ == "goroutines" else "samples"}
                pushes.append(("/ingest", q, folded_body(make_profile(rng, w, rng.randint(3, 15))), {}))
        if inst == "i-1" and rng.random() < 0.7:  # pprof: cpu + samples, file and line
            for _ in range(rng.randint(1, 2)):
                f, u = window()
                q = dict(labels, format="pprof", **{"from": str(f), "until": str(u)})
                body = pprof_body(make_profile(rng, w, rng.randint(5, 30)), rng, rng.random() < 0.7)
                pushes.append(("/api/v1/ingest", q, body, {}))
    return pushes


def push(url, path, q, body, headers):
    req = urllib.request.Request(url + path + "?" + urllib.parse.urlencode(q), data=body, method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def cmd_workload(a):
    urls = [u.rstrip("/") for u in a.urls.split(",") if u]
    pushes = workload_pushes(a.seed, a.base)
    if a.shuffle:
        random.Random(a.shuffle).shuffle(pushes)
    n_bytes = 0
    for i, (path, q, body, headers) in enumerate(pushes):
        st, ans = push(urls[i % len(urls)], path, q, body, headers)
        n_bytes += len(body)
        if st != 200:
            print("workload: push %d to %s%s?%s answered %d: %s" % (i, urls[i % len(urls)], path,
                  urllib.parse.urlencode(q), st, ans[:300]), file=sys.stderr)
            return 1
    print("workload: %d pushes, %d bytes, base %d" % (len(pushes), n_bytes, a.base))
    return 0


# ---- the queries -----------------------------------------------------------

LABEL_VALUES = {"service": SERVICES + ["nope"], "instance": INSTANCES + ["i-9"], "region": REGIONS,
                "build": BUILDS, "type": ["cpu", "alloc_space", "inuse_space", "samples", "goroutines", "wall"]}
REGEXES = {"service": ["a.*", "(api|shop)", ".*h.*", "b.+"], "instance": ["i-[12]", "i-.*"], "region": ["e.*"],
           "build": ["v[0-9]"], "type": ["cpu|samples", "in.*", "alloc_.*", "wall|goroutines"]}


def selector(rng, with_type=True):
    ms = []
    names = list(LABEL_VALUES)
    rng.shuffle(names)
    for name in names[:rng.randint(0, 3)]:
        if name == "type" and not with_type:
            continue
        op = rng.choice(["=", "=", "!=", "=~", "!~"])
        v = rng.choice(REGEXES[name]) if op in ("=~", "!~") else rng.choice(LABEL_VALUES[name])
        ms.append('%s%s"%s"' % (name, op, v))
    if rng.random() < 0.1:
        ms.append('nolabel=""')
    return "{" + ",".join(ms) + "}"


def time_range(rng, base):
    """from, until: inside, across or outside the data; unix seconds or RFC 3339."""
    lo, hi = base - 36 * 3600, base + 36 * 3600
    kind = rng.random()
    if kind < 0.55:
        f = rng.randrange(lo, hi)
        u = f + rng.choice([60, 600, 3600, 6 * 3600, DAY, 2 * DAY])
    elif kind < 0.85:
        f, u = lo - rng.randrange(0, 3600), hi + rng.randrange(0, 3600)
    elif kind < 0.95:
        f = hi + rng.randrange(3600, 5 * DAY)
        u = f + 3600
    else:
        f, u = lo - 10 * DAY, lo - 9 * DAY
    def fmt(t):
        if rng.random() < 0.2:
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        return str(t)
    return fmt(f), fmt(u), u - f


def step_for(rng, span, most):
    s = rng.choice([60, 600, 3600, 3 * 3600, DAY])
    while span // s > most:
        s *= 2
    return str(s)


def group_by(rng):
    keys = ["service", "instance", "region", "build", "type"]
    rng.shuffle(keys)
    return ",".join(keys[:rng.randint(1, 2)])


PROFILE_TYPES = ["process_cpu:cpu:nanoseconds:cpu:nanoseconds", "process_cpu:cpu:samples:cpu:nanoseconds",
                 "memory:alloc_space:bytes:space:bytes", "memory:inuse_space:bytes:space:bytes",
                 "process_cpu:samples:count:cpu:nanoseconds", "goroutine:goroutines:goroutines:goroutine:goroutines",
                 "wall:wall:samples:wall:nanoseconds"]


def make_query(rng, base):
    """One query: (endpoint name, method, path+query, body or None, headers)."""
    f, u, span = time_range(rng, base)
    sel = selector(rng)
    kind = rng.choice(["query"] * 6 + ["top"] * 3 + ["compare", "diff", "timeline", "stability", "variance",
                       "series", "labels", "values", "render", "render-diff"] + ["grafana"] * 3)
    p = {"from": f, "until": u}
    if kind == "query":
        p["query"] = sel
        p["format"] = rng.choice(["json", "json", "levels", "folded", "speedscope", "pprof"])
        if rng.random() < 0.6:
            p["max_nodes"] = str(rng.choice([0, 1, 3, 10, 40, 200]))
        if rng.random() < 0.3:
            p["group_by"] = group_by(rng)
        if p["format"] in ("json", "pprof") and rng.random() < 0.3:
            p["lines"] = "1"
        path = "/api/v1/query"
        kind = "query/" + p["format"]
    elif kind == "top":
        p["query"] = sel
        if rng.random() < 0.7:
            p["limit"] = str(rng.choice([0, 1, 5, 20]))
        if rng.random() < 0.5:
            p["offset"] = str(rng.choice([0, 1, 3, 10]))
        if rng.random() < 0.6:
            p["order"] = rng.choice(["self", "total", "name"])
        if rng.random() < 0.2:
            p["match"] = rng.choice(["a", "HANDLE", "gc", "zz"])
        if rng.random() < 0.25:
            p["group_by"] = group_by(rng)
        path = "/api/v1/top"
    elif kind in ("compare", "diff"):
        del p["from"], p["until"]
        p["left"], p["right"] = sel, selector(rng)
        for side in ("left", "right"):
            g, v, _ = time_range(rng, base)
            p[side + "_from"], p[side + "_until"] = g, v
        if kind == "compare":
            if rng.random() < 0.5:
                p["k"] = str(rng.choice([1, 3, 10, 50]))
            if rng.random() < 0.5:
                p["limit"] = str(rng.choice([0, 5, 50]))
        path = "/api/v1/" + kind
    elif kind == "timeline":
        p["query"] = sel
        if rng.random() < 0.7:
            p["step"] = step_for(rng, span, 2000)
        if rng.random() < 0.3:
            p["group_by"] = group_by(rng)
        path = "/api/v1/timeline"
    elif kind == "stability":
        p["query"] = sel
        p["step"] = step_for(rng, span, 500)
        if rng.random() < 0.5:
            p["k"] = str(rng.choice([1, 5, 10, 40]))
        if rng.random() < 0.3:
            del p["step"]
            p["group_by"] = group_by(rng)
        path = "/api/v1/stability"
    elif kind == "variance":
        p["query"] = sel
        if rng.random() < 0.6:
            p["step"] = step_for(rng, span, 500)
        else:
            p["by"] = group_by(rng)
        if rng.random() < 0.5:
            p["k"] = str(rng.choice([1, 5, 10, 40]))
        path = "/api/v1/variance"
    elif kind == "series":
        p["query"] = sel
        path = "/api/v1/series"
    elif kind == "labels":
        p["query"] = sel
        path = "/api/v1/labels"
    elif kind == "values":
        p["query"] = sel
        path = "/api/v1/label/%s/values" % rng.choice(list(LABEL_VALUES) + ["nolabel"])
    elif kind == "render":
        q = selector(rng, with_type=False)
        if rng.random() < 0.7:
            q = rng.choice(PROFILE_TYPES) + q
        p["query"] = q
        if rng.random() < 0.5:
            p["max-nodes"] = str(rng.choice([0, 1, 5, 30, 300]))
        path = "/pyroscope/render"
    elif kind == "render-diff":
        del p["from"], p["until"]
        t = rng.choice(PROFILE_TYPES)
        p["leftQuery"], p["rightQuery"] = t + selector(rng, False), t + selector(rng, False)
        for side in ("left", "right"):
            g, v, _ = time_range(rng, base)
            p[side + "From"], p[side + "Until"] = g, v
        if rng.random() < 0.5:
            p["max-nodes"] = str(rng.choice([0, 1, 5, 30, 300]))
        path = "/pyroscope/render-diff"
    if kind == "grafana":
        return grafana_query(rng, base)
    return kind, "GET", path + "?" + urllib.parse.urlencode(p), None, {}


def grafana_query(rng, base):
    f, u, span = time_range(rng, base)
    fm, um = str(int(f) * 1000) if f.isdigit() else None, str(int(u) * 1000) if u.isdigit() else None
    if fm is None or um is None:  # Connect takes milliseconds only
        fm, um = str((base - DAY) * 1000), str((base + DAY) * 1000)
    sel = selector(rng, with_type=False).replace("service", "service_name")
    method = rng.choice(["ProfileTypes", "LabelNames", "LabelValues", "Series", "SelectMergeStacktraces",
                         "SelectMergeStacktraces", "SelectMergeProfile", "SelectSeries", "GetProfileStats"])
    req = {"start": fm, "end": um}
    if method == "LabelNames":
        req["matchers"] = [sel]
    elif method == "LabelValues":
        req["name"] = rng.choice(["service_name", "instance", "region", "build", "nolabel"])
        req["matchers"] = [sel]
    elif method == "Series":
        req["matchers"] = [sel]
        if rng.random() < 0.5:
            req["labelNames"] = ["service_name", "region"]
    elif method in ("SelectMergeStacktraces", "SelectMergeProfile", "SelectSeries"):
        req["profileTypeID"] = rng.choice(PROFILE_TYPES)
        req["labelSelector"] = sel
        if method == "SelectMergeStacktraces" and rng.random() < 0.6:
            req["maxNodes"] = str(rng.choice([1, 5, 30, 300]))
        if method == "SelectSeries":
            req["step"] = float(step_for(rng, span, 1000))
            if rng.random() < 0.5:
                req["groupBy"] = [rng.choice(["service_name", "instance", "region"])]
    elif method == "GetProfileStats":
        req = {}
    body = json.dumps(req, sort_keys=True).encode()
    return ("grafana/" + method, "POST", "/querier.v1.QuerierService/" + method, body,
            {"Content-Type": "application/json"})


def fetch_answer(url, method, path, body, headers):
    req = urllib.request.Request(url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError) as e:
        return -1, ("transport error: %s" % e).encode()


def excerpt(b, at):
    s = b[max(0, at - 40):at + 80]
    if s[:2] == b"\x1f\x8b" or any(c < 9 for c in s):
        return s.hex()[:160]
    return s.decode("utf-8", "replace").replace("\n", "\\n")


def cmd_compare(a):
    rng = random.Random(a.seed)
    ua, ub = a.url_a.rstrip("/"), a.url_b.rstrip("/")
    n_diff, kinds, diff_kinds = 0, {}, {}
    for i in range(a.n):
        kind, method, path, body, headers = make_query(rng, a.base)
        kinds[kind] = kinds.get(kind, 0) + 1
        t0 = time.monotonic()
        sa, ba = fetch_answer(ua, method, path, body, headers)
        t1 = time.monotonic()
        sb, bb = fetch_answer(ub, method, path, body, headers)
        if a.verbose:
            print("%d %s %s %d %d bytes, %.3f s vs %.3f s" % (i, kind, path, sa, len(ba), t1 - t0,
                                                             time.monotonic() - t1))
        if sa == sb and ba == bb:
            continue
        n_diff += 1
        diff_kinds[kind] = diff_kinds.get(kind, 0) + 1
        # pprof bodies are gzip'd: compare (and show) what they hold
        pa, pb = ba, bb
        if pa[:2] == b"\x1f\x8b" and pb[:2] == b"\x1f\x8b":
            try:
                pa, pb = gzip.decompress(pa), gzip.decompress(pb)
            except OSError:
                pass
        at = next((k for k in range(min(len(pa), len(pb))) if pa[k] != pb[k]), min(len(pa), len(pb)))
        print("DIFF %s %s %s%s" % (kind, method, path, (" body " + body.decode()) if body else ""))
        print("  status %d vs %d, %d vs %d bytes, first difference at byte %d%s" %
              (sa, sb, len(ba), len(bb), at, " (of the gunzip'd bodies)" if pa is not ba else ""))
        print("  A: %s" % excerpt(pa, at))
        print("  B: %s" % excerpt(pb, at))
    print("queries by endpoint: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    if diff_kinds:
        print("differing by endpoint: " + ", ".join("%s %d" % kv for kv in sorted(diff_kinds.items())))
    print("equiv: %d queries, %d differ" % (a.n, n_diff))
    return 1 if n_diff else 0


def main():
    default_base = (int(time.time()) // DAY - 3) * DAY
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("workload")
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--urls", required=True)
    w.add_argument("--base", type=int, default=default_base)
    w.add_argument("--shuffle", type=int, default=0)
    c = sub.add_parser("compare")
    c.add_argument("--seed", type=int, required=True)
    c.add_argument("--n", type=int, default=200)
    c.add_argument("--base", type=int, default=default_base)
    c.add_argument("--verbose", action="store_true")
    c.add_argument("url_a")
    c.add_argument("url_b")
    a = ap.parse_args()
    if a.base % DAY:
        ap.error("--base must be a multiple of 86400 (a UTC midnight)")
    return cmd_workload(a) if a.cmd == "workload" else cmd_compare(a)


if __name__ == "__main__":
    sys.exit(main())
