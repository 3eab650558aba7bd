"""Find policies by name without importing them, and load them when asked.

Three sources, in this order:

1. the bundled ``policies/`` folder: one module per policy, the file name is the
   policy name (``a_srpt.py`` -> ``a-srpt``);
2. the ``gpusched.policies`` entry-point group, for installed third-party packages
   (``name = "package.module:Class"``);
3. a path given on the command line (``--policy path/to/mine.py``).

Listing reads each bundled file's docstring with :mod:`ast` and the entry points'
metadata, so ``gpusched policies`` imports no policy (harlequin's ``plugins.py``).
A policy module defines exactly one public class with a ``name`` and ``decide``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import io
import sys
import threading
import tokenize
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from gpusched.errors import PolicyError, did_you_mean, show_name
from gpusched.io.resources import bundled_dir

GROUP = "gpusched.policies"


@dataclass(frozen=True, slots=True)
class PolicyInfo:
    """A discovered policy: its CLI name, where it comes from and its one-line summary."""

    name: str
    origin: str  # a file path or "module:Class"

    @property
    def summary(self) -> str:
        """The first line of the policy module's docstring (read without importing it)."""
        return _file_summary(Path(self.origin)) if self.origin.endswith(".py") else ""


#: ast.parse is not thread-safe on every CPython 3.11 (sweeps on threads call this)
_PARSE_LOCK = threading.Lock()


def _file_summary(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
        head = _first_statement(text)
        with _PARSE_LOCK:
            doc = ast.get_docstring(ast.parse(head))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, tokenize.TokenError):
        return ""
    if not doc:
        return ""
    # its first paragraph, whole (a summary wrapped over two lines was cut mid-sentence)
    lines = doc.strip().splitlines()
    first = lines[: next((i for i, line in enumerate(lines) if not line.strip()), len(lines))]
    return " ".join(line.strip() for line in first)


def _first_statement(text: str) -> str:
    """The lines of ``text`` up to the end of its first logical line, where a module's
    docstring is: parsing them alone is several times faster than parsing the module
    (``gpusched policies`` reads every bundled policy's summary)."""
    lines: list[str] = []
    source = io.StringIO(text)

    def readline() -> str:
        line = source.readline()
        lines.append(line)
        return line

    for tok in tokenize.generate_tokens(readline):
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            break
    return "".join(lines)


def available_policies() -> dict[str, PolicyInfo]:
    """Every policy name that ``--policy`` accepts, mapped to its info (no imports)."""
    from gpusched.core.plugins import entry_points

    found: dict[str, PolicyInfo] = {}
    for path in sorted(bundled_dir("policies").glob("*.py")):
        if path.name.startswith("_"):
            continue
        name = path.stem.replace("_", "-")
        found[name] = PolicyInfo(name, str(path))
    for ep in entry_points(GROUP):
        if ep.name not in found:
            found[ep.name] = PolicyInfo(ep.name, ep.value)
    return dict(sorted(found.items()))


