"""Render mcp-sansio's rule tables into the documentation at build time.

The rules of the library live in tables in the code (DESIGN.md, principle 2). These
directives print those tables as they are when the docs are built, so the documentation
cannot drift from the code:

``.. lifecycle-table:: client`` (or ``server``)
    :data:`mcp_sansio._state.TRANSITIONS` for one role: one row per state, one column per
    input, each cell the verdict and, when it changes, the next state.

``.. method-table::`` with ``:era: handshake`` (default) or ``:era: stateless``
    :data:`mcp_sansio._capabilities.METHODS`: method, kind, sender, revisions, gating
    capability, notes.

``.. feature-table::``
    :data:`mcp_sansio._versions.FEATURES`: one row per revision, one column per feature,
    followed by what each feature means (the field's ``#:`` comment in the code).

``.. error-code-table::``
    :class:`mcp_sansio.ErrorCode`: name, code, and the comment next to it in the code.

And two roles, for numbers quoted in prose:

``:mcp-value:`mcp_sansio.DEFAULT_MAX_DEPTH``` renders the value of a dotted name;
``:mcp-size:`mcp_sansio.DEFAULT_MAX_LINE``` renders a byte count with its size in KiB/MiB.

``.. remaining-public-names::``
    autodoc for every name in ``mcp_sansio.__all__`` not documented earlier on the page, so a
    new public name cannot be missing from the API reference.

Two autodoc hooks complete the reference. Constants re-exported by ``mcp_sansio`` get the
``#:`` comment written next to their definition in a private module (autodoc would look for
it in ``mcp_sansio/__init__.py`` and fall back to the docstring of ``tuple`` or ``dict``).
attrs classes get their fields' default values in their signatures instead of the generated
``__init__``'s ``attr_dict['x'].default``.

Every directive records the modules it reads as dependencies, so an incremental build
re-renders a page when the table it prints changes.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterable, Sequence
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

Cell = str | nodes.Node | list[nodes.Node]


def _defining_modules() -> list[str]:
    """The private modules of the core (``mcp_sansio._x``, ``mcp_sansio._framing.y``), whose
    ``#:`` comments document the names ``mcp_sansio`` re-exports."""
    import pkgutil

    import mcp_sansio

    return sorted(
        info.name
        for info in pkgutil.walk_packages(mcp_sansio.__path__, "mcp_sansio.")
        if not info.ispkg and "._" in info.name and ".adapters" not in info.name
    )


# -- helpers ---------------------------------------------------------------------------------


def _attr_docs(module: str) -> dict[tuple[str, str], list[str]]:
    """The ``#:`` comments of ``module``: {(class or "", name): lines}."""
    analyzer = ModuleAnalyzer.for_module(module)
    return {key: list(lines) for key, lines in analyzer.find_attr_docs().items()}


