/* chspool.c — the front end's durable spool; see chspool.h. */
#include "chspool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <libdeflate.h>

#define REC_MAGIC "FDS1"
#define REC_HEAD 12
#define FILE_MAX (32u << 20)   /* a file is sealed at this size: what a flush reads at once */

typedef struct {
    uint64_t seq, size;
    int64_t first_ms;       /* its oldest record's time */
} spool_file;

struct chspool {
    char *dir;
    uint64_t max_bytes;
    pthread_mutex_t mu;       /* the files, the open file's writes */
    pthread_mutex_t sync_mu;  /* one fsync at a time; taken before mu */
    spool_file *sealed;       /* oldest first */
    size_t n_sealed, cap_sealed;
    int fd;                   /* the open file, -1 none */
    spool_file open;          /* its seq, bytes written, first record */
    uint64_t gen;             /* bumped when the open file is truncated back */
    uint64_t durable_seq, durable_off;   /* everything up to here is fsync'd */
    uint64_t next_seq;
    uint64_t bytes;
    uint64_t appends, fsyncs;
};

static int seal_if(chspool *s, int64_t min_age_ms, uint64_t min_size);

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void path_of(const chspool *s, uint64_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%016llx.spool", s->dir, (unsigned long long)seq);
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int add_sealed(chspool *s, spool_file f)
{
    if (s->n_sealed == s->cap_sealed) {
        size_t cap = s->cap_sealed ? 2 * s->cap_sealed : 16;
        spool_file *v = realloc(s->sealed, cap * sizeof *v);
        if (!v) return -1;
        s->sealed = v;
        s->cap_sealed = cap;
    }
    s->sealed[s->n_sealed++] = f;
    return 0;
}

static int cmp_seq(const void *a, const void *b)
{
    const spool_file *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

chspool_status chspool_open(chspool **out, const char *dir, uint64_t max_bytes, char *err, size_t errlen)
{
    *out = NULL;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "spool directory %s: %s", dir, strerror(errno));
        return CHSPOOL_EIO;
    }
    chspool *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(dir))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return CHSPOOL_ENOMEM;
    }
    s->max_bytes = max_bytes;
    s->fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->sync_mu, NULL);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "spool directory %s: %s", dir, strerror(errno));
        chspool_close(s);
        return CHSPOOL_EIO;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        unsigned long long seq;
        char tail[8];
        if (strlen(e->d_name) != 22 || sscanf(e->d_name, "%16llx%7s", &seq, tail) != 2 || strcmp(tail, ".spool"))
            continue;
        char p[4200];
        path_of(s, seq, p, sizeof p);
        struct stat sb;
        if (stat(p, &sb) < 0) continue;
        if (sb.st_size == 0) {      /* created, never written: nothing in it */
            unlink(p);
            continue;
        }
        spool_file f = { seq, (uint64_t)sb.st_size, (int64_t)sb.st_mtime * 1000 };
        if (add_sealed(s, f)) {
            closedir(d);
            snprintf(err, errlen, "out of memory");
            chspool_close(s);
            return CHSPOOL_ENOMEM;
        }
        s->bytes += f.size;
        if (seq >= s->next_seq) s->next_seq = seq + 1;
    }
    closedir(d);
    if (s->n_sealed > 1) qsort(s->sealed, s->n_sealed, sizeof *s->sealed, cmp_seq);
    if (!s->next_seq) s->next_seq = 1;
    *out = s;
    return CHSPOOL_OK;
}

void chspool_close(chspool *s)
{
    if (!s) return;
    if (s->fd >= 0) {
        fdatasync(s->fd);
        close(s->fd);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->sync_mu);
    free(s->sealed);
    free(s->dir);
    free(s);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Under mu: the open file, created when there is none. */
static int open_file(chspool *s, char *err, size_t errlen)
{
    if (s->fd >= 0) return 0;
    char p[4200];
    path_of(s, s->next_seq, p, sizeof p);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || sync_dir(s->dir) < 0) {
        snprintf(err, errlen, "spool file %s: %s", p, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(p);
        }
        return -1;
    }
    s->fd = fd;
    s->open = (spool_file){ s->next_seq++, 0, 0 };
    return 0;
}

