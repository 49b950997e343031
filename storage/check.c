/* check.c — `flamedb check DIR`: a read-only verifier of a data directory
 * (store_check in store.h).
 *
 * What it checks, in the order it walks:
 *   catalog.mdb  the format (flamedb-7; flamedb-6 and flamedb-5 are noted
 *                as needing the upgrade serve does; a flamedb-4 data.mdb as needing
 *                migration, not checked), the partition length (whole
 *                hours), the label strings (chunks keyed by their first
 *                id, dense, each a varint length and bytes inside the
 *                chunk, UTF-8 without NUL), the series (ids ascending from
 *                1, with gaps where series expired, 1 to 64 labels whose
 *                name and value ids are existing strings, names sorted and
 *                unique, no two series with the same labels), each series'
 *                last partition ("last": a known series, an 8-byte start).
 *   parts/<t>.mdb  each partition alone: its name on a partition boundary,
 *                the file as long as its last commit needs (a truncated
 *                file is reported and not read further: reading a page
 *                past its end would fault), its seven databases (a file
 *                written before segments may lack that one), meta
 *                (counts, span: its start and the catalog's length; the
 *                dictionary format, 1 or 2, pdict.h), every string chunk
 *                the counts call for and no other (format 2: its checksum
 *                and payload first; then count, offsets from 0 ascending,
 *                in bounds, each string NUL-terminated, UTF-8, string 0
 *                empty), every node chunk (format 2: its checksum; then
 *                pdict's decoder: exactly its nodes, each parent below
 *                it, the root first, functions among the strings), every block
 *                (key: a series the catalog knows, a start inside the
 *                partition; value: block_verify's checksum, or counted as
 *                unchecked for version 1, which has none; the header
 *                parses with known flags, a unit among the strings, a
 *                rate, profiles > 0, then the payload decompresses to its
 *                raw length and its columns decode to exactly their
 *                lengths: node ids ascending and below the node count,
 *                counts > 0 summing to the header's sum), every rollup
 *                (the same, plus its key: level, a known series, a bucket
 *                aligned to the level's size inside the partition, the
 *                unit and gauge bit of its value, rate 0, the bucket's
 *                duration), every pending mark (13-byte key: level 0, 1
 *                or 2 (repack), known series, aligned bucket inside the
 *                partition, no value or a late write's 8-byte time) and
 *                every segment (a known series, a 10-minute bucket
 *                inside the partition, its checksum,
 *                its union of node ids below the node count and each
 *                once, its profiles' payloads where its version puts them
 *                (version 2: tiling its area), then each profile in it
 *                like a block: header, start inside the bucket, pairs
 *                decoded, counts > 0 summing to the header's; counted
 *                with the blocks).
 * A partition that cannot be opened is one problem; the walk goes on with
 * the others.  Every finding names its file and the key or id at fault.
 *
 * How it stays safe beside a running server.  It takes no directory lock
 * (the server holds DATA/LOCK) and opens each file read-only
 * (env_open_readonly: MDB_RDONLY, one read transaction a file): LMDB read
 * snapshots are consistent while another process writes, and nothing is
 * written to the data files.  Files are not snapshotted together, so a
 * block may name a series created after the catalog was read: the writer
 * commits the catalog before the partition, so before calling a series
 * unknown the catalog is looked at again, once per partition, after that
 * partition's snapshot began.  A partition removed by retention while the
 * walk runs is a note, not damage; one met between its file's creation
 * and its first commit (no databases yet) is looked at again shortly.
 *
 * How it survives any damage.  LMDB trusts its B-tree pages: a damaged one
 * can send it past the file's end (SIGBUS) or outside a page (SIGSEGV).  So
 * each file is walked in a child process (run_isolated) that sends its
 * findings and counts to the parent through a pipe; a child that dies is
 * one more problem for its file, and the walk goes on with the next.
 *
 * Not checked: that rollups equal the raw blocks they merge (a rollup's own
 * encoding is), LMDB's pages beyond what reading every entry does (LMDB's
 * own errors are reported), and the four defined flag bits of a block
 * (rate, zstd, samples unknown, gauge), which block_verify's checksum does
 * not cover; a flipped rate or zstd bit usually breaks the decode. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "../common/utf8.h"
#include "block.h"
#include "catalog.h"
#include "env.h"
#include "hash.h"
#include "idmap.h"
#include "part.h"
#include "pdict.h"
#include "rollup.h"
#include "segment.h"
#include "../common/varint.h"

#define HOUR_MS (INT64_C(3600) * 1000)
#define MAX_LABELS 64
/* The flags a block may carry (block.c): rate, zstd, samples unknown, gauge. */
#define KNOWN_FLAGS (2 | 4 | 8 | 16)
/* The top bit of a rollup key's unit marks gauge rollups (rollup.c). */
#define ROLLUP_KEY_GAUGE (UINT32_C(1) << 31)
#define SERIES_SEED UINT64_C(0x636865636b736572)

typedef struct { const unsigned char *p; uint32_t len; } span;

typedef struct {
    const char *dir;
    store_check_fn fn;
    void *ctx;
    store_check_counts *n;
    char file[300];             /* the file being walked, relative to dir */
    int out_fd;                 /* in a walking child: the pipe to the parent (else -1) */
    store_status status;        /* of the walk (the catalog's: a format this flamedb does not know) */
    char err[512];
    /* the catalog */
    MDB_env *cat_env;           /* opened again when a partition names a series it did not have */
    int series_readable;        /* else series ids are not checked */
    uint32_t series_bound;      /* series ids are below this */
    uint64_t *known;            /* this process's bitmap of the catalog's ids (series_known) */
    uint32_t known_bits;
    int refreshed;              /* the catalog was read again for this partition */
    /* the partition being walked */
    int64_t start, len;
    int dict_known;             /* its meta's counts were read: */
    uint32_t ns, nn;            /* its strings and nodes, as its meta counts them */
    int dict_fmt;               /* its chunks' format (pdict.h) */
    ZSTD_DCtx *dctx;
    unsigned char *raw;
    size_t raw_cap;
} checker;

/* What a walking child sends its parent: findings, then its results. */
typedef struct {
    char kind;                  /* 'N' note, 'P' problem, 'E' the end */
    char file[300];
    char what[768];
    store_check_counts n;       /* with 'E': the counts as the child left them */
    uint32_t series_bound;
    int series_readable;
    store_status status;
    char err[512];
} wire;

/* Writes all of buf, or gives up (the parent is gone). */
static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        len -= (size_t)w;
    }
}

static void report(checker *c, store_check_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(checker *c, store_check_kind kind, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->out_fd >= 0) {
        static wire w; /* large: not on the stack */
        memset(&w, 0, sizeof w);
        w.kind = kind == STORE_CHECK_NOTE ? 'N' : 'P';
        snprintf(w.file, sizeof w.file, "%s", c->file);
        snprintf(w.what, sizeof w.what, "%s", what);
        write_all(c->out_fd, &w, sizeof w);
        return;
    }
    if (kind == STORE_CHECK_PROBLEM) c->n->problems++;
    if (c->fn) c->fn(c->ctx, kind, c->file, what);
}

#define PROBLEM(c, ...) report((c), STORE_CHECK_PROBLEM, __VA_ARGS__)
#define NOTE(c, ...) report((c), STORE_CHECK_NOTE, __VA_ARGS__)

