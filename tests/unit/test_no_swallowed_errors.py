"""The interpreter and the rules catch their own exceptions so that one modelling gap never stops a file's check;
that also hides bugs. Over every fixture of the repository, none may happen."""

from __future__ import annotations

import logging
from pathlib import Path

from torchls.core.checker import Checker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.failures.append(f"{record.getMessage()}: {record.exc_info[1]!r}")


def test_checking_the_fixtures_swallows_no_exception():
    handler = _Collect()
    logger = logging.getLogger("torchls")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        checker = Checker()
        failures = []
        for path in sorted(FIXTURES.rglob("*.py")):
            handler.failures.clear()
            checker.check(path.read_text(encoding="utf-8"))
            failures += [f"{path.relative_to(FIXTURES)}: {f}" for f in handler.failures]
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert not failures, "\n".join(failures[:20])
