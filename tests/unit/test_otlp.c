/* test_otlp.c — unit tests of OpenTelemetry profiles ingest (ingest/otlp.c)
 * and of the JSON mapping of protobuf messages (ingest/protojson.c).
 *
 * Each request is written once as OTLP/JSON (the form a person can read)
 * and decoded twice: from the JSON, and from the binary protobuf that
 * protobuf-c packs from the message the JSON gave; both must give the same
 * profiles.  The binary form against other encoders (Python's protobuf,
 * from the same .proto) is tested in tests/integration/test_otlp.sh. */
#include <string.h>
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

#include "../../ingest/ingest_internal.h"
#include "../../storage/frame.h"
#include "otlp_profiles.pb-c.h"

#define MAX_OUT (64u << 20)

/* The dictionary the requests below share: main -> foo -> bar, and an
 * unsymbolized frame in libc.  Strings: 0 "", 1 main, 2 foo, 3 bar, 4 cpu,
 * 5 nanoseconds, 6 samples, 7 count, 8 /usr/lib/libc.so.6, 9 main.c,
 * 10 alloc_space, 11 bytes. */
#define DICT                                                                                       \
    "\"dictionary\": {"                                                                            \
    " \"stringTable\": [\"\", \"main\", \"foo\", \"bar\", \"cpu\", \"nanoseconds\", \"samples\","  \
    "   \"count\", \"/usr/lib/libc.so.6\", \"main.c\", \"alloc_space\", \"bytes\"],"               \
    " \"mappingTable\": [{}, {\"memoryStart\": \"4096\", \"memoryLimit\": \"1052672\","           \
    "   \"fileOffset\": \"0\", \"filenameStrindex\": 8}],"                                          \
    " \"functionTable\": [{}, {\"nameStrindex\": 1, \"filenameStrindex\": 9},"                     \
    "   {\"nameStrindex\": 2}, {\"nameStrindex\": 3}],"                                            \
    " \"locationTable\": [{}, {\"lines\": [{\"functionIndex\": 1, \"line\": \"12\"}]},"            \
    "   {\"lines\": [{\"functionIndex\": 2}]}, {\"lines\": [{\"functionIndex\": 3}]},"             \
    "   {\"mappingIndex\": 1, \"address\": \"8192\"}],"                                             \
    " \"stackTable\": [{}, {\"locationIndices\": [3, 2, 1]}, {\"locationIndices\": [2, 1]},"       \
    "   {\"locationIndices\": [4, 1]}]"                                                             \
    "}"

/* Decodes text as JSON and as the binary protobuf of the same message;
 * asserts both give the same profiles and answers the JSON one. */
static ingest_status decode_both(const char *json, const ingest_profile *base, ingest_otlp *out, char *err,
                                 size_t errlen)
{
    ingest_status s = ingest_otlp_parse(json, strlen(json), 1, MAX_OUT, base, 0, out, err, errlen);
    char perr[512];
    ProtobufCMessage *m =
        ingest_protojson_parse(&flamedb__otlp__export_profiles_service_request__descriptor, json, strlen(json), perr,
                               sizeof perr);
    if (!m) {
        assert_int_not_equal(s, INGEST_OK);
        return s;
    }
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *bin = malloc(n ? n : 1);
    assert_non_null(bin);
    protobuf_c_message_pack(m, bin);
    protobuf_c_message_free_unpacked(m, NULL);
    ingest_otlp b;
    char berr[512] = "";
    ingest_status bs = ingest_otlp_parse(bin, n, 0, MAX_OUT, base, 0, &b, berr, sizeof berr);
    free(bin);
    assert_int_equal(bs, s);
    if (!s) {
        assert_int_equal(b.n, out->n);
        assert_int_equal(b.rejected, out->rejected);
        for (size_t i = 0; i < b.n; i++) {
            assert_int_equal(b.profiles[i].n_stacks, out->profiles[i].n_stacks);
            assert_int_equal(b.profiles[i].total, out->profiles[i].total);
            for (size_t k = 0; k < b.profiles[i].n_stacks; k++) {
                assert_int_equal(b.profiles[i].stacks[k].len, out->profiles[i].stacks[k].len);
                assert_memory_equal(b.profiles[i].stacks[k].frames, out->profiles[i].stacks[k].frames,
                                    b.profiles[i].stacks[k].len);
                assert_int_equal(b.profiles[i].stacks[k].count, out->profiles[i].stacks[k].count);
            }
            assert_int_equal(b.profiles[i].n_labels, out->profiles[i].n_labels);
            for (int k = 0; k < b.profiles[i].n_labels; k++) {
                assert_string_equal(b.profiles[i].labels[k].name, out->profiles[i].labels[k].name);
                assert_string_equal(b.profiles[i].labels[k].value, out->profiles[i].labels[k].value);
            }
        }
    } else {
        assert_string_equal(berr, err);
    }
    ingest_otlp_free(&b);
    return s;
}

