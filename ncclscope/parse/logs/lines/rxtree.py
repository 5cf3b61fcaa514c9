"""Parse stage, a regex's shape: the small tree `needles` reads literals off, built without Python's private parser.

`re._parser` (`sre_parse`) is private, moves between releases and warns when imported. This module reads the
subset of Python's regex syntax that the needle search needs, and says "I don't know" (`Other`, or `None`
for the whole pattern) for anything else, which only makes a needle set smaller or absent: a line is then
offered to more patterns, never fewer. The tree has what `needles` asks for:

- `Lit`: one character; `Set`: a class (`[...]`, or a branch of single characters folded into one, as
  Python's parser folds it), its characters when they are few (`None`: a category, a negation, a wide range);
- `Group`: `( )`, `(?: )`, `(?P<n> )`, `(?i: )` (whether it turns case-insensitivity on);
- `Branch`: alternatives, after their common leading nodes moved out in front (as Python's parser does);
- `Repeat`: `*`, `+`, `?`, `{m,n}` (lazy or possessive alike), `hi` None when unbounded;
- `Other`: anything that matches no fixed text (`.`, `\\d`, anchors, look-arounds, back-references).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_RANGE = 16  # a class range of fewer characters than this is listed; wider ones are `None` (any of many)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_CATEGORY = frozenset("dDsSwWbBAZ")  # escapes that match a class or a position, not one character
_FLAGS = frozenset("aiLmsux")


@dataclass(frozen=True, slots=True)
class Lit:
    char: str


@dataclass(frozen=True, slots=True)
class Set:
    chars: frozenset[str] | None
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Group:
    ignorecase: bool
    items: tuple[Node, ...]
    capture: bool = False


@dataclass(frozen=True, slots=True)
class Branch:
    alternatives: tuple[tuple[Node, ...], ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    lo: int
    hi: int | None
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Other:
    pass


Node = Lit | Set | Group | Branch | Repeat | Other


@dataclass(frozen=True, slots=True)
class Tree:
    ignorecase: bool  # `(?i)` in front: the whole pattern
    items: tuple[Node, ...]


class Unsupported(ValueError):
    """The pattern uses syntax this reader does not follow (the caller finds no needles)."""


def parse(pattern: str) -> Tree:
    """The tree of `pattern`; raises `Unsupported` (a ValueError) for syntax it does not follow."""
    p = _Parser(pattern)
    items = p.alternation()
    if p.i != len(pattern):
        raise Unsupported(f"unbalanced ')' at {p.i}")
    return Tree(p.ignorecase, items)


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.ignorecase = False

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def take(self) -> str:
        if self.i >= len(self.s):
            raise Unsupported("unexpected end")
        c = self.s[self.i]
        self.i += 1
        return c

    def alternation(self) -> tuple[Node, ...]:
        alts = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.sequence())
        return _fold(alts)

    def sequence(self) -> list[Node]:
        out: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            node = self.atom()
            if node is None:
                continue
            out.append(self.quantified(node))
        spliced: list[Node] = []  # a plain `(?:...)` is its content, as Python's parser keeps it
        for node in out:
            plain = isinstance(node, Group) and not node.capture and not node.ignorecase
            spliced.extend(node.items if isinstance(node, Group) and plain else (node,))
        return spliced

    def quantified(self, node: Node) -> Node:
        c = self.peek()
        bounds: tuple[int, int | None] | None = None
        if c and c in "*+?":
            self.i += 1
            bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{":
            bounds = self.braces()
        if bounds is None:
            return node
        if self.peek() in ("?", "+"):  # lazy or possessive: the same text
            self.i += 1
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.braces(probe=True)):
            raise Unsupported("multiple repeat")
        plain = isinstance(node, Group) and not node.capture and not node.ignorecase
        items = node.items if isinstance(node, Group) and plain else (node,)
        return Repeat(bounds[0], bounds[1], items)

    def braces(self, probe: bool = False) -> tuple[int, int | None] | None:
        """`{m}`, `{m,}`, `{,n}`, `{m,n}` at `i`; None (and `{` is a literal) otherwise."""
        end = self.s.find("}", self.i)
        if end < 0:
            return None
        body = self.s[self.i + 1 : end]
        lo_s, comma, hi_s = body.partition(",")
        if not (lo_s.isdigit() or lo_s == "") or not (hi_s.isdigit() or hi_s == "") or not body:
            return None
        if not comma and not lo_s:
            return None
        if not (lo_s.isascii() and hi_s.isascii()):
            return None
        lo = int(lo_s) if lo_s else 0
        hi = (int(hi_s) if hi_s else None) if comma else lo
        if not probe:
            self.i = end + 1
        return lo, hi

    def atom(self) -> Node | None:
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == "\\":
            return self.escape(in_class=False)
        if c in ".^$":
            return Other()
        if c in "*+?":
            raise Unsupported("nothing to repeat")
        return Lit(c)

    def group(self) -> Node | None:
        if self.peek() != "?":
            return self.close(Group(False, self.alternation(), capture=True))
        self.i += 1
        c = self.take()
        if c == ":":
            return self.close(Group(False, self.alternation()))
        if c == "P" and self.peek() == "<":
            self.name(">")
            return self.close(Group(False, self.alternation(), capture=True))
        if c == "P" and self.peek() == "=":
            self.name(")")
            return Other()
        if c == "#":
            end = self.s.find(")", self.i)
            if end < 0:
                raise Unsupported("unterminated comment")
            self.i = end + 1
            return None
        if c in "=!" or (c == "<" and self.peek() in ("=", "!")):
            if c == "<":
                self.i += 1
            self.alternation()  # a look-around matches no text of its own
            self.close(Other())
            return Other()
        if c == "<":
            self.i -= 1
            self.name(">")
            return self.close(Group(False, self.alternation(), capture=True))
        if c == ">":  # atomic group: Python's parser gives a node the needles do not read
            self.alternation()
            return self.close(Other())
        if c == "(":  # conditional `(?(id)yes|no)`
            self.name(")", start=False)
            self.alternation()
            return self.close(Other())
        return self.flags(c)

    def flags(self, c: str) -> Node | None:
        add, neg = "", ""
        while c in _FLAGS:
            add += c
            c = self.take()
        if c == "-":
            c = self.take()
            while c in _FLAGS:
                neg += c
                c = self.take()
        if "x" in add or "x" in neg:
            raise Unsupported("verbose patterns are not followed")
        if c == ")":
            if neg or self.i != len(add) + 3:
                raise Unsupported("global flags not at the start")
            self.ignorecase = self.ignorecase or "i" in add
            return None
        if c != ":":
            raise Unsupported(f"unknown group (?{add}{c}")
        return self.close(Group("i" in add, self.alternation()))

    def name(self, end: str, start: bool = True) -> None:
        if start:
            self.i += 1
        j = self.s.find(end, self.i)
        if j < 0:
            raise Unsupported("unterminated name")
        self.i = j + 1

    def close(self, node: Node) -> Node:
        if self.take() != ")":
            raise Unsupported("missing ')'")
        return node

    def char_class(self) -> Node:
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        chars: set[str] | None = set()
        first = True
        while True:
            c = self.take()
            if c == "]" and not first:
                break
            first = False
            lo: str | None
            if c == "\\":
                e = self.escape(in_class=True)
                lo = e.char if isinstance(e, Lit) else None
            elif c == "[" and self.peek() in (":", "=", "."):
                raise Unsupported("POSIX class")
            else:
                lo = c
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                h = self.take()
                hi = self.escape(in_class=True) if h == "\\" else Lit(h)
                if lo is None or not isinstance(hi, Lit) or ord(hi.char) < ord(lo):
                    raise Unsupported("bad range")
                if ord(hi.char) - ord(lo) < MAX_RANGE and chars is not None:
                    chars |= {chr(o) for o in range(ord(lo), ord(hi.char) + 1)}
                else:
                    chars = None
            elif lo is None:
                chars = None
            elif chars is not None:
                chars.add(lo)
        if not negated and chars is not None and len(chars) == 1:
            return Lit(next(iter(chars)))
        return Set(None if chars is None or negated else frozenset(chars), negated)

    def escape(self, in_class: bool) -> Node:
        c = self.take()
        if c in _SIMPLE:
            return Lit(_SIMPLE[c])
        if c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.s[self.i : self.i + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise Unsupported("bad hex escape")
            self.i += width
            return Lit(chr(int(digits, 16)))
        three = self.s[self.i - 1 : self.i + 2]
        if not in_class and len(three) == 3 and all(d in "01234567" for d in three) and int(three, 8) < 256:
            self.i += 2  # `\\101`: an octal escape, not a back-reference
            return Lit(chr(int(three, 8)))
        if c == "0" or (in_class and c in "01234567"):
            digits = c
            while len(digits) < 3 and self.peek() in tuple("01234567"):
                digits += self.take()
            return Lit(chr(int(digits, 8)))
        if c.isdigit() or c == "N":  # a back-reference, or a named character (not followed)
            if c == "N":
                raise Unsupported("named character escape")
            return Other()
        if c in _CATEGORY:
            if in_class and c in "bBAZ":
                if c == "b":
                    return Lit("\b")
                raise Unsupported("bad escape in class")
            return Other()
        if c.isascii() and c.isalnum():
            raise Unsupported(f"bad escape \\{c}")
        return Lit(c)


def _fold(alts: list[list[Node]]) -> tuple[Node, ...]:
    """Alternatives as Python's parser keeps them: leading characters all share moved in front, a branch of
    single characters as one class."""
    if len(alts) == 1:
        return tuple(alts[0])
    front: list[Node] = []
    # Python's parser compares nodes that hold sub-patterns by identity: only characters and classes move
    while all(alts) and isinstance(alts[0][0], Lit | Set) and all(a[0] == alts[0][0] for a in alts):
        front.append(alts[0][0])
        alts = [a[1:] for a in alts]
    if all(
        len(a) == 1 and (isinstance(a[0], Lit) or (isinstance(a[0], Set) and not a[0].negated)) for a in alts
    ):
        chars: set[str] | None = set()
        for a in alts:
            n = a[0]
            if isinstance(n, Lit) and chars is not None:
                chars.add(n.char)
            elif isinstance(n, Set):
                chars = None if n.chars is None or chars is None else chars | n.chars
        return (*front, Set(None if chars is None else frozenset(chars)))
    return (*front, Branch(tuple(tuple(a) for a in alts)))
