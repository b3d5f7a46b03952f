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
What curl does for the rest is here too, each a keyword of send(): a download written to a
file as it arrives (save_to=), your own CA or a client certificate (context=tls_context(...)),
Basic authentication (auth=, the URL's user info, netrc=True), proxies (proxy=, noproxy=, or
the environment as curl reads it), forms (MultipartForm, UrlEncodedForm) and a cookie jar
(cookies=). resp.content holds the body's exact bytes.

From the shell, a tiny curl (API_KEY in the environment becomes a Bearer token):

    python rest_client.py GET http://127.0.0.1:8000/users -q limit=5 -i
    python rest_client.py POST http://127.0.0.1:8000/users -H "X-Test: 1" \\
        -d '{"name": "Ada", "email": "ada@example.com"}'
    python rest_client.py GET http://127.0.0.1:8000/users/1 --retry 3 -v
    python rest_client.py PATCH http://127.0.0.1:8000/users/1 -j '{"name": "Ada King"}'
    python rest_client.py GET https://files.example/export.zip --cacert ca.pem -u ada -o x.zip
"""

import argparse
import atexit
import base64
import binascii
import email.utils
import functools
import getpass
import http.client
import http.cookiejar
import io
import ipaddress
import itertools
import json
import math
import mimetypes
import netrc
import os
import random
import re
import select
import stat
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections import namedtuple
from datetime import datetime, timezone
from http import HTTPStatus
from urllib.parse import quote, unquote, urlencode, urljoin, urlsplit, urlunsplit

try:
    import ssl
except ImportError:  # a Python built without ssl sends http:// only
    ssl = None

__all__ = ["Method", "Request", "Response", "Headers", "MultipartForm", "UrlEncodedForm",
           "Upload", "send", "tls_context", "close", "main"]

DEFAULT_TIMEOUT = 30.0  # seconds
MAX_REDIRECTS = 10
IDEMPOTENT_METHODS = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")  # RFC 9110 §9.2.2
RETRY_STATUSES = (429, 503)  # Too Many Requests, Service Unavailable: "try again later"
MAX_RETRY_AFTER = 30.0  # seconds: a server asking for longer gets this much
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 8.0  # seconds, without a Retry-After
ASCII_DIGITS = re.compile(r"[0-9]+")  # delay-seconds (RFC 9110 §10.2.3) is DIGIT, ASCII only
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a method or header name (RFC 9110 §5.6.2)
NON_ASCII = re.compile(r"[^\x00-\x7f]")
URL_SAFE = "/%:@!$&'()*+,;=?-._~"  # what quote() leaves alone in a path and query
ACCEPT_ENCODING = "gzip, deflate"  # what the client asks for unless the caller says otherwise
MAX_IDLE_PER_HOST = 32  # kept connections waiting for a request, per host
IDLE_TIMEOUT = 90.0  # seconds a kept connection may wait before it is closed (as Go's)
CHUNK_SIZE = 1 << 20  # bytes read at a time into a download's buffer, and from a file to upload
CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")  # never sent on to
# another host or from https to http by a redirect (RFC 9110 §15.4: a client should not)
DEFAULT_PORTS = {"http": 80, "https": 443}


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
Request.__doc__ = """What to send: a method, a full URL, and optional headers (a dict, or
(name, value) pairs when a name repeats), query parameters (the same, added to the URL) and
body (bytes, str sent as UTF-8, a dict or list sent as JSON, a MultipartForm or an
UrlEncodedForm, or None)."""

MultipartForm = namedtuple("MultipartForm", "fields")
MultipartForm.__doc__ = """A multipart/form-data body (RFC 7578): fields as a dict or (name,
value) pairs, each value a str or an Upload, a file read from disk as it is sent."""

UrlEncodedForm = namedtuple("UrlEncodedForm", "fields")
UrlEncodedForm.__doc__ = """An application/x-www-form-urlencoded body, as an HTML form sends:
fields as a dict or (name, value) pairs."""

Upload = namedtuple("Upload", "path content_type filename")
Upload.__new__.__defaults__ = (None, None)
Upload.__doc__ = """A file in a MultipartForm: its path, and the content type (guessed from
its name when None) and file name (the path's last part when None) that the part names."""


class Response(namedtuple("Response", "status_code body headers")):
    """What came back: the status (int), the body decoded as text, and the headers (a
    Headers dict from each name, as the server spelled it, to the list of its values).
    content is the body's exact bytes; url is the URL that answered, after any redirects.
    After a download (send's save_to), body and content are empty, saved_to is where the
    bytes went, and saved_size how many there were."""

    url = None
    content = b""
    saved_to = None
    saved_size = 0

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
    # Percent-encode what may not travel raw (spaces, non-ASCII), keeping existing escapes;
    # user info never travels in the request line (it becomes an Authorization header).
    return urlunsplit((parts.scheme, ascii_authority(parts),
                       quote(parts.path, safe=URL_SAFE), quote(parts.query, safe=URL_SAFE), ""))


def ascii_authority(parts):
    """The URL's host and port, a name in non-ASCII letters as IDNA (RFC 5890: "bücher" is
    "xn--bcher-kva"), as DNS, proxies and the Host header need it."""
    authority = parts.netloc.rpartition("@")[2]
    if not NON_ASCII.search(authority):
        return authority
    host = parts.hostname.encode("idna").decode("ascii")  # a UnicodeError is a ValueError
    return host if parts.port is None else "%s:%d" % (host, parts.port)


def check_headers(headers):
    """Return the headers as str to str, or raise ValueError for any that cannot be sent. A
    name given twice (as pairs) keeps both values in order, on one line (RFC 9110 §5.3)."""
    checked, spellings = {}, {}
    for name, value in headers.items() if hasattr(headers, "items") else headers or ():
        value = str(value)
        if not TOKEN.fullmatch(name):
            raise ValueError("%r is not a valid header name" % name)
        if any(character in value for character in "\r\n\0"):
            raise ValueError("the value of header %s contains CR, LF or NUL" % name)
        value.encode("latin-1")  # a UnicodeEncodeError is a ValueError too
        name = spellings.setdefault(name.lower(), name)
        if name in checked:  # cookies are joined by "; " (RFC 6265 §5.4), the rest by ", "
            value = checked[name] + ("; " if name.lower() == "cookie" else ", ") + value
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
    """The body as bytes (or a MultipartBody), with a Content-Type added to headers if it has
    none: a dict or list goes as JSON, a form as a form; TypeError for any other kind of
    body, or one json cannot encode."""
    has_type = any(name.lower() == "content-type" for name in headers)
    if isinstance(body, (MultipartForm, UrlEncodedForm)):
        return form_body(body, headers, has_type)
    if isinstance(body, (dict, list)):
        try:
            body = json.dumps(body)
        except ValueError as error:  # a circular reference: a mistake like any TypeError
            raise TypeError("the body cannot be sent as JSON: %s" % error) from None
        if not has_type:
            headers["Content-Type"] = "application/json"
    elif not isinstance(body, (bytes, str)):
        raise TypeError("body must be bytes, str, a dict, a list, a form or None, not %s"
                        % type(body).__name__)
    elif not has_type:
        headers["Content-Type"] = default_content_type(body)
    return body.encode("utf-8") if isinstance(body, str) else body


def form_body(form, headers, has_type):
    """A form's body, its Content-Type (and a multipart one's Content-Length) in headers; a
    multipart body's type is always ours, for it names the boundary."""
    if isinstance(form, UrlEncodedForm):
        if not has_type:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        return urlencode(form.fields, quote_via=quote).encode("ascii")
    body = MultipartBody(form.fields)
    for name in [name for name in headers if name.lower() == "content-type"]:
        del headers[name]
    headers["Content-Type"] = "multipart/form-data; boundary=" + body.boundary
    headers["Content-Length"] = str(body.length)  # known ahead, so it is not sent chunked
    return body


class MultipartBody:
    """A multipart/form-data body (RFC 7578) that reads its files as it is sent, a piece at a
    time, never whole; it can be sent again (after a dead kept connection) from the start."""

    def __init__(self, fields):
        self.boundary = "rest-client-" + binascii.hexlify(os.urandom(12)).decode("ascii")
        self.parts = [(part_head(self.boundary, name, value), value)
                      for name, value in (fields.items() if hasattr(fields, "items") else fields)]
        self.end = ("--%s--\r\n" % self.boundary).encode("ascii")
        self.length = len(self.end) + sum(len(head) + part_size(value) + 2
                                          for head, value in self.parts)

    def __iter__(self):
        """The body's bytes, a part's head, then its text or its file's pieces, and so on."""
        for head, value in self.parts:
            yield head
            if isinstance(value, Upload):
                with open(value.path, "rb") as file:
                    yield from iter(functools.partial(file.read, CHUNK_SIZE), b"")
            else:
                yield value.encode("utf-8") if isinstance(value, str) else value
            yield b"\r\n"
        yield self.end


def part_head(boundary, name, value):
    """The boundary and headers that open a part: its field name, and a file's name and type."""
    disposition = 'form-data; name="%s"' % form_quoted(name)
    lines = ["--" + boundary]
    if isinstance(value, Upload):
        filename = value.filename or os.path.basename(value.path)
        lines.append('Content-Disposition: %s; filename="%s"' % (disposition,
                                                                 form_quoted(filename)))
        lines.append("Content-Type: " + (value.content_type or mimetypes.guess_type(filename)[0]
                                         or "application/octet-stream"))
    else:
        lines.append("Content-Disposition: " + disposition)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")  # RFC 7578 §5.1.1: UTF-8 names


def form_quoted(name):
    """A field or file name inside quotes, escaped as browsers do (RFC 7578 §4.2)."""
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def part_size(value):
    """The bytes of a part's content: a file's size on disk, or the text's in UTF-8."""
    if isinstance(value, Upload):
        return os.path.getsize(value.path)  # an OSError when it cannot be read: an error value
    return len(value.encode("utf-8") if isinstance(value, str) else value)


def basic_credentials(user, password):
    """The Authorization value for Basic authentication (RFC 7617), in UTF-8 (its §2.1)."""
    pair = ("%s:%s" % (user, password)).encode("utf-8")
    return "Basic " + base64.b64encode(pair).decode("ascii")


def credentials_for(url, options):
    """The (user, password) to send: auth=, else the URL's user info (percent-decoded), else
    .netrc's when netrc=True; or None."""
    if options.auth is not None:
        return options.auth
    if "@" in url:  # only then can there be user info; most URLs are spared the parsing
        parts = urlsplit(url)
        if parts.username is not None:
            return unquote(parts.username), unquote(parts.password or "")
    return netrc_credentials(urlsplit(url).hostname) if options.netrc else None


def netrc_credentials(host):
    """The login and password that ~/.netrc (or the file NETRC names) has for host, or None."""
    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        found = netrc.netrc(path).authenticators(host)
    except FileNotFoundError:
        return None
    except netrc.NetrcParseError as error:
        raise ValueError("cannot read %s: %s" % (path, error)) from None
    return (found[0], found[2]) if found else None


def build_request(request, options=None):
    """Turn a Request into a urllib.request.Request; raise ValueError for what cannot be sent."""
    options = options or DEFAULT_OPTIONS
    method = str(request.method).upper()
    if not TOKEN.fullmatch(method):
        raise ValueError("%r is not a valid HTTP method" % method)
    headers = check_headers(request.headers)
    body = None if request.body is None else body_bytes(request.body, headers)
    if not any(name.lower() == "accept-encoding" for name in headers):
        headers["Accept-Encoding"] = ACCEPT_ENCODING
    credentials = credentials_for(request.url, options)
    if credentials and not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = basic_credentials(*credentials)  # a header given wins
    prepared = urllib.request.Request(build_url(request.url, request.params), data=body,
                                      headers=headers, method=method)
    prepared.options = options
    return prepared


# ---------------------------------------------------------------------------------------
# Sending it and reading the reply
# ---------------------------------------------------------------------------------------

Options = namedtuple("Options",
                     "context auth netrc proxy noproxy cookies save_to progress save_errors")
Options.__new__.__defaults__ = (None,) * 8 + (True,)
Options.__doc__ = """send()'s keywords beyond timeout, retries and trace; see send."""
DEFAULT_OPTIONS = Options()


class SafeRedirects(urllib.request.HTTPRedirectHandler):
    """Follow at most 10 redirects, for GET and HEAD only, and only to http or https.

    urllib would turn a redirected POST into a GET, dropping its body; here any other
    method gets the 3xx reply itself, as does the eleventh redirect in a row.
    """

    max_redirections = MAX_REDIRECTS
    max_repeats = MAX_REDIRECTS  # a loop is followed as far as any other chain

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        """The request that follows a redirect, or None to return the 3xx reply itself. It
        carries the caller's headers; a jar's cookies and a proxy's credentials are added
        anew for where it goes."""
        method = req.get_method()
        if method not in ("GET", "HEAD") or urlsplit(newurl).scheme.lower() not in ("http", "https"):
            return None
        kept = {name: value for name, value in req.headers.items()
                if name.lower() not in ("content-length", "content-type")}
        if not credentials_may_follow(req.full_url, newurl):
            kept = {name: value for name, value in kept.items()
                    if name.lower() not in CREDENTIAL_HEADERS}
        followed = urllib.request.Request(newurl.replace(" ", "%20"), headers=kept, method=method,
                                          origin_req_host=req.origin_req_host, unverifiable=True)
        followed.options, followed.trace, followed.download = req.options, req.trace, req.download
        return followed

    # Python before 3.11 does not follow 308 Permanent Redirect; it is 301 for GET and HEAD.
    http_error_308 = urllib.request.HTTPRedirectHandler.http_error_302


def credentials_may_follow(url, new_url):
    """Whether credentials may follow a redirect: to the same host and port, never from https
    to http; http to https from and to the default ports counts as the same place."""
    old, new = urlsplit(url), urlsplit(new_url)
    if (old.scheme, new.scheme) == ("https", "http") or old.hostname != new.hostname:
        return False
    ports = (old.port or DEFAULT_PORTS[old.scheme], new.port or DEFAULT_PORTS[new.scheme])
    return ports[0] == ports[1] or ports == (80, 443)


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
    response.url, response.content = reply.geturl(), raw
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
    """The body with the codings the request accepted undone. An empty body has nothing to
    decode: a HEAD reply, a 204 or a 304 names the coding of a body it does not carry."""
    inflaters = inflaters_for(content_encodings, accept_encoding) if raw else []
    return decoded(raw, inflaters) + finished(inflaters) if inflaters else raw


def inflaters_for(content_encodings, accept_encoding):
    """An Inflater for each content coding to undo, last applied first (RFC 9110 §8.4), as
    far as the request's Accept-Encoding named them; a coding it did not name stays."""
    codings = [coding.strip().lower() for value in content_encodings for coding in value.split(",")]
    if not any(codings):
        return []
    accepted = {coding.split(";")[0].strip().lower() for coding in accept_encoding.split(",")}
    inflaters = []
    for coding in reversed([coding for coding in codings if coding]):
        if coding not in accepted or coding not in ("gzip", "x-gzip", "deflate"):
            break  # not asked for, or identity: left as it came
        inflaters.append(Inflater(coding))
    return inflaters


class Inflater:
    """Undoes one gzip or deflate coding, a piece at a time, so that a download is decoded
    as it arrives. "deflate" means the zlib format (RFC 9110 §8.4.1.2), but some servers
    send bare deflate data, which browsers take too."""

    def __init__(self, coding):
        self.coding, self.started = coding, False
        self.engine = zlib.decompressobj(zlib.MAX_WBITS | (0 if coding == "deflate" else 16))

    def decode(self, data):
        """The decoded bytes of the next piece; UndecodableReply if it does not decode."""
        try:
            if not self.started and self.coding == "deflate":
                self.started = True
                try:
                    return self.engine.decompress(data)
                except zlib.error:  # no zlib header: bare deflate
                    self.engine = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.engine.decompress(data)
        except zlib.error as error:
            raise UndecodableReply("the %s reply does not decode: %s"
                                   % (self.coding, error)) from None

    def finish(self):
        """The last decoded bytes, once the body has ended; UndecodableReply if it ended early."""
        rest = self.engine.flush()
        if not self.engine.eof:
            raise UndecodableReply("the %s reply does not decode: it ends before its end"
                                   % self.coding)
        return rest


def decoded(data, inflaters):
    """A piece of the body through each inflater in turn."""
    for inflater in inflaters:
        data = inflater.decode(data)
    return data


def finished(inflaters):
    """What the inflaters still hold once the body has ended, each passing it to the next."""
    rest = b""
    for inflater in inflaters:
        rest = inflater.decode(rest) + inflater.finish()
    return rest


def send(request, timeout=DEFAULT_TIMEOUT, retries=0, trace=None, **options):
    """Send the request; return (Response, None) when a reply came, else (None, error).

    Network, URL, header, timeout, TLS, proxy and file trouble never raises: the exception
    comes back as the error value (URLError, TimeoutError, ValueError, ...). A body that is
    not bytes, str, a dict, a list, a form or None, or a keyword send does not know, is a
    mistake in the program, and raises TypeError at once. Connections are kept and reused
    (see KeptConnections); close() closes them.

    With retries=N, an idempotent request is sent up to N more times while no reply
    comes or the reply is 429 or 503; see retry_wait. POST and PATCH are never sent
    twice: the server may have acted on the first. trace, if given, is called with each
    line that curl -v would show. The other keywords do what curl's options do:

    context   an ssl.SSLContext for https, such as tls_context(cacert="ca.pem") (--cacert)
    auth      (user, password) sent with Basic authentication (-u); the URL's user info
              (http://user:pass@host/) otherwise, or with netrc=True, ~/.netrc's (--netrc)
    proxy     the proxy's URL, credentials in it for the proxy alone (-x); "" for none;
              http_proxy or https_proxy from the environment (as it was at import) when None
    noproxy   hosts to reach without the proxy, "a.example,.b.example" (--noproxy), or
              no_proxy from the environment when None
    cookies   an http.cookiejar.CookieJar, filled by replies and sent from (-b, -c)
    save_to   a path or a binary file object to write the body to as it arrives (-o);
              progress, if given, is called with (bytes so far, total or None); with
              save_errors=False, a 4xx or 5xx reply leaves it alone (--fail) and its
              body is the Response's
    """
    options = Options(**options)
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout  # never wait for ever
    method = str(request.method).upper()
    download = None if options.save_to is None else Download(
        options.save_to, options.progress, options.save_errors)
    for attempt in itertools.count():
        response, error = send_once(request, timeout, trace, options, download)
        if attempt >= retries or not worth_retrying(method, response, error):
            return (response, error) if download is None else saved(response, error, download)
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


def send_once(request, timeout, trace, options=DEFAULT_OPTIONS, download=None):
    """Send the request once: (Response, None), or (None, error) when no reply came."""
    try:
        prepared = build_request(request, options)
        prepared.trace, prepared.download = trace, download
        try:
            reply = OPENER.open(prepared, timeout=timeout)
        except urllib.error.HTTPError as error:  # a 4xx or 5xx (or a 3xx not followed)
            reply = error  # is a reply like any other
        with reply:
            response = read_response(reply, prepared.get_header("Accept-encoding", ""))
    except (OSError, ValueError, http.client.HTTPException) as error:
        return None, explained(error)  # URLError and TimeoutError are OSErrors
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
    if ASCII_DIGITS.fullmatch(value):  # not isdigit(), which takes "²" and other digits
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
# Downloads: a body written to a file as it arrives, never whole in memory
# ---------------------------------------------------------------------------------------

class Download:
    """Where a body goes as it arrives: a binary file object, or a path. A regular file (or
    one not there yet) is written beside itself and renamed at the end, so that no
    half-written file ever bears its name; a symbolic link is followed, and the file it
    names is replaced whole; anything else (a device such as /dev/null, a FIFO, a terminal)
    is written into as it is, for renaming a file over it would destroy it."""

    def __init__(self, target, progress=None, save_errors=True):
        self.target, self.progress, self.file, self.size = target, progress, None, 0
        self.save_errors = save_errors  # False: a 4xx or 5xx reply never touches the target
        self.complete = False  # whether a whole body was streamed into the file
        self.is_path = isinstance(target, (str, bytes, os.PathLike))
        self.in_place = False  # whether the path is written into as it is

    def begin(self):
        """Start a body (again, after a failed try: a file beside the target starts empty)."""
        self.size, self.complete = 0, False
        if not self.is_path:
            self.file = self.target
        elif self.file is None:
            self.file = self.open_file()
        elif not self.in_place:
            self.file.seek(0)
            self.file.truncate()

    def open_file(self):
        """Open the special file itself, or a new file beside the regular one the path
        names (made as open() makes files, its mode from the umask)."""
        self.real = os.path.realpath(self.target)  # a link's own file is the one replaced
        if not regular_or_missing(self.real):
            self.in_place = True
            return open(self.real, "wb")
        folder, name = os.path.split(self.real)
        random_part = binascii.hexlify(os.urandom(4)).decode("ascii")
        return open(os.path.join(folder, ".%s.%s.part" % (name, random_part)), "xb")

    def write(self, data):
        """Add a piece of the body."""
        self.file.write(data)
        self.size += len(data)

    def finish(self):
        """Give the whole file its name."""
        if self.is_path:
            self.file.close()
            if not self.in_place:
                os.replace(self.file.name, self.real)

    def abandon(self):
        """Remove the half-written file beside the target."""
        if self.is_path and self.file is not None:
            self.file.close()
            try:
                if not self.in_place:
                    os.remove(self.file.name)
            except FileNotFoundError:  # renamed already
                pass


def regular_or_missing(path):
    """Whether a path names a regular file or nothing yet (not a device, FIFO or folder)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


class BrokenDownload(OSError):
    """A body that stopped half-way: the connection failed, or it ended short of its length."""


def stream(reply, download, accept_encoding):
    """Write a 2xx reply's body to the download as it arrives, decoded, into one buffer
    reused for every piece; BrokenDownload or UndecodableReply when it fails half-way."""
    inflaters = inflaters_for(reply.msg.get_all("Content-Encoding") or [], accept_encoding)
    buffer, received, total = memoryview(bytearray(CHUNK_SIZE)), 0, reply.length
    download.begin()
    for count in iter(functools.partial(read_piece, reply, buffer), 0):
        received += count
        download.write(decoded(buffer[:count], inflaters))
        if download.progress:
            download.progress(received, total)
    if reply.length:  # http.client does not say when a body ends before its Content-Length
        raise BrokenDownload("the reply ended after %d bytes, %d short of its length"
                             % (received, reply.length))
    download.write(finished(inflaters))
    download.complete = True


def read_piece(reply, buffer):
    """Read the next piece of a body into the buffer; how many bytes (0 at the end)."""
    try:
        return reply.readinto(buffer)
    except (OSError, http.client.HTTPException) as error:  # not a dead kept connection:
        raise BrokenDownload("the reply broke off: %r" % error) from None  # never resent


def saved(response, error, download):
    """send()'s result for a download: an empty body that says where the bytes went and
    how many; a reply whose body was kept in memory (a 3xx, a 4xx) is written there now."""
    if error is None and not download.save_errors and response.status_code >= 400:
        return response, None  # the target is left as it was; the body is the Response's
    try:
        if error is None:
            if not download.complete:
                download.begin()
                download.write(response.content)
            download.finish()
    except OSError as failure:
        error = failure
    if error is not None:
        download.abandon()
        return None, error
    result = Response(response.status_code, "", response.headers)
    result.url, result.saved_to, result.saved_size = response.url, download.target, download.size
    return result, None


# ---------------------------------------------------------------------------------------
# TLS, proxies and cookies, as curl has them
# ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def tls_context(cacert=None, capath=None, cert=None, key=None, insecure=False):
    """An ssl.SSLContext for send(context=...): it trusts the CAs in cacert (a PEM file) or
    capath (a folder) instead of the system's, shows a client certificate (cert, and key
    unless cert holds it) for mutual TLS, or, only with insecure=True, checks nothing.
    OSError (ssl.SSLError too) for a file it cannot read. The same settings give the same
    context, so that requests made with them share kept connections.

    Without a context, the system's CAs are trusted, and SSL_CERT_FILE and SSL_CERT_DIR
    name others, as OpenSSL reads them."""
    if capath is not None:
        os.listdir(capath)  # OpenSSL would look in it only when a certificate comes
    context = ssl.create_default_context(cafile=cacert, capath=capath)
    if cert is not None:
        context.load_cert_chain(cert, key)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class UntrustedCertificate(urllib.error.URLError):
    """The server's certificate does not verify; the text says how to trust its CA."""


