"""Images the task shows (screenshots in an issue), given to the model after the task (pure).

The worker downloads them on the host (`bot/github/attachments.py`); here they
become the first message's image blocks, each after a line saying where it
came from, so the model can tell the opening post's screenshot from the one
in the comment that asked. A model that cannot read images gets a note
instead, so it knows there was something it did not see.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field

from runner.llm.types import Image, Text

__all__ = ["TaskImage", "image_blocks"]


@dataclass(frozen=True, slots=True)
class TaskImage:
    """One image: where it came from (`label`, e.g. "the opening post by @alice"),
    its media type (png, jpeg, gif or webp, as its bytes say) and its bytes."""

    label: str
    media_type: str
    data: bytes = field(repr=False)


def image_blocks(images: Sequence[TaskImage], *, vision: bool) -> tuple[Text | Image, ...]:
    """The blocks that follow the task's text: each image after its label, or one note."""
    if not images:
        return ()
    count = len(images)
    if not vision:
        where = "; ".join(dict.fromkeys(image.label for image in images))
        return (
            Text(
                f"[The task shows {count} image{'s' if count != 1 else ''} ({where}) that this"
                " model cannot read. Work from the text; if an image seems to matter, say so"
                " in your summary.]"
            ),
        )
    blocks: list[Text | Image] = []
    for number, image in enumerate(images, start=1):
        blocks.append(
            Text(f"[Image {number} of {count}, from {image.label}: data, as the task is]")
        )
        blocks.append(Image(image.media_type, base64.b64encode(image.data).decode("ascii")))
    return tuple(blocks)