/* The count of the stack whose frames' names are `names` (root first,
 * located frames' file and line left out), or 0. */
static uint64_t stack_count(const ingest_profile *p, const char *names)
{
    for (size_t i = 0; i < p->n_stacks; i++) {
        char buf[1024];
        size_t n = 0;
        int in_name = 1;
        for (uint32_t k = 0; k < p->stacks[i].len && n + 1 < sizeof buf; k++) {
            char c = p->stacks[i].frames[k];
            if (c == ';') in_name = 1;
            else if (c == FRAME_SEP) in_name = 0;
            if (in_name) buf[n++] = c;
        }
        buf[n] = '\0';
        if (!strcmp(buf, names)) return p->stacks[i].count;
    }
    return 0;
}

/* The request's part: no labels, the window a profile without a time
 * gets (the server's default: the 10 s before the request). */
static void base_init(ingest_profile *b)
{
    ingest_profile_init(b);
    b->from_ms = 1700000000000;
    b->until_ms = 1700000010000;
}

/* The eBPF profiler's shape: (samples, count) every 10 ms of cpu time
 * becomes type cpu in nanoseconds; a sample of timestamps only counts one
 * each; resource attributes become the documented labels, others not. */
static void test_otlp_cpu_profile(void **state)
{
    (void)state;
    const char *json =
        "{\"resourceProfiles\": [{\"resource\": {\"attributes\": ["
        "  {\"key\": \"service.name\", \"value\": {\"stringValue\": \"api\"}},"
        "  {\"key\": \"host.name\", \"value\": {\"stringValue\": \"node-1\"}},"
        "  {\"key\": \"process.pid\", \"value\": {\"intValue\": \"4242\"}}]},"
        " \"scopeProfiles\": [{\"profiles\": [{"
        "  \"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7},"
        "  \"periodType\": {\"typeStrindex\": 4, \"unitStrindex\": 5}, \"period\": \"10000000\","
        "  \"timeUnixNano\": \"1700000000000000000\", \"durationNano\": \"10000000000\","
        "  \"samples\": [{\"stackIndex\": 1, \"values\": [\"3\"]},"
        "              {\"stackIndex\": 2, \"timestampsUnixNano\": [\"1700000000100000000\", \"1700000000200000000\"]},"
        "              {\"stackIndex\": 3, \"values\": [1, 1], \"timestampsUnixNano\": [\"1\", \"2\"]}]"
        " }]}]}], " DICT "}";
    ingest_profile base;
    base_init(&base);
    ingest_otlp o;
    char err[512] = "";
    { ingest_status ds_ = decode_both(json, &base, &o, err, sizeof err); if (ds_) fail_msg("%s", err); }
    assert_int_equal(o.n, 1);
    assert_int_equal(o.rejected, 0);
    const ingest_profile *p = &o.profiles[0];
    assert_string_equal(ingest_label_get(p, "service"), "api");
    assert_string_equal(ingest_label_get(p, "node"), "node-1");
    assert_string_equal(ingest_label_get(p, "type"), "cpu");
    assert_null(ingest_label_get(p, "pid"));
    assert_null(ingest_label_get(p, "process.pid"));
    assert_string_equal(p->unit, "nanoseconds");
    assert_int_equal(p->from_ms, 1700000000000);
    assert_int_equal(p->until_ms, 1700000010000);
    assert_int_equal(stack_count(p, "main;foo;bar"), 30000000);
    assert_int_equal(stack_count(p, "main;foo"), 20000000);
    assert_int_equal(stack_count(p, "main;libc.so.6+0x1000"), 20000000);
    assert_int_equal(p->total, 70000000);
    assert_int_equal(p->samples_how, INGEST_SAMPLES_KNOWN);
    assert_int_equal(p->samples, 7);
    ingest_otlp_free(&o);
    ingest_profile_free(&base);
}

/* Several resources: each its own labels; the request's labels win over
 * attributes; the executable names a resource without a service; a
 * profile with no value is left out and counted (partial success). */
