/* test_agent_metrics.c — the agent's own counters (issue 15): the interval
 * log line (differences since the last one, gauges as they are, the same
 * names as the metrics), the Prometheus text (every series, HELP and TYPE
 * once each), its atomic file, and the sum of folded text's counts. */
#include <string.h>

#include "../unit/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/agent.h"

static agent_metrics sample_metrics(void)
{
    agent_metrics m;
    memset(&m, 0, sizeof m);
    m.samples_read = 1000; m.samples_profiled = 900; m.samples_ignored = 60;
    m.samples_unnamed = 30; m.dropped_nomem = 10; m.dropped_lost = 7; m.dropped_malformed = 2;
    m.unwind_failed = 44; m.samples_pruned = 5; m.threads_pruned = 1; m.samples_delivered = 895;
    m.profiles_pushed = 12; m.profiles_spooled = 3; m.profiles_rejected = 1;
    m.profiles_spool_dropped = 2; m.profiles_written = 0; m.spool_waiting = 3; m.processes = 8;
    m.intervals = 4; m.frequency = 99; m.start_time = 1795255200; m.last_interval = 1795255240;
    return m;
}

static void line_differences(void **state)
{
    (void)state;
    agent_metrics prev = sample_metrics(), cur = prev;
    cur.samples_read += 100; cur.samples_profiled += 90; cur.samples_unnamed += 4;
    cur.dropped_lost += 6; cur.unwind_failed += 3; cur.profiles_pushed += 2;
    cur.spool_waiting = 0; cur.processes = 9;
    char buf[700];
    agent_metrics_line(&cur, &prev, buf, sizeof buf);
    assert_string_equal(buf,
        "samples read=100 profiled=90 unnamed=4 ignored=0 pruned=0; "
        "dropped lost=6 malformed=0 no_memory=0; unwind_failed=3; "
        "profiles pushed=2 spooled=0 rejected=0 spool_dropped=0 written=0 waiting=0; processes=9");
    /* --offcpu, --alloc: their counters join the line once they are not 0 */
    agent_metrics pre = cur;
    cur.offcpu_switches += 500; cur.offcpu_unpaired += 2; cur.alloc_samples += 70; cur.alloc_nested += 9;
    agent_metrics_line(&cur, &pre, buf, sizeof buf);
    assert_non_null(strstr(buf, "processes=9; offcpu switches=500 unpaired=2; alloc samples=70 nested=9"));
    agent_metrics_line(&cur, NULL, buf, sizeof buf);          /* totals */
    assert_non_null(strstr(buf, "samples read=1100 profiled=990 unnamed=34 ignored=60 pruned=5; "));
    assert_non_null(strstr(buf, "dropped lost=13 malformed=2 no_memory=10; unwind_failed=47; "));
    assert_non_null(strstr(buf, "profiles pushed=14 spooled=3 rejected=1 spool_dropped=2 written=0 waiting=0; processes=9"));
}

static void prometheus_text(void **state)
{
    (void)state;
    agent_metrics m = sample_metrics();
    size_t len;
    char *t = agent_metrics_text(&m, &len);
    assert_non_null(t);
    assert_int_equal(strlen(t), len);
    const char *want[] = {
        "flamedb_agent_samples_read_total 1000\n",
        "flamedb_agent_samples_profiled_total 900\n",
        "flamedb_agent_samples_ignored_total 60\n",
        "flamedb_agent_samples_dropped_total{reason=\"lost\"} 7\n",
        "flamedb_agent_samples_unnamed_total 30\n",
        "flamedb_agent_samples_dropped_total{reason=\"malformed\"} 2\n",
        "flamedb_agent_samples_dropped_total{reason=\"no_memory\"} 10\n",
        "flamedb_agent_unwind_failed_total 44\n",
        "flamedb_agent_samples_pruned_total 5\n",
        "flamedb_agent_threads_pruned_total 1\n",
        "flamedb_agent_samples_delivered_total 895\n",
        "flamedb_agent_profiles_total{outcome=\"pushed\"} 12\n",
        "flamedb_agent_profiles_total{outcome=\"spooled\"} 3\n",
        "flamedb_agent_profiles_total{outcome=\"rejected\"} 1\n",
        "flamedb_agent_profiles_total{outcome=\"spool_dropped\"} 2\n",
        "flamedb_agent_profiles_total{outcome=\"written\"} 0\n",
        "flamedb_agent_spool_profiles 3\n",
        "flamedb_agent_processes 8\n",
        "flamedb_agent_intervals_total 4\n",
        "flamedb_agent_frequency_hertz 99\n",
        "flamedb_agent_start_time_seconds 1795255200\n",
        "flamedb_agent_last_interval_timestamp_seconds 1795255240\n",
        "flamedb_agent_offcpu_switches_total 0\n",
        "flamedb_agent_alloc_samples_total 0\n",
        "# TYPE flamedb_agent_samples_dropped_total counter\n",
        "# TYPE flamedb_agent_spool_profiles gauge\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(t, want[i])) fail_msg("missing: %s", want[i]);
    /* one HELP and one TYPE per metric name */
    int help = 0, type = 0;
    for (const char *p = t; (p = strstr(p, "# HELP ")); p++) help++;
    for (const char *p = t; (p = strstr(p, "# TYPE ")); p++) type++;
    assert_int_equal(help, 20);                  /* samples_unnamed_total, offcpu_*, alloc_* (issue 13) */
    assert_int_equal(type, 20);
    assert_int_equal(t[len - 1], '\n');
    free(t);
}

static void metrics_file_atomic(void **state)
{
    (void)state;
    char dir[] = "/tmp/flamedb-metrics-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], tmp[140], err[300];
    snprintf(path, sizeof path, "%s/agent.prom", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    agent_metrics m = sample_metrics();
    assert_int_equal(agent_metrics_write(path, &m, err, sizeof err), 0);
    m.intervals = 5;
    assert_int_equal(agent_metrics_write(path, &m, err, sizeof err), 0);
    char *text;
    size_t len;
    assert_int_equal(agent_read_file(path, &text, &len), 0);
    assert_non_null(strstr(text, "flamedb_agent_intervals_total 5\n"));
    free(text);
    struct stat st;
    assert_int_not_equal(stat(tmp, &st), 0);                  /* renamed away */
    unlink(path);
    rmdir(dir);
    /* a directory that is not there: an error naming the flag */
    assert_int_equal(agent_metrics_write("/nonexistent-dir/agent.prom", &m, err, sizeof err), -1);
    assert_err_contains(err, "--metrics /nonexistent-dir/agent.prom.tmp");
}

static void folded_total(void **state)
{
    (void)state;
    const char *t = "main;a 3\nmain;b c 40\nbad line\n;x 2\nmain;z 7";
    assert_int_equal(agent_folded_total(t, strlen(t)), 52);
    assert_int_equal(agent_folded_total("", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_differences),
        cmocka_unit_test(prometheus_text),
        cmocka_unit_test(metrics_file_atomic),
        cmocka_unit_test(folded_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
