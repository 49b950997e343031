/* ingest_handlers.c — POST /api/v1/ingest (native) and POST /ingest
 * (Pyroscope-compatible).
 *
 * Both read their parameters into an ingest_profile; a pool thread then
 * decodes the body (Content-Encoding: gzip), parses every stack, validates
 * the whole profile and only then queues it for the store's group commit;
 * the connection stays suspended until the commit is durable (see
 * ingest_job).  Any error before the queue stores nothing; an error inside
 * the store rolls the request's transaction back.
 *
 * format=pprof (both endpoints): the body is pprof's profile.proto, gzip'd
 * or raw, or a multipart/form-data body whose `profile` field is (what
 * Pyroscope's SDKs send; `prev_profile` is ignored, `sample_type_config`
 * says which types are gauges).  Each sample type becomes one profile; all are decoded and
 * validated before the first is queued, then all are queued at once (they
 * normally share one group commit, each in its own nested transaction).
 *
 * POST /v1development/profiles: OpenTelemetry profiles (OTLP/HTTP), an
 * ExportProfilesServiceRequest in binary protobuf (application/x-protobuf
 * or application/protobuf) or its JSON mapping (application/json),
 * Content-Encoding gzip or none.  Every profile of every resource becomes
 * one stored profile (ingest/otlp.c), all stored or none like a pprof
 * file's sample types; profiles without a value, or older than the
 * retention, are left out and counted in the answer's partial_success, an
 * ExportProfilesServiceResponse in the request's encoding.  Query
 * parameters are labels of every profile, as on /api/v1/ingest. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <strings.h>

#include "../ingest/ingest.h"
#include "../query/query.h"
#include "otlp_profiles.pb-c.h"
#include "srv.h"

#define DEFAULT_WINDOW_MS 10000

static int ingest_status_http(ingest_status s)
{
    return s == INGEST_ETOOBIG ? MHD_HTTP_CONTENT_TOO_LARGE : s == INGEST_ENOMEM ? 500 : 400;
}

/* Parses a sampling rate in Hz: a positive number up to 1e9. */
static int parse_rate(const char *v, double *rate)
{
    char *end;
    double r = strtod(v, &end);
    if (!*v || *end || !isfinite(r) || r <= 0 || r > 1e9) return -1;
    *rate = r;
    return 0;
}

/* Reads the unit parameter (unit, or Pyroscope's units) into p; answers
 * -1 after replying 400 when it is malformed. */
static int read_unit(srv_request *rq, ingest_profile *p, const char *param)
{
    const char *u = srv_param(rq, param);
    if (!u) return 0;
    size_t n = strlen(u);
    if (!n || n >= INGEST_MAX_UNIT ||
        strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n) {
        srv_reply_error(rq, 400, "parameter '%s': '%s' must be 1 to %d letters, digits or '_'", param, u,
                        INGEST_MAX_UNIT - 1);
        return -1;
    }
    snprintf(p->unit, sizeof p->unit, "%s", u);
    return 0;
}

/* An ingest across its suspension: the parsed profile (pointing into the
 * request body), its store form, and the outcome.  The MHD thread reads the
 * parameters, suspends the connection and queues the job; a pool thread
 * parses and validates the body and queues the profile for the group
 * commit; the writer's callback (or the pool thread, on a bad body)
 * records the outcome and resumes the connection, and the MHD thread,
 * called again, answers.  The suspension comes before anything that could
 * resume it, so the two never cross. */
/* The store form of one pprof profile. */
typedef struct profile_prep {
    store_label labels[INGEST_MAX_LABELS + 1]; /* the client's, and the tenant's (--auth) */
    store_stack *stacks;
    hash128 *hashes;                          /* the stacks' hashes when the decoder took none */
    uint32_t *leaves;
    store_prep *prep;
    store_profile sp;
} profile_prep;

typedef struct {
    srv_request *rq;
    ingest_profile p;
    ingest_format fmt;
    int gzipped;
    char *plain;                              /* the gunzipped body */
    struct profile_prep one;                    /* the store form of p (not pprof) */
    int pprof, window_given;                  /* format=pprof; from/until given */
    int otlp;                                 /* OTLP: 1 binary protobuf, 2 its JSON mapping */
    size_t otlp_rejected;                     /* OTLP profiles left out (partial success) */
    char otlp_why[256];                       /* the first one's reason */
    const char *content_type;                 /* the request's, for multipart */
    ingest_profile *pp;                       /* pprof: one profile per sample type */
    size_t n_pp;
    struct profile_prep *preps;
    size_t pending;                           /* pprof profiles not yet committed */
    pthread_mutex_t lock;
    int suspended, done;
    int status;                               /* HTTP status of a failure */
    char err[1024];
    uint64_t held;                            /* bytes counted in srv->ingest_held */
} ingest_job;

static void job_free(void *arg)
{
    ingest_job *job = arg;
    atomic_fetch_sub(&job->rq->srv->ingest_held, job->held);
    ingest_profile_free(&job->p);
    for (size_t i = 0; job->preps && i < job->n_pp; i++) {
        free(job->preps[i].stacks);
        free(job->preps[i].hashes);
        free(job->preps[i].leaves);
        store_prep_free(job->preps[i].prep);
    }
    free(job->preps);
    if (job->pp) ingest_pprof_free(job->pp, job->n_pp);
    free(job->plain);
    free(job->one.stacks);
    free(job->one.hashes);
    free(job->one.leaves);
    store_prep_free(job->one.prep);
    pthread_mutex_destroy(&job->lock);
    free(job);
}