/* 2026-11-01T22:05:00Z (with milliseconds when there are some). */
static const char *fmt_time(char buf[48], int64_t ms)
{
    struct tm tm;
    time_t t = (time_t)(ms / 1000);
    if (ms >= 0 && gmtime_r(&t, &tm) && tm.tm_year + 1900 <= 9999) {
        size_t n = strftime(buf, 48, "%Y-%m-%dT%H:%M:%S", &tm);
        if (ms % 1000) snprintf(buf + n, 48 - n, ".%03dZ", (int)(ms % 1000));
        else snprintf(buf + n, 48 - n, "Z");
    } else {
        snprintf(buf, 48, "%lld ms", (long long)ms);
    }
    return buf;
}

static const char *level_name(char buf[32], int level)
{
    if (level == ROLLUP_REPACK) return snprintf(buf, 32, "repack"), buf;
    int64_t s = rollup_size_ms[level];
    if (s % HOUR_MS == 0) snprintf(buf, 32, "%lldh", (long long)(s / HOUR_MS));
    else snprintf(buf, 32, "%lldmin", (long long)(s / 60000));
    return buf;
}

/* Strict UTF-8 (common/utf8.c); NUL bytes refused when nul_ok is 0. */
static int utf8_ok(const unsigned char *s, size_t len, int nul_ok)
{
    return utf8_valid((const char *)s, len) && (nul_ok || !memchr(s, 0, len));
}

static inline uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* A read transaction; a writer that grew the map since the open is
 * followed once. */
static int begin_read(MDB_env *env, MDB_txn **txn)
{
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, txn);
    if (rc == MDB_MAP_RESIZED && !mdb_env_set_mapsize(env, 0)) rc = mdb_txn_begin(env, NULL, MDB_RDONLY, txn);
    return rc;
}

/* Answers 0 when the file holds every page its newest commit uses.  Called
 * after the read transaction began: LMDB files only grow and the newest
 * commit uses at least the pages of the snapshot. */
static int check_length(checker *c, MDB_env *env, const char *path)
{
    MDB_envinfo info;
    MDB_stat st;
    struct stat sb;
    if (mdb_env_info(env, &info) || mdb_env_stat(env, &st) || stat(path, &sb)) {
        PROBLEM(c, "cannot read its length: %s", strerror(errno));
        return -1;
    }
    uint64_t need = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    if ((uint64_t)sb.st_size < need) {
        PROBLEM(c, "truncated: %llu bytes, its last commit needs %llu (%llu pages of %u bytes); not read further",
                (unsigned long long)sb.st_size, (unsigned long long)need,
                (unsigned long long)info.me_last_pgno + 1, st.ms_psize);
        return -1;
    }
    return 0;
}

/* env_open_readonly's message without "cannot open PATH: ", the file
 * being named already. */
static const char *open_error(const char *err, const char *path)
{
    size_t n = strlen("cannot open "), pl = strlen(path);
    if (!strncmp(err, "cannot open ", n) && !strncmp(err + n, path, pl) && !strncmp(err + n + pl, ": ", 2))
        return err + n + pl + 2;
    return err;
}

/* ---- the catalog ---- */

typedef struct { const unsigned char **pairs; const uint32_t *npairs; const unsigned char *want; uint32_t nwant; } dup_probe;

static int series_same(void *ctx, uint32_t id)
{
    dup_probe *pr = ctx;
    return pr->npairs[id] == pr->nwant && memcmp(pr->pairs[id], pr->want, (size_t)pr->nwant * 8) == 0;
}

/* Reads the label strings into *strs (pointers into the snapshot);
 * answers their count (ids below it), or 0 when out of memory. */
static uint32_t check_label_strings(checker *c, MDB_txn *txn, MDB_dbi dbi, span **strs, int *damaged)
{
    size_t cap = 1024;
    uint32_t n = 1;
    *strs = malloc(cap * sizeof **strs);
    if (!*strs) return 0;
    (*strs)[0] = (span){ (const unsigned char *)"", 0 };
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 4) {
            PROBLEM(c, "label strings: a chunk key of %zu bytes (expected a 4-byte id); ids from %u on not read",
                    k.mv_size, n);
            *damaged = 1;
            break;
        }
        uint32_t first = rd32(k.mv_data);
        if (first != n) {
            PROBLEM(c, "label strings: the chunk at id %u follows id %u (ids are dense from 1); not read further",
                    first, n - 1);
            *damaged = 1;
            break;
        }
        if (!v.mv_size) PROBLEM(c, "label strings: the chunk at id %u is empty", first);
        const unsigned char *p = v.mv_data, *end = p + v.mv_size;
        while (p < end) {
            uint64_t len;
            if (varint_get(&p, end, &len) || (uint64_t)(end - p) < len) {
                PROBLEM(c, "label strings: label string %u runs past the end of its chunk (at id %u); "
                           "ids from %u on not read", n, first, n);
                *damaged = 1;
                break;
            }
            if (!utf8_ok(p, (size_t)len, 0))
                PROBLEM(c, "label string %u is not valid UTF-8 (or holds a NUL byte)", n);
            if (n == cap) {
                span *ns = realloc(*strs, 2 * cap * sizeof *ns);
                if (!ns) {
                    mdb_cursor_close(cur);
                    return 0;
                }
                *strs = ns;
                cap *= 2;
            }
            (*strs)[n++] = (span){ p, (uint32_t)len };
            p += len;
        }
        if (*damaged) break;
    }
    if (rc && rc != MDB_NOTFOUND) {
        PROBLEM(c, "label strings: reading them failed after id %u: %s", n - 1, mdb_strerror(rc));
        *damaged = 1;
    }
    if (cur) mdb_cursor_close(cur);
    return n;
}

/* A label name for a message: at most 32 bytes, others than printable
 * ASCII as \xNN. */
static const char *quote(char buf[140], span s)
{
    size_t o = 0;
    for (uint32_t i = 0; i < s.len && i < 32; i++) {
        unsigned char b = s.p[i];
        if (b >= 0x20 && b < 0x7f && b != '\\' && b != '\'') buf[o++] = (char)b;
        else o += (size_t)snprintf(buf + o, 5, "\\x%02x", b);
    }
    if (s.len > 32) memcpy(buf + o, "...", 3), o += 3;
    buf[o] = '\0';
    return buf;
}

static int span_cmp(span a, span b)
{
    int r = memcmp(a.p, b.p, a.len < b.len ? a.len : b.len);
    return r ? r : (a.len > b.len) - (a.len < b.len);
}

static int known_add(checker *c, uint32_t sid)
{
    if (sid >= c->known_bits) {
        uint32_t bits = c->known_bits ? c->known_bits : 1024;
        while (bits <= sid && bits < UINT32_MAX / 2) bits *= 2;
        if (bits <= sid) return -1;
        uint64_t *nk = realloc(c->known, (size_t)bits / 8);
        if (!nk) return -1;
        memset((char *)nk + c->known_bits / 8, 0, (size_t)(bits - c->known_bits) / 8);
        c->known = nk;
        c->known_bits = bits;
    }
    c->known[sid / 64] |= UINT64_C(1) << (sid % 64);
    return 0;
}

static int known_has(const checker *c, uint32_t sid)
{
    return sid < c->known_bits && (c->known[sid / 64] >> (sid % 64) & 1);
}

