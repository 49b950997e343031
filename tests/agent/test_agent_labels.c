/* test_agent_labels.c — bounded labels (issue 13): container_id and pod_uid
 * from synthetic /proc/PID/cgroup texts (docker with the cgroupfs and the
 * systemd drivers, containerd and cri-o under Kubernetes, podman, cgroup
 * v1 and v2 lines, no container at all, look-alikes), kernel threads from
 * /proc/PID/stat texts, the service name (executable, command, kernel
 * thread, nothing: "unknown"), a process's whole label set (instance with
 * the pid only for --pid's processes), the grouping key, and the identity
 * of this very process read from /proc. */
#include <string.h>

#include "../unit/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../agent/agent.h"

#define CID "3f4e1a2b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678abcdef"
#define CID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID_DASH "8a3c6f1e-2b4d-4e5f-9a0b-1c2d3e4f5a6b"
#define UID_UNDER "8a3c6f1e_2b4d_4e5f_9a0b_1c2d3e4f5a6b"

static void expect_ids(const char *text, const char *want_cid, const char *want_pod)
{
    char cid[65] = "junk", pod[37] = "junk";
    int found = agent_cgroup_ids(text, cid, pod);
    if (strcmp(cid, want_cid) != 0 || strcmp(pod, want_pod) != 0)
        fail_msg("cgroup \"%s\": expected container_id [%s] pod_uid [%s], got [%s] [%s]",
                 text, want_cid, want_pod, cid, pod);
    assert_int_equal(found, want_cid[0] || want_pod[0]);
}

static void cgroup_docker(void **state)
{
    (void)state;
    /* cgroup v1, cgroupfs driver: /docker/ID on every hierarchy */
    expect_ids("12:pids:/docker/" CID "\n"
               "11:memory:/docker/" CID "\n"
               "4:cpu,cpuacct:/docker/" CID "\n"
               "1:name=systemd:/docker/" CID "\n", CID, "");
    /* cgroup v2, systemd driver */
    expect_ids("0::/system.slice/docker-" CID ".scope\n", CID, "");
    /* hybrid: v1 lines and the v2 line */
    expect_ids("5:memory:/system.slice/docker-" CID ".scope\n"
               "0::/system.slice/docker-" CID ".scope", CID, "");
    /* docker in docker: the inner container */
    expect_ids("0::/docker/" CID2 "/docker/" CID "\n", CID, "");
    /* podman */
    expect_ids("0::/machine.slice/libpod-" CID ".scope/container\n", CID, "");
}

static void cgroup_kubernetes(void **state)
{
    (void)state;
    /* containerd, systemd driver, burstable pod (cgroup v2) */
    expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
               ".slice/cri-containerd-" CID ".scope\n", CID, UID_DASH);
    /* containerd, cgroupfs driver, besteffort pod (cgroup v1) */
    expect_ids("11:cpu,cpuacct:/kubepods/besteffort/pod" UID_DASH "/" CID "\n"
               "3:memory:/kubepods/besteffort/pod" UID_DASH "/" CID "\n", CID, UID_DASH);
    /* a burstable pod, cgroupfs (cgroup v1) */
    expect_ids("9:pids:/kubepods/burstable/pod" UID_DASH "/" CID "\n", CID, UID_DASH);
    /* cri-o, guaranteed pod (no QoS level), systemd driver */
    expect_ids("0::/kubepods.slice/kubepods-pod" UID_UNDER ".slice/crio-" CID ".scope\n", CID, UID_DASH);
    /* cri-o's monitor process: the pod, but not a container of it */
    expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
               ".slice/crio-conmon-" CID ".scope\n", "", UID_DASH);
    /* upper-case hex is written lower-case */
    expect_ids("0::/kubepods/pod8A3C6F1E-2B4D-4E5F-9A0B-1C2D3E4F5A6B/" CID "\n", CID, UID_DASH);
}

