#!/usr/bin/env python3
"""A small HTTP client for REST APIs, in one file, on nothing but the standard library.

One call sends one request and never raises for network trouble: it returns
(Response, None) when a reply arrived, whatever its status, or (None, error) when none did.

    from rest_client import Method, Request, send

    resp, err = send(Request(Method.GET, "http://127.0.0.1:8000/users",
                             params={"sort": "-name", "limit": "10"}), timeout=5, retries=2)
    if err is not None:
        print("no reply:", err)
    else:
        print(resp.status_code, resp.headers["content-type"][0], resp.json())

It is urllib.request with its traps removed: a 4xx or 5xx is a Response rather than an
exception, a timeout always applies, a body is never silently labelled as a form,
redirects are followed for GET and HEAD only, only http and https URLs are sent, header
names are looked up in any case, and repeated headers (two Set-Cookie lines) keep every
value. Idempotent requests can be retried after a 429 or 503, as Retry-After says.
And what urllib leaves out is added: connections are kept and reused, a dict or list body
goes as JSON, gzip and deflate replies are decoded, and resp.links() follows Link headers.

From the shell, a tiny curl (API_KEY in the environment becomes a Bearer token):

    python rest_client.py GET http://127.0.0.1:8000/users -q limit=5 -i
    python rest_client.py POST http://127.0.0.1:8000/users -H "X-Test: 1" \\
        -d '{"name": "Ada", "email": "ada@example.com"}'
    python rest_client.py GET http://127.0.0.1:8000/users/1 --retry 3 -v
    python rest_client.py PATCH http://127.0.0.1:8000/users/1 -j '{"name": "Ada King"}'
"""

import argparse
import atexit
import email.utils
import functools
import http.client
import io
import itertools
import json
import math
import os
import random
import re
import select
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections import namedtuple
from datetime import datetime, timezone
from http import HTTPStatus
from urllib.parse import quote, urlencode, urljoin, urlsplit, urlunsplit

__all__ = ["Method", "Request", "Response", "Headers", "send", "close", "main"]

DEFAULT_TIMEOUT = 30.0  # seconds
MAX_REDIRECTS = 10
IDEMPOTENT_METHODS = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")  # RFC 9110 §9.2.2
RETRY_STATUSES = (429, 503)  # Too Many Requests, Service Unavailable: "try again later"
MAX_RETRY_AFTER = 30.0  # seconds: a server asking for longer gets this much
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 8.0  # seconds, without a Retry-After
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a method or header name (RFC 9110 §5.6.2)
URL_SAFE = "/%:@!$&'()*+,;=?-._~"  # what quote() leaves alone in a path and query
ACCEPT_ENCODING = "gzip, deflate"  # what the client asks for unless the caller says otherwise
MAX_IDLE_PER_HOST = 32  # kept connections waiting for a request, per host
IDLE_TIMEOUT = 90.0  # seconds a kept connection may wait before it is closed (as Go's)


class Method:
    """The HTTP methods as constants; their values are the verbs' own strings."""

    GET = "GET"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"
    HEAD = "HEAD"
    OPTIONS = "OPTIONS"


Request = namedtuple("Request", "method url headers params body")
Request.__new__.__defaults__ = (None, None, None)  # headers, params and body may be left out
Request.__doc__ = """What to send: a method, a full URL, and optional headers (dict),
query parameters (dict, added to the URL) and body (bytes, str sent as UTF-8, a dict or
list sent as JSON, or None)."""


class Response(namedtuple("Response", "status_code body headers")):
    """What came back: the status (int), the body decoded as text, and the headers (a
    Headers dict from each name, as the server spelled it, to the list of its values).
    url is the URL that answered, after any redirects."""

    url = None

    def json(self):
        """The body parsed as JSON; ValueError when it is not JSON, an empty body included."""
        return json.loads(self.body)

    def links(self):
        """The Link header's links (RFC 8288) by relation, lower case, as absolute URLs
        resolved against the URL that answered: {"next": "http://...", ...}; the first link
        of a relation wins."""
        found = {}
        for value in self.headers.get("Link", []):
            for target, parameters in LINK.findall(value):
                for name, argument in LINK_PARAMETER.findall(parameters):
                    if name.lower() == "rel":  # rel="next last" names two relations
                        for relation in argument.strip('"').lower().split():
                            found.setdefault(relation, urljoin(self.url or "", target))
        return found


