/* test_agent_fold_spool.c — folded aggregation (counts, sorted text, frame
 * cleaning), frames with lines (agent_frame_locate, read back with the
 * server's own parser, storage/frame.h), label parsing and the ingest URL's
 * encoding, gzip, collapsed text from the adapters, and the spool: bounded,
 * oldest dropped and counted, replay in order, a failed send keeping the
 * rest, a reopened spool resuming after the files left behind, located
 * frames kept byte for byte. */
#include <string.h>

#include "../unit/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "../../common/gzip.h"
#include "../../agent/agent.h"
#include "../../storage/frame.h"

static void fold_counts_and_text(void **state)
{
    (void)state;
    agent_fold *f = agent_fold_new();
    agent_fold_add(f, "main;b", 2);
    agent_fold_add(f, "main;a", 1);
    agent_fold_add(f, "main;b", 3);
    agent_fold_add(f, "main;zero", 0);              /* ignored */
    for (int i = 0; i < 1000; i++) {                /* forces growth */
        char s[32];
        snprintf(s, sizeof s, "main;x%04d", i);
        agent_fold_add(f, s, 1);
    }
    assert_int_equal(agent_fold_total(f), 1006);
    assert_int_equal(agent_fold_stacks(f), 1002);
    size_t len;
    char *text = agent_fold_text(f, &len);
    assert_int_equal(strlen(text), len);
    assert_memory_equal(text, "main;a 1\nmain;b 5\nmain;x0000 1\n", 31);
    assert_non_null(strstr(text, "main;x0999 1\n"));
    free(text);
    agent_fold_free(f);
}

static void frame_clean(void **state)
{
    (void)state;
    char a[32] = "operator;x\nnext\x1fy", b[32] = "";
    agent_frame_clean(a);
    agent_frame_clean(b);
    assert_string_equal(a, "operator:x next y");        /* 0x1F: not a location */
    assert_string_equal(b, "[unknown]");
}

/* Parses buf with storage/frame.h, as ingest and the readers do. */
static frame_parts parts_of(const char *buf)
{
    frame_parts p;
    frame_parse(buf, (uint32_t)strlen(buf), &p);
    return p;
}

static void assert_part(const char *s, uint32_t len, const char *want)
{
    assert_int_equal(len, strlen(want));
    assert_memory_equal(s, want, len);
}

