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

From the shell, a tiny curl (API_KEY in the environment becomes a Bearer token):

    python rest_client.py GET http://127.0.0.1:8000/users -q limit=5 -i
    python rest_client.py POST http://127.0.0.1:8000/users -H "X-Test: 1" \\
        -d '{"name": "Ada", "email": "ada@example.com"}'
    python rest_client.py GET http://127.0.0.1:8000/users/1 --retry 3 -v
"""

import argparse
import email.utils
import http.client
import itertools
import json
import math
import os
import random
import re
import sys
import time
import urllib.error
import urllib.request
from collections import namedtuple
from datetime import datetime, timezone
from http import HTTPStatus
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

__all__ = ["Method", "Request", "Response", "Headers", "send", "main"]

DEFAULT_TIMEOUT = 30.0  # seconds
MAX_REDIRECTS = 10
IDEMPOTENT_METHODS = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")  # RFC 9110 §9.2.2
RETRY_STATUSES = (429, 503)  # Too Many Requests, Service Unavailable: "try again later"
MAX_RETRY_AFTER = 30.0  # seconds: a server asking for longer gets this much
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 8.0  # seconds, without a Retry-After
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a method or header name (RFC 9110 §5.6.2)
URL_SAFE = "/%:@!$&'()*+,;=?-._~"  # what quote() leaves alone in a path and query


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
query parameters (dict, added to the URL) and body (bytes, str sent as UTF-8, or None)."""


class Response(namedtuple("Response", "status_code body headers")):
    """What came back: the status (int), the body decoded as text, and the headers (a
    Headers dict from each name, as the server spelled it, to the list of its values)."""

    __slots__ = ()

    def json(self):
        """The body parsed as JSON; ValueError when it is not JSON, an empty body included."""
        return json.loads(self.body)


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
        return next((key for key in self if key.lower() == name.lower()), name)


# ---------------------------------------------------------------------------------------
# Building the request
# ---------------------------------------------------------------------------------------

def build_url(url, params):
    """The URL to send: http or https only, params appended to its query, no #fragment."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError("only http:// and https:// URLs are sent, not %r" % url)
    query = parts.query
    if params:
        query = "&".join(filter(None, [query, urlencode(params)]))
    # Percent-encode what may not travel raw (spaces, non-ASCII), keeping existing escapes.
    return urlunsplit((parts.scheme, parts.netloc, quote(parts.path, safe=URL_SAFE),
                       quote(query, safe=URL_SAFE), ""))


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
    """The Content-Type to send with a body whose sender named none (never a form)."""
    try:
        json.loads(body)
        return "application/json"
    except (ValueError, RecursionError):  # not JSON (or nested past what json can read)
        return "text/plain; charset=utf-8" if isinstance(body, str) else "application/octet-stream"


def build_request(request):
    """Turn a Request into a urllib.request.Request; raise ValueError for what cannot be sent."""
    method = str(request.method).upper()
    if not TOKEN.fullmatch(method):
        raise ValueError("%r is not a valid HTTP method" % method)
    headers = check_headers(request.headers)
    body = request.body
    if body is not None and not isinstance(body, (bytes, str)):
        raise TypeError("body must be bytes, str or None, not %s" % type(body).__name__)
    if body is not None and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = default_content_type(body)
    if isinstance(body, str):
        body = body.encode("utf-8")
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


OPENER = urllib.request.build_opener(SafeRedirects)  # built once: every send() shares it


def read_response(reply):
    """Make a Response from urllib's reply (an HTTPError is a reply too)."""
    raw = reply.read()
    headers = Headers()
    for name, value in reply.headers.items():
        headers.setdefault(headers.spelling(name), []).append(value)
    charset = reply.headers.get_content_charset() or "utf-8"
    try:
        body = raw.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        body = raw.decode("utf-8", errors="replace")
    return Response(reply.code, body, headers)


def send(request, timeout=DEFAULT_TIMEOUT, retries=0, trace=None):
    """Send the request; return (Response, None) when a reply came, else (None, error).

    Network, URL, header and timeout trouble never raises: the exception comes back as
    the error value (URLError, TimeoutError, ValueError, ...). A body that is not bytes,
    str or None is a mistake in the program, and raises TypeError at once.

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
            response = read_response(reply)
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


class TracedSend:
    """Mixed into an http.client connection: the first thing it sends, the request head,
    is shown to self.trace (urllib opens a connection per request, redirects included)."""

    trace = None

    def send(self, data):
        if self.trace:
            show_request_head(data, self.trace)
            self.trace = None  # what follows is the body
        super().send(data)


class TracedHTTPConnection(TracedSend, http.client.HTTPConnection):
    """An HTTPConnection that shows its request head."""


HTTPS = hasattr(http.client, "HTTPSConnection")  # not where Python was built without ssl
if HTTPS:
    class TracedHTTPSConnection(TracedSend, http.client.HTTPSConnection):
        """An HTTPSConnection that shows its request head."""


class TracingHandler(urllib.request.HTTPHandler):
    """Opens connections that show their request head; it goes before urllib's own."""

    handler_order = urllib.request.HTTPHandler.handler_order - 1

    def __init__(self, trace):
        super().__init__()
        self.trace = trace

    def http_open(self, req):
        return self.do_open(self.connect(TracedHTTPConnection), req)

    if HTTPS:
        def https_open(self, req):
            return self.do_open(self.connect(TracedHTTPSConnection), req)

    def connect(self, connection_class):
        """A function that makes a connection of the class and gives it self.trace."""
        def make(host, **options):
            connection = connection_class(host, **options)
            connection.trace = self.trace
            return connection
        return make


def tracing_opener(trace):
    """An opener like OPENER whose connections show what they send."""
    return urllib.request.build_opener(SafeRedirects, TracingHandler(trace))


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
    parser.add_argument("-d", dest="data", metavar="BODY",
                        help="the body: text, @FILE for a file's bytes, @- for standard input")
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
    """Build the Request the command line describes."""
    headers = dict(options.headers)
    api_key = os.environ.get("API_KEY")
    if api_key and not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = "Bearer " + api_key
    return Request(options.method, options.url, headers, dict(options.params) or None,
                   read_data(options.data))


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
