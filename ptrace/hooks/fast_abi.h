/*
 * fast_abi.h - the contract between the in-process recorder (ptrace/hooks/fastrec/, a
 * freestanding blob injected into the target) and the daemon that drains it
 * (ptrace/hooks/fastpath.c): the layout of the shared area, of its records, and the
 * calling convention of the trampolines that call the recorder. Nothing here may
 * depend on libc: the recorder includes this file too.
 *
 * The area is private anonymous memory the daemon maps in the target (an injected
 * mmap) and reads and writes through /proc/PID/mem (ptrace/hooks/fastpath.c):
 *
 *   struct fast_area      header: version, ring geometry, the daemon's live word
 *   struct fast_fn[]      one per fast-path function: exact counts, lost records,
 *                         what the recorder does for its calls
 *   struct fast_prog[]    one per fast-path function: its capture program
 *   struct fast_thread[]  per-thread shadow stacks of real return addresses
 *   ring                  fast_record[ring_records], written by the target's threads
 *
 * Versioning: a layout change bumps FAST_ABI_VERSION; the daemon refuses a blob of
 * another version (both are built from this tree, the check catches stale builds).
 *
 * Records: multi-producer. A writer reserves n consecutive records by a cmpxchg
 * of head (never past tail + ring_records: a full ring counts the call in
 * fast_fn.lost and writes nothing, the target never waits; an enter leaves
 * FAST_EXIT_HEADROOM records free, so that the exit of every frame pushed, which
 * is recorded whether the daemon is live or not, always finds room: the daemon's
 * copy of each thread's shadow stack never keeps a frame the recorder popped, and it
 * writes return addresses into the stack slots of those frames), fills them, and
 * publishes each by storing commit = (uint32_t)(its index + 1) last (release). The
 * daemon alone moves tail, reading records in order up to the first one whose
 * commit does not match its index (a writer still filling it: read again later).
 *
 * Thread identity: the thread pointer, read as %fs:0 (the x86-64 TLS ABI's self
 * pointer, equal to the fs base: the daemon enables the fast path only for a program
 * that keeps it; no FSGSBASE needed). A thread's shadow stack is the fast_thread slot
 * whose key is its fs base, found by open addressing from a hash of the key and
 * claimed with cmpxchg(0 -> key); tid is read with gettid when the slot's tid is
 * 0. At a thread's exit the daemon sets its slot's tid and depth to 0 and keeps the
 * key: glibc gives a later thread the same TCB, which then finds the slot and reads
 * its own tid.
 */
#ifndef STROBE_FAST_ABI_H
#define STROBE_FAST_ABI_H

#include <stdint.h>

#define FAST_ABI_VERSION 6 /* 3: stops by signal (FAST_STOP_SIGNAL), not int3;
                                 4: threads known by %fs:0, not rdfsbase;
                                 5: budgets (fast_fn quota and credit);
                                 6: FAST_FN_OUTPUT, the area's output pipes,
                                    a write's first bytes in its enter */
#define FAST_RECORD_SIZE 128
#define FAST_MAX_FNS 8192          /* fast-path functions per process image */
#define FAST_THREADS 256           /* threads with a shadow stack at once */
#define FAST_DEPTH 128             /* shadow frames per thread */
#define FAST_RING_RECORDS (1u << 17) /* 16 MiB of records; a power of two */
#define FAST_DATA_BYTES 104        /* payload of a FAST_REC_DATA record */
/* Records an enter leaves free: one exit for every frame that can be pushed. */
#define FAST_EXIT_HEADROOM (FAST_THREADS * FAST_DEPTH)

/* Record kinds. An enter is followed, in the same reservation, by a FAST_REC_XMM
 * record when its function's flags have FAST_FN_FP, then by the FAST_REC_DATA
 * records of its capture program's enter items; an exit by those of its exit
 * items (in item order, each item's bytes in one or more records). */
enum fast_rec_kind {
    FAST_REC_ENTER = 1,
    FAST_REC_EXIT = 2,    /* a return through the return trampoline */
    FAST_REC_XMM = 3,     /* xmm0..7 at entry, 16 bytes each: the whole record, no
                             header (it follows its enter) */
    FAST_REC_DATA = 4,
};

/* fast_record.flags */
#define FAST_F_TAIL 1u       /* enter: its return address was already the return
                                trampoline (a tail call from a traced caller): it
                                shares the caller's shadow frame slot */
#define FAST_F_NO_EXIT 2u    /* enter: no shadow frame was pushed (stack full, no
                                thread slot, or re-entered from a signal handler
                                while the recorder ran): its exit is not recorded */
