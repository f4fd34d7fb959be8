"""The steps of a query plan, one frozen type per kind of step.

A step is read from its JSON form by ``step_from_dict``, which checks its shape (the fields
its kind needs, each of the right type) and raises ``PlanError`` naming the step and the
field; ``kgqa.plan.validate`` then checks it against the graph (relations, node ids, earlier
steps). ``to_dict`` writes the same JSON keys back, so a plan round-trips.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, TypeAlias, cast, get_args

from ..errors import InputError
from .filters import SAID

Direction: TypeAlias = Literal["out", "in"]
Joining: TypeAlias = Literal["intersection", "union", "difference"]
RESERVED = ("final_result", "final_result_total")
OPS = ("expand", "intersection", "union", "difference", "nodes", "all", "given", "filter")


class PlanError(InputError):
    """A plan that does not fit the graph's schema or refers to unknown steps."""

    reply: str | None = None        # a model's plan: what it wrote


@dataclass(frozen=True)
class Expand:
    """The nodes one ``relation`` edge away (``direction`` from the start) of type
    ``target_type``, from a named node (``entity``) or an earlier step's list (``step``).
    ``from_type``: the named node's type, when the planner knew it."""

    op: ClassVar[str] = "expand"
    key: str
    relation: str
    direction: Direction
    target_type: str
    entity: str | None = None
    step: str | None = None
    from_type: str | None = None

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.step,) if self.step is not None else ()

    def to_dict(self) -> dict[str, Any]:
        origin = {"entity": self.entity} if self.entity is not None else {"step": self.step}
        out: dict[str, Any] = {"key": self.key, "op": self.op, "from": origin, "relation": self.relation,
                               "direction": self.direction, "target_type": self.target_type}
        if self.from_type is not None:
            out["from_type"] = self.from_type
        return out


@dataclass(frozen=True)
class Join:
    """Two or more earlier lists joined: the nodes in all (``intersection``), in any
    (``union``), or in the first and none of the others (``difference``)."""

    key: str
    op: Joining
    inputs: tuple[str, ...]

    @property
    def reads(self) -> tuple[str, ...]:
        return self.inputs

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "op": self.op, "inputs": list(self.inputs)}


@dataclass(frozen=True)
class Named:
    """Nodes the question names ("other than gout"), by id."""

    op: ClassVar[str] = "nodes"
    key: str
    ids: tuple[str, ...]
    type: str | None = None

    reads: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "op": self.op, "ids": list(self.ids)}
        if self.type is not None:
            out["type"] = self.type
        return out


@dataclass(frozen=True)
class Every:
    """Every node of a type ("which genes are not ...")."""

    op: ClassVar[str] = "all"
    key: str
    type: str

    reads: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "op": self.op, "type": self.type}


@dataclass(frozen=True)
class Given:
    """A list from the previous turn's context store, by its key there."""

    op: ClassVar[str] = "given"
    key: str
    history: str

    reads: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "op": self.op, "history": self.history}


@dataclass(frozen=True)
class _Comparison:
    """What both filters share: the earlier list they read (``input``) and how a node's
    number compares (``compare``, ``value``)."""

    op: ClassVar[str] = "filter"
    key: str
    input: str
    compare: str
    value: int | float

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.input,)

    def _head(self) -> dict[str, Any]:
        return {"key": self.key, "op": self.op, "input": self.input, "compare": self.compare, "value": self.value}


@dataclass(frozen=True)
class PropertyFilter(_Comparison):
    """The nodes of an earlier list whose ``property`` compares to ``value`` ("approved after
    2000")."""

    property: str

    def to_dict(self) -> dict[str, Any]:
        return {**self._head(), "property": self.property}


@dataclass(frozen=True)
class EdgeFilter(_Comparison):
    """The nodes of an earlier list whose number of ``relation`` edges (``direction``) to
    ``target_type`` nodes compares to ``value`` ("more than 3 symptoms")."""

    relation: str
    direction: Direction
    target_type: str

    def to_dict(self) -> dict[str, Any]:
        return {**self._head(), "relation": self.relation, "direction": self.direction,
                "target_type": self.target_type}


