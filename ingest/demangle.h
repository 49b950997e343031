/* demangle.h — readable names for C++ (Itanium ABI) and Rust (legacy and
 * v0) symbols (issue 13), with libiberty's cplus_demangle, the demangler
 * of binutils and gdb.  One implementation for the agent (agent/symbols.c
 * links ingest/demangle.o) and the server (perf script import).
 *
 *   _ZN11__sanitizer18BufferedStackTrace10UnwindFastEmmmmj
 *     -> __sanitizer::BufferedStackTrace::UnwindFast(unsigned long, unsigned
 *        long, unsigned long, unsigned long, unsigned int)
 *   _ZN4core3fmt5write17h0123456789abcdefE   -> core::fmt::write
 *   _RNvCs1234_7mycrate3foo                  -> mycrate::foo
 *
 * C++ names keep their parameter types (overloads stay apart); Rust legacy
 * names lose their "::h<16 hex>" hash (one function across builds); clones
 * read "foo() [clone .cold]".  Names that are not mangled, or that
 * libiberty cannot demangle, are left as they are.  Thread-safe.
 */
#ifndef FLAMEDB_DEMANGLE_H
#define FLAMEDB_DEMANGLE_H

#include <stddef.h>

/* Mangled names longer than this are left as they are (bounds the work
 * one name can cost; real ones are far shorter).  libiberty itself leaves
 * C++ names over 1024 bytes mangled (its guard of the stack, which
 * DMGL_NO_RECURSE_LIMIT would lift); Rust names it takes at any length. */
#define DEMANGLE_MAX_IN 8192

/* 1 when the len bytes at name may be a mangled name: "_Z" (C++ and Rust
 * legacy) or "_R" (Rust v0), at most DEMANGLE_MAX_IN bytes, no NUL.  A
 * cheap test; demangling may still fail. */
int demangle_candidate(const char *name, size_t len);

/* The demangled form of the len bytes at name (need not be NUL-terminated),
 * malloc'd; NULL when it is not a mangled name, cannot be demangled, or
 * memory ran out (the caller keeps the raw name). */
char *demangle_name(const char *name, size_t len);

/* demangle_name, remembered per distinct name: for inputs that repeat the same
 * names many times (perf script text names every frame of every sample).
 * Answers point into the cache, valid until demangle_cache_free. */
typedef struct demangle_cache demangle_cache;

demangle_cache *demangle_cache_new(void);
void demangle_cache_free(demangle_cache *c);
/* NULL as demangle_name (not mangled, failed, or out of memory). */
const char *demangle_cached(demangle_cache *c, const char *name, size_t len);

#endif