static void frame_locate(void **state)
{
    (void)state;
    char buf[AGENT_FRAME_MAX] = "work_a";
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "/src/w.c", 73, "/bin/w", "89ab01"), 1);
    assert_string_equal(buf, "work_a\x1f/src/w.c\x1f" "73\x1f/bin/w\x1f" "89ab01");
    frame_parts p = parts_of(buf);
    assert_true(p.located);
    assert_part(p.name, p.name_len, "work_a");
    assert_part(p.file, p.file_len, "/src/w.c");
    assert_int_equal(p.line, 73);
    assert_part(p.mapping, p.mapping_len, "/bin/w");
    assert_part(p.build_id, p.build_id_len, "89ab01");
    assert_int_equal(agent_frame_name_len(buf), 6);
    assert_int_equal(frame_name_len(buf, (uint32_t)strlen(buf)), 6);
    /* located once: a second location is refused */
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "/x.c", 1, "", ""), 0);
    assert_string_equal(buf, "work_a\x1f/src/w.c\x1f" "73\x1f/bin/w\x1f" "89ab01");

    /* no mapping, no build-id: the short form */
    snprintf(buf, sizeof buf, "f");
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "a.c", 1, NULL, NULL), 1);
    assert_string_equal(buf, "f\x1f" "a.c\x1f" "1");
    p = parts_of(buf);
    assert_true(p.located && p.line == 1 && p.mapping_len == 0 && p.build_id_len == 0);
    /* a mapping without build-id keeps both fields, the last one empty */
    snprintf(buf, sizeof buf, "f");
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "a.c", 2, "/bin/x", ""), 1);
    assert_string_equal(buf, "f\x1f" "a.c\x1f" "2\x1f/bin/x\x1f");

    /* fields stay one folded frame: ';', line breaks, 0x1F replaced */
    snprintf(buf, sizeof buf, "g");
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "/a;b\nc\x1f.c", 5, "/m;n\r", "ff"), 1);
    assert_string_equal(buf, "g\x1f/a:b c .c\x1f" "5\x1f/m:n \x1f" "ff");
    assert_null(strchr(buf, ';'));

    /* nothing to give: buf unchanged */
    const char *none[][2] = { { "", "1" }, { "a.c", "0" }, { "a.c", "100000000" },
                              { "\xff\xfe.c", "1" }, { "\xc0\xaf.c", "1" } };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        snprintf(buf, sizeof buf, "h");
        assert_int_equal(agent_frame_locate(buf, sizeof buf, none[i][0],
                                            (unsigned)strtoul(none[i][1], NULL, 10), "/m", "aa"), 0);
        assert_string_equal(buf, "h");
    }
    snprintf(buf, sizeof buf, "h");
    assert_int_equal(agent_frame_locate(buf, sizeof buf, NULL, 3, "/m", "aa"), 0);
    assert_string_equal(buf, "h");
    /* UTF-8 file names are fine */
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "/src/caf\xc3\xa9.c", 3, "/m", "aa"), 1);
    assert_string_equal(buf, "h\x1f/src/caf\xc3\xa9.c\x1f" "3\x1f/m\x1f" "aa");
    /* a file longer than a field may be: none */
    char longf[AGENT_LOCATION_FIELD_MAX + 2];
    memset(longf, 'a', sizeof longf - 1);
    longf[sizeof longf - 1] = 0;
    snprintf(buf, sizeof buf, "h");
    assert_int_equal(agent_frame_locate(buf, sizeof buf, longf, 3, "/m", "aa"), 0);
    /* a bad mapping or build-id is left out, the file and line kept */
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "a.c", 3, "/m\xff", "not-hex"), 1);
    assert_string_equal(buf, "h\x1f" "a.c\x1f" "3");
    snprintf(buf, sizeof buf, "h");
    assert_int_equal(agent_frame_locate(buf, sizeof buf, "a.c", 3, longf, "ab"), 1);
    assert_string_equal(buf, "h\x1f" "a.c\x1f" "3\x1f\x1f" "ab");
    /* too small: the name alone */
    char small[16] = "name";
    assert_int_equal(agent_frame_locate(small, sizeof small, "/src/a.c", 12, "/b", "cd"), 0);
    assert_string_equal(small, "name");
    assert_int_equal(agent_frame_locate(small, sizeof small, "a.c", 12, NULL, NULL), 1);
    assert_string_equal(small, "name\x1f" "a.c\x1f" "12");   /* 11 bytes and the NUL fit */
    /* the longest location the limits allow fits AGENT_FRAME_MAX and the
     * server's bound (a name of 4096 bytes, 2 * 1024 + 160 for the rest) */
    char name[AGENT_FRAME_MAX];
    memset(name, 'n', AGENT_NAME_MAX - 1);
    name[AGENT_NAME_MAX - 1] = 0;
    longf[AGENT_LOCATION_FIELD_MAX] = 0;
    char bid[129];
    memset(bid, 'f', 128);
    bid[128] = 0;
    assert_int_equal(agent_frame_locate(name, sizeof name, longf, AGENT_LINE_MAX, longf, bid), 1);
    assert_true(strlen(name) < AGENT_FRAME_MAX);
    assert_true(strlen(name) - (AGENT_NAME_MAX - 1) <= 2 * 1024 + 160);
}

static void labels_and_url(void **state)
{
    (void)state;
    agent_labels l = { 0 };
    char err[256];
    assert_int_equal(agent_labels_set(&l, "service", "my svc"), 0);
    assert_int_equal(agent_labels_set(&l, "instance", "host/42"), 0);
    assert_int_equal(agent_labels_parse(&l, "env=prod,region=eu-west,instance=i-1", err, sizeof err), 0);
    assert_string_equal(agent_labels_get(&l, "instance"), "i-1");   /* replaced */
    assert_string_equal(agent_labels_get(&l, "env"), "prod");
    char *url = agent_ingest_url("http://h:4040/", &l, 99, 1700000000, 1700000010, 0);
    assert_string_equal(url, "http://h:4040/api/v1/ingest?service=my%20svc&instance=i-1&"
                             "env=prod&region=eu-west&rate=99&from=1700000000&until=1700000010");
    free(url);
    url = agent_ingest_url("http://h:4040", &l, 99, 1700000000, 1700000010, 1);
    assert_string_equal(url, "http://h:4040/api/v1/ingest?service=my%20svc&instance=i-1&"
                             "env=prod&region=eu-west&rate=99&from=1700000000&until=1700000010"
                             "&locations=1");
    free(url);
    char *e = agent_urlencode("a&b=c/d;é");
    assert_string_equal(e, "a%26b%3Dc%2Fd%3B%C3%A9");
    free(e);
    assert_int_equal(agent_labels_parse(&l, "novalue", err, sizeof err), -1);
    assert_err_contains(err, "not name=value");
    assert_int_equal(agent_labels_parse(&l, "9x=1", err, sizeof err), -1);
    assert_err_contains(err, "bad label name '9x'");
    assert_int_equal(agent_labels_parse(&l, "k=", err, sizeof err), -1);
    assert_err_contains(err, "empty value");
    assert_int_equal(agent_labels_parse(&l, "rate=5", err, sizeof err), -1);
    assert_err_contains(err, "ingest parameter");
    assert_int_equal(agent_labels_parse(&l, "locations=1", err, sizeof err), -1);
    assert_err_contains(err, "'locations' is an ingest parameter");
    agent_labels_free(&l);
}

