"""Reading a source: every file it holds, by its path in the dataset, as a local file.

A failure of the whole source (a folder outside the allowed roots, a bucket that cannot be listed, a
repository that cannot be cloned, a site whose first page cannot be fetched) raises `SourceFailed`,
and the sync changes nothing. A failure of one file (too large, a page that answers 404, a path that
cannot be a dataset path, a page robots.txt disallows) is reported with its reason and that file is
left as it was. Every URL the server fetches goes through `lore_core.outbound`'s guard (no loopback,
private, link-local or metadata address unless `network.allow_ranges` opens it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import posixpath
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import structlog

from lore_common.jobs import JobFailure
from lore_core.errors import BadRequest
from lore_core.outbound import DestinationRefused, check_url, guarded_client
from lore_core.settings import SourcesConfig
from lore_docdb.datasets.paths import flatten
from lore_docdb.parse.extract import EXTRACTORS, file_type
from lore_docdb.parse.sandbox import TEXT_TYPES
from lore_docdb.sources.models import FolderSource, GitSource, S3Source, SourceSpec, SyncFailure, WebSource

log = structlog.get_logger("lore.docdb.sources")
USER_AGENT = "LoreBot/1 (+https://github.com/lore; docdb sources)"
HTML_TYPES = ("text/html", "application/xhtml+xml")
KEPT_TYPES = {
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "application/json": ".json",
    "application/rtf": ".rtf",
    "text/rtf": ".rtf",
    "application/epub+zip": ".epub",
    "message/rfc822": ".eml",
    "application/msword": ".doc",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.oasis.opendocument.text": ".odt",
    "application/vnd.oasis.opendocument.presentation": ".odp",
    "application/vnd.oasis.opendocument.spreadsheet": ".ods",
    "application/vnd.apple.pages": ".pages",
    "application/vnd.apple.keynote": ".key",
    "application/vnd.apple.numbers": ".numbers",
    "application/x-iwork-pages-sffpages": ".pages",
    "application/x-iwork-keynote-sffkey": ".key",
    "application/x-iwork-numbers-sffnumbers": ".numbers",
}
# What servers send for a download whose type they do not know: kept when the link's name has a
# suffix that docdb parses (`report.docx` served as `application/octet-stream`).
UNTYPED = (
    "",
    "application/octet-stream",
    "binary/octet-stream",
    "application/x-download",
    "application/force-download",
)


class SourceFailed(JobFailure):
    """The source as a whole could not be read: the sync fails and the dataset stays as it was."""


@dataclass
class Fetched:
    files: dict[str, Path] = field(default_factory=dict)  # dataset path -> local file
    failed: list[SyncFailure] = field(default_factory=list)

    def add(self, path: str, local: Path) -> None:
        try:
            flatten(path)
        except BadRequest as exc:
            self.failed.append(SyncFailure(path=path, reason=str(exc)))
            return
        self.files[path] = local

    def fail(self, path: str, reason: str) -> None:
        self.failed.append(SyncFailure(path=path, reason=reason))


def hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in relative.split("/"))


class Fetcher:
    def __init__(self, config: SourcesConfig, allow_ranges: list[str]) -> None:
        self.config = config
        self.allow_ranges = allow_ranges

    # ------------------------------------------------------------ checks made when a source is set

    def allowed_folder(self, path: str) -> Path:
        """The folder, resolved, when it lies under one of `docdb.sources.folder_roots`."""
        target = Path(path).expanduser().resolve()
        for root in self.config.folder_roots:
            base = Path(root).expanduser().resolve()
            if target == base or target.is_relative_to(base):
                return target
        roots = ", ".join(self.config.folder_roots) or "none are configured"
        raise BadRequest(
            f"folder {path!r} is outside the folders the server may read "
            f"(docdb.sources.folder_roots: {roots})"
        )

    async def check(self, spec: SourceSpec) -> None:
        """Refuse (400) a source the server must not read, before it is stored."""
        if isinstance(spec, FolderSource):
            self.allowed_folder(spec.path)
        elif isinstance(spec, S3Source):
            if spec.endpoint_url:
                await check_url(spec.endpoint_url, self.allow_ranges)
        elif isinstance(spec, GitSource):
            if _is_http(spec.url):
                await check_url(spec.url, self.allow_ranges)
            else:
                self.allowed_folder(_repository_path(spec.url))
        else:
            if not spec.urls and not spec.sitemap:
                raise BadRequest("a web source needs `urls` or a `sitemap`")
            for url in [*spec.urls, *([spec.sitemap] if spec.sitemap else [])]:
                if not _is_http(url):
                    raise BadRequest(f"{url[:200]!r} is not an http(s) URL")
                await check_url(url, self.allow_ranges)

    # ------------------------------------------------------------ reading

    async def fetch(self, spec: SourceSpec, into: Path) -> Fetched:
        try:
            if isinstance(spec, FolderSource):
                return await asyncio.to_thread(self._folder, spec)
            if isinstance(spec, S3Source):
                return await self._s3(spec, into)
            if isinstance(spec, GitSource):
                return await self._git(spec, into)
            return await self._web(spec, into)
        except (BadRequest, DestinationRefused) as exc:
            raise SourceFailed(str(exc)) from exc

    def _walk(self, root: Path, fetched: Fetched) -> Fetched:
        for folder, dirs, names in os.walk(root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                local = Path(folder) / name
                relative = local.relative_to(root).as_posix()
                if hidden(relative) or local.is_symlink() or not local.is_file():
                    continue
                size = local.stat().st_size
                if size > self.config.max_file_size:
                    fetched.fail(relative, f"{size} bytes is over docdb.sources.max_file_size")
                    continue
                fetched.add(relative, local)
        return fetched

    def _folder(self, spec: FolderSource) -> Fetched:
        root = self.allowed_folder(spec.path)
        if not root.is_dir():
            raise SourceFailed(f"folder {spec.path!r} does not exist on the server")
        return self._walk(root, Fetched())

    async def _s3(self, spec: S3Source, into: Path) -> Fetched:
        import aioboto3
        from botocore.config import Config

        if spec.endpoint_url:
            await check_url(spec.endpoint_url, self.allow_ranges)
        session = aioboto3.Session(
            aws_access_key_id=spec.access_key,
            aws_secret_access_key=spec.secret_key,
            region_name=spec.region,
        )
        timeout = self.config.fetch_timeout
        config = Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 2})
        fetched = Fetched()
        prefix = spec.prefix
        where = f"s3://{spec.bucket}/{prefix}"
        async with session.client("s3", endpoint_url=spec.endpoint_url, config=config) as client:
            objects: list[tuple[str, int]] = []
            try:
                pages = client.get_paginator("list_objects_v2").paginate(Bucket=spec.bucket, Prefix=prefix)
                async for page in pages:
                    objects.extend((item["Key"], int(item["Size"])) for item in page.get("Contents", []))
            except Exception as exc:
                raise SourceFailed(f"cannot list {where}: {_s3_reason(exc)}") from exc
            for number, (key, size) in enumerate(objects):
                relative = key[len(prefix) :].lstrip("/")
                if not relative or key.endswith("/") or hidden(relative):
                    continue
                if size > self.config.max_file_size:
                    fetched.fail(relative, f"{size} bytes is over docdb.sources.max_file_size")
                    continue
                local = into / f"s3-{number}"
                try:
                    await client.download_file(spec.bucket, key, str(local))
                except Exception as exc:
                    fetched.fail(relative, f"cannot download s3://{spec.bucket}/{key}: {_s3_reason(exc)}")
                    continue
                fetched.add(relative, local)
        return fetched

    async def _git(self, spec: GitSource, into: Path) -> Fetched:
        url = spec.url
        if _is_http(url):
            await check_url(url, self.allow_ranges)
            if spec.token:
                parts = urlsplit(url)
                netloc = f"x-access-token:{quote(spec.token, safe='')}@{parts.hostname}"
                url = urlunsplit(parts._replace(netloc=netloc + (f":{parts.port}" if parts.port else "")))
        else:
            url = str(self.allowed_folder(_repository_path(url)))
        clone = into / "repository"
        scheme = urlsplit(url).scheme if _is_http(url) else "file"
        command = [
            "git",
            "-c",
            "http.followRedirects=false",
            "-c",
            "protocol.allow=never",
            "-c",
            f"protocol.{scheme}.allow=always",
            "clone",
            "--quiet",
            "--depth",
            "1",
            "--single-branch",
            "--no-tags",
            *(["--branch", spec.branch] if spec.branch else []),
            "--",
            url if _is_http(url) else f"file://{url}",
            str(clone),
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(into),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_ASKPASS": "/bin/false",
        }
        process = await asyncio.create_subprocess_exec(
            *command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            async with asyncio.timeout(self.config.fetch_timeout * 4):
                _, stderr = await process.communicate()
        except TimeoutError as exc:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise SourceFailed(f"git clone of {_shown(spec)} took too long") from exc
        if process.returncode != 0:
            message = stderr.decode(errors="replace").strip().splitlines()
            reason = message[-1] if message else f"exit status {process.returncode}"
            if spec.token:
                reason = reason.replace(spec.token, "***")
            raise SourceFailed(f"git clone of {_shown(spec)} failed: {reason}")
        root = clone / spec.subdir.strip("/") if spec.subdir.strip("/") else clone
        if not root.resolve().is_relative_to(clone.resolve()) or not root.is_dir():
            raise SourceFailed(f"the repository has no folder {spec.subdir!r}")
        return await asyncio.to_thread(self._walk, root, Fetched())

    async def _web(self, spec: WebSource, into: Path) -> Fetched:
        crawl = _Crawl(spec, into, self.config, self.allow_ranges)
        return await crawl.run()


def _is_http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def _repository_path(url: str) -> str:
    """A git URL that is not http(s) is a path on the server; other URLs are refused by what they are
    (a `file://` URL is not a folder outside `folder_roots`, which is what its check would say)."""
    if url.startswith("file://"):
        raise BadRequest(
            f"file:// URLs are not supported; give the repository's path on the server "
            f"({unquote(urlsplit(url).path)!r})"
        )
    if "://" in url:
        raise BadRequest(
            f"{url.split('://', 1)[0][:20]}:// URLs are not supported; give an https URL, or the path "
            "of a repository on the server"
        )
    if re.match(r"[\w.-]+@[\w.-]+:", url):
        raise BadRequest(
            "ssh URLs (user@host:path) are not supported; give an https URL (with a token for a "
            "private repository)"
        )
    return url


def _shown(spec: GitSource) -> str:
    return spec.url + (f" (branch {spec.branch})" if spec.branch else "")


def _s3_reason(exc: BaseException) -> str:
    error = getattr(exc, "response", {}).get("Error", {})
    if error:
        return f"{error.get('Code', '')}: {error.get('Message', '')}".strip(": ")
    return f"{type(exc).__name__}: {exc}"


class _Crawl:
    """A bounded crawl: breadth first from the start URLs, on their hosts only, to `max_depth` links
    away, at most `max_pages` pages, each allowed by its site's robots.txt."""

    def __init__(self, spec: WebSource, into: Path, config: SourcesConfig, allow_ranges: list[str]) -> None:
        self.spec = spec
        self.into = into
        self.config = config
        self.allow_ranges = allow_ranges
        self.robots: dict[str, RobotFileParser | None] = {}
        self.fetched = Fetched()
        self.pages = 0

    async def run(self) -> Fetched:
        headers = {"user-agent": USER_AGENT}
        timeout = self.config.fetch_timeout
        async with guarded_client(self.allow_ranges, headers=headers, timeout=timeout) as http:
            self.http = http
            if self.spec.sitemap:
                starts = await self._sitemap(self.spec.sitemap)
                depth_limit = 0
            else:
                starts = [_normal(u) for u in self.spec.urls]
                depth_limit = self.spec.max_depth
            hosts = {urlsplit(u).netloc for u in starts} | {urlsplit(u).netloc for u in self.spec.urls}
            queue = deque((url, 0) for url in starts)
            seen = set(starts)
            while queue and self.pages < self.spec.max_pages:
                url, depth = queue.popleft()
                links = await self._page(url)
                if depth >= depth_limit:
                    continue
                for link in links:
                    if urlsplit(link).netloc in hosts and link not in seen:
                        seen.add(link)
                        queue.append((link, depth + 1))
        if not self.fetched.files and self.fetched.failed:
            first = self.fetched.failed[0]
            raise SourceFailed(f"no page could be fetched; {first.path}: {first.reason}")
        return self.fetched

    async def _sitemap(self, url: str, nested: bool = True) -> list[str]:
        try:
            response = await self.http.get(url)
        except DestinationRefused:
            raise
        except Exception as exc:
            raise SourceFailed(f"cannot fetch the sitemap {url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise SourceFailed(f"the sitemap {url} answered HTTP {response.status_code}")
        locations = [_normal(unquote_xml(m)) for m in re.findall(r"<loc>\s*([^<]+?)\s*</loc>", response.text)]
        if "<sitemapindex" in response.text and nested:
            pages: list[str] = []
            for child in locations:
                pages.extend(await self._sitemap(child, nested=False))
            return pages
        return locations

    async def _allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.robots:
            parser: RobotFileParser | None = None
            try:
                response = await self.http.get(f"{origin}/robots.txt")
                if response.status_code == 200:
                    parser = RobotFileParser()
                    parser.parse(response.text.splitlines())
                elif response.status_code in (401, 403):
                    parser = RobotFileParser()
                    parser.parse(["User-agent: *", "Disallow: /"])
            except Exception as exc:  # no robots.txt to read: everything is allowed
                log.info("robots_unreadable", origin=origin, error=str(exc))
            self.robots[origin] = parser
        parser = self.robots[origin]
        return parser is None or parser.can_fetch(USER_AGENT, url)

    async def _page(self, url: str) -> list[str]:
        """Fetch one page and keep it; returns the links of an HTML page."""
        path = page_path(url)
        if not await self._allowed(url):
            self.fetched.fail(path, "robots.txt disallows it")
            return []
        self.pages += 1
        try:
            response = await self.http.get(url)
        except DestinationRefused as exc:
            self.fetched.fail(path, str(exc))
            return []
        except Exception as exc:
            self.fetched.fail(path, f"cannot fetch {url}: {type(exc).__name__}: {exc}")
            return []
        if response.status_code != 200:
            self.fetched.fail(path, f"{url} answered HTTP {response.status_code}")
            return []
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if len(response.content) > self.config.max_file_size:
            self.fetched.fail(path, f"{len(response.content)} bytes is over docdb.sources.max_file_size")
            return []
        is_html = kind in HTML_TYPES
        named = posixpath.splitext(urlsplit(str(response.url)).path)[1]
        if is_html:
            extension = ".html"
        elif kind in KEPT_TYPES:
            extension = KEPT_TYPES[kind]
        elif kind in UNTYPED and named.lower() in EXTRACTORS:
            extension = named
        else:
            self.fetched.fail(path, f"its type {kind or '(none)'} is not a document type")
            return []
        path = page_path(str(response.url), extension)
        local = self.into / f"page-{hashlib.sha256(path.encode()).hexdigest()[:24]}"
        await asyncio.to_thread(local.write_bytes, response.content)
        self.fetched.add(path, local)
        return links_of(str(response.url), response.text) if is_html else []


def unquote_xml(value: str) -> str:
    return value.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").strip()


def _normal(url: str) -> str:
    """A URL without its fragment, with a path."""
    parts = urlsplit(url.strip())
    return urlunsplit(parts._replace(fragment="", path=parts.path or "/"))


def page_path(url: str, extension: str = ".html") -> str:
    """A page's path in the dataset: its host and path (`docs.example.com/guide/intro.html`); a folder
    URL is its `index.html`, a query string becomes a short hash in the name. The name ends in a
    suffix docdb parses as the page's type: `extension` is added to one that does not (`index.php`
    is `index.php.html`, `/guide/v1.2` is `v1.2.html`), and to one of another type than the page's
    (`report.aspx` serving a PDF is `report.aspx.pdf`)."""
    parts = urlsplit(url)
    path = unquote(parts.path or "/")
    if path.endswith("/"):
        path += "index" + extension
    stem, ext = posixpath.splitext(path)
    if parts.query:
        stem += "-" + hashlib.sha256(parts.query.encode()).hexdigest()[:8]
    if not _same_type(ext, extension):
        stem, ext = stem + ext, extension
    host = parts.hostname or "site"
    if parts.port:
        host += f"_{parts.port}"
    return f"{host}{stem}{ext}".replace("//", "/")


def _same_type(named: str, served: str) -> bool:
    """The name's suffix is parsed as the type the page came as: `.htm` for HTML, `.docm` for a Word
    file; any text format (`.md`, `.csv`, `.rst`, `.ipynb`) for text or JSON, which servers send
    such files as."""
    named, served = file_type("_" + named), file_type("_" + served)
    if named not in EXTRACTORS:
        return False
    if served in (".txt", ".json"):
        return named in TEXT_TYPES
    return EXTRACTORS[named] is EXTRACTORS[served]


def links_of(base: str, html: str) -> list[str]:
    """The http(s) links of an HTML page, absolute and without fragments, in order."""
    import lxml.html

    try:
        document = lxml.html.fromstring(html)
    except Exception:  # an empty or broken page has no links to follow
        return []
    found: list[str] = []
    for element in document.iter("a"):
        href = element.get("href")
        if not href or href.startswith(("mailto:", "javascript:", "#")):
            continue
        rel = (element.get("rel") or "").lower()
        if "nofollow" in rel:
            continue
        absolute = _normal(urljoin(base, href))
        if _is_http(absolute) and absolute not in found:
            found.append(absolute)
    return found


def describe(spec: SourceSpec) -> str:
    """One line naming the source (no secrets)."""
    if isinstance(spec, FolderSource):
        return f"folder {spec.path}"
    if isinstance(spec, S3Source):
        return f"s3://{spec.bucket}/{spec.prefix}"
    if isinstance(spec, GitSource):
        return f"git {_shown(spec)}"
    return f"web {spec.sitemap or ', '.join(spec.urls[:3])}"
