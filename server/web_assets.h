/* web_assets.h — the viewer's files compiled into the binary; the table is
 * generated at build time by scripts/embed.c from web/. */
#ifndef FLAMEDB_WEB_ASSETS_H
#define FLAMEDB_WEB_ASSETS_H

#include <stddef.h>

typedef struct {
    const char *path;          /* "/index.html" */
    const char *content_type;
    const unsigned char *data;
    size_t size;
} web_asset;

extern const web_asset web_assets[];
extern const size_t web_asset_count;

#endif
