/* readfile.c — reading a small file whole.
 *
 * /proc and /sys files report a size of 0 and are produced as they are
 * read, so the buffer grows until read() answers 0; EINTR is retried.
 * Used by every module that reads /proc, /sys or a spool file.
 */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int agent_read_file(const char *path, char **text, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb; cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r < 0) { free(buf); buf = NULL; }
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (!buf) return -1;
    buf[n] = 0;
    *text = buf;
    if (len) *len = n;
    return 0;
}
