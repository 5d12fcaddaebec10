"""agentpack.kernel.records.Record: fields from __slots__, defaults from factories, equality and errors."""

from __future__ import annotations

from typing import ClassVar

import pytest

from agentpack.kernel.records import Record, constant


class Point(Record):
    __slots__ = ("x", "y", "tags", "_cache")
    DEFAULTS: ClassVar[dict] = {"y": constant(0), "tags": list, "_cache": constant(None)}


def test_fields_positional_keyword_and_defaults():
    a = Point(1, tags=["t"])
    assert (a.x, a.y, a.tags) == (1, 0, ["t"])
    assert Point(x=2, y=3).as_dict() == {"x": 2, "y": 3, "tags": [], "_cache": None}


def test_default_factories_give_each_record_its_own_value():
    a, b = Point(1), Point(1)
    a.tags.append("only a")
    assert b.tags == []


def test_equality_by_type_and_fields_and_records_are_not_hashable():
    assert Point(1) == Point(1) and Point(1) != Point(2)
    assert Point(1) != (1, 0, [], None)
    with pytest.raises(TypeError):
        hash(Point(1))


def test_repr_leaves_out_private_fields():
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        ((), {}, "missing the argument 'x'"),
        ((1, 2, 3, 4, 5), {}, "takes 4 arguments, 5 given"),
        ((1,), {"z": 1}, "unexpected arguments \\['z'\\]"),
    ],
)
def test_wrong_arguments_are_type_errors(args, kwargs, message):
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)
