/*
 * collector.h - the seam between the engine and whatever watches a program run.
 *
 * A collector knows one kind of program (native code through ptrace today; Python
 * or Node later) and drives it on the engine's behalf: it launches the program,
 * applies trace patterns to it, reports on it, kills it. It pushes every event it
 * produces through the event_sink its session hands it (base/ring.h) and knows
 * nothing of sessions, the store or any protocol. The engine (core/session.c)
 * knows collectors only through this table, so core/ includes no ptrace/ or dwarf/
 * header, and a new language needs no edit of the session code.
 *
 * The engine calls a collector only through the wrappers declared after the table
 * (collector_memory(), collector_pauses(), ...: one per slot, as Redis reaches a
 * connection through connRead()): no file of core/ but this header and collector.c
 * reads a slot. The wrapper of an optional slot left NULL answers NOT_IMPLEMENTED
 * naming the collector's language and what was asked (collector_unsupported()), so
 * neither the engine nor the front end has a case per collector. What each
 * capability asks of a collector, slots and events, is written above the table.
 *
 * Decision: the table has no version. Collectors are compiled into the daemon and
 * registered by strobe.c; nothing loads a table at run time, so every table is
 * compiled against this very header, and a member it does not name is NULL by C's
 * initializer rules. NULL is then the one sign that a capability is absent, and a
 * version number could only tell apart tables compiled against another header,
 * which cannot exist here (it was followed at one call and not at another: a trap,
 * not a guard). Should collectors ever be loaded at run time (dlopen), the loader
 * brings a size or version member with it, checked once in collector_register().
 * What registration checks instead is that the required members are there.
 *
 * The collector owns the patterns in force (set_patterns takes changes, describe
 * reports them): it must read them on its own thread when a program reaches new
 * code, whereas the engine keeps only their syntax and the pending set
 * (core/patterns.h). Name matching that needs no program is base/pattern_match.h.
 *
 * Sentences a collector writes (errors, trace_result's status and warnings) say
 * what happened, never which protocol call to make next: the front end adds that
 * (mcp/hints.h).
 *
 * To add a collector:
 *   1. fill a `const struct collector_methods` in a folder of its own: name,
 *      language, probe, launch, set_patterns, describe, kill, finished and join
 *      (collector_register() refuses a table without one of them), init and
 *      shutdown if it keeps state for the daemon's life, and the optional slots of
 *      the capabilities it supports, each capability whole (see above the table);
 *   2. declare it in that folder's header (see ptrace/native.h);
 *   3. register it in strobe.c, the composition root, with collector_register(),
 *      before the native collector: the first registered collector whose probe()
 *      accepts a program launches it, and the native one accepts everything;
 *   4. add its folder as a row of README.md's Layout table (it may include base/
 *      and core/collector.h): the Makefile compiles every C file under each folder
 *      the table lists (scripts/check-layers.sh --folders), subfolders included,
 *      and the session code needs no edit;
 *   5. drive it through the engine's public calls in a unit test, as
 *      tests/unit/test_collector.c drives a collector that fills the required
 *      slots only.
 *
 * Threads: launch, set_patterns, describe and the optional slots are called from
 * the daemon's request threads, several sessions at once, and two requests may
 * change one target's patterns at once: set_patterns serializes them itself (the
 * engine does not). describe, kill and finished may be called from any thread at
 * any time before join; join once, after which the target is gone.
 */
#ifndef STROBE_COLLECTOR_H
#define STROBE_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/ring.h"
#include "core/patterns.h"

struct collector_target; /* one launched program and everything it spawns */

/* Per-session knobs from the settings (core/settings.h). */
struct collector_tuning {
    int64_t hot_calls_per_second;  /* trace.hotCallsPerSecond: hotter functions are
                                      sampled */
    bool capture_exits;            /* trace.captureExits: false = enter events only */
    bool pin_cpu;                  /* trace.pinCpu: keep the collector's thread and the
                                      program's main thread on one CPU */
    int64_t sample_after;          /* trace.sampleAfter: events recorded whole first */
    int64_t overhead_budget_percent; /* trace.overheadBudgetPercent (100: off) */
    bool fast;                     /* trace.mode "fast": the in-process recorder */
};

/* What probe() learned about a program before it runs. */
struct collector_probe {
    int n_warnings;                /* e.g. "no debug info: rebuild with -g" */
    char warnings[2][512];
};

/* Callbacks into the session; all run on the collector's own thread. */
struct collector_events {
    /* The main process ended (exited or was killed), with its wait(2) status.
     * Other processes of the program may live on. */
    void (*main_exit)(void *arg, int wait_status);
    /* Called before a crash is stamped: output the program wrote before failing
     * must get earlier timestamps than the crash. */
    void (*settle_output)(void *arg);
    /* Optional; called at every trap before its event is stamped: output already in
     * the pipes is stamped now, so lines come before the calls that follow them. */
    void (*drain_output)(void *arg);
    /* Optional, with drain_output: the collector records calls inside the program
     * and follows its writes to the output without a trap (core/output.h, "Followed
     * writes"): output_follow once it starts to (every thread of the program
     * stopped), output_wrote for each write returned, in their time order, and
     * output_settled after each drain (every write returned before floor_ns was
     * told; writing: one is under way; floor_ns INT64_MAX: no more following). */
    void (*output_follow)(void *arg);
    void (*output_wrote)(void *arg, int stream, const char *prefix, size_t plen, size_t n,
                         int64_t ts_ns);
    void (*output_settled)(void *arg, int64_t floor_ns, bool writing);
    /* A thread paused (breakpoint, step end, pause request) or the set of paused
     * threads changed otherwise (resumed, killed): waiters look again
     * (collector_methods.pauses). */
    void (*paused)(void *arg);
    /* Optional; process pid now runs the runtime of launch's adopt_rules[rule] (its
     * image exports the rule's symbols): the engine has that rule's collector adopt
     * it (collector_methods.adopt) and writes into buf (cap bytes) the string the
     * rule's call gets. false: leave the process alone. */
    bool (*adopt)(void *arg, int rule, pid_t pid, char *buf, size_t cap);
    void *arg;
};

/* ---- adoption: a language runtime inside a process another collector runs ------
 * A runtime collector (Python) launches nothing: the process collector (native)
 * runs every program, follows its forks and execs, and at each program entry checks
 * the runtime collectors' rules. An image that exports a rule's symbols (in the
 * executable or a library whose name holds module_hint) gets its entry function
 * redirected once: its first call first calls call(string), then runs as it would
 * have (entry must take no arguments: its registers are not kept). The string comes
 * from the rule's collector through events.adopt, and is what loads the runtime's
 * agent (docs/PYTHON.md). The adopted process stays the process collector's: its
 * native code stays traceable, and the session asks both collectors (core/session.c).
 */
#define ADOPT_NEEDS_MAX 4
struct collector_adopt_rule {
    const char *module_hint;       /* "python": a module whose file name holds it */
    const char *needs[ADOPT_NEEDS_MAX]; /* symbols it must export, NULL after the last */
    const char *entry;             /* redirected at its first call */
    const char *call;              /* int call(const char *string) */
};

