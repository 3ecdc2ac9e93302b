"""Bearer tokens: which presented values match a configured secret (`caller_from`, shared by
`reme serve` and `reme mcp`)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from reme.access import ServerConfig, caller_from
from reme.errors import AuthenticationError, ConfigError

SECRET = "alice-secret-0123456789"
TOKENS = ServerConfig(tokens=[{"name": "alice-app", "secret": SECRET, "users": ["alice"]}]).tokens
# Every character Python calls whitespace, but the two HTTP lets around a header value.
OTHER_SPACE = [chr(c) for c in range(0x110000) if chr(c).isspace() and chr(c) not in " \t"]


@given(st.text(" \t", max_size=3), st.text(" \t", max_size=3))
def test_spaces_and_tabs_around_the_secret_are_ignored(before: str, after: str) -> None:
    assert caller_from(TOKENS, f"Bearer {before}{SECRET}{after}").name == "alice-app"


@given(st.text(st.sampled_from(OTHER_SPACE + [" ", "\t"]), max_size=3),
       st.text(st.sampled_from(OTHER_SPACE + [" ", "\t"]), max_size=3), st.sampled_from(OTHER_SPACE),
       st.booleans())
def test_any_other_whitespace_around_the_secret_is_an_unknown_token(before: str, after: str, space: str,
                                                                    at_end: bool) -> None:
    presented = f"{before}{SECRET}{space}{after}" if at_end else f"{before}{space}{SECRET}{after}"
    with pytest.raises(AuthenticationError, match="unknown bearer token"):
        caller_from(TOKENS, f"Bearer {presented}")


@pytest.mark.parametrize("secret", [f" {SECRET}", f"{SECRET}\t", f"{SECRET}\u00a0", f"\u2003{SECRET}"])
def test_a_configured_secret_with_whitespace_around_it_is_refused_at_start_up(secret: str) -> None:
    with pytest.raises(ConfigError, match="whitespace"):
        ServerConfig.load(None, tokens=[{"name": "a", "secret": secret, "users": ["*"]}])