def explained(error):
    """The error to return: a certificate that does not verify says how to trust its CA."""
    reason = getattr(error, "reason", error)
    if sys.implementation.name == "pypy" and ssl is not None and isinstance(reason, ssl.SSLError):
        forget_openssl_errors()
    if getattr(reason, "reason", None) != "CERTIFICATE_VERIFY_FAILED":
        return error
    return UntrustedCertificate(
        "%s. If the server's CA is your company's or your own, trust it with --cacert FILE "
        "(from Python: send(..., context=tls_context(cacert=FILE))) or SSL_CERT_FILE=FILE "
        "in the environment" % getattr(error, "reason", error))


def forget_openssl_errors():
    """Empty OpenSSL's error queue, which PyPy's ssl leaves full after a failed handshake:
    the next request of this thread on a kept TLS connection would fail with the same
    error. Making an SSL object empties it."""
    ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO())


class CurlProxies(urllib.request.ProxyHandler):
    """Send a request through the proxy curl would choose: proxy=, else http_proxy or
    https_proxy from the environment, unless noproxy= (or no_proxy) names its host.
    Credentials in the proxy's URL go to the proxy alone: in Proxy-Authorization for
    http://, on the CONNECT of https://."""

    handler_order = 100  # before the handlers that connect, as urllib's ProxyHandler

    def __init__(self, environment):
        super().__init__({})  # urllib's reading of the environment is replaced by ours
        self.environment = environment

    def http_open(self, request):
        """Point the request at its proxy, if any; the handlers that connect do the rest."""
        proxy = self.proxy_for(request)
        if proxy:
            parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
            if parts.scheme.lower() != "http":
                raise ValueError("only http:// proxies are supported, not %r" % proxy)
            if parts.username is not None:
                request.add_unredirected_header("Proxy-authorization", basic_credentials(
                    unquote(parts.username), unquote(parts.password or "")))
            request.set_proxy(parts.netloc.rpartition("@")[2], "http")
        return None

    https_open = http_open

    def proxy_for(self, request):
        """The URL of the proxy for a request, or None."""
        options = request.options
        proxy = options.proxy
        if proxy is None:
            proxy = self.environment.get(request.type + "_proxy")
        if not proxy:
            return None
        no_proxy = self.environment.get("no_proxy", "") if options.noproxy is None else (
            options.noproxy)
        return None if bypassed(urlsplit("//" + request.host).hostname, no_proxy) else proxy