LINK = re.compile(r'<([^>]*)>((?:\s*;\s*[^;,="]+(?:=\s*(?:"[^"]*"|[^;,"]*))?)*)')
LINK_PARAMETER = re.compile(r';\s*([^;,="\s]+)\s*(?:=\s*("[^"]*"|[^;,"]*))?')


class Headers(dict):
    """A dict from header names, as the server spelled them, to lists of values, whose
    look-ups ([], get, in) ignore case, as header names do (RFC 9110 §5.1)."""

    def __getitem__(self, name):
        """headers["content-type"]: the values of a header, in any case; KeyError if none."""
        return super().__getitem__(self.spelling(name))

    def get(self, name, default=None):
        """The values of a header, in any case, or default."""
        return super().get(self.spelling(name), default)

    def __contains__(self, name):
        """"etag" in headers: whether the reply has the header, in any case."""
        return super().__contains__(self.spelling(name))

    def spelling(self, name):
        """The key that spells this name in another case, or the name itself."""
        if super().__contains__(name) or not isinstance(name, str):
            return name
        lowered = name.lower()
        return next((key for key in self if key.lower() == lowered), name)


# ---------------------------------------------------------------------------------------
# Building the request
# ---------------------------------------------------------------------------------------

def build_url(url, params):
    """The URL to send: http or https only, params appended to its query, no #fragment."""
    if not params:
        return sendable_url(url)
    parts = urlsplit(sendable_url(url))
    query = "&".join(filter(None, [parts.query, urlencode(params)]))
    return urlunsplit(parts._replace(query=query))