static void gzip_roundtrip(void **state)
{
    (void)state;
    const char *body = "main;a 1\nmain;b 2\n";
    unsigned char *gz, out[64];
    size_t gzlen;
    assert_int_equal(gzip_compress(body, strlen(body), &gz, &gzlen), 0);
    assert_true(gz[0] == 0x1f && gz[1] == 0x8b);
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = gz; z.avail_in = (uInt)gzlen;
    z.next_out = out; z.avail_out = sizeof out;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.total_out, strlen(body));
    assert_memory_equal(out, body, strlen(body));
    inflateEnd(&z);
    free(gz);
}

static void collapsed_parse(void **state)
{
    (void)state;
    agent_fold *f = agent_fold_new();
    size_t n = agent_collapsed_parse("<module>;main (app.py:3);work (app.py:9) 12\r\n"
                                     "garbage line\n\nmain;idle 3\nbad;count x\nmain;idle 2", f);
    assert_int_equal(n, 3);
    assert_int_equal(agent_fold_total(f), 17);
    char *text = agent_fold_text(f, NULL);
    assert_string_equal(text, "<module>;main (app.py:3);work (app.py:9) 12\nmain;idle 5\n");
    free(text);
    agent_fold_free(f);
    /* a tool's frames are names: 0x1F would read as a location */
    f = agent_fold_new();
    assert_int_equal(agent_collapsed_parse("main;odd\x1fname\x1f" "7 4\n", f), 1);
    text = agent_fold_text(f, NULL);
    assert_string_equal(text, "main;odd name 7 4\n");
    free(text);
    agent_fold_free(f);
}

/* Frames that differ only in line are different stacks for the agent;
 * their name parts are the function. */
static void fold_located_stacks(void **state)
{
    (void)state;
    agent_fold *f = agent_fold_new();
    agent_fold_add(f, "main\x1fm.c\x1f" "3;work\x1fw.c\x1f" "10", 2);
    agent_fold_add(f, "main\x1fm.c\x1f" "3;work\x1fw.c\x1f" "11", 1);
    agent_fold_add(f, "main\x1fm.c\x1f" "3;work\x1fw.c\x1f" "10", 1);
    assert_int_equal(agent_fold_stacks(f), 2);
    size_t len;
    char *text = agent_fold_text(f, &len);
    assert_string_equal(text, "main\x1fm.c\x1f" "3;work\x1fw.c\x1f" "10 3\n"
                              "main\x1fm.c\x1f" "3;work\x1fw.c\x1f" "11 1\n");
    assert_int_equal(agent_folded_total(text, len), 4);   /* line numbers are not counts */
    free(text);
    agent_fold_free(f);
}

/* ---- spool ---- */

typedef struct { char urls[16][64]; char bodies[16][64]; int n; int fail_after; } sink;

static int sink_send(const char *url, const void *body, size_t len, void *arg)
{
    sink *s = arg;
    if (s->fail_after >= 0 && s->n >= s->fail_after) return -1;
    snprintf(s->urls[s->n], sizeof s->urls[s->n], "%s", url);
    snprintf(s->bodies[s->n], sizeof s->bodies[s->n], "%.*s", (int)len, (const char *)body);
    s->n++;
    return 0;
}

static char tmpdir[64];

static int spool_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test-agent-spool-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int spool_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void spool_replay_in_order(void **state)
{
    (void)state;
    agent_spool s;
    char err[256], dir[128], url[32], body[32];
    snprintf(dir, sizeof dir, "%s/spool", tmpdir);       /* created by open */
    assert_int_equal(agent_spool_open(&s, dir, 1 << 20, err, sizeof err), 0);
    for (int i = 0; i < 12; i++) {                       /* > 10: name order must be numeric */
        snprintf(url, sizeof url, "http://h/u%d", i);
        snprintf(body, sizeof body, "main;f%d %d\n", i, i + 1);
        assert_int_equal(agent_spool_put(&s, url, body, strlen(body), err, sizeof err), 0);
    }
    assert_int_equal(agent_spool_count(&s), 12);
    sink k = { .fail_after = 5 };
    assert_int_equal(agent_spool_replay(&s, sink_send, &k), 5);   /* server goes away */
    assert_int_equal(agent_spool_count(&s), 7);
    k.fail_after = -1;
    assert_int_equal(agent_spool_replay(&s, sink_send, &k), 7);
    assert_int_equal(k.n, 12);
    for (int i = 0; i < 12; i++) {
        snprintf(url, sizeof url, "http://h/u%d", i);
        snprintf(body, sizeof body, "main;f%d %d\n", i, i + 1);
        assert_string_equal(k.urls[i], url);
        assert_string_equal(k.bodies[i], body);
    }
    assert_int_equal(agent_spool_count(&s), 0);
    assert_int_equal(s.dropped, 0);
    /* located frames and their URL come back byte for byte */
    const char located[] = "main\x1f/s/m.c\x1f" "3\x1f/b/m\x1f" "ab;work\x1f/s/w.c\x1f" "9 2\n";
    assert_int_equal(agent_spool_put(&s, "http://h/u?locations=1", located, strlen(located),
                                     err, sizeof err), 0);
    agent_spool_close(&s);
    assert_int_equal(agent_spool_open(&s, dir, 1 << 20, err, sizeof err), 0);
    sink k2 = { .fail_after = -1 };
    assert_int_equal(agent_spool_replay(&s, sink_send, &k2), 1);
    assert_string_equal(k2.urls[0], "http://h/u?locations=1");
    assert_string_equal(k2.bodies[0], located);
    agent_spool_close(&s);
}