def environment_proxies():
    """http_proxy, https_proxy and no_proxy as curl reads them, the lower-case name first
    (HTTPS_PROXY, NO_PROXY otherwise); read once, as curl reads them at its start and
    urllib when an opener is built, so that a request pays nothing for them. Never
    HTTP_PROXY: in CGI, a request's "Proxy:" header arrives as HTTP_PROXY, so a web
    request could choose the proxy (httpoxy, CVE-2016-5385); curl skips it too."""
    found = {}
    for name in ("http_proxy", "https_proxy", "no_proxy"):
        for spelling in (name,) if name == "http_proxy" else (name, name.upper()):
            if spelling in os.environ:
                found.setdefault(name, os.environ[spelling])
    return found


def bypassed(host, no_proxy):
    """Whether no_proxy names the host, as curl reads it: "*" for every host, a name for
    itself and the names under it (a leading dot changes nothing: urllib mishandles one
    before bpo-39057, which 3.6 never got), an IP address, or a range (10.0.0.0/8)."""
    for entry in no_proxy.lower().split(","):
        entry = entry.strip().strip(".")
        if entry and (entry == "*" or host == entry or host.endswith("." + entry)
                      or in_network(host, entry)):
            return True
    return False


def in_network(host, entry):
    """Whether host is an IP address in the range entry names, such as 10.0.0.0/8."""
    try:
        return "/" in entry and ipaddress.ip_address(host) in ipaddress.ip_network(entry, False)
    except ValueError:  # a name, not an address
        return False