@functools.lru_cache(maxsize=256)
def sendable_url(url):
    """The URL checked and escaped, kept for the next request to it: a client sends to the
    same few URLs again and again, and this takes a quarter of the time of building one."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError("only http:// and https:// URLs are sent, not %r" % url)
    # Percent-encode what may not travel raw (spaces, non-ASCII), keeping existing escapes.
    return urlunsplit((parts.scheme, parts.netloc, quote(parts.path, safe=URL_SAFE),
                       quote(parts.query, safe=URL_SAFE), ""))


def check_headers(headers):
    """Return the headers as str to str, or raise ValueError for any that cannot be sent."""
    checked = {}
    for name, value in (headers or {}).items():
        value = str(value)
        if not TOKEN.fullmatch(name):
            raise ValueError("%r is not a valid header name" % name)
        if any(character in value for character in "\r\n\0"):
            raise ValueError("the value of header %s contains CR, LF or NUL" % name)
        value.encode("latin-1")  # a UnicodeEncodeError is a ValueError too
        checked[name] = value
    return checked


def default_content_type(body):
    """The Content-Type to send with a body whose sender named none (never a form): JSON for
    a JSON object or array; "123" or "true" is text, or octets."""
    try:
        is_json = isinstance(json.loads(body), (dict, list))
    except (ValueError, RecursionError):  # not JSON (or nested past what json can read)
        is_json = False
    if is_json:
        return "application/json"
    return "text/plain; charset=utf-8" if isinstance(body, str) else "application/octet-stream"


def body_bytes(body, headers):
    """The body as bytes, with a Content-Type added to headers if it has none: a dict or
    list goes as JSON; TypeError for any other kind of body, or one json cannot encode."""
    has_type = any(name.lower() == "content-type" for name in headers)
    if isinstance(body, (dict, list)):
        try:
            body = json.dumps(body)
        except ValueError as error:  # a circular reference: a mistake like any TypeError
            raise TypeError("the body cannot be sent as JSON: %s" % error) from None
        if not has_type:
            headers["Content-Type"] = "application/json"
    elif not isinstance(body, (bytes, str)):
        raise TypeError("body must be bytes, str, a dict, a list or None, not %s"
                        % type(body).__name__)
    elif not has_type:
        headers["Content-Type"] = default_content_type(body)
    return body.encode("utf-8") if isinstance(body, str) else body


def build_request(request):
    """Turn a Request into a urllib.request.Request; raise ValueError for what cannot be sent."""
    method = str(request.method).upper()
    if not TOKEN.fullmatch(method):
        raise ValueError("%r is not a valid HTTP method" % method)
    headers = check_headers(request.headers)
    body = None if request.body is None else body_bytes(request.body, headers)
    if not any(name.lower() == "accept-encoding" for name in headers):
        headers["Accept-Encoding"] = ACCEPT_ENCODING
    return urllib.request.Request(build_url(request.url, request.params), data=body,
                                  headers=headers, method=method)


# ---------------------------------------------------------------------------------------
# Sending it and reading the reply
# ---------------------------------------------------------------------------------------

class SafeRedirects(urllib.request.HTTPRedirectHandler):
    """Follow at most 10 redirects, for GET and HEAD only, and only to http or https.

    urllib would turn a redirected POST into a GET, dropping its body; here any other
    method gets the 3xx reply itself, as does the eleventh redirect in a row.
    """

    max_redirections = MAX_REDIRECTS
    max_repeats = MAX_REDIRECTS  # a loop is followed as far as any other chain

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        """The request that follows a redirect, or None to return the 3xx reply itself."""
        method = req.get_method()
        if method not in ("GET", "HEAD") or urlsplit(newurl).scheme.lower() not in ("http", "https"):
            return None
        kept = {name: value for name, value in req.header_items()
                if name.lower() not in ("content-length", "content-type", "host")}
        if urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            kept.pop("Authorization", None)  # never hand a credential to another host
        return urllib.request.Request(newurl.replace(" ", "%20"), headers=kept, method=method,
                                      origin_req_host=req.origin_req_host, unverifiable=True)

    # Python before 3.11 does not follow 308 Permanent Redirect; it is 301 for GET and HEAD.
    http_error_308 = urllib.request.HTTPRedirectHandler.http_error_302


def read_response(reply, accept_encoding):
    """Make a Response from urllib's reply (an HTTPError is a reply too), its body decoded
    from the codings the request accepted (UndecodableReply if it does not decode)."""
    headers, spellings = Headers(), {}
    for name, value in reply.headers.items():
        key = spellings.setdefault(name.lower(), name)  # the first spelling is the key
        dict.setdefault(headers, key, []).append(value)
    raw = decompress(reply.read(), headers.get("Content-Encoding", []), accept_encoding)
    charset = charset_of(headers.get("Content-Type", [""])[0]) or "utf-8"
    try:
        body = raw.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        body = raw.decode("utf-8", errors="replace")
    response = Response(reply.code, body, headers)
    response.url = reply.geturl()
    return response


def charset_of(content_type):
    """The charset a Content-Type value names, in lower case, or None."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower() or None
    return None


class UndecodableReply(OSError):
    """A reply in a content coding the request accepted that does not decode: no usable
    reply came, so it is an error value, never a half-decoded body."""


def decompress(raw, content_encodings, accept_encoding):
    """The body with each content coding undone, last applied first (RFC 9110 §8.4), for the
    codings the request's Accept-Encoding named; a coding it did not name stays."""
    codings = [coding.strip().lower() for value in content_encodings for coding in value.split(",")]
    if not any(codings):
        return raw
    accepted = {coding.split(";")[0].strip().lower() for coding in accept_encoding.split(",")}
    for coding in reversed([coding for coding in codings if coding]):
        if coding not in accepted or coding not in ("gzip", "x-gzip", "deflate"):
            return raw  # not asked for, or identity: left as it came
        try:
            raw = inflate(raw, coding)
        except zlib.error as error:
            raise UndecodableReply("the %s reply does not decode: %s" % (coding, error)) from None
    return raw


def inflate(raw, coding):
    """Undo gzip or deflate. "deflate" means the zlib format (RFC 9110 §8.4.1.2), but some
    servers send bare deflate data, which browsers take too."""
    if coding != "deflate":
        return zlib.decompress(raw, 16 + zlib.MAX_WBITS)  # the gzip wrapper
    try:
        return zlib.decompress(raw)
    except zlib.error:
        return zlib.decompress(raw, -zlib.MAX_WBITS)


