"""`strobe install`: registers `strobe mcp` with six coding agents in fake home
directories (HOME under tmp_path, PATH holding only fake agent programs) that hold
existing configurations with unrelated settings. Install merges (the files still
parse, with their old keys and the new server), backs up, is idempotent to the byte;
--uninstall gives back the original bytes; --dry-run changes nothing and names each
file; detection, forcing with --agent, XDG_CONFIG_HOME and CODEX_HOME; malformed
files, symbolic links and foreign tables are reported and left untouched."""

import json
import os
import re
import stat
import subprocess
import tomllib

import pytest

from conftest import STROBE_BIN

EXE = os.path.realpath(STROBE_BIN)

VSCODE_JSONC = ('// my servers\n{\n\t"servers": {\n'
                '\t\t"gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},\n'
                '\t},\n\t"inputs": [],\n}\n')

# name: (config file, its original text, instructions file, its original text or None)
AGENTS = {
    "claude": (".claude.json",
               json.dumps({"numStartups": 3, "projects": {"/src": {"allowedTools": []}}},
                          indent=2),
               ".claude/skills/strobe/SKILL.md", None),
    "codex": (".codex/config.toml", 'model = "o3"\n\n[mcp_servers.other]\ncommand = "other"\n',
              ".codex/AGENTS.md", "# My rules\nUse tabs.\n"),
    "gemini": (".gemini/settings.json",
               json.dumps({"theme": "Dracula", "mcpServers": {
                   "git": {"command": "uvx", "args": ["mcp-server-git"]}}}, indent=2) + "\n",
               ".gemini/GEMINI.md", "Answer briefly."),
    "cursor": (".cursor/mcp.json", '{"mcpServers": {"time": {"command": "uvx"}}}', None, None),
    "opencode": (".config/opencode/opencode.json",
                 '{\n  "$schema": "https://opencode.ai/config.json",\n  "theme": "opencode"\n}\n',
                 ".config/opencode/AGENTS.md", None),
    "vscode": (".config/Code/User/mcp.json", VSCODE_JSONC,
               ".config/Code/User/prompts/strobe.instructions.md", None),
}


def jsonc(text):
    """JSON with whole-line comments and trailing commas, as the fixtures write it."""
    text = re.sub(r"(?m)^\s*//.*$", "", text)
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", text))


def server_of(name, text):
    """The strobe entry of an agent's configuration, and the parsed document."""
    if name == "codex":
        doc = tomllib.loads(text)
        return doc["mcp_servers"]["strobe"], doc
    doc = jsonc(text)
    parent = {"opencode": "mcp", "vscode": "servers"}.get(name, "mcpServers")
    return doc[parent]["strobe"], doc


class Home:
    def __init__(self, tmp_path, env=None):
        self.root = str(tmp_path / "home")
        self.bin = str(tmp_path / "bin")
        os.makedirs(self.root)
        os.makedirs(self.bin)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("XDG_CONFIG_HOME", "CODEX_HOME")}
        self.env.update(HOME=self.root, PATH=self.bin, **(env or {}))

    def path(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, text, mode=0o644):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)

    def read(self, rel):
        with open(self.path(rel)) as f:
            return f.read()

    def snapshot(self):
        """Every file under home: relative path -> (bytes, mode)."""
        out = {}
        for d, _, files in os.walk(self.root):
            for f in files:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    data = fh.read()
                out[os.path.relpath(p, self.root)] = (data, stat.S_IMODE(os.lstat(p).st_mode))
        return out

    def install(self, *args):
        return subprocess.run([STROBE_BIN, "install", *args], env=self.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)


@pytest.fixture
def full_home(tmp_path):
    """A home with all six agents configured for other servers."""
    h = Home(tmp_path)
    for cfg, text, instr, itext in AGENTS.values():
        h.write(cfg, text, 0o600 if cfg.endswith("claude.json") else 0o644)
        if itext is not None:
            h.write(instr, itext)
    return h


