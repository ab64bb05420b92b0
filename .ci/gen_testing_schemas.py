"""Generate ``mcp_sansio/testing/_schema_data.py`` from the official MCP JSON Schemas.

The testing kit (``mcp_sansio.testing``) builds hypothesis strategies from, and validates
peers' messages against, each revision's official schema. The library must not read
``../shared/mcp-schema`` at run time, so this script distils every revision's
``schema.json`` into a Python module:

* annotation keywords (``description``, ``title``, ``examples``, ``default``, ``$comment``)
  are dropped -- they never change what validates, and they are most of the bytes;
* ``#/definitions/X`` references (draft-07 revisions) become ``#/$defs/X``, so one pool of
  definitions serves every revision, and a definition that is the same in several
  revisions is stored once;
* each revision keeps its JSON Schema dialect (``$schema``) and the SHA-256 of the file it
  came from.

Usage::

    python .ci/gen_testing_schemas.py [--schema-dir DIR] [--check]

``--schema-dir`` defaults to ``$MCP_SCHEMA_DIR`` when set, else ``../shared/mcp-schema``
beside the repository (the same setting as the tests' ``tests/schemas.py``).

``--check`` exits 1 when the committed module differs from what the schemas give (the test
suite runs the same comparison: ``tests/check/test_testing_kit.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCHEMA_DIR = (Path(os.environ["MCP_SCHEMA_DIR"]).expanduser()
                      if os.environ.get("MCP_SCHEMA_DIR", "").strip()
                      else ROOT.parent / "shared" / "mcp-schema")
OUTPUT = ROOT / "mcp_sansio" / "testing" / "_schema_data.py"
#: The revisions the library knows (mcp_sansio.KNOWN_REVISIONS; ``draft`` is left out).
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
#: Keywords that annotate and never constrain (JSON Schema core/validation vocabularies).
ANNOTATIONS = frozenset({"description", "title", "examples", "default", "$comment"})
#: Keywords whose value is a map from names to schemas (the names are data, not keywords).
NAMED_SCHEMAS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def strip(node: Any, *, names: bool = False) -> Any:
    """``node`` without annotations, with every reference pointing into ``#/$defs``."""
    if isinstance(node, dict):
        if names:  # a map of names to schemas: keep every name
            return {key: strip(value) for key, value in node.items()}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ANNOTATIONS:
                continue
            if key == "$ref" and isinstance(value, str):
                out[key] = value.replace("#/definitions/", "#/$defs/")
            else:
                out[key] = strip(value, names=key in NAMED_SCHEMAS)
        return out
    if isinstance(node, list):
        return [strip(item) for item in node]
    return node


def definitions(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.get("$defs", schema.get("definitions"))
    if not isinstance(defs, dict):
        raise ValueError("the schema has no $defs or definitions")
    return {name: strip(body) for name, body in defs.items()}


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def render(schema_dir: Path) -> str:
    """The text of the generated module."""
    pool: dict[str, int] = {}
    revisions: dict[str, dict[str, int]] = {}
    dialects: dict[str, str] = {}
    digests: dict[str, str] = {}
    for revision in REVISIONS:
        raw = (schema_dir / revision / "schema.json").read_bytes()
        schema = json.loads(raw)
        digests[revision] = hashlib.sha256(raw).hexdigest()
        dialects[revision] = schema.get("$schema", "")
        index: dict[str, int] = {}
        for name, body in sorted(definitions(schema).items()):
            text = _text(body)
            index[name] = pool.setdefault(text, len(pool))
        revisions[revision] = index
    lines = [
        '"""The official MCP JSON Schemas, distilled for the testing kit. GENERATED: do not edit.',
        "",
        "Made by ``.ci/gen_testing_schemas.py`` from ``schema/<revision>/schema.json`` of the",
        "specification repository (github.com/modelcontextprotocol/modelcontextprotocol, MIT",
        "licence): annotations dropped, references rewritten to ``#/$defs/``, identical",
        "definitions stored once. Validation keywords are kept exactly, so a message valid here is",
        "valid against the official file and the other way round. Regenerate after updating the",
        'schemas; ``tests/check/test_testing_kit.py`` fails while this module is out of date.',
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "#: SHA-256 of each official schema.json this module was made from.",
        "DIGESTS: dict[str, str] = {",
        *(f"    {rev!r}: {digest!r}," for rev, digest in digests.items()),
        "}",
        "",
        "#: The JSON Schema dialect (``$schema``) of each revision.",
        "DIALECTS: dict[str, str] = {",
        *(f"    {rev!r}: {dialect!r}," for rev, dialect in dialects.items()),
        "}",
        "",
        "#: Every distinct definition, as compact JSON text.",
        "POOL: tuple[str, ...] = (",
        *(f"    {text!r}," for text in pool),
        ")",
        "",
        "#: revision -> definition name -> index in POOL.",
        "REVISIONS: dict[str, dict[str, int]] = {",
    ]
    for revision, index in revisions.items():
        lines.append(f"    {revision!r}: {{")
        lines.extend(f"        {name!r}: {i}," for name, i in index.items())
        lines.append("    },")
    lines.extend(["}", ""])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schema-dir", type=Path, default=DEFAULT_SCHEMA_DIR)
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed module instead of writing it")
    args = parser.parse_args(argv)
    text = render(args.schema_dir)
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run .ci/gen_testing_schemas.py")
            return 1
        print(f"{OUTPUT.relative_to(ROOT)} is up to date")
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