/* Under sync_mu and mu: the open file back to what is durable (a write or
 * an fsync failed). */
static void truncate_back(chspool *s)
{
    uint64_t keep = s->durable_seq == s->open.seq ? s->durable_off : 0;
    if (ftruncate(s->fd, (off_t)keep) == 0 || keep == s->open.size) {
        s->bytes -= s->open.size - keep;
        s->open.size = keep;
    }
    s->gen++;
}

chspool_status chspool_append(chspool *s, const void *rec, size_t len, char *err, size_t errlen)
{
    if (len > UINT32_MAX) {
        snprintf(err, errlen, "a request of %zu bytes of rows is too big for the spool", len);
        return CHSPOOL_EIO;
    }
    uint8_t head[REC_HEAD];
    memcpy(head, REC_MAGIC, 4);
    put_le32(head + 4, (uint32_t)len);
    put_le32(head + 8, libdeflate_crc32(0, rec, len));
    seal_if(s, 0, FILE_MAX);    /* a file the flusher has not taken yet stops growing here */
    pthread_mutex_lock(&s->mu);
    if (s->max_bytes && s->bytes + REC_HEAD + len > s->max_bytes) {
        uint64_t held = s->bytes;
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "the spool holds %.1f MiB, its limit is %.1f MiB (--spool-max)", held / 1048576.0,
                 s->max_bytes / 1048576.0);
        return CHSPOOL_EFULL;
    }
    if (open_file(s, err, errlen) < 0) {
        pthread_mutex_unlock(&s->mu);
        return CHSPOOL_EIO;
    }
    uint64_t seq = s->open.seq, start = s->open.size, gen = s->gen;
    if (write_all(s->fd, head, sizeof head) < 0 || write_all(s->fd, rec, len) < 0) {
        int e = errno;
        /* back to where this record began: the ones before are intact */
        if (ftruncate(s->fd, (off_t)start) < 0) {
            /* cannot cut the torn record: the file ends here (readers stop
             * at it), the records before it are made durable and sealed */
            if (fdatasync(s->fd) == 0) {
                s->durable_seq = seq;
                s->durable_off = start;
            } else {
                s->gen++;
            }
            if (add_sealed(s, s->open) == 0) {
                close(s->fd);
                s->fd = -1;
            }
        }
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "spool file write: %s", strerror(e));
        return CHSPOOL_EIO;
    }
    if (!s->open.size) s->open.first_ms = now_ms();
    s->open.size += REC_HEAD + len;
    s->bytes += REC_HEAD + len;
    uint64_t end = s->open.size;
    s->appends++;
    pthread_mutex_unlock(&s->mu);

    /* durable: someone's fsync (ours or a later one, or a seal) covers end */
    chspool_status rc = CHSPOOL_OK;
    pthread_mutex_lock(&s->sync_mu);
    pthread_mutex_lock(&s->mu);
    int covered = s->durable_seq > seq || (s->durable_seq == seq && s->durable_off >= end);
    if (!covered) {
        if (s->gen != gen || s->fd < 0 || s->open.seq != seq) {
            rc = CHSPOOL_EIO;          /* truncated away by a failed fsync */
            snprintf(err, errlen, "spool file: an earlier fsync failed; not stored");
        } else {
            int fd = s->fd;
            uint64_t upto = s->open.size;
            pthread_mutex_unlock(&s->mu);
            int ok = fdatasync(fd) == 0;
            int e = errno;
            pthread_mutex_lock(&s->mu);
            if (ok) {
                s->durable_seq = seq;
                s->durable_off = upto;
                s->fsyncs++;
            } else {
                truncate_back(s);
                rc = CHSPOOL_EIO;
                snprintf(err, errlen, "spool file fsync: %s", strerror(e));
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->sync_mu);
    return rc;
}

/* Seals the open file when its first record is min_age_ms old and it holds
 * at least min_size bytes (and some record). */
static int seal_if(chspool *s, int64_t min_age_ms, uint64_t min_size)
{
    int sealed = 0;
    pthread_mutex_lock(&s->sync_mu);
    pthread_mutex_lock(&s->mu);
    if (s->fd >= 0 && s->open.size && s->open.size >= min_size && now_ms() - s->open.first_ms >= min_age_ms) {
        if (fdatasync(s->fd) == 0) {
            s->durable_seq = s->open.seq;
            s->durable_off = s->open.size;
            s->fsyncs++;
            if (add_sealed(s, s->open) == 0) {
                close(s->fd);
                s->fd = -1;
                sealed = 1;
            }
        } else {
            truncate_back(s);
        }
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->sync_mu);
    return sealed;
}

int chspool_seal(chspool *s, int64_t min_age_ms)
{
    return seal_if(s, min_age_ms, 0);
}

int chspool_oldest(chspool *s, uint64_t *seq)
{
    pthread_mutex_lock(&s->mu);
    int any = s->n_sealed > 0;
    if (any) *seq = s->sealed[0].seq;
    pthread_mutex_unlock(&s->mu);
    return any;
}

chspool_status chspool_read(chspool *s, uint64_t seq, char **data, size_t *len, size_t *torn, char *err,
                            size_t errlen)
{
    *data = NULL;
    *len = *torn = 0;
    char p[4200];
    path_of(s, seq, p, sizeof p);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0) {
        snprintf(err, errlen, "spool file %s: %s", p, strerror(errno));
        if (fd >= 0) close(fd);
        return CHSPOOL_EIO;
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        snprintf(err, errlen, "out of memory reading a spool file of %zu bytes", n);
        return CHSPOOL_ENOMEM;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    size_t off = 0;
    const char *rec;
    size_t rl;
    while (chspool_next(buf, got, &off, &rec, &rl)) {}
    *data = buf;
    *len = off;
    *torn = n - off;
    return CHSPOOL_OK;
}

int chspool_next(const char *data, size_t len, size_t *off, const char **rec, size_t *rec_len)
{
    size_t o = *off;
    if (len - o < REC_HEAD || memcmp(data + o, REC_MAGIC, 4)) return 0;
    const uint8_t *h = (const uint8_t *)data + o;
    uint32_t n = get_le32(h + 4), crc = get_le32(h + 8);
    if (n > len - o - REC_HEAD) return 0;
    if (libdeflate_crc32(0, data + o + REC_HEAD, n) != crc) return 0;
    *rec = data + o + REC_HEAD;
    *rec_len = n;
    *off = o + REC_HEAD + n;
    return 1;
}

chspool_status chspool_remove(chspool *s, uint64_t seq, char *err, size_t errlen)
{
    char p[4200];
    path_of(s, seq, p, sizeof p);
    pthread_mutex_lock(&s->mu);
    size_t i = 0;
    while (i < s->n_sealed && s->sealed[i].seq != seq) i++;
    if (i == s->n_sealed) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "spool file %016llx is not sealed", (unsigned long long)seq);
        return CHSPOOL_EIO;
    }
    if (unlink(p) < 0 && errno != ENOENT) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "spool file %s: %s", p, strerror(errno));
        return CHSPOOL_EIO;
    }
    s->bytes -= s->sealed[i].size;
    memmove(s->sealed + i, s->sealed + i + 1, (s->n_sealed - i - 1) * sizeof *s->sealed);
    s->n_sealed--;
    pthread_mutex_unlock(&s->mu);
    sync_dir(s->dir);   /* a file coming back after a crash is flushed again: deduplicated */
    return CHSPOOL_OK;
}

void chspool_stats_get(chspool *s, chspool_stats *out)
{
    pthread_mutex_lock(&s->mu);
    out->bytes = s->bytes;
    out->max_bytes = s->max_bytes;
    out->files = s->n_sealed + (s->fd >= 0);
    out->appends = s->appends;
    out->fsyncs = s->fsyncs;
    out->oldest_ms = s->n_sealed ? s->sealed[0].first_ms : s->fd >= 0 && s->open.size ? s->open.first_ms : 0;
    pthread_mutex_unlock(&s->mu);
}
