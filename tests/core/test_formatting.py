def test_counts_take_the_noun_in_its_number() -> None:
    from tui.core.formatting import counted

    assert counted(1, "user") == "1 user"
    assert counted(31, "user") == "31 users"
    assert counted(1, "output token") == "1 output token"
    assert counted(0, "query", "queries") == "0 queries"


def test_a_prediction_within_half_a_second_is_on_time_never_minus_zero() -> None:
    from tui.core.formatting import prediction_error

    assert prediction_error(-0.3) == "on time (within 1 s)"
    assert prediction_error(-359.6) == "off by -360 s"
    assert prediction_error(12.0) == "off by +12 s"