def _resolve(dotted: str) -> Any:
    """Import ``a.b.c`` and return attribute ``c`` of module ``a.b`` (or deeper)."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            obj = getattr(obj, attr)
        return obj
    raise ExtensionError(f"cannot resolve {dotted!r}")


def _cell(content: Cell) -> nodes.entry:
    entry = nodes.entry()
    if isinstance(content, str):
        entry += nodes.paragraph(text=content) if content else nodes.paragraph()
    elif isinstance(content, list):
        para = nodes.paragraph()
        for node in content:
            para += node
        entry += para
    elif isinstance(content, nodes.Element) and not isinstance(content, nodes.TextElement):
        entry += content
    else:
        para = nodes.paragraph()
        para += content
        entry += para
    return entry


def _table(
    headers: Sequence[Cell],
    rows: Iterable[Sequence[Cell]],
    *,
    widths: Sequence[int] | None = None,
    classes: Sequence[str] = (),
    stub_columns: int = 1,
) -> nodes.table:
    """A docutils table (header row, body rows, the first ``stub_columns`` as row headers)."""
    table = nodes.table(classes=["mcp-table", *classes])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for index, width in enumerate(widths or [1] * len(headers)):
        colspec = nodes.colspec(colwidth=width)
        if index < stub_columns:
            colspec["stub"] = 1
        group += colspec
    head = nodes.thead()
    header_row = nodes.row()
    for header in headers:
        header_row += _cell(header)
    head += header_row
    group += head
    body = nodes.tbody()
    for row in rows:
        if len(row) != len(headers):
            raise ExtensionError(f"row {row!r} does not have {len(headers)} cells")
        body_row = nodes.row()
        for content in row:
            body_row += _cell(content)
        body += body_row
    group += body
    return table


def _literal(text: str) -> nodes.literal:
    return nodes.literal(text=text)


def _literals(items: Iterable[str], separator: str = ", ") -> list[nodes.Node]:
    out: list[nodes.Node] = []
    for index, item in enumerate(items):
        if index:
            out.append(nodes.Text(separator))
        out.append(_literal(item))
    return out


def _source_file(module: str) -> str | None:
    return inspect.getsourcefile(importlib.import_module(module))


class _ParsingDirective(SphinxDirective):
    """A directive that can turn a few lines of reStructuredText into nodes."""

    #: The modules whose tables the directive prints: the page is rebuilt when one changes.
    depends_on: tuple[str, ...] = ()

    def note_sources(self, *modules: str) -> None:
        for module in modules or self.depends_on:
            path = _source_file(module)
            if path:
                self.env.note_dependency(path)

    def parse_rst(self, lines: Iterable[str]) -> list[nodes.Node]:
        container = nodes.container()
        content = StringList()
        source = f"<{self.name} directive>"
        for number, line in enumerate(lines):
            content.append(line, source, number)
        nested_parse_with_titles(self.state, content, container)
        return list(container.children)


# -- the lifecycle table ---------------------------------------------------------------------


class LifecycleTable(_ParsingDirective):
    """``.. lifecycle-table:: client|server`` -- one role's slice of ``TRANSITIONS``."""

    required_arguments = 1
    has_content = False

    depends_on = ("mcp_sansio._state",)

    def run(self) -> list[nodes.Node]:
        self.note_sources()
        from mcp_sansio._state import TRANSITIONS, Input, Role, State, Verdict

        try:
            role = Role(self.arguments[0].strip().lower())
        except ValueError:
            raise self.error(
                f"unknown role {self.arguments[0]!r}; use one of "
                + ", ".join(r.value for r in Role)
            ) from None

        # The table is documented as total; a hole would print a misleading blank.
        missing = [(s, i) for s in State for i in Input if (role, s, i) not in TRANSITIONS]
        if missing:
            raise self.error(f"TRANSITIONS has no cell for {missing[:3]!r} ...")

        labels = {Verdict.ALLOW: "allow", Verdict.REFUSE: "refuse", Verdict.IGNORE: "ignore"}
        headers: list[Cell] = ["state \\ input", *(inp.value for inp in Input)]
        rows = []
        for state in State:
            row: list[Cell] = [_literal(state.name)]
            for inp in Input:
                verdict, next_state = TRANSITIONS[role, state, inp]
                cell = nodes.container()
                verdict_para = nodes.paragraph()
                verdict_para += nodes.inline(
                    text=labels[verdict], classes=[f"mcp-{verdict.value}"]
                )
                cell += verdict_para
                if next_state is not state:
                    move = nodes.paragraph()
                    move += nodes.Text("\N{RIGHTWARDS ARROW} ")
                    move += _literal(next_state.name)
                    cell += move
                row.append(cell)
            rows.append(row)
        table = _table(
            headers, rows, widths=[3] + [2] * len(Input), classes=["mcp-lifecycle-table"]
        )
        title = nodes.title(text=f"Lifecycle of a {role.value} connection")
        table.insert(0, title)
        return [table]


# -- the method table ------------------------------------------------------------------------

