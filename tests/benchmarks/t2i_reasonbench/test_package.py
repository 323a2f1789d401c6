"""The T2I-ReasonBench package: the examples of every module run."""

from __future__ import annotations


def test_the_modules_examples_run():
    import doctest
    import importlib
    import pkgutil

    from t2ireason.benchmarks import t2i_reasonbench

    # the package and each of its modules
    modules = [t2i_reasonbench] + [importlib.import_module(f"{t2i_reasonbench.__name__}.{m.name}")
                                   for m in pkgutil.iter_modules(t2i_reasonbench.__path__)]
    runs = [doctest.testmod(m) for m in modules]
    result = doctest.TestResults(sum(r.failed for r in runs), sum(r.attempted for r in runs))
    assert result.attempted >= 5 and result.failed == 0