/* Walks the series; answers -1 when out of memory. */
static int check_series(checker *c, MDB_txn *txn, MDB_dbi dbi, const span *strs, uint32_t n_strs, int strs_damaged)
{
    size_t cap = 1024;
    const unsigned char **pairs = calloc(cap, sizeof *pairs);
    uint32_t *npairs = calloc(cap, sizeof *npairs);
    idmap seen = { 0 };
    int oom = !pairs || !npairs || idmap_init(&seen, 1024);
    uint32_t expect = 1, bound = 1, count = 0;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = oom ? 0 : mdb_cursor_open(txn, dbi, &cur);
    for (rc = oom || rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); !oom && rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 4) {
            PROBLEM(c, "series: a key of %zu bytes (expected a 4-byte id) after series %u", k.mv_size, expect - 1);
            continue;
        }
        uint32_t sid = rd32(k.mv_data);
        if (sid < expect) {
            PROBLEM(c, "series %u comes after series %u: keys out of order or repeated", sid, expect - 1);
        } else {
            expect = sid + 1; /* gaps: series expired */
            bound = expect;
        }
        uint32_t n = (uint32_t)(v.mv_size / 8);
        if (v.mv_size % 8 || n == 0 || n > MAX_LABELS) {
            PROBLEM(c, "series %u: %zu bytes of labels (expected 8 for each of 1 to %d labels)", sid, v.mv_size,
                    MAX_LABELS);
            continue;
        }
        const unsigned char *pv = v.mv_data;
        int ok = 1;
        for (uint32_t i = 0; i < 2 * n && ok; i++) {
            uint32_t id = rd32(pv + 4 * i);
            if (id == 0 || (id >= n_strs && !strs_damaged)) {
                PROBLEM(c, "series %u: the %s of label %u is string %u, not one of the %u label strings", sid,
                        i % 2 ? "value" : "name", i / 2 + 1, id, n_strs - 1);
                ok = 0;
            } else if (id >= n_strs) {
                ok = 0; /* the strings were damaged: already reported */
            }
        }
        for (uint32_t i = 1; i < n && ok; i++) {
            span a = strs[rd32(pv + 8 * (i - 1))], b = strs[rd32(pv + 8 * i)];
            if (span_cmp(a, b) >= 0) {
                char qa[140], qb[140];
                PROBLEM(c, "series %u: label names not sorted and unique ('%s' then '%s')", sid, quote(qa, a),
                        quote(qb, b));
                ok = 0;
            }
        }
        if (!ok) continue;
        if (sid >= cap) {
            size_t ncap = cap;
            while (ncap <= sid) ncap *= 2;
            const unsigned char **np = realloc(pairs, ncap * sizeof *np);
            if (np) pairs = np;
            uint32_t *nn = np ? realloc(npairs, ncap * sizeof *nn) : NULL;
            if (nn) npairs = nn;
            if (!np || !nn) {
                oom = 1;
                break;
            }
            memset(pairs + cap, 0, (ncap - cap) * sizeof *pairs);
            memset(npairs + cap, 0, (ncap - cap) * sizeof *npairs);
            cap = ncap;
        }
        uint64_t h = hash_bytes(pv, (size_t)n * 8, SERIES_SEED);
        dup_probe pr = { pairs, npairs, pv, n };
        uint32_t dup = idmap_find(&seen, h, series_same, &pr);
        if (dup) {
            PROBLEM(c, "series %u has the same labels as series %u", sid, dup);
            continue;
        }
        pairs[sid] = pv;
        npairs[sid] = n;
        count++;
        if (idmap_put(&seen, h, sid) || known_add(c, sid)) oom = 1;
    }
    if (!oom && rc && rc != MDB_NOTFOUND) PROBLEM(c, "series: reading them failed after series %u: %s",
                                                  expect - 1, mdb_strerror(rc));
    if (cur) mdb_cursor_close(cur);
    idmap_free(&seen);
    free(pairs);
    free(npairs);
    c->series_bound = bound;
    c->n->series = count;
    return oom ? -1 : 0;
}

/* Each series' last partition: a known series, an 8-byte start. */
static void check_last(checker *c, MDB_txn *txn)
{
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_dbi_open(txn, "last", MDB_INTEGERKEY, &dbi);
    if (rc == MDB_NOTFOUND) return; /* written before series expired */
    if (rc || (rc = mdb_cursor_open(txn, dbi, &cur))) {
        PROBLEM(c, "its 'last' database cannot be read (%s)", mdb_strerror(rc));
        return;
    }
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 4) {
            PROBLEM(c, "last: a key of %zu bytes (expected a 4-byte series id)", k.mv_size);
            continue;
        }
        uint32_t sid = rd32(k.mv_data);
        if (!known_has(c, sid)) PROBLEM(c, "last: series %u is not in the catalog", sid);
        if (v.mv_size != 8) PROBLEM(c, "last: series %u has %zu bytes (expected an 8-byte start)", sid, v.mv_size);
    }
    if (rc != MDB_NOTFOUND) PROBLEM(c, "last: reading it failed: %s", mdb_strerror(rc));
    mdb_cursor_close(cur);
}

/* Reads "format" and "partition_ms"; answers -1 for a format this flamedb
 * does not know (err says which). */
static int check_meta(checker *c, MDB_txn *txn, MDB_dbi dbi, char *err, size_t errlen)
{
    MDB_val k = { 6, "format" }, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc) {
        PROBLEM(c, "meta: no format (%s)", mdb_strerror(rc));
    } else if (v.mv_size == strlen(CATALOG_FORMAT) && !memcmp(v.mv_data, CATALOG_FORMAT, v.mv_size)) {
        snprintf(c->n->format, sizeof c->n->format, "%s", CATALOG_FORMAT);
    } else if (v.mv_size == strlen(CATALOG_FORMAT_V6) && !memcmp(v.mv_data, CATALOG_FORMAT_V6, v.mv_size)) {
        snprintf(c->n->format, sizeof c->n->format, "%s", CATALOG_FORMAT_V6);
        c->n->needs_upgrade = 1;
        NOTE(c, "format %s: flamedb serve marks it %s at open (its files stay as they are)", CATALOG_FORMAT_V6,
             CATALOG_FORMAT);
    } else if (v.mv_size == strlen(CATALOG_FORMAT_V5) && !memcmp(v.mv_data, CATALOG_FORMAT_V5, v.mv_size)) {
        snprintf(c->n->format, sizeof c->n->format, "%s", CATALOG_FORMAT_V5);
        c->n->needs_upgrade = 1;
        NOTE(c, "format %s: flamedb serve upgrades it in place to %s (its blocks stay, its rollups are rebuilt)",
             CATALOG_FORMAT_V5, CATALOG_FORMAT);
    } else {
        env_set_err(err, errlen, "%s/catalog.mdb holds format '%.*s'; this flamedb checks %s, %s and %s", c->dir,
                    (int)(v.mv_size < 32 ? v.mv_size : 32), (const char *)v.mv_data, CATALOG_FORMAT,
                    CATALOG_FORMAT_V6, CATALOG_FORMAT_V5);
        return -1;
    }
    MDB_val pk = { 12, "partition_ms" }, pv;
    if ((rc = mdb_get(txn, dbi, &pk, &pv))) {
        PROBLEM(c, "meta: no partition length (%s)", mdb_strerror(rc));
        return 0;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.*s", (int)(pv.mv_size < 31 ? pv.mv_size : 31), (const char *)pv.mv_data);
    char *end;
    long long ms = strtoll(buf, &end, 10);
    if (end == buf || *end || pv.mv_size > 31 || ms <= 0 || ms % HOUR_MS)
        PROBLEM(c, "meta: the partition length '%s' is not a whole number of hours in ms", buf);
    else
        c->n->partition_ms = ms;
    return 0;
}

/* The catalog: answers STORE_EINVAL for a format this flamedb does not
 * know, STORE_ENOMEM; damage is reported and the walk goes on. */
