#!/usr/bin/env python3
"""seeds.py — writes the seed corpus of the fuzz harnesses
(tests/fuzz/corpus/<harness>/), small inputs taken from the unit tests'
bodies and the fixtures (tests/fixtures, ../shared/data when present).
Run from the repository root: python3 tests/fuzz/seeds.py.  It rewrites the
seed_* files only; block/ seeds were made once with block_encode
(README.md) and the crash inputs in tests/fuzz/crashes/ are never touched.
Standard library only: pprof bodies come from a tiny protobuf writer, as in
tests/unit/test_pprof.c."""
import gzip
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(harness, items):
    d = os.path.join(ROOT, harness)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("seed_"):
            os.remove(os.path.join(d, f))
    for i, b in enumerate(items):
        if isinstance(b, str):
            b = b.encode()
        with open(os.path.join(d, "seed_%03d" % i), "wb") as f:
            f.write(b)


def fixture(path, limit=None):
    for base in (REPO, os.path.join(REPO, "..")):
        p = os.path.join(base, path)
        if os.path.exists(p):
            with open(p, "rb") as f:
                return f.read() if limit is None else f.read(limit)
    return None


# ---- folded / lines: the first byte is the mode (fuzz_folded.c) ----------
folded_bodies = [
    "a;b;c 12\n", "main;work 3\nmain;idle 1\n", "a;b 1\r\nc 2\r\n\r\n", "a;b  7  \n\n\nx 1",
    "a;b;c\na;b\n", "a;b 1\n\na;b\n", "a;b abc", "a;b -3", "a;b 9007199254740991\nc 1\n",
    "a;;b 1", ";a 1", "a;\xff 1".encode("latin-1"), b"a\0b;c 1", " 5", "h\xc3\xa9;\xe2\x82\xac 2\n".encode("latin-1"),
    "main\x1fmain.go\x1f10\x1f/bin/app\x1fabc;work\x1fmain.go\x1f42 5\n",
    "f\x1f\x1f\x1f\x1f\x1f 1\n", "f\x1fa.go\x1fx 1\n",
    ";".join("f%d" % i for i in range(1100)) + " 3\n",
]
system_mix = fixture("shared/data/system-mix.folded", 6000)
if system_mix:
    folded_bodies.append(system_mix[: system_mix.rfind(b"\n") + 1])
folded = []
for i, b in enumerate(folded_bodies):
    b = b.encode("latin-1") if isinstance(b, str) else b
    mode = [0, 1, 2, 4][i % 4] if b"\x1f" not in b else 2
    folded.append(bytes([mode]) + b)
write("folded", folded)

# ---- Pyroscope names -------------------------------------------------------
write("pyroscope", [
    "svc", "svc.cpu", "svc.cpu{env=prod,pod=p1}", "my-app.alloc_objects{}", "svc{a=b, c = d }",
    "svc.goroutines{x=1}", "", ".cpu", "{env=prod}", "svc{env=prod", "svc{a=b}x", "svc}", "svc{foo}",
    "svc{=b}", "svc{a-b=c}", "svc{env=}", "svc{env=a,env=b}", "svc.cpu{type=wall}",
    b"svc{v=\xff}", b"sv\xff", "app.itimer{service_name=x,__session_id__=1}",
    "s{" + ",".join("l%d=v" % i for i in range(34)) + "}",
])


# ---- pprof: a tiny protobuf writer -----------------------------------------
def varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def f_int(field, v):
    return varint(field << 3) + varint(v & 0xFFFFFFFFFFFFFFFF)


def f_bytes(field, b):
    return varint(field << 3 | 2) + varint(len(b)) + b


def packed(vals):
    return b"".join(varint(v & 0xFFFFFFFFFFFFFFFF) for v in vals)


