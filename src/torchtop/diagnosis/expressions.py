"""Conditions and scores in rule files: a small, safe subset of Python expressions.

`dataloader_share > 0.05 and gpu_utilization < 0.8` reads as it would in Python, but only
names of metrics, numbers, booleans, comparisons, `and`/`or`/`not`, arithmetic, `x if c else y`,
`min`/`max`/`abs` and `known(metric)` are allowed; anything else is refused when the rule is
loaded.

A metric that was not measured (None) makes every comparison on it unknown, and unknown
propagates through `and`/`or`/`not` as in three-valued logic, so a rule never fires, nor
fires by negation, on evidence that does not exist. `known(metric)` is the one way to ask
whether a metric was measured (never unknown itself): a fix withheld where a measurement
says so, and offered where nothing was measured (a saved trace), reads
`not known(m) or m < 0.5`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: a / b if b else None,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs}


class ExpressionError(ValueError):
    """The text is not an allowed expression."""


class Expression(msgspec.Struct, frozen=True):
    """A parsed rule expression, with the metric names it reads."""

    text: str
    tree: ast.expr
    names: frozenset[str]

    @staticmethod
    def parse(text: str) -> Expression:
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as exc:
            raise ExpressionError(f"not an expression: {text!r} ({exc.msg})") from None
        names: set[str] = set()
        for node in ast.walk(tree):
            _check_node(node, text)
            if isinstance(node, ast.Name) and node.id not in (*_FUNCTIONS, "known"):
                names.add(node.id)
        return Expression(text, tree, frozenset(names))

    def evaluate(self, metrics: Mapping[str, object]) -> object:
        """The value, or None when it depends on a metric that was not measured."""
        return _eval(self.tree, metrics)

    def holds(self, metrics: Mapping[str, object]) -> bool:
        return self.evaluate(metrics) is True


_ALLOWED = (
    ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.BinOp,
    ast.Name, ast.Load, ast.Constant, ast.IfExp, ast.Call,
    *_COMPARE, *_ARITHMETIC,
)  # fmt: skip


def _check_node(node: ast.AST, text: str) -> None:
    if not isinstance(node, _ALLOWED):
        raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
    if isinstance(node, ast.Call) and _is_known(node):
        return
    if isinstance(node, ast.Call) and not (
        isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords
    ):
        raise ExpressionError(f"only min, max, abs and known(metric) may be called in {text!r}")
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | bool | str):
        raise ExpressionError(f"constant {node.value!r} is not allowed in {text!r}")


def _eval(node: ast.expr, metrics: Mapping[str, object]) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            if name not in metrics:
                return None
            return metrics[name]
        case ast.BoolOp(op=ast.And(), values=values):
            return _and([_eval(v, metrics) for v in values])
        case ast.BoolOp(op=ast.Or(), values=values):
            return _or([_eval(v, metrics) for v in values])
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            value = _eval(operand, metrics)
            return None if value is None else not value
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            value = _eval(operand, metrics)
            return None if value is None else -value
        case ast.Compare():
            return _compare(node, metrics)
        case ast.BinOp(left=left, op=op, right=right):
            a, b = _eval(left, metrics), _eval(right, metrics)
            return None if a is None or b is None else _ARITHMETIC[type(op)](a, b)
        case ast.IfExp(test=test, body=body, orelse=orelse):
            condition = _eval(test, metrics)
            if condition is None:
                return None
            return _eval(body if condition else orelse, metrics)
        case ast.Call(args=[ast.Name(id=name)]) if _is_known(node):
            return metrics.get(name) is not None
        case ast.Call(func=ast.Name(id=name), args=args):
            values = [_eval(a, metrics) for a in args]
            return None if any(v is None for v in values) else _FUNCTIONS[name](*values)
    raise ExpressionError(f"cannot evaluate {ast.dump(node)}")


def _is_known(node: ast.Call) -> bool:
    """`known(metric)`: one metric name, nothing else."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "known"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and not node.keywords
    )


def _compare(node: ast.Compare, metrics: Mapping[str, object]) -> bool | None:
    left = _eval(node.left, metrics)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _eval(right_node, metrics)
        if left is None or right is None:
            return None
        try:
            holds = _COMPARE[type(op)](left, right)
        except TypeError:
            return None  # e.g. a label compared with a number: unknown, not an error
        if not holds:
            return False
        left = right
    return True


def _and(values: list[object]) -> bool | None:
    if any(v is not None and not v for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: list[object]) -> bool | None:
    if any(v is not None and v for v in values):
        return True
    return None if any(v is None for v in values) else False