/* What the engine hands a runtime collector adopting a process. */
struct collector_adopt {
    pid_t pid;
    const char *project_root;
    const char *state_dir;         /* the daemon's private directory (0700): sockets,
                                      helper files */
    struct event_sink sink;        /* a ring of the adopted process's own */
    struct collector_tuning tuning;
    const char *const *patterns;   /* the session's patterns now: armed before the
                                      runtime runs the program's code */
    int n_patterns;
    int depth;
    void (*paused)(void *arg);     /* collector_events.paused: the set of the adopted
                                      process's paused threads changed */
    void *paused_arg;
    /* The session's breakpoints in this collector's language (their ids given):
     * set before the runtime runs the program's code. One that does not bind here
     * is listed by breakpoint_list with a note saying why. */
    const struct collector_breakpoint *breakpoints;
    int n_breakpoints;
};

struct trace_watch_spec;         /* below: trace watches */

struct collector_launch {
    const char *path;              /* resolved executable */
    char *const *argv;             /* argv[0] included, NULL-terminated */
    char *const *envp;             /* full environment, NULL-terminated */
    const char *cwd;
    int stdin_fd, stdout_fd, stderr_fd; /* become fds 0, 1, 2 of the target */
    const char *project_root;      /* scopes patterns (@file:, user code) */
    struct event_sink sink;        /* where every event goes */
    struct collector_tuning tuning;
    /* Patterns armed before the program's own code runs (pending patterns; syntax
     * checked, no duplicates), and the serialization depth, 1-10. */
    const char *const *patterns;
    int n_patterns;
    int depth;
    bool depth_asked;              /* depth was set, not the default (dwarf/value.h) */
    struct collector_events events;
    /* Trace watches (pending ones) to add before the patterns above are armed, when
     * the program's libraries are loaded (a collector without trace_watches ignores
     * them); strings valid during the call only. */
    const struct trace_watch_spec *watches;
    int n_watches;
    /* Breakpoints staged before the launch, bound at the entry point before any code
     * of the program runs (a collector without breakpoint_set ignores them); how
     * each bound is read back with breakpoint_list. */
    const struct collector_breakpoint *breakpoints;
    int n_breakpoints;
    /* The runtime collectors' rules (see adoption above); events.adopt answers
     * them. A collector that cannot redirect an entry ignores them. */
    const struct collector_adopt_rule *const *adopt_rules;
    int n_adopt_rules;
};

/* What a pattern change did: the answer to debug_trace, in the collector's words.
 * status and warnings state facts; the front end adds the next step. */
/* What one active pattern did: how many functions it matches and how many of those
 * are hooked now; warning says why it matches nothing ("" when it matches). */
struct pattern_result {
    size_t matched;
    size_t armed;
    char warning[256];
};

struct trace_result {
    int n_patterns;
    char patterns[PATTERNS_MAX][PATTERN_MAX_LEN];
    size_t hooked;           /* functions armed now */
    size_t matched;          /* functions the patterns match */
    int depth;
    int n_warnings;
    char warnings[8][256];
    char status[1024];
    size_t n_sampled;        /* functions under hot-function sampling */
    const char *sampled[16];
    struct pattern_result per_pattern[PATTERNS_MAX]; /* one per patterns[i] */
    size_t in_progress;      /* calls running when their function was hooked now:
                                their returns will be reported (inProgress) */
    size_t in_progress_lost; /* such calls whose return cannot be followed */
};

/* ---- counts: every traced function's calls, exact ------------------------------
 * Calls are counted even when their events are not recorded (sampling); see
 * ptrace/hooks/hooks.h. The tracer's time is the overhead it adds to the program. */
#define COUNTS_MAX 64

struct collector_fn_count {
    char function[160];
    char function_raw[160];      /* the symbol behind function, "" when the same */
    uint64_t calls;              /* every call */
    uint64_t recorded;           /* function_enter events recorded */
    bool sampled;                /* events are a sample since sampled_since_ns */
    int64_t sampled_since_ns;    /* ns since the session started */
    bool exact;                  /* false: lost says where calls went uncounted */
    char lost[96];
    char mode[12];               /* "recorded", "count-only", "jump", "fast" */
    uint64_t ring_full;          /* fast path: calls its ring had no room to record */
};

struct collector_counts {
    struct collector_fn_count fns[COUNTS_MAX]; /* most called first */
    size_t n;
    int64_t stops;               /* the traced threads' stops (traps and the
                                    recorder's), exact */
    int64_t busy_ns, run_ns;     /* the traced threads' time stopped at traps and
                                    running their own code, since the first trap */
    int64_t last_second_busy_ns, last_second_run_ns;
    bool final;                  /* every process ended: the counts are final */
};

/* ---- stacks: every thread's stack, now ----------------------------------------
 * The collector stops every thread of the program's processes, unwinds each and
 * resumes them; it fills collector_stacks (malloc'd members, freed with
 * collector_stacks_free). The engine then names the wait cycles (diagnosis). */
#define STACKS_MAX_TIDS 64       /* tids a request may name */
#define STACKS_MAX_FRAMES 64     /* frames kept per thread; the rest are counted */

struct collector_stacks_request {
    pid_t pid;                   /* 0: every process of the program */
    const pid_t *tids;           /* n_tids threads only; 0: every thread */
    int n_tids;
    bool locals;                 /* the innermost own frame's locals */
    bool arguments;              /* the arguments of every frame of the program's code */
};

struct collector_frame {
    char *function;              /* NULL: unknown; the public alias of a library's
                                    internal symbol (pthread_mutex_lock) */
    char *function_raw;          /* that internal symbol (___pthread_mutex_lock), or
                                    NULL when function is the symbol itself */
    char *file;                  /* NULL: no line info */
    int line;
    uint64_t pc;
    bool inlined;                /* an inlined call inside the next frame */
    char *arguments;             /* JSON array text, or NULL (not asked, not read) */
    bool system;                 /* in a system library or the language's runtime
                                    (libc, an interpreter), not the program's code */
};

enum collector_wait_kind {
    WAIT_NONE,
    WAIT_MUTEX,                  /* pthread_mutex_lock: address = the mutex */
    WAIT_JOIN,                   /* pthread_join: owner = the joined thread */
    WAIT_CONDVAR,                /* pthread_cond_wait: address = the condvar */
    WAIT_FUTEX,                  /* another FUTEX_WAIT: address = the futex word */
};

