"""Text from a trace is data: how the renderers make it inert, and how they show warnings.

Names, warnings and notes can hold anything a trace file holds. For a terminal, control
characters (C0 and C1 controls, DEL, bidirectional overrides and isolates) are shown as the
text of an escape (``\\x1b``, ``\\u202e``), never sent, and line breaks become spaces: the
reader sees that a name holds an escape, the terminal receives none (JSON keeps the name as
it is). Markdown also backslash-escapes the characters that would make markup (``<`` and
``&`` of raw HTML, ``|`` of a table, ``*``, the backtick, ``[``, ``]``, ``~`` and the
backslash) and breaks what GitHub would link bare (``unlinked``: ``https://x``, ``www.x``,
``a@b.cd``); HTML shows controls the same way, then escapes with ``html.escape``. CSV
(render/csv.py) shows them as escapes too. The files for other tools have their own
rules: ``xml_text`` (GraphML) shows the characters XML 1.0 cannot hold the same way, and
``dot_quoted`` quotes a DOT value. A warning that says events were dropped (the
word "dropped", whether the export says it or traceana does) is emphasised and says that gaps
may be missing events: bold in Markdown and HTML, marked ``!!`` in a terminal.

The two text styles (``Style``: a terminal table, Markdown) are named here, as polars' table
formatter names them, so that every module of the text renderers can import them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

# The two text styles, as polars' table formatter names them: a terminal table, Markdown.
Style: TypeAlias = Literal["ASCII_MARKDOWN", "MARKDOWN"]
TABLE: Style = "ASCII_MARKDOWN"
MARKDOWN: Style = "MARKDOWN"
ELLIPSIS = "…"

# Characters a terminal would act on or that reorder what it shows: C0 (but tab and line
# feed, and carriage return, which BREAKS takes first), DEL, C1, the Arabic letter mark, the
# directional marks, embeddings, overrides and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
BREAKS = re.compile("[\t\n\r\u2028\u2029]")
# What XML 1.0 cannot hold, even as a character reference: C0 but tab, line feed and carriage
# return; U+FFFE, U+FFFF; surrogates.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
MARKUP = re.compile(r"([\\`*\[\]<>|&~])")
# An underscore that can open or close emphasis: one not between two letters or digits
# (CommonMark's flanking rule: ``a_b`` never does, ``_x_`` and ``::_x`` can). Escaping only
# these keeps ``neuron_hw`` as it is in the source.
EMPHASIS = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# What GitHub's Markdown (cmark-gfm's autolink extension; micromark takes ``WWW.`` too) links
# without the ``<>`` of an autolink: the ``:`` of ``scheme://``, the ``.`` of ``www.``; and
# what is put after an ``@`` so that no address is one text node (``unlinked``).
SCHEME = re.compile(r"(:)(?=//)")
WWW = re.compile(r"(www)\.", re.IGNORECASE)
EMPTY_COMMENT = "<!-- -->"
DROPPED = re.compile(r"\bdropped\b", re.IGNORECASE)
MISSING = "gaps may be missing events"


def escaped(char: str) -> str:
    """Return one character as the text of its escape: ``\\x1b``, ``\\u202e``."""
    n = ord(char)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def visible(text: str, chars: re.Pattern[str] = CONTROL) -> str:
    """Return ``text`` with each of ``chars`` shown as its escape (``escaped``)."""
    return chars.sub(lambda m: escaped(m[0]), text)


def plain(text: object) -> str:
    """Return ``text`` for a terminal: control characters shown as escapes (``\\x1b``), line
    breaks as spaces. Shown rather than removed, so that a name that holds an escape says so
    (and two names that differ only in one stay apart)."""
    return visible(BREAKS.sub(" ", str(text)))


def xml_text(text: str) -> str:
    """Return ``text`` as XML 1.0 can hold it: the characters it cannot (``NOT_XML``) shown
    as escapes (``\\x1b``), everything else as it is."""
    return visible(text, NOT_XML)


def dot_quoted(text: str) -> str:
    """Return ``text`` as a quoted Graphviz DOT string that shows it as written: the
    backslash doubled (Graphviz reads ``\\N``, ``\\G`` and ``\\l`` in labels), the quote
    escaped, line breaks as DOT's ``\\n`` and ``\\r``, other control characters shown as
    escapes. Nothing in it can end the string or start an HTML label."""
    body = text.replace("\\", "\\\\").replace('"', '\\"')
    body = body.replace("\n", "\\n").replace("\r", "\\r")
    return '"' + CONTROL.sub(lambda m: "\\" + escaped(m[0]), body) + '"'


def markdown(text: object) -> str:
    """Return ``text`` as inert Markdown: ``plain``, then markup characters escaped (and an
    underscore that could make emphasis, ``EMPHASIS``), then what GitHub would make a link
    of broken (``unlinked``)."""
    return unlinked(EMPHASIS.sub(r"\\_", MARKUP.sub(r"\\\1", plain(text))))


def unlinked(text: str) -> str:
    """Return escaped Markdown ``text`` with nothing GitHub's autolink extension takes as a
    link: ``\\:`` in ``://`` (``https://x``, ``ftp://``) and ``\\.`` after ``www``
    (``www.x``), each a CommonMark escape the link scanner stops at; and an empty HTML
    comment after each ``@`` (``a@<!-- -->b.cd``). An escape cannot stop an address
    (``a@b.cd``, ``mailto:``, ``xmpp:``): cmark-gfm looks for it in the text once escapes
    are read, so the address must be split into two text nodes, and a comment is the one
    inline that splits them and shows nothing. It also keeps GitHub from mentioning ``@x``."""
    text = SCHEME.sub(r"\\\1", WWW.sub(r"\1\\.", text))
    return text.replace("@", "@" + EMPTY_COMMENT)


def html_text(text: object) -> str:
    """Return ``text`` as inert HTML: ``plain``, then HTML-escaped."""
    return html.escape(plain(text))


def clip(text: str, most: int, keep_end: bool = False) -> str:
    """Return ``text`` cut to at most ``most`` characters, an ellipsis where it was cut: at
    the end, or at the start with ``keep_end`` (``…/neuron_hw/NC0``)."""
    if len(text) <= most:
        return text
    if most <= 1:
        return ELLIPSIS[:most]
    return ELLIPSIS + text[-(most - 1) :] if keep_end else text[: most - 1] + ELLIPSIS


def heading(text: str, style: Style, level: int = 2) -> str:
    """Return ``text`` as a heading in ``style``: in Markdown of ``level`` (``##``), else the
    text alone."""
    return f"{'#' * level} {text}" if style == MARKDOWN else text


def shown(text: object, style: Style) -> str:
    """Return ``text`` made inert for ``style`` (Markdown, or a terminal)."""
    return markdown(text) if style == MARKDOWN else plain(text)


def warning(text: str) -> tuple[str, bool]:
    """Return a warning as shown (``plain``; one that says events were dropped ends by saying
    that gaps may be missing events) and whether it is emphasised (it says so)."""
    text = plain(text)
    if not DROPPED.search(text):
        return text, False
    return (text if MISSING in text else f"{text}; {MISSING}"), True


def warning_texts(warnings: Sequence[str], style: Style, most: int | None = None) -> list[str]:
    """Return ``warnings`` as list items show them in ``style`` (without the ``- ``), the
    emphasised ones bold (Markdown) or marked ``!!`` (a terminal); ``most``: the most
    characters of one warning's own text (None: all)."""
    out = []
    for w in warnings:
        text, loud = warning(w if most is None else clip(w, most))
        if style == MARKDOWN:
            out.append(f"**{markdown(text)}**" if loud else markdown(text))
        else:
            out.append(f"!! {text}" if loud else text)
    return out


def warning_items(warnings: Sequence[str], style: Style) -> list[str]:
    """Return the list lines of ``warnings`` in ``style`` (``warning_texts``, each ``- ``)."""
    return [f"- {t}" for t in warning_texts(warnings, style)]


def warning_block(warnings: Sequence[str], style: Style, title: str = "warnings") -> list[str]:
    """Return the titled list of ``warnings`` a report opens with (none without warnings)."""
    if not warnings:
        return []
    return ["", heading(title, style, 3), "", *warning_items(warnings, style)]


def warnings_html(warnings: Sequence[str], title: str = "Warnings") -> str:
    """Return the page's section of ``warnings`` (nothing without warnings)."""
    if not warnings:
        return ""
    items = []
    for w in warnings:
        text, loud = warning(w)
        items.append(
            f"<li><strong>{html.escape(text)}</strong></li>"
            if loud
            else f"<li>{html.escape(text)}</li>"
        )
    return (
        f'<section class="warnings"><h2>{html.escape(title)}</h2><ul>'
        + "".join(items)
        + "</ul></section>"
    )
