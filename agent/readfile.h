/* readfile.h — reading a small file whole (readfile.c). */
#ifndef FLAMEDB_AGENT_READFILE_H
#define FLAMEDB_AGENT_READFILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads the file at path into a malloc'd, NUL-terminated buffer *text
 * (its length in *len when len is not NULL); 0, or -1 when it cannot be
 * opened or read (errno says why).  For /proc and /sys files, whose size
 * stat does not tell. */
int agent_read_file(const char *path, char **text, size_t *len);

#endif
