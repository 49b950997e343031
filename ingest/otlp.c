/* otlp.c — OpenTelemetry profiles (OTLP, profiles/v1development as of
 * opentelemetry-proto v1.11.0) into ingest_profiles.
 *
 * An ExportProfilesServiceRequest holds resources, each with profiles of
 * one sample type, and one dictionary they all index: strings, mappings,
 * locations, functions, stacks (index 0 of every table is the unset
 * sentinel).  Each profile is turned into the pprof profile it describes
 * and decoded by pprof.c's core (ingest_pprof_decode): the frames (inlined
 * lines caller first, unsymbolized locations named
 * "<mapping basename>+0x<offset>"), the cut of deep stacks before any text
 * is built, the text bound and the window are pprof's, so the two paths
 * cannot drift apart.  The translation shares the dictionary's tables
 * (ids are the OTLP indices; a location, function or mapping index 0 means
 * none, as id 0 does in pprof) and makes only each profile's samples.
 *
 * Samples.  A stack is leaf first, as in pprof.  A sample's value is the
 * sum of its values, or one per timestamp when it has none (the proto's
 * rule); values and timestamps both given must be as many.
 *
 * Types.  A profile of sample type (samples, count) sampled every `period`
 * of a period type in another unit — what the OpenTelemetry eBPF profiler
 * sends: (cpu, nanoseconds) every 1e9/frequency — is stored as that
 * period type, each count times the period: `type="cpu"` in nanoseconds,
 * like a Go pprof CPU profile, its samples known (total / period).  Any
 * other sample type is stored as it says (type = its name, unit = its
 * unit).
 *
 * Labels.  The request's own labels (its query parameters) first, then
 * these resource attributes where the request did not set the label:
 * service.name → service, service.instance.id → instance, host.name (or
 * k8s.node.name) → node, k8s.namespace.name → namespace, k8s.pod.name →
 * pod, k8s.container.name → container, container.id → container_id,
 * process.executable.name → process, deployment.environment.name (or
 * deployment.environment) → env.  Other attributes are not labels: a
 * series is identified by few labels, and attributes such as process.pid
 * would make one series per process (issue 13's bounded labels).  A
 * resource without a service is named by its executable, else
 * "unknown_service" (OpenTelemetry's own default).
 *
 * All or nothing.  Anything malformed (a bad index, a negative value, a
 * label that does not validate) rejects the whole request with an error
 * naming the profile and the field; nothing is returned.  A profile with
 * no sample of a non-zero value is only left out and counted
 * (`rejected`, OTLP's partial success), as an empty window of a folded
 * push would be refused.
 *
 * Sample labels (issue 11, point 5).  A sample's attributes (strings and
 * integers, as text) and its link's trace_id and span_id (lower-case hex)
 * become pprof sample labels of the translated profile, kept as pprof.c
 * keeps them (pseudo-frames, within its limits) when the base asks.  Their
 * strings that the dictionary lacks (inline values, numbers, hex ids) are
 * appended once per request to a copy of the string table's pointers that
 * every profile of the request shares. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_profiles.pb-c.h"
#include "profile.pb-c.h"

typedef Flamedb__Otlp__ExportProfilesServiceRequest otlp_request;
typedef Flamedb__Otlp__ProfilesDictionary otlp_dict;
typedef Flamedb__Otlp__Profile otlp_profile;
typedef Perftools__Profiles__Profile pb_profile;

/* The dictionary as pprof tables, made once per request. */
typedef struct {
    const otlp_dict *d;
    Perftools__Profiles__Mapping *maps, **map_ptrs;
    Perftools__Profiles__Function *fns, **fn_ptrs;
    Perftools__Profiles__Location *locs, **loc_ptrs;
    Perftools__Profiles__Line *lines, **line_ptrs;
    uint64_t *stack_locs; /* every stack's location ids, leaf first */
    size_t *stack_off;    /* n_stack_table + 1 offsets into stack_locs */
    size_t n_maps, n_fns, n_locs;
    /* One profile's view: the entries its samples use (a profile's cost
     * follows its samples, not the dictionary it shares with the others),
     * found with marks stamped by profile. */
    uint32_t *loc_mark, *fn_mark, *map_mark;
    /* sample labels: the string table with the strings the dictionary
     * lacks appended, and each attribute's and link's label strings */
    char **strs;
    size_t n_strs, n_extra;
    int64_t *attr_key, *attr_val;     /* per attribute_table entry; val 0: not a label */
    int64_t *link_trace, *link_span;  /* per link_table entry; 0: none */
    int64_t key_trace, key_span;      /* "trace_id", "span_id" */
    Perftools__Profiles__Location **used_locs;
    Perftools__Profiles__Function **used_fns;
    Perftools__Profiles__Mapping **used_maps;
} tables;

