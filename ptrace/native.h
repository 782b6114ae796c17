/*
 * native.h - the native collector: programs that run as machine code (C, C++, Rust)
 * traced through ptrace by one tracer thread per program (tracer.h), with patterns
 * resolved against their DWARF (resolve.h) and crashes recorded before the signal
 * is delivered (crash.h). strobe.c registers it with collector_register().
 */
#ifndef STROBE_NATIVE_H
#define STROBE_NATIVE_H

#include "core/collector.h"

extern const struct collector_methods native_collector;

#endif