struct collector_thread {
    pid_t tid, pid;
    char name[32];               /* /proc comm, read now */
    char state[24];              /* "running", "sleeping", "disk sleep", "stopped" ...;
                                    "paused": held by the debugger (a breakpoint, a
                                    step, a pause request) */
    int syscall_nr;              /* the system call it is blocked in, -1: none */
    const char *syscall_name;    /* static; NULL when the number has no known name */
    bool wait_timed;             /* that call has a deadline: a sleep, a timed futex
                                    wait, poll/epoll/select with a timeout */
    struct collector_frame *frames; /* innermost first */
    size_t n_frames;
    size_t omitted_frames;       /* frames beyond STACKS_MAX_FRAMES */
    int own_frame;               /* the innermost frame of the program's code, -1 */
    char *locals;                /* JSON array of own_frame's locals, or NULL */
    enum collector_wait_kind wait;
    uint64_t wait_address;
    char *wait_variable;         /* the variable at wait_address as C names it
                                    ("g_table.lock", "q->mu"), or NULL: unknown */
    pid_t wait_owner;            /* the mutex owner / joined thread; 0: unknown */
    bool agent;                  /* a thread of the debugger's own agent inside the
                                    program (a runtime's): left out of the answer */
    uint64_t thread_pointer;     /* its TLS pointer (x86-64's fs base): glibc's
                                    pthread_t, how a runtime's own dump names the
                                    thread (testrun/pydump.h); 0: unknown */
};

struct collector_stacks {
    struct collector_thread *threads; /* by process, then tid */
    size_t n_threads;
    char *diagnosis;             /* the wait cycles in a sentence each; NULL: none */
    int64_t stopped_ns;          /* how long the program's threads were held */
};

/* Frees the members of s (not s) and zeroes it. */
void collector_stacks_free(struct collector_stacks *s);
/* Frees the members of one thread (not th) and zeroes them. */
void collector_thread_free(struct collector_thread *th);
/* Frees n frames' strings and the array frames. */
void collector_frames_free(struct collector_frame *frames, size_t n);
/* Sets (or sets again) s->diagnosis from the waits: each cycle of threads waiting for a
 * mutex or a thread that waits, in turn, for them ("deadlock: tid A ... which waits for
 * M1"), then each thread that holds a mutex others wait for while it waits for nothing
 * itself: running (a loop under the lock?) or blocked in a system call. */
void collector_stacks_diagnose(struct collector_stacks *s);

struct collector_breakpoint;     /* below: breakpoints */

/* ---- memory: read and write variables and addresses, data watchpoints ---------
 * Targets name a variable the way C does ("cfg.max_retries", "gClock->counter",
 * "table[3].name", "*p", "ns::g_state", "func::counter" for a static inside a
 * function): the collector resolves it with the program's debug info, in the
 * executable and every library it loaded, or takes a raw address with a type hint.
 * Values are JSON text (dwarf/value.h's rules) so the engine needs no JSON library. */
#define MEMORY_MAX_TARGETS 16
#define MEMORY_EXPR_MAX 256      /* characters of a variable expression */
#define MEMORY_MAX_DEREFS 4      /* "->" and "*" per expression */
#define MEMORY_MAX_BYTES (1u << 20) /* a `bytes` read */

enum memory_hint {               /* the type of an address target */
    MEMH_NONE,                   /* variable targets: the variable's own type */
    MEMH_I8, MEMH_U8, MEMH_I16, MEMH_U16, MEMH_I32, MEMH_U32, MEMH_I64, MEMH_U64,
    MEMH_F32, MEMH_F64, MEMH_POINTER,
    MEMH_BYTES,                  /* raw bytes, returned as such (the front end files
                                    them and shows a preview) */
};
/* "i8" ... "bytes" <-> enum memory_hint; -1 / NULL when unknown. */
int memory_hint_parse(const char *name);
const char *memory_hint_name(enum memory_hint h);

struct collector_mem_target {
    const char *variable;        /* an expression, or NULL for an address target */
    uint64_t address;
    size_t size;                 /* address targets: bytes (bytes hint); else implied */
    enum memory_hint hint;
};

/* A value to write, as the client gave it. */
struct collector_value {
    enum { CV_NUMBER, CV_STRING, CV_BOOL } kind;
    const char *text;            /* NUMBER: a decimal, hex ("0x1f") or float literal
                                    ("300", "-1", "2.5e3"); STRING: the text (an enum's
                                    enumerator, a char, a char array's contents, a
                                    pointer in hex) */
    bool boolean;                /* BOOL */
};

struct collector_mem_request {
    pid_t pid;                   /* 0: the main process */
    pid_t tid;                   /* a paused thread: its frame's locals, arguments and
                                    registers ("$rax") come first, then globals;
                                    0: globals only */
    int frame;                   /* with tid: 0 the innermost frame, 1 its caller... */
    const struct collector_mem_target *targets;
    const struct collector_value *values; /* write: one per target; read: NULL */
    int n_targets;               /* 1..MEMORY_MAX_TARGETS */
    int depth;                   /* read: struct levels shown, 1-5 */
    bool depth_asked;            /* depth was given: large, system and union values are
                                    expanded to it (dwarf/value.h), not condensed */
};

/* One target's outcome (malloc'd strings, freed by collector_mem_results_free). */
struct collector_mem_result {
    char *target;                /* the expression, or "0x..." */
    uint64_t address;            /* 0: the value has no address (a constant) */
    char *type;                  /* "int", "struct config", "u32" */
    size_t size;
    char *value;                 /* JSON text: read: the value; write: the value now
                                    (read back); NULL on error */
    char *old_value;             /* write: the value before, JSON text */
    char *note;                  /* NULL, or a sentence about the target (an index
                                    past an array's end, and whose bytes are there) */
    unsigned char *bytes;        /* MEMH_BYTES: the raw bytes, size of them */
    char *file;                  /* MEMH_BYTES: where the engine saved them
                                    (core/memory.h); the collector leaves it NULL */
    enum err_code error;         /* ERR_NONE, or why this target failed */
    char *error_message;         /* the sentence for error */
};
void collector_mem_results_free(struct collector_mem_result *r, int n);

#define WATCH_SLOTS 4            /* x86-64 debug registers DR0-DR3 */
struct collector_watch_request {
    pid_t pid;                   /* 0: the main process (its forks inherit the watch) */
    const char *variable;        /* or NULL: address */
    uint64_t address;
    size_t size;                 /* 0: the variable's size; else 1, 2, 4 or 8 */
    enum memory_hint hint;       /* address watches: how to show values (MEMH_NONE:
                                    unsigned of size) */
    bool readwrite;              /* false: writes only */
};
struct collector_watch_info {
    int id;                      /* > 0, unique in the target */
    char label[MEMORY_EXPR_MAX + 1]; /* the expression, or "0x..." */
    pid_t pid;
    uint64_t address;
    size_t size;
    char type[128];
    bool readwrite;
    int64_t hits;
    int64_t set_ns;              /* CLOCK_MONOTONIC when armed: hits / age is its rate */
    int64_t work_ns;             /* the debugger's time recording its hits (the stops
                                    take longer: a lower bound of its cost) */
    char value[256];             /* the value now, JSON text ("" when unknown) */
    bool ended;                  /* it fired no more: its processes exec'd or exited */
    char ended_reason[160];      /* why, when ended */
};

/* ---- trace watches: variables read at every traced call ------------------------
 * A watch names a variable (or an address with a type hint) whose value is read
 * each time a traced function it applies to is entered or exits, and recorded in
 * that event's data as "watchValues": {label: value}. `on` scopes it to the traced
 * functions matching any of its patterns (trace pattern syntax; none: every traced
 * function). The collector resolves the expression when the watch is added (an
 * unknown variable fails the change) and reads it with the program running. */
