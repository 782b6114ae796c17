"""The agent's value previews and pattern rules, in this interpreter (no daemon)."""
import enum
import importlib.util
import json
import os
import sys

AGENT = os.environ.get("STROBE_AGENT_DIR", os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "python", "agent"))


def _load():
    pkg = os.path.join(AGENT, "_strobe_agent")
    spec = importlib.util.spec_from_file_location(
        "_strobe_agent", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_strobe_agent"] = mod
    spec.loader.exec_module(mod)
    return mod


agent = _load()
from _strobe_agent import names, preview  # noqa: E402


class Color(enum.Enum):
    RED = 1


class Noisy:
    """Every way a preview could run program code raises."""
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1

    def __repr__(self):
        raise AssertionError("repr ran")

    def __getattr__(self, name):
        raise AssertionError("getattr ran")

    @property
    def p(self):
        raise AssertionError("property ran")


class Node:
    def __init__(self, v, nxt=None):
        self.v, self.nxt = v, nxt


class MyError(Exception):
    def __str__(self):
        raise AssertionError("str ran")


def test_scalars():
    pv = preview.preview
    assert [pv(x) for x in (None, True, 3, 2.5)] == [None, True, 3, 2.5]
    assert pv(2 ** 60) == str(2 ** 60)
    assert [pv(float(x)) for x in ("nan", "inf", "-inf")] == ["NaN", "Infinity", "-Infinity"]
    assert pv("x" * 300) == "x" * 256 + "...(truncated)"
    assert pv(b"ab\x00") == "b'ab\\x00'"
    assert pv(Color.RED) == "Color.RED"


def test_containers_are_bounded():
    pv = preview.preview
    assert pv(list(range(20))) == list(range(16)) + ["...(4 more)"]
    d = pv({i: i for i in range(20)})
    assert d["0"] == 0 and d["..."] == "(4 more)" and len(d) == 17
    assert pv({(1, 2): "t"}) == {"(1, 2)": "t"}
    assert pv({1, 2}) == {"@type": "set", "items": [1, 2]}
    assert pv([[[[1]]]], max_depth=2) == [["<list of 1>"]]


def test_objects_without_running_their_code():
    n = preview.preview(Noisy())
    assert n["@type"] == "Noisy" and n["a"] == 1 and "b" not in n and "p" not in n
    assert n["@id"].startswith("0x")
    e = preview.preview(MyError("boom", 3))
    assert e == {"@type": "MyError", "message": "boom, 3", "args": ["boom", 3]}
    assert preview.exception_summary(KeyError("k")) == {"type": "KeyError", "message": "'k'"}


def test_depth_and_cycles():
    a = Node(1)
    a.nxt = a
    got = preview.preview(a)
    assert got["v"] == 1 and got["nxt"] == "<cycle %s>" % got["@id"]
    chain = Node(1, Node(2, Node(3, Node(4))))
    got = preview.preview(chain, max_depth=2)
    assert got["nxt"]["v"] == 2 and got["nxt"]["nxt"].startswith("<Node at 0x")


def test_budget_keeps_json_valid_and_bounded():
    big = [{"k%d" % i: "v" * 200 for i in range(16)} for _ in range(16)]
    text = json.dumps(preview.preview(big, max_depth=5, max_output=4096))
    assert len(text) < 12000 and "more)" in text


def test_pattern_rules():
    m = lambda p, n: names.Pattern(p).matches(n, "/r/x.py", "/r")  # noqa: E731
    assert m("shop.pricing.*", "shop.pricing.discount")
    assert not m("shop.*", "shop.pricing.discount")
    assert m("shop.**", "shop.pricing.Cart.total")
    assert m("shop.**.total", "shop.total") and m("**.total", "total")
    assert not m("shop.pricing.discount", "shop.pricing.discounts")
    assert names.Pattern("@file:x.py").matches("a.b", "/r/x.py", "/r")
    assert not names.Pattern("@usercode").matches(
        "a", "/r/.venv/lib/site-packages/a.py", "/r")
    assert names.Pattern("@usercode").matches("a", "/r/app/a.py", "/r")


def test_module_names():
    assert names.module_name("/r/shop/pricing.py", "/r", "m") == "shop.pricing"
    assert names.module_name("/r/shop/__init__.py", "/r", "m") == "shop"
    assert names.module_name("/elsewhere/x.py", "/r", "json.decoder") == "json.decoder"
    assert names.suggest("shop.pricing.dicsount", ["shop.pricing.discount", "a.b"]) == [
        "shop.pricing.discount"]
