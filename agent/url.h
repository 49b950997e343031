/* url.h — the ingest URL of a profile (url.c). */
#ifndef FLAMEDB_AGENT_URL_H
#define FLAMEDB_AGENT_URL_H

#include <stddef.h>
#include <stdint.h>
#include "labels.h"

/* The ingest URL: server + "/api/v1/ingest?" + labels + rate, from, until,
 * and locations=1 when asked (frames carry locations), every value
 * percent-encoded.  malloc'd. */
char *agent_ingest_url(const char *server, const agent_labels *l,
                       double rate, int64_t from, int64_t until, int locations);
/* The same with the unit of the counts (unit=..., NULL: the server's
 * default, samples); rate <= 0 leaves rate out (a profile not of samples
 * taken at a frequency: off-CPU nanoseconds, allocations). */
char *agent_ingest_url_unit(const char *server, const agent_labels *l, double rate,
                            const char *unit, int64_t from, int64_t until, int locations);
/* Percent-encodes s (RFC 3986 unreserved kept) into a malloc'd string. */
char *agent_urlencode(const char *s);

#endif