static const char *dict_str(const otlp_dict *d, int64_t i)
{
    return d && i >= 0 && (uint64_t)i < d->n_string_table ? d->string_table[i] : NULL;
}

static void tables_free(tables *t)
{
    free(t->maps);
    free(t->map_ptrs);
    free(t->fns);
    free(t->fn_ptrs);
    free(t->locs);
    free(t->loc_ptrs);
    free(t->lines);
    free(t->line_ptrs);
    free(t->stack_locs);
    free(t->stack_off);
    free(t->loc_mark);
    free(t->fn_mark);
    free(t->map_mark);
    free(t->used_locs);
    free(t->used_fns);
    free(t->used_maps);
    for (size_t i = 0; t->strs && i < t->n_extra; i++) free(t->strs[t->d->n_string_table + i]);
    free(t->strs);
    free(t->attr_key);
    free(t->attr_val);
    free(t->link_trace);
    free(t->link_span);
}

/* Index i of a table of n entries (the sentinel 0 included; 0, "none",
 * also when the table is empty). */
static int index_ok(int64_t i, size_t n) { return i == 0 || (i > 0 && (uint64_t)i < n); }

/* Appends an owned string to the shared table: its index, or -1. */
static int64_t extra_str(tables *t, char *s)
{
    if (!s) return -1;
    t->strs[t->n_strs] = s;
    t->n_extra++;
    return (int64_t)t->n_strs++;
}

static char *hex_of(const ProtobufCBinaryData *b)
{
    static const char digits[] = "0123456789abcdef";
    char *s = malloc(2 * b->len + 1);
    if (!s) return NULL;
    for (size_t i = 0; i < b->len; i++) {
        s[2 * i] = digits[b->data[i] >> 4];
        s[2 * i + 1] = digits[b->data[i] & 15];
    }
    s[2 * b->len] = '\0';
    return s;
}

/* The labels' strings of the attribute and link tables (see the top). */
static ingest_status labels_make(tables *t, char *err, size_t errlen)
{
    const otlp_dict *d = t->d;
    size_t extra = 2 + d->n_attribute_table + 2 * d->n_link_table;
    t->strs = calloc(d->n_string_table + extra + 1, sizeof *t->strs);
    t->attr_key = calloc(d->n_attribute_table + 1, sizeof *t->attr_key);
    t->attr_val = calloc(d->n_attribute_table + 1, sizeof *t->attr_val);
    t->link_trace = calloc(d->n_link_table + 1, sizeof *t->link_trace);
    t->link_span = calloc(d->n_link_table + 1, sizeof *t->link_span);
    if (!t->strs || !t->attr_key || !t->attr_val || !t->link_trace || !t->link_span) goto oom;
    if (d->n_string_table) memcpy(t->strs, d->string_table, d->n_string_table * sizeof *t->strs);
    t->n_strs = d->n_string_table;
    if (!t->n_strs && extra_str(t, strdup("")) < 0) goto oom; /* index 0 is "" */
    if ((t->key_trace = extra_str(t, strdup("trace_id"))) < 0 || (t->key_span = extra_str(t, strdup("span_id"))) < 0)
        goto oom;
    for (size_t i = 1; i < d->n_attribute_table; i++) {
        const Flamedb__Otlp__KeyValueAndUnit *kv = d->attribute_table[i];
        if (!index_ok(kv->key_strindex, d->n_string_table)) {
            snprintf(err, errlen, "dictionary.attribute_table[%zu]: key_strindex %" PRId32 " is outside the string "
                     "table (%zu entries)", i, kv->key_strindex, d->n_string_table);
            return INGEST_EINVAL;
        }
        t->attr_key[i] = kv->key_strindex;
        const Flamedb__Otlp__AnyValue *v = kv->value;
        if (!v) continue;
        if (v->value_case == FLAMEDB__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX) {
            if (!index_ok(v->string_value_strindex, d->n_string_table)) {
                snprintf(err, errlen, "dictionary.attribute_table[%zu].value: string_value_strindex %" PRId32
                         " is outside the string table (%zu entries)", i, v->string_value_strindex, d->n_string_table);
                return INGEST_EINVAL;
            }
            t->attr_val[i] = v->string_value_strindex;
        } else if (v->value_case == FLAMEDB__OTLP__ANY_VALUE__VALUE_STRING_VALUE) {
            if ((t->attr_val[i] = extra_str(t, strdup(v->string_value))) < 0) goto oom;
        } else if (v->value_case == FLAMEDB__OTLP__ANY_VALUE__VALUE_INT_VALUE) {
            char num[32];
            snprintf(num, sizeof num, "%" PRId64, v->int_value);
            if ((t->attr_val[i] = extra_str(t, strdup(num))) < 0) goto oom;
        }
    }
    for (size_t i = 1; i < d->n_link_table; i++) {
        const Flamedb__Otlp__Link *l = d->link_table[i];
        if (l->trace_id.len && (t->link_trace[i] = extra_str(t, hex_of(&l->trace_id))) < 0) goto oom;
        if (l->span_id.len && (t->link_span[i] = extra_str(t, hex_of(&l->span_id))) < 0) goto oom;
    }
    return INGEST_OK;
oom:
    snprintf(err, errlen, "out of memory decoding the OTLP request");
    return INGEST_ENOMEM;
}


