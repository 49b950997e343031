/* misc_handlers.c — GET /healthz and the web viewer's static files, which
 * are compiled into the binary (see scripts/embed.c), so one binary serves
 * everything with no files beside it and no network access. */
#include <string.h>

#include "srv.h"
#include "web_assets.h"

enum MHD_Result srv_handle_healthz(srv_request *rq)
{
    return srv_reply_json(rq, 200, json_pack("{s:s}", "status", "ok"));
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
