"""Report stage, HTML helpers the sections' layouts share: escaping, the row filter, the table caps.

Tables that list every rank are collapsed, sortable and filterable: the page's script sorts
`table.sortable` and filters with `input.filter`.
"""

from __future__ import annotations

from html import escape

from ncclscope.report.facts import printable

MAX_ROWS = 1024  # rows of a collapsed every-rank table
REDACTED_NOTE = (
    "host names, IP/MAC addresses, user names in paths and pointers are replaced by consistent "
    "pseudonyms (host-1, ip-1.2, user-1, 0xptr-1)"
)


def e(value: object) -> str:
    """Escaped text for HTML content and attribute values."""
    return escape(printable("" if value is None else str(value), limit=4000), quote=True)


def filter_box() -> str:
    return '<input class="filter" type="search" placeholder="filter rows (rank, host, value…)">'