#define FAST_F_NO_THREAD 4u  /* enter: no thread slot: tid is 0 */

struct fast_record {
    uint32_t commit;     /* (uint32_t)(index + 1) once the reservation is complete */
    uint16_t kind;       /* enum fast_rec_kind */
    uint8_t flags;
    uint8_t nrec;        /* records in this reservation, this one included */
    uint32_t fn;         /* index into the fast_fn table */
    int32_t tid;
    uint64_t tsc;        /* rdtsc at the record */
    uint64_t rsp;        /* enter: rsp at entry (the return address's slot);
                            exit: the same value for the frame that returned
                            (rsp at the return trampoline - 8) */
    uint64_t ret;        /* enter: the real return address; exit: the real
                            return address it went back to */
    uint64_t regs[6];    /* enter: rdi, rsi, rdx, rcx, r8, r9;
                            exit: rax, rdx, xmm0 (low 8), xmm1 (low 8), 0, 0 */
    uint64_t spare[5];   /* 0, but in the enter of a write followed under
                            FAST_FN_OUTPUT: its first FAST_OUT_PREFIX bytes in
                            spare[0..2], and in spare[3] how many (bits 0-7) and the
                            pipe (bits 8-15: 1 the first of out_ino, 2 the second) */
};
#define FAST_OUT_PREFIX 24

/* A FAST_REC_DATA record: up to FAST_DATA_BYTES of the bytes one capture-program
 * item copied (an item longer than that fills consecutive records). */
struct fast_data_record {
    uint32_t unused;     /* only a reservation's first record has a commit */
    uint16_t kind;       /* FAST_REC_DATA */
    uint16_t len;        /* bytes valid in data (fewer than asked: the rest could not
                            be read; 0 also when the item's address is unknown) */
    uint64_t addr;       /* the target address data[0] was copied from */
    uint8_t item;        /* the program item (fast_prog.enter[] or exit[]) */
    uint8_t pad;
    uint16_t want;       /* the item's length at this call (its records' bytes past
                            len up to it could not be read; the item may be longer
                            by the time the daemon reads the record) */
    uint8_t pad2[4];
    uint8_t data[FAST_DATA_BYTES];
};

/*
 * Capture programs: what the recorder copies at a call besides the registers, so
 * that the daemon decodes the memory an event shows as it was at the call, not at
 * the drain. Each item copies len bytes from an address computed from the call's
 * registers, its stack, a fixed address, or a pointer an earlier item copied (a
 * struct's member, a list's next node): the daemon learns the items from the reads
 * its decoder makes (ptrace/hooks/capprog.h). Copies go through process_vm_readv on the
 * process itself: an address that is wrong or unmapped copies nothing, never faults.
 */
enum fast_src {
    FAST_SRC_REG = 0,    /* register idx: enter rdi, rsi, rdx, rcx, r8, r9; exit rax, rdx */
    FAST_SRC_STACK = 1,  /* the return address's slot (rsp at entry) */
    FAST_SRC_ABS = 2,    /* address 0: off is the address */
    FAST_SRC_ITEM = 3,   /* the 8-byte pointer at byte at of earlier item idx's copy */
};
#define FAST_ENTER_ITEMS 16
#define FAST_EXIT_ITEMS 8
#define FAST_ITEM_MAX (10 * FAST_DATA_BYTES) /* bytes one item copies, at most */
#define FAST_CALL_DATA_RECORDS 40            /* DATA records one call writes, at most:
                                                the items past it copy nothing */

struct fast_cap {
    uint16_t len;        /* bytes to copy (at most FAST_ITEM_MAX); 0: copies nothing */
    uint8_t src;         /* enum fast_src */
    uint8_t idx;         /* FAST_SRC_REG: the register; FAST_SRC_ITEM: the item */
    uint16_t at;         /* FAST_SRC_ITEM: where the pointer is in that item's bytes */
    uint16_t pad;
    int64_t off;         /* added to the source's address */
};

/* A function's program. The daemon changes it while threads run it: it writes the
 * items before the counts, and a copy made from an item read half-changed is still
 * the true bytes of the address in its record. */
struct fast_prog {
    uint32_t n_enter, n_exit;
    struct fast_cap enter[FAST_ENTER_ITEMS];
    struct fast_cap exit[FAST_EXIT_ITEMS];
};