static void cgroup_no_container(void **state)
{
    (void)state;
    expect_ids("0::/user.slice/user-1000.slice/session-3.scope\n", "", "");
    expect_ids("0::/\n", "", "");
    expect_ids("12:pids:/\n11:memory:/user.slice\n1:name=systemd:/init.scope\n0::/init.scope\n", "", "");
    expect_ids("", "", "");
    expect_ids("garbage without colons\n", "", "");
    /* look-alikes: 63 and 65 hex digits, a non-hex digit, another prefix */
    expect_ids("0::/docker/" "3f4e1a2b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678abcde" "\n", "", "");
    expect_ids("0::/docker/" CID "0\n", "", "");
    expect_ids("0::/docker/" "3f4e1a2b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678abcdeg" "\n", "", "");
    expect_ids("0::/system.slice/mything-" CID ".scope\n", "", "");
    /* "pod<uid>" outside a kubepods path is no pod */
    expect_ids("0::/system.slice/pod" UID_DASH ".scope\n", "", "");
    /* a pod UID that is too short */
    expect_ids("0::/kubepods/burstable/pod8a3c6f1e-2b4d-4e5f-9a0b-1c2d3e4f5a6/x\n", "", "");
}

static void stat_kernel_threads(void **state)
{
    (void)state;
    /* flags (field 9): kthreadd 0x208040, a user process 0x400100 */
    assert_int_equal(agent_stat_kthread("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 6 0 0"), 1);
    assert_int_equal(agent_stat_kthread("123 (kworker/3:1-events) I 2 0 0 0 -1 69238880 0 0 0 0"), 1);
    assert_int_equal(agent_stat_kthread("4242 (bash) S 4241 4242 4242 34816 4242 4194560 1234 0 0 0"), 0);
    /* a command name with spaces and parentheses: fields count from the last ')' */
    assert_int_equal(agent_stat_kthread("77 (a) S 1 2 3 4 5 2129984 (x) R 1 1 1 0 -1 4194560 0 0"), 0);
    assert_int_equal(agent_stat_kthread("77 (my (prog) 2 3) S 1 1 1 0 -1 2097152 0"), 1);
    assert_int_equal(agent_stat_kthread("no parenthesis here"), -1);
    assert_int_equal(agent_stat_kthread("5 (short) S 1 2"), -1);
}

static void service_names(void **state)
{
    (void)state;
    char buf[256];
    agent_service_name("/usr/bin/python3.11", "python3", 0, buf, sizeof buf);
    assert_string_equal(buf, "python3.11");
    agent_service_name("/opt/app/bin/api-server (deleted)", "api-server", 0, buf, sizeof buf);
    assert_string_equal(buf, "api-server");
    /* the executable wins over a renamed command (prctl, exec -a) */
    agent_service_name("/usr/sbin/nginx", "nginx: worker", 0, buf, sizeof buf);
    assert_string_equal(buf, "nginx");
    /* no executable: the command name */
    agent_service_name("", "postgres", 0, buf, sizeof buf);
    assert_string_equal(buf, "postgres");
    agent_service_name(NULL, "my/prog", 0, buf, sizeof buf);
    assert_string_equal(buf, "my/prog");
    agent_service_name("/", "fallback", 0, buf, sizeof buf);
    assert_string_equal(buf, "fallback");
    /* run from a memfd: a random name, the command says more */
    agent_service_name("/memfd:sealed-91173221a7ea (deleted)", "runc:[2:INIT]", 0, buf, sizeof buf);
    assert_string_equal(buf, "runc:[2:INIT]");
    /* kernel threads: cut at '/' (CPU, worker number, work queue of the moment) */
    agent_service_name("/memfd:sealed-91 (deleted)", "memfd:sealed-91", 0, buf, sizeof buf);
    assert_string_equal(buf, "unknown"); /* seen under --all: a random name each run */
    agent_service_name("", "kworker/3:1-events", 1, buf, sizeof buf);
    assert_string_equal(buf, "kworker");
    agent_service_name("", "kworker/u16:2-events_unbound", 1, buf, sizeof buf);
    assert_string_equal(buf, "kworker");
    agent_service_name("", "ksoftirqd/0", 1, buf, sizeof buf);
    assert_string_equal(buf, "ksoftirqd");
    agent_service_name("", "rcu_preempt", 1, buf, sizeof buf);
    assert_string_equal(buf, "rcu_preempt");
    /* nothing at all: one "unknown" */
    agent_service_name("", "", 0, buf, sizeof buf);
    assert_string_equal(buf, "unknown");
    agent_service_name(NULL, NULL, 0, buf, sizeof buf);
    assert_string_equal(buf, "unknown");
    agent_service_name("", "/x", 1, buf, sizeof buf);
    assert_string_equal(buf, "unknown");
}

