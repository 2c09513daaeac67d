"""Rule expressions: a safe subset of Python with three-valued logic over missing metrics."""

from __future__ import annotations

import pytest

from torchtop.diagnosis.expressions import Expression, ExpressionError


def value(text: str, **metrics: object) -> object:
    return Expression.parse(text).evaluate(metrics)


@pytest.mark.parametrize(
    ("text", "metrics", "expected"),
    [
        ("a > 0.5", {"a": 0.6}, True),
        ("a > 0.5", {"a": 0.4}, False),
        ("a > 0.5 and b < 1", {"a": 0.6, "b": 0.5}, True),
        ("a > 0.5 or b < 1", {"a": 0.1, "b": 2}, False),
        ("not flag", {"flag": False}, True),
        ("0 < a <= 1", {"a": 1}, True),
        ("0 < a <= 1", {"a": 0}, False),
        ("2 * a - 1", {"a": 0.75}, 0.5),
        ("-a + 1", {"a": 0.25}, 0.75),
        ("a / b", {"a": 1, "b": 4}, 0.25),
        ("min(a, b) + max(a, b) + abs(c)", {"a": 1, "b": 2, "c": -3}, 6),
        ("a if flag else b", {"a": 1, "b": 2, "flag": False}, 2),
        ("name == 'rank 1'", {"name": "rank 1"}, True),
    ],
)
def test_expressions_evaluate_like_python(
    text: str, metrics: dict[str, object], expected: object
) -> None:
    assert value(text, **metrics) == expected


@pytest.mark.parametrize(
    ("text", "metrics", "expected"),
    [
        # A comparison on a missing metric is unknown, never True or False.
        ("a > 0.5", {}, None),
        ("a > 0.5", {"a": None}, None),
        ("not a > 0.5", {}, None),
        ("not flag", {}, None),
        # Unknown propagates through and/or unless the other side decides.
        ("a > 0.5 and b > 0", {"b": 1}, None),
        ("a > 0.5 and b > 0", {"b": -1}, False),
        ("a > 0.5 or b > 0", {"b": 1}, True),
        ("a > 0.5 or b > 0", {"b": -1}, None),
        # Arithmetic, functions and conditionals on a missing metric are missing too.
        ("2 * a - 1", {}, None),
        ("min(a, b)", {"a": 1}, None),
        ("a if flag else 1", {"a": 2}, None),
        # Division by zero is not a measurement.
        ("a / b", {"a": 1, "b": 0}, None),
    ],
)
def test_missing_metrics_make_the_result_unknown(
    text: str, metrics: dict[str, object], expected: object
) -> None:
    assert value(text, **metrics) is expected


@pytest.mark.parametrize(
    "text",
    ["a > 0.5", "not a > 0.5", "not (a > 0.5)", "a < 0.5 or not b", "not (a > 1 and b)", "a != 1"],
)
def test_a_rule_never_fires_on_a_missing_metric_nor_by_negation(text: str) -> None:
    expression = Expression.parse(text)
    assert expression.holds({}) is False
    assert expression.holds({"a": None, "b": None}) is False


def test_holds_only_for_true_not_for_truthy_values() -> None:
    assert Expression.parse("a").holds({"a": 1}) is False
    assert Expression.parse("a").holds({"a": True}) is True
    assert Expression.parse("a > 0").holds({"a": 1}) is True


def test_parse_collects_the_metric_names_but_not_the_functions() -> None:
    expression = Expression.parse("max(a, b) > 0.1 and not c or d if e else f")
    assert expression.names == frozenset("abcdef")


@pytest.mark.parametrize(
    "text",
    [
        "a.real > 0",  # attribute access
        "__import__('os')",  # calls other than min/max/abs
        "open('x')",
        "len(a)",
        "min(a, key=abs)",  # keyword arguments
        "a[0] > 1",  # subscripts
        "(lambda: 1)()",
        "lambda x: x",
        "[a, b]",
        "{'a': 1}",
        "a ** 2",  # operators outside the allowed arithmetic
        "a // 2",
        "a in b",
        "a is None",
        "f'{a}'",
        "(a := 1)",
        "(x for x in a)",
        "None",
    ],
)
def test_disallowed_syntax_is_refused_when_parsed(text: str) -> None:
    with pytest.raises(ExpressionError):
        Expression.parse(text)


@pytest.mark.parametrize("text", ["a >", "a > 0.5 and", "", "import os"])
def test_text_that_is_not_an_expression_is_refused(text: str) -> None:
    with pytest.raises(ExpressionError, match="not an expression"):
        Expression.parse(text)


def test_the_error_message_quotes_the_expression() -> None:
    with pytest.raises(ExpressionError, match=r"'a\.real > 0'"):
        Expression.parse("a.real > 0")


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [({}, True), ({"m": None}, True), ({"m": 0.1}, True), ({"m": 0.9}, False)],
)
def test_known_says_whether_a_metric_was_measured_and_is_never_unknown_itself(
    metrics: dict[str, object], expected: bool
) -> None:
    expression = Expression.parse("not known(m) or m < 0.5")
    assert expression.evaluate(metrics) is expected
    assert expression.names == frozenset({"m"})


@pytest.mark.parametrize("text", ["known(1)", "known(a, b)", "known(a + b)", "known(m=a)"])
def test_known_takes_one_metric_name_and_nothing_else(text: str) -> None:
    with pytest.raises(ExpressionError, match="known"):
        Expression.parse(text)
