"""Trace every quantitative claim in the project's prose to the file it comes from.

The convention readers see is an ordinary markdown link: a paragraph, list item or table row
that states a number links its source, a results table as ``file.md#heading``::

    devptr's copy takes 84.4 us against vLLM's 1,067 us
    ([kernels.md](../benchmarks/results/kernels.md#alignment-classes)).

and every number in that unit must appear in one of the units' linked sources (in the section
the anchor names). A list or table introduced by a paragraph ending in ``:`` inherits that
paragraph's links (a caption), so a table of figures needs one link, not one per row.

What counts as a claim: a number (``12``, ``1,067``, ``4.7``, ``6.9%``, ``1.20x``, ``84.4 us``,
each end of a range ``4.7-6.9x``), a date (``2026-11-30``) or a count spelled out (``six``,
``nine of ten``). What does not is listed in :data:`EXCLUSIONS`, one rule each, with the
reason; nothing is allowed by value. Text that is not prose is not read: headings (names),
code spans and code blocks (code), table header rows (labels), columns headed ``PR``/``#``/
``step`` (labels) and generated blocks (``<!-- devptr-report:NAME -->``: the generator and
``tests/tools/test_quotes.py`` check those against their source).

Where a number is looked up: in a results or other markdown file, the section the anchor
names (the whole file without one; a ``benchmarks/results/`` file must be linked with an
anchor, i.e. a table); in a document that is itself checked here (the RFC, its appendix,
README, docs), only its tables and code blocks, never its prose, so prose cannot cite prose;
in any other file (a test, a module, a config), the whole file. So a number that describes
the code rather than a measurement (a default, an exit status, a layout's size, the
parameters a test runs with) links the module or test that defines it, and a number that
nothing records is reworded ("not measured"), never excused by value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Final

import attrs
from markdown_it import MarkdownIt
from markdown_it.token import Token

RESULTS_DIR: Final = Path("benchmarks/results")
"""Results files: a link to one must name its table (an anchor)."""

WORD_NUMBERS: Final[dict[str, str]] = {
    w: str(i)
    for i, w in enumerate(
        "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split(),
        start=2,
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "dozen": "12"}
"""Counts spelled out. ``one`` is not among them: in English prose it is mostly the article or
the pronoun ("one convention", "one at a time"), so it is not read as a count."""

_PKG = (
    r"(?:torch|PyTorch|numpy|NumPy|triton|Triton|Python|CUDA|ROCm|HIP|vLLM|vllm|sglang|LMCache|"
    r"mypy|ruff|libcst|attrs|typer|rich|pytest|hypothesis|import-linter|matplotlib|devptr|"
    r"markdown-it-py|pyyaml|typing_extensions|PEP|Level Zero|Ubuntu|cu|numba|cupy|flashinfer)"
)
_VER = r"\d+(?:\.\d+)*(?:\+\w+)?x?"


@attrs.frozen
class Exclusion:
    """Text that looks numeric but states no quantity (masked before numbers are read)."""

    name: str
    pattern: re.Pattern[str]
    why: str
    applies: Callable[[re.Match[str]], bool] = lambda m: True
    """Whether one match is excluded (a rule that checks what it excludes)."""


def _rule(name: str, pattern: str, why: str, flags: int = 0) -> Exclusion:
    return Exclusion(name, re.compile(pattern, flags), why)


def _count_of(word: str) -> int | None:
    return int(word) if word.isdigit() else int(WORD_NUMBERS.get(word.lower(), "0")) or None


def _list_matches_count(m: re.Match[str]) -> bool:
    """``four hooks (a, b, c, d)``: the count is the number of items listed right after it."""
    items = [i for i in re.split(r",|;|\band\b|\bor\b", m.group("items")) if i.strip()]
    return _count_of(m.group("n")) == len(items)


EXCLUSIONS: Final[tuple[Exclusion, ...]] = (
    _rule("hex", r"\b0x[0-9a-fA-F_]+(?:\.\.+)?", "an address or bit pattern written as an example"),
    _rule(
        "power",
        r"\b\d+\s*(?:\*\*|\^)\s*\d+(?:\s*[-+]\s*\d+)?",
        "2**63, 2**64 - 8: the address range and addresses written from it, not measurements",
    ),
    _rule(
        "date-free version",
        r"(?<![\w.])[vV]?\d+\.\d+\.\d+(?:\.\d+)?(?:[+\w.]*)",
        "a release (0.33.0, 2.14.1+cu130)",
    ),
    _rule(
        "package version",
        rf"{_PKG}\s*(?:==|>=|<=|<|>|~=)?\s*{_VER}(?:\s*(?:/|,|and|or|-|to)\s*{_VER})*",
        "a package's version (torch 2.13/2.14, Python 3.11, CUDA 12.8)",
    ),
    _rule(
        "interval",
        r"[\[(]\s*-?\d+\s*,\s*[^\])\n]*[\])]|\b\d+\s*(?:<=|<|>=|>|≤)\s*(?=[A-Za-z_`(\u27e8])",
        "a contract's range ([0, 2**64), 0 <= i < capacity), not a measurement",
    ),
    _rule("bit position", r"\bbits?\s+\d+(?:\s*(?:-|and|,)\s*\d+)*", "the sign bit, bit 63"),
    _rule("issue", r"#\d+", "an issue or RFC number (#50834)"),
    _rule(
        "reference",
        r"\b(?:appendix|section|sections|§|PRs?|points?|steps?|rules?|questions?|items?|deliverables?|"
        r"issues?|chapter|part|option|RFC|table|figure|row|column|line|lines)\s+\d+(?:\.\d+)*"
        r"(?:\s*(?:-|\u2013|,|and|to|or)\s*\d+(?:\.\d+)*)*",
        "a reference to a section, PR, rule or issue of this project (appendix 9.2, PR 5)",
        re.IGNORECASE,
    ),
    _rule("path:line", r"[\w./-]+\.\w+:\d+(?:-\d+)?", "a line number in a code reference"),
    _rule("enumeration", r"\(\d{1,2}\)", "a list marker inside a sentence: (1), (2)"),
    _rule(
        "compound adjective",
        r"\b\d+-(?:bit|byte|D|d|way|core|layer|rank|word|element|GPU)\b",
        "a number-noun compound naming a kind of thing (64-bit, 16-byte, 2-D, a 2-core CPU, a "
        "36-layer model), not a measured quantity",
    ),
    _rule("word width", r"\b(?:32|64)\s+bits\b", "the width of an address or an int (64 bits)"),
    _rule(
        "version column",
        rf"\b{_VER}(?:\s*(?:/|,|and|or)\s*{_VER})*\s+columns?\b",
        "a table column named for a torch version (the 2.11 column)",
    ),
    _rule("non-negative", r"(?:>=|≥)\s*0\b(?![.\d])", "a bound of a contract (sizes >= 0)"),
    _rule(
        "file name",
        r"[\w./-]*\.(?:md|py|png|toml|ya?ml|json|txt|sh|cfg|ini|whl)\b",
        "a file name with digits in it (0001-appendix.md)",
    ),
    _rule("twos complement", r"\btwo's\b", "the name of an encoding"),
    _rule("text encoding", r"\b(?:UTF|utf|latin|Latin|ISO|iso|cp)-\d+(?:-\d+)*\b", "UTF-8, latin-1"),
    _rule("index base", r"\b[01]-based\b", "an indexing convention (1-based lines, 0-based columns)"),
    _rule(
        "subscript",
        r"\b\w+\[\s*[-\d]+(?:\s*[,:]\s*[-\d]+)*\s*\]",
        "an element or a shape written as code (flag[0], int32[3]), not a quantity",
    ),
    _rule(
        "formula",
        r"(?:(?<![\w.])[A-Za-z](?![\w.])|\))\s*(?:[-+*/%]|//)\s*\d+\b|\b\d+\s*(?:[*/%]|//|\sx\s)\s*(?=\u27e8|`|\b(?!a\b)[A-Za-z]\b(?!-))",
        "arithmetic on a variable (k % 3, round k + 2, 3 x `comm_size`): a formula, not a measurement",
    ),
    _rule(
        "signed zero",
        r"(?<![\w.])[-+]0\.0\b",
        "the float values +0.0 and -0.0 (a sign convention)",
    ),
    _rule("power of two", r"\bpowers? of two\b", "a property (a chunk that is a power of two)"),
    Exclusion(
        "counted list",
        re.compile(
            r"\b(?P<n>" + "|".join(WORD_NUMBERS) + r"|\d+)"
            r"(?=\s+(?:[\w`'-]+\s+){0,2}?[\w`'-]+\s*\((?P<items>[^()]*)\))",
            re.IGNORECASE,
        ),
        "a count followed by the items it counts, in parentheses (four hooks (a, b, c, d)): "
        "excluded only when the list has that many items, so a stale count stays a claim",
        _list_matches_count,
    ),
    _rule(
        "identifier", r"[A-Za-z_][A-Za-z_]*\d[\w]*", "a name with digits in it (int64, H200, R6, DP001, x2)"
    ),
)
"""Every rule by which a numeric-looking token is not a claim, applied in this order."""

_UNITS: Final = (
    "x", "%", "k", "K", "M", "B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "ns", "us",
    "µs", "ms", "s", "h", "min", "th", "st", "nd", "rd",
)  # fmt: skip
_NUMBER: Final = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?P<tail>[A-Za-zµ%]*)")
_DATE: Final = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_WORD: Final = re.compile(r"\b(" + "|".join(WORD_NUMBERS) + r")\b", re.IGNORECASE)
_ANY_NUMBER: Final = re.compile(r"\d[\d,]*(?:\.\d+)*")
LABEL_COLUMNS: Final = frozenset({"pr", "#", "step", "point", "rule", "id", "no."})
"""Table columns whose cells are labels (a PR number, a step number), not quantities."""
_MD = MarkdownIt("commonmark").enable("table")
_BLOCK_RE: Final = re.compile(r"<!-- devptr-report:([a-z0-9-]+) -->.*?<!-- /devptr-report:\1 -->", re.DOTALL)


@attrs.frozen
class Source:
    """A linked file (relative to the repository root) and the section its anchor names."""

    path: Path
    anchor: str | None


@attrs.frozen
class Claim:
    """One number stated in prose, with the sources its unit links."""

    doc: Path
    line: int
    """1-based line of the unit (paragraph, item or row) that states it."""
    text: str
    """The number as written (``1,067``, ``6.9``, ``six``, ``2026-11-30``)."""
    value: str
    """What is looked up: digits without separators (``1067``), or the date."""
    sources: tuple[Source, ...]


@attrs.frozen
class Problem:
    doc: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.message}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _plain(inline: Token) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


def _mask(text: str) -> str:
    for rule in EXCLUSIONS:
        text = rule.pattern.sub(_blank_for(rule), text)
    return text


def _blank_for(rule: Exclusion) -> Callable[[re.Match[str]], str]:
    def blank(m: re.Match[str]) -> str:
        return " " * len(m.group(0)) if rule.applies(m) else m.group(0)

    return blank


def numbers_in(text: str) -> list[tuple[str, str]]:
    """(as written, value to look up) for every claim in one piece of prose."""
    found: list[tuple[int, str, str]] = []
    for m in _DATE.finditer(text):
        found.append((m.start(), m.group(0), m.group(0)))
    text = _DATE.sub(lambda m: " " * len(m.group(0)), text)
    masked = _mask(text)
    for m in _NUMBER.finditer(masked):
        tail = m.group("tail")
        if tail and tail not in _UNITS:
            continue
        written = m.group(1) + (m.group(2) or "")
        found.append((m.start(), written, written.replace(",", "")))
    for m in _WORD.finditer(masked):
        found.append((m.start(), m.group(0), WORD_NUMBERS[m.group(0).lower()]))
    return [(w, v) for _, w, v in sorted(found)]


@attrs.frozen
class _Unit:
    line: int
    texts: tuple[str, ...]
    links: tuple[str, ...]


def _generated_lines(text: str) -> set[int]:
    """0-based lines inside generated blocks."""
    out: set[int] = set()
    for m in _BLOCK_RE.finditer(text):
        first = text.count("\n", 0, m.start())
        out.update(range(first, first + m.group(0).count("\n") + 1))
    return out


def _inline_parts(inline: Token) -> tuple[str, list[str]]:
    """Prose text of an inline token (code spans blanked) and its link targets."""
    parts: list[str] = []
    links: list[str] = []
    for child in inline.children or []:
        if child.type == "text":
            parts.append(child.content)
        elif child.type == "code_inline":
            parts.append(" \u27e8code\u27e9 ")
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type in ("strong_open", "strong_close", "em_open", "em_close"):
            parts.append(child.markup)  # `2**63 ... **bold**` must not read as 263
        elif child.type == "link_open":
            links.append(str(child.attrs.get("href", "")))
    return "".join(parts), links


def _units(text: str) -> Iterator[_Unit]:
    """Paragraphs, list-item paragraphs and table body rows, with their own and lead-in links."""
    tokens = _MD.parse(text)
    generated = _generated_lines(text)
    lead: tuple[str, ...] = ()
    depth = 0  # open lists/tables the current lead-in applies to
    last_para: tuple[str, tuple[str, ...]] | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type in ("bullet_list_open", "ordered_list_open", "table_open"):
            if depth == 0:
                lead = last_para[1] if last_para and last_para[0].rstrip().endswith(":") else ()
            depth += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close", "table_close"):
            depth -= 1
            if depth == 0:
                lead = ()
        if tok.type == "heading_open":
            i += 3
            last_para = None
            continue
        if tok.type == "paragraph_open":
            inline = tokens[i + 1]
            prose, links = _inline_parts(inline)
            line = (tok.map or [0])[0]
            if line not in generated:
                yield _Unit(line + 1, (prose,), (*links, *(lead if depth else ())))
            if depth == 0:
                last_para = (prose, tuple(links))
            i += 3
            continue
        if tok.type == "table_open":
            i = yield from _table(tokens, i, generated, lead)
            depth -= 1
            if depth == 0:
                lead = ()
            last_para = None
            continue
        i += 1


def _table(
    tokens: Sequence[Token], start: int, generated: set[int], lead: tuple[str, ...]
) -> Generator[_Unit, None, int]:
    """The body rows of the table opening at ``start``; returns the index after it."""
    i = start
    header: list[str] = []
    row: list[tuple[str, list[str]]] = []
    row_line = 0
    in_head = False
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            row = []
            row_line = (tok.map or [0])[0]
        elif tok.type == "inline":
            if in_head:
                header.append(_plain(tok).strip().lower())
            else:
                row.append(_inline_parts(tok))
        elif tok.type == "tr_close" and not in_head and row_line not in generated:
            cells = [p for k, (p, _) in enumerate(row) if k >= len(header) or header[k] not in LABEL_COLUMNS]
            links = [h for _, hs in row for h in hs]
            yield _Unit(row_line + 1, tuple(cells), (*links, *lead))
        i += 1
    return i + 1


def _sections(text: str) -> dict[str, tuple[int, int]]:
    """anchor -> (first line, end line) of each heading's section (0-based, end exclusive)."""
    tokens = _MD.parse(text)
    heads: list[tuple[int, int, str]] = []
    for k, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            heads.append((tok.map[0], int(tok.tag[1]), _plain(tokens[k + 1])))
    n_lines = text.count("\n") + 1
    out: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    for j, (line, level, title) in enumerate(heads):
        end = next((ln for ln, lv, _ in heads[j + 1 :] if lv <= level), n_lines)
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out[base if count == 0 else f"{base}-{count}"] = (line, end)
    return out


