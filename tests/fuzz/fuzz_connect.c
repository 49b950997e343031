/* fuzz_connect.c — the request messages of Grafana's Connect calls
 * (server/grafana_handlers.c's methods), read as the server reads them
 * (connect.c: srv_connect_read): the first byte picks the method (its low
 * three bits) and the codec (bit 3: application/json through
 * ingest_protojson_parse, else application/proto through protobuf-c's
 * unpack); the rest is the body.  A message read must pass protobuf-c's
 * check and pack to its packed size; one read from JSON must also read
 * back from those bytes to the same size (no field half-set, every string
 * and repeated count consistent); a JSON refusal says something.  (A
 * binary message is not read back: protobuf-c keeps unknown fields as they
 * came, and a field number 0 it took in a long varint tag it refuses
 * once packed short.) */
#include "fuzz.h"

#include "../../ingest/ingest.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

static const ProtobufCMessageDescriptor *const requests[8] = {
    &querier__v1__profile_types_request__descriptor,
    &types__v1__label_names_request__descriptor,
    &types__v1__label_values_request__descriptor,
    &querier__v1__series_request__descriptor,
    &querier__v1__select_merge_stacktraces_request__descriptor,
    &querier__v1__select_merge_profile_request__descriptor,
    &querier__v1__select_series_request__descriptor,
    &types__v1__get_profile_stats_request__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const ProtobufCMessageDescriptor *d = requests[data[0] & 7];
    ProtobufCMessage *m;
    int json = data[0] & 8;
    if (json) {
        char err[512] = "";
        m = ingest_protojson_parse(d, (const char *)data + 1, size - 1, err, sizeof err);
        if (!m) FUZZ_CHECK(err[0]);
    } else {
        m = protobuf_c_message_unpack(d, NULL, size - 1, data + 1);
    }
    if (!m) return 0;
    FUZZ_CHECK(m->descriptor == d);
    FUZZ_CHECK(protobuf_c_message_check(m));
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf) {
        FUZZ_CHECK(protobuf_c_message_pack(m, buf) == n);
        if (json) {
            ProtobufCMessage *back = protobuf_c_message_unpack(d, NULL, n, buf);
            FUZZ_CHECK(back != NULL);
            FUZZ_CHECK(protobuf_c_message_get_packed_size(back) == n);
            protobuf_c_message_free_unpacked(back, NULL);
        }
        free(buf);
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}
