"""Credentials inside URLs (``https://user:password@host``) are never repeated in a message.

A Server URL may carry a user and password for a reverse proxy in ``--url`` or ``POWERCONTEXT_URL``; errors, the
doctor's checks and the CLI's lines show such a URL with its user information replaced by ``***``.
"""

from __future__ import annotations

import re

# scheme://userinfo@ — userinfo runs to the last "@" before the path, query or fragment (a password may hold "@").
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s?#]*@")
MASK = "***"


def mask_credentials(text: str) -> str:
    """``text`` with the user information of every ``scheme://…@`` URL in it replaced by ``***``."""
    if "@" not in text:
        return text
    return _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
