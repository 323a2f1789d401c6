"""Waiting on a report page in the browser tests."""

import time


def wait_until(page, expression: str, arg=None, timeout: float = 15.0) -> None:
    """Evaluate ``expression`` (with ``arg``) from Python until it is truthy. playwright's own
    ``wait_for_function`` polls inside the page with ``eval``, which the reports' Content Security Policy
    (scripts by nonce only, no 'unsafe-eval') refuses whenever the first check is not already true."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression, arg):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {expression}")
        time.sleep(0.05)