def _module_from_path(path: Path, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PolicyError(f"cannot load policy file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a user's file: report, don't trace back
        sys.modules.pop(module_name, None)
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if isinstance(exc, SystemExit):  # sys.exit(0) said only "0"
            why = f"it called sys.exit({exc.code!r})"
        raise PolicyError(f"{path}: policy module failed to import: {why}") from exc
    return module


def sibling_policy(here: str, file_name: str) -> type:
    """The policy class of ``file_name`` in the folder of the policy module ``here``.

    For a policy that extends another (``a_srpt_perfect`` extends ``a_srpt``): policy
    files are loaded by path, not as a package, so they cannot import each other.
    """
    path = Path(here).with_name(file_name)
    name = f"gpusched_policies._base_{path.stem}"
    module = sys.modules.get(name) or _module_from_path(path, name)
    return _policy_class(module, str(path))


def _policy_class(module: ModuleType, where: str) -> type:
    classes = [
        obj
        for key, obj in vars(module).items()
        if inspect.isclass(obj)
        and not key.startswith("_")
        and obj.__module__ == module.__name__
        and callable(getattr(obj, "decide", None))
        and isinstance(getattr(obj, "name", None), str)
    ]
    if len(classes) != 1:
        raise PolicyError(
            f"{where}: a policy module must define exactly one public class with "
            f"'name' and 'decide', found {len(classes)}"
        )
    return classes[0]


def load_policy_class(spec: str) -> type:
    """The policy class for a name or a ``.py`` path.

    Raises
    ------
    PolicyError
        Unknown name (the message lists the known ones), or a file that does not
        define exactly one policy class.
    """
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec)
        if path.is_dir():
            raise PolicyError(f"policy file {show_name(spec)} is a folder, expected a .py file")
        if path.exists() and not path.is_file():
            raise PolicyError(
                f"policy file {show_name(spec)} is not a regular file, expected a .py file"
            )
        if not path.is_file():
            raise PolicyError(f"policy file not found: {show_name(spec)}")
        mod_name = f"gpusched_user_policies.{path.stem}"
        return _policy_class(_module_from_path(path.resolve(), mod_name), str(path))
    bundled = bundled_dir("policies") / f"{spec.replace('-', '_')}.py"
    if "_" not in spec and not spec.startswith("-") and bundled.is_file():
        # a bundled name (they come first): no scan of the installed packages' entry points
        known = {spec: PolicyInfo(spec, str(bundled))}
    else:
        known = available_policies()
    if spec not in known:
        hint = did_you_mean(spec, known)
        raise PolicyError(
            f"unknown policy '{spec}'{hint} (known: {', '.join(known) or 'none'}; "
            "or give a path to a .py file)"
        )
    origin = known[spec].origin
    if origin.endswith(".py"):
        path = Path(origin)
        return _policy_class(_module_from_path(path, f"gpusched_policies.{path.stem}"), origin)
    module_name, _, attr = origin.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as exc:
        raise PolicyError(f"policy '{spec}' ({origin}) failed to load: {exc}") from exc


class LazyGenerator:
    """``np.random.default_rng(seed)``, made at its first use.

    Most policies take an ``rng`` and never draw from it; importing ``numpy.random`` to make
    one cost about 25 ms of a small run. Every attribute is the generator's (the same
    stream as ``np.random.default_rng(seed)``, from its first draw).
    """

    __slots__ = ("_seed", "_gen")

    def __init__(self, seed: int, gen: Any = None) -> None:
        self._seed = seed
        self._gen = gen

    def __getattr__(self, name: str) -> Any:
        if self._gen is None:
            import numpy as np

            self._gen = np.random.default_rng(self._seed)
        return getattr(self._gen, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyGenerator, (self._seed, self._gen))


def make_policy(cls: type[Any], params: dict[str, Any], seed: int) -> Any:
    """Instantiate a policy class with validated parameters and its own RNG."""
    from gpusched.core.policy import call_policy, check_params

    check_params(cls, params)
    kwargs = dict(params)
    if "rng" in inspect.signature(cls.__init__).parameters:
        kwargs["rng"] = LazyGenerator(seed)
    name = str(getattr(cls, "name", cls.__name__))
    return call_policy(name, "__init__", None, cls, **kwargs)


def policy_identity(cls: type, spec_name: str, params: dict[str, Any]) -> str:
    """What tells two runs' policies apart, as text: the class (a policy file by its full
    path) and every parameter it declares, each one not given at its default.

    ``"fifo"`` and ``"fifo:backfill=false"`` are one run (a parameter given its default),
    as are ``starve=1`` and ``starve=1.0`` (a float parameter) and ``0.0`` and ``-0.0``
    (``x + 0.0`` turns one into the other); ``compare`` and ``sweep`` refuse such twins.
    """
    from gpusched.core.policy import policy_params

    identity = f"{cls.__module__}.{cls.__qualname__}"
    if spec_name.endswith(".py") or "/" in spec_name:
        identity = str(Path(spec_name).resolve())
    full = {k: _as_declared(tp, d) for k, (tp, d) in policy_params(cls).items()}
    full.update(params)
    return repr((identity, sorted((k, _signless(v)) for k, v in full.items())))


def _as_declared(tp: type, default: Any) -> Any:
    """A parameter's default as a value given for it converts (an integer default of a
    float parameter, a float)."""
    if tp is float and isinstance(default, int) and not isinstance(default, bool):
        return float(default)
    return default


def _signless(value: Any) -> Any:
    """``value`` with every float zero positive (in tuples and lists too)."""
    if isinstance(value, float):
        return value + 0.0
    if isinstance(value, tuple | list):
        return type(value)(_signless(v) for v in value)
    return value