def profile(strings, types, functions=(), locations=(), samples=(), mappings=(), extra=b""):
    """types: [(type, unit)], functions: [(id, name, file)], locations:
    [(id, mapping, address, [function ids, innermost first], [lines])],
    samples: [([location ids, leaf first], [values])], mappings:
    [(id, start, limit, offset, file, build_id)]."""
    b = bytearray()
    for t, u in types:
        b += f_bytes(1, f_int(1, t) + f_int(2, u))
    for locs, vals in samples:
        b += f_bytes(2, f_bytes(1, packed(locs)) + f_bytes(2, packed(vals)))
    for mid, start, limit, off, fname, bid in mappings:
        b += f_bytes(3, f_int(1, mid) + f_int(2, start) + f_int(3, limit) + f_int(4, off) + f_int(5, fname) + f_int(6, bid))
    for lid, mapping, addr, fns, lines in locations:
        m = f_int(1, lid)
        if mapping:
            m += f_int(2, mapping)
        if addr:
            m += f_int(3, addr)
        for k, fn in enumerate(fns):
            ln = f_int(1, fn)
            if lines and lines[k]:
                ln += f_int(2, lines[k])
            m += f_bytes(4, ln)
        b += f_bytes(4, m)
    for fid, name, fname in functions:
        m = f_int(1, fid) + f_int(2, name)
        if fname:
            m += f_int(4, fname)
        b += f_bytes(5, m)
    for s in strings:
        b += f_bytes(6, s.encode() if isinstance(s, str) else s)
    return bytes(b) + extra


two_types = profile(
    ["", "samples", "count", "cpu", "nanoseconds", "main", "work", "outer", "inner"],
    [(1, 2), (3, 4)], [(1, 5, 0), (2, 6, 0), (3, 8, 0), (4, 7, 0)],
    [(1, 0, 0x10, [1], []), (2, 0, 0x20, [3, 4], []), (3, 0, 0x30, [2], [])],
    [([3, 2, 1], [2, 20000000]), ([1], [0, 5])], extra=f_int(9, 1700000000123000000))