static ingest_status tables_make(tables *t, const otlp_dict *d, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->d = d;
    static const otlp_dict empty = FLAMEDB__OTLP__PROFILES_DICTIONARY__INIT;
    if (!d) d = t->d = &empty;
    if (d->n_string_table && d->string_table[0][0]) {
        snprintf(err, errlen, "dictionary.string_table[0] must be the empty string");
        return INGEST_EINVAL;
    }
    size_t n_lines = 0, n_stack_locs = 0;
    for (size_t i = 1; i < d->n_location_table; i++) n_lines += d->location_table[i]->n_lines;
    for (size_t i = 0; i < d->n_stack_table; i++) n_stack_locs += d->stack_table[i]->n_location_indices;
    /* The sentinels (index 0) have no pprof entry: ids start at 1. */
    t->n_maps = d->n_mapping_table ? d->n_mapping_table - 1 : 0;
    t->n_fns = d->n_function_table ? d->n_function_table - 1 : 0;
    t->n_locs = d->n_location_table ? d->n_location_table - 1 : 0;
    t->maps = calloc(t->n_maps + 1, sizeof *t->maps);
    t->map_ptrs = calloc(t->n_maps + 1, sizeof *t->map_ptrs);
    t->fns = calloc(t->n_fns + 1, sizeof *t->fns);
    t->fn_ptrs = calloc(t->n_fns + 1, sizeof *t->fn_ptrs);
    t->locs = calloc(t->n_locs + 1, sizeof *t->locs);
    t->loc_ptrs = calloc(t->n_locs + 1, sizeof *t->loc_ptrs);
    t->lines = calloc(n_lines + 1, sizeof *t->lines);
    t->line_ptrs = calloc(n_lines + 1, sizeof *t->line_ptrs);
    t->stack_locs = calloc(n_stack_locs + 1, sizeof *t->stack_locs);
    t->stack_off = calloc(d->n_stack_table + 1, sizeof *t->stack_off);
    t->loc_mark = calloc(t->n_locs + 1, sizeof *t->loc_mark);
    t->fn_mark = calloc(t->n_fns + 1, sizeof *t->fn_mark);
    t->map_mark = calloc(t->n_maps + 1, sizeof *t->map_mark);
    t->used_locs = calloc(t->n_locs + 1, sizeof *t->used_locs);
    t->used_fns = calloc(t->n_fns + 1, sizeof *t->used_fns);
    t->used_maps = calloc(t->n_maps + 1, sizeof *t->used_maps);
    if (!t->maps || !t->map_ptrs || !t->fns || !t->fn_ptrs || !t->locs || !t->loc_ptrs || !t->lines ||
        !t->line_ptrs || !t->stack_locs || !t->stack_off || !t->loc_mark || !t->fn_mark || !t->map_mark ||
        !t->used_locs || !t->used_fns || !t->used_maps) {
        snprintf(err, errlen, "out of memory decoding the OTLP request");
        return INGEST_ENOMEM;
    }
    for (size_t i = 0; i < t->n_maps; i++) {
        const Flamedb__Otlp__Mapping *m = d->mapping_table[i + 1];
        Perftools__Profiles__Mapping init = PERFTOOLS__PROFILES__MAPPING__INIT;
        t->maps[i] = init;
        t->maps[i].id = i + 1;
        t->maps[i].memory_start = m->memory_start;
        t->maps[i].memory_limit = m->memory_limit;
        t->maps[i].file_offset = m->file_offset;
        t->maps[i].filename = m->filename_strindex;
        t->map_ptrs[i] = &t->maps[i];
    }
    for (size_t i = 0; i < t->n_fns; i++) {
        const Flamedb__Otlp__Function *f = d->function_table[i + 1];
        Perftools__Profiles__Function init = PERFTOOLS__PROFILES__FUNCTION__INIT;
        t->fns[i] = init;
        t->fns[i].id = i + 1;
        t->fns[i].name = f->name_strindex;
        t->fns[i].system_name = f->system_name_strindex;
        t->fns[i].filename = f->filename_strindex;
        t->fns[i].start_line = f->start_line;
        t->fn_ptrs[i] = &t->fns[i];
    }
    size_t ln = 0;
    for (size_t i = 0; i < t->n_locs; i++) {
        const Flamedb__Otlp__Location *l = d->location_table[i + 1];
        if (!index_ok(l->mapping_index, d->n_mapping_table)) {
            snprintf(err, errlen, "dictionary.location_table[%zu]: mapping_index %" PRId32 " is outside the mapping "
                     "table (%zu entries)", i + 1, l->mapping_index, d->n_mapping_table);
            return INGEST_EINVAL;
        }
        Perftools__Profiles__Location init = PERFTOOLS__PROFILES__LOCATION__INIT;
        t->locs[i] = init;
        t->locs[i].id = i + 1;
        t->locs[i].mapping_id = (uint64_t)l->mapping_index;
        t->locs[i].address = l->address;
        t->locs[i].n_line = l->n_lines;
        t->locs[i].line = t->line_ptrs + ln;
        for (size_t k = 0; k < l->n_lines; k++, ln++) {
            if (!index_ok(l->lines[k]->function_index, d->n_function_table)) {
                snprintf(err, errlen, "dictionary.location_table[%zu].lines[%zu]: function_index %" PRId32
                         " is outside the function table (%zu entries)", i + 1, k, l->lines[k]->function_index,
                         d->n_function_table);
                return INGEST_EINVAL;
            }
            Perftools__Profiles__Line linit = PERFTOOLS__PROFILES__LINE__INIT;
            t->lines[ln] = linit;
            t->lines[ln].function_id = l->lines[k]->function_index;
            t->lines[ln].line = l->lines[k]->line;
            t->line_ptrs[ln] = &t->lines[ln];
        }
        t->loc_ptrs[i] = &t->locs[i];
    }
    size_t pos = 0;
    for (size_t i = 0; i < d->n_stack_table; i++) {
        const Flamedb__Otlp__Stack *s = d->stack_table[i];
        t->stack_off[i] = pos;
        for (size_t k = 0; k < s->n_location_indices; k++) {
            int32_t li = s->location_indices[k];
            if (li <= 0 || (size_t)li >= d->n_location_table) {
                snprintf(err, errlen, "dictionary.stack_table[%zu].location_indices[%zu]: %" PRId32 " is %s", i, k, li,
                         li == 0 ? "the unset sentinel, not a location" : "outside the location table");
                return INGEST_EINVAL;
            }
            t->stack_locs[pos++] = (uint64_t)li;
        }
    }
    t->stack_off[d->n_stack_table] = pos;
    return labels_make(t, err, errlen);
}

