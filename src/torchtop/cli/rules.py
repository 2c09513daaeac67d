"""`torchtop rules [ID]`: its options, and the rule tree or one rule described
(`diagnosis.describe`)."""

from __future__ import annotations

import argparse
import json
import sys

from torchtop.cli.options import Verbs, format_option, rules_option
from torchtop.cli.shared import EXIT_OK, load_tree
from torchtop.errors import InputError

EXAMPLES = """examples:
  torchtop rules                     the rule tree
  torchtop rules dataloader-starved  one rule: when it fires, why, its fixes"""


def register(verbs: Verbs) -> None:
    rules = verbs.add_parser(
        "rules", rules_command, EXAMPLES, help="list the rule tree, or show one rule"
    )
    rules.add_argument("rule_id", nargs="?", metavar="ID")
    rules_option(rules)
    format_option(rules, "the tree (or the rule) as text, or as JSON")


def rules_command(args: argparse.Namespace) -> int:
    from torchtop.diagnosis.describe import describe_rule, describe_tree, rule_json, tree_json

    tree = load_tree(args.rules)
    as_json = args.format == "json"
    if args.rule_id is None:
        sys.stdout.write(_json(tree_json(tree)) if as_json else describe_tree(tree))
        return EXIT_OK
    if args.rule_id not in tree.rules:
        raise InputError(
            args.rule_id, f"no such rule (see `torchtop rules`; {len(tree.rules)} rules)"
        )
    rule = args.rule_id
    sys.stdout.write(_json(rule_json(tree, rule)) if as_json else describe_rule(tree, rule))
    return EXIT_OK


def _json(document: object) -> str:
    return json.dumps(document, indent=2) + "\n"