heap = profile(
    ["", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects", "inuse_space", "main", "grow"],
    [(1, 2), (3, 4), (5, 2), (6, 4)], [(1, 7, 0), (2, 8, 0)],
    [(1, 0, 0x10, [1], []), (2, 0, 0x20, [2], [])],
    [([2, 1], [7, 7000, 3, 3000]), ([1], [5, 900, 0, 0])])
lines = profile(
    ["", "samples", "count", "main", "work", "main.go", "/bin/app", "abc123", "we\x1fird"],
    [(1, 2)], [(1, 3, 5), (2, 4, 5), (3, 8, 0)],
    [(1, 1, 0, [1], [10]), (2, 1, 0, [2], [42]), (3, 0, 0, [3], [])],
    [([2, 1], [5]), ([3], [1])], mappings=[(1, 0, 0, 0, 6, 7)])
period = profile(
    ["", "cpu", "nanoseconds", "main", "space", "bytes"], [(1, 2), (4, 5)], [(1, 3, 0)],
    [(1, 0, 0x10, [1], [])], [([1], [30000000, 64])],
    extra=f_bytes(11, f_int(1, 1) + f_int(2, 2)) + f_int(12, 10000000))
missing = profile(
    ["", "cpu", "nanoseconds", "/usr/lib/libc.so.6", "a;b\nc", ""], [(1, 2)], [(1, 4, 0), (2, 0, 0)],
    [(1, 0, 0xABC, [], []), (2, 7, 0x1500, [], []), (3, 0, 0x40, [1], []), (4, 0, 0xDEF, [2], [])],
    [([1, 2, 3, 4], [3]), ([], [3])], mappings=[(7, 0x1000, 0x9000, 0x200, 3, 0)])
deep = profile(
    ["", "cpu", "nanoseconds", "f", "g"], [(1, 2)], [(1, 3, 0), (2, 4, 0)],
    [(1, 0, 0, [1] * 1500, []), (2, 0, 0, [2, 1, 2], [])],
    [([2] * 400 + [1], [7]), ([1, 2], [1]), ([2], [0])])
dup = profile(["", "cpu", "nanoseconds"], [(1, 2), (1, 2)], [], [], [])
bad = [
    profile(["", "cpu", "nanoseconds"], [(1, 2)]),
    profile(["", "cpu", "nanoseconds", "f"], [(1, 2)], [(1, 3, 0)], [(1, 0, 0, [1], [])], [([1], [1, 2])]),
    profile(["", "cpu", "nanoseconds", "f"], [(1, 2)], [(1, 3, 0)], [(1, 0, 0, [1], [])], [([9], [1])]),
    profile(["", "cpu", "nanoseconds", "f"], [(1, 2)], [(1, 3, 0)], [(1, 0, 0, [1], [])], [([1], [-1])]),
    profile(["", "cpu", "nanoseconds", b"\xff\xfe"], [(1, 2)], [(1, 3, 0)], [(1, 0, 0, [7], [])], [([1], [1])]),
    profile(["x", "cpu", "nanoseconds"], [(1, 2)]),
    profile(["", "cpu", "nano-seconds"], [(1, 2)]),
]
pprofs = [two_types, heap, lines, period, missing, deep, dup] + bad
pprofs += [gzip.compress(two_types, mtime=0), gzip.compress(heap, mtime=0), two_types[:-7], b"hello, world"]
write("pprof", pprofs)

# ---- OTLP profiles: the first byte is the mode (fuzz_otlp.c: 1 JSON) -------
def otlp_request(strings, functions, locations, stacks, resources):
    """functions: [name index]; locations: [(mapping, address, [function
    indices])]; stacks: [[location indices, leaf first]]; resources:
    [([(key, value)], [(type, unit, period_type or None, period, time,
    [(stack, [values], [timestamps])])])].  Index 0 of each table is its
    sentinel, added here."""
    def kv(k, v):
        return f_bytes(1, k.encode()) + f_bytes(2, f_bytes(1, v.encode()))
    d = b"".join(f_bytes(5, x.encode()) for x in [""] + strings)
    d += f_bytes(1, b"") + f_bytes(1, f_int(1, 4096) + f_int(2, 1 << 20) + f_int(4, 1))
    d += f_bytes(3, b"") + b"".join(f_bytes(3, f_int(1, n)) for n in functions)
    d += f_bytes(2, b"")
    for m, a, fs in locations:
        d += f_bytes(2, f_int(1, m) + f_int(2, a) + b"".join(f_bytes(3, f_int(1, f) + f_int(2, 7)) for f in fs))
    d += f_bytes(7, b"") + b"".join(f_bytes(7, f_bytes(1, packed(st))) for st in stacks)
    out = b""
    for attrs, profs in resources:
        ps = b""
        for ty, un, pt, period, t, samples in profs:
            p = f_bytes(1, f_int(1, ty) + f_int(2, un))
            for st, vals, ts in samples:
                p += f_bytes(2, f_int(1, st) + (f_bytes(4, packed(vals)) if vals else b"")
                             + (f_bytes(5, b"".join(struct.pack("<Q", x) for x in ts)) if ts else b""))
            p += varint(3 << 3 | 1) + struct.pack("<Q", t) + f_int(4, 10 ** 10)
            if pt:
                p += f_bytes(5, f_int(1, pt[0]) + f_int(2, pt[1])) + f_int(6, period)
            ps += f_bytes(2, p)
        out += f_bytes(1, f_bytes(1, b"".join(f_bytes(1, kv(k, v)) for k, v in attrs)) + f_bytes(2, ps))
    return out + f_bytes(2, d)


otlp_strings = ["main", "foo", "bar", "cpu", "nanoseconds", "samples", "count", "libc.so.6", "alloc_space", "bytes"]
otlp_bins = [
    otlp_request(otlp_strings, [1, 2, 3], [(0, 0, [1]), (0, 0, [2]), (0, 0, [3, 2]), (1, 8192, [])],
                 [[3, 2, 1], [4, 1]],
                 [([("service.name", "api"), ("host.name", "n1")],
                   [(6, 7, (4, 5), 10000000, 1700000000 * 10 ** 9, [(1, [3], []), (2, [], [1, 2])])]),
                  ([("process.executable.name", "nginx")], [(9, 10, None, 0, 0, [(1, [4096], []), (2, [0], [])])])]),
    otlp_request(["a"], [1], [(0, 0, [1])], [[1] * 1100], [([], [(1, 1, None, 0, 0, [(1, [1], [])])])]),
    otlp_request(["a"], [1], [(0, 0, [5])], [[1]], [([], [(1, 1, None, 0, 0, [(1, [1], [])])])]),
    otlp_request(["a"], [1], [(0, 0, [1])], [[0]], [([], [(1, 1, None, 0, 0, [(9, [1], [])])])]),
]
otlp_json = [
    '{"resourceProfiles": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "api"}}]},'
    ' "scopeProfiles": [{"profiles": [{"sampleType": {"typeStrindex": 1, "unitStrindex": 2},'
    ' "periodType": {"typeStrindex": 3, "unitStrindex": 4}, "period": "10000000", "timeUnixNano": "1700000000000000000",'
    ' "samples": [{"stackIndex": 1, "values": ["3"]}, {"stackIndex": 1, "timestampsUnixNano": ["1", "2"]}]}]}]}],'
    ' "dictionary": {"stringTable": ["", "samples", "count", "cpu", "nanoseconds", "main", "f.c"],'
    ' "functionTable": [{}, {"nameStrindex": 5, "filenameStrindex": 6}],'
    ' "locationTable": [{}, {"lines": [{"functionIndex": 1, "line": "3"}]}],'
    ' "stackTable": [{}, {"locationIndices": [1]}],'
    ' "linkTable": [{}, {"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708"}]}}',
    '{"resource_profiles": [], "dictionary": {"string_table": ["x"]}}',
    '{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"sampleType": {}, "samples": [{"values": [1, "-2"]}]}]}]}]}',
    '{"dictionary": {"mappingTable": [{}, {"memoryLimit": "18446744073709551615", "filenameStrindex": 1}]}}',
    '{"a": [1, 2, {"b": null}], "dictionary": {"attributeTable": [{"value": {"bytesValue": "aGVsbG8="}}]}}',
]
write("otlp", [bytes([0]) + b for b in otlp_bins] + [bytes([1]) + j.encode() for j in otlp_json])

# ---- multipart: the first line is the Content-Type ------------------------
mp_body = (b"--XyZ\r\n"
           b"Content-Disposition: form-data; name=\"sample_type_config\"; filename=\"c.json\"\r\n"
           b"Content-Type: application/octet-stream\r\n\r\n"
           b"{\"cpu\":{}}\r\n"
           b"--XyZ\r\n"
           b"Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
           b"Content-Type: application/octet-stream\r\n\r\n"
           b"AB\r\n--XyZ-not-a-boundary\r\nCD\r\n"
           b"--XyZ--\r\n")
curl_body = (b"--------------------------d74496d66958873e\r\n"
             b"Content-Disposition: form-data; name=\"profile\"; filename=\"cpu.pb.gz\"\r\n"
             b"Content-Type: application/octet-stream\r\n\r\n" + gzip.compress(two_types, mtime=0) + b"\r\n"
             b"--------------------------d74496d66958873e--\r\n")
write("multipart", [
    b"multipart/form-data; boundary=XyZ\n" + mp_body,
    b"multipart/form-data; boundary=\"XyZ\"\n" + mp_body,
    b"multipart/form-data\n" + mp_body,
    b"multipart/form-data; boundary=XyZ\n" + mp_body[:120],
    b"multipart/form-data; boundary=------------------------d74496d66958873e\n" + curl_body,
    b"multipart/form-data; boundary=X\n--X\r\n\r\nno headers\r\n--X--",
    b"multipart/form-data; charset=utf-8; boundary=ab\n--ab\r\nContent-Disposition: form-data; name=\"prev_profile\"\r\n\r\n\r\n--ab  \r\n",
    b"Multipart/Form-Data;boundary=q\n--q\nContent-Disposition: form-data; name=\"profile\"\r\n\r\nx\r\n--q--",
])

# ---- gunzip ----------------------------------------------------------------
text = b"main;work 3\nmain;idle 1\n" * 20
hdr_flags = (b"\x1f\x8b\x08\x1e\x00\x00\x00\x00\x00\x03" + b"\x04\x00abcd" + b"name\x00" + b"comment\x00"
             + zlib.compress(text)[2:-4] + struct.pack("<II", zlib.crc32(text), len(text)))
write("gunzip", [
    gzip.compress(text, mtime=0), gzip.compress(b"", mtime=0), gzip.compress(text, mtime=0) + gzip.compress(b"x", mtime=0),
    zlib.compress(text), gzip.compress(text, mtime=0)[:-3], gzip.compress(b"\0" * 200000, 9, mtime=0), hdr_flags,
    b"\x1f\x8b\x08\x00", b"not gzip", gzip.compress(text, mtime=0) + b"trailing",
])

# ---- perf script -----------------------------------------------------------
perf = [
    "Web Content 123/456 [002] 100.500000:     250000 cpu-clock:pppH: \n"
    "\t    7f00 leaf_fn+0x1a (/usr/lib/libfoo.so)\n"
    "\t    7e00 [unknown] (/usr/lib/x86_64/libc.so.6)\n"
    "\t    7d00 main+0x10 (/usr/bin/app)\n\n"
    "app  99/99   101.250000: \n"
    "\tffffffff8100 do_a;b+0x4 ([kernel.kallsyms])\n"
    "\t           0 [unknown] ([unknown])\n\n"
    "kworker 7 [000] 102.000001: 1 cpu-clock: \n",
    "\tdeadbeef f (x)\n",
    "# ========\n# captured on: x\nsh 1/1 5.000001: \n\tf\n\n",
    "a 1/1 1.5:\r\n\t1 f (/x)\r\n\r\n",
    "noheader\n\t\n",
    # names perf left mangled: perfscript.c demangles them (ingest/demangle.c)
    "app 7/7 3.250000: 1 cycles:\n"
    "\t 7f00 _ZN11__sanitizer18BufferedStackTrace10UnwindFastEmmmmj+0x1a (/usr/lib/libasan.so)\n"
    "\t 7e00 _ZN4core3fmt5write17h0123456789abcdefE (/bin/rs)\n"
    "\t 7d00 _RNvCs1234_7mycrate3foo+0x4 (/bin/rs)\n"
    "\t 7c00 _Z3fooIiEvT_.cold (/bin/app)\n\n",
]
for name in ("tests/fixtures/perf-script.txt", "tests/fixtures/perf-script-fields.txt"):
    t = fixture(name, 12000)
    if t:
        # the first few samples: cut at a blank line
        cut = t[:3000]
        perf.append(cut[: cut.rfind(b"\n\n") + 2])
        mid = t[6000:12000]
        mid = mid[mid.find(b"\n\n") + 2:]
        perf.append(mid[: mid.rfind(b"\n\n") + 2][:2500])
write("perfscript", perf)

# ---- selectors -------------------------------------------------------------
write("selector", [
    "", "{}", " { } ", "{a=\"b\"}", "{a=\"b\",}", "{a!=\"b\"}", "{a=~\"b.*\"}", "{a!~\"b.*\"}",
    "{a=\"1\", b!=\"2\", c=~\"3\", d!~\"4\"}", "\t{\n a=\"b\"\r\n}\n", "{_a.b_1=\"x\"}", "{a=\"q\\\"q\"}",
    "{a=\"l1\\nl2\\tx\"}", "{a=\"}{,=\"}", "{a=\"h\xc3\xa9\"}", "api", "my-svc.v2:prod_1", "api{type=\"cpu\"}",
    "api{node=~\"n[0-9]+\", build!=\"dev\",}", "{", "{a", "{foo==\"b\"}", "{a=\"b}", "{a=\"b\\", "{a=\"b\";b=\"c\"}",
    "{1a=\"b\"}", "{a=\"b\\x\"}", "{}x", "api x", "{x=~\"a(\"}", "{x=~\"a{2,1}\"}", "{x=~\"(?i)Ab|c+\"}",
    "{x=~\"\\\\pL+\\\\d{2,3}\"}", "{x=~\"[[:alpha:]]*\"}",
])

# ---- time expressions and durations ----------------------------------------
write("timeexpr", [
    "0", "1763719200", "1763719200.5", "1763719200.1239", "253402300799.999", "2026-11-21T10:00:00Z",
    "2026-11-21t10:00:00z", "2026-11-21 10:00:00Z", "2026-11-21T10:00:00.123456789Z", "2026-11-21T12:00:00+02:00",
    "2026-11-21T04:30:00-05:30", "2016-12-31T23:59:60Z", "9999-12-31T23:59:59Z", "2024-02-29T00:00:00Z",
    "now", "now-0s", "now-30m", "now-2w", "now-99999999999999999999d", "now+1h", "1763719200.5.5", "-1",
    "99999999999999999999999", "2026-13-01T00:00:00Z", "30d", "007m", "9223372036854775807ms", "15250284452w",
    "5h30m", "5ms", "1.5h", "+5m",
])
