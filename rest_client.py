#!/usr/bin/env python3
"""A small HTTP client for REST APIs, in one file, on nothing but the standard library.

One call sends one request and never raises: it returns (Response, None) when a reply
arrived, whatever its status, or (None, error) when none did.

    from rest_client import Method, Request, send

    resp, err = send(Request(Method.GET, "http://127.0.0.1:8000/users",
                             params={"sort": "-name", "limit": "10"}), timeout=5)
    if err is not None:
        print("no reply:", err)
    else:
        print(resp.status_code, resp.headers["Content-Type"], resp.body)

It is urllib.request with its traps removed: a 4xx or 5xx is a Response rather than an
exception, a timeout always applies, a body is never silently labelled as a form,
redirects are followed for GET and HEAD only, only http and https URLs are sent, and
repeated headers (two Set-Cookie lines) keep every value.

From the shell, a tiny curl (API_KEY in the environment becomes a Bearer token):

    python rest_client.py GET http://127.0.0.1:8000/users -q limit=5 -i
    python rest_client.py POST http://127.0.0.1:8000/users -H "X-Test: 1" \\
        -d '{"name": "Ada", "email": "ada@example.com"}'
"""

import argparse
import http.client
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections import namedtuple
from http import HTTPStatus
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

__all__ = ["Method", "Request", "Response", "send", "main"]

DEFAULT_TIMEOUT = 30.0  # seconds
MAX_REDIRECTS = 10
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


Request = namedtuple("Request", "method url headers params body", defaults=(None, None, None))
Request.__doc__ = """What to send: a method, a full URL, and optional headers (dict),
query parameters (dict, added to the URL) and body (bytes, str sent as UTF-8, or None)."""

Response = namedtuple("Response", "status_code body headers")
Response.__doc__ = """What came back: the status (int), the body decoded as text, and the
headers as a dict from each name, as the server spelled it, to the list of its values."""


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
    headers = {}
    for name, value in reply.headers.items():
        headers.setdefault(name, []).append(value)
    charset = reply.headers.get_content_charset() or "utf-8"
    try:
        body = raw.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        body = raw.decode("utf-8", errors="replace")
    return Response(reply.code, body, headers)


def send(request, timeout=DEFAULT_TIMEOUT):
    """Send the request; return (Response, None) when a reply came, else (None, error).

    Network, URL, header and timeout trouble never raises: the exception comes back as
    the error value (URLError, TimeoutError, ValueError, ...).
    """
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout  # never wait for ever
    try:
        prepared = build_request(request)
        try:
            reply = OPENER.open(prepared, timeout=timeout)
        except urllib.error.HTTPError as error:  # a 4xx or 5xx (or a 3xx not followed)
            reply = error  # is a reply like any other
        with reply:
            return read_response(reply), None
    except (OSError, ValueError, TypeError, http.client.HTTPException) as error:
        return None, error  # URLError and TimeoutError are OSErrors


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
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds to wait for the reply (default: %(default)s)")
    parser.add_argument("-i", dest="include", action="store_true",
                        help="print the status line and headers before the body")
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
    """Print the status line and headers as curl -i does."""
    try:
        reason = HTTPStatus(response.status_code).phrase
    except ValueError:
        reason = ""
    print("HTTP/1.1 %d %s" % (response.status_code, reason))
    for name, values in response.headers.items():
        for value in values:
            print("%s: %s" % (name, value))
    print()


def main(argv=None):
    """Run the command line; return the exit status (0 reply, 1 --fail on 4xx/5xx, 2 none)."""
    options = parse_arguments(argv)
    try:
        request = request_from(options)
    except OSError as error:
        print("rest_client: cannot read the body: %s" % error, file=sys.stderr)
        return 2
    response, error = send(request, timeout=options.timeout)
    if error is not None:
        print("rest_client: no reply: %s" % error, file=sys.stderr)
        return 2
    sys.stdout.reconfigure(errors="replace")  # a terminal that cannot show a character
    if options.include:
        print_head(response)
    sys.stdout.write(response.body)
    sys.stdout.flush()
    return 1 if options.fail and response.status_code >= 400 else 0


if __name__ == "__main__":
    sys.exit(main())
