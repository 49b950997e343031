/* main.c — the flamedb command: `flamedb serve` and its flags, `flamedb
 * migrate`, `flamedb check` (storage/check.c does the work, this prints it)
 * and `flamedb import` (client/import.c).
 *
 * serve opens the store, starts the HTTP server and waits for SIGINT or
 * SIGTERM; then it stops accepting, lets requests in flight finish, closes
 * the store (the writer commits what is queued) and exits 0.  SIGHUP
 * reloads the --auth file (access.c).  The signals are blocked in every
 * thread and taken with sigwait on the main thread, so no handler runs in
 * the middle of a request. */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../client/import.h"
#include "../query/query.h"
#include "srv.h"

#define VERSION "0.1.0"

static const char usage_main[] =
    "flamedb " VERSION " — a continuous-profiling database\n"
    "\n"
    "Usage:\n"
    "  flamedb serve [flags]    run the server (flamedb serve --help for its flags)\n"
    "  flamedb migrate DIR      move a data directory of an older format (flamedb-4,\n"
    "                           flamedb-5) into this one; serve does it too when it opens one\n"
    "  flamedb check DIR        verify a data directory without changing it (also while a\n"
    "                           server runs on it): exit 0 when sound, 1 when damaged\n"
    "  flamedb import [flags] FILE...\n"
    "                           load perf script text or folded files into a server\n"
    "                           (flamedb import --help for its flags)\n"
    "  flamedb --help           this text\n"
    "  flamedb --version        the version\n"
    "\n"
    "The server stores stack profiles keyed by labels in LMDB and answers\n"
    "merged flamegraphs over HTTP/JSON.  See README.md and docs/api.md.\n";

