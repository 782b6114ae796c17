/*
 * test_watchset.c - data watches: the debug registers' owner (ptrace/watch/hwwatch.c)
 * and the collector's watch slots on top of it (ptrace/debugger/watchset.c), on real
 * processes.
 *
 * hwwatch directly, on a forked child of this test that it seizes itself
 * (tests/unit/children.h): the registers a stopped thread gets (DR0-DR3 the
 * addresses, DR7 their enable, length and access bits, read back with
 * PTRACE_PEEKUSER), the fifth watch refused with WATCH_SLOTS_FULL naming the four,
 * a disarmed slot cleared and taken again, a watch ending with its process; and, where
 * the machine raises debug traps, a write by the child recorded as a watch_hit.
 *
 * watchset through a real tracer on config_overwrite (tests/fixtures/
 * config_overwrite.c: g_config, a 32-byte struct; SIGUSR1 resets max_retries, then a
 * strcpy past g_config.name overwrites it; SIGUSR2 reads it): the checks made before
 * anything is armed, with their codes and sentences (a struct or an array too large,
 * with the fields or the element to watch instead; sizes; alignment; unmapped or
 * unknown targets; a pid not of the session), then set, list, value and clear, four
 * slots and a fifth refused, and the hits of writes and reads with the frame of the
 * program's own code that made them.
 *
 * Debug traps: some hypervisors accept the debug registers and never raise their
 * exception (ptrace/watch/hwwatch_probe.c, tests/fixtures/debug_traps.c). The checks
 * and the register writes run everywhere; what needs a hit is skipped (cmocka skip(),
 * with a line saying so) where hwwatch_traps_work() says no, and what watchset arms
 * answers WATCH_UNSUPPORTED there instead, which is asserted. Where traps work, the
 * test also runs itself again with STROBE_NO_DEBUG_TRAPS=1 (the probe's override) to
 * check that answer, and that the checks still come first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace/debugger/watchset.h"
#include "ptrace/watch/hwwatch.h"
#include "ptrace/vars/varres.h"
#include "children.h"
#include "fixtures.h"
#include "traced.h"

static bool traps(void)
{
    bool yes = hwwatch_traps_work();
    if (!yes)
        fprintf(stderr, "debug-register traps are never delivered on this machine "
                "(hwwatch_traps_work): a test that needs a hit is skipped\n");
    return yes;
}

/* ---- hwwatch on a child of this test ------------------------------------------------- */

/* What the children write: byte '0' + i makes a child store 42 + i in words[i]. */
static volatile long words[4] __attribute__((aligned(8)));

static __attribute__((noinline)) void write_word(char c)
{
    if (c >= '0' && c <= '3')
        words[c - '0'] = 42 + (c - '0');
}

static unsigned long peek_dr(pid_t pid, int i)
{
    errno = 0;
    long v = ptrace(PTRACE_PEEKUSER, pid, (void *)(offsetof(struct user, u_debugreg) +
                                                   (size_t)i * sizeof(long)), 0);
    assert_int_equal(errno, 0);
    return (unsigned long)v;
}

static struct hwwatch_spec word_spec(int i, size_t size, bool readwrite, pid_t pid)
{
    struct hwwatch_spec s = {.pid = pid, .address = (uint64_t)(uintptr_t)&words[i],
                             .size = size, .readwrite = readwrite,
                             .type = varres_hint_type(MEMH_I64)};
    snprintf(s.label, sizeof s.label, "words[%d]", i);
    snprintf(s.type_name, sizeof s.type_name, "long");
    return s;
}

/* DR7's bits for slot i: enabled (local), access (1: writes, 3: reads and writes) and
 * length (0: 1 byte, 1: 2, 3: 4, 2: 8). */
static unsigned long dr7_slot(int i, bool readwrite, size_t size)
{
    unsigned long len = size == 1 ? 0 : size == 2 ? 1 : size == 8 ? 2 : 3;
    return 1ul << (2 * i) | ((readwrite ? 3ul : 1ul) | len << 2) << (16 + 4 * i);
}

