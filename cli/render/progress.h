/*
 * progress.h - "strobectl: starting the program ... 3s" on stderr while strobectl
 * waits for a slow answer of the daemon (a launch indexing a large program's DWARF,
 * a breakpoint binding, a wait for a stop). Only on a terminal, and only after
 * PROGRESS_DELAY_MS, so that quick answers and pipes never see it; the line is
 * rewritten in place with \r and erased when the answer comes.
 */
#ifndef STROBE_PROGRESS_H
#define STROBE_PROGRESS_H

/* How long a wait stays silent. */
#define PROGRESS_DELAY_MS 300

struct progress;

/* Starts showing what ("starting the program") on stderr if it is a terminal:
 * a thread of its own draws the line once PROGRESS_DELAY_MS have passed, then
 * every second. NULL (nothing to stop) when stderr is not a terminal, what is
 * NULL, or the thread cannot start. */
struct progress *progress_start(const char *what);

/* Stops the thread and erases the line if it was drawn; frees p (NULL is fine). */
void progress_stop(struct progress *p);

#endif