class SessionCookies(urllib.request.BaseHandler):
    """Send the cookies of the request's jar (cookies=) and keep those that replies set, by
    the jar's rules: domain, path, Secure, expiry (RFC 6265)."""

    def http_request(self, request):
        if request.options.cookies is not None:
            request.options.cookies.add_cookie_header(request)
        return request

    def http_response(self, request, reply):
        if request.options.cookies is not None:
            request.options.cookies.extract_cookies(reply, request)
        return reply

    https_request, https_response = http_request, http_response


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

    def exchange(self, request, connection_class, context=None):
        """Send the request and return urllib's reply, its body read (or, for a download,
        written to the file). Connections are kept per scheme, host (the proxy's, if any),
        tunnelled host and TLS context: one made without verification never carries a
        request that asks for it."""
        key = (request.type, request.host, request._tunnel_host, context)
        connection = POOL.take(key)
        reused = connection is not None
        if not reused:
            connection = self.connect(connection_class, request, context)
        try:
            reply, body = or_close(connection, self.send_on, connection, request)
        except DEAD_CONNECTION:
            if not (reused and request.get_method() in IDEMPOTENT_METHODS):
                raise  # a POST may have reached the server; a new connection had its try
            connection = self.connect(connection_class, request, context)  # once more
            reply, body = or_close(connection, self.send_on, connection, request)
        if body is None:  # a download: the body goes to its file, and never twice
            body = or_close(connection, stream, reply, request.download,
                            request.get_header("Accept-encoding", ""))
        if reply.will_close:  # Connection: close, HTTP/1.0, or a body read to the end
            connection.close()
        else:
            POOL.give_back(key, connection)
        return self.reply_to_urllib(request, reply, body)

    def connect(self, connection_class, request, context):
        """A new connection for the request, through the proxy's tunnel if it has one."""
        options = {} if context is None else {"context": context}
        connection = connection_class(request.host, timeout=request.timeout, **options)
        if request._tunnel_host:  # HTTPS through a proxy: CONNECT, as urllib does
            headers = dict(request.header_items())
            tunnel = {"Proxy-Authorization": headers["Proxy-authorization"]} if (
                "Proxy-authorization" in headers) else {}
            connection.set_tunnel(request._tunnel_host, headers=tunnel)
        return connection

    def send_on(self, connection, request):
        """Send the request on the connection; the reply and its whole body (None for the
        body of a 2xx to download, which the caller streams)."""
        if connection.sock is not None and connection.sock.gettimeout() != request.timeout:
            connection.sock.settimeout(request.timeout)  # a system call: only when it changes
        connection.timeout = request.timeout
        connection.trace = request.trace
        headers = dict(request.unredirected_hdrs)
        headers.update((name, value) for name, value in request.header_items()
                       if name not in headers)
        if request._tunnel_host:
            headers.pop("Proxy-authorization", None)  # for the proxy's CONNECT, not the host
        try:
            connection.request(request.get_method(), request.selector, request.data,
                               {name.title(): value for name, value in headers.items()})
        except ProxyRefused as refusal:  # a 407 to the CONNECT: the proxy's reply is the reply
            return refusal.reply, refusal.body
        except DEAD_CONNECTION:
            raise  # for exchange to judge
        except OSError as error:  # no connection, or a timeout: as urllib says it
            raise urllib.error.URLError(error) from None
        reply = connection.getresponse()
        if request.download is not None and 200 <= reply.status < 300:
            return reply, None
        return reply, reply.read()

    def reply_to_urllib(self, request, reply, body):
        """The reply as urllib's handlers expect one, the body read."""
        return ReadReply(body, reply.status, reply.reason, reply.msg, request.get_full_url())


