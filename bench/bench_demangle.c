/* bench_demangle.c — what demangling costs the agent (issue 13), per symbol:
 *
 *   uncached   the first use of a symbol table entry: libiberty's
 *              cplus_demangle through ingest/demangle.c (agent_sym_name's
 *              first call on the entry);
 *   cached     every later use: agent_sym_name finds the answer in the entry;
 *   raw        agent_sym_name with demangling off (--no-demangle), the floor.
 *
 * The names are real: every function symbol of libstdc++ (its .symtab and
 * .dynsym, as the agent loads them), or of BENCH_DEMANGLE_ELF.  Also printed:
 * what demangling the whole table at load would cost, the alternative the
 * agent does not take (it demangles on first use, and a process samples a
 * few hundred of a library's thousands of functions).
 *
 *   build/bench/bench_demangle [ELF]      (make bench runs it without one)
 */
#include "../agent/agent.h"
#include "../ingest/demangle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *elf = argc > 1 ? argv[1] : getenv("BENCH_DEMANGLE_ELF");
    static const char *const candidates[] = { "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                                              "/usr/lib64/libstdc++.so.6", "/usr/lib/libstdc++.so.6", NULL };
    agent_symtab t;
    agent_symtab_init(&t);
    char err[512];
    int loaded = 0;
    if (elf) loaded = agent_elf_symtab(elf, NULL, &t, err, sizeof err) == 0;
    for (int i = 0; !elf && candidates[i] && !loaded; i++) {
        elf = candidates[i];
        loaded = agent_elf_symtab(elf, NULL, &t, err, sizeof err) == 0;
        if (!loaded) elf = NULL;
    }
    if (!loaded || t.n == 0) {
        fprintf(stderr, "bench_demangle: no symbol table to read (%s); give an ELF file\n", elf ? err : "no libstdc++");
        return 1;
    }
    size_t mangled = 0, demangled = 0;
    for (size_t i = 0; i < t.n; i++) mangled += demangle_candidate(t.v[i].name, strlen(t.v[i].name));

    /* uncached: the first use of each entry, timed one by one */
    double *first = malloc(t.n * sizeof *first);
    if (!first) return 1;
    double t0 = now_ns();
    for (size_t i = 0; i < t.n; i++) {
        double a = now_ns();
        agent_sym_name(&t.v[i], 1);
        first[i] = now_ns() - a;
    }
    double all_first = now_ns() - t0;
    for (size_t i = 0; i < t.n; i++) demangled += t.v[i].demangled != NULL;
    double mangled_sum = 0;
    size_t nm = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.v[i].demangled) first[nm++] = first[i], mangled_sum += first[i];
    qsort(first, nm, sizeof *first, cmp_double);

    /* cached and raw: every entry again, many rounds */
    const int rounds = 200;
    volatile size_t sink = 0;
    double c0 = now_ns();
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < t.n; i++) sink += (size_t)agent_sym_name(&t.v[i], 1)[0];
    double cached = (now_ns() - c0) / ((double)rounds * t.n);
    double r0 = now_ns();
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < t.n; i++) sink += (size_t)agent_sym_name(&t.v[i], 0)[0];
    double raw = (now_ns() - r0) / ((double)rounds * t.n);
    (void)sink;

    /* a shared machine preempts some calls for milliseconds: the mean is
     * also given over the calls up to the 99th percentile */
    size_t p99 = nm ? nm * 99 / 100 : 0;
    double trimmed = 0;
    for (size_t i = 0; i < p99; i++) trimmed += first[i];
    trimmed = p99 ? trimmed / p99 : 0;
    size_t longest = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.v[i].demangled && strlen(t.v[i].demangled) > longest) longest = strlen(t.v[i].demangled);
    printf("bench_demangle: %s: %zu function symbols, %zu look mangled, %zu demangled (longest %zu bytes)\n",
           elf, t.n, mangled, demangled, longest);
    printf("  first use of a mangled name: median %.0f ns, mean %.0f ns (%.0f ns up to p99), p99 %.0f ns, max %.0f ns\n",
           nm ? first[nm / 2] : 0, nm ? mangled_sum / nm : 0, trimmed, nm ? first[p99] : 0,
           nm ? first[nm - 1] : 0);
    printf("  first use over every symbol (plain names: the prefix test only): %.0f ns mean\n", all_first / t.n);
    printf("  later uses: %.2f ns (cached), %.2f ns (--no-demangle)\n", cached, raw);
    printf("RESULT demangle: %s: uncached %.0f ns/symbol (median of %zu mangled names; mean %.0f up to p99), "
           "cached %.1f ns/symbol (--no-demangle %.1f ns); the whole table at load: %.1f ms\n",
           strrchr(elf, '/') ? strrchr(elf, '/') + 1 : elf, nm ? first[nm / 2] : 0, nm, trimmed,
           cached, raw, all_first / 1e6);
    free(first);
    agent_symtab_free(&t);
    return 0;
}