#define TRACE_WATCHES_MAX 32      /* per session */
#define TRACE_WATCH_ON_MAX 8      /* `on` patterns per watch */
#define TRACE_WATCH_ON_LEN 256    /* characters of an `on` pattern, NUL included */

struct trace_watch_spec {
    const char *label;            /* NULL: trace_watch_default_label() */
    const char *variable;         /* an expression, or NULL for an address watch */
    uint64_t address;
    enum memory_hint hint;        /* address watches: i8 ... f64, pointer */
    const char *const *on;        /* n_on patterns, syntax checked */
    int n_on;
};

struct trace_watch_info {
    char label[MEMORY_EXPR_MAX + 1];
    char variable[MEMORY_EXPR_MAX + 1]; /* "" for an address watch */
    uint64_t address;             /* where it was found when added */
    char type[128];
    size_t size;
    int n_on;
    char on[TRACE_WATCH_ON_MAX][TRACE_WATCH_ON_LEN];
};

struct trace_watch_result {
    int n;
    struct trace_watch_info watches[TRACE_WATCHES_MAX];
    char warning[512];            /* watches given at launch that could not be added
                                     (each named with its error); "" when none */
};

/* The label of a watch added without one: the expression itself, or the address
 * as "0x..." (out: MEMORY_EXPR_MAX + 1 bytes). */
void trace_watch_default_label(const struct trace_watch_spec *w, char *out);

/* Checks a change of a set of trace watches, all or nothing, for both owners of such
 * a set (the engine's pending one, a collector's active one): the n_add new labels
 * are distinct, every label in remove is in have, no new label stays in the set
 * after the removals, and the result holds at most TRACE_WATCHES_MAX. Sets keep[i]
 * to whether have[i] stays. set ("pending", "active") words the sentences. 0, or -1
 * with VALIDATION_ERROR or LIMIT_EXCEEDED in e. */
int trace_watch_change_check(const char *const *have, int n_have, const char *const *add,
                             int n_add, const char *const *remove, int n_remove,
                             const char *set, bool keep[], struct strobe_error *e);

/* ---- breakpoints, logpoints, pauses and steps --------------------------------------
 * A breakpoint is set on a function pattern (after the prologue of each function it
 * matches) or on a file and line (every address the line table gives for it, one per
 * function instance, inlined copies included), in every process of the program's
 * image. A hit evaluates the condition (base/cond.h, over the hitting frame's
 * arguments, locals and globals), counts, and then either pauses the thread (the
 * others run on unless all_stop) or, for a logpoint, records an EV_LOGPOINT event and
 * runs on. Pauses are listed by `pauses` and ended by `resume`; every change of the
 * paused set calls collector_events.paused. The engine numbers breakpoints; the
 * collector keeps them. */
#define BREAKPOINTS_MAX 50       /* per session, logpoints apart */
#define LOGPOINTS_MAX 100
#define BP_TEXT_MAX 1024         /* a condition's or a message's characters */
#define BP_SHOWN_LOCATIONS 8     /* locations described in a collector_bp_info */

struct collector_breakpoint {
    int id;                      /* > 0, from the engine */
    const char *function;        /* a trace pattern, or NULL */
    const char *file;            /* or file and line (> 0) */
    int line;
    const char *condition;       /* NULL: none; syntax checked by the engine */
    const char *message;         /* a logpoint's template ("x={x}"); NULL: breakpoint */
    int64_t hit_count;           /* 0 or 1: every hit; N: the first N-1 hits that pass
                                    the condition are counted, not paused at */
    bool one_shot;               /* removed after its first pause (or message) */
    bool all_stop;               /* a pause stops every thread of the process */
    int64_t hit_limit;           /* 0: none; N: removed after its Nth pause (or
                                    message), the last message saying so */
};

struct collector_bp_location {
    uint64_t address;            /* runtime, in the main process */
    char function[160];
    char file[256];              /* "" when the address has no line */
    int line;
    bool inlined;                /* in an inlined copy of function */
};

struct collector_bp_info {
    int id;
    bool logpoint;
    /* The spec as set (strings cut to the arrays). */
    char function[256];
    char file[256];
    int line_asked;
    char condition[BP_TEXT_MAX + 1];
    char message[BP_TEXT_MAX + 1];
    int64_t hit_count;
    bool one_shot, all_stop;
    int line;                    /* file breakpoints: the line that bound (may differ
                                    from the line asked: note says why) */
    char note[512];              /* why it moved, or why nothing bound; "" */
    bool pending;                /* a runtime's breakpoint that no process of the
                                    session runs yet: set in each as it starts */
    size_t n_locations;          /* every location; the first BP_SHOWN_LOCATIONS are
                                    described below */
    struct collector_bp_location locations[BP_SHOWN_LOCATIONS];
    int64_t hits;                /* hits whose condition held, had none, or could not
                                    be evaluated (those pause: condition_errors) */
    int64_t condition_errors;    /* hits whose condition could not be evaluated (they
                                    pause, as gdb does, so the agent sees why) */
    char last_condition_error[256];
    int64_t hit_limit;
    int64_t traps;               /* times a thread reached it, condition true or not:
                                    what it costs the program */
    int64_t set_ns;              /* CLOCK_MONOTONIC when it was set: traps / age is its
                                    rate */
    int64_t work_ns;             /* the debugger's time handling its traps (the stops
                                    themselves cost more): a lower bound of its cost */
};

enum collector_pause_reason {
    PAUSE_BREAKPOINT,            /* it hit breakpoint_id */
    PAUSE_STEP,                  /* a step ended */
    PAUSE_REQUEST,               /* the agent asked (pause) */
    PAUSE_ALL_STOP,              /* another thread's all_stop breakpoint stopped it */
};

struct collector_pause {
    pid_t tid, pid;
    int64_t seq;                 /* > 0, increasing over the target's pauses */
    enum collector_pause_reason reason;
    int breakpoint_id;           /* PAUSE_BREAKPOINT; else 0 */
    uint64_t pc;
    char function[160];          /* "" when unknown */
    char file[256];              /* "" when no line info */
    int line;
    char return_value[128];      /* step-out of a function returning a value: rax as
                                    its type shows it (JSON text); "" otherwise */
    char note[256];              /* e.g. "stepped over strlen: no debug info"; "" */
};

/* Whether pause p is a better "selected thread" than best (seq 0: none yet), as
 * gdb selects the thread that stopped: one that stopped for a reason of its own (a
 * breakpoint, a step) over those a pause request stopped, over those an all-stop
 * stopped with it; among requested ones the lowest tid (the main thread); else the
 * newest. An answer shows the selected pause; a read or a step without threadId
 * acts on its thread. */
bool collector_pause_better(const struct collector_pause *p, const struct collector_pause *best);

enum collector_resume {
    RESUME_CONTINUE,             /* tid 0: every paused thread, and the threads in the
                                    middle of a step run on */
    RESUME_STEP_INTO,            /* the next line, entering calls with debug info */
    RESUME_STEP_OVER,            /* the next line of this frame (or its caller) */
    RESUME_STEP_OUT,             /* until the frame returns */
};

