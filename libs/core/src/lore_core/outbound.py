"""The guard on every URL the server fetches for a user: no request forgery into the cluster.

A web or git source, an S3 endpoint given per dataset, a picture URL or a webhook names a host the
server then connects to. Left alone, a user could make the server read `http://169.254.169.254/` (the
cloud's metadata, with its credentials), a store's admin port or the internal services themselves.
`check_url` resolves the host and refuses any address that is not public: loopback, private,
link-local, shared (CGNAT), multicast, reserved, unspecified, the cloud metadata addresses, and the same
behind an IPv4-mapped, 6to4, Teredo or NAT64 IPv6 address. An operator opens ranges with
`network.allow_ranges` (a lab's S3 on 10.0.0.0/8, a git server on the LAN).

For httpx, `guarded_client()` (or `GuardedTransport` around any transport) checks every request,
each redirect hop included, and connects to the address it checked (the Host header and TLS name stay
the URL's), so a DNS answer that changes between the check and the connection (rebinding) gains nothing.
For a client that cannot be pinned (boto3's endpoint, git), call `check_url` right before use.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lore_core.errors import BadRequest

if TYPE_CHECKING:
    import httpx

    _TransportBase = httpx.AsyncBaseTransport
else:
    _TransportBase = object  # httpx is imported where it is used: lore_core does not depend on it

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

SCHEMES = frozenset({"http", "https"})
# Named apart from the ranges below so a message can say "cloud metadata": AWS, GCP and Azure
# (169.254.169.254), AWS over IPv6 (fd00:ec2::254), Alibaba (100.100.100.200), Oracle (192.0.0.192).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "192.0.0.192")
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class DestinationRefused(BadRequest):
    """A URL whose host is, or resolves to, an address the server must not reach for a user."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"the server does not fetch {_shown(url)}: {reason}; an operator may allow the range in "
            "`network.allow_ranges`",
            detail={"url": _shown(url), "reason": reason},
        )
        self.url = url
        self.reason = reason


def _shown(url: str) -> str:
    """The URL without its user:password part, for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "an unreadable URL"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return parts._replace(netloc=host).geturl()


def parse_ranges(ranges: Iterable[str]) -> tuple[Network, ...]:
    """`network.allow_ranges` as networks (`10.0.0.0/8`, `fd00::/8`, a single address)."""
    return tuple(ipaddress.ip_network(r.strip(), strict=False) for r in ranges if r.strip())


def _embedded(address: IPAddress) -> list[IPAddress]:
    """Any IPv4 address `address` carries (mapped, 6to4, Teredo, NAT64), then the address itself: the
    carried one names the refusal (a mapped 169.254.169.254 is the metadata address, not just private)."""
    found: list[IPAddress] = []
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            found.append(address.sixtofour)
        if address.teredo is not None:
            found.extend(address.teredo)
        if address in _NAT64:
            found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    found.append(address)
    return found


def refusal(address: IPAddress, allowed: Sequence[Network] = ()) -> str | None:
    """Why the server must not connect to `address` for a user, or None when it may."""
    if any(address in net for net in allowed if net.version == address.version):
        return None
    for candidate in _embedded(address):
        if any(candidate in net for net in allowed if net.version == candidate.version):
            continue
        if candidate in METADATA_ADDRESSES:
            return f"{address} is a cloud metadata address"
        if candidate.is_loopback:
            return f"{address} is a loopback address"
        if candidate.is_link_local:
            return f"{address} is a link-local address"
        if candidate.is_multicast:
            return f"{address} is a multicast address"
        if candidate.is_unspecified:
            return f"{address} is unspecified"
        if candidate.is_private:
            return f"{address} is a private address"
        if candidate.is_reserved or not candidate.is_global:
            return f"{address} is not a public address"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _split(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise DestinationRefused(url, f"not a valid URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise DestinationRefused(url, f"only http and https URLs are fetched, not {scheme or 'no scheme'!r}")
    host = parts.hostname
    if not host:
        raise DestinationRefused(url, "it names no host")
    return scheme, host, port or (443 if scheme == "https" else 80)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to (a literal address resolves to itself)."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise DestinationRefused(f"http://{host}", f"its host does not resolve ({exc.strerror})") from exc
    seen: list[IPAddress] = []
    for info in infos:
        address = _literal(str(info[4][0]))
        if address is not None and address not in seen:
            seen.append(address)
    return seen


async def checked_addresses(
    url: str, allow_ranges: Sequence[Network] | Iterable[str] = ()
) -> list[IPAddress]:
    """Every address the host of `url` resolves to, once all are public or allowed (else refused)."""
    allowed = _networks(allow_ranges)
    _, host, port = _split(url)
    addresses = await resolve(host, port)
    if not addresses:
        raise DestinationRefused(url, "its host resolves to no address")
    for address in addresses:
        reason = refusal(address, allowed)
        if reason is not None:
            raise DestinationRefused(url, reason)
    return addresses


async def check_url(url: str, allow_ranges: Sequence[Network] | Iterable[str] = ()) -> IPAddress:
    """Refuse `url` (DestinationRefused, a 400) unless every address its host resolves to is public or
    allowed; return the first, which the caller should connect to."""
    return (await checked_addresses(url, allow_ranges))[0]


def check_url_sync(url: str, allow_ranges: Sequence[Network] | Iterable[str] = ()) -> IPAddress:
    """`check_url` for code outside an event loop (a worker thread, a git subprocess's caller)."""
    return asyncio.run(check_url(url, allow_ranges))


def _networks(ranges: Sequence[Network] | Iterable[str]) -> tuple[Network, ...]:
    items = list(ranges)
    if all(isinstance(r, ipaddress.IPv4Network | ipaddress.IPv6Network) for r in items):
        return tuple(items)  # type: ignore[arg-type]  # narrowed by the check above
    return parse_ranges(str(r) for r in items)


class GuardedTransport(_TransportBase):
    """An httpx transport that checks each request's URL (redirect hops are requests too) and connects
    to the checked address, keeping the Host header and the TLS server name of the URL."""

    def __init__(
        self,
        allow_ranges: Sequence[Network] | Iterable[str] = (),
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        import httpx

        self.allowed = _networks(allow_ranges)
        self.inner: httpx.AsyncBaseTransport = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import httpx

        addresses = await checked_addresses(str(request.url), self.allowed)
        host = request.url.host
        if _literal(host) is not None:
            response: httpx.Response = await self.inner.handle_async_request(request)
            return response
        request.headers.setdefault("Host", request.url.netloc.decode("ascii"))
        if request.url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": host}
        original = request.url
        for index, address in enumerate(addresses):  # each checked address in turn, as a resolver would
            request.url = original.copy_with(host=str(address))
            try:
                response = await self.inner.handle_async_request(request)
            except httpx.ConnectError:
                if index == len(addresses) - 1:
                    raise
                continue
            return response
        raise AssertionError("unreachable: checked_addresses returns at least one address")

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> GuardedTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)


def guarded_client(allow_ranges: Sequence[Network] | Iterable[str] = (), **kwargs: Any) -> httpx.AsyncClient:
    """An httpx.AsyncClient that fetches only public addresses (or the allowed ranges), after every
    redirect too (`follow_redirects=True` unless given)."""
    import httpx

    kwargs.setdefault("follow_redirects", True)
    kwargs.setdefault("max_redirects", 5)
    return httpx.AsyncClient(transport=GuardedTransport(allow_ranges), **kwargs)