static ingest_job *job_new(srv_request *rq)
{
    ingest_job *job = calloc(1, sizeof *job);
    if (!job) return NULL;
    ingest_profile_init(&job->p);
    pthread_mutex_init(&job->lock, NULL);
    job->rq = rq;
    job->fmt = INGEST_FORMAT_FOLDED;
    rq->job = job;
    rq->job_free = job_free;
    return job;
}

/* Records the outcome and resumes the connection; any thread. */
static void job_finish(ingest_job *job, int status, const char *err)
{
    pthread_mutex_lock(&job->lock);
    job->status = status;
    snprintf(job->err, sizeof job->err, "%s", err ? err : "");
    job->done = 1;
    MHD_resume_connection(job->rq->conn);
    pthread_mutex_unlock(&job->lock);
}

/* The store's callback, on its writer thread. */
static void job_committed(void *ctx, store_status ss, uint32_t series, const char *err)
{
    (void)series;
    char msg[300];
    snprintf(msg, sizeof msg, "not stored: %s", err);
    job_finish(ctx, ss ? srv_status_of_store(ss) : 0, ss ? msg : NULL);
}

/* A pprof profile's commit, on the writer thread: the connection resumes
 * after the last one, with the first failure if any. */
static void job_part_done(ingest_job *job, int status, const char *err, size_t parts)
{
    pthread_mutex_lock(&job->lock);
    if (status && !job->status) {
        job->status = status;
        snprintf(job->err, sizeof job->err, "%s", err);
    }
    job->pending -= parts;
    if (!job->pending) {
        job->done = 1;
        MHD_resume_connection(job->rq->conn);
    }
    pthread_mutex_unlock(&job->lock);
}

static void job_part_committed(void *ctx, store_status ss, uint32_t series, const char *err)
{
    (void)series;
    char msg[300];
    snprintf(msg, sizeof msg, "not stored: %s", err);
    job_part_done(ctx, ss ? srv_status_of_store(ss) : 0, msg, 1);
}

/* The leaves of stacks (n, their hashes beside them) of a profile of the
 * group led by lead, starting at from_ms; answers store_resolve's token.
 * A stack with the lead's frames pointer and length is the same text as
 * the lead's stack there, so it takes the lead's leaf instead of being
 * looked up again: a pprof file's sample types share their stacks (Go's
 * CPU profile: every sample has both values).  Stacks are matched in the
 * order both lists keep (the arena's); those not found are resolved
 * together.  Leaves hold only for the partition object their token names:
 * when the lead's token and the others' differ (the partition was made or
 * dropped in between), or the window is another one, everything is
 * resolved again. */
static uint64_t shared_leaves(store *st, const profile_prep *lead, int64_t from_ms, const store_stack *stacks,
                              const hash128 *hashes, size_t n, uint32_t *leaves)
{
    const store_profile *lp = &lead->sp;
    size_t k = 0, left = 0;
    if (from_ms == lp->from_ms) {
        for (size_t i = 0; i < n; i++) {
            while (k < lp->n_stacks && (uintptr_t)lp->stacks[k].frames < (uintptr_t)stacks[i].frames) k++;
            int same = k < lp->n_stacks && lp->stacks[k].frames == stacks[i].frames && lp->stacks[k].len == stacks[i].len;
            leaves[i] = same ? lp->leaves[k] : UINT32_MAX;
            left += !same;
        }
    } else {
        left = n;
    }
    if (left == n) return store_resolve_hashed(st, lp->labels, lp->n_labels, from_ms, hashes, n, leaves);
    if (!left) return lp->part_token;
    hash128 *rest = malloc(left * sizeof *rest);
    uint32_t *found = malloc(left * sizeof *found);
    uint64_t token = 0;
    int ok = rest && found;
    if (ok) {
        size_t j = 0;
        for (size_t i = 0; i < n; i++)
            if (leaves[i] == UINT32_MAX) rest[j++] = hashes[i];
        token = store_resolve_hashed(st, lp->labels, lp->n_labels, from_ms, rest, left, found);
        for (size_t i = 0, j = 0; i < n; i++)
            if (leaves[i] == UINT32_MAX) leaves[i] = found[j++];
    }
    free(rest);
    free(found);
    if (!ok || token != lp->part_token)
        token = store_resolve_hashed(st, lp->labels, lp->n_labels, from_ms, hashes, n, leaves);
    return token;
}

/* The store form of a finished profile, filled in pr; -1 when out of
 * memory: labels, stacks, what the store already knows of them
 * (store_resolve: looked up here, so the writer threads only intern what
 * is new) and, when every stack is known, the block itself (store_prepare:
 * the writer then only frames and puts it).  The labels: the client's
 * (sorted by name, without the tenant label: refused_label), and under
 * --auth the request's tenant's (srv_tenant_labels: none for the default
 * tenant, whose series are those written without --auth).  lead: the
 * first profile of a group stored all or none, whose shard the group goes
 * to (NULL: p alone); its stacks were resolved first, and a stack of p
 * that is one of the lead's (the same text: a pprof file's sample types
 * point into one arena) takes the lead's leaf (shared_leaves). */