/* ---- what a collector provides, capability by capability -----------------------
 * A capability is the slots below its heading in the table and the events their work
 * pushes through collector_launch.sink (event_sink_init, event_sink_push: stamped on
 * CLOCK_MONOTONIC; pid and tid the kernel's; thread_name the thread's name then;
 * strings and JSON text as base/event.h says). Values are JSON text by dwarf/value.h's
 * rules as far as the language's types go; docs/PROTOCOL.md is how the agent sees
 * each field. A capability is filled whole or not at all: with a slot of it NULL the
 * engine answers NOT_IMPLEMENTED for it (the wrappers after the table say what each
 * absence answers), never a half.
 *
 * Running (required). The program's fds 0, 1 and 2 are stdin_fd, stdout_fd and
 *   stderr_fd: the engine reads the pipes and records stdout and stderr itself.
 *   events.main_exit once, with the main process's wait status (the engine records
 *   its process_exit); an EV_PROCESS_EXIT (text and data: event_describe_exit()) for
 *   each other process of the program as it ends; events.drain_output (when set)
 *   before stamping an event, so output already written comes first.
 *
 * Tracing (required: set_patterns, describe; optional: counts, trace_mode,
 *   trace_watches). Patterns have core/patterns.h's syntax, matched against the
 *   language's qualified names (base/pattern_match.h does the matching that needs no
 *   program; @file: and @usercode scope by project_root); those of the launch are in
 *   force before the program's own code runs. Each call of a matched function pushes
 *   EV_FUNCTION_ENTER: pid, tid, thread_name, function (the name patterns match),
 *   function_raw (the runtime's own name when another, else NULL), source_file and
 *   line (the function's), seq (the collector numbers its events of the session),
 *   parent_seq (the enter of the calling traced function on the thread; 0: none),
 *   arguments (JSON array of {name, value}), data (JSON object: argsShort, the
 *   arguments on one line as dwarf/value_short.h writes them; watchValues {label:
 *   value} when trace watches apply), sampled. Its return pushes EV_FUNCTION_EXIT: the
 *   same location, its own seq, parent_seq = the enter's seq, duration_ns,
 *   return_value (JSON; null for none), data (retShort; unwound: true when it left by
 *   an exception or longjmp, without a value; inProgress: true when it was running
 *   when its function was hooked; watchValues). counts are the exact calls (sampling
 *   may record fewer); trace_mode switches the recording between the tuning's two
 *   ways (a collector with one way leaves it NULL); trace_watches read variables at
 *   each traced call. Without counts session_counts answers NOT_IMPLEMENTED and no
 *   counts are stored when the session ends; without trace_watches the watches given
 *   at launch are reported as not added.
 *
 * Breakpoints and steps (all seven: breakpoint_set, breakpoint_clear, breakpoint_list,
 *   pauses, pause, resume, evaluate; optional beside them: breakpoints_staged,
 *   resume_many). A collector_breakpoint binds to each function its pattern matches
 *   (after the prologue: where the arguments can be read) or to the code of a file's
 *   line, every copy of it (the next line with code when that one has none; note
 *   says so). At a hit its condition (base/cond.h, syntax checked by the engine) is
 *   evaluated over the hitting frame's arguments, locals and globals, an error
 *   counting as true (condition_errors); hit_count skips the first N-1 hits that
 *   pass; one_shot goes after its first pause or message. A logpoint (message) pushes
 *   EV_LOGPOINT (pid, tid, function, source_file, line; text: the message with each
 *   {expression} replaced by its value; data {breakpointId, file, line, function}) and
 *   the thread runs on. Any other hit that passes pauses the thread (every thread of its process
 *   with all_stop; those become PAUSE_ALL_STOP pauses): a collector_pause in pauses
 *   (seq increasing), an EV_PAUSE event (pid, tid, thread_name, function,
 *   source_file, line; text "thread T paused at file:line in f (breakpoint N)"; data
 *   {reason: "breakpoint" | "step" | "pause" | "allStop", breakpointId?, file, line,
 *   function, returnValue?}) and a call of events.paused, as at every change of the
 *   paused set. Breakpoints given at launch bind before the program's own code runs,
 *   and breakpoints_staged says how (without it the launch's answer says that is
 *   unknown). A step is resume with RESUME_STEP_OVER, _INTO or _OUT of one paused
 *   thread: it returns at once, and the step's end is a PAUSE_STEP pause on the line
 *   reached (step-out: return_value, the value returned). evaluate reads a condition
 *   over globals with the program running (debug_continue until memory). Without
 *   resume_many the engine resumes a set of pauses one by one. Without one of the
 *   seven, debug_breakpoint (on a session) and debug_continue answer NOT_IMPLEMENTED
 *   and no thread is ever paused.
 *
 * Frames and variables (memory with a paused thread's tid; stacks). memory reads
 *   frame req->frame (0: the innermost) of the paused thread first: its locals and
 *   arguments (registers, in a language that has them), then globals. A
 *   collector_frame is one frame, innermost first: function (the name patterns match;
 *   NULL: unknown), function_raw (the runtime's own name when another, else NULL), file
 *   and line (NULL and 0: unknown), pc (the code address; 0 in a language without
 *   one), inlined (an inlined call inside the next frame), arguments (a JSON array of
 *   {name, type, value}, when asked). A thread's own_frame is its innermost frame of
 *   the program's own code (not the language's runtime, not a library), and locals
 *   that frame's locals, the same shape.
 *
 * Stacks (stacks, stacks_of). stacks describes every thread of the program's
 *   processes (or those asked), each held only for the snapshot: tid, pid, name,
 *   state ("paused": the debugger holds it), syscall_nr (-1: none or unknown), frames,
 *   own_frame, and what it waits for (wait, wait_address, wait_variable, wait_owner)
 *   when known; the engine names the wait cycles (collector_stacks_diagnose) when the
 *   collector leaves diagnosis NULL. stacks_of does the same for processes nobody
 *   traces (a test run's plain children): the first registered collector with it
 *   answers for every plain test run. Without stacks session_stacks answers
 *   NOT_IMPLEMENTED, pauses show no stack and a traced test run cannot be found stuck.
 *
 * Crashes (no slot: launch's work). For a process of the program that dies of a
 *   fault, an abort, an uncaught exception or a panic, the collector pushes EV_CRASH
 *   while it can still be read, after events.settle_output: pid, tid, thread_name;
 *   function, source_file, line (the crashing frame: the innermost of the program's
 *   own code); text (one line: what and where); data as core/crash_payload.h lists it
 *   (kind, frames, crashFrame, locals at the least; a field a language needs is
 *   listed there first).
 *
 * Memory and watches (memory; watch_set, watch_clear, watch_list). memory reads or
 *   writes targets named as the language names a path to a variable ("cfg.retries",
 *   "table[3].name"); address targets where the language has addresses (elsewhere
 *   each fails in its result). A watch pushes EV_WATCH_HIT at each write (pid, tid,
 *   thread_name; the writer's function, source_file, line; text "label: old -> new
 *   (write in f at file:line)"; data {watchId, label, address, size, access,
 *   oldValue, newValue, changed, hits, frames, ownFrame}) and the program runs on.
 *   Without memory debug_memory's reads, writes and polls answer NOT_IMPLEMENTED;
 *   without the watch slots its watch, unwatch and list.
 *
 * Test reruns (no slot). debug_test with trace patterns or watches runs the test
 *   command as a session: the collector whose probe accepts its executable launches
 *   it with those patterns and watches, so a collector that honours the launch's
 *   patterns and watches serves reruns, and its stacks find a stuck test.
 */