# Things the *connection* does with a method, beyond what the row says. These describe
# behaviour of ``_connection.py`` (the method table itself has no such column); keep them in
# step with it. Each one is exercised by the tests of the connection.
_CORE_NOTES: dict[str, str] = {
    "initialize": "Sent by ``ClientConnection.initialize()``; answered by the server's core "
    "(version negotiation). Never part of a batch; never cancelled.",
    "notifications/initialized": "Queued by the client's core when the ``InitializeResult`` is "
    "accepted; ends the handshake (``Initialized`` event on both sides).",
    "ping": "Answered by the core with ``{}``, in any open state; never reported as an event.",
    "notifications/cancelled": "Sent by ``cancel()`` and on a timeout; received as "
    "``CancelRequested``.",
    "notifications/progress": "Sent with ``send_progress()``; received as ``Progress``.",
    "logging/setLevel": "Answered by the server's core (``{}``, or -32602 for an unknown "
    "level); lower-level ``notifications/message`` are then dropped on send.",
    "resources/subscribe": "A successful answer adds the URI to ``subscriptions``.",
    "resources/unsubscribe": "A successful answer removes the URI from ``subscriptions``.",
    "notifications/resources/updated": "Only for a URI in ``subscriptions`` (refused with "
    "-32602 otherwise, both ways).",
}


def _revision_span(revisions: frozenset[str]) -> str:
    """``2024-11-05 .. 2025-11-25`` for a contiguous run of known revisions, else a list."""
    from mcp_sansio._versions import KNOWN_REVISIONS

    ordered = [r for r in KNOWN_REVISIONS if r in revisions]
    unknown = sorted(revisions - set(ordered))
    indexes = [KNOWN_REVISIONS.index(r) for r in ordered]
    contiguous = indexes == list(range(indexes[0], indexes[0] + len(indexes))) if indexes else False
    if contiguous and len(ordered) > 2 and not unknown:
        return f"{ordered[0]} .. {ordered[-1]}"
    return ", ".join(ordered + unknown)


class MethodTable(_ParsingDirective):
    """``.. method-table::`` -- ``METHODS``, one row per (method, era) rule."""

    has_content = False
    option_spec = {"era": lambda arg: directives.choice(arg, ("handshake", "stateless"))}

    depends_on = ("mcp_sansio._capabilities", "mcp_sansio._versions")

    def run(self) -> list[nodes.Node]:
        self.note_sources()
        from mcp_sansio._capabilities import METHODS
        from mcp_sansio._versions import FEATURES

        era = self.options.get("era", "handshake")
        want_handshake = era == "handshake"
        rules = [
            rule for rule in METHODS
            if any(FEATURES[rev].handshake == want_handshake for rev in rule.revisions)
        ]
        if not rules:
            raise self.error(f"no rules for the {era} era")
        # Fields beyond the columns below (flags added for one era, say) become notes, with
        # the ``#:`` comment that documents them.
        from mcp_sansio._capabilities import MethodRule

        shown = {"method", "kind", "sender", "revisions", "capability", "ungated_in",
                 "params_check"}
        extra_fields = [name for name in MethodRule._fields if name not in shown]
        defaults = MethodRule._field_defaults
        field_docs = _attr_docs("mcp_sansio._capabilities")
        headers: list[Cell] = ["method", "kind", "sender", "revisions", "gated by", "notes"]
        rows = []
        for rule in rules:
            notes: list[str] = []
            if rule.ungated_in:
                notes.append(
                    "Not gated in " + ", ".join(sorted(rule.ungated_in)) + "."
                )
            if rule.params_check is not None:
                doc = inspect.getdoc(rule.params_check) or rule.params_check.__name__
                notes.append(" ".join(doc.split()))
            for name in extra_fields:
                value = getattr(rule, name)
                if value and value != defaults.get(name):
                    comment = " ".join(field_docs.get(("MethodRule", name), []))
                    notes.append(f"``{name}``" + (f": {comment}" if comment else "."))
            if want_handshake and rule.method in _CORE_NOTES:
                notes.append(_CORE_NOTES[rule.method])
            gate: Cell = "\N{EM DASH}"
            if rule.capability is not None:
                gate = [
                    _literal(rule.capability),
                    nodes.Text(" (receiver)" if rule.gated_by_receiver else " (sender)"),
                ]
            rows.append([
                _literal(rule.method),
                rule.kind.value,
                rule.sender.value,
                _revision_span(rule.revisions),
                gate,
                nodes.container("", *self.parse_rst([" ".join(notes)])) if notes else "",
            ])
        table = _table(headers, rows, widths=[8, 3, 3, 5, 6, 12],
                       classes=["mcp-method-table"])
        return [table]