static int prep_fill(srv_request *rq, ingest_profile *p, profile_prep *pr, const profile_prep *lead)
{
    store *st = rq->srv->st;
    store_label client[INGEST_MAX_LABELS];
    for (int i = 0; i < p->n_labels; i++) client[i] = (store_label){ .name = p->labels[i].name, .value = p->labels[i].value };
    /* in cluster mode the tenant is a column of its own (chencode.h) */
    int n = st ? srv_tenant_labels(rq, client, p->n_labels, pr->labels) : p->n_labels;
    if (!st) memcpy(pr->labels, client, (size_t)n * sizeof *client);
    pr->stacks = malloc((p->n_stacks ? p->n_stacks : 1) * sizeof *pr->stacks);
    pr->leaves = malloc((p->n_stacks ? p->n_stacks : 1) * sizeof *pr->leaves);
    if (!pr->stacks || !pr->leaves) return -1;
    for (size_t i = 0; i < p->n_stacks; i++) {
        pr->stacks[i].frames = p->stacks[i].frames;
        pr->stacks[i].len = p->stacks[i].len;
        pr->stacks[i].count = p->stacks[i].count;
    }
    /* The stacks' hashes, taken once: the decoder's (pprof, OTLP: while
     * each stack's text was in cache), else here; the writer interns a new
     * stack under the same hash instead of hashing its text again (a
     * quarter of its CPU under bench_pprof_ingest). */
    const hash128 *hashes = p->hashes;
    if (st && !hashes) {
        hash128 *h = malloc((p->n_stacks ? p->n_stacks : 1) * sizeof *h);
        if (!h) return -1;
        for (size_t i = 0; i < p->n_stacks; i++) h[i] = hash_bytes128(p->stacks[i].frames, p->stacks[i].len);
        hashes = pr->hashes = h;
    }
    uint64_t token = 0;
    if (st && lead) token = shared_leaves(st, lead, p->from_ms, pr->stacks, hashes, p->n_stacks, pr->leaves);
    else if (st) token = store_resolve_hashed(st, pr->labels, n, p->from_ms, hashes, p->n_stacks, pr->leaves);
    pr->sp = (store_profile){
        .labels = pr->labels, .n_labels = n, .from_ms = p->from_ms, .until_ms = p->until_ms,
        .rate = p->rate, .unit = p->unit, .stacks = pr->stacks, .n_stacks = p->n_stacks, .hashes = hashes,
        .leaves = pr->leaves,
        .part_token = token,
        .samples_kind = p->samples_how != INGEST_SAMPLES_KNOWN ? STORE_SAMPLES_UNKNOWN
                        : p->samples                      ? STORE_SAMPLES_GIVEN
                                                          : STORE_SAMPLES_COUNTS,
        .samples = p->samples_how == INGEST_SAMPLES_KNOWN ? p->samples : 0,
        .gauge = p->aggregation == INGEST_AGG_AVERAGE,
        /* its connection sends nothing more until this is answered: the
         * writer never holds a commit for it (writer.c: gather) */
        .origin = (uint64_t)(uintptr_t)rq->conn,
    };
    if (st) pr->sp.prep = pr->prep = store_prepare(&pr->sp);
    return 0;
}

/* Cluster mode (--store clickhouse=...): the profiles, all or none, into
 * the front end's spool, durable when this returns (chfront.h); on this
 * pool thread.  A full spool (ClickHouse unreachable for long) is a 503. */
static void front_write(ingest_job *job, const store_profile *const *all, size_t n)
{
    char err[700];
    const char *tenant = srv_tenant_value(job->rq);
    chfront_status fs = chfront_write(job->rq->srv->front, tenant ? tenant : "", all, n, err, sizeof err);
    if (fs == CHFRONT_OK) {
        if (job->pp) job_part_done(job, 0, NULL, job->n_pp);
        else job_finish(job, 0, NULL);
        return;
    }
    char msg[900];
    snprintf(msg, sizeof msg, "not stored: %s%s", err,
             fs == CHFRONT_EFULL ? "; ClickHouse has not taken the spool's profiles for a while (GET /healthz says "
                                   "why): retry later"
                                 : "");
    int status = fs == CHFRONT_EINVAL ? 400 : fs == CHFRONT_ENOMEM ? 500 : 503;
    if (job->pp) job_part_done(job, status, msg, job->n_pp);
    else job_finish(job, status, msg);
}

/* A profile whose window started before the retention would be stored and
 * deleted a minute later: answered 400 instead, saying so (with the window,
 * so that a client importing old data sees why). */
static int too_old(ingest_job *job, const ingest_profile *p, char *err, size_t errlen)
{
    int64_t keep = job->rq->srv->retention_ms;
    if (keep <= 0 || p->from_ms >= srv_now_ms() - keep) return 0;
    json_t *t = query_time_json(p->from_ms);
    char *f = t ? json_dumps(t, JSON_ENCODE_ANY) : NULL;
    snprintf(err, errlen, "the profile's window starts at %s, older than the server's retention (%lld s): "
             "it would be deleted at once (flamedb serve --retention)", f ? f : "?", (long long)(keep / 1000));
    free(f);
    json_decref(t);
    return 1;
}

