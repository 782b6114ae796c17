import json
from conftest import fixture_path

def test_try(mcp):
    import atexit, shutil
    atexit.register(lambda: shutil.copytree(mcp.world.base, "/tmp/bpt/last", dirs_exist_ok=True))
    w = mcp.world
    r = mcp.call_tool("debug_launch", {"command": fixture_path("poll_ticker"), "projectRoot": w.project, "args": ["100"]})
    sid = r["sessionId"]
    b = mcp.call_tool("debug_breakpoint", {"sessionId": sid, "add": [{"file": "poll_ticker.c", "line": 39, "condition": "n >= 5"}]})
    print(json.dumps(b, indent=1))
    c = mcp.call_tool("debug_continue", {"sessionId": sid, "timeoutMs": 5000})
    print(json.dumps(c, indent=1))
    m = mcp.call_tool("debug_memory", {"sessionId": sid, "threadId": c["threadId"], "targets": [{"variable": "n"}, {"variable": "$rip"}, {"variable": "g_counter"}]})
    print(json.dumps(m, indent=1))
    s = mcp.call_tool("debug_continue", {"sessionId": sid, "action": "step-over", "timeoutMs": 5000})
    print(json.dumps(s, indent=1))
    s = mcp.call_tool("debug_continue", {"sessionId": sid, "action": "step-out", "timeoutMs": 5000})
    print(json.dumps(s, indent=1))
    st = mcp.call_tool("debug_session", {"action": "status", "sessionId": sid})
    print(json.dumps(st.get("paused"), indent=1))
    b = mcp.call_tool("debug_breakpoint", {"sessionId": sid, "remove": "*"})
    print(json.dumps(b, indent=1))
    c = mcp.call_tool("debug_continue", {"sessionId": sid, "timeoutMs": 10000})
    print(json.dumps(c, indent=1))
