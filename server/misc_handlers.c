/* misc_handlers.c — GET /healthz and the web viewer's static files, which
 * are compiled into the binary (see scripts/embed.c), so one binary serves
 * everything with no files beside it and no network access. */
#include <string.h>

#include "srv.h"
#include "web_assets.h"

/* 200 while the server answers.  In cluster mode also whether ClickHouse
 * answered the flusher's last exchange and how much waits in the spool:
 * ingest goes on (into the spool) while it does not, so the status stays
 * "ok" and the "clickhouse" member says what a load balancer or an
 * operator needs. */
enum MHD_Result srv_handle_healthz(srv_request *rq)
{
    json_t *o = json_pack("{s:s}", "status", "ok");
    if (o && rq->srv->front) {
        chfront_stats cs;
        chfront_stats_get(rq->srv->front, &cs);
        int64_t now = srv_now_ms();
        json_object_set_new(o, "clickhouse", json_pack("{s:b, s:s, s:s, s:I, s:I, s:I, s:f}",
                                                       "reachable", cs.reachable, "url", cs.url,
                                                       "last_error", cs.last_error,
                                                       "spool_bytes", (json_int_t)cs.spool_bytes,
                                                       "spool_max_bytes", (json_int_t)cs.spool_max,
                                                       "spool_files", (json_int_t)cs.spool_files,
                                                       "spool_oldest_age_s",
                                                       cs.spool_oldest_ms ? (now - cs.spool_oldest_ms) / 1000.0 : 0.0));
    }
    return srv_reply_json(rq, 200, o);
}

enum MHD_Result srv_handle_web(srv_request *rq)
{
    const char *path = strcmp(rq->url, "/") == 0 ? "/index.html" : rq->url;
    for (size_t i = 0; i < web_asset_count; i++) {
        if (strcmp(web_assets[i].path, path) == 0)
            return srv_reply_bytes(rq, 200, web_assets[i].content_type, (void *)web_assets[i].data,
                                   web_assets[i].size, 0);
    }
    return srv_reply_error(rq, 404, "no such page: %s", rq->url);
}
