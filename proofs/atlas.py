"""docs/atlas.md: every shipped variant spec checked, one table of variants × properties."""

from derive.atlas.render import atlas_markdown


def rendered() -> dict[str, str]:
    return {"atlas.md": atlas_markdown()}