struct collector_methods {
    const char *name;              /* "native" */
    const char *language;          /* "native code (C, C++, Rust)" */

    /* ---- running and tracing: required (but init and shutdown) ---- */
    /* Daemon start, before any launch: cache_dir is a directory for caches that
     * outlive the daemon (NULL: none; the collector ignores it unless it is the
     * user's own). Daemon shutdown, after every target is joined: drops caches.
     * Either slot may be NULL. */
    void (*init)(const char *cache_dir);
    void (*shutdown)(void);
    /* Whether this collector runs the program at path; fills *out with facts worth
     * a warning. Cheap: reads headers, never runs anything. */
    bool (*probe)(const char *path, struct collector_probe *out);
    /* Starts the program; returns once it runs (or failed to: -1 and e, with
     * COMMAND_NOT_FOUND, COMMAND_NOT_EXECUTABLE or ATTACH_FAILED). req->patterns
     * are armed before the program's own code runs; until they are, set_patterns
     * waits. The events callbacks may run from then until join returns. */
    int (*launch)(const struct collector_launch *req, struct collector_target **out,
                  pid_t *pid, struct strobe_error *e);
    /* Adds and removes patterns (syntax already checked), sets the serialization
     * depth (0: unchanged) and brings the running program in line. A failed
     * change changes nothing. PROCESS_EXITED once the program is gone. */
    int (*set_patterns)(struct collector_target *t, const char *const *add, int n_add,
                        const char *const *remove, int n_remove, int depth,
                        struct trace_result *res, struct strobe_error *e);
    /* The patterns in force, without touching the program (it may be gone). */
    void (*describe)(struct collector_target *t, struct trace_result *res);
    /* SIGKILL to every process of the program. Any thread, any time. */
    void (*kill)(struct collector_target *t);
    /* Whether every process of the program is gone. Any thread. */
    bool (*finished)(struct collector_target *t);
    /* Waits until finished, then frees t. */
    void (*join)(struct collector_target *t);

    /* ---- adoption: a runtime collector's, instead of probe and launch ---- */
    /* What an image must export to run this collector's runtime (NULL: none). */
    const struct collector_adopt_rule *adopt_rule;
    /* Runtime collectors: their source files' suffix (".py"). A breakpoint on such a
     * file is theirs, its condition and messages in their language (they check
     * them); so is one on a function named with dots. */
    const char *source_suffix;
    /* Runtime collectors: the prefixes of the runtime's own C functions' names
     * ("Py", "_Py"), NULL-terminated. A thread's native frames inside the first of
     * them are the interpreter's; those before it show where the thread is when it
     * is in the program's native code (session_layers_stacks). NULL: none shown. */
    const char *const *native_prefixes;
    /* Optional: a warning for a launch of path, a program of this collector's
     * language that it cannot take (the Python collector's: PyPy is not CPython),
     * added to out's (collector_for). */
    void (*notice)(const char *path, struct collector_probe *out);
    /* Takes process req->pid, which is about to call adopt_rule->call with the
     * string written into buf (cap bytes): a target of this collector for it, which
     * the session then asks beside the process collector's (set_patterns, describe,
     * counts, kill, finished, join). Called on the process collector's thread: it must
     * not wait for the program. -1 with e: the process is left alone. */
    int (*adopt)(const struct collector_adopt *req, struct collector_target **out,
                 char *buf, size_t cap, struct strobe_error *e);

    /* ---- tracing, optional ---- */
    /* The traced functions' exact calls and the tracer's overhead; -1 when they
     * cannot be read now. */
    int (*counts)(struct collector_target *t, struct collector_counts *out);
    /* How the program's traced calls are recorded from now on (trace.mode): fast
     * (the in-process recorder) or not (int3s). The functions traced now move to it,
     * and those traced later take it (a program exec'd later starts with the launch's
     * trace.mode). -1 with PROCESS_EXITED. */
    int (*trace_mode)(struct collector_target *t, bool fast, struct strobe_error *e);
    /* Removes the watches labelled remove[], then adds add[] (labels unique, the
     * session's total at most TRACE_WATCHES_MAX), all or nothing; fills out with the
     * watches in force (also when it fails, then unchanged). n_add = n_remove = 0
     * lists them; so does a target whose program is gone. -1 with VALIDATION_ERROR
     * (duplicate or unknown label), LIMIT_EXCEEDED, or the resolution's error
     * (VARIABLE_NOT_FOUND, BAD_EXPRESSION, ... naming the watch). Until the watches
     * given at launch are added (at the entry point), it waits for them; out->warning
     * then names those that failed. */
    int (*trace_watches)(struct collector_target *t, const struct trace_watch_spec *add,
                         int n_add, const char *const *remove, int n_remove,
                         struct trace_watch_result *out, struct strobe_error *e);

    /* ---- breakpoints and steps: the first seven, or none ---- */
    /* Sets breakpoint bp in the running program and describes how it bound. -1 with
     * FILE_NOT_FOUND, LINE_NOT_FOUND, FUNCTION_NOT_FOUND (nothing bound; the sentence
     * says why and what is near), VARIABLE_NOT_FOUND (the condition or message names
     * what no frame there has), BAD_EXPRESSION, LIMIT_EXCEEDED, PROCESS_EXITED. */
    int (*breakpoint_set)(struct collector_target *t, const struct collector_breakpoint *bp,
                          struct collector_bp_info *out, struct strobe_error *e);
    /* Removes breakpoint id (its int3s go; threads paused at it stay paused). -1 with
     * BREAKPOINT_NOT_FOUND. */
    int (*breakpoint_clear)(struct collector_target *t, int id, struct strobe_error *e);
    /* The breakpoints in force, up to max, by id; returns how many there are. */
    int (*breakpoint_list)(struct collector_target *t, struct collector_bp_info *out,
                           int max);
    /* The paused threads, up to max, oldest pause first; returns how many. */
    int (*pauses)(struct collector_target *t, struct collector_pause *out, int max);
    /* Interrupts every thread of process pid (0: the main one) now; each becomes a
     * PAUSE_REQUEST pause. Returns how many threads it stopped (0 when every one was
     * paused already), or -1 with PROCESS_EXITED. */
    int (*pause)(struct collector_target *t, pid_t pid, struct strobe_error *e);
    /* Resumes paused thread tid as how says (RESUME_CONTINUE with tid 0: every paused
     * thread). A step returns at once: its end is a PAUSE_STEP pause. -1 with
     * NOT_PAUSED (nothing is paused), THREAD_NOT_PAUSED (tid is not), PROCESS_EXITED. */
    int (*resume)(struct collector_target *t, pid_t tid, enum collector_resume how,
                  struct strobe_error *e);
    /* Evaluates a condition (base/cond.h) over the globals of process pid (0: main)
     * as they are now, without stopping it; values gets each path's value as
     * "path=value, ..." (cap bytes). -1 with VARIABLE_NOT_FOUND, BAD_EXPRESSION,
     * MEMORY_UNREADABLE, PROCESS_EXITED. */
    int (*evaluate)(struct collector_target *t, pid_t pid, const char *condition,
                    bool *result, char *values, size_t cap, struct strobe_error *e);
    /* How the breakpoints given at launch bound at the entry point, in the order
     * given, failures included (no locations, note = "CODE: why"), as they were then:
     * a one-shot that fired since is still there. Up to max; returns how many. Waits
     * for the entry point. */
    int (*breakpoints_staged)(struct collector_target *t, struct collector_bp_info *out,
                              int max);
    /* Continues the paused threads tids[0..n) as one step of the engine: when one of
     * them, resumed first, hits an all-stop breakpoint before the others run, those
     * stay paused (for that all-stop) instead of running on. Threads no longer paused
     * are skipped. -1 with PROCESS_EXITED. */
    int (*resume_many)(struct collector_target *t, const pid_t *tids, int n,
                       struct strobe_error *e);