static const char usage_serve[] =
    "Usage: flamedb serve [flags]\n"
    "\n"
    "  --listen ADDR:PORT     where to listen (default 127.0.0.1:4040; [::1]:4040 for IPv6;\n"
    "                         port 0 picks a free port, printed at start); :PORT,\n"
    "                         0.0.0.0:PORT or [::]:PORT is every interface.  An address\n"
    "                         that is not loopback needs --auth (or --insecure-no-auth)\n"
    "  --auth FILE            require tokens: one a line, '<tenant> <scopes> sha256:<hex>'\n"
    "                         (tenant: a name, a|b, or * with X-Scope-OrgID choosing;\n"
    "                         scopes: read, write, admin apart by ','; the hex is the\n"
    "                         token's SHA-256: printf %s \"$TOKEN\" | sha256sum); '#'\n"
    "                         starts a comment; reloaded on SIGHUP.  Clients send\n"
    "                         Authorization: Bearer TOKEN, or basic auth with the token\n"
    "                         as the password.  Every series belongs to the token's\n"
    "                         tenant (docs/api.md, \"Authentication and tenants\")\n"
    "  --metrics-auth         /metrics needs a token with the admin scope (default: open,\n"
    "                         like /healthz)\n"
    "  --insecure-no-auth     allow listening beyond loopback without --auth\n"
    "  --tls-cert FILE        serve HTTPS with this PEM certificate (chain) ...\n"
    "  --tls-key FILE         ... and its PEM private key\n"
    "  --ingest-rate BYTES    each tenant's pushes (every push, without --auth) are held to\n"
    "                         this many body bytes a second; more get 429 with Retry-After;\n"
    "                         suffixes k, m, g; 0 = none (default 0)\n"
    "  --ingest-burst BYTES   what a tenant may push at once above the rate (default: ten\n"
    "                         seconds of --ingest-rate)\n"
    "  --fleet-duty F         fleet control: the fraction of the agents that sample at any\n"
    "                         moment, chosen at random and rotating (GET /api/v1/agents\n"
    "                         lists them; default 1: all of them, always)\n"
    "  --fleet-period DURATION  how long an agent's turn lasts (default 60s)\n"
    "  --fleet-rate HZ        the sampling frequency the plan gives agents (default 0: each\n"
    "                         agent's own --frequency)\n"
    "  --data DIR             data directory, created if missing (default ./data)\n"
    "  --retention DURATION   delete profiles whose window started longer ago than this,\n"
    "                         e.g. 30d, 12h, 90m; 0 keeps everything (default 30d)\n"
    "  --max-body BYTES       largest request body, also after gzip decompression;\n"
    "                         suffixes k, m, g (default 64m)\n"
    "  --threads N            HTTP worker threads (default 32)\n"
    "  --partition DURATION   time partition length of a new data directory, whole hours\n"
    "                         (default 1d); retention drops whole partitions.  An existing\n"
    "                         directory keeps its own; a different value is refused\n"
    "  --cors-origin ORIGIN   let web pages from ORIGIN (scheme://host[:port], e.g.\n"
    "                         https://grafana.example.com or http://localhost:3000) use\n"
    "                         the API from a browser (CORS); repeatable.  '*' is not\n"
    "                         accepted.  Default: none, no cross-origin access\n"
    "  --min-free-space BYTES ingest answers 507 (with Retry-After) while the data directory's\n"
    "                         file system has less free space; suffixes k, m, g; 0 turns\n"
    "                         the check off (default 64m)\n"
    "  --query-timeout DURATION  a query's work ends by then with 503 (nothing partial is\n"
    "                         answered); 0 = none (default 30s)\n"
    "  --max-series N         the most series one query may merge; more is a 400 naming the\n"
    "                         limit (default 100000)\n"
    "  --max-answer BYTES     the largest answer of a read (JSON, folded, pprof, ...); more\n"
    "                         is a 422 naming the limit; suffixes k, m, g; 0 = none\n"
    "                         (default 512m)\n"
    "  --max-pairs N          the most (stack, count) pairs one query may merge, rollups\n"
    "                         counting as stored; more is a 422 naming the limit; suffixes\n"
    "                         k, m, g (10^3, 10^6, 10^9); 0 = none (default 1g)\n"
    "  --max-groups N         the most groups one group_by answer splits into; with query\n"
    "                         and top also no more than 1 GiB of merged trees (default 10000)\n"
    "  --max-ingest-queue BYTES  pushes in flight (bodies being parsed or stored, and their\n"
    "                         gunzipped text) before new pushes get 503 with Retry-After;\n"
    "                         0 = no limit (default 512m)\n"
    "  --commit-wait DURATION how long the writer may hold a commit for pushes that are on\n"
    "                         their way when they arrive apart (a fleet's agents), so one\n"
    "                         fsync serves several; 0 commits each at once (default 50ms)\n"
    "  --writers N            writer threads, each committing its own shard of every\n"
    "                         partition (a file with its own dictionaries), 1 to 16\n"
    "                         (default: half the cores, 1 to 8)\n"
    "  --merge-threads N      threads one query's merge of a million pairs or more may\n"
    "                         use, 1 to 64; answers are the same (default: the cores)\n"
    "  --max-connections N    connections open at once (default 4096, or fewer when the\n"
    "                         open-file limit, raised to its hard limit at start, holds\n"
    "                         fewer beside the data directory's files); near the limit\n"
    "                         the connection idle or sending its request longest is closed\n"
    "  --max-connections-per-ip N\n"
    "                         connections open at once from one client address (default 0:\n"
    "                         no limit; agents behind one NAT share an address)\n"
    "  --connection-timeout DURATION\n"
    "                         close a connection that has not sent a whole request head\n"
    "                         this long after it opened or got its last answer, also when\n"
    "                         it sends a byte now and then (default 60s)\n"
    "  --allowed-host NAME    a DNS name browsers reach this server by (besides IP addresses,\n"
    "                         localhost, the --listen host and the machine's name); browser\n"
    "                         requests naming another Host are refused (DNS rebinding);\n"
    "                         repeatable\n"
    "  --store lmdb|clickhouse=URL[,URL...]\n"
    "                         where the data lives: lmdb (default) in --data; or, as a\n"
    "                         front end, in ClickHouse at these HTTP endpoints (tried in\n"
    "                         turn): profiles are spooled in --data/spool, fsync'd before\n"
    "                         the answer, and flushed to ClickHouse (docs/cluster.md);\n"
    "                         queries read ClickHouse (partial=true: answer without a\n"
    "                         shard that is down, saying so)\n"
    "  --clickhouse-database NAME  the ClickHouse database (default flamedb)\n"
    "  --clickhouse-cluster NAME   create the tables ON CLUSTER NAME, with Distributed\n"
    "                         tables over its shards (default: one server)\n"
    "  --clickhouse-replicated auto|yes|no\n"
    "                         ReplicatedMergeTree tables (retried inserts deduplicated;\n"
    "                         needs ZooKeeper): auto = with --clickhouse-cluster (default)\n"
    "  --spool-max BYTES      the spool's limit while ClickHouse does not take it; past it\n"
    "                         ingest answers 503 with Retry-After (default 1g; 0 = none)\n"
    "  --flush-every DURATION how often the spool is flushed to ClickHouse (default 1s)\n"
    "  --help                 this text\n";

/* Parses BYTES with an optional k, m or g suffix (powers of 1024). */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-') return -1;
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1ULL << 10, end++;
    else if (*end == 'm' || *end == 'M') mul = 1ULL << 20, end++;
    else if (*end == 'g' || *end == 'G') mul = 1ULL << 30, end++;
    if (*end || v == 0 || v > (1ULL << 40) / mul) return -1;
    *out = (size_t)(v * mul);
    return 0;
}

typedef struct {
    const char *listen, *data;
    int64_t retention_ms, partition_ms;
    size_t max_body, min_free, max_queue, max_groups, max_series;
    uint64_t max_pairs;
    size_t max_answer;
    int64_t query_timeout_ms;
    unsigned threads;
    int commit_wait_ms;
    int writers;
    unsigned merge_threads;     /* 0: one per online CPU */
    srv_cors cors;
    unsigned max_connections;   /* 0: as many as the open-file limit allows, at most 4096 */
    unsigned max_per_ip;
    unsigned conn_timeout_s;
    const char *auth, *tls_cert, *tls_key;
    int metrics_auth, insecure_no_auth;
    size_t ingest_rate, ingest_burst;
    double fleet_duty, fleet_rate;       /* fleet control (agents.c) */
    int64_t fleet_period_ms;
    const char *clickhouse;              /* --store clickhouse=URLS (cluster mode), else NULL */
    const char *ch_database, *ch_cluster;
    chschema_repl ch_replicated;
    size_t spool_max;
    int64_t flush_ms;
} serve_flags;

#define DEFAULT_MAX_CONNECTIONS 4096

