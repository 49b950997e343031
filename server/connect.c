/* connect.c — the Connect protocol's unary calls (connectrpc.com/docs/protocol),
 * as Grafana's Pyroscope data source makes them (issue 11, point 3):
 * `POST /<package>.<Service>/<Method>`, the request message as the whole
 * body, the answer message as the whole body, in the request's codec:
 *
 *   Content-Type: application/proto   binary protobuf (what connect-go sends)
 *   Content-Type: application/json    protobuf's JSON mapping (curl, browsers)
 *
 * A body may come gzip'd (Content-Encoding: gzip), inflated within
 * --max-body.  JSON requests are read by ingest/protojson.c (descriptors
 * walked, the structs the binary decoder fills); JSON answers are written
 * here by the same walk the other way: keys in lowerCamelCase (protoc's
 * json_name), 64-bit integers as strings, bytes base64, fields at their
 * default left out, as protojson writes them.  Strings go through
 * jansson's escaping (query/buf.c).
 *
 * Errors are Connect's: JSON {"code": "invalid_argument", "message": ...}
 * whatever the request's codec, the HTTP status mapped from the code.
 * Every answer of a Connect request goes this way, also those the shared
 * helpers write (srv_reply_error: a 400 from the selector's tenant check, a
 * 503 at --query-timeout, 401 and 403 from --auth), since rq->connect
 * makes respond.c write the Connect form (srv_connect_code). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "../ingest/ingest.h"
#include "srv.h"

const char *srv_connect_code(int status)
{
    switch (status) {
    case 400: return "invalid_argument";
    case 401: return "unauthenticated";
    case 403: return "permission_denied";
    case 404: return "not_found";
    case 408: return "deadline_exceeded";
    case 409: return "aborted";
    case 413: case 414: case 429: case 431: case 507: return "resource_exhausted";
    case 415: return "internal"; /* Connect: a codec the server lacks */
    case 422: return "out_of_range";
    case 501: return "unimplemented";
    case 503: return "unavailable";
    case 504: return "deadline_exceeded";
    default: return status >= 500 ? "internal" : "unknown";
    }
}

enum MHD_Result srv_connect_error(srv_request *rq, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum MHD_Result r = srv_reply_verror(rq, status, code, fmt, ap);
    va_end(ap);
    return r;
}

/* "application/json; charset=utf-8" is application/json. */
static int media_is(const char *ct, const char *type)
{
    size_t n = strlen(type);
    if (strncasecmp(ct, type, n)) return 0;
    return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

int srv_connect_read(srv_request *rq, const ProtobufCMessageDescriptor *d, ProtobufCMessage **out)
{
    *out = NULL;
    const char *ct = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct && media_is(ct, "application/proto")) rq->connect_json = 0;
    else if (ct && media_is(ct, "application/json")) rq->connect_json = 1;
    else {
        srv_connect_error(rq, 415, "internal",
                          "Content-Type '%s': a Connect unary call is application/proto (binary protobuf) or "
                          "application/json (its JSON mapping)", ct ? ct : "(none)");
        return -1;
    }
    const char *body = rq->body;
    size_t len = rq->body_len;
    char *inflated = NULL, err[512];
    const char *ce = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (ce && strcasecmp(ce, "identity")) {
        if (strcasecmp(ce, "gzip")) {
            srv_connect_error(rq, 404, "unimplemented", "Content-Encoding '%s': only gzip is taken", ce);
            return -1;
        }
        ingest_status is = ingest_gunzip(body, len, rq->srv->max_body, &inflated, &len, err, sizeof err);
        if (is != INGEST_OK) {
            if (is == INGEST_ETOOBIG)
                srv_connect_error(rq, 413, "resource_exhausted", "the gunzipped body exceeds %zu bytes (--max-body)",
                                  rq->srv->max_body);
            else srv_connect_error(rq, 400, "invalid_argument", "Content-Encoding gzip: %s", err);
            return -1;
        }
        body = inflated;
    }
    if (rq->connect_json) {
        *out = ingest_protojson_parse(d, body, len, err, sizeof err);
        if (!*out) srv_connect_error(rq, 400, "invalid_argument", "the body is not a JSON %s: %s", d->name, err);
    } else {
        *out = protobuf_c_message_unpack(d, NULL, len, (const uint8_t *)body);
        if (!*out)
            srv_connect_error(rq, 400, "invalid_argument", "the body is not a protobuf %s (%zu bytes)", d->name, len);
    }
    free(inflated);
    return *out ? 0 : -1;
}

/* ---- protobuf's JSON mapping, written ------------------------------------ */

/* protoc's json_name: each '_' dropped, the letter after it upper-cased. */
static void put_json_name(query_buf *b, const char *name)
{
    query_buf_put(b, "\"", 1);
    for (int up = 0; *name; name++) {
        if (*name == '_') {
            up = 1;
            continue;
        }
        char c = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
        query_buf_put(b, &c, 1);
        up = 0;
    }
    query_buf_put(b, "\":", 2);
}