def or_close(connection, work, *arguments):
    """work(*arguments), closing the connection if anything goes wrong: after a timeout too,
    as the reply might still come, out of step with the next request."""
    try:
        return work(*arguments)
    except BaseException:
        connection.close()
        raise


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
            trace, self.trace = self.trace, None  # what follows is the body
            if self.sock is None:
                self.connect()  # first, so that a proxy's CONNECT is not taken for the head
            show_request_head(data, trace)
        super().send(data)


class HTTPConnection(TracedConnection, http.client.HTTPConnection):
    """An HTTPConnection that can show its request heads."""


class KeptHTTPHandler(KeptConnections, urllib.request.HTTPHandler):
    """urllib's HTTPHandler, on kept connections."""

    def http_open(self, request):
        return self.exchange(request, HTTPConnection)


class ProxyRefused(Exception):
    """A proxy's answer to a CONNECT other than 200 (a 407, say), kept as the reply."""

    def __init__(self, reply):
        super().__init__(reply.status)
        self.reply, self.body = reply, reply.read()
        reply.will_close = True  # the tunnel was never made: the connection is done


HTTPS = ssl is not None and hasattr(http.client, "HTTPSConnection")
if HTTPS:
    class HTTPSConnection(TracedConnection, http.client.HTTPSConnection):
        """An HTTPSConnection that can show its request heads, and tunnels through a proxy
        with a CONNECT that proxies take."""

        def _tunnel(self):
            """CONNECT as HTTP/1.1 with a Host header (RFC 9110 §9.3.6): http.client sends
            HTTP/1.0 without Host before gh-66897, and hides the proxy's reply when it
            refuses; here a refusal is the reply (ProxyRefused)."""
            authority = "%s:%d" % (self._tunnel_host, self._tunnel_port)
            head = ["CONNECT %s HTTP/1.1" % authority, "Host: " + authority]
            head += ["%s: %s" % header for header in self._tunnel_headers.items()]
            self.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            reply = self.response_class(self.sock, method="CONNECT")
            reply.begin()
            if reply.status != HTTPStatus.OK:
                raise ProxyRefused(reply)

    class KeptHTTPSHandler(KeptConnections, urllib.request.HTTPSHandler):
        """urllib's HTTPSHandler, on kept connections, with the request's TLS context."""

        def https_open(self, request):
            return self.exchange(request, HTTPSConnection, request.options.context)


