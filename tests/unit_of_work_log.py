"""Units of work that record when they are opened and ended, for tests that count them."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from attrs import evolve

from refcore.ports import UnitOfWork, UnitOfWorkFactory
from refcore.services.runtime import Runtime


class CountingUnitOfWork:
    """Wraps a store's unit of work, recording when it is opened and ended."""

    def __init__(self, inner: UnitOfWork, log: list[str]) -> None:
        self._inner = inner
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> Self:
        self._inner.__enter__()
        self._log.append("open")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._log.append("end")
        self._inner.__exit__(exc_type, exc, tb)


def counting(factory: UnitOfWorkFactory, log: list[str]) -> Callable[[], UnitOfWork]:
    """``factory`` with each unit of work it opens recorded in ``log``."""
    return lambda: CountingUnitOfWork(factory(), log)  # type: ignore[return-value]


def counted(runtime: Runtime) -> tuple[Runtime, list[str], list[str]]:
    """The runtime with its read and write units of work recorded: (runtime, reads, writes)."""
    reads: list[str] = []
    writes: list[str] = []
    read_factory: UnitOfWorkFactory = runtime.read_unit_of_work or runtime.unit_of_work
    write_factory = runtime.unit_of_work
    return (
        evolve(
            runtime,
            unit_of_work=counting(write_factory, writes),
            read_unit_of_work=counting(read_factory, reads),
        ),
        reads,
        writes,
    )


class WatchedUnitOfWork(CountingUnitOfWork):
    """Also records the name of every member of the unit of work that a service reached for."""

    def __init__(self, inner: UnitOfWork, log: list[str], touched: list[str]) -> None:
        super().__init__(inner, log)
        self._touched = touched

    def __getattr__(self, name: str) -> Any:
        self._touched.append(name)
        return getattr(self._inner, name)


def watched(runtime: Runtime) -> tuple[Runtime, list[str]]:
    """The runtime with the members its write units of work were asked for recorded, in order.

    Reads keep the store's own factory: a store without one (the memory store) would otherwise
    read through the watched one, and a test's own reads would count as the service's."""
    touched: list[str] = []
    factory = runtime.unit_of_work

    def open_watched() -> UnitOfWork:
        return WatchedUnitOfWork(factory(), [], touched)  # type: ignore[return-value]

    reads = runtime.read_unit_of_work or factory
    return evolve(runtime, unit_of_work=open_watched, read_unit_of_work=reads), touched
