"""What a package pulls in when installed: the dependency tests of the gateway and the client use it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, requires

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def installed_closure(package: str) -> set[str]:
    """Every distribution `package` pulls in when installed without extras (what its image gets),
    following the extras its own requirements name (`lore-common[vectors]`)."""
    seen: set[tuple[str, str]] = set()  # (distribution, extra) pairs already walked; "" is the base
    names: set[str] = set()
    pending: list[tuple[str, tuple[str, ...]]] = [(canonicalize_name(package), ("",))]
    while pending:
        name, wanted = pending.pop()
        names.add(name)
        fresh = [extra for extra in wanted if (name, extra) not in seen]
        if not fresh:
            continue
        seen.update((name, extra) for extra in fresh)
        try:
            declared = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in declared:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in fresh):
                pending.append((canonicalize_name(requirement.name), ("", *sorted(requirement.extras))))
    return names
