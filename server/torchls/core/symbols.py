"""Sizes the code names but does not fix: ``t`` from ``b, t, d = x.shape``, ``h * dh``, ``2 * C``.

A :class:`Sym` is a product of named sizes times a positive integer. That is enough for the shapes attention and
patch code builds (``view(b, t, h, d // h)``, ``reshape(B * T, C)``) and it keeps comparisons decidable: two
products are equal for every binding only when they are the same product. Each name stands for one positive int
made at one place; ``key`` tells apart two sizes that happen to share a name (``t`` in two functions).

Comparisons between a :class:`Sym` and an int are deliberately not Python's: the three-valued helpers below answer
None when the names' values decide the answer, so a rule reports only what holds for every binding.
"""

from __future__ import annotations

from dataclasses import dataclass

Atom = tuple[str, int]  # (the name in the code, a key unique to where the size was named)


@dataclass(frozen=True, slots=True)
class Sym:
    atoms: tuple[Atom, ...]  # sorted, with repetition: h * h is (h, h)
    coef: int = 1

    @staticmethod
    def named(name: str, key: int) -> Sym:
        return Sym(((name, key),))

    def __str__(self) -> str:
        names = "*".join(name for name, _ in self.atoms)
        return names if self.coef == 1 else f"{self.coef}*{names}"

    def __mul__(self, other: object) -> Dim:
        return multiply(self, other)  # type: ignore[arg-type]

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> Dim:
        result = divide(self, other)  # type: ignore[arg-type]
        if result is None:
            raise TypeError("not an exact division of sizes")  # the interpreter's arithmetic then says unknown
        return result

    def __rfloordiv__(self, other: object) -> Dim:
        result = divide(other, self)  # type: ignore[arg-type]
        if result is None:
            raise TypeError("not an exact division of sizes")
        return result


Dim = int | Sym | None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parts(value: int | Sym) -> tuple[int, tuple[Atom, ...]]:
    return (value, ()) if isinstance(value, int) else (value.coef, value.atoms)


def _make(coef: int, atoms: tuple[Atom, ...]) -> int | Sym:
    return coef if not atoms else Sym(tuple(sorted(atoms)), coef)


def multiply(a: Dim, b: Dim) -> Dim:
    """``a * b`` for sizes; None when either is unknown or not a size."""
    if not (_is_int(a) or isinstance(a, Sym)) or not (_is_int(b) or isinstance(b, Sym)):
        return None
    ca, xa = _parts(a)  # type: ignore[arg-type]
    cb, xb = _parts(b)  # type: ignore[arg-type]
    if ca <= 0 or cb <= 0:
        return ca * cb if not xa and not xb else None
    return _make(ca * cb, xa + xb)


def _without(atoms: tuple[Atom, ...], removed: tuple[Atom, ...]) -> tuple[Atom, ...] | None:
    """``atoms`` minus ``removed`` (as multisets); None when ``removed`` is not contained."""
    rest = list(atoms)
    for atom in removed:
        if atom not in rest:
            return None
        rest.remove(atom)
    return tuple(rest)


def divide(a: Dim, b: Dim) -> Dim:
    """``a // b`` when it is exact for every binding (``(64*t) // 4``, ``(h*dh) // h``); None otherwise."""
    if not (_is_int(a) or isinstance(a, Sym)) or not (_is_int(b) or isinstance(b, Sym)):
        return None
    if _is_int(a) and _is_int(b):
        return a // b if b else None  # type: ignore[operator]
    ca, xa = _parts(a)  # type: ignore[arg-type]
    cb, xb = _parts(b)  # type: ignore[arg-type]
    rest = _without(xa, xb)
    if rest is None or cb <= 0 or ca % cb:
        return None
    return _make(ca // cb, rest)


def product(dims: tuple[Dim, ...] | list[Dim]) -> Dim:
    """The number of elements of a shape, as a size; None when some dim is unknown."""
    total: Dim = 1
    for d in dims:
        total = multiply(total, d)
        if total is None:
            return None
    return total


def compare(a: Dim, b: Dim) -> int | None:
    """-1, 0 or 1 when ``a < b``, ``a == b`` or ``a > b`` holds for every binding whose names are at least 2;
    None when the names' values decide it. "At least 2" is what a rule may assume of a named size (a sequence
    length, a head count) when its message says so: with a size of 1 almost any layout works."""
    if a is None or b is None:
        return None
    if a == b:
        return 0
    if _is_int(a) and _is_int(b):
        return -1 if a < b else 1  # type: ignore[operator]
    ca, xa = _parts(a)  # type: ignore[arg-type]
    cb, xb = _parts(b)  # type: ignore[arg-type]
    if ca <= 0 or cb <= 0:
        return None
    if xa == xb:
        return -1 if ca < cb else 1
    # One side is the other's names times extra names, each at least 2: a*E > b when 2**len(E) * a > b.
    extra = _without(xa, xb)
    if extra is not None and 2 ** len(extra) * ca > cb:
        return 1
    extra = _without(xb, xa)
    if extra is not None and 2 ** len(extra) * cb > ca:
        return -1
    return None


def differs_always(a: Dim, b: Dim) -> bool:
    """True when ``a != b`` for every positive binding: different ints, or one product times another
    coefficient (``B*T*C`` against ``B*T*2*C``)."""
    if a is None or b is None:
        return False
    if _is_int(a) and _is_int(b):
        return a != b
    ca, xa = _parts(a)  # type: ignore[arg-type]
    cb, xb = _parts(b)  # type: ignore[arg-type]
    return xa == xb and ca != cb


def with_one(value: Dim, atom: Atom) -> Dim:
    """``value`` with the named size ``atom`` set to 1: which names a conclusion depends on."""
    if not isinstance(value, Sym):
        return value
    return _make(value.coef, tuple(a for a in value.atoms if a != atom))


def atoms_of(dims: tuple[Dim, ...] | list[Dim]) -> list[Atom]:
    """The named sizes that appear in ``dims``, in order of first appearance."""
    seen: list[Atom] = []
    for d in dims:
        for atom in d.atoms if isinstance(d, Sym) else ():
            if atom not in seen:
                seen.append(atom)
    return seen


def same_names(a: Dim, b: Dim) -> bool:
    """Both sizes are products of the same names (possibly none), whatever their coefficients."""
    return is_size(a) and is_size(b) and _parts(a)[1] == _parts(b)[1]  # type: ignore[arg-type]


def is_size(value: object) -> bool:
    """An int or a named size: what a dim of a shape may be when it is known at all."""
    return _is_int(value) or isinstance(value, Sym)


def erase(dims: tuple[Dim, ...]) -> tuple[int | None, ...]:
    """The dims with named sizes as unknown: what code that only understands ints sees."""
    return tuple(d if _is_int(d) else None for d in dims)  # type: ignore[misc]