/* On a pool thread: a pprof body into one profile per sample type, all
 * validated, then all queued. */
/* Pyroscope's sample_type_config (a multipart field): {"inuse_space":
 * {"units": "bytes", "aggregation": "average"}, ...}.  Sets the
 * aggregation of the profiles whose type it names; answers -1 with a
 * message when it is malformed. */
static int apply_type_config(const char *text, size_t len, ingest_profile *pp, size_t n, char *err, size_t errlen)
{
    json_error_t je;
    json_t *cfg = json_loadb(text, len, 0, &je);
    if (!cfg || !json_is_object(cfg)) {
        snprintf(err, errlen, "multipart field 'sample_type_config': not a JSON object (%s)", cfg ? "" : je.text);
        json_decref(cfg);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *agg = json_object_get(json_object_get(cfg, ingest_label_get(&pp[i], "type")), "aggregation");
        if (!agg) continue;
        if (!json_is_string(agg) || ingest_aggregation_parse(json_string_value(agg), &pp[i].aggregation)) {
            snprintf(err, errlen, "multipart field 'sample_type_config': type '%s': aggregation must be \"sum\" or \"average\"",
                     ingest_label_get(&pp[i], "type"));
            rc = -1;
        }
    }
    json_decref(cfg);
    return rc;
}

static void store_all(ingest_job *job);

/* ingest_par's run: the parse pool's idle threads (workpool.c). */
static void pool_lend(void *pool, size_t n, void (*task)(void *arg, size_t i), void *arg)
{
    srv_workpool_lend(pool, n, task, arg);
}

/* The parse pool's idle threads, for a decode's passes. */
static ingest_par job_par(srv_request *rq)
{
    return (ingest_par){ pool_lend, rq->srv->pool, rq->srv->pool ? srv_workpool_threads(rq->srv->pool) : 1 };
}

/* The writer's call when it cannot use the leaves (store_profile.write_text). */
static void job_write_text(void *ctx)
{
    ingest_job *job = ctx;
    ingest_pprof_write_text(job->pp, job->n_pp, NULL, NULL);
}

static void job_parse_pprof(ingest_job *job, const char *body, size_t len)
{
    srv_request *rq = job->rq;
    char err[1024];
    const char *config = NULL;
    size_t config_len = 0;
    if (ingest_multipart_is(job->content_type)) {
        const char *field;
        size_t flen;
        ingest_status s = ingest_multipart_field(job->content_type, body, len, "profile", &field, &flen, err, sizeof err);
        if (!s) s = ingest_multipart_field(job->content_type, body, len, "sample_type_config", &config, &config_len, err,
                                           sizeof err);
        if (s) return job_finish(job, ingest_status_http(s), err);
        if (!field) return job_finish(job, 400, "multipart/form-data body without a 'profile' field (the pprof profile)");
        body = field;
        len = flen;
    }
    /* sample labels as pseudo-frames at the root of the stacks (store.h),
     * in both modes: a front end's stacks carry them into ClickHouse and
     * its readers skip or filter them as a store's do */
    job->p.sample_labels = 1;
    /* Only the stacks the store does not know yet need their text
     * (store_all): a front end's spool takes every stack's text. */
    job->p.text_later = rq->srv->st != NULL;
    ingest_par par = job_par(rq);
    ingest_status s = ingest_pprof_parse_par(body, len, rq->srv->max_body, &job->p, job->window_given,
                                             rq->srv->pool ? &par : NULL,
                                             &job->pp, &job->n_pp, err, sizeof err);
    if (s) return job_finish(job, ingest_status_http(s), err);
    if (config && apply_type_config(config, config_len, job->pp, job->n_pp, err, sizeof err))
        return job_finish(job, 400, err);
    for (size_t i = 0; i < job->n_pp; i++)
        if (too_old(job, &job->pp[i], err, sizeof err)) return job_finish(job, 400, err);
    store_all(job);
}

/* Queues every profile of job->pp for the store, all or none (one nested
 * transaction each, in one critical section: a failure drops them all). */
static void store_all(ingest_job *job)
{
    srv_request *rq = job->rq;
    job->preps = calloc(job->n_pp, sizeof *job->preps);
    if (!job->preps) return job_finish(job, 500, "out of memory");
    for (size_t i = 0; i < job->n_pp; i++)
        if (prep_fill(rq, &job->pp[i], &job->preps[i], i ? &job->preps[0] : NULL))
            return job_finish(job, 500, "out of memory");
    /* pprof's text later: now the text of the stacks the store does not
     * know, which the writer interns by it; the others are written only if
     * the writer cannot use their leaves */
    if (job->n_pp && job->pp[0].later) {
        const uint32_t **leaves = malloc(job->n_pp * sizeof *leaves);
        if (!leaves) return job_finish(job, 500, "out of memory");
        for (size_t i = 0; i < job->n_pp; i++) {
            leaves[i] = job->preps[i].leaves;
            job->preps[i].sp.write_text = job_write_text;
            job->preps[i].sp.write_text_ctx = job;
        }
        ingest_par par = job_par(rq);
        ingest_pprof_write_text(job->pp, job->n_pp, leaves, rq->srv->pool ? &par : NULL);
        free(leaves);
    }
    /* every sample type of the file, or none: one transaction */
    const store_profile **all = malloc(job->n_pp * sizeof *all);
    void **ctx = malloc(job->n_pp * sizeof *ctx);
    if (!all || !ctx) {
        free(all);
        free(ctx);
        return job_finish(job, 500, "out of memory");
    }
    for (size_t i = 0; i < job->n_pp; i++) {
        all[i] = &job->preps[i].sp;
        ctx[i] = job;
    }
    job->pending = job->n_pp;
    if (rq->srv->front) {
        front_write(job, all, job->n_pp);
        free(all);
        free(ctx);
        return;
    }
    store_status ss = store_write_async_all(rq->srv->st, all, job->n_pp, job_part_committed, ctx);
    free(all);
    free(ctx);
    if (ss)
        job_part_done(job, srv_status_of_store(ss),
                      ss == STORE_ECLOSED ? "not stored: the server is shutting down" : "not stored: invalid profile",
                      job->n_pp);
}

