/*
 * agent_blob.S - embeds the Python agent's files (the .py files of python/agent/_strobe_agent)
 * in the daemon, each as a NUL-terminated string; agent.c writes them out where
 * the target loads them from. A new file of the package: a line below, a row in
 * agent.c's table, a prerequisite in the Makefile.
 */
#define FILE(sym, path) \
    .globl sym; sym: .incbin path; .byte 0

    .section .rodata
    FILE(py_agent_init, "python/agent/_strobe_agent/__init__.py")
    FILE(py_agent_breaks, "python/agent/_strobe_agent/breaks.py")
    FILE(py_agent_channel, "python/agent/_strobe_agent/channel.py")
    FILE(py_agent_crash, "python/agent/_strobe_agent/crash.py")
    FILE(py_agent_hooks, "python/agent/_strobe_agent/hooks.py")
    FILE(py_agent_names, "python/agent/_strobe_agent/names.py")
    FILE(py_agent_preview, "python/agent/_strobe_agent/preview.py")
    FILE(py_agent_recorder, "python/agent/_strobe_agent/recorder.py")
    FILE(py_agent_stacks, "python/agent/_strobe_agent/stacks.py")

    .section .note.GNU-stack, "", @progbits