def build_opener():
    """An opener that chooses proxies and keeps cookies as curl does and follows safe
    redirects only, on kept connections."""
    handlers = [CurlProxies(environment_proxies()), SessionCookies(), SafeRedirects,
                KeptHTTPHandler()]
    return urllib.request.build_opener(*handlers + ([KeptHTTPSHandler()] if HTTPS else []))


OPENER = build_opener()  # built once: every send() shares it and its kept connections


def close():
    """Close every kept connection (they are closed at exit too)."""
    POOL.close()


atexit.register(close)


# ---------------------------------------------------------------------------------------
# Showing the exchange, as curl -v does
# ---------------------------------------------------------------------------------------

def show_request_head(data, trace):
    """Show the head of a request as it goes out, with its credentials masked."""
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    for line in head.split("\r\n"):
        trace("> " + masked(line))
    trace(">")


def show_reply_head(response, trace):
    """Show the status line and headers of a reply, with its cookies masked."""
    for line in head_lines(response):
        trace("< " + masked(line))
    trace("<")


def masked(line):
    """A header line with its credential shown as ***; an authorization keeps its scheme."""
    name, colon, value = line.partition(":")
    if colon and name.lower() in ("authorization", "proxy-authorization"):
        return "%s: %s ***" % (name, value.split()[0] if value.split() else "")
    if colon and name.lower() in ("cookie", "set-cookie"):
        return "%s: ***" % name
    return line


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