static store_status check_catalog(checker *c)
{
    snprintf(c->file, sizeof c->file, "catalog.mdb");
    char path[4200];
    snprintf(path, sizeof path, "%s/catalog.mdb", c->dir);
    char oerr[512];
    MDB_env *env;
    store_status ss = env_open_readonly(&env, path, NULL, oerr, sizeof oerr);
    if (ss == STORE_ENOMEM) return ss;
    if (ss) {
        PROBLEM(c, "cannot be opened (%s); series are not checked", open_error(oerr, path));
        return STORE_OK;
    }
    MDB_txn *txn;
    int rc = begin_read(env, &txn);
    if (rc) {
        PROBLEM(c, "cannot begin reading: %s; series are not checked", mdb_strerror(rc));
        mdb_env_close(env);
        return STORE_OK;
    }
    if (check_length(c, env, path)) {
        mdb_txn_abort(txn);
        mdb_env_close(env);
        return STORE_OK;
    }
    static const char *const names[3] = { "meta", "strings", "series" };
    MDB_dbi dbi[3];
    for (int i = 0; i < 3; i++) {
        if ((rc = mdb_dbi_open(txn, names[i], i ? MDB_INTEGERKEY : 0, &dbi[i]))) {
            PROBLEM(c, "its '%s' database cannot be read (%s); series are not checked", names[i], mdb_strerror(rc));
            mdb_txn_abort(txn);
            mdb_env_close(env);
            return STORE_OK;
        }
    }
    if (check_meta(c, txn, dbi[0], c->err, sizeof c->err)) {
        mdb_txn_abort(txn);
        mdb_env_close(env);
        return STORE_EINVAL;
    }
    span *strs = NULL;
    int strs_damaged = 0;
    uint32_t n_strs = check_label_strings(c, txn, dbi[1], &strs, &strs_damaged);
    if (!n_strs || check_series(c, txn, dbi[2], strs, n_strs, strs_damaged)) ss = STORE_ENOMEM;
    else check_last(c, txn);
    free(strs);
    c->n->label_strings = n_strs ? n_strs - 1 : 0;
    mdb_txn_abort(txn);
    mdb_env_close(env);
    if (!ss) c->series_readable = 1;
    return ss;
}

/* Reads the ids of the catalog's series into this process's bitmap
 * (partitions are walked in child processes: each reads them once). */
static int load_known(checker *c)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    char path[4200];
    snprintf(path, sizeof path, "%s/catalog.mdb", c->dir);
    if (!c->cat_env && env_open_readonly(&c->cat_env, path, NULL, NULL, 0)) return -1;
    if (begin_read(c->cat_env, &txn)) return -1;
    MDB_val k, v;
    int rc = -1;
    /* opened again: the first transaction's handles went with it */
    if (!mdb_dbi_open(txn, "series", MDB_INTEGERKEY, &dbi) && !mdb_cursor_open(txn, dbi, &cur)) {
        rc = 0;
        for (int g = mdb_cursor_get(cur, &k, &v, MDB_FIRST); g == 0 && !rc; g = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
            if (k.mv_size == 4) {
                rc = known_add(c, rd32(k.mv_data));
                if (rd32(k.mv_data) >= c->series_bound) c->series_bound = rd32(k.mv_data) + 1;
            }
        mdb_cursor_close(cur);
    }
    mdb_txn_abort(txn);
    return rc;
}

/* Whether series sid is in the catalog: as first read, or else as it is
 * now (read once per partition: the writer commits the catalog before the
 * partitions, so this later look sees every series the partition's
 * snapshot can name; a series leaves the catalog only once no partition
 * holds it). */
static int series_known(checker *c, uint32_t sid)
{
    if (!c->series_readable) return 1; /* the catalog's damage was reported */
    if (!sid) return 0;
    if (!c->known && load_known(c)) return sid < c->series_bound;
    if (known_has(c, sid)) return 1;
    if (c->refreshed) return 0;
    c->refreshed = 1;
    if (load_known(c)) return 0;
    return known_has(c, sid);
}

/* ---- a partition's dictionaries ---- */

static void check_string_layout(checker *c, const char *at, uint32_t first, uint32_t want, const MDB_val *v);

/* A string chunk: format 2's checksum and payload (pdict_str_chunk_open),
 * then format 1's layout. */
static void check_string_chunk(checker *c, uint32_t ck, const MDB_val *v)
{
    uint32_t per = pdict_str_chunk(c->dict_fmt), first = ck * per, want = c->ns - first;
    if (want > per) want = per;
    char at[64], why[200];
    snprintf(at, sizeof at, "string chunk %u (ids %u..%u)", ck, first, first + want - 1);
    unsigned char *owned;
    size_t len;
    const unsigned char *ch = pdict_str_chunk_open(c->dict_fmt, ck, v, c->dctx, &len, &owned, why, sizeof why);
    if (!ch) {
        PROBLEM(c, "%s: %s", at, why);
        return;
    }
    MDB_val layout = { len, (void *)ch };
    check_string_layout(c, at, first, want, &layout);
    free(owned);
}

static void check_string_layout(checker *c, const char *at, uint32_t first, uint32_t want, const MDB_val *v)
{
    const unsigned char *ch = v->mv_data;
    if (v->mv_size < 4) {
        PROBLEM(c, "%s: %zu bytes, too short for its count", at, v->mv_size);
        return;
    }
    uint32_t n = rd32(ch);
    if (n != want) {
        PROBLEM(c, "%s: holds %u strings where the partition's meta counts %u", at, n, want);
        return;
    }
    size_t base = 4 + 4 * ((size_t)n + 1);
    if (v->mv_size < base) {
        PROBLEM(c, "%s: %zu bytes, too short for its %u offsets", at, v->mv_size, n + 1);
        return;
    }
    size_t blen = v->mv_size - base;
    const unsigned char *bytes = ch + base;
    if (rd32(ch + 4)) {
        PROBLEM(c, "%s: its first offset is %u, not 0", at, rd32(ch + 4));
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = rd32(ch + 4 + 4 * (size_t)i), b = rd32(ch + 8 + 4 * (size_t)i), id = first + i;
        if (b <= a) {
            PROBLEM(c, "%s: offsets not ascending at string %u (%u then %u)", at, id, a, b);
            return;
        }
        if (b > blen) {
            PROBLEM(c, "%s: string %u ends at byte %u, past the chunk's %zu bytes of strings", at, id, b, blen);
            return;
        }
        if (bytes[b - 1]) {
            PROBLEM(c, "%s: string %u is not NUL-terminated", at, id);
            return;
        }
        if (!utf8_ok(bytes + a, b - a - 1, 1)) PROBLEM(c, "%s: string %u is not valid UTF-8", at, id);
        if (id == 0 && b - a != 1) PROBLEM(c, "%s: string 0 is not empty", at);
    }
    if (rd32(ch + 4 + 4 * (size_t)n) != blen)
        PROBLEM(c, "%s: %zu bytes of strings where its last offset says %u", at, blen, rd32(ch + 4 + 4 * (size_t)n));
}

static void check_node_chunk(checker *c, uint32_t ck, const MDB_val *v)
{
    uint32_t per = pdict_node_chunk(c->dict_fmt), first = ck * per, n = c->nn - first;
    if (n > per) n = per;
    char at[64], why[200];
    snprintf(at, sizeof at, "node chunk %u (ids %u..%u)", ck, first, first + n - 1);
    uint32_t *pf = malloc((size_t)n * 2 * sizeof *pf);
    if (!pf) PROBLEM(c, "%s: out of memory checking it", at);
    else if (pdict_node_chunk_decode(c->dict_fmt, ck, v, n, c->ns, c->dctx, pf, why, sizeof why))
        PROBLEM(c, "%s: %s", at, why);
    free(pf);
}

typedef void (*chunk_fn)(checker *c, uint32_t ck, const MDB_val *v);