def _evidence_lines(lines: list[str], prose_too: bool) -> list[str]:
    if prose_too:
        return lines
    out: list[str] = []
    fenced = False
    for ln in lines:
        if ln.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or ln.lstrip().startswith("|"):
            out.append(ln)
    return out


def values_in(text: str) -> frozenset[str]:
    """Every number (separators dropped), date and spelled-out count in evidence text."""
    vals = {m.group(0).replace(",", "").rstrip(".") for m in _ANY_NUMBER.finditer(text)}
    for v in list(vals):  # a version holds its leading release: 2.11 in 2.11.0
        parts = v.split(".")
        if len(parts) > 2:
            vals.add(".".join(parts[:2]))
        if len(parts) == 2 and parts[1].strip("0") == "":  # 25.0 states 25
            vals.add(parts[0])
    vals.update(m.group(0) for m in _DATE.finditer(text))
    vals.update(WORD_NUMBERS[m.group(0).lower()] for m in _WORD.finditer(text))
    return frozenset(vals)


@attrs.frozen
class Tracer:
    """Checks the claims of ``documents`` (paths relative to ``root``)."""

    root: Path
    documents: tuple[Path, ...]

    def _resolve(self, doc: Path, href: str) -> Source | str | None:
        """The source a link names, an error message, or None (not a local file)."""
        if "://" in href or href.startswith("mailto:") or not href:
            return None
        target, _, anchor = href.partition("#")
        path = doc if not target else Path(_normalise(doc.parent / target))
        if not (self.root / path).exists():
            return f"links a missing file {href!r}"
        if (self.root / path).is_dir():
            return None
        if anchor and path.suffix == ".md" and anchor not in _sections_of(self.root / path):
            return f"links a missing heading {href!r}"
        if not anchor and path.suffix == ".md" and path.parent == RESULTS_DIR:
            return f"links the results file {href!r} without naming its table (add #heading)"
        return Source(path, anchor or None)

    def _values(self, source: Source) -> frozenset[str]:
        return _source_values(self.root / source.path, source.anchor, source.path not in self.documents)

    def claims(self, doc: Path) -> tuple[list[Claim], list[Problem]]:
        text = (self.root / doc).read_text(encoding="utf-8")
        claims: list[Claim] = []
        problems: list[Problem] = []
        for unit in _units(text):
            sources: list[Source] = []
            for href in unit.links:
                got = self._resolve(doc, href)
                if isinstance(got, str):
                    problems.append(Problem(doc, unit.line, got))
                elif got is not None and got not in sources:
                    sources.append(got)
            for piece in unit.texts:
                for written, value in numbers_in(piece):
                    claims.append(Claim(doc, unit.line, written, value, tuple(sources)))
        return claims, problems

    def check(self, doc: Path) -> list[Problem]:
        """Every untraced claim and broken source link in ``doc``."""
        claims, problems = self.claims(doc)
        for c in claims:
            if not c.sources:
                problems.append(
                    Problem(
                        c.doc, c.line, f"{c.text!r} names no source (link a results table in its paragraph)"
                    )
                )
            elif not any(c.value in self._values(s) for s in c.sources):
                names = ", ".join(f"{s.path}" + (f"#{s.anchor}" if s.anchor else "") for s in c.sources)
                problems.append(Problem(c.doc, c.line, f"{c.text!r} is not in its source(s): {names}"))
        return sorted(set(problems), key=lambda p: (str(p.doc), p.line, p.message))


def _normalise(path: Path) -> str:
    parts: list[str] = []
    for part in path.as_posix().split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


@cache
def _sections_of(path: Path) -> dict[str, tuple[int, int]]:
    return _sections(path.read_text(encoding="utf-8"))


@cache
def _source_values(path: Path, anchor: str | None, prose_too: bool) -> frozenset[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".md":
        return values_in(text)
    lines = text.splitlines()
    if anchor is not None:
        first, end = _sections_of(path)[anchor]
        lines = lines[first:end]
    return values_in("\n".join(_evidence_lines(lines, prose_too)))


def claim_documents(root: Path) -> tuple[Path, ...]:
    """The documents whose prose is checked: the RFCs, README, docs."""
    found = [*sorted((root / "rfc").glob("*.md")), root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return tuple(p.relative_to(root) for p in found if p.is_file())


def check_all(root: Path, documents: Iterable[Path] | None = None) -> list[Problem]:
    docs = claim_documents(root)
    tracer = Tracer(root, docs)
    return [p for d in (docs if documents is None else documents) for p in tracer.check(Path(d))]
