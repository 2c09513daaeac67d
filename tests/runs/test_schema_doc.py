"""docs/run-folder.md lists exactly the records and fields of the schema."""

from __future__ import annotations

from pathlib import Path

import msgspec

from torchtop.runs import records
from torchtop.runs.schema_doc import SECTIONS, schema_markdown, with_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-folder.md"


def test_the_documented_schema_is_the_generated_one() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert with_schema(text) == text, "run `python -m torchtop.runs.schema_doc` and commit"


def test_every_struct_of_the_schema_has_its_row() -> None:
    documented = {struct for _, structs in SECTIONS for struct in structs}
    schema = {
        value
        for value in vars(records).values()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value not in (records.Part, records.JournalRecord)
    }
    assert documented == schema


def test_each_journal_kind_is_described_in_the_prose_too() -> None:
    prose = DOC.read_text(encoding="utf-8").split(schema_markdown())[0]
    for struct in records.RECORD_TYPES:
        tag = struct.__struct_config__.tag
        assert f"`{tag}`" in prose or f'"{tag}"' in prose, struct.__name__
