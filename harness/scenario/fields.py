"""How each value of a scenario is read from a YAML node, checked, and described.

A model field declares its YAML type with `spec(...)` (a `ValueType` such as
`Duration()`, `Size()`, `NodeRef(...)`), and the same declaration drives both the
loader (which reads nodes, keeps their line and column, and collects every problem in
a `Context`) and the JSON Schema generator. References to nodes and faults are only
recorded here; they are resolved once the whole file has been read (`loader.py`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable

import yaml

from hdfs_contract.config import KEYS, Config, ConfigError, parse_duration, parse_size

from .issues import Issue, did_you_mean

INVALID: Any = type("Invalid", (), {"__repr__": lambda self: "INVALID"})()
"""What a value that could not be read becomes; its problem is already in the Context."""

_NULL_TAG = "tag:yaml.org,2002:null"
_SIMPLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_DURATION_PATTERN = r"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*(us|ms|s|sec|m|min|h|d)?\s*$"
_SIZE_NUMBER = r"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*([bB]|[kKmMgGtT]([iI]?[bB])?)?\s*"
_SIZE_PATTERN = _SIZE_NUMBER + "$"
_RATE_PATTERN = _SIZE_NUMBER + r"(/\s*s)?\s*$"


def child(path: str, key: str) -> str:
    """The path of `key` inside `path`: `faults[1].kind`, `expect.files['/data/f1']`."""
    if _SIMPLE_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def item(path: str, index: int) -> str:
    return f"{path}[{index}]"


@dataclasses.dataclass(frozen=True)
class Reference:
    """A name used somewhere (a node id, a fault id, ...), checked when the file is read."""

    what: str              # "node" | "position" | "fault" | "workload" | "path"
    value: str
    path: str
    mark: Any
    roles: tuple[str, ...] = ()
    needs: str = ""


class Context:
    """The state of reading one file: its issues, the position of every value, its references."""

    def __init__(self, filename: str):
        self.filename = filename
        self.issues: list[Issue] = []
        self.marks: dict[str, Any] = {}
        self.references: list[Reference] = []
        self.objects: dict[str, Any] = {}   # every model object read, by path
        self._constructor = yaml.constructor.SafeConstructor()

    def error(self, where: Any, path: str, message: str) -> None:
        """Record a problem at `where` (a YAML node, a mark, or None for the file start)."""
        mark = getattr(where, "start_mark", where)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.issues.append(Issue(self.filename, line, col, path, message))

    def mark_of(self, path: str) -> Any:
        """The position of the value at `path`, or of its closest enclosing value."""
        while path:
            if path in self.marks:
                return self.marks[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return self.marks.get("")

    def error_at(self, path: str, message: str) -> None:
        self.error(self.mark_of(path), path, message)

    def value(self, node: yaml.Node) -> Any:
        """The plain Python value of a node (YAML 1.1 types: int, float, bool, str, ...);
        INVALID, with an issue at the node, for a value Python cannot hold (an integer of
        thousands of digits is refused by int())."""
        try:
            return self._constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError) as e:
            self.error(node, "", f"cannot read this value: {str(e).split(';')[0]}")
            return INVALID

    def refer(self, what: str, value: str, path: str, node: yaml.Node,
              roles: tuple[str, ...] = (), needs: str = "") -> None:
        self.references.append(Reference(what, value, path, node.start_mark, roles, needs))

    def pairs(self, node: yaml.MappingNode, path: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """The (key, key node, value node) of a mapping; merges (`<<`) resolved, duplicates refused."""
        own = {id(k) for k, _ in node.value}
        try:
            self._constructor.flatten_mapping(node)
        except yaml.MarkedYAMLError as e:
            self.error(e.problem_mark, path, f"YAML merge: {e.problem}")
        out: dict[str, tuple[str, yaml.Node, yaml.Node]] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                self.error(knode, path, "a key must be a plain name, not a list or mapping")
                continue
            key = knode.value
            first = out.get(key)
            # A key merged in from an anchor (`<<: *base`) may be overridden; a key given
            # twice in the mapping itself is a mistake.
            if first is not None and id(first[1]) in own:
                self.error(knode, child(path, key), f"duplicate key {key!r} "
                                                    f"(first given on line {first[1].start_mark.line + 1})")
                continue
            out[key] = (key, knode, vnode)
        return list(out.values())


def read(ctx: Context, vtype: "ValueType", node: yaml.Node, path: str) -> Any:
    """Read `node` as `vtype`, remembering where it was."""
    ctx.marks.setdefault(path, node.start_mark)
    return vtype.parse(ctx, node, path)


def is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG


def _shape(node: yaml.Node) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    return repr(node.value)


# -- field declarations ------------------------------------------------------------------

def spec(vtype: "ValueType", doc: str = "", *, required: bool | str = False,
         default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
         example: Any = None) -> Any:
    """Declare a dataclass field that is read from YAML as `vtype`.

    `required` may be a hint shown when the key is missing; `doc` becomes the
    description in the JSON Schema.
    """
    metadata = {"vtype": vtype, "doc": doc, "required": required, "example": example}
    if required:
        return dataclasses.field(metadata=metadata)
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def yaml_fields(cls: type) -> dict[str, dataclasses.Field]:
    """The fields of a model class that are read from YAML, in declaration order."""
    return {f.name: f for f in dataclasses.fields(cls) if "vtype" in f.metadata}


# -- value types --------------------------------------------------------------------------

class ValueType:
    """How one YAML value is read (`parse`) and described in JSON Schema (`schema`)."""

    expected = "a value"

    def parse(self, ctx: Context, node: yaml.Node, path: str) -> Any:
        raise NotImplementedError

    def schema(self, defs: dict) -> dict:
        raise NotImplementedError

    def scalar(self, ctx: Context, node: yaml.Node, path: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            ctx.error(node, path, f"expected {self.expected}, got {_shape(node)}")
            return INVALID
        return ctx.value(node)


class Str(ValueType):
    expected = "text"

    def __init__(self, pattern: str | None = None, hint: str = "", examples: tuple = ()):
        self.pattern = pattern
        self.hint = hint
        self.examples = examples

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        if not isinstance(value, str) or not value.strip():
            quote = ""
            if not isinstance(value, str) and value is not None and not node.style:
                # YAML 1.1 reads plain no/off/yes/on as booleans, 1e3 as a number...
                quote = f" (YAML reads {node.value} as {value!r}; write '{node.value}' in quotes)"
                value = node.value
            ctx.error(node, path, f"expected {self.hint or self.expected}, got {value!r}{quote}")
            return INVALID
        if self.pattern and not re.match(self.pattern, value):
            ctx.error(node, path, f"expected {self.hint}, got {value!r}")
            return INVALID
        return value

    def schema(self, defs):
        out: dict = {"type": "string", "minLength": 1}
        if self.pattern:
            out["pattern"] = self.pattern
        return out


class Text(Str):
    """Free text (may be empty)."""

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        if value is not None and not isinstance(value, str):
            # `description: yes` would otherwise become the text "True"
            ctx.error(node, path, f"expected text, got {value!r} (write '{node.value}' in quotes)")
            return INVALID
        return "" if value is None else value

    def schema(self, defs):
        return {"type": "string"}


class Int(ValueType):
    expected = "a whole number"

    def __init__(self, minimum: int | None = None):
        self.minimum = minimum

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            ctx.error(node, path, f"expected a whole number, got {value!r}")
            return INVALID
        if self.minimum is not None and value < self.minimum:
            ctx.error(node, path, f"must be at least {self.minimum}, got {value}")
            return INVALID
        return value

    def schema(self, defs):
        out: dict = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        return out


class Bool(ValueType):
    expected = "true or false"

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        if not isinstance(value, bool):
            ctx.error(node, path, f"expected true or false, got {value!r}")
            return INVALID
        return value

    def schema(self, defs):
        return {"type": "boolean"}


class Enum(ValueType):
    """One of `options`: the names themselves, or a function that lists them when a value is
    read (the systems, which a module or a registration can add after this import)."""

    def __init__(self, options: Iterable[str] | Callable[[], Iterable[str]], noun: str):
        self._options = options if callable(options) else tuple(options)
        self.noun = noun

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(self._options()) if callable(self._options) else self._options

    @property
    def expected(self) -> str:
        return f"one of {', '.join(self.options)}"

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        options = self.options
        if not isinstance(value, str) or value not in options:
            hint = did_you_mean(value, options) or f" (expected one of {', '.join(options)})"
            ctx.error(node, path, f"unknown {self.noun} {value!r}{hint}")
            return INVALID
        return value

    def schema(self, defs):
        return {"enum": list(self.options)}


class _Measure(ValueType):
    """A number with a unit (duration, size), refusing negative values by name."""

    def convert(self, value: Any) -> Any:
        raise NotImplementedError

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        text = str(value).strip()
        if text.startswith("-"):
            ctx.error(node, path, f"{self.noun} cannot be negative ({value})")
            return INVALID
        try:
            return self.convert(value)
        except ConfigError:
            ctx.error(node, path, f"expected {self.expected}, got {value!r}")
            return INVALID


class Duration(_Measure):
    """Seconds, written `500ms`, `2s`, `1.5min`, or a bare number of seconds."""

    noun = "a duration"
    expected = "a duration such as 500ms, 2s or 1min"

    def convert(self, value):
        return parse_duration(value)

    def schema(self, defs):
        defs.setdefault("duration", {
            "description": "a duration: 500ms, 2s, 1.5min, 1h, or a number of seconds",
            "anyOf": [{"type": "number", "minimum": 0},
                      {"type": "string", "pattern": _DURATION_PATTERN}]})
        return {"$ref": "#/$defs/duration"}


class Size(_Measure):
    """Bytes, written `64KiB`, `4MiB`, `1g`, or a bare number of bytes."""

    noun = "a size"
    expected = "a size such as 64KiB, 4MiB or 1048576"

    def convert(self, value):
        if isinstance(value, float) and not value.is_integer():
            raise ConfigError("fraction of a byte")
        return parse_size(value)

    def schema(self, defs):
        defs.setdefault("size", {
            "description": "a size in bytes: 64KiB, 4MiB, 1g, or a number of bytes",
            "anyOf": [{"type": "integer", "minimum": 0},
                      {"type": "string", "pattern": _SIZE_PATTERN}]})
        return {"$ref": "#/$defs/size"}


class Rate(Size):
    """Bytes per second, written `1MiB`, `1MiB/s`, or a bare number."""

    noun = "a rate"
    expected = "a rate such as 512KiB or 1MiB/s"

    def convert(self, value):
        if isinstance(value, str):
            value = re.sub(r"/\s*s\s*$", "", value.strip())
        return super().convert(value)

    def schema(self, defs):
        defs.setdefault("rate", {
            "description": "bytes per second: 512KiB, 1MiB/s, or a number",
            "anyOf": [{"type": "integer", "minimum": 0},
                      {"type": "string", "pattern": _RATE_PATTERN}]})
        return {"$ref": "#/$defs/rate"}


class NodeRef(Str):
    """The id of a node (`nn`, `dnN`, a client id), checked against the cluster later.

    With `positions` (a fault's target or link ends), also a pipeline position such as
    `c1.pipeline[1]` (harness.scenario.positions), read to its canonical text and
    recorded as a "position" reference. `positions` may instead be the one-line reason a
    position is refused here (default: only faults name positions)."""

    def __init__(self, roles: tuple[str, ...], needs: str, positions: bool | str = False):
        super().__init__(hint="a node id such as nn, dn1 or c1")
        self.roles = roles
        self.needs = needs
        self.positions = positions

    def parse(self, ctx, node, path):
        value = super().parse(ctx, node, path)
        if value is INVALID:
            return value
        from .positions import PositionSyntaxError, looks_like_position, parse_position
        if not looks_like_position(value):
            ctx.refer("node", value, path, node, self.roles, self.needs)
            return value
        try:
            position = parse_position(value)
        except PositionSyntaxError as e:
            ctx.error(node, path, str(e))
            return INVALID
        if self.positions is not True:
            ctx.error(node, path, self.positions or
                      f"{value!r} is a pipeline position, which only a fault's target, links "
                      "or between may name; give a node id such as dn1 here")
            return INVALID
        if "datanode" not in self.roles:
            ctx.error(node, path, f"{self.needs}, but {value!r} is a DataNode (a position of "
                                  f"{position.client}'s pipeline)")
            return INVALID
        ctx.refer("position", str(position), path, node, self.roles, self.needs)
        return str(position)


class Ref(Str):
    """The id of a fault or workload operation, or a file path, checked later."""

    def __init__(self, what: str, hint: str):
        super().__init__(hint=hint)
        self.what = what

    def parse(self, ctx, node, path):
        value = super().parse(ctx, node, path)
        if value is not INVALID:
            ctx.refer(self.what, value, path, node)
        return value


class ListOf(ValueType):
    expected = "a list"

    def __init__(self, item_type: ValueType, min_items: int = 0, what: str = "item"):
        self.item_type = item_type
        self.min_items = min_items
        self.what = what

    def parse(self, ctx, node, path):
        if not isinstance(node, yaml.SequenceNode):
            ctx.error(node, path, f"expected a list, got {_shape(node)}")
            return INVALID
        if len(node.value) < self.min_items:
            ctx.error(node, path, f"needs at least {self.min_items} {self.what}s, "
                                  f"got {len(node.value)}")
            return INVALID
        values = [read(ctx, self.item_type, sub, item(path, i)) for i, sub in enumerate(node.value)]
        return INVALID if INVALID in values else tuple(values)

    def schema(self, defs):
        out: dict = {"type": "array", "items": self.item_type.schema(defs)}
        if self.min_items:
            out["minItems"] = self.min_items
        return out


class Pair(ValueType):
    """`[src, dst]`: a directed link between two different nodes."""

    expected = "a link [src, dst]"

    def __init__(self, node_type: ValueType):
        self.node_type = node_type

    def parse(self, ctx, node, path):
        if not isinstance(node, yaml.SequenceNode) or len(node.value) != 2:
            ctx.error(node, path, f"expected a link [src, dst], got {_shape(node)}"
                      if not isinstance(node, yaml.SequenceNode)
                      else f"a link is [src, dst], got {len(node.value)} nodes")
            return INVALID
        src, dst = (read(ctx, self.node_type, sub, item(path, i)) for i, sub in enumerate(node.value))
        if INVALID in (src, dst):
            return INVALID
        if src == dst:
            ctx.error(node, path, f"a link joins two different nodes, got [{src}, {dst}]")
            return INVALID
        return (src, dst)

    def schema(self, defs):
        node = self.node_type.schema(defs)
        return {"type": "array", "prefixItems": [node, node], "minItems": 2, "maxItems": 2}


class MapOf(ValueType):
    """A mapping whose keys are read as `key_type` and values as `value_type`."""

    expected = "a mapping"

    def __init__(self, key_type: ValueType, value_type: ValueType, key_schema: dict | None = None):
        self.key_type = key_type
        self.value_type = value_type
        self.key_schema = key_schema

    def parse(self, ctx, node, path):
        if not isinstance(node, yaml.MappingNode):
            ctx.error(node, path, f"expected a mapping, got {_shape(node)}")
            return INVALID
        out, ok = {}, True
        for key, knode, vnode in ctx.pairs(node, path):
            sub = child(path, key)
            ctx.marks.setdefault(sub, vnode.start_mark)
            k = self.key_type.parse(ctx, knode, sub)
            v = read(ctx, self.value_type, vnode, sub)
            if INVALID in (k, v):
                ok = False
            else:
                out[k] = v
        return out if ok else INVALID

    def schema(self, defs):
        out: dict = {"type": "object", "additionalProperties": self.value_type.schema(defs)}
        if self.key_schema:
            out["propertyNames"] = self.key_schema
        return out


class AnyValue(ValueType):
    """Any YAML value (a `where:` field of an event), kept as read."""

    def parse(self, ctx, node, path):
        return ctx.value(node)

    def schema(self, defs):
        return {}


class Struct(ValueType):
    """A mapping read into a model dataclass: its `spec` fields, unknown keys refused.

    A class may define `check(ctx, node, path, values, given)` (a classmethod) for rules
    across fields, returning the values to build the object from, and
    `json_schema_extra(schema, defs)` (a staticmethod) to say the same in JSON Schema.
    """

    expected = "a mapping"

    def __init__(self, cls: type, extra_keys: tuple[str, ...] = (), name: str | None = None,
                 extra_schema: Callable[[dict, dict], None] | None = None):
        self.cls = cls
        self.extra_keys = extra_keys
        self.name = name or re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
        self.extra_schema = extra_schema or getattr(cls, "json_schema_extra", None)

    def parse(self, ctx, node, path):
        if not isinstance(node, yaml.MappingNode):
            keys = ", ".join(yaml_fields(self.cls))
            ctx.error(node, path, f"expected a mapping with keys {keys}, got {_shape(node)}")
            return INVALID
        fields = yaml_fields(self.cls)
        before = len(ctx.issues)
        values: dict[str, Any] = {}
        given: set[str] = set()
        for key, knode, vnode in ctx.pairs(node, path):
            sub = child(path, key)
            if key in self.extra_keys:
                continue
            f = fields.get(key)
            if f is None:
                known = list(self.extra_keys) + list(fields)
                hint = did_you_mean(key, known) or f"; {self.takes(path)}: {', '.join(known)}"
                ctx.error(knode, sub, f"unknown key {key!r}{hint}")
                continue
            if is_null(vnode):
                # an empty value is "not given": the checks of keys one kind or op needs
                # (links or between, size of a write) must not take `links:` as given
                if f.metadata["required"]:
                    given.add(key)
                    ctx.error(vnode, sub, "needs a value")
                continue
            given.add(key)
            value = read(ctx, f.metadata["vtype"], vnode, sub)
            if value is not INVALID:
                values[key] = value
        for name, f in fields.items():
            if f.metadata["required"] and name not in given:
                hint = f.metadata["required"]
                hint = hint if isinstance(hint, str) else f.metadata["doc"]
                hint = f" ({hint})" if hint else ""
                ctx.error(node, child(path, name), f"missing required key {name!r}{hint}")
        check = getattr(self.cls, "check", None)
        if check is not None:
            values = check(ctx, node, path, values, given)
        if len(ctx.issues) > before:
            return INVALID
        ctx.objects[path] = obj = self.cls(**values)
        return obj

    def takes(self, path: str) -> str:
        """Who takes the keys listed with an unknown key: `a partition fault takes`,
        `faults[3].at takes`, `a scenario takes`."""
        if self.name.startswith("fault."):
            return f"a {self.name[len('fault.'):]} fault takes"
        return f"{path} takes" if path else "a scenario takes"

    def schema(self, defs):
        if self.name not in defs:
            defs[self.name] = {}  # placeholder: classes may refer to themselves
            defs[self.name] = self.object_schema(defs)
        return {"$ref": f"#/$defs/{self.name}"}

    def object_schema(self, defs, extra_properties: dict | None = None) -> dict:
        properties, required = dict(extra_properties or {}), []
        for name, f in yaml_fields(self.cls).items():
            prop = dict(f.metadata["vtype"].schema(defs))
            if f.metadata["doc"]:
                prop["description"] = f.metadata["doc"]
            if f.metadata["example"] is not None:
                prop["default"] = f.metadata["example"]
            properties[name] = prop
            if f.metadata["required"]:
                required.append(name)
        out: dict = {"type": "object"}
        doc = (self.cls.__doc__ or "").strip().split("\n")[0]
        if doc:
            out["description"] = doc
        out["properties"] = properties
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        if self.extra_schema:
            self.extra_schema(out, defs)
        return out


class HadoopConfig(ValueType):
    """`cluster.config`: Hadoop keys of hdfs_contract.config, each value parsed by its key."""

    expected = "a mapping of configuration keys"

    def parse(self, ctx, node, path):
        if not isinstance(node, yaml.MappingNode):
            ctx.error(node, path, f"expected a mapping of Hadoop keys to values, got {_shape(node)}")
            return INVALID
        raw, ok = {}, True
        for key, knode, vnode in ctx.pairs(node, path):
            sub = child(path, key)
            ctx.marks.setdefault(sub, vnode.start_mark)
            spec_ = KEYS.get(key)
            if spec_ is None:
                ctx.error(knode, sub, f"unknown configuration key {key!r}{did_you_mean(key, KEYS)}")
                ok = False
                continue
            if not isinstance(vnode, yaml.ScalarNode) or is_null(vnode):
                ctx.error(vnode, sub, f"expected a {spec_.kind} value, got {_shape(vnode)}")
                ok = False
                continue
            value = ctx.value(vnode)
            if value is INVALID:
                ok = False
                continue
            try:
                spec_.parse(value, key)
            except ConfigError as e:
                ctx.error(vnode, sub, _strip_prefix(str(e), key))
                ok = False
                continue
            raw[key] = value
        if ok:
            try:
                Config(raw)
            except ConfigError as e:
                ctx.error(node, path, str(e))
                ok = False
        return raw if ok else INVALID

    def schema(self, defs):
        kinds = {"size": Size(), "duration": Duration(), "int": Int(), "bool": Bool()}
        properties = {}
        for name, key in KEYS.items():
            if key.kind == "choice":
                options = _choices_of(key)
                # config.py accepts any case and upper-cases it
                prop = ({"enum": options + [o.lower() for o in options]} if options
                        else {"type": "string"})
            elif key.kind == "float":
                prop = {"type": "number"}
            else:
                prop = dict(kinds[key.kind].schema(defs))
            unit = ""
            if key.kind == "duration":
                unit = "; a bare number is " + ("ms" if key.parse(1, name) < 0.5 else "seconds")
            prop["description"] = f"{key.help} (default {key.default}{unit})"
            properties[name] = prop
        return {"type": "object", "properties": properties, "additionalProperties": False}


def _strip_prefix(message: str, key: str) -> str:
    """ConfigError messages start with the key; the issue already names it."""
    return message[len(key) + 2:] if message.startswith(key + ": ") else message


def _choices_of(key) -> list[str]:
    """The options of a choice key, read back from its error message (config.py's contract)."""
    try:
        key.parse("\0", key.name)
    except ConfigError as e:
        m = re.search(r"expected one of (.*), got", str(e))
        if m:
            return [o.strip() for o in m.group(1).split(",")]
    return []
