"""docs/atlas.md: every shipped variant spec checked, one table of variants × properties."""

from derive.atlas.render import atlas_page


def rendered():
    return atlas_page()