Filter: TypeAlias = PropertyFilter | EdgeFilter
Step: TypeAlias = Expand | Join | Named | Every | Given | PropertyFilter | EdgeFilter


def step_from_dict(data: Any, where: str) -> Step:
    """A step from its JSON form; PlanError (naming ``where`` and the field) unless it has the
    fields its ``op`` needs, each of the right type."""
    if not isinstance(data, dict):
        raise PlanError(f"{where}: a step must be a JSON object (got {data!r})")
    key = data.get("key")
    if not isinstance(key, str) or not key or key in RESERVED:
        raise PlanError(f"{where}: needs a new, unreserved 'key' (got {key!r})")
    op = data.get("op")
    if op == "expand":
        direction = data.get("direction")
        if direction not in get_args(Direction):
            raise PlanError(f"{where}: direction must be 'out' or 'in' (got {direction!r})")
        origin = data.get("from")
        if not isinstance(origin, dict) or not isinstance(origin.get("entity", origin.get("step")), str):
            raise PlanError(f"{where}: 'from' must name an entity or an earlier step")
        return Expand(key, _text(data, "relation", where), cast(Direction, direction),
                      _text(data, "target_type", where), entity=origin.get("entity"),
                      step=None if "entity" in origin else origin["step"],
                      from_type=data.get("from_type") if isinstance(data.get("from_type"), str) else None)
    if op in get_args(Joining):
        inputs = data.get("inputs")
        if not isinstance(inputs, list) or len(inputs) < 2 or not all(isinstance(k, str) for k in inputs):
            raise PlanError(f"{where}: {op} needs two or more earlier step keys")
        return Join(key, cast(Joining, op), tuple(inputs))
    if op == "nodes":
        ids = data.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise PlanError(f"{where}: nodes needs a list of node ids of the graph (got {ids!r})")
        kind = data.get("type")
        return Named(key, tuple(ids), kind if isinstance(kind, str) else None)
    if op == "all":
        kind = data.get("type")
        if not isinstance(kind, str) or not kind:
            raise PlanError(f"{where}: {kind!r} is not a node type of the graph")
        return Every(key, kind)
    if op == "given":
        return Given(key, _text(data, "history", where))
    if op == "filter":
        return _filter_from_dict(data, key, where)
    raise PlanError(f"{where}: unknown op {op!r} ({', '.join(OPS)})")


def _filter_from_dict(data: dict, key: str, where: str) -> PropertyFilter | EdgeFilter:
    source = data.get("input")
    if not isinstance(source, str) or not source:
        raise PlanError(f"{where}: filter needs an earlier step as 'input' (got {source!r})")
    value = data.get("value")
    if data.get("compare") not in SAID or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanError(f"{where}: filter needs 'compare' (one of {', '.join(SAID)}) and a number 'value'")
    if "property" in data:
        if not isinstance(data["property"], str) or not data["property"]:
            raise PlanError(f"{where}: filter's 'property' must be a property name")
        return PropertyFilter(key, source, data["compare"], value, data["property"])
    relation, direction, target = data.get("relation"), data.get("direction"), data.get("target_type")
    if not isinstance(relation, str) or direction not in get_args(Direction) or not isinstance(target, str):
        raise PlanError(f"{where}: filter needs a 'property', or a 'relation', 'direction' and 'target_type'")
    return EdgeFilter(key, source, data["compare"], value, relation, cast(Direction, direction), target)


def reading_instead(step: Step, old: str, new: str) -> Step:
    """``step`` reading the list of step ``new`` wherever it read that of ``old``."""
    match step:
        case Expand(step=start) if start == old:
            return replace(step, step=new)
        case Join():
            return replace(step, inputs=tuple(new if k == old else k for k in step.inputs))
        case PropertyFilter() | EdgeFilter() if step.input == old:
            return replace(step, input=new)
    return step


def _text(data: dict, name: str, where: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise PlanError(f"{where}: {name!r} must be a name (got {value!r})")
    return value


__all__ = ["Direction", "EdgeFilter", "Every", "Expand", "Filter", "Given", "Join", "Joining", "Named", "OPS",
           "PlanError", "PropertyFilter", "RESERVED", "Step", "reading_instead", "step_from_dict"]
