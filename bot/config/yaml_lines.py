"""Where a setting is written in `.github/neo.yml`: the line of a path in the composed YAML.

Pure. The loader composes the document into nodes before it constructs
values; each node keeps the mark where it starts, so a problem pydantic
finds at `schedules[1].cron` can say the line a maintainer should look at.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import yaml

__all__ = ["line_of", "pairs", "start_line", "text_key"]

_STR = "tag:yaml.org,2002:str"


def start_line(node: yaml.Node) -> int:
    """The 1-based line where `node` starts."""
    return int(node.start_mark.line) + 1


def text_key(node: yaml.Node) -> str | None:
    """The key as the file wrote it, when YAML reads it as text; None for `on`, `1`, `~`..."""
    if isinstance(node, yaml.ScalarNode) and node.tag == _STR:
        return str(node.value)
    return None


def pairs(node: yaml.MappingNode) -> Iterator[tuple[yaml.Node, yaml.Node]]:
    """A mapping's (key, value) nodes, the last of a repeated key only, as loading keeps it.

    Merge keys (`<<: *base`) were flattened into the node when it was
    constructed, so merged settings are found here too.
    """
    last: dict[str, int] = {}
    for index, (key, _) in enumerate(node.value):
        name = text_key(key)
        if name is not None:
            last[name] = index
    for index, (key, value) in enumerate(node.value):
        name = text_key(key)
        if name is None or last[name] == index:
            yield key, value


def line_of(root: yaml.Node | None, loc: Sequence[int | str]) -> int | None:
    """The line of the setting at `loc` (the key's, for a mapping's entry), or None.

    None when the path does not lead to a node of the file: the file has
    no such setting (a required one missing), or `loc` is the whole file.
    """
    if root is None or not loc:
        return None
    node: yaml.Node = root
    line: int | None = None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = next(((k, v) for k, v in pairs(node) if text_key(k) == part), None)
            if found is None:
                return None
            line, node = start_line(found[0]), found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return None
            node = node.value[part]
            line = start_line(node)
        else:
            return None
    return line
