"""Typed configs from YAML and `--set key=value`: wrong types or ranges name the field.

YAML is read with `load_yaml`, which differs from `yaml.safe_load` in two ways that
matter for configs: `1e-3` is a number (PyYAML follows YAML 1.1, where a float needs a
dot, so `1e-3` would be the string "1e-3" and a learning rate would be refused as
text), and a key given twice in one mapping is an error naming the key, its lines and
the file (YAML says keys are unique, but PyYAML silently keeps the last one, so a
duplicated `learning_rate:` would change a run without a word). Every float field must
be finite: `.nan` or `.inf` in a config is refused naming the field.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints

import yaml


class ConfigError(ValueError):
    """A config value of the wrong type or range; the message names the field."""


class _DuplicateKeyError(Exception):
    def __init__(self, key: object, first: int, second: int):
        super().__init__(key, first, second)
        self.key, self.first, self.second = key, first, second


class ConfigLoader(yaml.SafeLoader):
    """yaml.SafeLoader with YAML 1.2's exponent floats (`1e-3`) and no duplicated keys."""

    def construct_mapping(self, node, deep=False):
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise _DuplicateKeyError(key, seen[key], key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: the base class reports it
                break
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML `text` from `source` (a file name, or `--set KEY`) as configs want it;
    ConfigError naming `source` on a duplicated key or bad YAML."""
    try:
        return yaml.load(text, Loader=ConfigLoader)
    except _DuplicateKeyError as dup:
        raise ConfigError(
            f"{source}: key {dup.key!r} given twice (lines {dup.first} and {dup.second})"
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML ({err})") from None


def to_plain(cfg: Any) -> Any:
    """Dataclass -> nested dicts and lists, ready for YAML."""
    if dataclasses.is_dataclass(cfg):
        return {f.name: to_plain(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, (list, tuple)):
        return [to_plain(v) for v in cfg]
    if isinstance(cfg, dict):
        return {k: to_plain(v) for k, v in cfg.items()}
    return cfg


def from_plain(cls: type, data: dict[str, Any], where: str = "", check: bool = True) -> Any:
    """Build dataclass `cls` from nested dicts, checking every value against its type hint.

    Range checks (`validate`) run once at the top; a config validates its own children.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where or cls.__name__}: expected a mapping, got {data!r}")
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(
            f"{where or cls.__name__}: unknown field(s) {sorted(unknown)}; known: {sorted(names)}"
        )
    values = {k: _coerce(hints[k], v, f"{where}{k}") for k, v in data.items()}
    cfg = cls(**values)
    if check:
        validate(cfg, where)
    return cfg


def validate(cfg: Any, where: str = "") -> None:
    """Run the config's own range checks, prefixing errors with where it sits."""
    check = getattr(cfg, "validate", None)
    if check is None:
        return
    try:
        check()
    except ValueError as err:
        raise ConfigError(
            f"{where}{err}" if where and not str(err).startswith(where) else str(err)
        ) from err


def apply_overrides(cfg: Any, overrides: list[str], where: str = "") -> Any:
    """Return a copy of `cfg` with `a.b=value` overrides (values parsed as YAML; an empty
    value is the empty string, as a shell user means by `a.b=`, where YAML reads null)."""
    plain = to_plain(cfg)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        node = plain
        parts = key.strip().split(".")
        for part in parts[:-1]:
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(
                    f"--set {key}: no field {part!r} in {where.rstrip('.') or type(cfg).__name__} config"
                )
            node = node[part]
        if not isinstance(node, dict) or parts[-1] not in node:
            raise ConfigError(
                f"--set {key}: no field {parts[-1]!r} in {where.rstrip('.') or type(cfg).__name__} config"
            )
        node[parts[-1]] = load_yaml(raw, f"--set {key}") if raw.strip() else ""
    return from_plain(type(cfg), plain, where)


def _coerce(hint: Any, value: Any, field: str) -> Any:
    origin = get_origin(hint)
    args = get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(arg, value, field)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0])
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{field}: expected one of {list(args)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(hint):
        return from_plain(hint, value, f"{field}.", check=False)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{field}: expected a list, got {type(value).__name__} {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{field}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(f"{field}: expected {len(args)} values, got {len(value)}")
        return tuple(
            _coerce(a, v, f"{field}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{field}: expected a mapping, got {type(value).__name__} {value!r}")
        return {
            _coerce(args[0], k, field): _coerce(args[1], v, f"{field}.{k}")
            for k, v in value.items()
        }
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{field}: expected a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{field}: {value} is not a finite number")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{field}: expected an integer, got {type(value).__name__} {value!r}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(
                f"{field}: expected true or false, got {type(value).__name__} {value!r}"
            )
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{field}: expected a string, got {type(value).__name__} {value!r}")
        return value
    return value
