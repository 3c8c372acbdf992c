from __future__ import annotations

import pytest
from pydantic import Field

from runner.tools import ToolError
from runner.tools.schema import ToolInput, input_schema, parse


class Author(ToolInput):
    """An author (this docstring is pydantic's business, not the model's)."""

    name: str = Field(description="Full name.")


class Book(ToolInput):
    """A book."""

    title: str = Field(description="A property named title is kept.")
    pages: int = Field(default=100, ge=1, description="Page count.")
    subtitle: str | None = Field(default=None, description="Optional subtitle.")
    authors: list[Author] = Field(default_factory=list, description="Who wrote it.")


def test_schema_is_clean_and_inlined() -> None:
    assert input_schema(Book) == {
        "additionalProperties": False,
        "properties": {
            "title": {"description": "A property named title is kept.", "type": "string"},
            "pages": {
                "default": 100,
                "description": "Page count.",
                "minimum": 1,
                "type": "integer",
            },
            "subtitle": {"description": "Optional subtitle.", "type": "string"},
            "authors": {
                "description": "Who wrote it.",
                "items": {
                    "additionalProperties": False,
                    "description": (
                        "An author (this docstring is pydantic's business, not the model's)."
                    ),
                    "properties": {"name": {"description": "Full name.", "type": "string"}},
                    "required": ["name"],
                    "type": "object",
                },
                "type": "array",
            },
        },
        "required": ["title"],
        "type": "object",
    }


def test_parse_returns_the_model() -> None:
    book = parse(Book, {"title": "Dune", "authors": [{"name": "Frank Herbert"}]})

    assert book == Book(title="Dune", authors=[Author(name="Frank Herbert")])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"title": "Dune", "pages": 0},
            "invalid input: pages: Input should be greater than or equal to 1",
        ),
        ({"title": "Dune", "isbn": "x"}, "invalid input: isbn: Extra inputs are not permitted"),
        ({}, "invalid input: title: Field required"),
    ],
)
def test_parse_errors_are_tool_errors(args: dict[str, object], message: str) -> None:
    with pytest.raises(ToolError) as raised:
        parse(Book, args)  # type: ignore[arg-type]

    assert str(raised.value) == message
