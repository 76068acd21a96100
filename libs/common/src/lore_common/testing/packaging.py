"""What a package pulls in when installed: the dependency tests of the gateway and the client use it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, requires

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def installed_closure(package: str) -> set[str]:
    """Every distribution `package` pulls in when installed without extras (what its image gets)."""
    seen: set[str] = set()
    pending = [canonicalize_name(package)]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            declared = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in declared:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(canonicalize_name(requirement.name))
    return seen
