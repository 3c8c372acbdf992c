"""The task's images as the first message's blocks, or a note for a model without vision (pure)."""

from __future__ import annotations

import base64

from runner.images import TaskImage, image_blocks
from runner.llm.limits import limits_for
from runner.llm.types import Image, Text

SHOT = TaskImage("the opening post by @mona", "image/png", b"\x89PNG\r\n\x1a\nxy")
AFTER = TaskImage("the comment by @mona that asked for this", "image/gif", b"GIF89a..")


def test_each_image_follows_a_line_saying_where_it_came_from() -> None:
    assert image_blocks([SHOT, AFTER], vision=True) == (
        Text("[Image 1 of 2, from the opening post by @mona: data, as the task is]"),
        Image("image/png", base64.b64encode(SHOT.data).decode()),
        Text("[Image 2 of 2, from the comment by @mona that asked for this: data, as the task is]"),
        Image("image/gif", base64.b64encode(AFTER.data).decode()),
    )
    assert image_blocks([], vision=True) == ()


def test_a_model_without_vision_is_told_what_it_cannot_see() -> None:
    (note,) = image_blocks([SHOT, SHOT, AFTER], vision=False)

    assert note == Text(
        "[The task shows 3 images (the opening post by @mona; the comment by @mona that"
        " asked for this) that this model cannot read. Work from the text; if an image"
        " seems to matter, say so in your summary.]"
    )


def test_known_models_read_images_and_an_unknown_local_one_is_taken_not_to() -> None:
    for model in ("claude-sonnet-5-5", "gpt-5", "o3", "gemini-2.5-pro", "openai/gpt-5"):
        assert limits_for(model).vision, model
    assert not limits_for("qwen3-coder:30b").vision
