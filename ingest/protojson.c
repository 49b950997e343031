/* protojson.c — JSON into protobuf-c messages, by their descriptors.
 *
 * Protocols that speak protobuf also accept its canonical JSON mapping
 * (protojson): OTLP/JSON (issue 11, point 4) and Connect's
 * application/json.  Rather than a hand-written reader per message, this
 * walks the message descriptors protoc-c generates, so one piece reads any
 * message of any .proto in proto/ and fills the very structs the binary
 * decoder fills; the caller frees the result with
 * protobuf_c_message_free_unpacked(msg, NULL), as after an unpack (every
 * part is malloc'd, as protobuf-c's default allocator does).
 *
 * The mapping (developers.google.com/protocol-buffers/docs/proto3#json):
 * keys are the lowerCamelCase JSON name or the proto field name; 64-bit
 * integers may be strings or numbers, 32-bit ones numbers or strings;
 * doubles numbers or "NaN", "Infinity", "-Infinity"; bytes base64
 * (standard or URL-safe, padding optional); repeated fields arrays; a
 * null value is the field's default.  Two rules are OTLP's own: unknown
 * keys are ignored (OTLP/JSON receivers must, and flamedb's .proto files
 * are subsets), and the trace and span ids of links (`trace_id`,
 * `span_id`) are hex strings, not base64.  Enums are not used by
 * flamedb's messages and are refused.
 *
 * Errors name the path of the value at fault, as the client wrote it:
 * "resourceProfiles[0].scopeProfiles[0].profiles[2].samples[5].values[0]:
 * expected an integer". */
#include "ingest_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

typedef struct {
    char path[512];
    size_t len;
    char *err;
    size_t errlen;
} walker;

static int fail(walker *w, const char *what)
{
    snprintf(w->err, w->errlen, "%s%s%s", w->path, w->len ? ": " : "", what);
    return -1;
}

/* Appends ".key" or "[i]" to the path; answers the length to restore. */
static size_t path_key(walker *w, const char *key)
{
    size_t old = w->len;
    int n = snprintf(w->path + w->len, sizeof w->path - w->len, "%s%s", w->len ? "." : "", key);
    if (n > 0) w->len = w->len + (size_t)n < sizeof w->path ? w->len + (size_t)n : sizeof w->path - 1;
    return old;
}

static size_t path_index(walker *w, size_t i)
{
    size_t old = w->len;
    int n = snprintf(w->path + w->len, sizeof w->path - w->len, "[%zu]", i);
    if (n > 0) w->len = w->len + (size_t)n < sizeof w->path ? w->len + (size_t)n : sizeof w->path - 1;
    return old;
}

static void path_restore(walker *w, size_t old)
{
    w->len = old;
    w->path[old] = '\0';
}

/* "fooBarBaz" -> "foo_bar_baz" (out has room for 2 * strlen + 1). */
static void snake_case(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (; *in && o + 2 < cap; in++) {
        if (*in >= 'A' && *in <= 'Z') {
            out[o++] = '_';
            out[o++] = (char)(*in - 'A' + 'a');
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

/* The field whose proto name or JSON name (protoc's: each '_' dropped and
 * the letter after it upper-cased, the rest as it is) is key: for names
 * that snake_case cannot undo, those with capitals of their own
 * (Pyroscope's `profile_typeID`, JSON `profileTypeID`). */
static const ProtobufCFieldDescriptor *field_by_json_name(const ProtobufCMessageDescriptor *d, const char *key)
{
    for (unsigned i = 0; i < d->n_fields; i++) {
        const char *p = d->fields[i].name, *k = key;
        int up = 0;
        for (; *p; p++) {
            if (*p == '_') {
                up = 1;
                continue;
            }
            char c = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
            up = 0;
            if (*k++ != c) break;
        }
        if ((!*p && !*k) || !strcmp(d->fields[i].name, key)) return &d->fields[i];
    }
    return NULL;
}

/* An integer from a JSON integer, an integral real, or a decimal string. */
static int get_int(walker *w, const json_t *v, int is_signed, int64_t lo, uint64_t hi, uint64_t *bits)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 ? !is_signed || (int64_t)i < lo : (uint64_t)i > hi) return fail(w, "integer out of range");
        *bits = (uint64_t)(int64_t)i;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d) || !isfinite(d)) return fail(w, "expected an integer");
        if (d < 0 ? !is_signed || d < (double)lo : d >= 18446744073709551616.0 || (uint64_t)d > hi)
            return fail(w, "integer out of range");
        *bits = d < 0 ? (uint64_t)(int64_t)d : (uint64_t)d;
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        if (!*s || *s == ' ' || *s == '+') return fail(w, "expected an integer");
        if (*s == '-') {
            if (!is_signed) return fail(w, "integer out of range");
            long long x = strtoll(s, &end, 10);
            if (*end || errno || x < lo) return fail(w, *end ? "expected an integer" : "integer out of range");
            *bits = (uint64_t)(int64_t)x;
        } else {
            unsigned long long x = strtoull(s, &end, 10);
            if (*end || errno || x > hi) return fail(w, *end ? "expected an integer" : "integer out of range");
            *bits = x;
        }
        return 0;
    }
    return fail(w, "expected an integer");
}