# -- the feature table -----------------------------------------------------------------------


class FeatureTable(_ParsingDirective):
    """``.. feature-table::`` -- ``FEATURES``, one row per revision, then a legend."""

    has_content = False

    depends_on = ("mcp_sansio._versions",)

    def run(self) -> list[nodes.Node]:
        self.note_sources()
        from mcp_sansio._versions import _FEATURES_FIELDS, FEATURES

        fields = list(_FEATURES_FIELDS)
        headers: list[Cell] = ["revision", *(_literal(name) for name in fields)]
        rows = []
        for revision, features in FEATURES.items():
            rows.append([
                revision,
                *("yes" if getattr(features, name) else "no" for name in fields),
            ])
        table = _table(headers, rows, widths=[3] + [2] * len(fields),
                       classes=["mcp-feature-table"])

        docs = _attr_docs("mcp_sansio._versions")
        legend = nodes.definition_list()
        for name in fields:
            lines = docs.get(("Features", name))
            if not lines:
                raise self.error(f"Features.{name} has no #: comment to document it")
            item = nodes.definition_list_item()
            term = nodes.term()
            term += _literal(name)
            item += term
            definition = nodes.definition()
            definition.extend(self.parse_rst(lines))
            item += definition
            legend += item
        return [table, legend]


# -- the error code table --------------------------------------------------------------------


class ErrorCodeTable(_ParsingDirective):
    """``.. error-code-table::`` -- every ``ErrorCode`` with the comment next to it."""

    has_content = False

    depends_on = ("mcp_sansio._errors",)

    def run(self) -> list[nodes.Node]:
        self.note_sources()
        from mcp_sansio._errors import ErrorCode

        docs = _attr_docs("mcp_sansio._errors")
        rows = []
        for code in ErrorCode:
            lines = docs.get(("ErrorCode", code.name))
            if lines:
                note: Cell = nodes.container("", *self.parse_rst([" ".join(lines)]))
            elif -32768 <= code.value <= -32600:  # reserved for JSON-RPC's pre-defined errors
                note = "JSON-RPC 2.0 (section 5.1); every revision."
            else:  # pragma: no cover - every MCP code carries a comment
                raise self.error(f"ErrorCode.{code.name} has no #: comment to document it")
            rows.append([_literal(code.name), _literal(str(code.value)), note])
        return [_table(["name", "code", "defined by"], rows, widths=[6, 2, 10])]


# -- API coverage ----------------------------------------------------------------------------


