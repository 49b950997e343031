/* test_agent_fleet.c — fleet control, the agent's side (issue 13, point 5):
 * the heartbeat answer parsed (and refused when it is not a plan), its
 * times moved to the agent's clock, the state at each moment around the
 * period boundaries, unmanaged once the plan runs out, ceasing when pushes
 * keep failing and sampling again after the cool-off, and the heartbeat's
 * JSON body. */
#include <string.h>

#include "../unit/testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../agent/agent.h"

static const char *ANSWER =
    "{\"agent\": \"n1\", \"now\": 1000, \"period\": 60, \"duty\": 0.1, \"sample\": false,"
    " \"from\": 960, \"until\": 1020, \"rate\": 49.5, \"next_sample\": true, \"next_until\": 1080}";

static void plan_parse(void **state)
{
    (void)state;
    agent_fleet_plan p;
    char err[200];
    assert_int_equal(agent_fleet_plan_parse(ANSWER, strlen(ANSWER), &p, err, sizeof err), 0);
    assert_true(p.now > 999.99 && p.now < 1000.01);
    assert_int_equal(p.period, 60);
    assert_true(p.duty > 0.099 && p.duty < 0.101);
    assert_int_equal(p.step[0].sample, 0);
    assert_int_equal(p.step[0].from, 960);
    assert_int_equal(p.step[0].until, 1020);
    assert_int_equal(p.step[1].sample, 1);
    assert_int_equal(p.step[1].from, 1020);
    assert_int_equal(p.step[1].until, 1080);
    assert_true(p.step[1].rate > 49.4 && p.step[1].rate < 49.6);

    /* a field missing, a bool that is not one, steps out of order */
    const char *missing = "{\"now\": 1000, \"period\": 60, \"duty\": 1, \"sample\": true, \"from\": 960,"
                          " \"until\": 1020, \"next_sample\": true, \"next_until\": 1080}";
    assert_int_equal(agent_fleet_plan_parse(missing, strlen(missing), &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"rate\""));
    const char *notbool = "{\"now\": 1000, \"period\": 60, \"duty\": 1, \"sample\": 1, \"from\": 960,"
                          " \"until\": 1020, \"rate\": 0, \"next_sample\": true, \"next_until\": 1080}";
    assert_int_equal(agent_fleet_plan_parse(notbool, strlen(notbool), &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "sample"));
    const char *order = "{\"now\": 1000, \"period\": 60, \"duty\": 1, \"sample\": true, \"from\": 960,"
                        " \"until\": 1020, \"rate\": 0, \"next_sample\": true, \"next_until\": 1000}";
    assert_int_equal(agent_fleet_plan_parse(order, strlen(order), &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "inconsistent"));
    assert_int_equal(agent_fleet_plan_parse("{\"error\": \"no\"}", 15, &p, err, sizeof err), -1);
}

