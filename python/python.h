/*
 * python.h - the Python collector: CPython processes adopted from the process
 * collector when they reach Py_RunMain (core/collector.h, "adoption"), traced by
 * an agent that runs inside them (python/agent/_strobe_agent) and talks to the
 * daemon over a socket only the user can reach. docs/PYTHON.md has the mechanism.
 * strobe.c registers it with collector_register(), before the native collector.
 */
#ifndef STROBE_PYTHON_H
#define STROBE_PYTHON_H

#include "core/collector.h"

extern const struct collector_methods python_collector;

#endif