def send(request, timeout=DEFAULT_TIMEOUT, retries=0, trace=None):
    """Send the request; return (Response, None) when a reply came, else (None, error).

    Network, URL, header and timeout trouble never raises: the exception comes back as
    the error value (URLError, TimeoutError, ValueError, ...). A body that is not bytes,
    str, a dict, a list or None is a mistake in the program, and raises TypeError at once.
    Connections are kept and reused (see KeptConnections); close() closes them.

    With retries=N, an idempotent request is sent up to N more times while no reply
    comes or the reply is 429 or 503; see retry_wait. POST and PATCH are never sent
    twice: the server may have acted on the first. trace, if given, is called with each
    line that curl -v would show.
    """
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout  # never wait for ever
    method = str(request.method).upper()
    for attempt in itertools.count():
        response, error = send_once(request, timeout, trace)
        if attempt >= retries or not worth_retrying(method, response, error):
            return response, error
        wait = retry_wait(response, attempt)
        if trace:
            trace("* %s: retrying in %.3g s (%s)"
                  % (why(response, error), wait, how_long(response)))
        time.sleep(wait)


def worth_retrying(method, response, error):
    """Whether to send a request again: it must be idempotent (RFC 9110 §9.2.2), and no
    reply came (for a request that could be sent) or the reply said to try again later."""
    if method not in IDEMPOTENT_METHODS or isinstance(error, ValueError):
        return False
    return response is None or response.status_code in RETRY_STATUSES


def send_once(request, timeout, trace):
    """Send the request once: (Response, None), or (None, error) when no reply came."""
    try:
        prepared = build_request(request)
        opener = OPENER if trace is None else tracing_opener(trace)
        try:
            reply = opener.open(prepared, timeout=timeout)
        except urllib.error.HTTPError as error:  # a 4xx or 5xx (or a 3xx not followed)
            reply = error  # is a reply like any other
        with reply:
            response = read_response(reply, prepared.get_header("Accept-encoding", ""))
    except (OSError, ValueError, http.client.HTTPException) as error:
        return None, error  # URLError and TimeoutError are OSErrors
    if trace:
        show_reply_head(response, trace)
    return response, None


def retry_wait(response, attempt):
    """Seconds to wait before retry number attempt + 1 (counting from 0).

    The reply's Retry-After, in seconds or as an HTTP date (RFC 9110 §10.2.3), capped at
    30 s; without one, 0.5 s doubled each time, with random jitter of up to half the wait
    either way, so that many clients do not come back at the same moment; at most 8 s.
    """
    asked = retry_after(response) if response is not None else None
    if asked is not None:
        return min(asked, MAX_RETRY_AFTER)
    wait = FIRST_BACKOFF * 2 ** min(attempt, 16)
    return min(random.uniform(wait / 2, wait * 1.5), MAX_BACKOFF)


def retry_after(response):
    """The seconds a reply's Retry-After asks for (0 for a date past), or None."""
    value = (response.headers.get("Retry-After") or [""])[0].strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # not a date (Python before 3.10 says TypeError)
        return None
    if when.tzinfo is None:  # "-0000": a time in UTC
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def why(response, error):
    """Why a retry is made, in a few words."""
    if response is not None:
        return "%d %s" % (response.status_code, HTTPStatus(response.status_code).phrase)
    return "no reply (%s)" % (getattr(error, "reason", None) or error)


def how_long(response):
    """Where the wait before a retry comes from."""
    if response is not None and retry_after(response) is not None:
        return "Retry-After: %s" % response.headers["Retry-After"][0]
    return "backoff"


# ---------------------------------------------------------------------------------------
# Kept connections: one TCP connection for many requests (RFC 9112 §9.3)
#
# urllib.request opens a connection for every request and closes it after the reply. The
# handlers below take their place in the opener, as urllib means handlers to be added: a
# connection whose reply was read to its end waits in a pool for the next request to the
# same host, as Go's client, requests' Session and urllib3 keep theirs.
# ---------------------------------------------------------------------------------------