    /* ---- frames, variables, stacks ---- */
    /* Reads (req->values NULL) or writes each target; fills out[0..n_targets) and
     * returns 0 even when targets failed (each says why), -1 only when none could be
     * tried (PROCESS_EXITED). Reads do not stop the program. Writes check the value
     * against the target's type (VALUE_OUT_OF_RANGE) and read it back. */
    int (*memory)(struct collector_target *t, const struct collector_mem_request *req,
                  struct collector_mem_result *out, struct strobe_error *e);
    /* Every thread's stack now (collector_stacks_request says which threads and what
     * of their frames); the threads run on after it. -1 with PROCESS_EXITED. */
    int (*stacks)(struct collector_target *t, const struct collector_stacks_request *req,
                  struct collector_stacks *out, struct strobe_error *e);
    /* Every thread's stack of processes the collector does not trace (a test run's
     * plain child and its descendants, pids[0..n_pids)): each thread attached,
     * stopped, unwound and let go again, as the stacks slot reads its own targets.
     * Threads that cannot be attached are listed with their /proc state and no
     * frames. -1 with PROCESS_EXITED when none of the processes is left. */
    int (*stacks_of)(const pid_t *pids, int n_pids, const struct collector_stacks_request *req,
                     struct collector_stacks *out, struct strobe_error *e);

    /* ---- data watchpoints: all three, or none ---- */
    /* Arms a data watchpoint in every thread of the process, those created later
     * included; each hit pushes an EV_WATCH_HIT event (old and new value, the
     * writer's stack) and the program runs on. -1 with WATCH_SLOTS_FULL (the sentence
     * names the active watches), WATCH_TOO_LARGE, VARIABLE_NOT_FOUND, ... */
    int (*watch_set)(struct collector_target *t, const struct collector_watch_request *w,
                     struct collector_watch_info *out, struct strobe_error *e);
    /* Disarms watch id everywhere; -1 with VALIDATION_ERROR when there is none. */
    int (*watch_clear)(struct collector_target *t, int id, struct strobe_error *e);
    /* The active watches, up to max; returns how many there are. */
    int (*watch_list)(struct collector_target *t, struct collector_watch_info *out,
                      int max);
};

/* Registers m (kept by pointer; m must outlive the daemon). Up to 8 collectors;
 * -1 when full or when m lacks a required member (name, language, probe, launch,
 * set_patterns, describe, kill, finished, join; a runtime collector has adopt_rule
 * and adopt instead of probe and launch). */
int collector_register(const struct collector_methods *m);
/* The adopt rules of the registered runtime collectors, up to max; returns how many
 * (rule i belongs to collector_of_rule(i)). */
int collector_adopt_rules(const struct collector_adopt_rule **out, int max);
const struct collector_methods *collector_of_rule(int i);
/* The runtime collector whose code bp is in (a file with its source_suffix, or a
 * function named with dots and no "::"), or NULL: the process collector's. Its
 * condition and message are in that runtime's language, checked by it. */
const struct collector_methods *collector_breakpoint_owner(const struct collector_breakpoint *bp);
/* Calls every registered collector's init / shutdown (see the members). */
void collectors_init(const char *cache_dir);
void collectors_shutdown(void);
/* The first registered collector whose probe() accepts path, NULL if none; out has
 * its warnings, then every collector's notice(). */
const struct collector_methods *collector_for(const char *path, struct collector_probe *out);
/* stacks_of of the first registered collector that has the slot; NOT_IMPLEMENTED
 * when none has. */
int collector_stacks_of(const pid_t *pids, int n_pids, const struct collector_stacks_request *req,
                        struct collector_stacks *out, struct strobe_error *e);
/* Starts info (zeroed) with b's id and spec: the part of a collector_bp_info that
 * needs no program. */
void collector_bp_info_init(struct collector_bp_info *info, const struct collector_breakpoint *b);
/* A copy of src into dst whose strings are dst's own (collector_breakpoint_release
 * frees them): a spec kept past the request that brought it. 0, or -1 when out of
 * memory (dst then owns nothing). */
int collector_breakpoint_copy(struct collector_breakpoint *dst,
                              const struct collector_breakpoint *src);
void collector_breakpoint_release(struct collector_breakpoint *b);
/* Sets e to NOT_IMPLEMENTED for an optional slot m leaves empty, naming the
 * collector's language and what was asked ("reading memory", the sentence's start);
 * returns -1. */
int collector_unsupported(const struct collector_methods *m, const char *what,
                          struct strobe_error *e);

/* ---- calling a collector ---------------------------------------------------------
 * One wrapper per slot, named after it (as stat() fills a struct stat, a wrapper may
 * share its name with the struct it fills), taking the table c and the target t: the
 * engine reaches slots through them only (the registry's own, probe, init, shutdown
 * and stacks_of, are collector.c's). A required slot's wrapper calls it. An optional
 * slot's wrapper, when the slot is NULL, returns -1 with NOT_IMPLEMENTED in e (e may
 * be NULL) naming c's language and the capability; the wrappers of slots that have no
 * error argument (counts and the lists) take e for that answer. One exception:
 * collector_resume_many() without its slot resumes the threads one by one. */

static inline int collector_launch(const struct collector_methods *c,
                                   const struct collector_launch *req,
                                   struct collector_target **out, pid_t *pid,
                                   struct strobe_error *e)
{
    return c->launch(req, out, pid, e);
}

static inline int collector_set_patterns(const struct collector_methods *c,
                                         struct collector_target *t, const char *const *add,
                                         int n_add, const char *const *remove, int n_remove,
                                         int depth, struct trace_result *res,
                                         struct strobe_error *e)
{
    return c->set_patterns(t, add, n_add, remove, n_remove, depth, res, e);
}