static void plan_states(void **state)
{
    (void)state;
    agent_fleet f;
    memset(&f, 0, sizeof f);
    double rate;
    /* no plan: today's behaviour */
    assert_int_equal(agent_fleet_state_at(&f, 5000, &rate), AGENT_FLEET_UNMANAGED);
    assert_int_equal(agent_fleet_next_change(&f, 5000), INT64_MAX);
    agent_fleet_plan p;
    char err[200];
    assert_int_equal(agent_fleet_plan_parse(ANSWER, strlen(ANSWER), &p, err, sizeof err), 0);
    /* one machine: the answer read 0.3 s later, across a second boundary,
     * moves nothing */
    agent_fleet_set_plan(&f, &p, 999.9, 1000.3);
    assert_int_equal(agent_fleet_state_at(&f, 1019, &rate), AGENT_FLEET_IDLE);
    assert_int_equal(agent_fleet_state_at(&f, 1020, &rate), AGENT_FLEET_SAMPLING);
    /* one loaded machine: the answer came 1.7 s after the server's now
     * (2.4 s round trip); still nothing moves (a shift of 2 s here put an
     * agent's turn across the next period's boundary) */
    agent_fleet_set_plan(&f, &p, 999.3, 1001.7);
    assert_int_equal(agent_fleet_state_at(&f, 1019, &rate), AGENT_FLEET_IDLE);
    assert_int_equal(agent_fleet_state_at(&f, 1020, &rate), AGENT_FLEET_SAMPLING);
    assert_int_equal(agent_fleet_next_change(&f, 1020), 1080);
    /* the agent's clock is ahead: sent 3.2 s after the server's now, the
     * difference is at least 3.2 s (rounded: 3) */
    agent_fleet_set_plan(&f, &p, 1003.2, 1003.4);
    assert_int_equal(agent_fleet_state_at(&f, 1022, &rate), AGENT_FLEET_IDLE);
    assert_int_equal(agent_fleet_state_at(&f, 1023, &rate), AGENT_FLEET_SAMPLING);
    /* the agent's clock is 5 s behind the server's: every time moves by -5 */
    agent_fleet_set_plan(&f, &p, 995.0, 995.2);
    assert_int_equal(agent_fleet_state_at(&f, 995, &rate), AGENT_FLEET_IDLE);
    assert_int_equal(agent_fleet_state_at(&f, 1014, &rate), AGENT_FLEET_IDLE);
    assert_int_equal(agent_fleet_next_change(&f, 1000), 1015);
    assert_int_equal(agent_fleet_state_at(&f, 1015, &rate), AGENT_FLEET_SAMPLING);
    assert_true(rate > 49.4 && rate < 49.6);
    assert_int_equal(agent_fleet_state_at(&f, 1074, &rate), AGENT_FLEET_SAMPLING);
    assert_int_equal(agent_fleet_next_change(&f, 1050), 1075);
    /* past the next step: the server has not answered since, unmanaged */
    assert_int_equal(agent_fleet_state_at(&f, 1075, &rate), AGENT_FLEET_UNMANAGED);
    assert_int_equal(agent_fleet_next_change(&f, 1075), INT64_MAX);
    /* a window stopped by the plan ends at its step's boundary, also when
     * the loop noticed 2 s late; one flushed in time ends when flushed */
    assert_int_equal(agent_fleet_window_end(&f, 1070, 1077), 1075);
    assert_int_equal(agent_fleet_window_end(&f, 1073, 1075), 1075);
    assert_int_equal(agent_fleet_window_end(&f, 1010, 1014), 1014);
    assert_int_equal(agent_fleet_window_end(&f, 1010, 1016), 1015);
    /* never empty, and past the plan's end the time it was flushed */
    assert_int_equal(agent_fleet_window_end(&f, 1014, 1014), 1015);
    assert_int_equal(agent_fleet_window_end(&f, 1080, 1083), 1083);
}

/* A plan whose first step has just begun on the server's clock, answered
 * to an agent whose clock still reads the second before (behind by less
 * than the shift's rounding, or a coarse clock a tick late): that second
 * keeps the word the plan before gave it, not the new step's (sampling
 * there put a sixth agent into a period planned for five:
 * test_fleet.sh). */
static void plan_second_before(void **state)
{
    (void)state;
    static const char *TURN =
        "{\"agent\": \"n1\", \"now\": 1020.001, \"period\": 60, \"duty\": 0.1, \"sample\": true,"
        " \"from\": 1020, \"until\": 1080, \"rate\": 0, \"next_sample\": false, \"next_until\": 1140}";
    static const char *ALL =
        "{\"agent\": \"n1\", \"now\": 1020.001, \"period\": 60, \"duty\": 1, \"sample\": true,"
        " \"from\": 1020, \"until\": 1080, \"rate\": 0, \"next_sample\": true, \"next_until\": 1140}";
    agent_fleet_plan before, turn, all;
    char err[200];
    double rate;
    assert_int_equal(agent_fleet_plan_parse(ANSWER, strlen(ANSWER), &before, err, sizeof err), 0);
    assert_int_equal(agent_fleet_plan_parse(TURN, strlen(TURN), &turn, err, sizeof err), 0);
    assert_int_equal(agent_fleet_plan_parse(ALL, strlen(ALL), &all, err, sizeof err), 0);
    agent_fleet f;
    /* idle before, by the plan before: idle in 1019, sampling from 1020 */
    memset(&f, 0, sizeof f);
    agent_fleet_set_plan(&f, &before, 999.9, 1000.0);
    agent_fleet_set_plan(&f, &turn, 1019.7, 1019.71);     /* the server's now is 0.29 s ahead */
    assert_int_equal(agent_fleet_state_at(&f, 1019, &rate), AGENT_FLEET_IDLE);
    assert_int_equal(agent_fleet_state_at(&f, 1020, &rate), AGENT_FLEET_SAMPLING);
    /* sampling before, by the plan before: goes on sampling in 1019 */
    agent_fleet_plan was_sampling = before;
    was_sampling.step[0].sample = 1;
    memset(&f, 0, sizeof f);
    agent_fleet_set_plan(&f, &was_sampling, 999.9, 1000.0);
    agent_fleet_set_plan(&f, &turn, 1019.7, 1019.71);
    assert_int_equal(agent_fleet_state_at(&f, 1019, &rate), AGENT_FLEET_SAMPLING);
    /* no plan before: only a fleet where every agent samples samples */
    memset(&f, 0, sizeof f);
    agent_fleet_set_plan(&f, &turn, 1019.7, 1019.71);
    assert_int_equal(agent_fleet_state_at(&f, 1019, &rate), AGENT_FLEET_IDLE);
    memset(&f, 0, sizeof f);
    agent_fleet_set_plan(&f, &all, 1019.7, 1019.71);
    assert_int_equal(agent_fleet_state_at(&f, 1019, &rate), AGENT_FLEET_SAMPLING);
}

