"""``einsum``: a tiled contraction. Two operands with no index shared by both and kept
in the output contract as one blocked matrix product (``tensordot``); otherwise every
operand is laid out over all the indices (missing ones of length 1), multiplied with
broadcasting and summed over the contracted indices, which the engine fuses into one
pass per chunk of the product.
"""

from __future__ import annotations

import string
from typing import Any, Dict, List, Tuple

from . import Tensor, _check_out, _to_tensor, tensordot

__all__ = ["einsum"]

_LETTERS = set(string.ascii_letters)


def _parse(subscripts: str, count: int) -> Tuple[List[str], str]:
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise NotImplementedError("einsum with an ellipsis ('...')")
    if "->" in spec:
        inputs, output = spec.split("->")
    else:
        inputs = spec
        letters = inputs.replace(",", "")
        # Implicit output: the indices that appear once, in alphabetical order.
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != count:
        raise ValueError(f"einsum: {len(terms)} operands in the subscripts, {count} given")
    for term in terms + [output]:
        if not set(term) <= _LETTERS:
            raise ValueError(f"einsum: invalid subscript characters in {term!r}")
    if len(set(output)) != len(output):
        raise ValueError("einsum: an output subscript appears more than once")
    if not set(output) <= set("".join(terms)):
        raise ValueError("einsum: an output subscript is not in any input")
    return terms, output


def _diagonalised(t: Tensor, term: str) -> Tuple[Tensor, str]:
    """A term with a repeated index (``'ii'``): its diagonal, the index once."""
    if len(set(term)) == len(term):
        return t, term
    if len(term) == 2 and term[0] == term[1]:
        from .linalg import diagonal

        return diagonal(t), term[0]
    raise NotImplementedError(f"einsum with a repeated index in {term!r} (only 'ii' is supported)")


def einsum(subscripts: str, *operands: Any, optimize: Any = False, dtype: Any = None, casting: str = "safe", out: Any = None) -> Tensor:
    """numpy's ``einsum`` over tensors, lazily (explicit ``'ij,jk->ik'`` or implicit
    output). Not supported: ``...`` and repeated indices other than a matrix's ``'ii'``."""
    _check_out("einsum", out, {})
    terms, output = _parse(subscripts, len(operands))
    ts: List[Tensor] = []
    for term, op in zip(terms, operands):
        t = _to_tensor(op)
        if t.ndim != len(term):
            raise ValueError(f"einsum: operand of {t.ndim} dimensions for subscripts {term!r}")
        t, term = _diagonalised(t, term)
        ts.append(t)
        terms[len(ts) - 1] = term
    if dtype is not None:
        ts = [t.astype(dtype) for t in ts]
    sizes: Dict[str, int] = {}
    for t, term in zip(ts, terms):
        for c, n in zip(term, t.shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise ValueError(f"einsum: index {c!r} has lengths {sizes[c]} and {n}")
            sizes[c] = max(sizes[c], n)
    if len(ts) == 2:
        a, b = terms
        shared = set(a) & set(b)
        if shared and not (shared & set(output)) and all(a.count(c) == 1 for c in a) and all(b.count(c) == 1 for c in b):
            axes_a = [a.index(c) for c in sorted(shared)]
            axes_b = [b.index(c) for c in sorted(shared)]
            r = tensordot(ts[0], ts[1], axes=(axes_a, axes_b))
            have = [c for c in a if c not in shared] + [c for c in b if c not in shared]
            r = _sum_out(r, have, output)
            return r.transpose([have.index(c) for c in output]) if len(output) > 1 and have != list(output) else r
    order = list(dict.fromkeys("".join(terms)))
    product = None
    for t, term in zip(ts, terms):
        perm = [term.index(c) for c in order if c in term]
        t = t.transpose(perm) if perm != list(range(len(perm))) else t
        laid = [c for c in order if c in term]
        t = t.reshape([t.shape[laid.index(c)] if c in term else 1 for c in order])
        product = t if product is None else product * t
    contracted = tuple(i for i, c in enumerate(order) if c not in output)
    r = product.sum(axis=contracted) if contracted else product
    have = [c for c in order if c in output]
    return r.transpose([have.index(c) for c in output]) if len(output) > 1 and have != list(output) else r


def _sum_out(r: Tensor, have: List[str], output: str) -> Tensor:
    """Indices of a tensordot's result not in the output, summed away (in place in
    ``have``)."""
    drop = [i for i, c in enumerate(have) if c not in output]
    if not drop:
        return r
    for i in reversed(drop):
        del have[i]
    return r.sum(axis=tuple(drop))