def form_argument(text):
    """argparse type for -F: "name=value", "name=@path" or "name=@path;type=image/png"
    -> (name, value or Upload), as curl reads them."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError("form fields look like 'name=value' or 'name=@FILE', "
                                         "not %r" % text)
    if not value.startswith("@"):
        return name, value
    path, *parameters = value[1:].split(";")
    named = dict(parameter.strip().partition("=")[::2] for parameter in parameters)
    return name, Upload(path, named.get("type"), named.get("filename"))


def parse_arguments(argv):
    """Read the command line."""
    parser = argparse.ArgumentParser(
        prog="rest_client.py", description="Send one HTTP request and print the reply's body.",
        epilog="API_KEY in the environment is sent as 'Authorization: Bearer $API_KEY' "
               "unless -H gives an Authorization header. http_proxy, https_proxy, no_proxy, "
               "SSL_CERT_FILE, SSL_CERT_DIR and NETRC are read as curl reads them.")
    parser.add_argument("method", help="GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, ...")
    parser.add_argument("url", help="http:// or https:// URL")
    parser.add_argument("-H", dest="headers", action="append", default=[], metavar="'NAME: VALUE'",
                        type=header_argument, help="a request header (repeatable)")
    parser.add_argument("-q", dest="params", action="append", default=[], metavar="NAME=VALUE",
                        type=param_argument, help="a query parameter, URL-encoded (repeatable)")
    add_body_arguments(parser.add_mutually_exclusive_group())
    parser.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT,
                        help="seconds to wait for the reply (default: %(default)s)")
    parser.add_argument("--retry", type=count_argument, default=0, metavar="N",
                        help="send a GET, HEAD, PUT, DELETE or OPTIONS again, up to N times, "
                             "while no reply comes or it is 429 or 503 (default: 0)")
    parser.add_argument("-i", dest="include", action="store_true",
                        help="print the status line and headers before the body")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the body to FILE as it arrives, whole or not at all "
                             "(-o - writes it to stdout, even a binary one on a terminal)")
    parser.add_argument("-v", dest="verbose", action="store_true",
                        help="show the request as sent and the reply's head on stderr, as "
                             "curl -v does (credentials show as ***)")
    parser.add_argument("--fail", action="store_true",
                        help="exit with 1 when the status is 4xx or 5xx")
    add_curl_arguments(parser)
    return parser.parse_args(argv)


def add_body_arguments(body):
    """The ways to give a body, of which a command takes one."""
    body.add_argument("-d", dest="data", metavar="BODY",
                      help="the body: text, @FILE for a file's bytes, @- for standard input")
    body.add_argument("-j", "--json", metavar="JSON",
                      help="the body as JSON text, which must parse (or @FILE, @-), sent as "
                           "application/json unless -H names a Content-Type")
    body.add_argument("-F", "--form", action="append", type=form_argument, metavar="NAME=VALUE",
                      help="a multipart/form-data field; NAME=@FILE[;type=TYPE] for a file "
                           "(repeatable)")
    body.add_argument("--data-urlencode", action="append", type=param_argument,
                      metavar="NAME=VALUE", help="a field of a URL-encoded form (repeatable)")


def add_curl_arguments(parser):
    """curl's options for TLS, credentials, proxies and cookies, under curl's names."""
    for flags, meta, says in [
            (["--cacert"], "FILE", "trust the CAs in this PEM file (not the system's)"),
            (["--capath"], "DIR", "trust the CAs in this folder (not the system's)"),
            (["--cert"], "FILE", "a client certificate (PEM), for mutual TLS"),
            (["--key"], "FILE", "the client certificate's key, if the certificate lacks it"),
            (["-u", "--user"], "USER[:PASSWORD]", "Basic authentication; without :PASSWORD, "
                                                  "it is asked for on the terminal"),
            (["-x", "--proxy"], "URL", "the proxy to use: http://[USER:PASSWORD@]HOST:PORT"),
            (["--noproxy"], "HOSTS", "hosts to reach without a proxy, comma-separated"),
            (["-b", "--cookie"], "FILE|NAME=VALUE", "a Netscape cookie file to read, or "
                                                    "cookies to send"),
            (["-c", "--cookie-jar"], "FILE", "write the cookies to this file at the end")]:
        parser.add_argument(*flags, metavar=meta, help=says)
    parser.add_argument("-k", "--insecure", action="store_true",
                        help="do not check the server's certificate (a warning says so)")
    parser.add_argument("--netrc", action="store_true",
                        help="take the user and password from ~/.netrc (or $NETRC)")


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
    JSON, naming its line and column as json does; OSError for a file it cannot read."""
    headers = list(options.headers)  # pairs: a repeated -H keeps every value
    api_key = os.environ.get("API_KEY")
    if api_key and not any(name.lower() == "authorization" for name, _ in headers) and not (
            credentials_given(options)):
        headers.append(("Authorization", "Bearer " + api_key))
    if options.cookie and "=" in options.cookie:  # curl's rule: with "=", cookies, not a file
        headers.append(("Cookie", options.cookie))
    return Request(options.method, options.url, headers, options.params or None,
                   body_from(options, headers))


def credentials_given(options):
    """Whether the command names credentials of its own (-u, the URL's, or --netrc's for
    its host), which win over API_KEY."""
    if options.user is not None or urlsplit(options.url).username is not None:
        return True
    return bool(options.netrc and netrc_credentials(urlsplit(options.url).hostname))


def body_from(options, headers):
    """The body that -d, -j, -F or --data-urlencode gives, or None."""
    if options.json is not None:
        body = read_data(options.json)
        json.loads(body)  # a typo is the caller's to mend: nothing is sent
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("Content-Type", "application/json"))
        return body
    if options.form:
        for _, value in options.form:
            if isinstance(value, Upload):
                open(value.path, "rb").close()  # one that cannot be read is the caller's to mend
        return MultipartForm(options.form)
    if options.data_urlencode:
        return UrlEncodedForm(options.data_urlencode)
    return read_data(options.data)


class UsageError(Exception):
    """A mistake in the command that argparse cannot see: exit 2, and nothing is sent."""


def send_options(options):
    """send()'s keywords for curl's options; UsageError for a file that cannot be read."""
    keywords = {"proxy": options.proxy, "noproxy": options.noproxy, "netrc": options.netrc,
                "context": context_from(options), "save_to": save_target(options),
                "save_errors": not options.fail}  # --fail never touches the file
    if options.user is not None:
        user, colon, password = options.user.partition(":")
        keywords["auth"] = (user, password if colon else getpass.getpass(
            "Enter host password for user '%s':" % user))  # as curl asks
    if options.cookie_jar or (options.cookie and "=" not in options.cookie):
        keywords["cookies"] = cookie_jar(options.cookie if options.cookie else None)
    if keywords["save_to"] and sys.stderr.isatty():
        keywords["progress"] = ProgressLine()
    return keywords


def save_target(options):
    """Where the body goes as it arrives: the -o file; or stdout, when that is a file or a
    pipe (a terminal sees only text), no -i head must go first, and no retry could write it
    twice. None: the body is printed once it is whole."""
    if options.output not in (None, "-"):
        return options.output
    if options.output is None and not (options.include or options.retry
                                       or sys.stdout.isatty()):
        return sys.stdout.buffer
    return None


def context_from(options):
    """The TLS context --cacert, --capath, --cert, --key and -k ask for, or None."""
    if not (options.cacert or options.capath or options.cert or options.key or options.insecure):
        return None
    if ssl is None:
        raise UsageError("this Python has no ssl module")
    try:
        return tls_context(options.cacert, options.capath, options.cert, options.key,
                           options.insecure)
    except OSError as error:  # ssl.SSLError is one too
        raise UsageError("cannot read --cacert, --capath, --cert or --key: %s" % error) from None


