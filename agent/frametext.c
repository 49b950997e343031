/* frametext.c — the text of one frame in a folded stack.
 *
 * A frame is its name, or with lines (issue 15) "name US file US line US
 * mapping US build_id" (US = 0x1F, storage/frame.h, the format POST
 * /api/v1/ingest takes with locations=1).  Names are cleaned of what
 * would break folded text (';', line breaks, US); files and mappings that
 * are not UTF-8 or too long are left out rather than sent.
 */
#include "frametext.h"

#include "../common/utf8.h"
#include "../storage/frame.h"

#include <ctype.h>

#include <stdio.h>
#include <string.h>

void agent_frame_clean(char *name)
{
    if (!*name) { strcpy(name, "[unknown]"); return; }   /* callers pass >= 10 bytes */
    for (char *c = name; *c; c++) {
        if (*c == ';') *c = ':';
        else if (*c == '\n' || *c == '\r' || *c == FRAME_SEP) *c = ' ';
    }
}

/* Appends one location field: folded-safe (';' -> ':', line breaks and
 * the separator -> ' '). */
static size_t locate_field(char *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        out[i] = c == ';' ? ':' : (c == '\n' || c == '\r' || c == FRAME_SEP) ? ' ' : c;
    }
    return n;
}

int agent_frame_locate(char *buf, size_t cap, const char *file, unsigned line,
                       const char *mapping, const char *build_id)
{
    size_t nl = strlen(buf), fl = file ? strlen(file) : 0;
    size_t ml = mapping ? strlen(mapping) : 0, bl = build_id ? strlen(build_id) : 0;
    if (nl == 0 || memchr(buf, FRAME_SEP, nl) || fl == 0 || line == 0 ||
        line > AGENT_LINE_MAX || fl > AGENT_LOCATION_FIELD_MAX ||
        !utf8_valid(file, fl))
        return 0;
    if (ml > AGENT_LOCATION_FIELD_MAX || !utf8_valid(mapping, ml)) ml = 0;
    for (size_t i = 0; i < bl; i++)
        if (!isxdigit((unsigned char)build_id[i])) { bl = 0; break; }
    if (bl > 128) bl = 0;
    char num[16];
    size_t ll = (size_t)snprintf(num, sizeof num, "%u", line);
    size_t need = nl + 1 + fl + 1 + ll + (ml || bl ? 2 + ml + bl : 0) + 1;
    if (need > cap) return 0;
    char *o = buf + nl;
    *o++ = FRAME_SEP;
    o += locate_field(o, file, fl);
    *o++ = FRAME_SEP;
    memcpy(o, num, ll); o += ll;
    if (ml || bl) {
        *o++ = FRAME_SEP;
        o += locate_field(o, mapping, ml);
        *o++ = FRAME_SEP;
        memcpy(o, build_id, bl); o += bl;
    }
    *o = 0;
    return 1;
}

size_t agent_frame_name_len(const char *frame)
{
    return frame_name_len(frame, (uint32_t)strlen(frame));
}
