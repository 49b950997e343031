/* push.c — POST /api/v1/ingest over libcurl.
 *
 * One CURL easy handle for the agent's life, so the connection is kept
 * alive between pushes; bodies are gzip'd (Content-Encoding: gzip).  The
 * caller decides about retries and spooling from *retryable.
 */
#include "agent.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct agent_push {
    CURL *curl;
    struct curl_slist *headers;
    char answer[512];
    size_t answer_len;
};

int agent_gzip(const void *in, size_t len, unsigned char **out, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    size_t cap = deflateBound(&z, len) + 32;
    unsigned char *buf = malloc(cap);
    if (!buf) { deflateEnd(&z); return -1; }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) { free(buf); return -1; }
    *out = buf;
    return 0;
}

static size_t push_write(char *data, size_t size, size_t n, void *arg)
{
    agent_push *p = arg;
    size_t len = size * n, room = sizeof p->answer - 1 - p->answer_len;
    size_t k = len < room ? len : room;
    memcpy(p->answer + p->answer_len, data, k);
    p->answer_len += k;
    p->answer[p->answer_len] = 0;
    return len;
}

agent_push *agent_push_new(void)
{
    static int inited;
    if (!inited) { curl_global_init(CURL_GLOBAL_DEFAULT); inited = 1; }
    agent_push *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->curl = curl_easy_init();
    if (!p->curl) { free(p); return NULL; }
    p->headers = curl_slist_append(NULL, "Content-Encoding: gzip");
    p->headers = curl_slist_append(p->headers, "Content-Type: text/plain");
    p->headers = curl_slist_append(p->headers, "Expect:");
    return p;
}

void agent_push_free(agent_push *p)
{
    if (!p) return;
    curl_slist_free_all(p->headers);
    curl_easy_cleanup(p->curl);
    free(p);
}

int agent_push_send(agent_push *p, const char *url, const void *body,
                    size_t len, int *retryable, char *err, size_t errlen)
{
    unsigned char *gz;
    size_t gzlen;
    *retryable = 0;
    if (agent_gzip(body, len, &gz, &gzlen) < 0) {
        snprintf(err, errlen, "gzip failed");
        return -1;
    }
    CURL *c = p->curl;
    p->answer_len = 0;
    p->answer[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, gz);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)gzlen);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, push_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    CURLcode rc = curl_easy_perform(c);
    free(gz);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s", curl_easy_strerror(rc));
        *retryable = 1;
        return -1;
    }
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) return 0;
    snprintf(err, errlen, "HTTP %ld: %s", code, p->answer);
    *retryable = code >= 500 || code == 429 || code == 408;
    return -1;
}
