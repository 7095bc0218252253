"""Base classes of RLX passes and pipelines, and their options.

A pass is a frozen dataclass whose fields are its options (xDSL's convention):

    @dataclass(frozen=True)
    class MyPass(RlxPass):
        name = "rlx-my-pass"
        summary = "One line for --help."
        alignment: int = option(64, "arena alignment in bytes")

        def run(self, module: ir.Operation) -> None: ...

On the command line options read as in MLIR: `rlx-my-pass{alignment=128}`.
A pass reports failure by emitting an error diagnostic at the offending op's
location and raising `PassFailure`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Union

from mlir import ir


class PassFailure(Exception):
    """Raised by a pass after it has emitted its error diagnostics."""


class PassOptionError(ValueError):
    """A pass option that does not exist or does not parse."""


def option(default: Any, help: str) -> Any:
    """Declares a pass option with its default and a one-line description."""
    return dataclasses.field(default=default, metadata={"help": help})


def _cli_name(field_name: str) -> str:
    return field_name.replace("_", "-")


def _parse_value(raw: str, kind: type, where: str) -> Any:
    if kind is bool:
        lowered = raw.lower()
        if lowered in ("true", "1", "on", ""):
            return True
        if lowered in ("false", "0", "off"):
            return False
        raise PassOptionError(f"{where}: expected true or false, got '{raw}'")
    try:
        return kind(raw)
    except ValueError:
        raise PassOptionError(f"{where}: expected {kind.__name__}, got '{raw}'") from None


@dataclasses.dataclass(frozen=True)
class Configurable:
    """Something named on the command line, with dataclass fields as options."""

    name: ClassVar[str]
    summary: ClassVar[str]

    @classmethod
    def option_fields(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def describe_options(cls) -> list[tuple[str, str, Any]]:
        """(command-line name, help, default) for each option."""
        return [(_cli_name(f.name), f.metadata.get("help", ""), f.default) for f in cls.option_fields()]

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "Configurable":
        """Builds an instance from `{cli-name: text}` as parsed from `name{k=v ...}`."""
        by_cli = {_cli_name(f.name): f for f in cls.option_fields()}
        values = {}
        for key, raw in options.items():
            field = by_cli.get(key)
            if field is None:
                known = ", ".join(sorted(by_cli)) or "none"
                raise PassOptionError(f"'{cls.name}' has no option '{key}' (options: {known})")
            kind = type(field.default)
            values[field.name] = _parse_value(raw, kind, f"option '{key}' of '{cls.name}'")
        return cls(**values)

    def spelled(self) -> str:
        """The textual form, `name{k=v ...}`, listing options that differ from defaults."""
        changed = [
            f"{_cli_name(f.name)}={_format_value(getattr(self, f.name))}"
            for f in self.option_fields()
            if getattr(self, f.name) != f.default
        ]
        return f"{self.name}{{{' '.join(changed)}}}" if changed else self.name


def _format_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclasses.dataclass(frozen=True)
class RlxPass(Configurable):
    """A module pass written in Python."""

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class RlxPipeline(Configurable):
    """A named sequence of RLX passes and upstream pipeline text."""

    def elements(self) -> list[Union[RlxPass, "RlxPipeline", str]]:
        raise NotImplementedError


def fail(op: ir.Operation, message: str) -> PassFailure:
    """Emits `message` as an error at `op` and returns the exception to raise."""
    op.location.emit_error(message)
    return PassFailure(message)