def test_install_merges_backs_up_is_idempotent_and_uninstall_restores(full_home):
    h = full_home
    before = h.snapshot()
    r = h.install()
    assert r.returncode == 0, r.stderr
    assert "not found" not in r.stdout
    for name, (cfg, text, instr, itext) in AGENTS.items():
        server, doc = server_of(name, h.read(cfg))
        if name == "opencode":
            assert server == {"type": "local", "command": [EXE, "mcp"], "enabled": True}
            assert doc["theme"] == "opencode" and doc["$schema"].startswith("https://")
        else:
            assert server["command"] == EXE and server["args"] == ["mcp"], server
        # the old settings are all still there
        if name == "claude":
            assert server == {"type": "stdio", "command": EXE, "args": ["mcp"], "env": {}}
            assert doc["numStartups"] == 3 and doc["projects"] == {"/src": {"allowedTools": []}}
        if name == "codex":
            assert doc["model"] == "o3" and doc["mcp_servers"]["other"] == {"command": "other"}
        if name == "gemini":
            assert doc["theme"] == "Dracula" and "git" in doc["mcpServers"]
        if name == "cursor":
            assert doc["mcpServers"]["time"] == {"command": "uvx"}
        if name == "vscode":
            assert server["type"] == "stdio" and doc["servers"]["gh"]["type"] == "http"
            assert h.read(cfg).startswith("// my servers\n")
        # backed up once, private; the mode kept
        bak, mode = h.snapshot()[cfg + ".strobe-backup"]
        assert bak == text.encode() and mode == 0o600
        assert stat.S_IMODE(os.stat(h.path(cfg)).st_mode) == before[cfg][1]
        if instr:
            body = h.read(instr)
            assert "debug_launch" in body and "16 KB" in body
            if itext:
                assert body.startswith(itext) and "<!-- strobe:begin" in body
    skill = h.read(".claude/skills/strobe/SKILL.md")
    assert re.match(r'---\nname: strobe\ndescription: ".+"\n---\n', skill)
    assert len(skill.splitlines()) < 130
    installed = h.snapshot()

    again = h.install()
    assert again.returncode == 0, again.stderr
    assert h.snapshot() == installed
    assert again.stdout.count("already configured") == 11, again.stdout

    r = h.install("--uninstall")
    assert r.returncode == 0, r.stderr
    after = {k: v for k, v in h.snapshot().items() if not k.endswith(".strobe-backup")}
    assert after == before
    assert not os.path.exists(h.path(".claude/skills/strobe"))
    r = h.install("--uninstall")
    assert r.returncode == 0 and "not configured" in r.stdout


def test_dry_run_names_every_file_and_changes_nothing(full_home):
    before = full_home.snapshot()
    r = full_home.install("--dry-run")
    assert r.returncode == 0, r.stderr
    assert full_home.snapshot() == before
    for cfg, _, instr, _ in AGENTS.values():
        assert "+++ %s\n" % full_home.path(cfg) in r.stdout
        if instr:
            assert "+++ %s\n" % full_home.path(instr) in r.stdout
    assert ('+  "mcpServers": {\n+    "strobe": {"type": "stdio", "command": "%s", '
            '"args": ["mcp"], "env": {}}\n+  },\n' % EXE) in r.stdout
    assert "--- /dev/null\n+++ %s" % full_home.path(".claude/skills/strobe/SKILL.md") in r.stdout
    full_home.install()
    installed = full_home.snapshot()
    r = full_home.install("--dry-run", "--uninstall")
    assert r.returncode == 0 and full_home.snapshot() == installed
    # a file install created is shown deleted whole
    assert ("--- %s\n+++ /dev/null\n@@ line 1 @@\n-<!-- strobe:begin"
            % full_home.path(".config/opencode/AGENTS.md")) in r.stdout
    assert '-    "strobe": {"type": "stdio", "command": "%s"' % EXE in r.stdout


def test_detection_by_directory_or_program(tmp_path):
    h = Home(tmp_path)
    os.makedirs(h.path(".gemini"))
    with open(os.path.join(h.bin, "opencode"), "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(os.path.join(h.bin, "opencode"), 0o755)
    r = h.install()
    assert r.returncode == 0, r.stderr
    assert "not found: claude, codex, cursor, vscode (use --agent NAME" in r.stdout
    assert server_of("gemini", h.read(".gemini/settings.json"))[0]["command"] == EXE
    assert server_of("opencode", h.read(".config/opencode/opencode.json"))[0]["enabled"]
    assert not os.path.exists(h.path(".cursor"))
    # forced: configured although nothing says it is installed
    r = h.install("--agent", "cursor")
    assert r.returncode == 0 and "not found" not in r.stdout
    assert h.read(".cursor/mcp.json") == (
        '{\n  "mcpServers": {\n    "strobe": {"command": "%s", "args": ["mcp"]}\n  }\n}\n' % EXE)
    assert "Cursor reads rules per project" in r.stdout
    h.install("--agent=all", "--uninstall")
    assert not os.path.exists(h.path(".cursor/mcp.json"))
    assert not os.path.exists(h.path(".gemini/settings.json"))


def test_xdg_config_home_and_codex_home(tmp_path):
    h = Home(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                        "CODEX_HOME": str(tmp_path / "cx")})
    r = h.install("--agent", "opencode", "--agent", "vscode", "--agent", "codex")
    assert r.returncode == 0, r.stderr
    for p in ("xdg/opencode/opencode.json", "xdg/Code/User/mcp.json", "cx/config.toml",
              "cx/AGENTS.md", "xdg/Code/User/prompts/strobe.instructions.md"):
        assert os.path.exists(str(tmp_path / p)), p
    assert not os.path.exists(h.path(".config")) and not os.path.exists(h.path(".codex"))


