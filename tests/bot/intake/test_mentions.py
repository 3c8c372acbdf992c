"""bot.intake.mentions: what GitHub shows of a comment, and how often it names the handle.

Each mention's case through triage is in test_triggers.py (`MENTIONS`).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.intake.mentions import mentions, visible_text

# Markdown and raw HTML syntax, for bodies that open and close constructs.
MARKUP = st.text(alphabet="<>!-/?[]()&#;=\"' \n\t`~*_>\\@neoprcdiv1.", max_size=120)


def test_mentions_counts_each_mention() -> None:
    assert mentions("@neo a\n\n> @neo b\n\n@Neo c `@neo`", "@neo") == 2


def test_visible_text_keeps_line_structure() -> None:
    assert visible_text("a\n```\nb\n```\nc") == "a\n\n\n\nc"


@settings(max_examples=300, deadline=None)
@given(body=MARKUP | st.text(max_size=120).map(lambda t: "@neo " + t))
def test_counting_reads_the_same_text_as_visible_text(body: str) -> None:
    # Counting parses only the blocks that name the handle; visible_text all.
    expected = len(re.findall(r"(?<![\w@./+-])@neo(?![\w/@-]|\.\w)", visible_text(body), re.I))
    assert mentions(body, "@neo") == expected
