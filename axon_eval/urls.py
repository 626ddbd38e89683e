"""URLs in evidence, specs, manifests and reports: what an endpoint *is* and what may be *shown*.

``sanitize_url``
    an endpoint's identity (``scheme://host[:port][/path]``, no credentials, query or fragment): what
    enters judge ids and cache keys
``redact_urls``
    any text with the credentials of every URL in it masked (userinfo, query values): what messages,
    manifests and reports show
``mask_url``
    one (possibly malformed) URL for a message
``is_loopback_url`` / ``is_loopback_host``
    does it point at this machine

One module so that the judges, the run manifests and the reports agree on both questions.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


class InvalidEndpoint(ValueError):
    """A base URL that is not an ``http(s)://host[:port][/path]`` URL (the message never shows credentials)."""


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s'\"]*@")
_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s?#'\"]*\?)([^\s#'\"]*)")
_QUERY_VALUE = re.compile(r"=[^&,)]*")


def _redact_query(match: re.Match[str]) -> str:
    parts = []
    for item in match.group(2).split("&"):
        head, tail = re.match(r"([^,)]*)(.*)", item).groups()  # type: ignore[union-attr]
        if not head:
            parts.append(item)
        elif "=" in head:
            parts.append(_QUERY_VALUE.sub("=<redacted>", head, count=1) + tail)
        else:
            parts.append("<redacted>" + tail)
    return match.group(1) + "&".join(parts)


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it masked: userinfo -> ``<redacted>@`` and each
    query-string value -> ``<redacted>``. For messages, specs in manifests and logs (what a reader sees);
    ids use :func:`sanitize_url`, which drops those parts altogether."""
    if not text or "://" not in text:
        return text
    return _QUERY.sub(_redact_query, _USERINFO.sub(r"\1<redacted>@", text))


def mask_url(url: str) -> str:
    """A single (possibly malformed) URL for a message: :func:`redact_urls`, and even without a scheme
    anything before an ``@`` and after a ``?`` masked (``user:pass@host`` would otherwise be shown)."""
    shown = redact_urls(url)
    if "://" not in shown and "@" in shown:
        shown = "<redacted>@" + shown.rsplit("@", 1)[1]
    if "://" not in shown and "?" in shown:
        shown = shown.split("?", 1)[0] + "?<redacted>"
    return shown


def sanitize_url(url: str) -> str:
    """The identity of an endpoint: ``scheme://host[:port][/path]`` without userinfo, query string or
    fragment; scheme and host lower-case, the scheme's default port and a trailing ``/`` dropped.

    Raises :class:`InvalidEndpoint` (showing the URL with credentials masked) for anything that is not
    an ``http``/``https`` URL naming a host.
    """
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise InvalidEndpoint(f"invalid base URL {mask_url(text)!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidEndpoint(f"base URL {mask_url(text)!r} must start with http:// or https://")
    host = (parts.hostname or "").lower()
    if not host:
        raise InvalidEndpoint(f"base URL {mask_url(text)!r} names no host")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def is_loopback_host(host: str | None) -> bool:
    """True for ``localhost`` (and ``*.localhost``), loopback IPs (``127.0.0.0/8``, ``::1``) and the
    unspecified address (``0.0.0.0``, which connects to this machine)."""
    name = (host or "").strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def is_loopback_url(url: str | None) -> bool:
    """True when ``url`` points at this machine (see :func:`is_loopback_host`)."""
    if not url:
        return False
    try:
        return is_loopback_host(urlsplit(url.strip()).hostname)
    except ValueError:
        return False