class ConnectionPool:
    """Idle connections by scheme, host and port (and proxy tunnel and TLS settings), safe
    to share between threads; a connection in use is in no pool, so none waits for another."""

    def __init__(self):
        self.lock = threading.Lock()
        self.idle = {}  # key -> [(connection, when it became idle)], the newest last

    def take(self, key):
        """An idle connection for key that the server has not closed meanwhile, or None."""
        with self.lock:
            waiting = self.idle.get(key, [])
            while waiting:
                connection, since = waiting.pop()
                if time.monotonic() - since < IDLE_TIMEOUT and still_open(connection):
                    return connection
                connection.close()
        return None

    def give_back(self, key, connection):
        """Keep a connection whose reply was read to its end, for the next request."""
        with self.lock:
            waiting = self.idle.setdefault(key, [])
            waiting.append((connection, time.monotonic()))
            while len(waiting) > MAX_IDLE_PER_HOST:
                waiting.pop(0)[0].close()

    def close(self):
        """Close every idle connection."""
        with self.lock:
            for waiting in self.idle.values():
                for connection, _ in waiting:
                    connection.close()
            self.idle.clear()


def still_open(connection):
    """Whether a kept connection may carry a request: the server has neither closed it nor
    sent anything unasked, as urllib3 and Go check: nothing is there to read."""
    try:
        return not select.select([connection.sock], [], [], 0)[0]  # EOF reads as readable
    except (ValueError, TypeError, OSError):  # no socket, or one select cannot watch
        return False


POOL = ConnectionPool()
DEAD_CONNECTION = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                   http.client.BadStatusLine)  # RemoteDisconnected is both of the first and last


class KeptConnections:
    """Mixed into urllib's HTTP and HTTPS handlers: send on a kept connection when there is
    one, read the reply to its end, and keep the connection for the next request."""

    trace = None  # a function shown each request head as it goes out, as curl -v does

    def exchange(self, request, connection_class, **options):
        """Send the request and return urllib's reply, its body read."""
        key = (request.type, request.host, request._tunnel_host, id(options.get("context")))
        connection = POOL.take(key)
        reused = connection is not None
        if not reused:
            connection = self.connect(connection_class, request, options)
        try:
            reply, body = self.send_or_close(connection, request)
        except DEAD_CONNECTION:
            if not (reused and request.get_method() in IDEMPOTENT_METHODS):
                raise  # a POST may have reached the server; a new connection had its try
            connection = self.connect(connection_class, request, options)  # once more
            reply, body = self.send_or_close(connection, request)
        if reply.will_close:  # Connection: close, HTTP/1.0, or a body read to the end
            connection.close()
        else:
            POOL.give_back(key, connection)
        return self.reply_to_urllib(request, reply, body)

    def connect(self, connection_class, request, options):
        """A new connection for the request, through the proxy's tunnel if it has one."""
        connection = connection_class(request.host, timeout=request.timeout, **options)
        if request._tunnel_host:  # HTTPS through a proxy: CONNECT, as urllib does
            headers = dict(request.header_items())
            tunnel = {"Proxy-Authorization": headers["Proxy-authorization"]} if (
                "Proxy-authorization" in headers) else {}
            connection.set_tunnel(request._tunnel_host, headers=tunnel)
        return connection

    def send_or_close(self, connection, request):
        """send_on, closing the connection if anything goes wrong: after a timeout too, as
        the reply might still come, out of step with the next request."""
        try:
            return self.send_on(connection, request)
        except BaseException:
            connection.close()
            raise

    def send_on(self, connection, request):
        """Send the request on the connection; the reply and its whole body."""
        if connection.sock is not None and connection.sock.gettimeout() != request.timeout:
            connection.sock.settimeout(request.timeout)  # a system call: only when it changes
        connection.timeout = request.timeout
        connection.trace = self.trace
        headers = dict(request.unredirected_hdrs)
        headers.update((name, value) for name, value in request.header_items()
                       if name not in headers)
        if request._tunnel_host:
            headers.pop("Proxy-authorization", None)  # for the proxy's CONNECT, not the host
        try:
            connection.request(request.get_method(), request.selector, request.data,
                               {name.title(): value for name, value in headers.items()})
        except DEAD_CONNECTION:
            raise  # for exchange to judge
        except OSError as error:  # no connection, or a timeout: as urllib says it
            raise urllib.error.URLError(error) from None
        reply = connection.getresponse()
        return reply, reply.read()

    def reply_to_urllib(self, request, reply, body):
        """The reply as urllib's handlers expect one, the body read."""
        return ReadReply(body, reply.status, reply.reason, reply.msg, request.get_full_url())


