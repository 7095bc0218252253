"""Base classes of RLX passes and pipelines, and their options.

A pass is a frozen dataclass whose fields are its options (xDSL's convention):

    @dataclass(frozen=True)
    class MyPass(RlxPass):
        name = "rlx-my-pass"
        summary = "One line for --help."
        alignment: int = option(64, "arena alignment in bytes", power_of_two=True)

        def run(self, module: ir.Operation) -> None: ...

On the command line options read as in MLIR: `rlx-my-pass{alignment=128}`.
An option declares its valid values next to its default (`minimum`, `maximum`,
`power_of_two`); every instance is checked against them when it is built, from
a pipeline string or from Python, so a pass never runs with an option it cannot
honour.
A pass reports failure by emitting an error diagnostic at the offending op's
location and raising `PassFailure`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional, Union

from mlir import ir

from ..errors import RlxError


class PassFailure(RlxError):
    """Raised by a pass after it has emitted its error diagnostics."""


class PassOptionError(RlxError, ValueError):
    """A pass option that does not exist, does not parse, or is out of its valid range."""


@dataclasses.dataclass(frozen=True)
class Valid:
    """The values an integer option accepts: [minimum, maximum], optionally powers of two only."""

    minimum: Optional[int] = None
    maximum: Optional[int] = None
    power_of_two: bool = False

    def describe(self) -> str:
        kind = "a power of two" if self.power_of_two else "an integer"
        if self.minimum is not None and self.maximum is not None:
            return f"{kind} in [{self.minimum}, {self.maximum}]"
        if self.minimum is not None:
            return f"{kind} >= {self.minimum}"
        if self.maximum is not None:
            return f"{kind} <= {self.maximum}"
        return kind

    def accepts(self, value: int) -> bool:
        return (
            (self.minimum is None or value >= self.minimum)
            and (self.maximum is None or value <= self.maximum)
            and (not self.power_of_two or (value > 0 and value & (value - 1) == 0))
        )


def option(
    default: Any,
    help: str,
    *,
    minimum: Optional[int] = None,
    maximum: Optional[int] = None,
    power_of_two: bool = False,
) -> Any:
    """Declares a pass option with its default, a one-line description and, for integers, its valid range."""
    metadata: dict[str, Any] = {"help": help}
    if minimum is not None or maximum is not None or power_of_two:
        metadata["valid"] = Valid(minimum, maximum, power_of_two)
    return dataclasses.field(default=default, metadata=metadata)


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


def _check_value(value: Any, field: dataclasses.Field, where: str) -> None:
    """Raises PassOptionError unless `value` has the option's type and lies in its valid range."""
    kind = type(field.default)
    # bool is an int in Python: neither may stand for the other.
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise PassOptionError(f"{where}: expected {kind.__name__}, got {value!r}")
    valid = field.metadata.get("valid")
    if valid is not None and not valid.accepts(value):
        raise PassOptionError(f"{where}: expected {valid.describe()}, got {value}")


@dataclasses.dataclass(frozen=True)
class Configurable:
    """Something named on the command line, with dataclass fields as options."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def __post_init__(self) -> None:
        for field in self.option_fields():
            if "help" in field.metadata:  # declared with option()
                _check_value(getattr(self, field.name), field, self._where(field))
        self.check_options()

    def check_options(self) -> None:
        """Checks that a range cannot express (between options, against the machine); raises PassOptionError."""

    @classmethod
    def _where(cls, field: dataclasses.Field) -> str:
        return f"option '{_cli_name(field.name)}' of '{cls.name}'"

    @classmethod
    def option_fields(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def describe_options(cls) -> list[tuple[str, str, Any]]:
        """(command-line name, help with the valid range, default) for each option."""
        described = []
        for f in cls.option_fields():
            help_text, valid = f.metadata.get("help", ""), f.metadata.get("valid")
            described.append((_cli_name(f.name), f"{help_text} ({valid.describe()})" if valid else help_text, f.default))
        return described

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
            values[field.name] = _parse_value(raw, type(field.default), cls._where(field))
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

    # False for a pass that never creates an op of an RLX dialect (a linalg- or LLVM-level
    # pass): after it, a module that held no RLX op before still holds none, and the
    # pipeline skips the RLX verifier (see pass_pipeline._python_pass).
    creates_rlx_ops: ClassVar[bool] = True

    def run(self, module: ir.Operation) -> Optional[bool]:
        """Transforms `module` in place. May return False to say it changed nothing: after an
        RLX pass that verified the module, the RLX verifier is then not run again (it walks
        every op in Python: seconds on a program of tens of thousands of ops)."""
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