static int b64_value(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int get_bytes(walker *w, const json_t *v, int hex, ProtobufCBinaryData *out)
{
    if (!json_is_string(v)) return fail(w, hex ? "expected a hex string" : "expected a base64 string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    unsigned char *data = malloc(n ? n : 1);
    if (!data) return fail(w, "out of memory");
    size_t o = 0;
    if (hex) {
        if (n % 2) {
            free(data);
            return fail(w, "expected a hex string of whole bytes");
        }
        for (size_t i = 0; i < n; i += 2) {
            int a = hex_value(s[i]), b = hex_value(s[i + 1]);
            if (a < 0 || b < 0) {
                free(data);
                return fail(w, "expected a hex string");
            }
            data[o++] = (unsigned char)(a << 4 | b);
        }
    } else {
        while (n && s[n - 1] == '=') n--;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n; i++) {
            int x = b64_value((unsigned char)s[i]);
            if (x < 0) {
                free(data);
                return fail(w, "expected a base64 string");
            }
            acc = acc << 6 | (uint32_t)x;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                data[o++] = (unsigned char)(acc >> bits);
                acc &= (1u << bits) - 1;
            }
        }
        if (bits >= 6) {
            free(data);
            return fail(w, "expected a base64 string (cut in the middle of a byte)");
        }
    }
    out->data = data;
    out->len = o;
    return 0;
}

static int get_double(walker *w, const json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "NaN")) *out = NAN;
        else if (!strcmp(s, "Infinity")) *out = INFINITY;
        else if (!strcmp(s, "-Infinity")) *out = -INFINITY;
        else {
            char *end;
            *out = strtod(s, &end);
            if (!*s || *end) return fail(w, "expected a number");
        }
        return 0;
    }
    return fail(w, "expected a number");
}

static int read_message(walker *w, const ProtobufCMessageDescriptor *d, const json_t *obj, ProtobufCMessage **out,
                        int depth);

static size_t scalar_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 8;
    }
}

/* One value of field f into the storage at p. */
static int read_value(walker *w, const ProtobufCFieldDescriptor *f, const json_t *v, void *p, int depth)
{
    uint64_t bits;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        if (get_int(w, v, 1, INT32_MIN, INT32_MAX, &bits)) return -1;
        *(int32_t *)p = (int32_t)(int64_t)bits;
        return 0;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        if (get_int(w, v, 0, 0, UINT32_MAX, &bits)) return -1;
        *(uint32_t *)p = (uint32_t)bits;
        return 0;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        if (get_int(w, v, 1, INT64_MIN, INT64_MAX, &bits)) return -1;
        *(int64_t *)p = (int64_t)bits;
        return 0;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        if (get_int(w, v, 0, 0, UINT64_MAX, &bits)) return -1;
        *(uint64_t *)p = bits;
        return 0;
    case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_DOUBLE: {
        double x;
        if (get_double(w, v, &x)) return -1;
        if (f->type == PROTOBUF_C_TYPE_FLOAT) *(float *)p = (float)x;
        else *(double *)p = x;
        return 0;
    }
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v)) return fail(w, "expected true or false");
        *(protobuf_c_boolean *)p = json_is_true(v);
        return 0;
    case PROTOBUF_C_TYPE_STRING: {
        if (!json_is_string(v)) return fail(w, "expected a string");
        char *s = malloc(json_string_length(v) + 1);
        if (!s) return fail(w, "out of memory");
        memcpy(s, json_string_value(v), json_string_length(v) + 1); /* no NUL inside: jansson refuses the escape */
        *(char **)p = s;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES:
        return get_bytes(w, v, !strcmp(f->name, "trace_id") || !strcmp(f->name, "span_id"), p);
    case PROTOBUF_C_TYPE_MESSAGE:
        return read_message(w, f->descriptor, v, (ProtobufCMessage **)p, depth + 1);
    default:
        return fail(w, "enum fields are not supported");
    }
}

