/* frametext.h — the text of one frame: name, and location with lines (frametext.c). */
#ifndef FLAMEDB_AGENT_FRAMETEXT_H
#define FLAMEDB_AGENT_FRAMETEXT_H

#include <stddef.h>
#include <stdint.h>

/* Sanitizes a frame name for folded text: ';' -> ':', newlines and the
 * location separator (0x1F) -> ' ', empty -> "[unknown]". In place. */
void agent_frame_clean(char *name);

/* Frames with lines (issue 15; storage/frame.h is the format): a frame's
 * text is its name, or "name US file US line US mapping US build_id" with
 * US = 0x1F, what POST /api/v1/ingest takes with locations=1. */
#define AGENT_NAME_MAX 1024             /* a name's bytes, NUL included */
#define AGENT_LOCATION_FIELD_MAX 1024   /* file or mapping, bytes */
#define AGENT_LINE_MAX 99999999u
#define AGENT_FRAME_MAX (AGENT_NAME_MAX + 2 * AGENT_LOCATION_FIELD_MAX + 160)
/* Appends the location to the (clean) name in buf: answers 1, or 0 with
 * buf unchanged when there is none to give (no file, line 0 or above
 * AGENT_LINE_MAX, a file not UTF-8 or longer than AGENT_LOCATION_FIELD_MAX,
 * buf already located or too small).  ';', line breaks and 0x1F in file and
 * mapping become ':' and ' '; a mapping that is too long or not UTF-8, or a
 * build_id that is not hex, is left empty; when both are empty the short
 * form "name US file US line" is written. */
int agent_frame_locate(char *buf, size_t cap, const char *file, unsigned line,
                       const char *mapping, const char *build_id);
/* The length of the name part of a frame's text (storage/frame.h's
 * frame_name_len). */
size_t agent_frame_name_len(const char *frame);

#endif
