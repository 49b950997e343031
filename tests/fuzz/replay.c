/* replay.c — a main for the fuzz harnesses without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named on the command line (the
 * seed corpus and the saved crash inputs), so `make test` replays them
 * under ASan/UBSan with gcc and a fixed crash stays fixed.  Each input is
 * copied into a buffer of exactly its size, as libFuzzer does, so a read
 * one byte past the end is caught. */
#include "fuzz.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 1;
        }
        size_t cap = 4096, n = 0, r;
        uint8_t *buf = malloc(cap);
        while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
            n += r;
            if (n == cap) {
                uint8_t *nb = realloc(buf, cap *= 2);
                if (!nb) free(buf);
                buf = nb;
            }
        }
        int bad = ferror(f);
        fclose(f);
        if (!buf || bad) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            free(buf);
            return 1;
        }
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) return 1;
        memcpy(exact, buf, n);
        free(buf);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
    }
    return 0;
}
