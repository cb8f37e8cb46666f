"""What the report page's layouts share: Jinja2 templates whose every value is inert, and how a
section shows numbers, times and plots (docs/report.md).

Each section of the page is a template filled from its result's JSON as the page embeds it
(parsed back), so the page never shows a number the JSON lacks. A template is named
``package:file``: the file in that package's ``templates/`` folder (a question's section in
its own folder, ``trace_analyzer.questions.ranks:ranks.html``); a name without a package is
one of this package's, the shared macros (``macros.html``: a sortable table and its cells, a
plot's ``<img>``, a titled list).

The environment escapes what it writes (``autoescape``), as every HTML output of traceana
shows text from a trace (``safe.html_text``): control characters as the text of their escapes
(a browser acts on a bidirectional override and draws other controls as nothing), then
HTML-escaped, so that no name makes an element or an attribute, or reorders what follows;
None is nothing. Only markup is written as it is: a macro's output, a filled template, or
``Markup`` (the page's own styles, script and JSON blocks). The filters show counts and other
numbers as the JSON holds them (``num``, ``signed``), and every time as the text outputs
write it (numbers.py: ``duration`` of ns, ``from_us`` of µs, ``change_us`` a change in µs,
``instant``), in the unit that suits it (``7.891 s``, never ``7,891,466.0 µs``).
"""

from __future__ import annotations

import base64
import html
from functools import cache
from importlib import resources
from typing import Any

import jinja2
import orjson
from markupsafe import Markup

from trace_analyzer.numbers import change, duration, from_us, instant, percent
from trace_analyzer.render.safe import html_text

__all__ = ["Markup", "change_us", "esc", "fill", "num", "pct"]

SHARED = "trace_analyzer.render"  # the package of a template named without one


def num(v: object) -> str:
    """Return a number ``v`` as text: integers grouped by thousands, floats in full, booleans
    as JSON writes them, None as nothing."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    return f"{v:,}"


def pct(v: float | None) -> str:
    """Return a percentage ``v`` (already ×100) as the text outputs write it, without its
    sign: at most two decimals (``numbers.percent``: ``5.05``), None as nothing."""
    return "" if v is None else percent(v).removesuffix(" %")


def change_us(us: float | None) -> str:
    """Return a change of a duration the JSON holds in µs as the text outputs write it, with
    its sign (``numbers.change``: ``+1.2 ms``), None as nothing."""
    return "" if us is None else change(us * 1000)


def signed(v: float | None) -> str:
    """Return a change ``v`` as text: ``num`` with its sign (``+`` when above 0)."""
    return "" if v is None else ("+" if v > 0 else "") + num(v)


def esc(v: object) -> str:
    """Return ``v`` as inert HTML text (``safe.html_text``), None as nothing: what a template
    writes for a value."""
    return "" if v is None else html_text(v)


def _inert(v: object) -> object:
    """What the environment writes for a value (its ``finalize``): markup as it is, anything
    else as inert text (``esc``), which autoescape then leaves alone."""
    return v if hasattr(v, "__html__") else Markup(esc(v))


def json_attr(value: object) -> Markup:
    """Return ``value`` as JSON in an attribute value: HTML-escaped only, as the page's script
    parses it back (``esc`` would show a raw control character as ``\\x85``, not JSON)."""
    return Markup(html.escape(orjson.dumps(value).decode()))


def png_uri(png: bytes) -> str:
    """Return ``png`` as a ``data:`` URI: the page fetches nothing."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _source(name: str) -> tuple[str, str, Any]:
    package, _, file = name.rpartition(":")
    path = resources.files(package or SHARED).joinpath("templates", file)
    return path.read_text(encoding="utf-8"), str(path), lambda: True


@cache
def environment() -> jinja2.Environment:
    """Return the environment every page template is filled in (autoescape, ``_inert``)."""
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_source),
        autoescape=True,
        finalize=_inert,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        num=num,
        pct=pct,
        from_us=from_us,
        change_us=change_us,
        signed=signed,
        duration=duration,
        instant=instant,
        json_attr=json_attr,
        png_uri=png_uri,
    )
    return env


def fill(template: str, /, **values: Any) -> Markup:
    """Return the template named ``template`` (``package:file``) filled with ``values``."""
    return Markup(environment().get_template(template).render(**values))