/* An OTLP request into profiles (all or nothing for what is malformed);
 * those already past the retention are left out like those without a
 * value (partial success), the others stored all or none. */
static void job_parse_otlp(ingest_job *job, const char *body, size_t len)
{
    char err[1024];
    ingest_otlp o;
    job->p.sample_labels = 1; /* as for pprof (job_parse_pprof) */
    ingest_status s = ingest_otlp_parse(body, len, job->otlp == 2, job->rq->srv->max_body, &job->p,
                                        job->window_given, &o, err, sizeof err);
    if (s) return job_finish(job, ingest_status_http(s), err);
    job->otlp_rejected = o.rejected;
    snprintf(job->otlp_why, sizeof job->otlp_why, "%s", o.rejected_why);
    size_t kept = 0;
    for (size_t i = 0; i < o.n; i++) {
        if (too_old(job, &o.profiles[i], err, sizeof err)) {
            if (!job->otlp_rejected++) snprintf(job->otlp_why, sizeof job->otlp_why, "%.200s", err);
            ingest_profile_free(&o.profiles[i]);
            continue;
        }
        o.profiles[kept++] = o.profiles[i];
    }
    job->pp = o.profiles; /* freed with ingest_pprof_free: each profile owns its arena */
    job->n_pp = kept;
    if (!kept) return job_finish(job, 0, NULL);
    store_all(job);
}

/* On a pool thread: decode, parse and validate the body, then queue the
 * profile for the group commit. */
static void job_parse(void *arg)
{
    ingest_job *job = arg;
    srv_request *rq = job->rq;
    char err[1024];
    ingest_profile *p = &job->p;
    const char *body = rq->body;
    size_t len = rq->body_len;
    if (job->gzipped) {
        ingest_status s = ingest_gunzip(body, len, rq->srv->max_body, &job->plain, &len, err, sizeof err);
        if (s) return job_finish(job, ingest_status_http(s), err);
        body = job->plain;
        job->held += len;
        atomic_fetch_add(&rq->srv->ingest_held, len);
    }
    if (job->pprof) return job_parse_pprof(job, body, len);
    if (job->otlp) return job_parse_otlp(job, body, len);
    ingest_status s = ingest_parse_stacks(p, job->fmt, body, len, err, sizeof err);
    if (!s) s = ingest_profile_finish(p, err, sizeof err);
    if (s) return job_finish(job, ingest_status_http(s), err);
    if (too_old(job, p, err, sizeof err)) return job_finish(job, 400, err);
    if (prep_fill(rq, p, &job->one, NULL)) return job_finish(job, 500, "out of memory");
    if (rq->srv->front) {
        const store_profile *one = &job->one.sp;
        return front_write(job, &one, 1);
    }
    store_status ss = store_write_async(rq->srv->st, &job->one.sp, job_committed, job);
    if (ss) job_finish(job, srv_status_of_store(ss), ss == STORE_ECLOSED ? "not stored: the server is shutting down"
                                                                          : "not stored: invalid profile");
}

/* The free bytes of the data directory's file system, read at most once a
 * second (statvfs is cheap, but not per request under a fleet's load); any
 * thread.  UINT64_MAX when it cannot be read. */
static uint64_t free_bytes(srv_ctx *srv)
{
    int64_t now = srv_now_ms(), last = atomic_load(&srv->free_checked_ms);
    if (now - last < 1000 && last) return atomic_load(&srv->free_bytes);
    struct statvfs vs;
    uint64_t b = srv->data_dir && statvfs(srv->data_dir, &vs) == 0 ? (uint64_t)vs.f_bavail * vs.f_frsize : UINT64_MAX;
    atomic_store(&srv->free_bytes, b);
    atomic_store(&srv->free_checked_ms, now);
    return b;
}

/* The tenant label is the server's (--auth): a client may not set it, with
 * or without --auth (or data pushed before --auth would land in a tenant). */
static int refused_label(srv_request *rq, const ingest_profile *p)
{
    if (!ingest_label_get(p, SRV_TENANT_LABEL)) return 0;
    srv_reply_error(rq, 400, "label '%s' is reserved: the server sets it from the token's tenant (--auth)",
                    SRV_TENANT_LABEL);
    return 1;
}