/* A count from min to max, for --max-connections and friends. */
static int parse_count(const char *s, unsigned long min, unsigned long max, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || *end || errno || s[0] == '-' || v < min || v > max) return -1;
    *out = (unsigned)v;
    return 0;
}

/* Answers 0 to run, 1 when --help was shown, -1 on a bad flag. */
static int parse_serve_flags(int argc, char **argv, serve_flags *f)
{
    f->listen = "127.0.0.1:4040";
    f->data = "./data";
    f->retention_ms = 30LL * 24 * 3600 * 1000;
    f->partition_ms = 0;
    f->max_body = 64u << 20;
    f->min_free = 64u << 20;
    f->max_queue = 512u << 20;
    f->max_groups = 10000;
    f->max_series = 100000;
    f->max_pairs = UINT64_C(1000000000);
    f->max_answer = (size_t)512 << 20;
    f->query_timeout_ms = 30000;
    f->threads = 32;
    f->commit_wait_ms = 50;
    f->merge_threads = 0;
    f->cors.n = 0;
    f->cors.n_hosts = 0;
    f->max_connections = 0;
    f->max_per_ip = 0;
    f->conn_timeout_s = 60;
    f->auth = f->tls_cert = f->tls_key = NULL;
    f->metrics_auth = f->insecure_no_auth = 0;
    f->ingest_rate = f->ingest_burst = 0;
    f->fleet_duty = 1;
    f->fleet_rate = 0;
    f->fleet_period_ms = 60000;
    f->clickhouse = f->ch_database = f->ch_cluster = NULL;
    f->ch_replicated = CHSCHEMA_REPL_AUTO;
    f->spool_max = (size_t)1 << 30;
    f->flush_ms = 1000;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char err[256];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_serve, stdout);
            return 1;
        }
        if (!strcmp(a, "--metrics-auth") || !strcmp(a, "--insecure-no-auth")) { /* flags without a value */
            *(!strcmp(a, "--metrics-auth") ? &f->metrics_auth : &f->insecure_no_auth) = 1;
            continue;
        }
        static const char *const known[] = { "--listen", "--data", "--retention", "--max-body", "--threads", "--partition",
                                             "--cors-origin", "--commit-wait", "--writers", "--merge-threads",
                                             "--min-free-space", "--max-ingest-queue", "--max-groups", "--max-series", "--max-pairs", "--max-answer", "--query-timeout",
                                             "--max-connections", "--max-connections-per-ip", "--connection-timeout",
                                             "--allowed-host", "--auth", "--tls-cert", "--tls-key",
                                             "--ingest-rate", "--ingest-burst",
                                             "--fleet-duty", "--fleet-period", "--fleet-rate",
                                             "--store", "--clickhouse-database", "--clickhouse-cluster",
                                             "--clickhouse-replicated", "--spool-max", "--flush-every", NULL };
        int is_known = 0;
        for (int k = 0; known[k]; k++) is_known |= !strcmp(a, known[k]);
        if (!is_known) {
            fprintf(stderr, "flamedb serve: unknown %s '%s'\n%s", strncmp(a, "--", 2) ? "argument" : "flag", a, usage_serve);
            return -1;
        }
        if (!v) {
            fprintf(stderr, "flamedb serve: missing value for '%s'\n%s", a, usage_serve);
            return -1;
        }
        i++;
        if (!strcmp(a, "--listen")) {
            f->listen = v;
        } else if (!strcmp(a, "--auth")) {
            f->auth = v;
        } else if (!strcmp(a, "--ingest-rate") || !strcmp(a, "--ingest-burst")) {
            size_t *to = !strcmp(a, "--ingest-rate") ? &f->ingest_rate : &f->ingest_burst;
            if (strcmp(v, "0") && parse_bytes(v, to)) {
                fprintf(stderr, "flamedb serve: %s '%s': expected bytes like 1m or 512k, or 0\n", a, v);
                return -1;
            }
            if (!strcmp(v, "0")) *to = 0;
        } else if (!strcmp(a, "--fleet-duty") || !strcmp(a, "--fleet-rate")) {
            int duty = !strcmp(a, "--fleet-duty");
            char *end;
            double d = strtod(v, &end);
            if (*end || end == v || (duty ? !(d > 0 && d <= 1) : !(d >= 0 && d <= 100000))) {
                fprintf(stderr, "flamedb serve: %s '%s': expected %s\n", a, v,
                        duty ? "a fraction in (0, 1], like 0.1" : "a frequency in Hz from 0 (the agents' own) to 100000");
                return -1;
            }
            *(duty ? &f->fleet_duty : &f->fleet_rate) = d;
        } else if (!strcmp(a, "--fleet-period")) {
            if (query_duration_parse(v, &f->fleet_period_ms, err, sizeof err) || f->fleet_period_ms < 1000 ||
                f->fleet_period_ms > 86400000 || f->fleet_period_ms % 1000) {
                fprintf(stderr, "flamedb serve: --fleet-period '%s': expected whole seconds from 1s to 1d, like 60s\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--tls-cert")) {
            f->tls_cert = v;
        } else if (!strcmp(a, "--tls-key")) {
            f->tls_key = v;
        } else if (!strcmp(a, "--data")) {
            f->data = v;
        } else if (!strcmp(a, "--retention")) {
            if (query_duration_parse(v, &f->retention_ms, err, sizeof err)) {
                fprintf(stderr, "flamedb serve: --retention: %s\n", err);
                return -1;
            }
        } else if (!strcmp(a, "--max-body")) {
            if (parse_bytes(v, &f->max_body)) {
                fprintf(stderr, "flamedb serve: --max-body '%s': expected a size in bytes like 67108864 or 64m\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--cors-origin")) {
            char cerr[512];
            if (srv_cors_add(&f->cors, v, cerr, sizeof cerr)) {
                fprintf(stderr, "flamedb serve: --cors-origin %s\n", cerr);
                return -1;
            }
        } else if (!strcmp(a, "--allowed-host")) {
            char herr[512];
            if (f->cors.n_hosts >= SRV_CORS_MAX) {
                fprintf(stderr, "flamedb serve: --allowed-host '%s': at most %d names\n", v, SRV_CORS_MAX);
                return -1;
            }
            if (srv_cors_add_host(&f->cors, v, herr, sizeof herr)) {
                fprintf(stderr, "flamedb serve: --allowed-host %s\n", herr);
                return -1;
            }
        } else if (!strcmp(a, "--max-connections")) {
            if (parse_count(v, 1, 1000000, &f->max_connections)) {
                fprintf(stderr, "flamedb serve: --max-connections '%s': expected 1 to 1000000\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--max-connections-per-ip")) {
            if (parse_count(v, 0, 1000000, &f->max_per_ip)) {
                fprintf(stderr, "flamedb serve: --max-connections-per-ip '%s': expected 0 (no limit) to 1000000\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--connection-timeout")) {
            int64_t ms;
            if (query_duration_parse(v, &ms, err, sizeof err) || ms < 1000 || ms > 3600000 || ms % 1000) {
                fprintf(stderr, "flamedb serve: --connection-timeout '%s': expected whole seconds from 1s to 1h, like 30s\n", v);
                return -1;
            }
            f->conn_timeout_s = (unsigned)(ms / 1000);
        } else if (!strcmp(a, "--partition")) {
            if (query_duration_parse(v, &f->partition_ms, err, sizeof err) || f->partition_ms <= 0 ||
                f->partition_ms % 3600000) {
                fprintf(stderr, "flamedb serve: --partition '%s': expected whole hours like 1h, 6h or 1d\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--query-timeout")) {
            if (query_duration_parse(v, &f->query_timeout_ms, err, sizeof err) || f->query_timeout_ms < 0) {
                fprintf(stderr, "flamedb serve: --query-timeout '%s': expected a duration like 30s, or 0 for none\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--max-answer")) {
            if (strcmp(v, "0") && parse_bytes(v, &f->max_answer)) {
                fprintf(stderr, "flamedb serve: --max-answer '%s': expected a size in bytes like 512m or 1g, or 0 for none\n", v);
                return -1;
            }
            if (!strcmp(v, "0")) f->max_answer = 0;
        } else if (!strcmp(a, "--max-pairs")) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            uint64_t mult = !strcmp(end, "k") ? 1000 : !strcmp(end, "m") ? 1000000 : !strcmp(end, "g") ? 1000000000 : 1;
            if (errno || end == v || *v == '-' || (*end && mult == 1) || n > UINT64_MAX / mult) {
                fprintf(stderr, "flamedb serve: --max-pairs '%s': expected a count like 500m or 2g, or 0 for none\n", v);
                return -1;
            }
            f->max_pairs = n * mult;
        } else if (!strcmp(a, "--max-series")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 0 || n > 100000000) {
                fprintf(stderr, "flamedb serve: --max-series '%s': expected 0 (no limit) to 100000000\n", v);
                return -1;
            }
            f->max_series = (size_t)n;
        } else if (!strcmp(a, "--max-groups")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 1 || n > 10000000) {
                fprintf(stderr, "flamedb serve: --max-groups '%s': expected 1 to 10000000\n", v);
                return -1;
            }
            f->max_groups = (size_t)n;
        } else if (!strcmp(a, "--max-ingest-queue")) {
            if (strcmp(v, "0") && parse_bytes(v, &f->max_queue)) {
                fprintf(stderr, "flamedb serve: --max-ingest-queue '%s': expected a size in bytes like 512m, or 0\n", v);
                return -1;
            }
            if (!strcmp(v, "0")) f->max_queue = 0;
        } else if (!strcmp(a, "--min-free-space")) {
            if (strcmp(v, "0") && parse_bytes(v, &f->min_free)) {
                fprintf(stderr, "flamedb serve: --min-free-space '%s': expected a size in bytes like 64m or 1g, or 0\n", v);
                return -1;
            }
            if (!strcmp(v, "0")) f->min_free = 0;
        } else if (!strcmp(a, "--commit-wait")) {
            int64_t ms;
            if (query_duration_parse(v, &ms, err, sizeof err) || ms < 0 || ms > 1000) {
                fprintf(stderr, "flamedb serve: --commit-wait '%s': expected a duration from 0ms to 1s, like 20ms\n", v);
                return -1;
            }
            f->commit_wait_ms = (int)ms;
        } else if (!strcmp(a, "--store")) {
            if (!strcmp(v, "lmdb")) {
                f->clickhouse = NULL;
            } else if (!strncmp(v, "clickhouse=", 11) && v[11]) {
                f->clickhouse = v + 11;
            } else {
                fprintf(stderr, "flamedb serve: --store '%s': expected lmdb (the default: the data directory) or "
                        "clickhouse=URL[,URL...] (ClickHouse HTTP endpoints, like http://ch1:8123)\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--clickhouse-database")) {
            f->ch_database = v;
        } else if (!strcmp(a, "--clickhouse-cluster")) {
            f->ch_cluster = v;
        } else if (!strcmp(a, "--clickhouse-replicated")) {
            if (!strcmp(v, "auto")) f->ch_replicated = CHSCHEMA_REPL_AUTO;
            else if (!strcmp(v, "yes")) f->ch_replicated = CHSCHEMA_REPL_YES;
            else if (!strcmp(v, "no")) f->ch_replicated = CHSCHEMA_REPL_NO;
            else {
                fprintf(stderr, "flamedb serve: --clickhouse-replicated '%s': expected auto, yes or no\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--spool-max")) {
            if (strcmp(v, "0") && parse_bytes(v, &f->spool_max)) {
                fprintf(stderr, "flamedb serve: --spool-max '%s': expected a size in bytes like 1g or 512m, or 0 for none\n", v);
                return -1;
            }
            if (!strcmp(v, "0")) f->spool_max = 0;
        } else if (!strcmp(a, "--flush-every")) {
            if (query_duration_parse(v, &f->flush_ms, err, sizeof err) || f->flush_ms < 10 || f->flush_ms > 3600000) {
                fprintf(stderr, "flamedb serve: --flush-every '%s': expected a duration from 10ms to 1h, like 1s\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--writers")) {
            unsigned n;
            if (parse_count(v, 1, 16, &n)) {
                fprintf(stderr, "flamedb serve: --writers '%s': expected 1 to 16\n", v);
                return -1;
            }
            f->writers = (int)n;
        } else if (!strcmp(a, "--merge-threads")) {
            if (parse_count(v, 1, 64, &f->merge_threads)) {
                fprintf(stderr, "flamedb serve: --merge-threads '%s': expected 1 to 64\n", v);
                return -1;
            }
        } else { /* --threads */
            if (parse_count(v, 1, 1024, &f->threads)) {
                fprintf(stderr, "flamedb serve: --threads '%s': expected 1 to 1024\n", v);
                return -1;
            }
        }
    }
    return 0;
}

/* The connection limit: below the open-file limit, less what the rest of
 * the server may open (issue 12: with 256 descriptors and a limit of 4096,
 * accept() failed with EMFILE and libmicrohttpd logged in a busy loop).
 * The soft limit is first raised to the hard one (systemd's default is
 * 1024 soft, 524288 hard).  Kept aside: 32 (stdio, the listening socket,
 * LOCK, the catalog's 3, slack), 2 a thread (each MHD worker's epoll and
 * event descriptors) and 3 a partition (an LMDB file, its lock file and
 * the synchronous writer's descriptor; partitions are opened on first use
 * and stay open) for the partitions retention keeps, or for those there
 * are and 64 more when it keeps everything.  Answers the limit, or 0 after
 * printing why none fits. */
/* partitions: the partition files there are; writers: the files a
 * partition written from now on has. */
static unsigned plan_connections(const serve_flags *f, uint64_t partitions, int64_t partition_ms, int writers)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) rl.rlim_cur = rl.rlim_max = 1024;
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
        if (want.rlim_cur == RLIM_INFINITY || want.rlim_cur > (1u << 20)) want.rlim_cur = 1u << 20;
        if (want.rlim_cur > rl.rlim_cur && !setrlimit(RLIMIT_NOFILE, &want)) {
            rl.rlim_cur = want.rlim_cur;
            srv_log("raised the open-file limit from %llu to %llu", (unsigned long long)was,
                    (unsigned long long)rl.rlim_cur);
        }
    }
    uint64_t files = rl.rlim_cur == RLIM_INFINITY ? (1u << 20) : (uint64_t)rl.rlim_cur;
    uint64_t parts = f->retention_ms > 0 && partition_ms > 0
                         ? ((uint64_t)(f->retention_ms / partition_ms) + 2) * (uint64_t)writers
                         : partitions + 64 * (uint64_t)writers;
    if (parts < partitions) parts = partitions;
    uint64_t kept = 32 + 2 * (uint64_t)f->threads + 3 * parts;
    uint64_t fit = files > kept ? files - kept : 0;
    if (f->max_connections) {
        if (f->max_connections > fit) {
            srv_log("--max-connections %u: the process may open %llu files (ulimit -n, at its hard limit) and %llu of "
                    "them are kept for the data directory's %llu partitions and %u threads, so at most %llu "
                    "connections fit; raise the limit (ulimit -Hn, LimitNOFILE= in systemd) or ask for fewer",
                    f->max_connections, (unsigned long long)files, (unsigned long long)kept,
                    (unsigned long long)parts, f->threads, (unsigned long long)fit);
            return 0;
        }
        return f->max_connections;
    }
    if (fit < 8) {
        srv_log("the process may open %llu files (ulimit -n, at its hard limit), and %llu of them are kept for the data "
                "directory's %llu partitions and %u threads: too few are left for connections; raise the limit "
                "(ulimit -Hn, LimitNOFILE= in systemd), or use fewer --threads or a shorter --retention",
                (unsigned long long)files, (unsigned long long)kept, (unsigned long long)parts, f->threads);
        return 0;
    }
    if (fit < DEFAULT_MAX_CONNECTIONS)
        srv_log("at most %llu connections fit in the open-file limit of %llu (%llu kept for the data directory and "
                "threads); raise it (ulimit -Hn, LimitNOFILE= in systemd) for more",
                (unsigned long long)fit, (unsigned long long)files, (unsigned long long)kept);
    return fit < DEFAULT_MAX_CONNECTIONS ? (unsigned)fit : DEFAULT_MAX_CONNECTIONS;
}

/* The names browsers may reach the server by, besides those given with
 * --allowed-host (cors.c): the --listen host when it is a name, and the
 * machine's own name. */
static void add_own_names(srv_cors *c, const char *listen)
{
    char err[512], name[256];
    const char *colon = strrchr(listen, ':');
    if (colon && listen[0] != '[' && colon > listen) {
        snprintf(name, sizeof name, "%.*s", (int)(colon - listen), listen);
        (void)srv_cors_add_host(c, name, err, sizeof err); /* an IP literal passes anyway */
    }
    if (!gethostname(name, sizeof name)) {
        name[sizeof name - 1] = '\0';
        (void)srv_cors_add_host(c, name, err, sizeof err);
    }
}

/* A PEM file of --tls-cert or --tls-key, whole and NUL-terminated
 * (libmicrohttpd takes the text); NULL after printing why. */
static char *read_pem(const char *flag, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        srv_log("%s %s: cannot read it: %s", flag, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1u << 20, n;
    char *buf = malloc(cap + 1);
    n = buf ? fread(buf, 1, cap + 1, fp) : 0;
    int bad = !buf || ferror(fp);
    int saved = errno;
    fclose(fp);
    if (bad || n > cap) {
        srv_log("%s %s: cannot read it: %s", flag, path, !buf ? "out of memory" : n > cap ? "over 1 MiB" : strerror(saved));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (!strstr(buf, "-----BEGIN ") || strlen(buf) != n) {
        srv_log("%s %s: not a PEM file (expected a '-----BEGIN ...' block)", flag, path);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Until a signal to stop: SIGHUP reloads the tokens. */
static int wait_signals(srv_ctx *srv, const serve_flags *f, const sigset_t *sigs)
{
    char err[1024];
    int sig = 0;
    for (;;) {
        sigwait(sigs, &sig);
        if (sig != SIGHUP) break;
        if (!f->auth)
            srv_log("SIGHUP: nothing to reload (no --auth)");
        else if (srv_access_load(srv, err, sizeof err))
            srv_log("SIGHUP: --auth %s; keeping the %zu tokens loaded before", err, srv_access_tokens(srv));
        else
            srv_log("SIGHUP: reloaded %s: %zu tokens", f->auth, srv_access_tokens(srv));
    }
    return sig;
}

static void log_line(const char *line)
{
    srv_log("%s", line);
}

/* serve --store clickhouse=...: a front end whose data goes to ClickHouse
 * through its spool in --data/spool (cluster/chfront.h).  0, or the exit
 * status after saying why. */
static int open_front(srv_ctx *srv, const serve_flags *f)
{
    char err[1024], spool[4200];
    if (mkdir(f->data, 0700) < 0 && errno != EEXIST) {
        srv_log("cannot create the data directory %s: %s", f->data, strerror(errno));
        return 1;
    }
    snprintf(spool, sizeof spool, "%s/spool", f->data);
    chfront_options co = { .urls = f->clickhouse, .database = f->ch_database, .cluster = f->ch_cluster,
                           .replicated = f->ch_replicated, .spool_dir = spool, .spool_max = f->spool_max,
                           .flush_ms = f->flush_ms, .retention_ms = f->retention_ms, .log = log_line };
    chfront_status cs = chfront_open(&srv->front, &co, err, sizeof err);
    if (cs) {
        srv_log("cannot start as a ClickHouse front end: %s", err);
        return cs == CHFRONT_EINVAL ? 2 : 1;
    }
    chsource_options so = { .urls = f->clickhouse,
                            .schema = { .database = f->ch_database, .cluster = f->ch_cluster },
                            .tenant_label = SRV_TENANT_LABEL };
    if (chsource_open(&srv->source, &so, err, sizeof err)) {
        srv_log("cannot start as a ClickHouse front end: %s", err);
        return 1;
    }
    chfront_stats st;
    chfront_stats_get(srv->front, &st);
    srv_log("cluster mode: data in ClickHouse at %s (database %s%s%s); spool %s: %llu bytes waiting, limit %llu; "
            "flushed every %lld ms; retention %lld s (whole days)", f->clickhouse, f->ch_database ? f->ch_database : "flamedb",
            f->ch_cluster ? ", cluster " : "", f->ch_cluster ? f->ch_cluster : "", spool,
            (unsigned long long)st.spool_bytes, (unsigned long long)f->spool_max, (long long)f->flush_ms,
            (long long)(f->retention_ms / 1000));
    srv->max_connections = plan_connections(f, 0, 0, 1);
    return srv->max_connections ? 0 : 2;
}

/* The LMDB store in --data (the default).  0, or the exit status after
 * saying why. */
static int open_store(srv_ctx *srv, const serve_flags *f)
{
    char err[1024];
    store_options opt = { .dir = f->data, .retention_ms = f->retention_ms, .partition_ms = f->partition_ms,
                          .commit_wait_ms = f->commit_wait_ms, .writers = f->writers };
    store_status ss = store_open(&srv->st, &opt, err, sizeof err);
    if (ss) {
        srv_log("cannot open the store: %s", err);
        return ss == STORE_EINVAL ? 2 : 1;
    }
    store_stats stats;
    store_get_stats(srv->st, &stats);
    if (stats.migrated_profiles)
        srv_log("migrated %llu profiles from the flamedb-4 format; the old file is in %s/flamedb-4-backup",
                (unsigned long long)stats.migrated_profiles, f->data);
    srv_log("data in %s: %llu series, %llu partitions of %lld h (%llu files), %llu bytes; retention %lld s; "
            "%d writer%s", f->data, (unsigned long long)stats.series, (unsigned long long)stats.partitions,
            (long long)(store_partition_ms(srv->st) / 3600000), (unsigned long long)stats.partition_files,
            (unsigned long long)stats.db_bytes, (long long)(f->retention_ms / 1000), store_writers(srv->st),
            store_writers(srv->st) == 1 ? "" : "s");
    srv->max_connections = plan_connections(f, stats.partition_files, store_partition_ms(srv->st),
                                            store_writers(srv->st));
    return srv->max_connections ? 0 : 2;
}

/* serve, once its flags, tokens and certificate are read: the data (the
 * store, or ClickHouse through the spool), the server, the signals;
 * answers the exit status. */
static int run(srv_ctx *srv, const serve_flags *f, const sigset_t *sigs)
{
    char err[1024];
    add_own_names(&srv->cors, f->listen);
    for (size_t i = 0; i < f->cors.n; i++) srv_log("CORS: allowing browser requests from %s", f->cors.origin[i]);
    int rc = f->clickhouse ? open_front(srv, f) : open_store(srv, f);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!rc && srv_workpool_start(&srv->pool, cores > 0 ? (unsigned)cores : 1)) {
        srv_log("cannot start the parsing threads");
        rc = 1;
    } else if (!rc && (rc = srv_start(srv, f->listen, f->threads, err, sizeof err))) {
        srv_log("%s", err);
        srv_workpool_stop(srv->pool);
        rc = rc == -2 ? 2 : 1;
    } else if (!rc) {
        int sig = wait_signals(srv, f, sigs);
        srv_log("%s: finishing requests in flight", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        srv_stop(srv);
        srv_workpool_stop(srv->pool);
    }
    int front = srv->front != NULL;
    store_close(srv->st);       /* each closes nothing when not opened */
    chfront_close(srv->front);
    chsource_close(srv->source);
    srv->source = NULL;
    srv->st = NULL;
    srv->front = NULL;
    if (!rc) srv_log(front ? "stopped; the spool keeps what was not flushed yet" : "stopped");
    return rc;
}

static int serve(int argc, char **argv)
{
    serve_flags f;
    int rc = parse_serve_flags(argc, argv, &f);
    if (rc) return rc > 0 ? 0 : 2;
    if (f.merge_threads) query_merge_parallel(f.merge_threads, QUERY_MERGE_PARALLEL_PAIRS);
    if (f.metrics_auth && !f.auth) {
        fprintf(stderr, "flamedb serve: --metrics-auth needs --auth FILE (the tokens)\n");
        return 2;
    }
    if ((f.tls_cert != NULL) != (f.tls_key != NULL)) {
        fprintf(stderr, "flamedb serve: --tls-cert and --tls-key go together: give both for HTTPS\n");
        return 2;
    }
    if (f.ingest_burst && !f.ingest_rate) {
        fprintf(stderr, "flamedb serve: --ingest-burst needs --ingest-rate\n");
        return 2;
    }

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* past a file-size limit (ulimit -f) a write fails with EFBIG, answered
     * like a full disk, instead of the signal killing the server */
    signal(SIGXFSZ, SIG_IGN);

    char err[1024];
    srv_ctx srv = { .max_body = f.max_body, .cors = f.cors, .retention_ms = f.retention_ms, .data_dir = f.data,
                    .min_free_bytes = f.min_free, .max_ingest_held = f.max_queue,
                    .max_groups = f.max_groups, .max_series = f.max_series, .max_pairs = f.max_pairs, .max_answer = f.max_answer, .query_timeout_ms = f.query_timeout_ms, .max_per_ip = f.max_per_ip,
                    .conn_timeout_s = f.conn_timeout_s, .auth_path = f.auth, .metrics_auth = f.metrics_auth,
                    .insecure_no_auth = f.insecure_no_auth };
    pthread_rwlock_init(&srv.auth_lock, NULL);
    char *pem_cert = NULL, *pem_key = NULL;
    if (f.tls_cert && (!(pem_cert = read_pem("--tls-cert", f.tls_cert)) ||
                       !(pem_key = read_pem("--tls-key", f.tls_key)))) {
        rc = 2;
    } else if (f.auth && srv_access_load(&srv, err, sizeof err)) {
        /* a token file that does not parse is fatal at start (on SIGHUP
         * the tokens in use stay) */
        srv_log("--auth %s", err);
        rc = 2;
    } else if (!(srv.fleet = srv_fleet_new(f.fleet_duty, f.fleet_period_ms, f.fleet_rate)) ||
               (f.ingest_rate && !(srv.ingest_rate = srv_ratelimit_new(f.ingest_rate, f.ingest_burst)))) {
        srv_log("out of memory");
        rc = 1;
    } else {
        srv.tls_cert = pem_cert;
        srv.tls_key = pem_key;
        rc = run(&srv, &f, &sigs);
    }
    srv_ratelimit_free(srv.ingest_rate);
    srv_fleet_free(srv.fleet);
    srv_access_free(&srv);
    pthread_rwlock_destroy(&srv.auth_lock);
    free(pem_cert);
    free(pem_key);
    return rc;
}

/* flamedb migrate DIR: opens the store (which migrates) and closes it. */
static int migrate(int argc, char **argv)
{
    if (argc != 1 || argv[0][0] == '-') {
        fprintf(stderr, "usage: flamedb migrate DIR\n");
        return 2;
    }
    struct stat sb;
    if (stat(argv[0], &sb) || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "flamedb migrate: %s is not a directory\n", argv[0]);
        return 2;
    }
    char err[1024];
    store *st;
    store_options opt = { .dir = argv[0] };
    if (store_open(&st, &opt, err, sizeof err)) {
        fprintf(stderr, "flamedb migrate: %s\n", err);
        return 1;
    }
    store_stats stats;
    store_get_stats(st, &stats);
    store_close(st);
    if (stats.migrated_profiles)
        printf("migrated %llu profiles of %s to format %s; the old file is in %s/flamedb-4-backup\n",
               (unsigned long long)stats.migrated_profiles, argv[0], store_format(), argv[0]);
    else
        printf("%s: nothing to migrate (format %s)\n", argv[0], store_format());
    return 0;
}

/* flamedb check DIR: prints each finding as "file: what", at most
 * CHECK_SHOWN problems, then the counts. */
#define CHECK_SHOWN 100

static const char usage_check[] =
    "Usage: flamedb check DIR\n"
    "\n"
    "Verifies the data directory DIR without changing it; safe while a server runs on it.\n"
    "Walks the catalog's label strings and series and every partition's dictionaries,\n"
    "blocks (checksums), rollups and pending marks; prints one line per problem naming\n"
    "its file and key (the first 100), then the counts.\n"
    "Exit status: 0 sound (or an older format that serve upgrades), 1 damage found,\n"
    "2 DIR is not a flamedb data directory.\n";

typedef struct { uint64_t shown, hidden; } check_print;

static void check_found(void *ctx, store_check_kind kind, const char *file, const char *what)
{
    check_print *cp = ctx;
    if (kind == STORE_CHECK_NOTE) {
        printf("%s: note: %s\n", file, what);
    } else if (cp->shown < CHECK_SHOWN) {
        printf("%s: %s\n", file, what);
        cp->shown++;
    } else {
        cp->hidden++;
    }
    fflush(stdout);
}

static int check(int argc, char **argv)
{
    if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(usage_check, stdout);
        return 0;
    }
    if (argc != 1 || argv[0][0] == '-') {
        fputs(usage_check, stderr);
        return 2;
    }
    char err[1024];
    check_print cp = { 0, 0 };
    store_check_counts n;
    store_status ss = store_check(argv[0], check_found, &cp, &n, err, sizeof err);
    if (ss) {
        fprintf(stderr, "flamedb check: %s\n", ss == STORE_ENOMEM ? "out of memory" : err);
        return ss == STORE_EINVAL ? 2 : 1;
    }
    if (cp.hidden)
        printf("... and %llu more problem%s (the first %d are shown)\n", (unsigned long long)cp.hidden,
               cp.hidden == 1 ? "" : "s", CHECK_SHOWN);
    if (!strcmp(n.format, "flamedb-4")) {
        printf("%s: format flamedb-4, not checked: it needs migration (flamedb migrate %s)\n", argv[0], argv[0]);
        return 0;
    }
    char part[48] = "partition length unknown";
    if (n.partition_ms) snprintf(part, sizeof part, "partitions of %lld h", (long long)(n.partition_ms / 3600000));
    printf("%s: format %s, %s: %llu series, %llu label strings, %llu partitions, "
           "%llu strings, %llu nodes, %llu blocks, %llu rollups, %llu pending, %llu unchecked v1 blocks; "
           "%llu problem%s\n",
           argv[0], *n.format ? n.format : "unknown", part,
           (unsigned long long)n.series, (unsigned long long)n.label_strings, (unsigned long long)n.partitions,
           (unsigned long long)n.strings, (unsigned long long)n.nodes, (unsigned long long)n.blocks,
           (unsigned long long)n.rollups, (unsigned long long)n.pending, (unsigned long long)n.unchecked,
           (unsigned long long)n.problems, n.problems == 1 ? "" : "s");
    if (n.problems) {
        printf("%s is damaged\n", argv[0]);
        return 1;
    }
    printf("%s is sound%s\n", argv[0], n.needs_upgrade ? " (flamedb serve upgrades its format)" : "");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("flamedb " VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "serve")) return serve(argc - 2, argv + 2);
    if (!strcmp(argv[1], "import")) return client_import_main(argc - 2, argv + 2);
    if (!strcmp(argv[1], "migrate")) return migrate(argc - 2, argv + 2);
    if (!strcmp(argv[1], "check")) return check(argc - 2, argv + 2);
    fprintf(stderr, "flamedb: unknown command '%s'\n\n%s", argv[1], usage_main);
    return 2;
}