static void test_otlp_resources_and_partial(void **state)
{
    (void)state;
    const char *json =
        "{\"resourceProfiles\": ["
        " {\"resource\": {\"attributes\": [{\"key\": \"process.executable.name\", \"value\": {\"stringValue\": \"nginx\"}},"
        "   {\"key\": \"k8s.pod.name\", \"value\": {\"stringValueStrindex\": 2}}]},"
        "  \"scopeProfiles\": [{\"profiles\": ["
        "   {\"sampleType\": {\"typeStrindex\": 10, \"unitStrindex\": 11}, \"timeUnixNano\": \"2000000000000\","
        "    \"samples\": [{\"stackIndex\": 1, \"values\": [\"4096\"]}]},"
        "   {\"sampleType\": {\"typeStrindex\": 10, \"unitStrindex\": 11}, \"samples\": [{\"stackIndex\": 1, \"values\": [0]}]}"
        "  ]}]},"
        " {\"resource\": {\"attributes\": [{\"key\": \"service.name\", \"value\": {\"stringValue\": \"db\"}},"
        "   {\"key\": \"deployment.environment.name\", \"value\": {\"stringValue\": \"prod\"}}]},"
        "  \"scopeProfiles\": [{\"profiles\": [{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7},"
        "    \"samples\": [{\"stackIndex\": 2, \"values\": [5]}]}]}]},"
        " {\"scopeProfiles\": [{\"profiles\": [{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7},"
        "    \"samples\": [{\"stackIndex\": 2, \"values\": [1]}]}]}]}"
        "], " DICT "}";
    ingest_profile base;
    base_init(&base);
    ingest_otlp o;
    char err[512] = "";
    { ingest_status ds_ = decode_both(json, &base, &o, err, sizeof err); if (ds_) fail_msg("%s", err); }
    assert_int_equal(o.n, 3);
    assert_int_equal(o.rejected, 1);
    assert_err_contains(o.rejected_why, "resource_profiles[0].scope_profiles[0].profiles[1]");
    assert_string_equal(ingest_label_get(&o.profiles[0], "service"), "nginx");
    assert_string_equal(ingest_label_get(&o.profiles[0], "process"), "nginx");
    assert_string_equal(ingest_label_get(&o.profiles[0], "pod"), "foo");
    assert_string_equal(ingest_label_get(&o.profiles[0], "type"), "alloc_space");
    assert_string_equal(o.profiles[0].unit, "bytes");
    assert_int_equal(stack_count(&o.profiles[0], "main;foo;bar"), 4096);
    assert_string_equal(ingest_label_get(&o.profiles[1], "service"), "db");
    assert_string_equal(ingest_label_get(&o.profiles[1], "env"), "prod");
    assert_string_equal(ingest_label_get(&o.profiles[1], "type"), "samples");
    assert_int_equal(stack_count(&o.profiles[1], "main;foo"), 5);
    assert_string_equal(ingest_label_get(&o.profiles[2], "service"), "unknown_service");
    ingest_otlp_free(&o);
    /* the request's own labels come first */
    char e2[512];
    assert_int_equal(ingest_label_add(&base, "service", "checkout", e2, sizeof e2), INGEST_OK);
    { ingest_status ds_ = decode_both(json, &base, &o, err, sizeof err); if (ds_) fail_msg("%s", err); }
    for (size_t i = 0; i < o.n; i++) assert_string_equal(ingest_label_get(&o.profiles[i], "service"), "checkout");
    ingest_otlp_free(&o);
    ingest_profile_free(&base);
}

/* Stack index 0 is the unset sentinel: a sample without frames, counted
 * as "[unknown]" like a pprof sample without locations, also when the
 * request has no stack table at all (a crash found by fuzz_otlp). */
static void test_otlp_sentinel_stack(void **state)
{
    (void)state;
    const char *json = "{\"resourceProfiles\": [{\"scopeProfiles\": [{\"profiles\": [{\"sampleType\": "
                       "{\"typeStrindex\": 1, \"unitStrindex\": 2}, \"samples\": [{\"values\": [4]}]}]}]}],"
                       " \"dictionary\": {\"stringTable\": [\"\", \"samples\", \"count\"]}}";
    ingest_profile base;
    base_init(&base);
    ingest_otlp o;
    char err[512] = "";
    { ingest_status ds_ = decode_both(json, &base, &o, err, sizeof err); if (ds_) fail_msg("%s", err); }
    assert_int_equal(o.n, 1);
    assert_int_equal(stack_count(&o.profiles[0], "[unknown]"), 4);
    ingest_otlp_free(&o);
    ingest_profile_free(&base);
}