/* On the MHD thread, once the parameters are read: check the free space
 * and the encoding, suspend, queue the parsing. */
static enum MHD_Result submit_job(srv_request *rq, ingest_job *job)
{
    if (refused_label(rq, &job->p)) return MHD_YES;
    /* each tenant's pushes held to --ingest-rate (ratelimit.c) */
    int wait_s;
    if (srv_ratelimit_take(rq->srv->ingest_rate, rq->tenant, rq->body_len, store_mono_ms(), &wait_s)) {
        uint64_t rate, burst;
        srv_ratelimit_limits(rq->srv->ingest_rate, &rate, &burst);
        rq->retry_after = wait_s;
        return srv_reply_error(rq, MHD_HTTP_TOO_MANY_REQUESTS,
                               "not stored: %s%s%s more bytes than --ingest-rate allows (%llu a second, "
                               "bursts of %llu: --ingest-burst); retry in %d s",
                               rq->scoped ? "tenant '" : "this server's clients push", rq->scoped ? rq->tenant : "",
                               rq->scoped ? "' pushes" : "", (unsigned long long)rate, (unsigned long long)burst, wait_s);
    }
    /* A bounded queue between HTTP and the writer: pushes past
     * --max-ingest-queue bytes in flight (bodies, and their gunzipped text)
     * are refused at once rather than held in memory. */
    uint64_t held = atomic_load(&rq->srv->ingest_held), cap = rq->srv->max_ingest_held;
    if (cap && held && held + rq->body_len > cap) {
        rq->retry_after = 1;
        return srv_reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                               "not stored: the server is busy storing %.1f MiB of pushes (--max-ingest-queue "
                               "%.1f MiB); retry in a moment",
                               held / 1048576.0, cap / 1048576.0);
    }
    job->held = rq->body_len;
    atomic_fetch_add(&rq->srv->ingest_held, job->held);
    uint64_t free = rq->srv->min_free_bytes ? free_bytes(rq->srv) : UINT64_MAX;
    if (free < rq->srv->min_free_bytes) {
        rq->retry_after = SRV_RETRY_AFTER_S;
        return srv_reply_error(rq, MHD_HTTP_INSUFFICIENT_STORAGE,
                               "not stored: the data directory's file system has %.1f MiB free, below "
                               "--min-free-space (%.1f MiB); free some space (or lower the limit) and retry",
                               free / 1048576.0, rq->srv->min_free_bytes / 1048576.0);
    }
    const char *enc = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (enc && (strcasecmp(enc, "gzip") == 0 || strcasecmp(enc, "x-gzip") == 0))
        job->gzipped = 1;
    else if (enc && *enc && strcasecmp(enc, "identity") != 0)
        return srv_reply_error(rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                               "unsupported Content-Encoding '%s' (supported: gzip, identity)", enc);
    job->content_type = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    job->window_given = srv_param(rq, "from") || srv_param(rq, "until");
    job->suspended = 1;
    MHD_suspend_connection(rq->conn);
    if (srv_workpool_submit(rq->srv->pool, job_parse, job)) job_finish(job, 500, "out of memory");
    return MHD_YES;
}

/* What one stored profile holds, as an object's members: its type, the
 * values in their unit, the samples behind them (null when the input did
 * not say), how it merges over time, and the window it was stored under.
 * Written as it goes (query_buf), the bytes jansson would write: every push
 * is answered with it, and building the object in jansson was 2.4 % of the
 * server's CPU under bench_fleet. */
static void profile_members(query_buf *b, const ingest_profile *q)
{
    const char *type = ingest_label_get(q, "type");
    query_buf_puts(b, "\"type\":");
    if (type) query_buf_json_string(b, type, strlen(type));
    else query_buf_puts(b, "null");
    query_buf_puts(b, ",\"unit\":");
    query_buf_json_string(b, q->unit, strlen(q->unit));
    query_buf_puts(b, ",\"total\":");
    query_buf_u64(b, q->total);
    query_buf_puts(b, ",\"samples\":");
    if (q->samples_how == INGEST_SAMPLES_KNOWN) query_buf_u64(b, q->samples);
    else query_buf_puts(b, "null");
    query_buf_puts(b, ",\"stacks\":");
    query_buf_u64(b, q->n_stacks);
    query_buf_puts(b, q->aggregation == INGEST_AGG_AVERAGE ? ",\"aggregation\":\"average\"" : ",\"aggregation\":\"sum\"");
    query_buf_puts(b, ",\"from\":");
    query_buf_time(b, q->from_ms);
    query_buf_puts(b, ",\"until\":");
    query_buf_time(b, q->until_ms);
}

/* Answers 200 with b's object (a newline after it, as srv_reply_json). */
static int reply_buf(srv_request *rq, query_buf *b, enum MHD_Result *res)
{
    query_buf_puts(b, "}\n");
    size_t len;
    char *text = query_buf_take(b, &len);
    *res = text ? srv_reply_bytes(rq, 200, "application/json", text, len, 1)
                : srv_reply_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory building the answer");
    return 1;
}

static uint64_t known_samples(const ingest_profile *q)
{
    return q->samples_how == INGEST_SAMPLES_KNOWN ? q->samples : 0;
}