static inline void collector_describe(const struct collector_methods *c,
                                      struct collector_target *t, struct trace_result *res)
{
    c->describe(t, res);
}

static inline void collector_kill(const struct collector_methods *c, struct collector_target *t)
{
    c->kill(t);
}

static inline bool collector_finished(const struct collector_methods *c,
                                      struct collector_target *t)
{
    return c->finished(t);
}

static inline void collector_join(const struct collector_methods *c, struct collector_target *t)
{
    c->join(t);
}

static inline int collector_counts(const struct collector_methods *c,
                                   struct collector_target *t, struct collector_counts *out,
                                   struct strobe_error *e)
{
    return c->counts ? c->counts(t, out) : collector_unsupported(c, "counting calls", e);
}

static inline int collector_trace_mode(const struct collector_methods *c,
                                       struct collector_target *t, bool fast,
                                       struct strobe_error *e)
{
    return c->trace_mode ? c->trace_mode(t, fast, e)
                         : collector_unsupported(c, "changing the trace mode", e);
}

static inline int collector_trace_watches(const struct collector_methods *c,
                                          struct collector_target *t,
                                          const struct trace_watch_spec *add, int n_add,
                                          const char *const *remove, int n_remove,
                                          struct trace_watch_result *out,
                                          struct strobe_error *e)
{
    return c->trace_watches
               ? c->trace_watches(t, add, n_add, remove, n_remove, out, e)
               : collector_unsupported(c, "watching variables on traced calls", e);
}

/* Breakpoints and steps are one capability, named so in every answer. */
#define COLLECTOR_STOPS "breakpoints and stepping"

/* 0 when c has the seven slots of breakpoints and steps, else NOT_IMPLEMENTED:
 * checked before a request that takes several of them, so none is half done. */
static inline int collector_stops_check(const struct collector_methods *c,
                                        struct strobe_error *e)
{
    bool all = c->breakpoint_set && c->breakpoint_clear && c->breakpoint_list && c->pauses &&
               c->pause && c->resume && c->evaluate;
    return all ? 0 : collector_unsupported(c, COLLECTOR_STOPS, e);
}

static inline int collector_breakpoint_set(const struct collector_methods *c,
                                           struct collector_target *t,
                                           const struct collector_breakpoint *bp,
                                           struct collector_bp_info *out,
                                           struct strobe_error *e)
{
    return c->breakpoint_set ? c->breakpoint_set(t, bp, out, e)
                             : collector_unsupported(c, COLLECTOR_STOPS, e);
}

static inline int collector_breakpoint_clear(const struct collector_methods *c,
                                             struct collector_target *t, int id,
                                             struct strobe_error *e)
{
    return c->breakpoint_clear ? c->breakpoint_clear(t, id, e)
                               : collector_unsupported(c, COLLECTOR_STOPS, e);
}

/* How many breakpoints there are (out gets up to max), or -1. */
static inline int collector_breakpoint_list(const struct collector_methods *c,
                                            struct collector_target *t,
                                            struct collector_bp_info *out, int max,
                                            struct strobe_error *e)
{
    return c->breakpoint_list ? c->breakpoint_list(t, out, max)
                              : collector_unsupported(c, COLLECTOR_STOPS, e);
}

/* How many threads are paused (out gets up to max), or -1: a caller that takes
 * absence for "none paused" tests n > 0. */
static inline int collector_pauses(const struct collector_methods *c,
                                   struct collector_target *t, struct collector_pause *out,
                                   int max, struct strobe_error *e)
{
    return c->pauses ? c->pauses(t, out, max) : collector_unsupported(c, COLLECTOR_STOPS, e);
}

static inline int collector_pause(const struct collector_methods *c,
                                  struct collector_target *t, pid_t pid,
                                  struct strobe_error *e)
{
    return c->pause ? c->pause(t, pid, e) : collector_unsupported(c, COLLECTOR_STOPS, e);
}

static inline int collector_resume(const struct collector_methods *c,
                                   struct collector_target *t, pid_t tid,
                                   enum collector_resume how, struct strobe_error *e)
{
    return c->resume ? c->resume(t, tid, how, e) : collector_unsupported(c, COLLECTOR_STOPS, e);
}

static inline int collector_evaluate(const struct collector_methods *c,
                                     struct collector_target *t, pid_t pid,
                                     const char *condition, bool *result, char *values,
                                     size_t cap, struct strobe_error *e)
{
    return c->evaluate ? c->evaluate(t, pid, condition, result, values, cap, e)
                       : collector_unsupported(c, "conditions over memory", e);
}

/* How many breakpoints the launch gave (out gets up to max), or -1. */
static inline int collector_breakpoints_staged(const struct collector_methods *c,
                                               struct collector_target *t,
                                               struct collector_bp_info *out, int max,
                                               struct strobe_error *e)
{
    return c->breakpoints_staged ? c->breakpoints_staged(t, out, max)
                                 : collector_unsupported(c, COLLECTOR_STOPS, e);
}

/* resume_many; without it, resume of each thread in turn, skipping those no longer
 * paused: the same end, but a thread resumed early may hit an all-stop breakpoint
 * while the others still run on. -1 with PROCESS_EXITED (or NOT_IMPLEMENTED: no
 * resume either). */
int collector_resume_many(const struct collector_methods *c, struct collector_target *t,
                          const pid_t *tids, int n, struct strobe_error *e);

static inline int collector_memory(const struct collector_methods *c,
                                   struct collector_target *t,
                                   const struct collector_mem_request *req,
                                   struct collector_mem_result *out, struct strobe_error *e)
{
    return c->memory ? c->memory(t, req, out, e)
                     : collector_unsupported(c, req->values ? "writing memory"
                                                            : "reading memory", e);
}

static inline int collector_stacks(const struct collector_methods *c,
                                   struct collector_target *t,
                                   const struct collector_stacks_request *req,
                                   struct collector_stacks *out, struct strobe_error *e)
{
    return c->stacks ? c->stacks(t, req, out, e)
                     : collector_unsupported(c, "reading every thread's stack", e);
}

#define COLLECTOR_WATCHES "watching memory (data watchpoints)"

static inline int collector_watch_set(const struct collector_methods *c,
                                      struct collector_target *t,
                                      const struct collector_watch_request *w,
                                      struct collector_watch_info *out,
                                      struct strobe_error *e)
{
    return c->watch_set ? c->watch_set(t, w, out, e)
                        : collector_unsupported(c, COLLECTOR_WATCHES, e);
}

static inline int collector_watch_clear(const struct collector_methods *c,
                                        struct collector_target *t, int id,
                                        struct strobe_error *e)
{
    return c->watch_clear ? c->watch_clear(t, id, e)
                          : collector_unsupported(c, COLLECTOR_WATCHES, e);
}

/* How many watches there are (out gets up to max), or -1. */
static inline int collector_watch_list(const struct collector_methods *c,
                                       struct collector_target *t,
                                       struct collector_watch_info *out, int max,
                                       struct strobe_error *e)
{
    return c->watch_list ? c->watch_list(t, out, max)
                         : collector_unsupported(c, COLLECTOR_WATCHES, e);
}

#endif