/* Every malformed request is refused whole, the error naming where. */
static void test_otlp_errors(void **state)
{
    (void)state;
    static const struct { const char *profile, *dict, *expect; } cases[] = {
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 9, \"values\": [1]}]}",
          DICT, "profiles[0].samples[0]: stack_index 9 is outside the stack table" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [-1]}]}",
          DICT, "samples[0].values[0]: -1 is negative" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1}]}",
          DICT, "samples[0]: neither values nor timestamps" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1, 2],"
          " \"timestampsUnixNano\": [\"5\"]}]}",
          DICT, "2 values but 1 timestamps" },
        { "{\"samples\": [{\"stackIndex\": 1, \"values\": [1]}]}", DICT, "profiles[0]: sample_type is missing" },
        { "{\"sampleType\": {\"typeStrindex\": 60, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1]}]}",
          DICT, "string index outside the string table" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1]}]}",
          "\"dictionary\": {\"stringTable\": [\"\", \"samples\", \"count\"], \"stackTable\": [{}, {\"locationIndices\": [0]}]}",
          "stack_table[1].location_indices[0]: 0 is the unset sentinel" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1]}]}",
          "\"dictionary\": {\"stringTable\": [\"x\"]}", "string_table[0] must be the empty string" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1]}]}",
          "\"dictionary\": {\"stringTable\": [\"\"], \"locationTable\": [{}, {\"lines\": [{\"functionIndex\": 7}]}]}",
          "location_table[1].lines[0]: function_index 7 is outside the function table" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [\"x1\"]}]}",
          DICT, "resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].values[0]: expected an integer" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": {}}", DICT,
          "profiles[0].samples: expected an array" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": "
          "[\"9007199254740991\", \"1\"]}]}", DICT, "exceeds 9007199254740991" },
        { "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"period\": \"4611686018427387904\","
          " \"periodType\": {\"typeStrindex\": 4, \"unitStrindex\": 5}, \"samples\": [{\"stackIndex\": 1, \"values\": [2]}]}",
          DICT, "the value times the period exceeds" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[8192];
        snprintf(json, sizeof json, "{\"resourceProfiles\": [{\"scopeProfiles\": [{\"profiles\": [%s]}]}], %s}",
                 cases[i].profile, cases[i].dict);
        ingest_profile base;
        base_init(&base);
        ingest_otlp o;
        char err[512] = "";
        ingest_status s = decode_both(json, &base, &o, err, sizeof err);
        if (s != INGEST_EINVAL) fail_msg("case %zu: status %d, error '%s'", i, s, err);
        assert_err_contains(err, cases[i].expect);
        assert_int_equal(o.n, 0);
        assert_null(o.profiles);
        ingest_profile_free(&base);
    }
}

/* The JSON mapping itself: both key spellings, 64-bit integers as strings
 * or numbers, base64 and the hex ids of links, unknown keys ignored,
 * malformed JSON answered with its line and column. */