/* ---- labels ------------------------------------------------------------ */

static const struct { const char *attr, *label; } attr_labels[] = {
    { "service.name", "service" },
    { "service.instance.id", "instance" },
    { "host.name", "node" },
    { "k8s.node.name", "node" },
    { "k8s.namespace.name", "namespace" },
    { "k8s.pod.name", "pod" },
    { "k8s.container.name", "container" },
    { "container.id", "container_id" },
    { "process.executable.name", "process" },
    { "deployment.environment.name", "env" },
    { "deployment.environment", "env" },
};

/* An attribute's value as label text (strings and integers), or NULL. */
static const char *attr_text(const otlp_dict *d, const Flamedb__Otlp__AnyValue *v, char *buf, size_t cap)
{
    if (!v) return NULL;
    switch (v->value_case) {
    case FLAMEDB__OTLP__ANY_VALUE__VALUE_STRING_VALUE:
        return v->string_value;
    case FLAMEDB__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
        return dict_str(d, v->string_value_strindex);
    case FLAMEDB__OTLP__ANY_VALUE__VALUE_INT_VALUE:
        snprintf(buf, cap, "%" PRId64, v->int_value);
        return buf;
    default:
        return NULL;
    }
}

static const char *attr_key(const otlp_dict *d, const Flamedb__Otlp__KeyValue *kv)
{
    return kv->key && *kv->key ? kv->key : dict_str(d, kv->key_strindex);
}