static void ceasing(void **state)
{
    (void)state;
    agent_fleet f;
    memset(&f, 0, sizeof f);
    double rate;
    snprintf(f.last_error, sizeof f.last_error, "push: HTTP 429: slow down");
    /* failures below the share, or too few attempts: no */
    assert_int_equal(agent_fleet_interval(&f, 3, 1), 0);
    assert_int_equal(agent_fleet_interval(&f, 0, 0), 0);
    assert_int_equal(agent_fleet_interval(&f, 2, 0), 0);   /* 1 of 5 */
    assert_int_equal(agent_fleet_state_at(&f, 1, &rate), AGENT_FLEET_UNMANAGED);
    /* 1 + 3 of 5 + 3 = 8: half failed: it ceases, and says why */
    assert_int_equal(agent_fleet_interval(&f, 3, 3), 1);
    assert_int_equal(agent_fleet_state_at(&f, 1, &rate), AGENT_FLEET_CEASED);
    assert_non_null(strstr(f.why, "4 of the last 8 pushes failed"));
    assert_non_null(strstr(f.why, "HTTP 429"));
    /* the cool-off: AGENT_FLEET_COOLOFF intervals, whatever they push */
    for (int i = 1; i < AGENT_FLEET_COOLOFF; i++) {
        assert_int_equal(agent_fleet_interval(&f, 0, 0), 0);
        assert_int_equal(agent_fleet_state_at(&f, 1, &rate), AGENT_FLEET_CEASED);
    }
    assert_int_equal(agent_fleet_interval(&f, 0, 0), -1);
    assert_int_equal(agent_fleet_state_at(&f, 1, &rate), AGENT_FLEET_UNMANAGED);
    assert_string_equal(f.why, "");
    /* the old failures are forgotten: one more failure does not cease */
    assert_int_equal(agent_fleet_interval(&f, 1, 1), 0);
    /* too few attempts, all failed: not yet */
    memset(&f, 0, sizeof f);
    assert_int_equal(agent_fleet_interval(&f, 3, 3), 0);
    assert_int_equal(agent_fleet_interval(&f, 1, 1), 1);
    /* a window slides: old outcomes fall out of it */
    memset(&f, 0, sizeof f);
    assert_int_equal(agent_fleet_interval(&f, 10, 4), 0);
    for (int i = 1; i < AGENT_FLEET_WINDOW; i++) assert_int_equal(agent_fleet_interval(&f, 1, 0), 0);
    assert_int_equal(agent_fleet_interval(&f, 2, 2), 0);   /* the 10 pushes are out: 2 of 9 */
}

static void report_json(void **state)
{
    (void)state;
    agent_labels l = { 0 };
    assert_int_equal(agent_labels_set(&l, "node", "n\"1"), 0);
    assert_int_equal(agent_labels_set(&l, "zone", "eu"), 0);
    agent_fleet_report r = { .id = "n\"1", .version = "0.13", .labels = &l, .state = AGENT_FLEET_IDLE,
                             .frequency = 99, .cpu_seconds = 1.5, .rss_bytes = 4096, .samples = 7,
                             .profiles_pushed = 3, .push_failures = 1, .spool_waiting = 2,
                             .started = 1000, .last_push = 1010, .last_error = "line\nbreak" };
    size_t len;
    char *j = agent_fleet_report_json(&r, &len);
    assert_non_null(j);
    assert_int_equal(strlen(j), len);
    assert_string_equal(j,
        "{\"id\":\"n\\\"1\",\"version\":\"0.13\",\"labels\":{\"node\":\"n\\\"1\",\"zone\":\"eu\"},"
        "\"state\":\"idle\",\"sampling\":false,\"frequency\":99,\"cpu_seconds\":1.500000,\"rss_bytes\":4096,"
        "\"samples\":7,\"profiles_pushed\":3,\"push_failures\":1,\"spool_waiting\":2,"
        "\"started\":1000,\"last_push\":1010,\"last_error\":\"line\\u000abreak\"}");
    free(j);
    agent_labels_free(&l);
    double cpu;
    uint64_t rss;
    agent_fleet_self_usage(&cpu, &rss);
    assert_true(rss > 0);
    assert_true(cpu >= 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_parse),
        cmocka_unit_test(plan_states),
        cmocka_unit_test(plan_second_before),
        cmocka_unit_test(ceasing),
        cmocka_unit_test(report_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
