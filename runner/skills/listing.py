"""What `neo skills list` prints: the skills a run sees, then those skipped and why (pure)."""

from __future__ import annotations

from runner.skills.discovery import Discovery

__all__ = ["listing"]


def listing(discovery: Discovery) -> str:
    """One line per skill (name, origin, description), then one per skipped file."""
    lines: list[str] = []
    if discovery.skills:
        width = max(len(skill.name) for skill in discovery.skills)
        lines.append(f"{len(discovery.skills)} skill(s):")
        lines.extend(
            f"  {skill.name:<{width}}  {skill.origin}\n  {'':<{width}}  {skill.description}"
            for skill in discovery.skills
        )
    else:
        lines.append("no skills")
    if discovery.skipped:
        lines.append(f"skipped {len(discovery.skipped)}:")
        lines.extend(f"  {each.path}: {each.reason}" for each in discovery.skipped)
    return "\n".join(lines)
