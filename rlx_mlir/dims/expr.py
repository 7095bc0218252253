"""Dimension expressions: sizes written in symbols (`"BATCH*SEQ"`, `"PAST_SEQ+SEQ"`, `512`).

The language is deliberately tiny: non-negative integer literals, symbols
(identifiers such as `BATCH`, `SEQ`, `ROWS`, `PAST_SEQ` or any user name), the
binary operators `+ - * //` with the usual precedence (`*` and `//` bind
tighter; all are left-associative) and parentheses.  `//` is floor division;
dividing by a literal zero is an error when parsing, by a symbolic expression
that is zero an error at evaluation.  An expression nests at most `MAX_DEPTH`
operators and parentheses deep (the tree is walked recursively).

    >>> parse_dim("BATCH * SEQ").evaluate({"BATCH": 2, "SEQ": 7})
    14
    >>> str(parse_dim("(SEQ + 1) * 2").substitute({"SEQ": 4}))
    '10'

A dimension of a symbolic shape is an `int` (static) or a `DimExpr`; the
helpers here convert between those and their attribute spelling (an integer
or a string).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Union

from ..errors import RlxError

# RLX's well-known symbols (rlx_ir::sym); any other identifier is a user symbol.
BATCH, SEQ, ROWS, PAST_SEQ = "BATCH", "SEQ", "ROWS", "PAST_SEQ"

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[+\-*()]))")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2}
MAX_DEPTH = 100  # far beyond any real size expression, far below Python's recursion limit


class DimExprError(RlxError, ValueError):
    """A dimension expression that does not parse or cannot be evaluated."""


@dataclass(frozen=True)
class DimExpr:
    """An expression tree: `op` is None for a leaf (`value` an int or a symbol name)."""

    op: Union[str, None]
    value: Union[int, str, None] = None
    lhs: Union["DimExpr", None] = None
    rhs: Union["DimExpr", None] = None

    @property
    def symbols(self) -> frozenset[str]:
        """The symbols the expression mentions."""
        if self.op is None:
            return frozenset([self.value]) if isinstance(self.value, str) else frozenset()
        return self.lhs.symbols | self.rhs.symbols

    def evaluate(self, binding: Mapping[str, int]) -> int:
        """The size under `binding`; DimExprError names an unbound symbol or a division by zero."""
        if self.op is None:
            if isinstance(self.value, int):
                return self.value
            if self.value not in binding:
                raise DimExprError(f"symbol '{self.value}' is not bound")
            return int(binding[self.value])
        a, b = self.lhs.evaluate(binding), self.rhs.evaluate(binding)
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        if b == 0:
            raise DimExprError(f"division by zero in '{self}'")
        return a // b

    def substitute(self, binding: Mapping[str, int]) -> Union[int, "DimExpr"]:
        """Replaces the bound symbols; an int when nothing symbolic is left."""
        if not self.symbols & set(binding):
            return self
        if self.symbols <= set(binding):
            return self.evaluate(binding)
        if self.op is None:
            return self
        lhs, rhs = (_as_expr(side.substitute(binding)) for side in (self.lhs, self.rhs))
        return DimExpr(self.op, lhs=lhs, rhs=rhs)

    def __str__(self) -> str:
        return self._format(0)

    def _format(self, outer: int) -> str:
        if self.op is None:
            return str(self.value)
        mine = _PRECEDENCE[self.op]
        # Left-associative: the right side needs parentheses at equal precedence.
        text = f"{self.lhs._format(mine)}{_SPELLING[self.op]}{self.rhs._format(mine + 1)}"
        return f"({text})" if mine < outer else text


_SPELLING = {"+": " + ", "-": " - ", "*": "*", "//": "//"}


def _as_expr(value: Union[int, DimExpr]) -> DimExpr:
    return value if isinstance(value, DimExpr) else DimExpr(None, value)


def symbol(name: str) -> DimExpr:
    """The expression naming one symbol."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise DimExprError(f"'{name}' is not a symbol name (letters, digits and '_', not starting with a digit)")
    return DimExpr(None, name)


