#include "runner/check/unittest_reporter.h"

namespace warden {

std::string_view unittest_reporter_source() {
  return R"PY(# Warden's unittest reporter: a `python -m unittest` run names every test it ends on
# stderr, as -v does, whatever verbosity the command asks for.
import sys


def _warden_unittest_verbose():
    argv = list(getattr(sys, "orig_argv", ()))
    started_as_unittest = any(
        (a == "-m" and i + 1 < len(argv) and argv[i + 1] == "unittest") or a == "-munittest"
        for i, a in enumerate(argv)
    )
    if not started_as_unittest:
        return
    import unittest.runner

    runner = unittest.runner.TextTestRunner
    original_init = runner.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        if self.verbosity < 2:
            self.verbosity = 2

    runner.__init__ = __init__


def _warden_next_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    system = [p for p in sys.path if p.startswith("/usr/") and os.path.abspath(p) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", system)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_warden_unittest_verbose()
_warden_next_sitecustomize()
del _warden_unittest_verbose, _warden_next_sitecustomize
)PY";
}

Result<UniqueFd> unittest_reporter_file() { return sealed_memfd("warden-unittest-reporter", unittest_reporter_source());
}

}  // namespace warden