/* The base of resource r's profiles: the request's labels, then the
 * resource's attributes that map to labels it does not have. */
static ingest_status resource_base(const otlp_dict *d, const Flamedb__Otlp__ResourceProfiles *rp, size_t r,
                                   const ingest_profile *base, ingest_profile *out, char *err, size_t errlen)
{
    ingest_profile_init(out);
    out->from_ms = base->from_ms;
    out->until_ms = base->until_ms;
    out->aggregation = base->aggregation;
    out->sample_labels = base->sample_labels;
    snprintf(out->unit, sizeof out->unit, "%s", base->unit);
    ingest_status s;
    for (int i = 0; i < base->n_labels; i++)
        if ((s = ingest_label_add(out, base->labels[i].name, base->labels[i].value, err, errlen))) return s;
    const Flamedb__Otlp__Resource *res = rp->resource;
    const char *exe = NULL;
    for (size_t m = 0; m < sizeof attr_labels / sizeof *attr_labels; m++) {
        for (size_t a = 0; res && a < res->n_attributes; a++) {
            const char *key = attr_key(d, res->attributes[a]);
            if (!key || strcmp(key, attr_labels[m].attr)) continue;
            char num[32];
            const char *v = attr_text(d, res->attributes[a]->value, num, sizeof num);
            if (!v || !*v) break;
            if (!strcmp(attr_labels[m].label, "process")) exe = v;
            if (ingest_label_get(out, attr_labels[m].label)) break;
            char why[512];
            if ((s = ingest_label_add(out, attr_labels[m].label, v, why, sizeof why))) {
                snprintf(err, errlen, "resource_profiles[%zu].resource attribute '%s': %s", r, key, why);
                return s;
            }
            break;
        }
    }
    if (!ingest_label_get(out, "service")) {
        char why[512];
        if ((s = ingest_label_add(out, "service", exe ? exe : "unknown_service", why, sizeof why))) {
            snprintf(err, errlen, "resource_profiles[%zu]: service from process.executable.name: %s", r, why);
            return s;
        }
    }
    return INGEST_OK;
}

/* ---- one profile --------------------------------------------------------- */

/* Sets pb's locations, functions and mappings to those its samples use
 * (ids stay the dictionary's indices). */
static void use_entries(tables *t, pb_profile *pb, uint32_t stamp)
{
    size_t nl = 0, nf = 0, nm = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        const Perftools__Profiles__Sample *s = pb->sample[i];
        for (size_t k = 0; k < s->n_location_id; k++) {
            uint64_t id = s->location_id[k];
            if (t->loc_mark[id] == stamp) continue;
            t->loc_mark[id] = stamp;
            Perftools__Profiles__Location *l = t->loc_ptrs[id - 1];
            t->used_locs[nl++] = l;
            if (l->mapping_id && t->map_mark[l->mapping_id] != stamp) {
                t->map_mark[l->mapping_id] = stamp;
                t->used_maps[nm++] = t->map_ptrs[l->mapping_id - 1];
            }
            for (size_t j = 0; j < l->n_line; j++) {
                int64_t f = l->line[j]->function_id;
                if (f > 0 && t->fn_mark[f] != stamp) {
                    t->fn_mark[f] = stamp;
                    t->used_fns[nf++] = t->fn_ptrs[f - 1];
                }
            }
        }
    }
    pb->n_location = nl;
    pb->location = t->used_locs;
    pb->n_function = nf;
    pb->function = t->used_fns;
    pb->n_mapping = nm;
    pb->mapping = t->used_maps;
}

