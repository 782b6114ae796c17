/*
 * install_agents.h - the coding agents `strobe install` knows: where each keeps its
 * user-wide configuration, how it registers an MCP server, and where it reads
 * instructions.
 *
 * To add an agent:
 *   1. add its row to the table in install_agents.c: its --agent name, label, the
 *      program on PATH and the file or directory whose presence means it is
 *      installed, and its targets (each a file and a format: a member of a JSON
 *      object, a TOML table, a markdown block, or a whole file of its own);
 *   2. if it spells the server entry differently from every shape below, add a
 *      shape to enum server_shape and its text to server_json();
 *   3. list it in man/strobe.1 (INSTALL) and in `strobe install --help`;
 *   4. give it a fake configuration in tests/e2e/test_install.py's AGENTS table.
 */
#ifndef STROBE_INSTALL_AGENTS_H
#define STROBE_INSTALL_AGENTS_H

#include <stdbool.h>
#include <stddef.h>

enum target_kind {
    TARGET_JSON,  /* member "strobe" of the object `parent` (install_json.h) */
    TARGET_TOML,  /* a [mcp_servers.strobe] table between markers (install_block.h) */
    TARGET_BLOCK, /* the instructions between markdown markers */
    TARGET_FILE,  /* a file of strobe's own, holding the instructions */
};

enum path_base {
    BASE_HOME,   /* $HOME (or --home) */
    BASE_CONFIG, /* $XDG_CONFIG_HOME, default $HOME/.config */
    BASE_CODEX,  /* $CODEX_HOME, default $HOME/.codex */
};

enum server_shape {
    SHAPE_PLAIN,     /* {"command", "args"} */
    SHAPE_STDIO,     /* {"type": "stdio", "command", "args"} */
    SHAPE_STDIO_ENV, /* the same with "env": {} */
    SHAPE_OPENCODE,  /* {"type": "local", "command": [exe, "mcp"], "enabled": true} */
};

enum own_text {
    TEXT_SKILL,  /* SKILL.md: name and description front matter, then the body */
    TEXT_VSCODE, /* *.instructions.md: applyTo front matter, then the body */
};

struct target {
    enum target_kind kind;
    enum path_base base;
    const char *rel;          /* the file, relative to base */
    const char *parent;       /* TARGET_JSON: the object holding the servers */
    enum server_shape shape;  /* TARGET_JSON */
    enum own_text text;       /* TARGET_FILE */
    bool own_dir;             /* TARGET_FILE: its directory is strobe's too */
};

#define AGENT_TARGETS 2

struct agent {
    const char *name;  /* for --agent */
    const char *label; /* for people */
    const char *binary;
    enum path_base detect_base;
    const char *detect_rel[2]; /* any of these existing means installed */
    struct target targets[AGENT_TARGETS]; /* rel NULL: unused */
    const char *note; /* said after configuring it, or NULL */
};

extern const struct agent install_agents[];
extern const size_t install_agent_count;

/* The text a target holds for the strobe executable exe (malloc'd): the server's
 * JSON value, the TOML table, the markdown block's body or the whole file. */
char *target_text(const struct target *t, const char *exe);

/* The markers of TARGET_TOML and TARGET_BLOCK. */
void target_markers(const struct target *t, const char **begin, const char **end);

#endif
