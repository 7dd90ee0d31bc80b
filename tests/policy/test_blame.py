"""An exception raised in a user's policy is theirs (exit 2, naming their line); one raised
only inside demoforge or the libraries it calls stays a demoforge bug (exit 3)."""

import numpy as np

from demoforge.policy.blame import user_error, user_line
from demoforge.policy.metrics import completion_ratio


def _raise(fn):
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("did not raise")


def test_a_users_line_is_named():
    exc = _raise(lambda: np.zeros(2)[5])  # the user's code calling into numpy
    line = user_line(exc)
    assert line is not None and line.startswith(__file__)
    err = user_error("mine:make", "act()", exc)
    assert "policy 'mine:make': act() raised IndexError" in str(err) and __file__ in str(err)


def test_an_exception_inside_demoforge_alone_is_not_the_users():
    exc = None
    try:
        completion_ratio(None, None, None, success=False)  # a demoforge function fed nonsense: a bug of the caller
    except Exception as e:  # the traceback: this frame (user) and demoforge's; keep demoforge's alone
        exc = e.with_traceback(e.__traceback__.tb_next)
    assert exc is not None and user_line(exc) is None
    assert user_error("expert", "act()", exc) is None
    assert user_error("x.py:make", "importing it", exc, always=True) is not None  # loading user code: always theirs