/* What a pprof ingest stored: totals, and each sample type's profile. */
static int reply_pprof(srv_request *rq, ingest_job *job, enum MHD_Result *res)
{
    uint64_t samples = 0, stacks = 0, trunc = 0;
    for (size_t i = 0; i < job->n_pp; i++) {
        const ingest_profile *q = &job->pp[i];
        if (known_samples(q) > samples) samples = known_samples(q);
        stacks += q->n_stacks;
        trunc += q->truncated_stacks;
    }
    srv_metrics_ingested(rq, samples, job->n_pp);
    query_buf b = { 0 };
    query_buf_puts(&b, "{\"stacks\":");
    query_buf_u64(&b, stacks);
    query_buf_puts(&b, ",\"series\":");
    query_buf_u64(&b, job->n_pp);
    query_buf_puts(&b, ",\"truncated_stacks\":");
    query_buf_u64(&b, trunc);
    query_buf_puts(&b, ",\"profiles\":[");
    for (size_t i = 0; i < job->n_pp; i++) {
        query_buf_puts(&b, i ? ",{" : "{");
        profile_members(&b, &job->pp[i]);
        query_buf_puts(&b, "}");
    }
    query_buf_puts(&b, "]");
    if (job->n_pp && job->p.sample_labels) { /* the request's, the same in each profile */
        const ingest_profile *q = &job->pp[0];
        query_buf_puts(&b, ",\"sample_labels\":{\"kept\":");
        query_buf_u64(&b, q->sample_labels_kept);
        query_buf_puts(&b, ",\"dropped\":");
        query_buf_u64(&b, q->sample_labels_dropped);
        query_buf_puts(&b, ",\"other\":");
        query_buf_u64(&b, q->sample_values_other);
        query_buf_puts(&b, "}");
    }
    return reply_buf(rq, &b, res);
}

/* What an OTLP request stored: an ExportProfilesServiceResponse in the
 * request's encoding, with partial_success when profiles were left out. */
static int reply_otlp(srv_request *rq, ingest_job *job, enum MHD_Result *res)
{
    uint64_t samples = 0;
    for (size_t i = 0; i < job->n_pp; i++) samples += known_samples(&job->pp[i]);
    srv_metrics_ingested(rq, samples, job->n_pp);
    char why[320];
    snprintf(why, sizeof why, "%zu profile%s not stored, the first: %s", job->otlp_rejected,
             job->otlp_rejected == 1 ? "" : "s", job->otlp_why);
    if (job->otlp == 2) {
        json_t *o = json_object();
        if (job->otlp_rejected) {
            char n[24];
            snprintf(n, sizeof n, "%zu", job->otlp_rejected); /* int64 as a string, as protojson writes it */
            json_object_set_new(o, "partialSuccess", json_pack("{s:s,s:s}", "rejectedProfiles", n, "errorMessage", why));
        }
        *res = srv_reply_json(rq, 200, o);
        return 1;
    }
    Flamedb__Otlp__ExportProfilesServiceResponse r = FLAMEDB__OTLP__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
    Flamedb__Otlp__ExportProfilesPartialSuccess ps = FLAMEDB__OTLP__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
    if (job->otlp_rejected) {
        ps.rejected_profiles = (int64_t)job->otlp_rejected;
        ps.error_message = why;
        r.partial_success = &ps;
    }
    size_t n = flamedb__otlp__export_profiles_service_response__get_packed_size(&r);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        *res = srv_reply_error(rq, 500, "out of memory");
        return 1;
    }
    flamedb__otlp__export_profiles_service_response__pack(&r, buf);
    *res = srv_reply_bytes(rq, 200, "application/x-protobuf", buf, n, 1);
    return 1;
}

/* A resumed ingest answers: its error, or what was stored. */
static int resumed(srv_request *rq, enum MHD_Result *res)
{
    ingest_job *job = rq->job;
    if (!job || !job->suspended) return 0;
    pthread_mutex_lock(&job->lock);
    int status = job->status;
    pthread_mutex_unlock(&job->lock);
    if (status) {
        /* the store could not write (a full or failing disk): nothing of
         * this request was stored, and the same request may succeed later */
        if (status == MHD_HTTP_SERVICE_UNAVAILABLE || status == MHD_HTTP_INSUFFICIENT_STORAGE)
            rq->retry_after = SRV_RETRY_AFTER_S;
        *res = srv_reply_error(rq, status, "%s", job->err);
        return 1;
    }
    ingest_profile *p = &job->p;
    if (job->pprof) return reply_pprof(rq, job, res);
    if (job->otlp) return reply_otlp(rq, job, res);
    srv_metrics_ingested(rq, known_samples(p), 1);
    query_buf b = { 0 };
    query_buf_puts(&b, "{");
    profile_members(&b, p);
    query_buf_puts(&b, ",\"series\":1,\"truncated_stacks\":");
    query_buf_u64(&b, p->truncated_stacks);
    return reply_buf(rq, &b, res);
}

/* The window: defaults until=now, from=until-10s. */
static int read_window(srv_request *rq, ingest_profile *p)
{
    return srv_time_range(rq, "from", "until", DEFAULT_WINDOW_MS, &p->from_ms, &p->until_ms);
}

typedef struct {
    ingest_profile *p;
    char err[1024];
    int failed;
} label_walk;

