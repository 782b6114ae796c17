/*
 * install_agents.c - the table of coding agents and the text strobe adds to each
 * one's files. Formats and places, as each agent documents them (user scope):
 *   Claude Code  ~/.claude.json "mcpServers"; skills in ~/.claude/skills/NAME/SKILL.md
 *   Codex CLI    $CODEX_HOME/config.toml [mcp_servers.NAME]; $CODEX_HOME/AGENTS.md
 *   Gemini CLI   ~/.gemini/settings.json "mcpServers"; ~/.gemini/GEMINI.md
 *   Cursor       ~/.cursor/mcp.json "mcpServers"; rules only per project or in its UI
 *   OpenCode     $XDG_CONFIG_HOME/opencode/opencode.json "mcp"; .../opencode/AGENTS.md
 *   VS Code      $XDG_CONFIG_HOME/Code/User/mcp.json "servers"; instructions files
 *                (*.instructions.md, applyTo front matter) in Code/User/prompts/
 */
#include "cli/install/install_agents.h"

#include "base/strbuf.h"
#include "cli/install/install_skill.h"

#define MD_BEGIN "<!-- strobe:begin (added by strobe install; strobe install --uninstall " \
                 "removes it) -->"
#define MD_END "<!-- strobe:end -->"
#define TOML_BEGIN "# strobe:begin (added by strobe install; strobe install --uninstall " \
                   "removes it)"
#define TOML_END "# strobe:end"

const struct agent install_agents[] = {
    {"claude", "Claude Code", "claude", BASE_HOME, {".claude.json", ".claude"},
     {{TARGET_JSON, BASE_HOME, ".claude.json", "mcpServers", SHAPE_STDIO_ENV, 0, false},
      {TARGET_FILE, BASE_HOME, ".claude/skills/strobe/SKILL.md", NULL, 0, TEXT_SKILL, true}},
     NULL},
    {"codex", "Codex CLI", "codex", BASE_CODEX, {".", NULL},
     {{TARGET_TOML, BASE_CODEX, "config.toml", NULL, 0, 0, false},
      {TARGET_BLOCK, BASE_CODEX, "AGENTS.md", NULL, 0, 0, false}},
     NULL},
    {"gemini", "Gemini CLI", "gemini", BASE_HOME, {".gemini", NULL},
     {{TARGET_JSON, BASE_HOME, ".gemini/settings.json", "mcpServers", SHAPE_PLAIN, 0, false},
      {TARGET_BLOCK, BASE_HOME, ".gemini/GEMINI.md", NULL, 0, 0, false}},
     NULL},
    {"cursor", "Cursor", "cursor", BASE_HOME, {".cursor", NULL},
     {{TARGET_JSON, BASE_HOME, ".cursor/mcp.json", "mcpServers", SHAPE_PLAIN, 0, false},
      {0}},
     "Cursor reads rules per project (.cursor/rules/) or from its settings, not from a "
     "user file: the strobe tools' own descriptions carry the workflow there"},
    {"opencode", "OpenCode", "opencode", BASE_CONFIG, {"opencode", NULL},
     {{TARGET_JSON, BASE_CONFIG, "opencode/opencode.json", "mcp", SHAPE_OPENCODE, 0, false},
      {TARGET_BLOCK, BASE_CONFIG, "opencode/AGENTS.md", NULL, 0, 0, false}},
     NULL},
    {"vscode", "VS Code", "code", BASE_CONFIG, {"Code", NULL},
     {{TARGET_JSON, BASE_CONFIG, "Code/User/mcp.json", "servers", SHAPE_STDIO, 0, false},
      {TARGET_FILE, BASE_CONFIG, "Code/User/prompts/strobe.instructions.md", NULL, 0,
       TEXT_VSCODE, false}},
     NULL},
};
const size_t install_agent_count = sizeof install_agents / sizeof install_agents[0];

static char *server_json(enum server_shape shape, const char *exe)
{
    struct strbuf sb = {0};
    if (shape == SHAPE_OPENCODE) {
        sb_puts(&sb, "{\"type\": \"local\", \"command\": [");
        sb_json_string(&sb, exe);
        sb_puts(&sb, ", \"mcp\"], \"enabled\": true}");
        return sb_take(&sb);
    }
    sb_puts(&sb, shape == SHAPE_PLAIN ? "{" : "{\"type\": \"stdio\", ");
    sb_puts(&sb, "\"command\": ");
    sb_json_string(&sb, exe);
    sb_puts(&sb, ", \"args\": [\"mcp\"]");
    sb_puts(&sb, shape == SHAPE_STDIO_ENV ? ", \"env\": {}}" : "}");
    return sb_take(&sb);
}

char *target_text(const struct target *t, const char *exe)
{
    struct strbuf sb = {0};
    switch (t->kind) {
    case TARGET_JSON:
        return server_json(t->shape, exe);
    case TARGET_TOML:
        /* a TOML basic string escapes like a JSON one */
        sb_puts(&sb, "[mcp_servers.strobe]\ncommand = ");
        sb_json_string(&sb, exe);
        sb_puts(&sb, "\nargs = [\"mcp\"]\n");
        break;
    case TARGET_BLOCK:
        sb_puts(&sb, install_skill_body);
        break;
    case TARGET_FILE:
        if (t->text == TEXT_SKILL)
            sb_printf(&sb, "---\nname: strobe\ndescription: \"%s\"\n---\n\n",
                      install_skill_summary);
        else
            sb_printf(&sb, "---\napplyTo: \"**\"\ndescription: \"%s\"\n---\n\n",
                      install_skill_summary);
        sb_puts(&sb, install_skill_body);
        break;
    }
    return sb_take(&sb);
}

void target_markers(const struct target *t, const char **begin, const char **end)
{
    *begin = t->kind == TARGET_TOML ? TOML_BEGIN : MD_BEGIN;
    *end = t->kind == TARGET_TOML ? TOML_END : MD_END;
}
