"""test_patch_threads.py's torture under the fast path (trace.mode "fast", switched on
the running session): the recorder runs in the 16 threads while their jumps come and
go. A module of its own so that it runs on another worker than the int3 variant."""

import pytest

from conftest import VALGRIND
from test_patch_threads import add_remove_under_threads


@pytest.mark.skipif(VALGRIND, reason="the valgrind pass runs the fast path's daemon side "
                    "in test_fastpath")
def test_add_remove_under_threads_fast(mcp, tmp_path):
    add_remove_under_threads(mcp, tmp_path, "fast")
