import derive


def test_all_names_importable():
    for name in derive.__all__:
        assert hasattr(derive, name), name


def test_settings_reject_unknown_keys():
    import pytest

    from derive.errors import InputError

    with pytest.raises(InputError, match="unknown setting 'exampels'; expected one of"):
        derive.Settings().merge(exampels=3)
