"""otlp_client.py — OTLP profiles sent to flamedb the way OpenTelemetry's
exporters send them (issue 11, point 4): messages built with Python's
protobuf runtime (Debian's python3-protobuf) from classes that protoc
(protobuf-compiler) generates at test time from proto/otlp_profiles.proto,
encoded by that runtime (binary, or its canonical JSON mapping), POSTed to
/v1development/profiles; the answer decoded the same way.

Usage (Debian's own python3, which python3-protobuf installs for):
  /usr/bin/python3 otlp_client.py BASE_URL PROTO_DIR WORK_DIR CASE [SERVICE]

CASE:
  cpu-binary, cpu-json, cpu-gzip  the eBPF profiler's shape for SERVICE:
                                  (samples, count) every 10 ms of cpu
  partial                         two profiles, one without values
  bad-index                       a stack index outside the stack table
  labels, labels-json             cpu-binary's (JSON: cpu-json's) with sample
                                  attributes (thread.name inline, http.route
                                  by string index, an int) and a Link on
                                  main;foo;bar, attributes on main;foo
  bad-attribute                   a sample's attribute index outside the table
Prints one JSON line: {"status": N, "content_type": ..., "answer": {...}}
where answer is the ExportProfilesServiceResponse as a dict (or the JSON
error body for 4xx)."""
import base64
import gzip
import importlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

BASE, PROTO_DIR, WORK, CASE = sys.argv[1:5]
SERVICE = sys.argv[5] if len(sys.argv) > 5 else "otel-api"

subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", WORK, os.path.join(PROTO_DIR, "otlp_profiles.proto")],
               check=True)
sys.path.insert(0, WORK)
pb = importlib.import_module("otlp_profiles_pb2")
from google.protobuf import json_format  # noqa: E402

STRINGS = ["", "main", "foo", "bar", "samples", "count", "cpu", "nanoseconds", "/usr/lib/libc.so.6",
           "thread.name", "http.route", "/api/users", "retries"]
SPAN_ID = bytes.fromhex("9a517183f26a089d")
TRACE_ID = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
S = {s: i for i, s in enumerate(STRINGS)}


def dictionary():
    d = pb.ProfilesDictionary()
    d.string_table.extend(STRINGS)
    d.mapping_table.add()
    d.mapping_table.add(memory_start=0x1000, memory_limit=0x100000, filename_strindex=S["/usr/lib/libc.so.6"])
    d.function_table.add()
    for name in ("main", "foo", "bar"):
        d.function_table.add(name_strindex=S[name])
    d.location_table.add()
    for f in (1, 2, 3):  # locations 1..3 are main, foo, bar
        d.location_table.add().lines.add(function_index=f)
    d.location_table.add(mapping_index=1, address=0x2000)  # 4: unsymbolized, in libc
    d.stack_table.add()
    d.stack_table.add(location_indices=[3, 2, 1])  # 1: main;foo;bar (leaf first)
    d.stack_table.add(location_indices=[2, 1])  # 2: main;foo
    d.stack_table.add(location_indices=[4, 1])  # 3: main;libc.so.6+0x1000
    return d


def cpu_profile(p, t_ns):
    p.sample_type.type_strindex = S["samples"]
    p.sample_type.unit_strindex = S["count"]
    p.period_type.type_strindex = S["cpu"]
    p.period_type.unit_strindex = S["nanoseconds"]
    p.period = 10_000_000
    p.time_unix_nano = t_ns
    p.duration_nano = 10_000_000_000
    p.samples.add(stack_index=1, values=[3])
    p.samples.add(stack_index=2, timestamps_unix_nano=[t_ns + 1, t_ns + 2])
    p.samples.add(stack_index=3, values=[1])


def request(case):
    rq = pb.ExportProfilesServiceRequest()
    rq.dictionary.CopyFrom(dictionary())
    rp = rq.resource_profiles.add()
    for k, v in (("service.name", SERVICE), ("host.name", "otel-node"), ("process.pid", "4242")):
        rp.resource.attributes.add(key=k).value.string_value = v
    sp = rp.scope_profiles.add()
    t_ns = (int(time.time()) - 60) * 1_000_000_000
    cpu_profile(sp.profiles.add(), t_ns)
    if case == "partial":
        empty = sp.profiles.add()
        empty.sample_type.type_strindex = S["samples"]
        empty.sample_type.unit_strindex = S["count"]
        empty.samples.add(stack_index=1, values=[0])
    if case == "bad-index":
        sp.profiles[0].samples.add(stack_index=99, values=[1])
    if case in ("labels", "labels-json", "bad-attribute"):
        d = rq.dictionary
        d.attribute_table.add()
        a = d.attribute_table.add(key_strindex=S["thread.name"])  # 1
        a.value.string_value = "worker"
        a = d.attribute_table.add(key_strindex=S["http.route"])  # 2
        a.value.string_value_strindex = S["/api/users"]
        a = d.attribute_table.add(key_strindex=S["retries"])  # 3
        a.value.int_value = 2
        d.link_table.add()
        d.link_table.add(trace_id=TRACE_ID, span_id=SPAN_ID)  # 1
        s = sp.profiles[0].samples
        s[0].attribute_indices.extend([1, 3])
        s[0].link_index = 1
        s[1].attribute_indices.append(2)
        if case == "bad-attribute":
            s[2].attribute_indices.append(9)
    return rq


def post(body, content_type, encoding=None):
    headers = {"Content-Type": content_type}
    if encoding:
        headers["Content-Encoding"] = encoding
    rq = urllib.request.Request(BASE + "/v1development/profiles", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(rq) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


rq = request(CASE)
if CASE in ("cpu-json", "labels-json"):
    j = json.loads(json_format.MessageToJson(rq))
    # OTLP/JSON writes trace and span ids in hex, not protobuf's base64
    for link in j.get("dictionary", {}).get("linkTable", []):
        for k in ("traceId", "spanId"):
            if k in link:
                link[k] = base64.b64decode(link[k]).hex()
    status, ctype, body = post(json.dumps(j).encode(), "application/json")
elif CASE == "cpu-gzip":
    status, ctype, body = post(gzip.compress(rq.SerializeToString()), "application/x-protobuf", "gzip")
else:
    status, ctype, body = post(rq.SerializeToString(), "application/x-protobuf")

if status == 200:
    answer = pb.ExportProfilesServiceResponse()
    if ctype.startswith("application/json"):
        json_format.Parse(body, answer)
    else:
        answer.ParseFromString(body)
    out = json_format.MessageToDict(answer)
else:
    out = json.loads(body) if ctype.startswith("application/json") else {"raw": body.decode("latin-1")}
print(json.dumps({"status": status, "content_type": ctype, "answer": out}))