class ReadReply(io.BytesIO):
    """A reply whose body has been read, with what urllib's handlers ask of a reply: code,
    msg (the reason phrase), headers and info(), geturl()."""

    def __init__(self, body, status, reason, headers, url):
        super().__init__(body)
        self.code, self.status, self.msg, self.headers, self.url = (status, status, reason,
                                                                    headers, url)

    def info(self):
        return self.headers

    def geturl(self):
        return self.url

    def getcode(self):
        return self.code


class TracedConnection:
    """Mixed into an http.client connection: the first thing it sends for a request, the
    request's head, is shown to self.trace."""

    trace = None

    def send(self, data):
        if self.trace:
            show_request_head(data, self.trace)
            self.trace = None  # what follows is the body
        super().send(data)


class HTTPConnection(TracedConnection, http.client.HTTPConnection):
    """An HTTPConnection that can show its request heads."""


class KeptHTTPHandler(KeptConnections, urllib.request.HTTPHandler):
    """urllib's HTTPHandler, on kept connections."""

    def http_open(self, request):
        return self.exchange(request, HTTPConnection)


HTTPS = hasattr(http.client, "HTTPSConnection")  # not where Python was built without ssl
if HTTPS:
    class HTTPSConnection(TracedConnection, http.client.HTTPSConnection):
        """An HTTPSConnection that can show its request heads."""

    class KeptHTTPSHandler(KeptConnections, urllib.request.HTTPSHandler):
        """urllib's HTTPSHandler, on kept connections."""

        def https_open(self, request):
            return self.exchange(request, HTTPSConnection, context=self._context)


def build_opener(trace=None):
    """An opener that follows safe redirects only, on kept connections (a proxy from the
    environment still applies: urllib's ProxyHandler comes first)."""
    handlers = [SafeRedirects, KeptHTTPHandler()] + ([KeptHTTPSHandler()] if HTTPS else [])
    for handler in handlers[1:]:
        handler.trace = trace
    return urllib.request.build_opener(*handlers)


OPENER = build_opener()  # built once: every send() shares it and its kept connections


def close():
    """Close every kept connection (they are closed at exit too)."""
    POOL.close()


atexit.register(close)


# ---------------------------------------------------------------------------------------
# Showing the exchange, as curl -v does
# ---------------------------------------------------------------------------------------

def show_request_head(data, trace):
    """Show the head of a request as it goes out, with a credential masked."""
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    for line in head.split("\r\n"):
        name, colon, value = line.partition(":")
        if colon and name.lower() in ("authorization", "proxy-authorization"):
            line = "%s: %s ***" % (name, value.split()[0] if value.split() else "")
        trace("> " + line)
    trace(">")


def show_reply_head(response, trace):
    """Show the status line and headers of a reply."""
    for line in head_lines(response):
        trace("< " + line)
    trace("<")


def head_lines(response):
    """The status line and the header lines of a reply, as curl -i prints them."""
    try:
        reason = HTTPStatus(response.status_code).phrase
    except ValueError:  # a status Python has no name for
        reason = ""
    yield "HTTP/1.1 %d %s" % (response.status_code, reason)
    for name, values in response.headers.items():
        for value in values:
            yield "%s: %s" % (name, value)


def tracing_opener(trace):
    """An opener like OPENER whose requests are shown to trace as they go out."""
    return build_opener(trace)


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------

def header_argument(text):
    """argparse type for -H: "Name: value" -> (name, value)."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise argparse.ArgumentTypeError("headers look like 'Name: value', not %r" % text)
    return name.strip(), value.strip()


def param_argument(text):
    """argparse type for -q: "name=value" -> (name, value)."""
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError("query parameters look like 'name=value', not %r" % text)
    return name, value


def seconds_argument(text):
    """argparse type for --timeout: a number of seconds above 0."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):  # nan > 0 is False too
        raise argparse.ArgumentTypeError("must be a number of seconds above 0, not %r" % text)
    return seconds