/* Walks chunks 0..n_chunks-1 of a dictionary: each present once, no other. */
static void check_chunks(checker *c, MDB_txn *txn, MDB_dbi dbi, const char *what, uint32_t count, uint32_t per,
                         chunk_fn fn)
{
    uint32_t n_chunks = (uint32_t)(((uint64_t)count + per - 1) / per), next = 0;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 4) {
            PROBLEM(c, "%s chunks: a key of %zu bytes (expected a 4-byte chunk number)", what, k.mv_size);
            continue;
        }
        uint32_t ck = rd32(k.mv_data);
        if (ck >= n_chunks) {
            PROBLEM(c, "%s chunk %u: beyond the %u %ss the partition's meta counts", what, ck, count, what);
            continue;
        }
        if (ck > next)
            PROBLEM(c, "%s chunks %u..%u (ids %llu..%llu) are missing", what, next, ck - 1,
                    (unsigned long long)next * per, (unsigned long long)ck * per - 1);
        next = ck + 1;
        fn(c, ck, &v);
    }
    if (rc != MDB_NOTFOUND) PROBLEM(c, "%s chunks: reading them failed: %s", what, mdb_strerror(rc));
    else if (next < n_chunks)
        PROBLEM(c, "%s chunks %u..%u (ids %llu..%llu) are missing", what, next, n_chunks - 1,
                (unsigned long long)next * per, (unsigned long long)count - 1);
    if (cur) mdb_cursor_close(cur);
}

/* ---- blocks and rollups ---- */

/* Checks one encoded value; answers 0 when sound, else writes what is
 * wrong into why. */
static int check_value(checker *c, const MDB_val *v, block_header *h, char *why, size_t cap)
{
    int vr = block_verify(v->mv_data, v->mv_size);
    const unsigned char *b = v->mv_data;
    if (vr < 0) {
        if (v->mv_size < 2 || b[0] < 1 || b[0] > 2)
            snprintf(why, cap, "not a block (%zu bytes, version byte %d)", v->mv_size, v->mv_size ? b[0] : -1);
        else
            snprintf(why, cap, "checksum mismatch: its %zu bytes were changed since they were written", v->mv_size);
        return -1;
    }
    if (vr == 1) c->n->unchecked++;
    const void *payload;
    size_t plen;
    int compressed;
    if (block_parse_header(v->mv_data, v->mv_size, h, &payload, &plen, &compressed)) {
        snprintf(why, cap, "its header does not parse (version %d, %zu bytes)", b[0], v->mv_size);
        return -1;
    }
    if (b[1] & ~KNOWN_FLAGS) {
        snprintf(why, cap, "unknown flags 0x%02x", b[1]);
        return -1;
    }
    if (c->dict_known && h->unit >= c->ns) {
        snprintf(why, cap, "its unit is string %u, beyond the partition's %u strings", h->unit, c->ns);
        return -1;
    }
    if (!isfinite(h->rate) || h->rate < 0) {
        snprintf(why, cap, "its rate %g is not a frequency", h->rate);
        return -1;
    }
    if (!h->n_profiles) {
        snprintf(why, cap, "it merges 0 profiles");
        return -1;
    }
    if (h->version >= 2 && h->samples_unknown && h->samples) {
        snprintf(why, cap, "%llu samples though its samples are flagged unknown", (unsigned long long)h->samples);
        return -1;
    }
    if (c->dict_known && h->n_pairs > c->nn) {
        snprintf(why, cap, "%u pairs, more than the partition's %u nodes", h->n_pairs, c->nn);
        return -1;
    }
    if ((uint64_t)h->raw_len > (uint64_t)h->n_pairs * 2 * VARINT_MAX || h->raw_len < 2 * (uint64_t)h->n_pairs ||
        h->nodes_bytes < h->n_pairs || h->raw_len - h->nodes_bytes < h->n_pairs) {
        snprintf(why, cap, "payload lengths (raw %u, nodes %u) cannot hold %u pairs", h->raw_len, h->nodes_bytes,
                 h->n_pairs);
        return -1;
    }
    const unsigned char *raw = payload;
    if (compressed) {
        if (h->raw_len + 1 > c->raw_cap) {
            unsigned char *r = realloc(c->raw, (size_t)h->raw_len + 1);
            if (!r) {
                snprintf(why, cap, "out of memory decoding it");
                return -1;
            }
            c->raw = r;
            c->raw_cap = (size_t)h->raw_len + 1;
        }
        size_t got = ZSTD_decompressDCtx(c->dctx, c->raw, h->raw_len, payload, plen);
        if (ZSTD_isError(got) || got != h->raw_len) {
            snprintf(why, cap, "its payload does not decompress to its %u bytes (%s)", h->raw_len,
                     ZSTD_isError(got) ? ZSTD_getErrorName(got) : "another length");
            return -1;
        }
        raw = c->raw;
    } else if (plen != h->raw_len) {
        snprintf(why, cap, "a payload of %zu bytes where its header says %u", plen, h->raw_len);
        return -1;
    }
    const unsigned char *pn = raw, *nend = raw + h->nodes_bytes, *pc = nend, *end = raw + h->raw_len;
    uint64_t node = 0, sum = 0, d, cnt;
    for (uint32_t i = 0; i < h->n_pairs; i++) {
        if (varint_get(&pn, nend, &d)) {
            snprintf(why, cap, "its node column ends inside pair %u of %u", i, h->n_pairs);
            return -1;
        }
        if (i && !d) {
            snprintf(why, cap, "node %llu appears twice (pair %u)", (unsigned long long)node, i);
            return -1;
        }
        node += d;
        if (c->dict_known && node >= c->nn) {
            snprintf(why, cap, "node %llu (pair %u) is beyond the partition's %u nodes", (unsigned long long)node, i,
                     c->nn);
            return -1;
        }
        if (varint_get(&pc, end, &cnt)) {
            snprintf(why, cap, "its count column ends inside pair %u of %u", i, h->n_pairs);
            return -1;
        }
        if (!cnt) {
            snprintf(why, cap, "node %llu has a count of 0", (unsigned long long)node);
            return -1;
        }
        sum += cnt;
    }
    if (pn != nend || pc != end) {
        snprintf(why, cap, "%zu bytes left in its node column and %zu in its count column after %u pairs",
                 (size_t)(nend - pn), (size_t)(end - pc), h->n_pairs);
        return -1;
    }
    if (sum != h->count_sum) {
        snprintf(why, cap, "its counts sum to %llu where its header says %llu", (unsigned long long)sum,
                 (unsigned long long)h->count_sum);
        return -1;
    }
    return 0;
}

static void check_blocks(checker *c, MDB_txn *txn, MDB_dbi dbi)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    char why[256], t[48];
    int rc = mdb_cursor_open(txn, dbi, &cur);
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        c->n->blocks++;
        if (k.mv_size != BLOCK_KEY_LEN) {
            PROBLEM(c, "blocks: a key of %zu bytes (expected %d)", k.mv_size, BLOCK_KEY_LEN);
            continue;
        }
        uint32_t sid, seq;
        int64_t from;
        block_key_parse(k.mv_data, &sid, &from, &seq);
        char at[128];
        snprintf(at, sizeof at, "block series %u at %s seq %u", sid, fmt_time(t, from), seq);
        block_header h;
        if (!series_known(c, sid))
            PROBLEM(c, "%s: series %u is not in the catalog (%llu series)", at, sid,
                    (unsigned long long)c->n->series);
        if (from < c->start || (uint64_t)from - (uint64_t)c->start >= (uint64_t)c->len)
            PROBLEM(c, "%s: starts outside the partition [%s, +%lld h)", at, fmt_time(t, c->start),
                    (long long)(c->len / HOUR_MS));
        if (check_value(c, &v, &h, why, sizeof why)) PROBLEM(c, "%s: %s", at, why);
        else if (h.duration_ms <= 0) PROBLEM(c, "%s: a window of %lld ms", at, (long long)h.duration_ms);
    }
    if (rc != MDB_NOTFOUND) PROBLEM(c, "blocks: reading them failed: %s", mdb_strerror(rc));
    if (cur) mdb_cursor_close(cur);
}

