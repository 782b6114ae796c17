/*
 * memory.c - debug_memory requests against a session (memory.h): the collector's
 * memory slot, called with the session held, and the files that take `bytes` reads.
 *
 * A file is created with O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600, under a 0700
 * directory of the private state directory; its name joins the session id, the time
 * and random bits, so it is neither predictable nor reused. The files stay until the
 * user removes them (they are what the agent asked to keep).
 */
#include "core/memory.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/paths.h"
#include "core/session.h"

/* $STROBE_HOME/memory, created 0700 and checked to be a directory of ours. */
static int dump_dir(char *out, size_t cap, struct strobe_error *e)
{
    return strobe_private_dir(NULL, "memory", out, cap, e);
}

/* Writes r's bytes to a new file of the dump directory; its path into r->file. */
static int save_bytes(const char *dir, const char *id, struct collector_mem_result *r,
                      struct strobe_error *e)
{
    char path[PATH_MAX + 128];
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
        uint64_t nonce = 0;
        if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
            nonce ^= (uint64_t)clock() << 20 ^ (uint64_t)getpid();
        snprintf(path, sizeof path, "%s/%.64s-0x%" PRIx64 "-%" PRIx64 ".bin", dir, id,
                 r->address, nonce);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return err_set(e, ERR_INTERNAL, "cannot create a file in %s: %s", dir, strerror(errno));
    size_t done = 0;
    while (done < r->size) {
        ssize_t n = write(fd, r->bytes + done, r->size - done);
        if (n <= 0) {
            int err = errno;
            close(fd);
            unlink(path);
            return err_set(e, ERR_INTERNAL, "cannot write %s: %s", path, strerror(err));
        }
        done += (size_t)n;
    }
    close(fd);
    if (!(r->file = strdup(path)))
        return err_set(e, ERR_INTERNAL, "out of memory");
    return 0;
}

/* The thread whose frame a request without threadId reads: the selected one
 * (collector_pause_better) of req's process, when it names one, as gdb reads in
 * the selected frame; 0 when nothing is paused. */
static pid_t selected_thread(const struct session_target *st,
                             const struct collector_mem_request *req)
{
    struct collector_pause ps[64];
    int n = collector_pauses(st->collector, st->target, ps, 64, NULL); /* -1: no pauses */
    struct collector_pause best = {0};
    for (int i = 0; i < n && i < 64; i++)
        if ((!req->pid || ps[i].pid == req->pid) && collector_pause_better(&ps[i], &best))
            best = ps[i];
    return best.tid;
}

int session_memory(const char *id, const struct collector_mem_request *req,
                   struct collector_mem_result *out, struct strobe_error *e)
{
    struct session_target st;
    if (session_target_get(id, &st, e) != 0)
        return -1;
    struct collector_mem_request in_frame = *req;
    if (!in_frame.tid)
        in_frame.tid = selected_thread(&st, req);
    if (!in_frame.tid && in_frame.frame) {
        session_target_put(&st);
        return err_set(e, ERR_VALIDATION, "'frame' reads a frame of a paused thread "
                       "(threadId, default the one that stopped at a breakpoint or step), and "
                       "no thread is paused: set a breakpoint, or debug_continue action "
                       "\"pause\".");
    }
    int rc = collector_memory(st.collector, st.target, &in_frame, out, e);
    session_target_put(&st);
    if (rc != 0)
        return -1;
    char dir[PATH_MAX];
    bool have_dir = false;
    for (int i = 0; i < req->n_targets; i++) {
        struct collector_mem_result *r = &out[i];
        struct strobe_error fe = {0};
        if (!r->bytes || r->error != ERR_NONE)
            continue;
        if ((have_dir || (have_dir = dump_dir(dir, sizeof dir, &fe) == 0)) &&
            save_bytes(dir, id, r, &fe) == 0)
            continue;
        r->error = fe.code;
        free(r->error_message);
        r->error_message = strdup(fe.msg);
    }
    return 0;
}