static void put_base64(query_buf *b, const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    query_buf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        char o[4] = { tab[v >> 18 & 63], tab[v >> 12 & 63], i + 1 < n ? tab[v >> 6 & 63] : '=',
                      i + 2 < n ? tab[v & 63] : '=' };
        query_buf_put(b, o, 4);
    }
    query_buf_put(b, "\"", 1);
}

static void put_double(query_buf *b, double x)
{
    if (x != x) query_buf_puts(b, "\"NaN\"");
    else if (x > 1.7976931348623157e308) query_buf_puts(b, "\"Infinity\"");
    else if (x < -1.7976931348623157e308) query_buf_puts(b, "\"-Infinity\"");
    else {
        json_t *j = json_real(x);
        query_buf_json(b, j);
        json_decref(j);
    }
}

static void put_message(query_buf *b, const ProtobufCMessage *m);

/* One value of field f at p. */
static void put_value(query_buf *b, const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: /* as its number */
        query_buf_i64(b, *(const int32_t *)p);
        break;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        query_buf_u64(b, *(const uint32_t *)p);
        break;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        query_buf_put(b, "\"", 1);
        query_buf_i64(b, *(const int64_t *)p);
        query_buf_put(b, "\"", 1);
        break;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        query_buf_put(b, "\"", 1);
        query_buf_u64(b, *(const uint64_t *)p);
        query_buf_put(b, "\"", 1);
        break;
    case PROTOBUF_C_TYPE_FLOAT: put_double(b, *(const float *)p); break;
    case PROTOBUF_C_TYPE_DOUBLE: put_double(b, *(const double *)p); break;
    case PROTOBUF_C_TYPE_BOOL: query_buf_puts(b, *(const protobuf_c_boolean *)p ? "true" : "false"); break;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        query_buf_json_string(b, s ? s : "", s ? strlen(s) : 0);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *d = p;
        put_base64(b, d->data, d->len);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: put_message(b, *(ProtobufCMessage *const *)p); break;
    }
}

static size_t type_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_FLOAT: return 4;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE: return 8;
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
    }
    return 0;
}

/* Whether a singular value is its type's default (proto3: not written). */
static int is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return !s || !*s;
    }
    case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)p)->len == 0;
    case PROTOBUF_C_TYPE_MESSAGE: return *(ProtobufCMessage *const *)p == NULL;
    case PROTOBUF_C_TYPE_FLOAT: return *(const float *)p == 0;
    case PROTOBUF_C_TYPE_DOUBLE: return *(const double *)p == 0;
    default: {
        static const uint8_t zero[8];
        return !memcmp(p, zero, type_size(f->type));
    }
    }
}

static void put_message(query_buf *b, const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    int first = 1;
    query_buf_put(b, "{", 1);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *p = base + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            if (!n) continue;
            if (!first) query_buf_put(b, ",", 1);
            first = 0;
            put_json_name(b, f->name);
            query_buf_put(b, "[", 1);
            const char *arr = *(char *const *)p;
            size_t sz = type_size(f->type);
            for (size_t k = 0; k < n; k++) {
                if (k) query_buf_put(b, ",", 1);
                put_value(b, f, arr + k * sz);
            }
            query_buf_put(b, "]", 1);
            continue;
        }
        if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
            f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING) {
            if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset)) continue;
        } else if (is_default(f, p)) {
            continue;
        }
        if (!first) query_buf_put(b, ",", 1);
        first = 0;
        put_json_name(b, f->name);
        put_value(b, f, p);
    }
    query_buf_put(b, "}", 1);
}

void srv_protojson_write(query_buf *b, const ProtobufCMessage *m) { put_message(b, m); }

enum MHD_Result srv_connect_reply(srv_request *rq, const ProtobufCMessage *m)
{
    if (rq->connect_json) {
        query_buf b = { 0 };
        put_message(&b, m);
        query_buf_put(&b, "\n", 1);
        size_t len;
        char *text = query_buf_take(&b, &len);
        if (!text) return srv_connect_error(rq, 500, "internal", "out of memory encoding the answer");
        return srv_reply_bytes(rq, 200, "application/json", text, len, 1);
    }
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *packed = malloc(n ? n : 1);
    if (!packed) return srv_connect_error(rq, 500, "internal", "out of memory encoding the answer");
    protobuf_c_message_pack(m, packed);
    return srv_reply_bytes(rq, 200, "application/proto", packed, n, 1);
}

enum MHD_Result srv_connect_reply_packed(srv_request *rq, const ProtobufCMessageDescriptor *d, void *packed,
                                         size_t len)
{
    if (!rq->connect_json) return srv_reply_bytes(rq, 200, "application/proto", packed, len, 1);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, packed);
    free(packed);
    if (!m) return srv_connect_error(rq, 500, "internal", "cannot read back the %s written", d->name);
    enum MHD_Result res = srv_connect_reply(rq, m);
    protobuf_c_message_free_unpacked(m, NULL);
    return res;
}