/* The bucket of a rollup or pending key: aligned, inside the partition. */
static int bucket_ok(checker *c, const char *at, int level, int64_t bucket)
{
    char t[48];
    if (rollup_floor(bucket, rollup_size_ms[level]) != bucket) {
        PROBLEM(c, "%s: the bucket is not aligned to its level's %lld min", at,
                (long long)(rollup_size_ms[level] / 60000));
        return 0;
    }
    if (bucket < c->start || (uint64_t)bucket - (uint64_t)c->start >= (uint64_t)c->len) {
        PROBLEM(c, "%s: outside the partition [%s, +%lld h)", at, fmt_time(t, c->start),
                (long long)(c->len / HOUR_MS));
        return 0;
    }
    return 1;
}

static void check_rollups(checker *c, MDB_txn *txn, MDB_dbi dbi)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    char why[256], t[48], ln[32];
    int rc = mdb_cursor_open(txn, dbi, &cur);
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        c->n->rollups++;
        if (k.mv_size != ROLLUP_KEY_LEN) {
            PROBLEM(c, "rollups: a key of %zu bytes (expected %d)", k.mv_size, ROLLUP_KEY_LEN);
            continue;
        }
        int level;
        uint32_t sid, unit;
        int64_t bucket;
        rollup_key_parse(k.mv_data, &level, &sid, &bucket, &unit);
        char at[160];
        if (level >= ROLLUP_LEVELS) {
            PROBLEM(c, "rollup series %u bucket %s: level %d (expected 0 to %d)", sid, fmt_time(t, bucket), level,
                    ROLLUP_LEVELS - 1);
            continue;
        }
        int gauge = (unit & ROLLUP_KEY_GAUGE) != 0;
        unit &= ~ROLLUP_KEY_GAUGE;
        snprintf(at, sizeof at, "rollup %s series %u bucket %s unit %u%s", level_name(ln, level), sid,
                 fmt_time(t, bucket), unit, gauge ? " (gauge)" : "");
        if (!series_known(c, sid))
            PROBLEM(c, "%s: series %u is not in the catalog (%llu series)", at, sid,
                    (unsigned long long)c->n->series);
        bucket_ok(c, at, level, bucket);
        block_header h;
        if (check_value(c, &v, &h, why, sizeof why)) PROBLEM(c, "%s: %s", at, why);
        else if (h.unit != unit || h.gauge != gauge)
            PROBLEM(c, "%s: its value is of unit %u%s", at, h.unit, h.gauge ? " (gauge)" : "");
        else if (h.rate != 0 || h.duration_ms != rollup_size_ms[level])
            PROBLEM(c, "%s: rate %g and window %lld ms (expected 0 and %lld)", at, h.rate, (long long)h.duration_ms,
                    (long long)rollup_size_ms[level]);
    }
    if (rc != MDB_NOTFOUND) PROBLEM(c, "rollups: reading them failed: %s", mdb_strerror(rc));
    if (cur) mdb_cursor_close(cur);
}

static void check_pending(checker *c, MDB_txn *txn, MDB_dbi dbi)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    char t[48], ln[32];
    int rc = mdb_cursor_open(txn, dbi, &cur);
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        c->n->pending++;
        if (k.mv_size != ROLLUP_PENDING_LEN) {
            PROBLEM(c, "pending: a key of %zu bytes (expected %d)", k.mv_size, ROLLUP_PENDING_LEN);
            continue;
        }
        int level;
        uint32_t sid;
        int64_t bucket;
        rollup_pending_parse(k.mv_data, &level, &sid, &bucket);
        if (level > ROLLUP_REPACK) {
            PROBLEM(c, "pending series %u bucket %s: level %d (expected 0 to %d)", sid, fmt_time(t, bucket), level,
                    ROLLUP_REPACK);
            continue;
        }
        char at[128];
        snprintf(at, sizeof at, "pending %s series %u bucket %s", level_name(ln, level), sid, fmt_time(t, bucket));
        if (!series_known(c, sid))
            PROBLEM(c, "%s: series %u is not in the catalog (%llu series)", at, sid,
                    (unsigned long long)c->n->series);
        bucket_ok(c, at, level == ROLLUP_REPACK ? ROLLUP_LEVELS - 1 : level, bucket);
        if (v.mv_size && v.mv_size != 8)
            PROBLEM(c, "%s: a value of %zu bytes (a mark has none, or a late write's time in 8)", at, v.mv_size);
    }
    if (rc != MDB_NOTFOUND) PROBLEM(c, "pending: reading it failed: %s", mdb_strerror(rc));
    if (cur) mdb_cursor_close(cur);
}

/* Segments (segment.c): each value's checksum, its union (node ids below
 * the node count, each once), and each profile in it as a block's: header,
 * start inside the bucket, pairs decoded (counts > 0 summing to the
 * header's).  Profiles in segments are counted with the blocks. */
static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void check_segment(checker *c, const char *at, const MDB_val *v, int64_t bucket, seg_dec *d)
{
    char t[48];
    if (seg_verify(v->mv_data, v->mv_size)) {
        PROBLEM(c, "%s: checksum mismatch or not a segment (%zu bytes)", at, v->mv_size);
        return;
    }
    seg_dec_reset(d);
    if (seg_union(d, v->mv_data, v->mv_size)) {
        PROBLEM(c, "%s: its union of node ids does not decode", at);
        return;
    }
    uint32_t *u = malloc(((size_t)d->nu + 1) * sizeof *u);
    if (!u) {
        PROBLEM(c, "%s: out of memory checking it", at);
        return;
    }
    memcpy(u, d->uids, (size_t)d->nu * sizeof *u);
    qsort(u, d->nu, sizeof *u, u32_cmp);
    for (uint32_t i = 0; i < d->nu; i++) {
        if (c->dict_known && u[i] >= c->nn) {
            PROBLEM(c, "%s: node %u of its union is beyond the partition's %u nodes", at, u[i], c->nn);
            break;
        }
        if (i && u[i] == u[i - 1]) {
            PROBLEM(c, "%s: node %u is twice in its union", at, u[i]);
            break;
        }
    }
    free(u);
    seg_walk w;
    seg_item it;
    if (seg_walk_begin(&w, v->mv_data, v->mv_size, bucket)) {
        PROBLEM(c, "%s: its header does not parse", at);
        return;
    }
    char why[200];
    if (seg_payloads_check(v->mv_data, v->mv_size, why, sizeof why)) PROBLEM(c, "%s: %s", at, why);
    int rc;
    while ((rc = seg_walk_next(&w, &it)) == 1) {
        c->n->blocks++;
        char pat[200];
        snprintf(pat, sizeof pat, "%s, profile %u at %s", at, it.seq, fmt_time(t, it.from_ms));
        block_header h;
        if (seg_value_header(it.data, it.data_len, &h)) {
            PROBLEM(c, "%s: its header does not parse", pat);
            continue;
        }
        if (it.from_ms < bucket || it.from_ms >= bucket + SEG_SPAN_MS)
            PROBLEM(c, "%s: starts outside its segment's 10 minutes", pat);
        if (c->dict_known && h.unit >= c->ns)
            PROBLEM(c, "%s: its unit is string %u, beyond the partition's %u strings", pat, h.unit, c->ns);
        if (!isfinite(h.rate) || h.rate < 0) PROBLEM(c, "%s: its rate %g is not a frequency", pat, h.rate);
        if (!h.n_profiles) PROBLEM(c, "%s: it merges 0 profiles", pat);
        if (h.samples_unknown && h.samples)
            PROBLEM(c, "%s: %llu samples though its samples are flagged unknown", pat, (unsigned long long)h.samples);
        if (h.duration_ms <= 0) PROBLEM(c, "%s: a window of %lld ms", pat, (long long)h.duration_ms);
        if (h.n_pairs > d->nu) {
            PROBLEM(c, "%s: %u pairs, more than its segment's union of %u nodes", pat, h.n_pairs, d->nu);
            continue;
        }
        uint32_t *nodes = malloc(((size_t)h.n_pairs + 1) * sizeof *nodes);
        uint64_t *counts = malloc(((size_t)h.n_pairs + 1) * sizeof *counts);
        if (!nodes || !counts) PROBLEM(c, "%s: out of memory checking it", pat);
        else if (seg_value_decode(d, it.data, it.data_len, nodes, counts))
            PROBLEM(c, "%s: its payload does not decode to its %u pairs", pat, h.n_pairs);
        else {
            uint64_t sum = 0;
            int zero = 0;
            for (uint32_t i = 0; i < h.n_pairs; i++) {
                zero |= counts[i] == 0;
                sum += counts[i];
            }
            if (zero) PROBLEM(c, "%s: a count of 0", pat);
            else if (sum != h.count_sum)
                PROBLEM(c, "%s: its counts sum to %llu where its header says %llu", pat, (unsigned long long)sum,
                        (unsigned long long)h.count_sum);
        }
        free(nodes);
        free(counts);
    }
    if (rc < 0) PROBLEM(c, "%s: damaged after profile %u of its profiles", at, w.idx);
}