static int read_field(walker *w, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const json_t *v, int depth)
{
    char *base = (char *)m;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (!json_is_array(v)) return fail(w, "expected an array");
        size_t n = json_array_size(v), sz = scalar_size(f->type);
        size_t *count = (size_t *)(base + f->quantifier_offset);
        void **arr = (void **)(base + f->offset);
        if (*count) return fail(w, "the field is given twice (by its JSON name and its proto name)");
        if (!n) return 0;
        char *a = calloc(n, sz);
        if (!a) return fail(w, "out of memory");
        *arr = a;
        for (size_t i = 0; i < n; i++) {
            /* counted before it is read: what a failed read left (a
             * message, zeroed parts) is freed with the whole */
            *count = i + 1;
            size_t old = path_index(w, i);
            int rc = read_value(w, f, json_array_get(v, i), a + i * sz, depth);
            path_restore(w, old);
            if (rc) return -1;
        }
        return 0;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        uint32_t *which = (uint32_t *)(base + f->quantifier_offset);
        if (*which) return fail(w, "only one field of the oneof may be given");
        /* the case is set only once the value is in, so a failed read
         * never makes free_unpacked free an unset member */
        char tmp[sizeof(ProtobufCBinaryData) > 8 ? sizeof(ProtobufCBinaryData) : 8];
        memset(tmp, 0, sizeof tmp);
        if (read_value(w, f, v, tmp, depth)) {
            ProtobufCMessage *half;
            memcpy(&half, tmp, sizeof half);
            if (f->type == PROTOBUF_C_TYPE_MESSAGE && half) protobuf_c_message_free_unpacked(half, NULL);
            return -1;
        }
        memcpy(base + f->offset, tmp, scalar_size(f->type));
        *which = f->id;
        return 0;
    }
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset && f->type != PROTOBUF_C_TYPE_MESSAGE &&
        f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES)
        *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
    if (f->type == PROTOBUF_C_TYPE_STRING && *(char **)(base + f->offset) != f->default_value)
        return fail(w, "the field is given twice (by its JSON name and its proto name)");
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(void **)(base + f->offset))
        return fail(w, "the field is given twice (by its JSON name and its proto name)");
    if (f->type == PROTOBUF_C_TYPE_BYTES && ((ProtobufCBinaryData *)(base + f->offset))->data)
        return fail(w, "the field is given twice (by its JSON name and its proto name)");
    return read_value(w, f, v, base + f->offset, depth);
}

static int read_message(walker *w, const ProtobufCMessageDescriptor *d, const json_t *obj, ProtobufCMessage **out,
                        int depth)
{
    if (depth > MAX_DEPTH) return fail(w, "nested too deep");
    if (!json_is_object(obj)) return fail(w, "expected an object");
    ProtobufCMessage *m = malloc(d->sizeof_message);
    if (!m) return fail(w, "out of memory");
    d->message_init(m);
    *out = m; /* owned by the caller from here: freed whole on any error */
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (json_is_null(v)) continue;
        char name[256];
        snake_case(key, name, sizeof name);
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
        if (!f) f = field_by_json_name(d, key);
        if (!f) continue; /* unknown keys are ignored (OTLP/JSON) */
        size_t old = path_key(w, key);
        int rc = read_field(w, m, f, v, depth);
        path_restore(w, old);
        if (rc) return -1;
    }
    return 0;
}

ProtobufCMessage *ingest_protojson_parse(const ProtobufCMessageDescriptor *d, const char *text, size_t len,
                                         char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "line %d, column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    walker w = { .err = err, .errlen = errlen };
    ProtobufCMessage *m = NULL;
    int rc = read_message(&w, d, root, &m, 0);
    json_decref(root);
    if (rc) {
        if (m) protobuf_c_message_free_unpacked(m, NULL);
        return NULL;
    }
    return m;
}