static agent_proc_ident ident(pid_t pid, const char *exe, const char *comm, const char *build,
                              const char *cid, const char *pod)
{
    agent_proc_ident id;
    memset(&id, 0, sizeof id);
    id.pid = pid;
    snprintf(id.exe, sizeof id.exe, "%s", exe);
    snprintf(id.comm, sizeof id.comm, "%s", comm);
    snprintf(id.build, sizeof id.build, "%s", build);
    snprintf(id.container_id, sizeof id.container_id, "%s", cid);
    snprintf(id.pod_uid, sizeof id.pod_uid, "%s", pod);
    return id;
}

static void process_labels(void **state)
{
    (void)state;
    agent_labels l = { 0 };
    agent_proc_ident id = ident(4321, "/srv/bin/api", "api", "0a1b2c3d4e5f", CID, UID_DASH);
    /* --all (or a child of a --pid process): no pid anywhere */
    agent_label_opts o = { NULL, "node-7", 0, NULL };
    assert_int_equal(agent_process_labels(&id, &o, &l), 0);
    assert_int_equal(l.n, 6);
    assert_string_equal(agent_labels_get(&l, "service"), "api");
    assert_string_equal(agent_labels_get(&l, "instance"), "node-7");
    assert_string_equal(agent_labels_get(&l, "node"), "node-7");
    assert_string_equal(agent_labels_get(&l, "build"), "0a1b2c3d4e5f");
    assert_string_equal(agent_labels_get(&l, "container_id"), CID);
    assert_string_equal(agent_labels_get(&l, "pod_uid"), UID_DASH);
    for (int i = 0; i < l.n; i++) assert_null(strstr(l.value[i], "4321"));
    agent_labels_free(&l);

    /* named with --pid: its instance says which process */
    o.pid_instance = 1;
    assert_int_equal(agent_process_labels(&id, &o, &l), 0);
    assert_string_equal(agent_labels_get(&l, "instance"), "node-7/4321");
    agent_labels_free(&l);

    /* --service, and --labels over the defaults */
    agent_labels extra = { 0 };
    char err[128];
    assert_int_equal(agent_labels_parse(&extra, "instance=blue,env=prod", err, sizeof err), 0);
    agent_label_opts o2 = { "payments", "node-7", 1, &extra };
    assert_int_equal(agent_process_labels(&id, &o2, &l), 0);
    assert_string_equal(agent_labels_get(&l, "service"), "payments");
    assert_string_equal(agent_labels_get(&l, "instance"), "blue");
    assert_string_equal(agent_labels_get(&l, "env"), "prod");
    agent_labels_free(&l);
    agent_labels_free(&extra);

    /* outside a container, no build-id: those labels are absent */
    id = ident(99, "/bin/true", "true", "", "", "");
    o.pid_instance = 0;
    assert_int_equal(agent_process_labels(&id, &o, &l), 0);
    assert_int_equal(l.n, 3);
    assert_null(agent_labels_get(&l, "build"));
    assert_null(agent_labels_get(&l, "container_id"));
    assert_null(agent_labels_get(&l, "pod_uid"));
    agent_labels_free(&l);

    /* a process nothing named: "unknown", one series per node */
    agent_labels a = { 0 }, b = { 0 };
    agent_proc_ident g1 = ident(31001, "", "", "", "", ""), g2 = ident(31002, "", "", "", "", "");
    assert_int_equal(agent_process_labels(&g1, &o, &a), 0);
    assert_int_equal(agent_process_labels(&g2, &o, &b), 0);
    assert_string_equal(agent_labels_get(&a, "service"), "unknown");
    assert_string_equal(agent_labels_get(&a, "instance"), "node-7");
    char *ka = agent_labels_key(&a), *kb = agent_labels_key(&b);
    assert_string_equal(ka, kb);
    free(ka); free(kb);
    agent_labels_free(&a);
    agent_labels_free(&b);
}