static void check_segments(checker *c, MDB_txn *txn, MDB_dbi dbi)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    char t[48];
    seg_dec d = { 0 };
    int rc = mdb_cursor_open(txn, dbi, &cur);
    for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SEG_KEY_LEN) {
            PROBLEM(c, "segments: a key of %zu bytes (expected %d)", k.mv_size, SEG_KEY_LEN);
            continue;
        }
        uint32_t sid, seq;
        int64_t bucket;
        block_key_parse(k.mv_data, &sid, &bucket, &seq);
        char at[128];
        snprintf(at, sizeof at, "segment series %u bucket %s", sid, fmt_time(t, bucket));
        if (!series_known(c, sid))
            PROBLEM(c, "%s: series %u is not in the catalog (%llu series)", at, sid,
                    (unsigned long long)c->n->series);
        if (seq) PROBLEM(c, "%s: a key ending in %u (expected 0)", at, seq);
        if (bucket_ok(c, at, ROLLUP_LEVELS - 1, bucket)) check_segment(c, at, &v, bucket, &d);
    }
    if (rc != MDB_NOTFOUND) PROBLEM(c, "segments: reading them failed: %s", mdb_strerror(rc));
    if (cur) mdb_cursor_close(cur);
    seg_dec_free(&d);
}

/* ---- partitions ---- */

/* "segments" came after flamedb-6's first files: a file without it is
 * sound (the server adds it, empty, when it opens the file). */
static const char *const part_dbs[PART_NDBS] = { "meta", "strings", "nodes", "blocks", "rollups", "pending",
                                                 "segments" };

/* Whether the file opens with its databases.  The server makes a new
 * partition's file, then its databases in a first commit: a file met in
 * between is looked at again shortly before it is called damaged. */
static int partition_ready(const char *path)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint64_t bytes;
    if (env_open_readonly(&env, path, &bytes, NULL, 0)) return 0;
    int ok = !begin_read(env, &txn);
    if (ok) {
        MDB_envinfo info;
        MDB_stat st;
        ok = !mdb_env_info(env, &info) && !mdb_env_stat(env, &st) &&
             bytes >= ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
        for (int i = 0; ok && i < PART_NDBS; i++) ok = !mdb_dbi_open(txn, part_dbs[i], 0, &dbi) || i == PART_SEGMENTS;
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    return ok;
}