def parse_dim(text: str) -> DimExpr:
    """Parses an expression; DimExprError says what is wrong and where."""
    tokens, position = [], 0
    text = str(text)
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if not match:
            column = len(text) - len(text[position:].lstrip()) + 1
            raise DimExprError(f"cannot parse dimension '{text}' at column {column}")
        number, name, operator = match.groups()
        tokens.append(int(number) if number is not None else name if name is not None else ("op", operator))
        position = match.end()
    if not tokens:
        raise DimExprError("empty dimension expression")
    parser = _Parser(tokens, text)
    expr = parser.expression(1)
    if parser.index != len(tokens):
        raise DimExprError(f"cannot parse dimension '{text}': unexpected '{_show(tokens[parser.index])}'")
    if _depth(expr) > MAX_DEPTH:
        raise _too_deep(text)
    return expr


def _abbreviated(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _too_deep(text: str) -> DimExprError:
    return DimExprError(
        f"dimension expression '{_abbreviated(text)}' is too deep: "
        f"it nests more than {MAX_DEPTH} operators and parentheses"
    )


def _depth(expr: DimExpr) -> int:
    """The height of the expression tree, found without recursion."""
    deepest, stack = 0, [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if node.op is not None:
            stack += [(node.lhs, depth + 1), (node.rhs, depth + 1)]
    return deepest


def _show(token) -> str:
    return token[1] if isinstance(token, tuple) else str(token)


class _Parser:
    """Precedence climbing over the token list."""

    def __init__(self, tokens: list, text: str):
        self.tokens, self.text, self.index = tokens, text, 0
        self.open_parentheses = 0  # bounds the parser's own recursion

    def atom(self) -> DimExpr:
        if self.index >= len(self.tokens):
            raise DimExprError(f"cannot parse dimension '{self.text}': it ends early")
        token = self.tokens[self.index]
        self.index += 1
        if token == ("op", "("):
            self.open_parentheses += 1
            if self.open_parentheses > MAX_DEPTH:
                raise _too_deep(self.text)
            inner = self.expression(1)
            self.open_parentheses -= 1
            if self.index >= len(self.tokens) or self.tokens[self.index] != ("op", ")"):
                raise DimExprError(f"cannot parse dimension '{self.text}': missing ')'")
            self.index += 1
            return inner
        if isinstance(token, tuple):
            raise DimExprError(f"cannot parse dimension '{self.text}': unexpected '{token[1]}'")
        return DimExpr(None, token)

    def expression(self, minimum: int) -> DimExpr:
        lhs = self.atom()
        while self.index < len(self.tokens):
            token = self.tokens[self.index]
            if not (isinstance(token, tuple) and token[1] in _PRECEDENCE and _PRECEDENCE[token[1]] >= minimum):
                break
            self.index += 1
            rhs = self.expression(_PRECEDENCE[token[1]] + 1)
            lhs = DimExpr(token[1], lhs=lhs, rhs=rhs)
            if token[1] == "//" and rhs == DimExpr(None, 0):
                raise DimExprError(f"division by zero in '{self.text}'")
        return lhs


Dim = Union[int, DimExpr]


def as_dim(value: Union[int, str, DimExpr]) -> Dim:
    """An int, a DimExpr, or a string parsed into one (a plain number string becomes an int)."""
    if isinstance(value, bool):
        raise DimExprError(f"a dimension is an integer or a symbol expression, got {value!r}")
    if isinstance(value, (int, DimExpr)):
        return value
    if isinstance(value, str):
        expr = parse_dim(value)
        return expr.value if expr.op is None and isinstance(expr.value, int) else expr
    raise DimExprError(f"a dimension is an integer or a symbol expression, got {value!r}")


def evaluate_dim(dim: Dim, binding: Mapping[str, int]) -> int:
    return dim if isinstance(dim, int) else dim.evaluate(binding)


def dim_symbols(dims) -> set[str]:
    """The symbols mentioned by a sequence of dims."""
    found: set[str] = set()
    for d in dims:
        if isinstance(d, DimExpr):
            found |= d.symbols
    return found


def format_dims(dims) -> str:
    """`[BATCH, SEQ, 512]`."""
    return "[" + ", ".join(str(d) for d in dims) + "]"
