"""grafana_client.py — querier.v1.QuerierService called the way Grafana's
Pyroscope data source calls it (issue 11, point 3): a Connect unary call as
connect-go makes it (POST /querier.v1.QuerierService/<Method>,
Content-Type: application/proto, Connect-Protocol-Version: 1, the binary
message as the body), the request built and the answer decoded by Python's
protobuf runtime (Debian's python3-protobuf) with classes protoc
(protobuf-compiler) generates at test time from proto/querier.proto,
proto/types.proto and proto/profile.proto (SelectMergeProfile answers a
pprof Profile).

Usage (Debian's own python3, which python3-protobuf installs for):
  /usr/bin/python3 grafana_client.py BASE_URL PROTO_DIR WORK_DIR METHOD REQUEST_JSON [CODEC] [TOKEN]

REQUEST_JSON is the request in protobuf's JSON mapping (made into the
message by json_format, then encoded by CODEC: proto (default) or json).
Prints one JSON line: {"status", "content_type", "answer"} where answer is
the response message as a dict (json_format, proto field names) or, for an
error, the Connect error body; and for a flame graph or a pprof profile
"folded": its stacks as sorted "a;b;c value" lines with a value (decoded
here from the levels, or from the samples and their locations)."""
import importlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

BASE, PROTO_DIR, WORK, METHOD, REQUEST = sys.argv[1:6]
CODEC = sys.argv[6] if len(sys.argv) > 6 else "proto"
TOKEN = sys.argv[7] if len(sys.argv) > 7 else ""

for f in ("types.proto", "querier.proto", "profile.proto"):
    subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", WORK, os.path.join(PROTO_DIR, f)], check=True)
sys.path.insert(0, WORK)
types_pb2 = importlib.import_module("types_pb2")
querier_pb2 = importlib.import_module("querier_pb2")
profile_pb2 = importlib.import_module("profile_pb2")
from google.protobuf import json_format  # noqa: E402

METHODS = {
    "ProfileTypes": (querier_pb2.ProfileTypesRequest, querier_pb2.ProfileTypesResponse),
    "LabelNames": (types_pb2.LabelNamesRequest, types_pb2.LabelNamesResponse),
    "LabelValues": (types_pb2.LabelValuesRequest, types_pb2.LabelValuesResponse),
    "Series": (querier_pb2.SeriesRequest, querier_pb2.SeriesResponse),
    "SelectMergeStacktraces": (querier_pb2.SelectMergeStacktracesRequest,
                               querier_pb2.SelectMergeStacktracesResponse),
    "SelectMergeSpanProfile": (querier_pb2.SelectMergeSpanProfileRequest,
                               querier_pb2.SelectMergeSpanProfileResponse),
    "SelectMergeProfile": (querier_pb2.SelectMergeProfileRequest, profile_pb2.Profile),
    "SelectSeries": (querier_pb2.SelectSeriesRequest, querier_pb2.SelectSeriesResponse),
    "GetProfileStats": (types_pb2.GetProfileStatsRequest, types_pb2.GetProfileStatsResponse),
}
req_cls, resp_cls = METHODS.get(METHOD, (querier_pb2.ProfileTypesRequest, querier_pb2.ProfileTypesResponse))


def levels_folded(names, levels):
    """Flamebearer levels back to stacks: x from the offsets, each node's
    parent the node above whose [x, x + total) holds it."""
    rows, out = [], []
    for d, values in enumerate(levels):
        row, end = [], 0
        for i in range(0, len(values), 4):
            dx, total, self_, name = values[i:i + 4]
            x = end + dx
            end = x + total
            parent = None
            if d:
                parent = next(p for p in rows[d - 1] if p["x"] <= x and x + total <= p["x"] + p["total"])
            node = {"x": x, "total": total, "self": self_, "name": names[name], "parent": parent}
            row.append(node)
            if self_:
                stack, n = [], node
                while n["parent"] is not None:
                    stack.append(n["name"])
                    n = n["parent"]
                out.append("%s %d" % (";".join(reversed(stack)), self_))
        rows.append(row)
    return sorted(out)


def profile_folded(p):
    fn = {f.id: p.string_table[f.name] for f in p.function}
    loc = {l.id: [fn[line.function_id] for line in l.line] for l in p.location}
    out = []
    for s in p.sample:
        frames = []
        for lid in reversed(s.location_id):  # leaf first in pprof
            frames.extend(reversed(loc[lid]))  # lines: innermost first
        out.append("%s %d" % (";".join(frames), s.value[0]))
    return sorted(out)


msg = json_format.ParseDict(json.loads(REQUEST), req_cls())
if CODEC == "json":
    body, ct = json_format.MessageToJson(msg).encode(), "application/json"
else:
    body, ct = msg.SerializeToString(), "application/proto"
headers = {"Content-Type": ct, "Connect-Protocol-Version": "1", "User-Agent": "connect-go/1.16.2 (go1.22)",
           "Accept-Encoding": "identity"}
if TOKEN:
    headers["Authorization"] = "Bearer " + TOKEN
rq = urllib.request.Request(BASE + "/querier.v1.QuerierService/" + METHOD, data=body, headers=headers, method="POST")
try:
    with urllib.request.urlopen(rq, timeout=60) as r:
        status, rct, data = r.status, r.headers.get("Content-Type", ""), r.read()
except urllib.error.HTTPError as e:
    status, rct, data = e.code, e.headers.get("Content-Type", ""), e.read()

out = {"status": status, "content_type": rct}
if status != 200:
    out["answer"] = json.loads(data)
else:
    resp = resp_cls()
    if rct.startswith("application/json"):
        json_format.Parse(data, resp)
    else:
        resp.ParseFromString(data)
    out["answer"] = json_format.MessageToDict(resp, preserving_proto_field_name=True)
    if METHOD in ("SelectMergeStacktraces", "SelectMergeSpanProfile"):
        fg = resp.flamegraph
        out["folded"] = levels_folded(list(fg.names), [list(l.values) for l in fg.levels])
        out["total"] = fg.total
    elif METHOD == "SelectMergeProfile":
        out["folded"] = profile_folded(resp)
print(json.dumps(out))