def test_malformed_file_reported_with_line_and_untouched(full_home):
    bad = '{\n  "theme": "x",,\n}\n'
    full_home.write(".gemini/settings.json", bad)
    r = full_home.install("--agent", "gemini", "--agent", "cursor")
    assert r.returncode == 1
    assert ("%s: line 2: expected a member name" % full_home.path(".gemini/settings.json")
            in r.stderr), r.stderr
    assert "left untouched: correct it and run strobe install again" in r.stderr
    assert full_home.read(".gemini/settings.json") == bad
    assert not os.path.exists(full_home.path(".gemini/settings.json.strobe-backup"))
    # the other agents were still done
    assert server_of("cursor", full_home.read(".cursor/mcp.json"))[0]["command"] == EXE
    assert "GEMINI.md: strobe added" in r.stdout


def test_symlinked_config_is_not_followed(full_home):
    real = full_home.path("dotfiles/mcp.json")
    full_home.write("dotfiles/mcp.json", '{"mcpServers": {}}')
    os.remove(full_home.path(".cursor/mcp.json"))
    os.symlink(real, full_home.path(".cursor/mcp.json"))
    r = full_home.install("--agent", "cursor")
    assert r.returncode == 1
    assert "mcp.json is a symbolic link, which strobe install does not follow" in r.stderr
    assert os.path.islink(full_home.path(".cursor/mcp.json"))
    assert full_home.read("dotfiles/mcp.json") == '{"mcpServers": {}}'


def test_foreign_toml_table_and_kept_backup(full_home):
    text = 'model = "o3"\n\n[mcp_servers.strobe]\ncommand = "/opt/strobe"\n'
    full_home.write(".codex/config.toml", text)
    full_home.write(".codex/config.toml.strobe-backup", "older backup")
    r = full_home.install("--agent", "codex")
    assert r.returncode == 1
    assert "line 3: a [mcp_servers.strobe] table that strobe install did not write" in r.stderr
    assert full_home.read(".codex/config.toml") == text
    full_home.write(".codex/config.toml", 'model = "o3"\n')
    r = full_home.install("--agent", "codex")
    assert r.returncode == 0 and "config.toml: strobe added" in r.stdout
    # a moved strobe: the entry is updated in place
    full_home.write(".codex/config.toml", full_home.read(".codex/config.toml").replace(
        EXE, "/old/strobe"))
    r = full_home.install("--agent", "codex")
    assert r.returncode == 0 and "config.toml: strobe updated" in r.stdout
    assert tomllib.loads(full_home.read(".codex/config.toml"))["mcp_servers"]["strobe"][
        "command"] == EXE
    assert full_home.read(".codex/config.toml.strobe-backup") == "older backup"


def test_usage_errors(full_home):
    r = full_home.install("--agent", "emacs")
    assert r.returncode == 64 and "unknown agent 'emacs'; the agents are claude" in r.stderr
    r = full_home.install("--frobnicate")
    assert r.returncode == 64 and "unknown option '--frobnicate'" in r.stderr
    r = full_home.install("--agent")
    assert r.returncode == 64 and "--agent needs a value" in r.stderr
    before = full_home.snapshot()
    r = full_home.install("--help")
    assert r.returncode == 0 and "usage: strobe install" in r.stdout
    assert full_home.snapshot() == before
    env = dict(full_home.env, HOME="relative")
    r = subprocess.run([STROBE_BIN, "install"], env=env, text=True, capture_output=True)
    assert r.returncode == 64 and "HOME is not an absolute path" in r.stderr


def test_files_it_cannot_edit(full_home):
    h = full_home
    os.remove(h.path(".cursor/mcp.json"))
    os.makedirs(h.path(".cursor/mcp.json"))
    r = h.install("--agent", "cursor")
    assert r.returncode == 1 and "mcp.json is not a regular file; move it away" in r.stderr
    with open(h.path(".gemini/settings.json"), "r+") as f:
        f.truncate(65 << 20)  # sparse: costs no disk
    r = h.install("--agent", "gemini")
    assert r.returncode == 1 and "settings.json is larger than 64 MiB" in r.stderr
    assert "GEMINI.md: strobe added" in r.stdout
    if os.geteuid() == 0:
        os.chown(h.path(".codex/config.toml"), 65534, 65534)
        r = h.install("--agent", "codex")
        assert r.returncode == 1
        assert "config.toml belongs to another user; run strobe install as its owner" in r.stderr


def test_uninstall_keeps_an_edited_skill(full_home):
    h = full_home
    assert h.install("--agent", "claude").returncode == 0
    skill = ".claude/skills/strobe/SKILL.md"
    h.write(skill, h.read(skill) + "my own note\n")
    r = h.install("--agent", "claude", "--uninstall")
    assert r.returncode == 0
    assert "SKILL.md: changed since strobe install wrote it; left in place" in r.stdout
    assert h.read(skill).endswith("my own note\n")
    assert h.read(".claude.json") == AGENTS["claude"][1]