static void test_registers_slots_and_their_end(void **state)
{
    (void)state;
    struct traced tr; /* its ring only */
    traced_init(&tr);
    struct child c = child_start_with(write_word);
    seize_stopped(&c);
    struct hwwatch_config cfg = {.sink = traced_sink(&tr)};
    struct hwwatch *w = hwwatch_new(&cfg);
    assert_non_null(w);
    struct strobe_error e = {0};
    static const size_t sizes[4] = {8, 4, 2, 1};
    unsigned long dr7 = 0;
    for (int i = 0; i < 4; i++) {
        struct hwwatch_spec s = word_spec(i, sizes[i], i == 1, c.pid);
        assert_int_equal(hwwatch_arm(w, &s, &c.pid, 1, &e), i + 1);
        dr7 |= dr7_slot(i, i == 1, sizes[i]);
    }
    assert_int_equal(hwwatch_on_stop(w, c.pid, c.pid), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(peek_dr(c.pid, i), (uintptr_t)&words[i]);
    assert_int_equal(peek_dr(c.pid, 7), dr7);

    struct hwwatch_spec fifth = word_spec(0, 4, false, c.pid);
    snprintf(fifth.label, sizeof fifth.label, "fifth");
    assert_int_equal(hwwatch_arm(w, &fifth, &c.pid, 1, &e), -1);
    assert_int_equal(e.code, ERR_WATCH_SLOTS_FULL);
    char want[512];
    snprintf(want, sizeof want, "all 4 hardware watch slots (x86 debug registers DR0-DR3) are "
             "in use: #1 words[0] (write, pid %d), #2 words[1] (readwrite, pid %d), #3 "
             "words[2] (write, pid %d), #4 words[3] (write, pid %d). Remove one (unwatch with "
             "its watchId) to watch fifth.", (int)c.pid, (int)c.pid, (int)c.pid, (int)c.pid);
    assert_string_equal(e.msg, want);
    struct hwwatch_info list[HWWATCH_SLOTS + HWWATCH_ENDED_KEPT];
    assert_int_equal(hwwatch_list(w, list, 12), 4);
    char value[64];
    assert_true(hwwatch_value(w, 3, c.pid, value, sizeof value));
    assert_string_equal(value, "0");

    /* Slot 1 goes: a stopped thread loses it; the next watch takes it. */
    struct hwwatch_info removed;
    assert_true(hwwatch_disarm(w, 2, &removed));
    assert_string_equal(removed.spec.label, "words[1]");
    assert_false(hwwatch_disarm(w, 2, &removed));
    assert_int_equal(hwwatch_on_stop(w, c.pid, c.pid), 0);
    dr7 &= ~dr7_slot(1, true, 4);
    assert_int_equal(peek_dr(c.pid, 7), dr7);
    assert_int_equal(hwwatch_arm(w, &fifth, &c.pid, 1, &e), 5);
    assert_int_equal(hwwatch_on_stop(w, c.pid, c.pid), 0);
    assert_int_equal(peek_dr(c.pid, 1), (uintptr_t)&words[0]);
    assert_int_equal(peek_dr(c.pid, 7), dr7 | dr7_slot(1, false, 4));

    /* Its process gone, every watch ends, with the reason, and stays listed. */
    hwwatch_on_exit(w, c.pid, true);
    int n = hwwatch_list(w, list, 12);
    assert_int_equal(n, 4);
    snprintf(want, sizeof want, "process %d exited", (int)c.pid);
    for (int i = 0; i < n; i++) {
        assert_false(list[i].active);
        assert_string_equal(list[i].ended, want);
    }
    assert_true(hwwatch_disarm(w, 5, &removed)); /* an ended one can be removed */
    assert_int_equal(hwwatch_list(w, list, 12), 3);
    hwwatch_free(w);
    child_kill(&c);
    traced_release(&tr);
}

/* Waits for c's next stop; the signal. */
static int child_stop(const struct child *c)
{
    int status;
    assert_int_equal(waitpid(c->pid, &status, __WALL), c->pid);
    assert_true(WIFSTOPPED(status));
    return WSTOPSIG(status);
}

static void test_a_write_of_the_child_is_a_hit(void **state)
{
    (void)state;
    if (!traps())
        skip();
    struct traced tr;
    traced_init(&tr);
    struct child c = child_start_with(write_word);
    seize_stopped(&c);
    struct hwwatch_config cfg = {.sink = traced_sink(&tr)};
    struct hwwatch *w = hwwatch_new(&cfg);
    struct strobe_error e = {0};
    struct hwwatch_spec s = word_spec(2, 8, false, c.pid);
    assert_int_equal(hwwatch_arm(w, &s, &c.pid, 1, &e), 1);
    assert_int_equal(hwwatch_on_stop(w, c.pid, c.pid), 0);
    assert_int_equal(ptrace(PTRACE_CONT, c.pid, 0, 0), 0);
    assert_int_equal(write(c.fd, "2", 1), 1);
    assert_int_equal(child_stop(&c), SIGTRAP);
    assert_true(hwwatch_on_trap(w, c.pid, c.pid));
    traced_drain(&tr);
    assert_int_equal(traced_count(&tr, EV_WATCH_HIT), 1);
    const struct tev *ev = traced_event(&tr, EV_WATCH_HIT, 0);
    assert_int_equal(ev->pid, c.pid);
    assert_int_equal(strncmp(ev->text, "words[2]: 0 -> 44 (write in write_word", 38), 0);
    assert_string_equal(ev->function, "write_word");
    assert_non_null(strstr(ev->data, "\"oldValue\":0,\"newValue\":44,\"changed\":true,"
                                     "\"hits\":1"));
    struct hwwatch_info list[4];
    assert_int_equal(hwwatch_list(w, list, 4), 1);
    assert_int_equal(list[0].hits, 1);
    /* The write of another word is no hit: the child reads on, untouched. */
    assert_int_equal(ptrace(PTRACE_CONT, c.pid, 0, 0), 0);
    assert_int_equal(write(c.fd, "1", 1), 1);
    assert_int_equal(write(c.fd, "2", 1), 1);
    assert_int_equal(child_stop(&c), SIGTRAP);
    assert_true(hwwatch_on_trap(w, c.pid, c.pid));
    traced_drain(&tr);
    assert_int_equal(traced_count(&tr, EV_WATCH_HIT), 2);
    ev = traced_event(&tr, EV_WATCH_HIT, 1);
    assert_int_equal(strncmp(ev->text, "words[2]: 44 -> 44 (write of the same value", 43), 0);
    hwwatch_free(w);
    child_kill(&c);
    traced_release(&tr);
}

/* ---- watchset through a tracer ----------------------------------------------------------- */

struct target {
    struct traced tr;
    uint64_t config, retries;    /* &g_config, &g_config.max_retries */
};

static void target_start(struct target *g)
{
    traced_start(&g->tr, "config_overwrite", NULL, NULL);
    char line[256];
    traced_line(&g->tr, line, sizeof line);
    assert_int_equal(sscanf(line, "ready config=0x%" SCNx64 " max_retries=0x%" SCNx64,
                            &g->config, &g->retries), 2);
    assert_int_equal(g->retries, g->config + 16);
}

static struct collector_watch_request on_var(const char *v)
{
    return (struct collector_watch_request){.variable = v};
}

static struct collector_watch_request on_addr(uint64_t a, size_t size, enum memory_hint h)
{
    return (struct collector_watch_request){.address = a, .size = size, .hint = h};
}

/* Refused with code and exactly the sentence want. */
static void refused(struct target *g, const struct collector_watch_request *req,
                    enum err_code code, const char *want)
{
    struct collector_watch_info info;
    struct strobe_error e = {0};
    assert_int_equal(watchset_set(g->tr.t, req, &info, &e), -1);
    if (e.code != code)
        fail_msg("%s (%s), not %s", err_code_name(e.code), e.msg, err_code_name(code));
    assert_string_equal(e.msg, want);
}

/* Checks that never need a trap: they run everywhere, before the machine is asked. */
static void check_refusals(struct target *g)
{
    char want[1024];
    uint64_t c = g->config;
    struct collector_watch_request r = on_var("g_config");
    snprintf(want, sizeof want, "g_config is 32 bytes (struct config); a hardware watch covers "
             "at most 8 aligned bytes. Watch one of its fields instead: g_config.name "
             "(char[16], 16 bytes at 0x%" PRIx64 "), g_config.max_retries (int, 4 bytes at "
             "0x%" PRIx64 "), g_config.timeout_ms (int, 4 bytes at 0x%" PRIx64 "), "
             "g_config.backoff (double, 8 bytes at 0x%" PRIx64 "); or give size 1, 2, 4 or 8 "
             "to watch its first bytes at 0x%" PRIx64 ".", c, c + 16, c + 20, c + 24, c);
    refused(g, &r, ERR_WATCH_TOO_LARGE, want);
    r = on_var("g_config.name");
    snprintf(want, sizeof want, "g_config.name is 16 bytes (char[16]); a hardware watch covers "
             "at most 8 aligned bytes. Watch one element instead: g_config.name[0] (char, 1 "
             "bytes at 0x%" PRIx64 "); or give size 1, 2, 4 or 8 to watch its first bytes at "
             "0x%" PRIx64 ".", c, c);
    refused(g, &r, ERR_WATCH_TOO_LARGE, want);
    r = on_var("g_config.max_retries");
    r.size = 8;
    refused(g, &r, ERR_VALIDATION, "size 8 is larger than g_config.max_retries itself (4 bytes, "
            "int).");
    r = on_var("g_no_such_global");
    struct collector_watch_info info;
    struct strobe_error e = {0};
    assert_int_equal(watchset_set(g->tr.t, &r, &info, &e), -1);
    assert_int_equal(e.code, ERR_VARIABLE_NOT_FOUND);

    r = on_addr(c, 0, MEMH_NONE);
    refused(g, &r, ERR_VALIDATION, "an address watch needs a size (1, 2, 4 or 8) or a type "
            "(i32, u64, f64, pointer, ...).");
    r = on_addr(c, 16, MEMH_NONE);
    snprintf(want, sizeof want, "16 bytes at 0x%" PRIx64 ": a hardware watch covers at most 8 "
             "aligned bytes; watch the 1, 2, 4 or 8 bytes that matter (one field's address).",
             c);
    refused(g, &r, ERR_WATCH_TOO_LARGE, want);
    r = on_addr(c, 3, MEMH_NONE);
    snprintf(want, sizeof want, "0x%" PRIx64 " is 3 bytes: a hardware watch is 1, 2, 4 or 8 "
             "bytes; give size 1, 2, 4 or 8.", c);
    refused(g, &r, ERR_VALIDATION, want);
    r = on_addr(c, 4, MEMH_F64);
    refused(g, &r, ERR_VALIDATION, "type f64 is 8 bytes but size is 4.");
    r = on_addr(g->retries + 2, 4, MEMH_NONE);
    snprintf(want, sizeof want, "0x%" PRIx64 " at 0x%" PRIx64 " is not 4-byte aligned: x86 "
             "debug registers watch 1, 2, 4 or 8 bytes at an address aligned to that size. "
             "Watch size 2 at 0x%" PRIx64 " instead (the aligned part that holds its first "
             "byte), or the field that matters.", g->retries + 2, g->retries + 2,
             g->retries + 2);
    refused(g, &r, ERR_VALIDATION, want);
    r = on_addr(0x10, 8, MEMH_NONE);
    snprintf(want, sizeof want, "0x10: 0x10 is not mapped in process %d (nothing can be watched "
             "there).", (int)g->tr.pid);
    refused(g, &r, ERR_MEMORY_UNREADABLE, want);
    r = on_var("g_config.max_retries");
    r.pid = 1;
    refused(g, &r, ERR_VALIDATION, "pid 1 is not a live process of this session.");
    struct collector_watch_info none[2];
    assert_int_equal(watchset_list(g->tr.t, none, 2), 0);
}

static const char unsupported[] =
    "this machine never raises the x86 debug registers' traps (a hypervisor that accepts "
    "them and ignores them), so a watch on g_config.max_retries would see no write.";

/* Where traps never come, a watch that passes the checks is refused (asserted here)
 * and the test ends, its program with it; false then. */
static bool armable(struct target *g, const struct collector_watch_request *r)
{
    if (hwwatch_traps_work())
        return true;
    refused(g, r, ERR_WATCH_UNSUPPORTED, unsupported);
    traced_end(&g->tr);
    return false;
}

static void test_refusals_before_anything_is_armed(void **state)
{
    (void)state;
    static struct target g;
    target_start(&g);
    check_refusals(&g);
    traced_end(&g.tr);
}

static void test_set_list_and_clear(void **state)
{
    (void)state;
    static struct target g;
    target_start(&g);
    struct collector_watch_request r = on_var("g_config.max_retries");
    struct collector_watch_info info;
    struct strobe_error e = {0};
    if (!armable(&g, &r))
        return;
    assert_int_equal(watchset_set(g.tr.t, &r, &info, &e), 0);
    assert_true(info.id > 0);
    assert_string_equal(info.label, "g_config.max_retries");
    assert_int_equal(info.pid, g.tr.pid);
    assert_int_equal(info.address, g.retries);
    assert_int_equal(info.size, 4);
    assert_string_equal(info.type, "int");
    assert_string_equal(info.value, "3");
    assert_false(info.readwrite);
    assert_false(info.ended);
    assert_int_equal(info.hits, 0);
    /* The first 2 bytes of the double after it, by address. */
    struct collector_watch_request a = on_addr(g.config + 24, 2, MEMH_NONE);
    a.readwrite = true;
    struct collector_watch_info second;
    assert_int_equal(watchset_set(g.tr.t, &a, &second, &e), 0);
    char label[32];
    snprintf(label, sizeof label, "0x%" PRIx64, g.config + 24);
    assert_string_equal(second.label, label);
    assert_string_equal(second.type, "u16");
    assert_true(second.readwrite);
    assert_int_not_equal(second.id, info.id);

    struct collector_watch_info list[4];
    assert_int_equal(watchset_list(g.tr.t, list, 4), 2);
    assert_int_equal(list[0].id, info.id);
    assert_string_equal(list[0].value, "3");
    assert_int_equal(watchset_clear(g.tr.t, info.id, &e), 0);
    assert_int_equal(watchset_list(g.tr.t, list, 4), 1);
    assert_int_equal(list[0].id, second.id);
    assert_int_equal(watchset_clear(g.tr.t, info.id, &e), -1);
    assert_int_equal(e.code, ERR_VALIDATION);
    char want[64];
    snprintf(want, sizeof want, "there is no watch %d in this session.", info.id);
    assert_string_equal(e.msg, want);
    assert_int_equal(watchset_clear(g.tr.t, second.id, &e), 0);
    assert_int_equal(watchset_list(g.tr.t, list, 4), 0);
    traced_end(&g.tr);
}

static void test_four_slots_then_full(void **state)
{
    (void)state;
    static struct target g;
    target_start(&g);
    struct collector_watch_request r[5] = {
        on_var("g_config.max_retries"), on_var("g_config.timeout_ms"),
        on_var("g_config.backoff"), on_addr(g.config, 8, MEMH_U64),
        on_var("g_config.name[3]"),
    };
    struct collector_watch_info info;
    struct strobe_error e = {0};
    if (!armable(&g, &r[0]))
        return;
    for (int i = 0; i < 4; i++)
        assert_int_equal(watchset_set(g.tr.t, &r[i], &info, &e), 0);
    assert_int_equal(watchset_set(g.tr.t, &r[4], &info, &e), -1);
    assert_int_equal(e.code, ERR_WATCH_SLOTS_FULL);
    assert_non_null(strstr(e.msg, "g_config.timeout_ms (write, pid"));
    assert_non_null(strstr(e.msg, "to watch g_config.name[3]."));
    struct collector_watch_info list[8];
    assert_int_equal(watchset_list(g.tr.t, list, 8), 4);
    assert_string_equal(list[2].type, "double");
    assert_string_equal(list[2].value, "1.5");
    /* One cleared: the fifth fits. */
    assert_int_equal(watchset_clear(g.tr.t, list[1].id, &e), 0);
    assert_int_equal(watchset_set(g.tr.t, &r[4], &info, &e), 0);
    assert_string_equal(info.type, "char");
    traced_end(&g.tr);
}

/* The watch_hit events after the program printed the line that follows its writes. */
static void signal_and_wait(struct target *g, int sig, const char *prefix, char *line,
                            size_t cap)
{
    assert_int_equal(kill(g->tr.pid, sig), 0);
    traced_line_starting(&g->tr, prefix, line, cap);
    traced_drain(&g->tr); /* a hit's event is pushed before the thread runs on */
}

static void test_writes_and_reads_hit_where_they_happen(void **state)
{
    (void)state;
    if (!traps())
        skip();
    static struct target g;
    target_start(&g);
    struct collector_watch_request r = on_var("g_config.max_retries");
    struct collector_watch_info info;
    struct strobe_error e = {0};
    assert_int_equal(watchset_set(g.tr.t, &r, &info, &e), 0);

    /* SIGUSR1: reset_config stores 3 over 3, then parse_name's strcpy overruns name. */
    char line[128];
    signal_and_wait(&g, SIGUSR1, "pass 1 ", line, sizeof line);
    long now;
    assert_int_equal(sscanf(line, "pass 1 max_retries=%ld", &now), 1);
    assert_int_not_equal(now, 3);
    size_t n = traced_count(&g.tr, EV_WATCH_HIT);
    assert_true(n >= 2);
    const struct tev *reset = traced_event(&g.tr, EV_WATCH_HIT, 0);
    assert_string_equal(reset->function, "reset_config");
    int at = marked_line(g.tr.path, "reset_config", "RESET");
    assert_int_equal(reset->line, at);
    char want[128];
    snprintf(want, sizeof want, "g_config.max_retries: 3 -> 3 (write of the same value in "
             "reset_config at config_overwrite.c:%d)", at);
    assert_string_equal(reset->text, want);
    assert_non_null(strstr(reset->data, "\"changed\":false"));
    /* The overrun: libc's strcpy writes, the program's own frame is parse_name. */
    const struct tev *over = traced_event(&g.tr, EV_WATCH_HIT, n - 1);
    assert_string_equal(over->function, "parse_name");
    assert_int_equal(over->line, marked_line(g.tr.path, "parse_name", "OVERWRITE"));
    snprintf(want, sizeof want, "\"newValue\":%ld,\"changed\":true", now);
    assert_non_null(strstr(over->data, want));
    assert_non_null(strstr(over->data, "\"function\":\"parse_name\""));
    assert_int_equal(over->pid, g.tr.pid);
    struct collector_watch_info list[2];
    assert_int_equal(watchset_list(g.tr.t, list, 2), 1);
    assert_int_equal(list[0].hits, (int64_t)n);
    snprintf(want, sizeof want, "%ld", now);
    assert_string_equal(list[0].value, want);

    /* A read is no hit of a write watch; of a readwrite one it is. */
    signal_and_wait(&g, SIGUSR2, "read 1 ", line, sizeof line);
    assert_int_equal(traced_count(&g.tr, EV_WATCH_HIT), n);
    assert_int_equal(watchset_clear(g.tr.t, info.id, &e), 0);
    r.readwrite = true;
    assert_int_equal(watchset_set(g.tr.t, &r, &info, &e), 0);
    signal_and_wait(&g, SIGUSR2, "read 2 ", line, sizeof line);
    assert_int_equal(traced_count(&g.tr, EV_WATCH_HIT), n + 1);
    const struct tev *read = traced_event(&g.tr, EV_WATCH_HIT, n);
    assert_string_equal(read->function, "read_retries");
    assert_int_equal(read->line, marked_line(g.tr.path, "read_retries", "READ"));
    assert_non_null(strstr(read->text, "(access (read, or a write of the same value)"));
    assert_non_null(strstr(read->data, "\"access\":\"readwrite\""));
    traced_end(&g.tr);
}

/* ---- a machine without debug traps ------------------------------------------------------ */

/* Run where hwwatch_traps_work() is false: the checks still answer first, then every
 * watch is refused. */
static void test_without_traps_watches_are_refused(void **state)
{
    (void)state;
    assert_false(hwwatch_traps_work());
    static struct target g;
    target_start(&g);
    check_refusals(&g);
    struct collector_watch_request r = on_var("g_config.max_retries");
    refused(&g, &r, ERR_WATCH_UNSUPPORTED, unsupported);
    traced_end(&g.tr);
}

/* Here: where traps work, that test runs in a copy of this binary told there are
 * none (STROBE_NO_DEBUG_TRAPS=1: the probe is once per process). */
static void test_machine_without_traps(void **state)
{
    if (!hwwatch_traps_work()) {
        test_without_traps_watches_are_refused(state);
        return;
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("STROBE_NO_DEBUG_TRAPS", "1", 1);
        setenv("STROBE_FIXTURES", fixture_dir, 1);
        execl("/proc/self/exe", "test_watchset", "--without-traps", (char *)NULL);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
    find_fixture_dir();
    if (argc > 1 && strcmp(argv[1], "--without-traps") == 0) {
        const struct CMUnitTest without[] = {
            traced_test(test_without_traps_watches_are_refused),
        };
        return cmocka_run_group_tests(without, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        traced_test(test_registers_slots_and_their_end),
        traced_test(test_a_write_of_the_child_is_a_hit),
        traced_test(test_refusals_before_anything_is_armed),
        traced_test(test_set_list_and_clear),
        traced_test(test_four_slots_then_full),
        traced_test(test_writes_and_reads_hit_where_they_happen),
        traced_test(test_machine_without_traps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
