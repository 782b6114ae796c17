/*
 * pydump.h - a stuck Python test's stacks from CPython's own dump (faulthandler's
 * text, which the runner has the test's processes print before it kills them):
 * Python's frames in place of the interpreter's C frames.
 */
#ifndef STROBE_TESTRUN_PYDUMP_H
#define STROBE_TESTRUN_PYDUMP_H

struct collector_stacks;

/* Each thread of dump (faulthandler's "Thread 0x...:" blocks) becomes the frames of
 * the native thread of st whose thread_pointer it names, innermost first, as
 * "module.function" with file and line, own_frame its innermost frame under root;
 * the state, system call and wait the native stacks read stay. A thread st does not
 * have is added (tid 0). Returns how many threads dump has. */
int pydump_stacks(const char *dump, const char *root, struct collector_stacks *st);

#endif