class RemainingPublicNames(_ParsingDirective):
    """``.. remaining-public-names::`` -- autodoc every name in ``mcp_sansio.__all__`` that
    the page has not documented above this directive, under a heading of its own.

    Keeps the API reference complete when a public name is added: it shows up here until it
    is given a proper place on the page.
    """

    has_content = False

    depends_on = ("mcp_sansio",)

    def run(self) -> list[nodes.Node]:
        self.note_sources()
        import mcp_sansio

        documented = self.env.get_domain("py").objects  # type: ignore[attr-defined]
        lines: list[str] = []
        for name in mcp_sansio.__all__:
            if f"mcp_sansio.{name}" in documented:
                continue
            obj = getattr(mcp_sansio, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                directive = "autoexception"
            elif isinstance(obj, type):
                directive = "autoclass"
            elif inspect.isroutine(obj):
                directive = "autofunction"
            else:
                directive = "autodata"
            lines += [f".. {directive}:: mcp_sansio.{name}", ""]
        if not lines:
            return []
        heading = "Other public names"
        return self.parse_rst([heading, "-" * len(heading), "", *lines])


# -- roles -----------------------------------------------------------------------------------


def _note_role_dependency(inliner: Any, dotted: str) -> None:
    """Rebuild the page when the module defining ``dotted`` changes."""
    env = inliner.document.settings.env
    # A re-exported constant is defined elsewhere: depend on every module that may define it.
    modules = [".".join(dotted.strip().split(".")[:-1]), *_defining_modules()]
    for module in modules:
        try:
            path = _source_file(module)
        except ImportError:
            continue
        if path:
            env.note_dependency(path)


def _value_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                options: dict[str, Any] | None = None, content: Sequence[str] = ()):
    try:
        value = _resolve(text.strip())
    except (ExtensionError, AttributeError) as exc:
        message = inliner.reporter.error(f"mcp-value: {exc}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    _note_role_dependency(inliner, text)
    return [nodes.literal(rawtext, repr(value))], []


def _size_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
               options: dict[str, Any] | None = None, content: Sequence[str] = ()):
    try:
        value = _resolve(text.strip())
    except (ExtensionError, AttributeError) as exc:
        message = inliner.reporter.error(f"mcp-size: {exc}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    if not isinstance(value, int):
        message = inliner.reporter.error(f"mcp-size: {text} is not an int", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    _note_role_dependency(inliner, text)
    human = ""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size and value % size == 0:
            human = f" ({value // size} {unit})"
            break
    return [nodes.literal(rawtext, str(value)), nodes.Text(f" bytes{human}")], []


# -- autodoc: documentation of re-exported constants -----------------------------------------

def _reexported_constant_docs() -> dict[str, tuple[list[str], str]]:
    """{name: (#: comment, module)} for every module-level constant of a defining module."""
    found: dict[str, tuple[list[str], str]] = {}
    for module in _defining_modules():
        for (namespace, name), lines in _attr_docs(module).items():
            if namespace == "":
                found.setdefault(name, (lines, module))
    return found


def _fill_constant_docs(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                        lines: list[str]) -> None:
    if what != "data" or not name.startswith("mcp_sansio."):
        return
    public = name.removeprefix("mcp_sansio.")
    if "." in public:
        return
    found = _reexported_constant_docs().get(public)
    if not found:
        # No comment at the definition: drop the docstring of the value's type, if that is
        # what autodoc found (``tuple``'s, say), rather than show it as the constant's.
        type_doc = inspect.getdoc(type(obj)) or ""
        if "\n".join(lines).strip() == type_doc.strip():
            lines[:] = []
        return
    if found:
        doc, module = found
        # ``mcp_sansio/__init__.py`` only re-exports; whatever autodoc found there is at best
        # the docstring of the value's type (``dict``, ``tuple``...). Use the definition's.
        lines[:] = [*doc, ""]
        path = _source_file(module)
        if path:
            app.env.note_dependency(path)


# -- autodoc: readable defaults in attrs signatures -------------------------------------------

_ATTRS_DEFAULT = re.compile(r"attr_dict\['(\w+)'\]\.default")


def _attrs_signature(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                     signature: str | None, return_annotation: str | None):
    """With ``autodoc_preserve_defaults``, an attrs class shows the generated ``__init__``'s
    source (``attr_dict['params'].default``); show the field's default value instead."""
    import attrs

    if what != "class" or not signature or not attrs.has(obj):
        return None
    fields = attrs.fields_dict(obj)

    def default(match: re.Match[str]) -> str:
        field = fields.get(match.group(1))
        if field is None:
            return match.group(0)
        value = field.default
        if isinstance(value, attrs.Factory) and not value.takes_self:  # type: ignore[arg-type]
            value = value.factory()
        return repr(value)

    return _ATTRS_DEFAULT.sub(default, signature), return_annotation


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("lifecycle-table", LifecycleTable)
    app.add_directive("method-table", MethodTable)
    app.add_directive("feature-table", FeatureTable)
    app.add_directive("error-code-table", ErrorCodeTable)
    app.add_directive("remaining-public-names", RemainingPublicNames)
    app.add_role("mcp-value", _value_role)
    app.add_role("mcp-size", _size_role)
    app.connect("autodoc-process-docstring", _fill_constant_docs)
    app.connect("autodoc-process-signature", _attrs_signature)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
