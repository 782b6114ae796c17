/*
 * poll.h - memory polls: a background sampler per poll that reads a session's
 * targets through the collector's memory slot every interval and stores each sample
 * as a variable_snapshot event in the session's timeline, interleaved with
 * everything else the program does (spec 002 phase 1e, 003 debug_read poll).
 *
 * A poll holds its session only for the duration of one sample
 * (session_target_get/put), never across its waits: stopping a session is not
 * delayed by a poll, and stop, delete and daemon shutdown end the session's polls
 * at once (a condition variable, no sleeping) and join their threads. A poll ends
 * by itself after its duration, when the program's processes are gone, or when the
 * session ends. Each poll thread produces into a ring of its own (base/ring.h),
 * attached to the store for its lifetime.
 */
#ifndef STROBE_POLL_H
#define STROBE_POLL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "core/collector.h"

#define POLL_INTERVAL_MIN_MS 50
#define POLL_INTERVAL_MAX_MS 5000
#define POLL_DURATION_MIN_MS 100
#define POLL_DURATION_MAX_MS 30000
#define POLL_MAX_PER_SESSION 4       /* polls running at once in one session */
#define POLL_VALUE_JSON_MAX 2048     /* a value's JSON in a snapshot; longer: replaced */
#define POLL_TEXT_MAX 1000           /* the snapshot's one-line text */

struct poll_request {
    pid_t pid;                       /* 0: the main process */
    const struct collector_mem_target *targets;
    int n_targets;                   /* 1..MEMORY_MAX_TARGETS */
    int depth;                       /* 1-5 */
    int interval_ms, duration_ms;    /* within the bounds above */
};

struct poll_started {
    int poll_id;                     /* > 0, unique in the daemon */
    int n_polled;                    /* targets that resolved now and are sampled */
    int expected_samples;
    int n_results;
    struct collector_mem_result results[MEMORY_MAX_TARGETS]; /* the read made to check
                                        the targets, one per target (errors included) */
};

/* Checks the targets with one read now and starts the sampler for those that
 * resolve. -1 with SESSION_NOT_FOUND, PROCESS_EXITED, NOT_IMPLEMENTED (no memory
 * slot), LIMIT_EXCEEDED (POLL_MAX_PER_SESSION polls run already), or the first
 * target's own error when none resolves (out->results then say why, each). Free out
 * with poll_started_free either way. */
int poll_start(const char *session_id, const struct poll_request *req,
               struct poll_started *out, struct strobe_error *e);
void poll_started_free(struct poll_started *p);

/* Ends the polls of session_id: join false only tells them to stop (any thread,
 * e.g. when the program exits); join true also waits for their threads (never
 * while holding a session). */
void polls_end_session(const char *session_id, bool join);
/* Polls running now in session_id. */
int polls_running(const char *session_id);
/* Stops and joins every poll (daemon shutdown, before the sessions end). */
void polls_shutdown(void);

/* ---- the snapshot's shape (pure, for tests) ------------------------------- */

/* Samples of a poll: one at start and one every interval while within duration. */
int poll_expected_samples(int interval_ms, int duration_ms);
/* The data JSON {"values":{target:value,...},"errors":{target:"CODE: sentence"}}
 * ("errors" only when one failed) and the text "a=1 b.c=2" (values cut at 80
 * characters, the whole at POLL_TEXT_MAX) of a sample of r[0..n). Values longer
 * than POLL_VALUE_JSON_MAX characters of JSON are replaced by a string saying so. */
void poll_snapshot_format(const struct collector_mem_result *r, int n,
                          struct strbuf *data, struct strbuf *text);

#endif
