"""The manual pages (man/): each renders without a warning from `man --warnings`,
strobe-tools(7) names every tool, field and error code the daemon has, and
strobe-patterns(7) names every wildcard and special pattern."""

import os
import re
import subprocess

import pytest

from conftest import REPO

MAN = os.path.join(REPO, "man")
PAGES = sorted(f for f in os.listdir(MAN) if re.search(r"\.[17]$", f))


def rendered(page):
    """The page as man renders it for a terminal, and what it warned about."""
    r = subprocess.run(["man", "--warnings", "-l", os.path.join(MAN, page)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0"))
    assert r.returncode == 0, r.stderr
    return re.sub(r".\x08", "", r.stdout), r.stderr


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_warnings(page):
    text, warnings = rendered(page)
    assert warnings == "", "%s: %s" % (page, warnings)
    assert len(text) > 500, text


def test_tools_page_names_every_tool_field_and_error(raw):
    raw.initialize()
    text, _ = rendered("strobe-tools.7")
    words = set(re.findall(r"[A-Za-z_][\w-]*", text))
    for tool in raw.ch.result("tools/list")["tools"]:
        assert tool["name"] in words, tool["name"]
        for field in tool["inputSchema"].get("properties", {}):
            assert field in words, "%s.%s is not in strobe-tools(7)" % (tool["name"], field)
    with open(os.path.join(REPO, "base", "error.c")) as f:
        codes = set(re.findall(r'return "([A-Z_]+)";', f.read())) - {"OK"}
    assert codes and codes <= words, sorted(codes - words)


def test_patterns_page_names_the_syntax():
    text, _ = rendered("strobe-patterns.7")
    for item in ("**", "@usercode", "@file:", "INVALID_PATTERN", "511"):
        assert item in text, item