def count_argument(text):
    """argparse type for --retry: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError("must be a whole number, 0 or more, not %r" % text)
    return int(text)


def parse_arguments(argv):
    """Read the command line."""
    parser = argparse.ArgumentParser(
        prog="rest_client.py", description="Send one HTTP request and print the reply's body.",
        epilog="API_KEY in the environment is sent as 'Authorization: Bearer $API_KEY' "
               "unless -H gives an Authorization header.")
    parser.add_argument("method", help="GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, ...")
    parser.add_argument("url", help="http:// or https:// URL")
    parser.add_argument("-H", dest="headers", action="append", default=[], metavar="'NAME: VALUE'",
                        type=header_argument, help="a request header (repeatable)")
    parser.add_argument("-q", dest="params", action="append", default=[], metavar="NAME=VALUE",
                        type=param_argument, help="a query parameter, URL-encoded (repeatable)")
    body = parser.add_mutually_exclusive_group()
    body.add_argument("-d", dest="data", metavar="BODY",
                      help="the body: text, @FILE for a file's bytes, @- for standard input")
    body.add_argument("-j", "--json", metavar="JSON",
                      help="the body as JSON text, which must parse (or @FILE, @-), sent as "
                           "application/json unless -H names a Content-Type")
    parser.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT,
                        help="seconds to wait for the reply (default: %(default)s)")
    parser.add_argument("--retry", type=count_argument, default=0, metavar="N",
                        help="send a GET, HEAD, PUT, DELETE or OPTIONS again, up to N times, "
                             "while no reply comes or it is 429 or 503 (default: 0)")
    parser.add_argument("-i", dest="include", action="store_true",
                        help="print the status line and headers before the body")
    parser.add_argument("-v", dest="verbose", action="store_true",
                        help="show the request as sent and the reply's head on stderr, as "
                             "curl -v does (an Authorization value shows as ***)")
    parser.add_argument("--fail", action="store_true",
                        help="exit with 1 when the status is 4xx or 5xx")
    return parser.parse_args(argv)


def read_data(data):
    """The body -d names: the text itself, a file's bytes (@FILE) or standard input (@-)."""
    if data is None or not data.startswith("@"):
        return data
    if data == "@-":
        return sys.stdin.buffer.read()
    with open(data[1:], "rb") as file:
        return file.read()


def request_from(options):
    """Build the Request the command line describes; ValueError for -j text that is not
    JSON, naming its line and column as json does."""
    headers = dict(options.headers)
    api_key = os.environ.get("API_KEY")
    if api_key and not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = "Bearer " + api_key
    body = read_data(options.data)
    if options.json is not None:
        body = read_data(options.json)
        json.loads(body)  # a typo is the caller's to mend: nothing is sent
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
    return Request(options.method, options.url, headers, dict(options.params) or None, body)


def print_head(response):
    """Print the status line and headers as curl -i does, then a blank line."""
    for line in head_lines(response):
        write_out(line + "\n")
    write_out("\n")


def write_out(text):
    """Write text to stdout, a character the terminal cannot show as a replacement mark."""
    encoding = sys.stdout.encoding or "utf-8"
    sys.stdout.write(text.encode(encoding, "replace").decode(encoding))


def show(line):
    """Write one line of -v output to stderr."""
    print(line, file=sys.stderr)


def main(argv=None):
    """Run the command line; return the exit status: 0 for a reply, 1 for a 4xx or 5xx
    under --fail, 2 for a mistake in the command (argparse's too), 3 when no reply came."""
    options = parse_arguments(argv)
    try:
        request = request_from(options)
    except OSError as error:
        print("rest_client: cannot read the body: %s" % error, file=sys.stderr)
        return 2
    except ValueError as error:  # json's words: "Expecting value: line 2 column 11 (char 12)"
        print("rest_client: --json is not JSON: %s" % error, file=sys.stderr)
        return 2
    response, error = send(request, timeout=options.timeout, retries=options.retry,
                           trace=show if options.verbose else None)
    if isinstance(error, ValueError):  # a URL or header that cannot be sent: a typo
        print("rest_client: cannot send: %s" % error, file=sys.stderr)
        return 2
    if error is not None:
        print("rest_client: no reply: %s" % error, file=sys.stderr)
        return 3
    if options.include:
        print_head(response)
    write_out(response.body)
    if sys.stdout.isatty() and not response.body.endswith("\n"):
        write_out("\n")  # so that the prompt starts on a line of its own
    sys.stdout.flush()
    return 1 if options.fail and response.status_code >= 400 else 0


if __name__ == "__main__":
    sys.exit(main())