/* Profile p of resource base rb as a pprof profile over the tables:
 * its samples in arrays the caller frees (samples_out, ptrs_out, values_out). */
static ingest_status profile_pb(tables *t, const otlp_profile *p, uint32_t stamp, const char *where, pb_profile *pb,
                                Perftools__Profiles__ValueType *st, Perftools__Profiles__ValueType *pt,
                                Perftools__Profiles__Sample **samples_out, Perftools__Profiles__Sample ***ptrs_out,
                                int64_t **values_out, Perftools__Profiles__Label **labels_out,
                                Perftools__Profiles__Label ***label_ptrs_out, int *kept, char *err, size_t errlen)
{
    const otlp_dict *d = t->d;
    pb_profile init = PERFTOOLS__PROFILES__PROFILE__INIT;
    *pb = init;
    *kept = 0;
    if (!p->sample_type) {
        snprintf(err, errlen, "%s: sample_type is missing", where);
        return INGEST_EINVAL;
    }
    if (p->time_unix_nano > (uint64_t)INT64_MAX || p->duration_nano > (uint64_t)INT64_MAX) {
        snprintf(err, errlen, "%s: time_unix_nano or duration_nano past 2^63", where);
        return INGEST_EINVAL;
    }
    Perftools__Profiles__ValueType vinit = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    *st = vinit;
    *pt = vinit;
    st->type = p->sample_type->type_strindex;
    st->unit = p->sample_type->unit_strindex;
    uint64_t scale = 1;
    const char *unit = dict_str(d, st->unit);
    if (p->period_type) {
        pt->type = p->period_type->type_strindex;
        pt->unit = p->period_type->unit_strindex;
        pb->period_type = pt;
        pb->period = p->period;
        const char *ptype = dict_str(d, pt->type), *punit = dict_str(d, pt->unit);
        /* (samples, count) every period of another unit: store the period's type */
        if (unit && !strcmp(unit, "count") && p->period > 0 && ptype && *ptype && punit && *punit &&
            strcmp(punit, "count")) {
            *st = *pt;
            scale = (uint64_t)p->period;
        }
    }
    pb->n_sample_type = 1;
    pb->time_nanos = (int64_t)p->time_unix_nano;
    pb->duration_nanos = (int64_t)p->duration_nano;
    pb->n_string_table = t->n_strs;
    pb->string_table = t->strs;
    size_t n = p->n_samples, n_labs = 0;
    for (size_t i = 0; i < n; i++) n_labs += p->samples[i]->n_attribute_indices + 2;
    Perftools__Profiles__Label *lab = *labels_out = calloc(n_labs ? n_labs : 1, sizeof *lab);
    Perftools__Profiles__Label **labp = *label_ptrs_out = calloc(n_labs ? n_labs : 1, sizeof *labp);
    if (!lab || !labp) {
        snprintf(err, errlen, "out of memory decoding the OTLP request");
        return INGEST_ENOMEM;
    }
    size_t nl = 0;
    Perftools__Profiles__Sample *s = calloc(n ? n : 1, sizeof *s);
    Perftools__Profiles__Sample **sp = calloc(n ? n : 1, sizeof *sp);
    int64_t *vals = calloc(n ? n : 1, sizeof *vals);
    *samples_out = s;
    *ptrs_out = sp;
    *values_out = vals;
    if (!s || !sp || !vals) {
        snprintf(err, errlen, "out of memory decoding the OTLP request");
        return INGEST_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const Flamedb__Otlp__Sample *os = p->samples[i];
        if (!index_ok(os->stack_index, d->n_stack_table)) {
            snprintf(err, errlen, "%s.samples[%zu]: stack_index %" PRId32 " is outside the stack table (%zu entries)",
                     where, i, os->stack_index, d->n_stack_table);
            return INGEST_EINVAL;
        }
        if (!os->n_values && !os->n_timestamps_unix_nano) {
            snprintf(err, errlen, "%s.samples[%zu]: neither values nor timestamps (a sample needs one of them)", where, i);
            return INGEST_EINVAL;
        }
        if (os->n_values && os->n_timestamps_unix_nano && os->n_values != os->n_timestamps_unix_nano) {
            snprintf(err, errlen, "%s.samples[%zu]: %zu values but %zu timestamps (they must be as many)", where, i,
                     os->n_values, os->n_timestamps_unix_nano);
            return INGEST_EINVAL;
        }
        uint64_t v = 0;
        if (!os->n_values) v = os->n_timestamps_unix_nano;
        for (size_t k = 0; k < os->n_values; k++) {
            if (os->values[k] < 0) {
                snprintf(err, errlen, "%s.samples[%zu].values[%zu]: %" PRId64 " is negative", where, i, k, os->values[k]);
                return INGEST_EINVAL;
            }
            v += (uint64_t)os->values[k];
            if (v > INGEST_MAX_VALUE) break;
        }
        if (v > INGEST_MAX_VALUE / scale) {
            snprintf(err, errlen, "%s.samples[%zu]: the value%s exceeds %" PRIu64, where, i,
                     scale > 1 ? " times the period" : "", (uint64_t)INGEST_MAX_VALUE);
            return INGEST_EINVAL;
        }
        vals[i] = (int64_t)(v * scale);
        *kept |= vals[i] > 0;
        Perftools__Profiles__Sample sinit = PERFTOOLS__PROFILES__SAMPLE__INIT;
        s[i] = sinit;
        if ((size_t)os->stack_index < d->n_stack_table) { /* else 0 of an empty table: no frames */
            s[i].n_location_id = t->stack_off[os->stack_index + 1] - t->stack_off[os->stack_index];
            s[i].location_id = t->stack_locs + t->stack_off[os->stack_index];
        }
        s[i].n_value = 1;
        s[i].value = &vals[i];
        sp[i] = &s[i];
        /* sample labels: attributes, then the link's ids */
        s[i].label = labp + nl;
        for (size_t k = 0; k < os->n_attribute_indices; k++) {
            int32_t a = os->attribute_indices[k];
            if (a <= 0 || (size_t)a >= d->n_attribute_table) {
                snprintf(err, errlen, "%s.samples[%zu].attribute_indices[%zu]: %" PRId32 " is %s", where, i, k, a,
                         a == 0 ? "the unset sentinel, not an attribute" : "outside the attribute table");
                return INGEST_EINVAL;
            }
            Perftools__Profiles__Label linit = PERFTOOLS__PROFILES__LABEL__INIT;
            lab[nl] = linit;
            lab[nl].key = t->attr_key[a];
            lab[nl].str = t->attr_val[a];
            labp[nl] = &lab[nl];
            nl++;
            s[i].n_label++;
        }
        if (!index_ok(os->link_index, d->n_link_table)) {
            snprintf(err, errlen, "%s.samples[%zu]: link_index %" PRId32 " is outside the link table (%zu entries)",
                     where, i, os->link_index, d->n_link_table);
            return INGEST_EINVAL;
        }
        const int64_t ids[2][2] = { { t->key_span, os->link_index ? t->link_span[os->link_index] : 0 },
                                    { t->key_trace, os->link_index ? t->link_trace[os->link_index] : 0 } };
        for (int k = 0; k < 2; k++) {
            if (!ids[k][1]) continue;
            Perftools__Profiles__Label linit = PERFTOOLS__PROFILES__LABEL__INIT;
            lab[nl] = linit;
            lab[nl].key = ids[k][0];
            lab[nl].str = ids[k][1];
            labp[nl] = &lab[nl];
            nl++;
            s[i].n_label++;
        }
    }
    pb->n_sample = n;
    pb->sample = sp;
    use_entries(t, pb, stamp);
    return INGEST_OK;
}