static void test_protojson(void **state)
{
    (void)state;
    char err[512];
    const char *json = "{\"resource_profiles\": [], \"dictionary\": {\"string_table\": [\"\", \"a\"],"
                       " \"linkTable\": [{}, {\"traceId\": \"0102030405060708090A0B0C0D0E0F10\", \"spanId\": \"a1b2c3d4e5f60718\"}],"
                       " \"mappingTable\": [{}, {\"memoryLimit\": \"18446744073709551615\"}], \"somethingNew\": {\"x\": [1]}}}";
    Flamedb__Otlp__ExportProfilesServiceRequest *rq = (Flamedb__Otlp__ExportProfilesServiceRequest *)
        ingest_protojson_parse(&flamedb__otlp__export_profiles_service_request__descriptor, json, strlen(json), err,
                               sizeof err);
    if (!rq) fail_msg("%s", err);
    assert_int_equal(rq->dictionary->n_string_table, 2);
    assert_string_equal(rq->dictionary->string_table[1], "a");
    assert_int_equal(rq->dictionary->link_table[1]->trace_id.len, 16);
    assert_int_equal(rq->dictionary->link_table[1]->trace_id.data[9], 0x0a);
    assert_int_equal(rq->dictionary->link_table[1]->span_id.len, 8);
    assert_int_equal(rq->dictionary->link_table[1]->span_id.data[0], 0xa1);
    assert_true(rq->dictionary->mapping_table[1]->memory_limit == UINT64_MAX);
    protobuf_c_message_free_unpacked(&rq->base, NULL);

    const char *any = "{\"bytesValue\": \"aGVsbG8\"}";
    Flamedb__Otlp__AnyValue *v = (Flamedb__Otlp__AnyValue *)ingest_protojson_parse(
        &flamedb__otlp__any_value__descriptor, any, strlen(any), err, sizeof err);
    if (!v) fail_msg("%s", err);
    assert_int_equal(v->value_case, FLAMEDB__OTLP__ANY_VALUE__VALUE_BYTES_VALUE);
    assert_int_equal(v->bytes_value.len, 5);
    assert_memory_equal(v->bytes_value.data, "hello", 5);
    protobuf_c_message_free_unpacked(&v->base, NULL);

    static const struct { const char *text, *expect; } bad[] = {
        { "{\"stringValue\": \"a\", \"intValue\": 1}", "only one field of the oneof" },
        { "{\"intValue\": \"9223372036854775808\"}", "intValue: integer out of range" },
        { "{\"intValue\": 1.5}", "intValue: expected an integer" },
        { "{\"boolValue\": 1}", "boolValue: expected true or false" },
        { "{\"bytesValue\": \"a$b\"}", "bytesValue: expected a base64 string" },
        { "{\"stringValue\": \"a\\u0000b\"}", "\\u0000 is not allowed" },
        { "{\"stringValue\": ", "line 1, column" },
        { "[1]", "expected an object" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        ProtobufCMessage *m =
            ingest_protojson_parse(&flamedb__otlp__any_value__descriptor, bad[i].text, strlen(bad[i].text), err, sizeof err);
        if (m) fail_msg("case %zu accepted", i);
        assert_err_contains(err, bad[i].expect);
    }
}

/* The stacks' text of all profiles together is bounded (413), and so is
 * the number of profiles. */
static void test_otlp_limits(void **state)
{
    (void)state;
    const char *json = "{\"resourceProfiles\": [{\"scopeProfiles\": [{\"profiles\": ["
                       "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1]}]},"
                       "{\"sampleType\": {\"typeStrindex\": 6, \"unitStrindex\": 7}, \"samples\": [{\"stackIndex\": 1, \"values\": [1]}]}"
                       "]}]}], " DICT "}";
    ingest_profile base;
    base_init(&base);
    ingest_otlp o;
    char err[512];
    if (ingest_otlp_parse(json, strlen(json), 1, MAX_OUT, &base, 0, &o, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(o.n, 2);
    size_t one = o.profiles[0].arena_len; /* the text of one profile's one stack */
    assert_true(one > 12);
    ingest_otlp_free(&o);
    assert_int_equal(ingest_otlp_parse(json, strlen(json), 1, one * 3 / 2, &base, 0, &o, err, sizeof err),
                     INGEST_ETOOBIG);
    assert_int_equal(o.n, 0);
    assert_int_equal(ingest_otlp_parse(json, strlen(json), 1, one * 2, &base, 0, &o, err, sizeof err), INGEST_OK);
    assert_int_equal(o.n, 2);
    ingest_otlp_free(&o);
    size_t cap = 64 + (INGEST_OTLP_MAX_PROFILES + 1) * 3 + strlen(DICT);
    char *many = malloc(cap);
    assert_non_null(many);
    size_t n = (size_t)sprintf(many, "{\"resourceProfiles\": [{\"scopeProfiles\": [{\"profiles\": [");
    for (int i = 0; i <= INGEST_OTLP_MAX_PROFILES; i++) n += (size_t)sprintf(many + n, "%s{}", i ? "," : "");
    sprintf(many + n, "]}]}], %s}", DICT);
    assert_int_equal(ingest_otlp_parse(many, strlen(many), 1, MAX_OUT, &base, 0, &o, err, sizeof err), INGEST_ETOOBIG);
    assert_err_contains(err, "more than 4096");
    free(many);
    ingest_profile_free(&base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_otlp_cpu_profile),
        cmocka_unit_test(test_otlp_resources_and_partial),
        cmocka_unit_test(test_otlp_sentinel_stack),
        cmocka_unit_test(test_otlp_errors),
        cmocka_unit_test(test_protojson),
        cmocka_unit_test(test_otlp_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
