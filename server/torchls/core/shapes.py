"""Shape semantics of torch operations, on possibly unknown shapes.

Each function takes shapes (tuples whose dims are ints or ``None``) and returns the result shape, or ``None``
when it cannot be known. Functions that can *fail* return ``(result, problem)``: ``problem`` is a Chinese
sentence for the user when the inputs provably do not fit, and ``None`` otherwise. The interpreter propagates
the result; a rule reports the problem. One place holds each piece of shape logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchls.core import symbols
from torchls.core.values import Dim, Shape, SymDim


def known(shape: Shape) -> bool:
    """True when the rank and every dim are known ints (a named size is not a known one)."""
    return shape is not None and all(isinstance(d, int) for d in shape)


def fmt(shape: Shape) -> str:
    """``(32, 128)``, with ``?`` for unknown dims."""
    if shape is None:
        return "(?)"
    inner = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def numel(shape: Shape) -> int | None:
    if not known(shape):
        return None
    total = 1
    for d in shape:  # type: ignore[union-attr]
        total *= d  # type: ignore[operator]
    return total


def normalize_dim(dim: int, rank: int) -> int | None:
    """A possibly negative ``dim`` as an index into ``rank`` dims; None when out of range."""
    if -rank <= dim < rank:
        return dim % rank
    return None


def dim_problem(dim: int, rank: int, allow_new: bool = False) -> str | None:
    """Why ``dim`` is out of range for a tensor of ``rank`` dims (``allow_new``: unsqueeze may address rank)."""
    limit = rank + 1 if allow_new else rank
    if limit == 0:
        limit = 1  # a 0-d tensor accepts dim 0 and -1
    if -limit <= dim < limit:
        return None
    return f"`dim={dim}` 超出范围：张量只有 {rank} 维，合法取值是 {-limit} 到 {limit - 1}"


# ------------------------------------------------------------------------------------------- broadcasting


def broadcast(a: Shape, b: Shape) -> tuple[Shape, str | None]:
    """The broadcast shape of ``a`` and ``b``; a problem when two known dims differ and neither is 1."""
    if a is None or b is None:
        return None, None
    out: list[Dim] = []
    for index in range(1, max(len(a), len(b)) + 1):
        x = a[-index] if index <= len(a) else 1
        y = b[-index] if index <= len(b) else 1
        if x is None or y is None:
            # One side unknown: a known size other than 1 is what the result has, whenever the operation works.
            known = x if y is None else y
            out.append(known if known is not None and known != 1 else None)
        elif x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None, f"形状 {fmt(a)} 和 {fmt(b)} 无法广播：倒数第 {index} 维分别是 {x} 和 {y}"
    return tuple(reversed(out)), None


# ------------------------------------------------------------------------------------------- strides / view


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = []
    running = 1
    for d in reversed(shape):
        strides.append(running)
        running *= max(d, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    expected = 1
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d == 1:
            continue
        if s != expected:
            return False
        expected *= d
    return True


def view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> tuple[int, ...] | None:
    """The strides ``view(new_shape)`` would have, or None when the memory layout cannot be viewed that way.

    The same algorithm torch uses to decide whether a view is possible (ATen's ``computeStride``).
    """
    if not shape:
        return contiguous_strides(new_shape)
    if 0 in shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def infer_view_shape(shape: Shape, requested: Sequence[Dim]) -> tuple[Shape, str | None]:
    """Resolve a ``view``/``reshape`` request (with at most one ``-1``) against ``shape``.

    Returns the new shape and a problem when the element counts provably cannot match.
    """
    minus = [i for i, d in enumerate(requested) if d == -1]
    if len(minus) > 1:
        return None, "`view`/`reshape` 里最多只能有一个 `-1`"
    if any(d is not None and d < -1 for d in requested):
        return None, f"形状 {fmt(tuple(requested))} 里有非法的负数维度"
    total = numel(shape)
    fixed = [d for d in requested if d != -1]
    if any(d is None for d in fixed):
        return tuple(None if d == -1 else d for d in requested), None
    product = 1
    for d in fixed:
        product *= d  # type: ignore[operator]
    if total is None:
        return tuple(None if d == -1 else d for d in requested), None
    if minus:
        if product == 0 or total % product:
            return (
                None,
                f"无法把 {total} 个元素（形状 {fmt(shape)}）排成 {fmt(tuple(requested))}："
                f"{total} 不能被 {product} 整除",
            )
        return tuple(total // product if d == -1 else d for d in requested), None
    if product != total:
        return None, f"元素个数不一致：形状 {fmt(shape)} 有 {total} 个元素，{fmt(tuple(requested))} 需要 {product} 个"
    return tuple(requested), None


# ------------------------------------------------------------------------------------------- ops


def permute(shape: Shape, dims: Sequence[int]) -> tuple[Shape, str | None]:
    if shape is None:
        return None, None
    rank = len(shape)
    if len(dims) != rank:
        return None, f"`permute` 需要 {rank} 个维度编号（张量有 {rank} 维），实际给了 {len(dims)} 个"
    normalized = [normalize_dim(d, rank) for d in dims]
    if any(d is None for d in normalized):
        return None, f"`permute` 的维度编号超出范围：张量只有 {rank} 维"
    if len(set(normalized)) != rank:
        return None, "`permute` 的维度编号有重复"
    return tuple(shape[d] for d in normalized), None  # type: ignore[index]


def transpose(shape: Shape, a: int, b: int) -> tuple[Shape, str | None]:
    if shape is None:
        return None, None
    for d in (a, b):
        problem = dim_problem(d, len(shape))
        if problem:
            return None, problem
    if not shape:
        return shape, None
    out = list(shape)
    i, j = a % len(shape), b % len(shape)
    out[i], out[j] = out[j], out[i]
    return tuple(out), None


def squeeze(shape: Shape, dim: int | None) -> tuple[Shape, str | None]:
    if shape is None:
        return None, None
    if dim is None:
        if any(d is None for d in shape):
            return None, None
        return tuple(d for d in shape if d != 1), None
    problem = dim_problem(dim, len(shape))
    if problem:
        return None, problem
    if not shape:
        return shape, None
    index = dim % len(shape)
    if shape[index] is None:
        return None, None
    if shape[index] != 1:
        return shape, None
    return shape[:index] + shape[index + 1 :], None


def unsqueeze(shape: Shape, dim: int) -> tuple[Shape, str | None]:
    if shape is None:
        return None, None
    problem = dim_problem(dim, len(shape), allow_new=True)
    if problem:
        return None, problem
    index = dim % (len(shape) + 1)
    return (*shape[:index], 1, *shape[index:]), None


def flatten(shape: Shape, start: int = 0, end: int = -1) -> tuple[Shape, str | None]:
    if shape is None:
        return None, None
    if not shape:
        return (1,), None
    for d in (start, end):
        problem = dim_problem(d, len(shape))
        if problem:
            return None, problem
    s, e = start % len(shape), end % len(shape)
    if s > e:
        return None, "`flatten` 的 `start_dim` 不能在 `end_dim` 之后"
    middle = shape[s : e + 1]
    merged = numel(middle) if known(middle) else None
    return (*shape[:s], merged, *shape[e + 1 :]), None


def reduce(shape: Shape, dim: int | Sequence[int] | None, keepdim: bool) -> tuple[Shape, str | None]:
    """``sum``/``mean``/``argmax``... along ``dim`` (``None``: over everything)."""
    if shape is None:
        return None, None
    if dim is None:
        return ((1,) * len(shape) if keepdim else ()), None
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        problem = dim_problem(d, len(shape))
        if problem:
            return None, problem
    if not shape:
        return (), None
    indices = {d % len(shape) for d in dims}
    if keepdim:
        return tuple(1 if i in indices else d for i, d in enumerate(shape)), None
    return tuple(d for i, d in enumerate(shape) if i not in indices), None


def concatenate(shapes: Sequence[Shape], dim: int) -> tuple[Shape, str | None]:
    """``torch.cat``: same rank, same sizes except along ``dim``."""
    if not shapes or any(s is None for s in shapes):
        return None, None
    ranks = {len(s) for s in shapes}  # type: ignore[arg-type]
    if len(ranks) != 1:
        listing = "、".join(fmt(s) for s in shapes)
        return None, f"`cat` 的张量维数不同：{listing}"
    rank = ranks.pop()
    if rank == 0:
        return None, None  # 0-d tensors: torch refuses them whatever ``dim`` says; not this check's business
    problem = dim_problem(dim, rank)
    if problem:
        return None, problem
    index = dim % rank
    out: list[Dim] = []
    for axis in range(rank):
        sizes = [s[axis] for s in shapes]  # type: ignore[index]
        if axis == index:
            out.append(sum(sizes) if all(x is not None for x in sizes) else None)  # type: ignore[arg-type]
            continue
        known_sizes = {x for x in sizes if x is not None}
        if len(known_sizes) > 1:
            listing = "、".join(fmt(s) for s in shapes)
            return None, f"`cat` 沿第 {dim} 维拼接，但其余维度不一致：{listing}（第 {axis} 维不同）"
        out.append(known_sizes.pop() if len(known_sizes) == 1 and None not in sizes else None)
    return tuple(out), None


def stack(shapes: Sequence[Shape], dim: int) -> tuple[Shape, str | None]:
    """``torch.stack``: every shape identical; a new dim of size ``len(shapes)`` at ``dim``."""
    if not shapes or any(s is None for s in shapes):
        return None, None
    ranks = {len(s) for s in shapes}  # type: ignore[arg-type]
    if len(ranks) != 1:
        return None, "`stack` 要求所有张量形状完全相同：" + "、".join(fmt(s) for s in shapes)
    rank = ranks.pop()
    for axis in range(rank):
        sizes = {s[axis] for s in shapes if s[axis] is not None}  # type: ignore[index]
        if len(sizes) > 1:
            return None, "`stack` 要求所有张量形状完全相同：" + "、".join(fmt(s) for s in shapes)
    problem = dim_problem(dim, rank, allow_new=True)
    if problem:
        return None, problem
    base = tuple(
        next((s[axis] for s in shapes if s[axis] is not None), None)  # type: ignore[index]
        for axis in range(rank)
    )
    index = dim % (rank + 1)
    return (*base[:index], len(shapes), *base[index:]), None


def matmul(a: Shape, b: Shape, op: str = "matmul") -> tuple[Shape, str | None]:
    """``a @ b`` (``op`` = matmul), ``torch.mm`` (2-D only) or ``torch.bmm`` (3-D only)."""
    if a is None or b is None:
        return None, None
    if op == "mm" and (len(a) != 2 or len(b) != 2):
        return None, f"`mm` 只接受二维矩阵，实际是 {fmt(a)} 和 {fmt(b)}；批量矩阵乘法用 `bmm` 或 `matmul`"
    if op == "bmm" and (len(a) != 3 or len(b) != 3):
        return None, f"`bmm` 只接受三维张量 `(B, N, M)`，实际是 {fmt(a)} 和 {fmt(b)}"
    if not a or not b:
        return None, "`matmul` 不接受 0 维张量"
    inner_a = a[-1]
    inner_b = b[-2] if len(b) >= 2 else b[0]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        return None, (
            f"矩阵乘法的内维不匹配：{fmt(a)} @ {fmt(b)}，左边的最后一维是 {inner_a}，"
            f"右边的{'倒数第二维' if len(b) >= 2 else '长度'}是 {inner_b}"
        )
    if op == "bmm" and a[0] is not None and b[0] is not None and a[0] != b[0]:
        return None, f"`bmm` 的 batch 维不一致：{a[0]} 和 {b[0]}"
    if len(a) == 1 and len(b) == 1:
        return (), None
    if len(a) == 1:
        return b[:-2] + b[-1:], None
    if len(b) == 1:
        return a[:-1], None
    batch, problem = broadcast(a[:-2], b[:-2])
    if problem:
        return None, f"矩阵乘法的 batch 维无法广播：{fmt(a)} @ {fmt(b)}"
    if batch is None:
        return None, None
    return (*batch, a[-2], b[-1]), None


def conv_output(size: Dim, kernel: int, stride: int, padding: int, dilation: int) -> Dim:
    if size is None:
        return None
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    return out if out > 0 else None


def pair(value: object, default: int) -> tuple[int, int] | None:
    """A layer argument that may be an int or a pair, as a pair of ints; None when not literal."""
    if value is None:
        return (default, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value  # type: ignore[return-value]
    return None


# ------------------------------------------------------------------------------------------- indexing

KEEP = "keep"  # `:`
DROP = "drop"  # an integer
NEW = "new"  # None: a new dim of size 1
ELLIPSIS = "..."
PART = "part"  # a slice with bounds: the dim stays, its size is not known


@dataclass(frozen=True, slots=True)
class Window:
    """``x[i : i + length]`` where ``i`` is at least 0 and at most ``last_start``: ``length`` items wherever ``i``
    lies when the dim holds ``last_start + length`` items or more (else the last windows are shorter: unknown)."""

    last_start: int
    length: int

    def size(self, dim: Dim) -> Dim:
        return self.length if isinstance(dim, int) and self.last_start + self.length <= dim else None


def index(shape: Shape, parts: Sequence[str | slice | Window]) -> Shape:
    """The shape of ``x[parts]`` for basic indexing; None when a part is not one of the kinds above.

    A ``slice`` with int bounds (``x[..., :96]``) gives the size of a dim whose size is known.
    """
    if shape is None or parts.count(ELLIPSIS) > 1:
        return None
    consumed = sum(1 for p in parts if isinstance(p, slice | Window) or p in (KEEP, DROP, PART))
    if consumed > len(shape) or any(
        not isinstance(p, slice | Window) and p not in (KEEP, DROP, NEW, ELLIPSIS, PART) for p in parts
    ):
        return None
    if ELLIPSIS in parts:
        at = parts.index(ELLIPSIS)
        parts = [*parts[:at], *([KEEP] * (len(shape) - consumed)), *parts[at + 1 :]]
    out: list[Dim] = []
    position = 0
    for part in parts:
        if part == NEW:
            out.append(1)
            continue
        if isinstance(part, slice):
            size = shape[position]
            out.append(len(range(*part.indices(size))) if isinstance(size, int) else None)
        elif isinstance(part, Window):
            out.append(part.size(shape[position]))
        elif part == KEEP:
            out.append(shape[position])
        elif part == PART:
            out.append(None)
        position += 1
    return (*out, *shape[position:])


# ------------------------------------------------------------------------------------------- named sizes
# The same operations on dims that may be named (:class:`Sym`): ``(b, t, 4, 16)``. Each answers only what holds
# for every binding; where the names decide, the result is unknown and there is no problem to report.


def sized(dims: Sequence[SymDim] | None) -> bool:
    """True when the rank is known and every dim is an int or a named size."""
    return dims is not None and all(symbols.is_size(d) for d in dims)


def contiguous_named(dims: Sequence[SymDim]) -> tuple[SymDim, ...]:
    """The strides of a freshly allocated tensor of these dims (products of the later dims)."""
    out: list[SymDim] = []
    running: SymDim = 1
    for d in reversed(dims):
        out.append(running)
        running = symbols.multiply(running, d) if symbols.compare(d, 1) != -1 else running
    return tuple(reversed(out))


def view_named(
    dims: Sequence[SymDim] | None, requested: Sequence[SymDim]
) -> tuple[tuple[SymDim, ...] | None, str | None]:
    """``view``/``reshape`` with named sizes: the new dims (``-1`` solved when the division is exact) and a
    problem when the element counts differ for every binding (``B*T*C`` elements as ``(B*T, 2*C)``)."""
    if sum(1 for d in requested if d == -1) > 1 or any(d is None for d in requested):
        return None, None
    total = symbols.product(list(dims)) if sized(dims) else None
    fixed = symbols.product([d for d in requested if d != -1])
    if total is None or fixed is None:
        return tuple(None if d == -1 else d for d in requested), None
    shown = "(" + ", ".join(str(d) for d in requested) + ")"
    if -1 in requested:
        solved = symbols.divide(total, fixed)
        if solved is None and symbols.same_names(total, fixed):
            # the same names on both sides: what -1 stands for is a fraction for every binding
            return None, f"无法把 {total} 个元素排成 {shown}：{total} 不能被 {fixed} 整除"
        return tuple(solved if d == -1 else d for d in requested), None
    if symbols.differs_always(total, fixed):
        return None, f"元素个数不一致：张量有 {total} 个元素，{shown} 需要 {fixed} 个"
    return tuple(requested), None


def view_strides_named(
    dims: Sequence[SymDim], strides: Sequence[SymDim], new_dims: Sequence[SymDim]
) -> tuple[tuple[SymDim, ...] | None, bool]:
    """:func:`view_strides` on named sizes: ``(strides, False)`` when the view works for every binding,
    ``(None, True)`` when it fails for every binding whose names are at least 2, ``(None, False)`` when the names
    decide. Same steps as ATen's ``computeStride``, each comparison asked of :func:`symbols.compare`."""
    if not dims:
        return contiguous_named(new_dims), False
    if any(d == 0 for d in dims):
        return None, False
    new_strides: list[SymDim] = [0] * len(new_dims)
    view_d = len(new_dims) - 1
    chunk_base: SymDim = strides[-1]
    tensor_numel: SymDim = 1
    view_numel: SymDim = 1
    for tensor_d in range(len(dims) - 1, -1, -1):
        tensor_numel = symbols.multiply(tensor_numel, dims[tensor_d])
        if tensor_d == 0:
            boundary = True
        else:
            single = symbols.compare(dims[tensor_d - 1], 1)
            joined = symbols.compare(strides[tensor_d - 1], symbols.multiply(tensor_numel, chunk_base))
            if single is None or (single != 0 and joined is None):
                return None, False
            boundary = single != 0 and joined != 0
        if not boundary:
            continue
        while view_d >= 0:
            smaller = symbols.compare(view_numel, tensor_numel)
            if smaller == -1:
                take = True
            else:
                one = symbols.compare(new_dims[view_d], 1)
                if smaller is None or one is None:
                    return None, False
                take = one == 0
            if not take:
                break
            new_strides[view_d] = symbols.multiply(view_numel, chunk_base)
            view_numel = symbols.multiply(view_numel, new_dims[view_d])
            view_d -= 1
        matched = symbols.compare(view_numel, tensor_numel)
        if matched is None:
            return None, False
        if matched != 0:
            return None, True
        if tensor_d > 0:
            chunk_base = strides[tensor_d - 1]
            tensor_numel = 1
            view_numel = 1
    if view_d != -1:
        return None, True
    return tuple(new_strides), False


def broadcast_named(
    a: Sequence[SymDim] | None, b: Sequence[SymDim] | None, result: Shape
) -> tuple[SymDim, ...] | Shape:
    """The broadcast of two shapes with names where both sides agree on a name (or the other side is 1 or
    missing); ``result`` is the broadcast of the int dims, which this only fills in."""
    if a is None or b is None or result is None:
        return result
    out = list(result)
    for index in range(1, len(out) + 1):
        if out[-index] is not None:
            continue
        x = a[-index] if index <= len(a) else 1
        y = b[-index] if index <= len(b) else 1
        if x == y or y == 1:
            out[-index] = x if isinstance(x, symbols.Sym) else out[-index]
        elif x == 1:
            out[-index] = y if isinstance(y, symbols.Sym) else out[-index]
    return tuple(out)


def matmul_named(a: Sequence[SymDim] | None, b: Sequence[SymDim] | None, result: Shape) -> tuple[SymDim, ...] | Shape:
    """A matrix product's dims with names: the rows of ``a``, the columns of ``b``, batch dims where they agree."""
    if a is None or b is None or result is None or len(a) < 2 or len(b) < 2 or len(result) != max(len(a), len(b)):
        return result
    batch = broadcast_named(a[:-2], b[:-2], result[:-2])
    return (*batch, a[-2] if result[-2] is None else result[-2], b[-1] if result[-1] is None else result[-1])  # type: ignore[misc]