static const char *const native_params[] = { "from", "until", "rate", "unit", "format", "aggregation", "locations",
                                             NULL };

/* Reads an aggregation parameter (sum or average) into p; answers -1 after
 * replying 400 when it is malformed. */
static int read_aggregation(srv_request *rq, ingest_profile *p, const char *param)
{
    const char *v = srv_param(rq, param);
    if (!v || !*v || ingest_aggregation_parse(v, &p->aggregation) == 0) return 0;
    srv_reply_error(rq, 400, "parameter '%s': '%s' (supported: sum, average)", param, v);
    return -1;
}

static enum MHD_Result add_label_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    label_walk *w = cls;
    for (int i = 0; native_params[i]; i++)
        if (strcmp(key, native_params[i]) == 0) return MHD_YES;
    if (ingest_label_add(w->p, key, value ? value : "", w->err, sizeof w->err)) {
        w->failed = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

enum MHD_Result srv_handle_ingest(srv_request *rq)
{
    char err[512];
    enum MHD_Result res;
    if (resumed(rq, &res)) return res;
    ingest_job *job = job_new(rq);
    if (!job) return srv_reply_error(rq, 500, "out of memory");
    ingest_profile *p = &job->p;
    const char *v;
    label_walk w = { .p = p };
    if (read_window(rq, p)) return MHD_YES;
    if ((v = srv_param(rq, "format")) && strcmp(v, "pprof") == 0) job->pprof = 1;
    else if (v && ingest_format_parse(v, &job->fmt, err, sizeof err))
        return srv_reply_error(rq, 400, "parameter 'format': %s (or pprof)", err);
    if ((v = srv_param(rq, "rate")) && parse_rate(v, &p->rate))
        return srv_reply_error(rq, 400, "parameter 'rate': '%s' is not a sampling frequency in Hz (a number above 0, at most 1e9)", v);
    if (read_unit(rq, p, "unit") || read_aggregation(rq, p, "aggregation")) return MHD_YES;
    if ((v = srv_param(rq, "locations")) && strcmp(v, "0") && strcmp(v, "1"))
        return srv_reply_error(rq, 400, "parameter 'locations': '%s' (1: frames carry their location, 0: names only)", v);
    p->located_frames = v && !strcmp(v, "1");
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, add_label_param, &w);
    if (w.failed) return srv_reply_error(rq, 400, "%s", w.err);
    return submit_job(rq, job);
}

enum MHD_Result srv_handle_otlp(srv_request *rq)
{
    enum MHD_Result res;
    if (resumed(rq, &res)) return res;
    ingest_job *job = job_new(rq);
    if (!job) return srv_reply_error(rq, 500, "out of memory");
    const char *ct = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    size_t n = ct ? strcspn(ct, "; ") : 0;
    if (ct && ((n == 22 && !strncasecmp(ct, "application/x-protobuf", n)) ||
               (n == 20 && !strncasecmp(ct, "application/protobuf", n))))
        job->otlp = 1;
    else if (ct && n == 16 && !strncasecmp(ct, "application/json", n))
        job->otlp = 2;
    else
        return srv_reply_error(rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                               "Content-Type '%s': an OTLP request is application/x-protobuf (or "
                               "application/protobuf) or application/json", ct ? ct : "");
    label_walk w = { .p = &job->p };
    if (read_window(rq, &job->p)) return MHD_YES;
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, add_label_param, &w);
    if (w.failed) return srv_reply_error(rq, 400, "%s", w.err);
    return submit_job(rq, job);
}

enum MHD_Result srv_handle_pyroscope(srv_request *rq)
{
    char err[1024];
    enum MHD_Result res;
    if (resumed(rq, &res)) return res;
    ingest_job *job = job_new(rq);
    if (!job) return srv_reply_error(rq, 500, "out of memory");
    ingest_profile *p = &job->p;
    const char *v;
    if (read_window(rq, p)) return MHD_YES;
    if (!(v = srv_param(rq, "name")) || !*v)
        return srv_reply_error(rq, 400, "parameter 'name' is required: the application name, e.g. myapp.cpu{env=prod}");
    if (ingest_pyroscope_name(p, v, err, sizeof err))
        return srv_reply_error(rq, 400, "parameter 'name': %s", err);
    if ((v = srv_param(rq, "format"))) {
        if (strcmp(v, "pprof") == 0) job->pprof = 1;
        else if (ingest_format_parse(v, &job->fmt, err, sizeof err))
            return srv_reply_error(rq, 400, "parameter 'format': %s (or pprof)", err);
    }
    /* Pyroscope clients send sampleRate=0 when they have none. */
    if ((v = srv_param(rq, "sampleRate")) && strcmp(v, "0") != 0 && parse_rate(v, &p->rate))
        return srv_reply_error(rq, 400, "parameter 'sampleRate': '%s' is not a sampling frequency in Hz", v);
    if (read_unit(rq, p, "units")) return MHD_YES;
    if (read_aggregation(rq, p, "aggregationType")) return MHD_YES;
    if ((v = srv_param(rq, "spyName")) && *v && ingest_label_add(p, "spy", v, err, sizeof err))
        return srv_reply_error(rq, 400, "parameter 'spyName': %s", err);
    return submit_job(rq, job);
}