static void spool_bounded_oldest_dropped(void **state)
{
    (void)state;
    agent_spool s;
    char err[256], body[101];
    memset(body, 'x', 100);
    body[100] = 0;
    /* each file: "http://h/uN\n" (12 bytes) + 100 = 112; 400 bytes hold 3 */
    assert_int_equal(agent_spool_open(&s, tmpdir, 400, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) {
        char url[32];
        snprintf(url, sizeof url, "http://h/u%d", i);
        assert_int_equal(agent_spool_put(&s, url, body, 100, err, sizeof err), 0);
    }
    assert_int_equal(agent_spool_count(&s), 3);
    assert_int_equal(s.dropped, 3);
    assert_int_equal(s.dropped_bytes, 3 * 112);
    agent_spool_close(&s);
    /* a new agent on the same directory resumes after what is left */
    assert_int_equal(agent_spool_open(&s, tmpdir, 400, err, sizeof err), 0);
    assert_int_equal(s.seq, 6);
    assert_int_equal(agent_spool_put(&s, "http://h/u6", body, 100, err, sizeof err), 0);
    assert_int_equal(s.dropped, 1);
    sink k = { .fail_after = -1 };
    assert_int_equal(agent_spool_replay(&s, sink_send, &k), 3);
    assert_string_equal(k.urls[0], "http://h/u4");                /* oldest survivors first */
    assert_string_equal(k.urls[1], "http://h/u5");
    assert_string_equal(k.urls[2], "http://h/u6");
    /* a profile larger than the whole bound is refused and counted */
    char big[500];
    memset(big, 'y', sizeof big);
    assert_int_equal(agent_spool_put(&s, "http://h/big", big, sizeof big, err, sizeof err), -1);
    assert_err_contains(err, "larger than the whole spool");
    assert_int_equal(s.dropped, 2);
    agent_spool_close(&s);
}

static void spool_bad_dir(void **state)
{
    (void)state;
    agent_spool s;
    char err[256];
    assert_int_equal(agent_spool_open(&s, "/proc/nonexistent/spool", 1000, err, sizeof err), -1);
    assert_err_contains(err, "--spool /proc/nonexistent/spool");
}

/* A window estimated from part of its time, scaled to the whole. */
static void fold_scale(void **state)
{
    (void)state;
    agent_fold *f = agent_fold_new();
    agent_fold_add(f, "main;a", 127);
    agent_fold_add(f, "main;b", 254);
    agent_fold_add(f, "main;c", 1);
    agent_fold_scale(f, 20.0);
    assert_int_equal(agent_fold_total(f), 127 * 20 + 254 * 20 + 20);
    agent_fold_scale(f, 0.001);                  /* never rounded to nothing */
    char *t = agent_fold_text(f, NULL);
    assert_non_null(strstr(t, "main;a 3\n"));
    assert_non_null(strstr(t, "main;b 5\n"));
    assert_non_null(strstr(t, "main;c 1"));
    free(t);
    agent_fold_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fold_scale),
        cmocka_unit_test(fold_counts_and_text),
        cmocka_unit_test(frame_clean),
        cmocka_unit_test(frame_locate),
        cmocka_unit_test(fold_located_stacks),
        cmocka_unit_test(labels_and_url),
        cmocka_unit_test(gzip_roundtrip),
        cmocka_unit_test(collapsed_parse),
        cmocka_unit_test_setup_teardown(spool_replay_in_order, spool_setup, spool_teardown),
        cmocka_unit_test_setup_teardown(spool_bounded_oldest_dropped, spool_setup, spool_teardown),
        cmocka_unit_test(spool_bad_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