/* fast_fn.flags */
#define FAST_FN_RECORD 1u    /* record calls (else count only: a sampled function) */
#define FAST_FN_FP 2u        /* copy xmm0..7 into a FAST_REC_XMM record */
#define FAST_FN_EXITS 4u     /* swap the return address to report the exit */
/* Stop for the daemon (only while it is live): at an enter before its program runs
 * (the daemon learns the program from the call's live memory, capprog.h), at an exit
 * before its exit items run (the same for the exit side, or, for libc's write, the
 * daemon reads the output just written: ptrace/hooks/fast_output.c). */
#define FAST_FN_TRAP_ENTER 8u
#define FAST_FN_TRAP_EXIT 16u
/* Record within the function's budget only (a traced function; never libc's write
 * or the execs, whose calls the daemon needs): first its quota, the calls recorded
 * whatever comes (trace.sampleAfter), then its credit, the calls recorded until the
 * daemon looks again (every 100 ms: ptrace/hooks/fast_budget.c), each of which
 * leaves FAST_ROOM_KEPT of the ring free for the functions still within their
 * quota. A call past both is counted only, as a quiet function's (a sample), and
 * the daemon, finding the credit spent (below 0), quiets the function: a flood is
 * stopped by the recorder within its credit, not by a daemon that looks late, and
 * never takes the room of a rare function. */
#define FAST_FN_BUDGET 32u
/* libc's write and writev: a call is followed (recorded with its first bytes, its
 * exit stopped at when the flags have FAST_FN_TRAP_EXIT) only when its fd (rdi) is
 * one of the captured output pipes (fast_area.out_*); a write to a socket, a file
 * or a pipe the program owns returns at once, counted only. The daemon knows a
 * write's bytes in the pipe by its first ones and its return value (the count). */
#define FAST_FN_OUTPUT 64u
/* With FAST_FN_OUTPUT: the function is writev, its first bytes are iov[0]'s. */
#define FAST_FN_IOV 128u
#define FAST_ROOM_KEPT(ring_records) ((ring_records) / 4)
/* How the recorder stops: the thread sends itself FAST_STOP_SIGNAL with
 * rt_tgsigqueueinfo, si_code FAST_STOP_CODE (SI_QUEUE), si_errno FAST_STOP_MAGIC and
 * si_value the area. At the signal-delivery stop rip is just past the recorder's
 * syscall instruction, r8 holds FAST_TRAP_ENTER or FAST_TRAP_EXIT, r9 the
 * trampoline's saved registers (struct fast_saved or fast_ret_saved), r12 the fn and
 * r13 the return address's slot; the tracer resumes the thread without the signal.
 * Why a signal and not an int3: SIGURG's default action is to be ignored, so when
 * the daemon has died (and the kernel detached the program) the stop is a no-op
 * where an int3 would kill the program with SIGTRAP. A program that handles SIGURG
 * itself sees one spurious signal per stop then. The recorder unblocks the signal
 * around the send when the thread blocks it (the stop comes at once); a stop
 * re-sent late (a step kept it) is recognised by the tracer (rip elsewhere) and
 * discarded. */
#define FAST_STOP_SIGNAL 23          /* SIGURG */
#define FAST_STOP_CODE (-1)          /* SI_QUEUE */
#define FAST_STOP_MAGIC 0x5354524f   /* "STRO" */
enum { FAST_TRAP_ENTER = 1, FAST_TRAP_EXIT = 2 };

struct fast_fn {
    uint64_t calls;      /* every call through the trampoline (lock add) */
    uint64_t lost;       /* calls whose records were not written (ring full) */
    uint32_t flags;      /* written by the daemon, read by the recorder */
    uint32_t pad;
    int64_t quota;       /* FAST_FN_BUDGET: the daemon sets it once, the recorder
                            takes one per call while it is above 0 (lock sub) */
    int64_t credit;      /* FAST_FN_BUDGET: the daemon sets it at each look, the
                            recorder takes one per call past the quota (lock sub) */
};

struct fast_frame {
    uint64_t ret;        /* the real return address */
    uint64_t rsp;        /* rsp at entry: where the return address lives */
    uint32_t fn;
    uint32_t pad;
};

struct fast_thread {
    uint64_t key;        /* the owner's thread pointer (its fs base); 0: free */
    int32_t tid;         /* 0: to be read with gettid */
    uint32_t depth;      /* frames in use */
    uint32_t busy;       /* the recorder runs for this thread (signal re-entry) */
    uint32_t pad;
    uint64_t lost_exits; /* frames not pushed: the stack was full */
    struct fast_frame frames[FAST_DEPTH];
};