def cookie_jar(path):
    """A jar with the cookies of a Netscape cookie file, as curl and browsers write them;
    an empty one when there is no such file yet (-b FILE -c FILE on a first run)."""
    jar = http.cookiejar.MozillaCookieJar()
    try:
        with open(path or os.devnull) as file:
            for number, line in enumerate(file.read().splitlines(), 1):
                add_netscape_cookie(jar, line, number)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as error:
        raise UsageError("cannot read the cookies of -b: %s" % error) from None
    return jar


def add_netscape_cookie(jar, line, number):
    """Add the cookie a line of a Netscape cookie file holds, as curl writes them: an
    HttpOnly one after "#HttpOnly_" (which http.cookiejar skips before 3.10, bpo-2190), and
    a session cookie with 0 for its expiry (which http.cookiejar takes for 1970)."""
    line = line[len("#HttpOnly_"):] if line.startswith("#HttpOnly_") else line
    if not line.strip() or line.startswith("#"):
        return
    fields = line.split("\t")
    if len(fields) != 7 or not ASCII_DIGITS.fullmatch(fields[4] or "0"):
        raise ValueError("line %d is not a cookie (7 fields, tab-separated)" % number)
    domain, _, path, secure, expires, name, value = fields
    expires = int(expires or 0)  # "" as http.cookiejar writes a session cookie, 0 as curl does
    jar.set_cookie(http.cookiejar.Cookie(
        0, name, value, None, False, domain, domain.startswith("."), domain.startswith("."),
        path, True, secure == "TRUE", expires or None, not expires, None, None, {}))


class ProgressLine:
    """A download's progress on stderr: bytes so far, the total when known, and the rate,
    redrawn at most 10 times a second."""

    def __init__(self):
        self.started = self.drawn = time.monotonic()
        self.last = None

    def __call__(self, received, total):
        """Note how far the download is; redraw the line if a tenth of a second has passed."""
        self.last = (received, total)
        if time.monotonic() - self.drawn >= 0.1:
            self.draw()

    def draw(self):
        """Write the line over the one before."""
        self.drawn = now = time.monotonic()
        received, total = self.last
        rate = received / max(now - self.started, 1e-3) / 1e6
        so_far = "%d of %d bytes" % (received, total) if total else "%d bytes" % received
        sys.stderr.write("\r%s, %.1f MB/s " % (so_far, rate))
        sys.stderr.flush()

    def end(self):
        """Draw the line a last time, and end it."""
        if self.last is not None:
            self.draw()
            sys.stderr.write("\n")


def print_head(response):
    """Print the status line and headers as curl -i does, then a blank line."""
    for line in head_lines(response):
        write_out(line + "\n")
    write_out("\n")


def write_out(text):
    """Write text to stdout, a character the terminal cannot show as a replacement mark."""
    encoding = sys.stdout.encoding or "utf-8"
    sys.stdout.write(text.encode(encoding, "replace").decode(encoding))


def print_body(response, binary_too=False):
    """Write the body's bytes to stdout exactly; on a terminal, text only unless binary_too
    (-o -), as curl does."""
    terminal = sys.stdout.isatty()
    if terminal and not binary_too and not is_text(response):
        print("rest_client: the reply is binary (%s, %d bytes) and is not printed on a "
              "terminal; use -o FILE to save it (-o - prints it)"
              % (media_type(response) or "no type", len(response.content)), file=sys.stderr)
        return
    sys.stdout.flush()  # what print_head wrote goes first
    sys.stdout.buffer.write(response.content)
    if terminal and not response.content.endswith(b"\n"):
        sys.stdout.buffer.write(b"\n")  # so that the prompt starts on a line of its own


def media_type(response):
    """The reply's media type, in lower case, without parameters ("" when none)."""
    return response.headers.get("Content-Type", [""])[0].split(";")[0].strip().lower()


def is_text(response):
    """Whether a body is text to show: text/*, JSON, XML or a +json or +xml type, without
    a NUL byte; an empty body is nothing to hide."""
    kind = media_type(response)
    textual = (kind.startswith("text/") or kind in ("application/json", "application/xml")
               or kind.endswith(("+json", "+xml")))
    return not response.content or (textual and b"\0" not in response.content)


def show(line):
    """Write one line of -v output to stderr."""
    print(line, file=sys.stderr)


def main(argv=None):
    """Run the command line; return the exit status: 0 for a reply, 1 for a 4xx or 5xx
    under --fail, 2 for a mistake in the command (argparse's too), 3 when no reply came."""
    options = parse_arguments(argv)
    try:
        request, keywords = request_from(options), send_options(options)
    except OSError as error:
        print("rest_client: cannot read the body: %s" % error, file=sys.stderr)
        return 2
    except ValueError as error:  # json's words: "Expecting value: line 2 column 11 (char 12)"
        print("rest_client: --json is not JSON: %s" % error, file=sys.stderr)
        return 2
    except UsageError as error:
        print("rest_client: %s" % error, file=sys.stderr)
        return 2
    if options.insecure:
        print("rest_client: warning: -k: the server's certificate is not checked, so anyone "
              "on the way can read and change this exchange", file=sys.stderr)
    response, error = send(request, timeout=options.timeout, retries=options.retry,
                           trace=show if options.verbose else None, **keywords)
    return report(options, keywords, response, error)


def report(options, keywords, response, error):
    """Print the reply (or the error), write the cookies; return the exit status."""
    if "progress" in keywords:
        keywords["progress"].end()
    if options.cookie_jar:
        save_cookies(keywords["cookies"], options.cookie_jar)
    if isinstance(error, ValueError):  # a URL or header that cannot be sent: a typo
        print("rest_client: cannot send: %s" % error, file=sys.stderr)
        return 2
    if error is not None:
        print("rest_client: no reply: %s" % error, file=sys.stderr)
        return 3
    if options.include:
        print_head(response)
    if response.saved_to is None and not isinstance(keywords["save_to"], str):
        print_body(response, binary_too=options.output == "-")
    sys.stdout.flush()
    return 1 if options.fail and response.status_code >= 400 else 0


def save_cookies(jar, path):
    """Write the jar to a Netscape cookie file (-c), session cookies too, as curl does."""
    try:
        jar.save(path, ignore_discard=True, ignore_expires=True)
    except OSError as error:
        print("rest_client: cannot write the cookies to %s: %s" % (path, error), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