/* ---- the request ------------------------------------------------------- */

void ingest_otlp_free(ingest_otlp *o)
{
    for (size_t i = 0; i < o->n; i++) ingest_profile_free(&o->profiles[i]);
    free(o->profiles);
    memset(o, 0, sizeof *o);
}

static ingest_status decode_request(const otlp_request *rq, size_t max_out, const ingest_profile *base,
                                    int window_given, ingest_otlp *out, char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t r = 0; r < rq->n_resource_profiles; r++)
        for (size_t s = 0; s < rq->resource_profiles[r]->n_scope_profiles; s++)
            total += rq->resource_profiles[r]->scope_profiles[s]->n_profiles;
    if (total > INGEST_OTLP_MAX_PROFILES) {
        snprintf(err, errlen, "%zu profiles in one request, more than %d", total, INGEST_OTLP_MAX_PROFILES);
        return INGEST_ETOOBIG;
    }
    tables t;
    ingest_status st = tables_make(&t, rq->dictionary, err, errlen);
    out->profiles = calloc(total ? total : 1, sizeof *out->profiles);
    if (!st && !out->profiles) {
        snprintf(err, errlen, "out of memory decoding the OTLP request");
        st = INGEST_ENOMEM;
    }
    size_t text_left = max_out, stamp = 0;
    for (size_t r = 0; !st && r < rq->n_resource_profiles; r++) {
        const Flamedb__Otlp__ResourceProfiles *rp = rq->resource_profiles[r];
        ingest_profile rb;
        if ((st = resource_base(t.d, rp, r, base, &rb, err, errlen))) {
            ingest_profile_free(&rb);
            break;
        }
        for (size_t s = 0; !st && s < rp->n_scope_profiles; s++) {
            for (size_t k = 0; !st && k < rp->scope_profiles[s]->n_profiles; k++) {
                char where[128];
                snprintf(where, sizeof where, "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu]", r, s, k);
                pb_profile pb;
                Perftools__Profiles__ValueType vt, pt;
                Perftools__Profiles__Sample *samples = NULL, **ptrs = NULL;
                Perftools__Profiles__Label *labels = NULL, **label_ptrs = NULL;
                int64_t *values = NULL;
                int kept;
                st = profile_pb(&t, rp->scope_profiles[s]->profiles[k], (uint32_t)++stamp, where, &pb, &vt, &pt, &samples,
                                &ptrs, &values, &labels, &label_ptrs, &kept, err, errlen);
                if (!st && !kept) {
                    if (!out->rejected)
                        snprintf(out->rejected_why, sizeof out->rejected_why, "%s has no sample with a value", where);
                    out->rejected++;
                } else if (!st) {
                    pb.sample_type = (Perftools__Profiles__ValueType *[]){ &vt };
                    char why[512];
                    ingest_profile *p = &out->profiles[out->n];
                    st = ingest_pprof_decode(&pb, text_left, &rb, window_given, p, why, sizeof why);
                    if (st) {
                        ingest_profile_free(p);
                        snprintf(err, errlen, "%s: %s", where, why);
                    } else {
                        out->n++;
                        text_left -= p->arena_len < text_left ? p->arena_len : text_left;
                    }
                }
                free(samples);
                free(ptrs);
                free(values);
                free(labels);
                free(label_ptrs);
            }
        }
        ingest_profile_free(&rb);
    }
    tables_free(&t);
    if (st) ingest_otlp_free(out);
    return st;
}

ingest_status ingest_otlp_parse(const void *body, size_t len, int json, size_t max_out, const ingest_profile *base,
                                int window_given, ingest_otlp *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    otlp_request *rq;
    if (json) {
        char why[512];
        rq = (otlp_request *)ingest_protojson_parse(&flamedb__otlp__export_profiles_service_request__descriptor, body,
                                                    len, why, sizeof why);
        if (!rq) {
            snprintf(err, errlen, "OTLP JSON body: %s", why);
            return INGEST_EINVAL;
        }
    } else {
        rq = flamedb__otlp__export_profiles_service_request__unpack(NULL, len, body);
        if (!rq) {
            snprintf(err, errlen, "OTLP body: not a valid ExportProfilesServiceRequest (truncated, or not protobuf)");
            return INGEST_EINVAL;
        }
    }
    ingest_status s = decode_request(rq, max_out, base, window_given, out, err, errlen);
    protobuf_c_message_free_unpacked(&rq->base, NULL);
    return s;
}
