"""Process plumbing shared by `serve` and the tests that start it (no Django here)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def stop_when_parent_dies(parent_pid: int) -> None:
    """A Popen preexec_fn (Linux): the child gets SIGTERM when its parent dies, even by SIGKILL, and stops as it
    would on Ctrl-C. Without it a killed serve leaves daphne holding the port and workers taking runs."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