struct fast_area {
    uint32_t version;    /* FAST_ABI_VERSION */
    uint32_t ring_records;
    int32_t pid;         /* the process this area belongs to (process_vm_readv) */
    uint32_t pad0;
    uint64_t ret_tramp;  /* the return trampoline's address in the target */
    /* Daemon death: the daemon stores rdtsc in live at each drain. Once
     * rdtsc - live exceeds live_timeout_tsc (nonzero), the recorder only counts
     * and pops: nothing new is recorded or pushed. */
    volatile uint64_t live;
    uint64_t live_timeout_tsc;
    uint64_t no_thread;  /* enters without a thread slot (table full) */
    /* The pipes the daemon reads the output from (FAST_FN_OUTPUT), known by
     * fstat's st_dev and st_ino. out_fds has bit fd set for each fd below 64 that
     * was one of them when the area was made: a write to such an fd is checked
     * with fstat (the program may have closed and reused it), one to any other fd
     * is not followed. */
    uint64_t out_fds;
    uint64_t out_dev;
    uint64_t out_ino[2];
    uint64_t pad1[4];
    /* Cache lines of their own: every writer touches head, only the daemon tail. */
    volatile uint64_t head __attribute__((aligned(64)));
    volatile uint64_t tail __attribute__((aligned(64)));
    uint8_t pad2[56];
};

/* Offsets of the parts of an area; its size. */
#define FAST_FNS_OFF ((uint64_t)sizeof(struct fast_area))
#define FAST_PROGS_OFF (FAST_FNS_OFF + (uint64_t)FAST_MAX_FNS * sizeof(struct fast_fn))
#define FAST_THREADS_OFF (FAST_PROGS_OFF + (uint64_t)FAST_MAX_FNS * sizeof(struct fast_prog))
#define FAST_RING_OFF \
    ((FAST_THREADS_OFF + (uint64_t)FAST_THREADS * sizeof(struct fast_thread) + 4095) & \
     ~(uint64_t)4095)
#define FAST_AREA_SIZE (FAST_RING_OFF + (uint64_t)FAST_RING_RECORDS * FAST_RECORD_SIZE)

/* What an entry trampoline saves on the stack and passes to the recorder's enter
 * (the registers live at a function's entry), in this order from its start. */
struct fast_saved {
    uint64_t rdi, rsi, rdx, rcx, r8, r9, rax, r10;
    uint8_t xmm[8][16];
};

/* What the return trampoline saves and passes to the recorder's exit. */
struct fast_ret_saved {
    uint64_t rax, rdx;
    uint8_t xmm0[16], xmm1[16];
};

/*
 * The recorder's two entry points (System V calls from the trampolines, with the
 * stack 16-byte aligned; flags and every caller-saved register may be clobbered,
 * xmm registers are not touched: the blob is built -mgeneral-regs-only):
 *
 *   void fast_enter(struct fast_area *a, struct fast_saved *s, uint32_t fn,
 *                   uint64_t *ret_slot);
 *       Counts the call, writes its records (when fn's flags record and the
 *       daemon is live; its program's enter items copied), pushes a shadow frame
 *       and stores a->ret_tramp in *ret_slot (when the flags have FAST_FN_EXITS
 *       and a frame could be pushed).
 *
 *   uint64_t fast_exit(struct fast_area *a, struct fast_ret_saved *s,
 *                      uint64_t entry_rsp);
 *       Pops the shadow frame whose rsp is entry_rsp (and the frames above it, which
 *       a longjmp or an exception abandoned; and below it, the tail callers sharing
 *       its slot), records the exit (with its program's exit items when the ring
 *       has room for them too), and returns the real return address.
 *       Never fails: a frame it cannot find cannot happen for a return through the
 *       trampoline; if the table was corrupted it returns 0 (the thread then
 *       faults at address 0, a crash the daemon reports).
 */

/* Where the search for the thread slot of fs base key starts (then linear probing):
 * TCBs are page-aligned and far apart, the multiply mixes the high bits down. */
static inline uint32_t fast_thread_hash(uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 56);
}

_Static_assert(sizeof(struct fast_record) == FAST_RECORD_SIZE, "enter/exit record size");
_Static_assert(sizeof(struct fast_data_record) == FAST_RECORD_SIZE, "data record size");
_Static_assert(sizeof(struct fast_area) % 64 == 0, "area header size");
_Static_assert((FAST_RING_RECORDS & (FAST_RING_RECORDS - 1)) == 0, "ring size");

#endif