static void labels_key(void **state)
{
    (void)state;
    agent_labels a = { 0 }, b = { 0 }, c = { 0 };
    agent_labels_set(&a, "service", "api");
    agent_labels_set(&a, "node", "n1");
    agent_labels_set(&a, "instance", "n1");
    agent_labels_set(&b, "instance", "n1");        /* the same set, another order */
    agent_labels_set(&b, "service", "api");
    agent_labels_set(&b, "node", "n1");
    agent_labels_set(&c, "service", "api");
    agent_labels_set(&c, "node", "n1");
    agent_labels_set(&c, "instance", "n1/12");     /* another value */
    char *ka = agent_labels_key(&a), *kb = agent_labels_key(&b), *kc = agent_labels_key(&c);
    assert_string_equal(ka, kb);
    assert_string_not_equal(ka, kc);
    /* name and value cannot run into each other */
    agent_labels d = { 0 }, e = { 0 };
    agent_labels_set(&d, "ab", "c");
    agent_labels_set(&e, "a", "bc");
    char *kd = agent_labels_key(&d), *ke = agent_labels_key(&e);
    assert_string_not_equal(kd, ke);
    free(ka); free(kb); free(kc); free(kd); free(ke);
    agent_labels_free(&a); agent_labels_free(&b); agent_labels_free(&c);
    agent_labels_free(&d); agent_labels_free(&e);
}

/* This process, through /proc: the executable's name, not a pid. */
static void identity_of_self(void **state)
{
    (void)state;
    agent_proc_ident id;
    assert_int_equal(agent_proc_identity(getpid(), &id), 0);
    assert_int_equal(id.pid, getpid());
    const char *base = strrchr(id.exe, '/');
    assert_non_null(base);
    assert_string_equal(base + 1, "test_agent_labels");
    assert_string_equal(id.comm, "test_agent_labe");         /* comm: 15 bytes */
    assert_int_equal(id.kthread, 0);
    assert_int_equal(strlen(id.build), 12);                  /* linked with a build-id */
    char svc[256];
    agent_service_name(id.exe, id.comm, id.kthread, svc, sizeof svc);
    assert_string_equal(svc, "test_agent_labels");           /* the exe, not the cut comm */
    /* what the cgroup file says, the parser says */
    char *text, cid[65], pod[37];
    assert_int_equal(agent_read_file("/proc/self/cgroup", &text, NULL), 0);
    agent_cgroup_ids(text, cid, pod);
    free(text);
    assert_string_equal(id.container_id, cid);
    assert_string_equal(id.pod_uid, pod);
    /* a process that does not exist: nothing named */
    assert_int_equal(agent_proc_identity(0x3fffff, &id), -1);
    assert_string_equal(id.exe, "");
    assert_string_equal(id.comm, "");
    /* kthreadd, where this machine shows it (not in a pid namespace) */
    char *stat;
    if (agent_read_file("/proc/2/stat", &stat, NULL) == 0) {
        if (strstr(stat, "(kthreadd)")) {
            assert_int_equal(agent_proc_identity(2, &id), 0);
            assert_int_equal(id.kthread, 1);
            assert_string_equal(id.exe, "");
            agent_service_name(id.exe, id.comm, id.kthread, svc, sizeof svc);
            assert_string_equal(svc, "kthreadd");
        }
        free(stat);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cgroup_docker),
        cmocka_unit_test(cgroup_kubernetes),
        cmocka_unit_test(cgroup_no_container),
        cmocka_unit_test(stat_kernel_threads),
        cmocka_unit_test(service_names),
        cmocka_unit_test(process_labels),
        cmocka_unit_test(labels_key),
        cmocka_unit_test(identity_of_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