static void check_partition(checker *c, const char *name, int64_t start)
{
    snprintf(c->file, sizeof c->file, "parts/%s", name);
    char path[4400], t[48];
    snprintf(path, sizeof path, "%s/parts/%s", c->dir, name);
    c->start = start;
    c->len = c->n->partition_ms;
    c->ns = c->nn = 0;
    c->dict_known = 0;
    c->refreshed = 0;
    if (c->len && rollup_floor(start, c->len) != start)
        PROBLEM(c, "does not start on a boundary of this directory's %lld h partitions: flamedb serve refuses "
                   "to open the directory", (long long)(c->len / HOUR_MS));
    if (!partition_ready(path)) nanosleep(&(struct timespec){ 0, 250 * 1000 * 1000 }, NULL);
    MDB_env *env;
    char oerr[512];
    store_status ss = env_open_readonly(&env, path, NULL, oerr, sizeof oerr);
    if (ss) {
        struct stat sb;
        if (stat(path, &sb) && errno == ENOENT) {
            NOTE(c, "removed while checking (retention dropped it)");
            return;
        }
        c->n->partitions++;
        if (!stat(path, &sb) && sb.st_size == 0) PROBLEM(c, "empty (0 bytes)");
        else PROBLEM(c, "cannot be opened (%s)", open_error(oerr, path));
        return;
    }
    c->n->partitions++;
    MDB_txn *txn;
    int rc = begin_read(env, &txn);
    if (rc) {
        PROBLEM(c, "cannot begin reading: %s", mdb_strerror(rc));
        mdb_env_close(env);
        return;
    }
    if (check_length(c, env, path)) {
        mdb_txn_abort(txn);
        mdb_env_close(env);
        return;
    }
    MDB_dbi dbi[PART_NDBS];
    int have[PART_NDBS];
    for (int i = 0; i < PART_NDBS; i++) {
        rc = mdb_dbi_open(txn, part_dbs[i], i == PART_STRINGS || i == PART_NODES ? MDB_INTEGERKEY : 0, &dbi[i]);
        have[i] = rc == 0;
        if (rc && !(i == PART_SEGMENTS && rc == MDB_NOTFOUND))
            PROBLEM(c, "its '%s' database cannot be read (%s)", part_dbs[i], mdb_strerror(rc));
    }
    int counts_ok = 0;
    if (have[PART_META]) {
        MDB_val k = { 6, "counts" }, v;
        if ((rc = mdb_get(txn, dbi[PART_META], &k, &v)) || v.mv_size != 8) {
            PROBLEM(c, "meta: no string and node counts (%s)", rc ? mdb_strerror(rc) : "not 8 bytes");
        } else {
            c->ns = rd32(v.mv_data);
            c->nn = rd32((const unsigned char *)v.mv_data + 4);
            counts_ok = c->dict_known = 1;
            if ((c->ns == 0) != (c->nn == 0))
                PROBLEM(c, "meta: %u strings and %u nodes (both or neither are empty)", c->ns, c->nn);
        }
        MDB_val sk = { 4, "span" }, sv;
        int64_t span[2];
        if ((rc = mdb_get(txn, dbi[PART_META], &sk, &sv)) || sv.mv_size != sizeof span) {
            PROBLEM(c, "meta: no span (%s)", rc ? mdb_strerror(rc) : "not 16 bytes");
        } else {
            memcpy(span, sv.mv_data, sizeof span);
            if (span[0] != start) PROBLEM(c, "meta: the span starts at %s, not where its name says", fmt_time(t, span[0]));
            if (c->len && span[1] != c->len)
                PROBLEM(c, "meta: the span is %lld ms long where the catalog says %lld", (long long)span[1],
                        (long long)c->len);
            if (!c->len) c->len = span[1] > 0 ? span[1] : INT64_MAX;
        }
    }
    if (!c->len) c->len = INT64_MAX;
    if (counts_ok && (rc = pdict_format(txn, dbi[PART_META], &c->dict_fmt))) {
        PROBLEM(c, "meta: its dictionary format is %s; its strings and nodes not read",
                rc == MDB_INCOMPATIBLE ? "not one this flamedb knows" : mdb_strerror(rc));
        counts_ok = 0;
    }
    if (counts_ok) {
        c->n->strings += c->ns;
        c->n->nodes += c->nn;
        if (have[PART_STRINGS])
            check_chunks(c, txn, dbi[PART_STRINGS], "string", c->ns, pdict_str_chunk(c->dict_fmt), check_string_chunk);
        if (have[PART_NODES])
            check_chunks(c, txn, dbi[PART_NODES], "node", c->nn, pdict_node_chunk(c->dict_fmt), check_node_chunk);
    }
    if (have[PART_BLOCKS]) check_blocks(c, txn, dbi[PART_BLOCKS]);
    if (have[PART_ROLLUPS]) check_rollups(c, txn, dbi[PART_ROLLUPS]);
    if (have[PART_PENDING]) check_pending(c, txn, dbi[PART_PENDING]);
    if (have[PART_SEGMENTS]) check_segments(c, txn, dbi[PART_SEGMENTS]);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

typedef struct { int64_t start; char name[64]; } part_name;

/* ---- walking each file in a child process ---- */

/* LMDB trusts its pages: in a damaged file it follows a page number past
 * the file's end (SIGBUS) or an offset outside its page (SIGSEGV).  So each
 * file is walked in a child process that sends its findings and, at the
 * end, its counts back through a pipe: a child killed by a signal is one
 * more problem for that file, and the walk goes on with the next.  Where
 * no child can be made, the walk runs here. */
typedef void (*walk_fn)(checker *c, const void *arg);

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

static void run_isolated(checker *c, walk_fn walk, const void *arg)
{
    int fds[2];
    pid_t pid = -1;
    if (pipe(fds) == 0 && (pid = fork()) < 0) {
        close(fds[0]);
        close(fds[1]);
    }
    if (pid < 0) {
        walk(c, arg);
        return;
    }
    if (pid == 0) {
        /* a fault ends this child, whatever handler the process had */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        close(fds[0]);
        c->out_fd = fds[1];
        walk(c, arg);
        static wire w;
        memset(&w, 0, sizeof w);
        w.kind = 'E';
        w.n = *c->n;
        w.series_bound = c->series_bound;
        w.series_readable = c->series_readable;
        w.status = c->status;
        snprintf(w.err, sizeof w.err, "%s", c->err);
        write_all(c->out_fd, &w, sizeof w);
        _exit(0);
    }
    close(fds[1]);
    wire *w = malloc(sizeof *w);
    int ended = 0;
    uint64_t found = 0;
    while (w && !ended && !read_all(fds[0], w, sizeof *w)) {
        if (w->kind == 'E') {
            uint64_t problems = c->n->problems;
            *c->n = w->n;
            c->n->problems = problems;
            c->series_bound = w->series_bound;
            c->series_readable = w->series_readable;
            c->status = w->status;
            snprintf(c->err, sizeof c->err, "%s", w->err);
            ended = 1;
            continue;
        }
        store_check_kind kind = w->kind == 'N' ? STORE_CHECK_NOTE : STORE_CHECK_PROBLEM;
        found++;
        if (kind == STORE_CHECK_PROBLEM) c->n->problems++;
        if (c->fn) c->fn(c->ctx, kind, w->file, w->what);
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (!w) {
        c->status = STORE_ENOMEM;
    } else if (!ended) {
        if (WIFSIGNALED(st))
            PROBLEM(c, "reading it stopped on signal %d (%s) after %llu findings: its LMDB pages are damaged (a "
                       "page number past its end or an offset outside its page)",
                    WTERMSIG(st), strsignal(WTERMSIG(st)), (unsigned long long)found);
        else
            PROBLEM(c, "reading it stopped (exit status %d) after %llu findings", WEXITSTATUS(st),
                    (unsigned long long)found);
    }
    free(w);
}

static void walk_catalog(checker *c, const void *arg)
{
    (void)arg;
    c->status = check_catalog(c);
}

static void walk_partition(checker *c, const void *arg)
{
    const part_name *pn = arg;
    check_partition(c, pn->name, pn->start);
    if (c->cat_env) mdb_env_close(c->cat_env);
    c->cat_env = NULL;
    free(c->known);
    c->known = NULL;
    c->known_bits = 0;
}

static int part_name_cmp(const void *a, const void *b)
{
    int64_t x = ((const part_name *)a)->start, y = ((const part_name *)b)->start;
    return (x > y) - (x < y);
}

static store_status check_partitions(checker *c)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/parts", c->dir);
    snprintf(c->file, sizeof c->file, "parts");
    DIR *d = opendir(path);
    if (!d) {
        PROBLEM(c, "cannot be read: %s", strerror(errno));
        return STORE_OK;
    }
    part_name *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t start;
        int shard;
        if (part_parse_name(e->d_name, &start, &shard) || strlen(e->d_name) >= sizeof v->name) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            part_name *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                closedir(d);
                return STORE_ENOMEM;
            }
            v = nv;
        }
        v[n].start = start;
        snprintf(v[n++].name, sizeof v->name, "%s", e->d_name);
    }
    closedir(d);
    if (n) qsort(v, n, sizeof *v, part_name_cmp);
    for (size_t i = 0; i < n; i++) {
        snprintf(c->file, sizeof c->file, "parts/%s", v[i].name);
        run_isolated(c, walk_partition, &v[i]);
    }
    free(v);
    return STORE_OK;
}

store_status store_check(const char *dir, store_check_fn fn, void *ctx, store_check_counts *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (!dir || !*dir || stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
        env_set_err(err, errlen, "%s is not a directory", dir && *dir ? dir : "''");
        return STORE_EINVAL;
    }
    checker c = { .dir = dir, .fn = fn, .ctx = ctx, .n = out, .out_fd = -1 };
    char path[4200], v4[4200];
    snprintf(path, sizeof path, "%s/catalog.mdb", dir);
    snprintf(v4, sizeof v4, "%s/data.mdb", dir);
    int has_cat = stat(path, &sb) == 0, has_v4 = stat(v4, &sb) == 0;
    if (has_v4) {
        snprintf(out->format, sizeof out->format, "flamedb-4");
        out->needs_upgrade = 1;
        snprintf(c.file, sizeof c.file, "data.mdb");
        NOTE(&c, "a flamedb-4 directory: not checked; it needs migration to %s (flamedb migrate %s, or flamedb "
                 "serve, does it)%s", CATALOG_FORMAT, dir,
             has_cat ? "; a migration was cut short or is running: catalog.mdb and parts/ are started again" : "");
        return STORE_OK;
    }
    if (!has_cat) {
        env_set_err(err, errlen, "%s is not a flamedb data directory (no catalog.mdb, no data.mdb)", dir);
        return STORE_EINVAL;
    }
    if (!(c.dctx = ZSTD_createDCtx())) return STORE_ENOMEM;
    snprintf(c.file, sizeof c.file, "catalog.mdb");
    run_isolated(&c, walk_catalog, NULL);
    store_status ss = c.status;
    if (ss) env_set_err(err, errlen, "%s", ss == STORE_ENOMEM ? "out of memory" : c.err);
    if (!ss) ss = check_partitions(&c);
    if (!ss && c.status == STORE_ENOMEM) ss = STORE_ENOMEM;
    ZSTD_freeDCtx(c.dctx);
    free(c.raw);
    free(c.known);
    return ss;
}
