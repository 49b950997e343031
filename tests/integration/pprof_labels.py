#!/usr/bin/env python3
"""pprof_labels.py SPEC OUT — writes a pprof profile.proto (raw, not gzip'd)
with sample labels, encoded by hand from pprof's field numbers (profile.proto:
Profile.sample_type 1, sample 2, location 4, function 5, string_table 6,
period_type 11, period 12; Sample.location_id 1, value 2, label 3;
Label.key 1, str 2, num 3; Location.id 1, line 4; Line.function_id 1;
Function.id 1, name 2), so the test needs no protobuf runtime.

SPEC is JSON: {"types": [["samples", "count"], ...],
               "samples": [{"stack": "main;work", "values": [10, ...],
                            "labels": {"span_id": "a1", ...},
                            "num_labels": {"bytes": 512}}, ...],
               "no_labels": true}    (optional: leave every label out)
A stack is root first, as folded text writes it."""
import json
import sys


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(tag, n):
    return varint(tag << 3) + varint(n)


def field_bytes(tag, b):
    return varint(tag << 3 | 2) + varint(len(b)) + b


def main():
    spec = json.load(open(sys.argv[1]))
    strings = [""]
    index = {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    funcs = {}
    out = bytearray()
    for t, u in spec["types"]:
        out += field_bytes(1, field_varint(1, s(t)) + field_varint(2, s(u)))
    for smp in spec["samples"]:
        frames = smp["stack"].split(";")
        ids = []
        for f in reversed(frames):  # leaf first
            if f not in funcs:
                funcs[f] = len(funcs) + 1
            ids.append(funcs[f])
        body = field_bytes(1, b"".join(varint(i) for i in ids))
        body += field_bytes(2, b"".join(varint(v) for v in smp["values"]))
        if not spec.get("no_labels"):
            for k, v in smp.get("labels", {}).items():
                body += field_bytes(3, field_varint(1, s(k)) + field_varint(2, s(v)))
            for k, v in smp.get("num_labels", {}).items():
                body += field_bytes(3, field_varint(1, s(k)) + field_varint(3, v))
        out += field_bytes(2, body)
    for name, fid in funcs.items():  # location id = function id
        out += field_bytes(4, field_varint(1, fid) + field_bytes(4, field_varint(1, fid)))
        out += field_bytes(5, field_varint(1, fid) + field_varint(2, s(name)))
    for x in strings:
        out += field_bytes(6, x.encode())
    open(sys.argv[2], "wb").write(bytes(out))


if __name__ == "__main__":  # equiv.py imports the wire helpers
    main()
