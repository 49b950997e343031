/* frame.h — the text of one stack frame: a function name, or a name and
 * where it is (issue 15: frames with lines).
 *
 *   name                                        a function only
 *   name US file US line US mapping US build_id (US = 0x1f, the ASCII unit
 *                                                separator; fields may be
 *                                                empty, line is decimal)
 *
 * Ingest writes the long form when its input knows the location (pprof:
 * Function.filename, Line.line, the Location's Mapping file and build id);
 * storage interns the whole text once per partition, so a distinct
 * location costs one dictionary string and a node is (parent, location):
 * nothing changes per stored pair.  Readers build their call tree by name
 * alone unless asked for lines (store_reader_lines), so stacks that differ
 * only in line merge by function; with lines the reader's names are the
 * whole texts and encoders split them with frame_parse.  The separator
 * never occurs in a name: folded ingest refuses it, pprof ingest replaces
 * it.  Header-only: ingest, storage and query all read the format. */
#ifndef FLAMEDB_FRAME_H
#define FLAMEDB_FRAME_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_SEP '\x1f'
/* A sample label (issue 11, point 5: pprof Sample.label, OTLP attributes
 * and links) kept as a pseudo-frame at the root of a stack:
 * FRAME_LABEL key '=' value.  It starts with the separator, which no
 * ingested frame can (a located frame must have a name): storage/store.h's
 * STORE_SAMPLE_MARK, which readers skip unless asked. */
#define FRAME_LABEL FRAME_SEP

typedef struct {
    const char *name, *file, *mapping, *build_id;   /* not NUL-terminated */
    uint32_t name_len, file_len, mapping_len, build_id_len;
    uint32_t line;                                  /* 0: not known */
    int located;                                    /* the long form */
} frame_parts;

/* The length of the name part of a frame's text. */
static inline uint32_t frame_name_len(const char *s, uint32_t len)
{
    const char *p = memchr(s, FRAME_SEP, len);
    return p ? (uint32_t)(p - s) : len;
}

/* Splits a frame's text into its parts (missing parts empty). */
static inline void frame_parse(const char *s, uint32_t len, frame_parts *f)
{
    const char *field[5] = { s, "", "", "", "" };
    uint32_t flen[5] = { len, 0, 0, 0, 0 };
    const char *p = s, *end = s + len;
    int k = 0;
    for (;;) {
        const char *sep = memchr(p, FRAME_SEP, (size_t)(end - p));
        field[k] = p;
        flen[k] = (uint32_t)((sep ? sep : end) - p);
        if (!sep || k == 4) break;
        p = sep + 1;
        k++;
    }
    f->located = k > 0;
    f->name = field[0];
    f->name_len = flen[0];
    f->file = field[1];
    f->file_len = flen[1];
    uint32_t line = 0;
    for (uint32_t i = 0; i < flen[2] && field[2][i] >= '0' && field[2][i] <= '9' && line < 100000000; i++)
        line = line * 10 + (uint32_t)(field[2][i] - '0');
    f->line = line;
    f->mapping = field[3];
    f->mapping_len = flen[3];
    f->build_id = field[4];
    f->build_id_len = flen[4];
}

#endif
