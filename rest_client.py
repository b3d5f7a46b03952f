#!/usr/bin/env python3
"""A small HTTP client for REST APIs, in one file, on nothing but the standard library.

One call sends one request and never raises for network trouble: it returns
(Response, None) when a reply arrived, whatever its status, or (None, error) when none did.

    from rest_client import Method, Request, send

    resp, err = send(Request(Method.GET, "http://127.0.0.1:8000/users",
                             params={"sort": "-name", "limit": "10"}), timeout=5)
    if err is not None:
        print("no reply:", err)
    else:
        print(resp.status_code, resp.headers["content-type"][0], resp.json())

Up to the banner "Appendices: you can stop reading here" this file is the whole client in
plain Python, and runs on its own: it sends one request on one connection, http or https,
with headers, query parameters and a body (bytes, text, a file, or JSON from a dict or
list), and returns the reply, or the error that says what failed. A request travels
through it so, each step a method of Client:

 1. send() hands the request to the default Client. Client.send applies this request's
    changes to the client's settings (settings_for); what sends with them (sender_for)
    makes its attempts (attempts: one, in the core) and returns their outcome (outcome).
 2. attempt prepares the request (prepare: the method, URL and headers checked, the body
    built by body_for, add_headers's headers added) into an Outgoing, exchanges it, and
    asks next_request whether a redirect follows (none, in the core).
 3. exchange finds where it goes (route) and the target and headers of this hop
    (head_for), and sends it (send_on_connection): on a new Connection, opened by connect
    (TCP, open_tunnel, then start_tls for https), send_request writes it with http.client
    and reads the reply's head. replied sees the head (response_head made it a Response);
    read_body reads the body as it arrives (body_pieces), decoded (decoded), bounded by
    max_body (body_limit) and kept (keep_body); release lets the connection go.
 4. What goes wrong on the way raises an OSError (or a ValueError for what cannot be sent);
    attempt returns it as the error value, typed by what failed (explained): NameNotResolved,
    CouldNotConnect, Timeout, TLSError, ReplyCutShort, ReplyTooLarge, ... On the way the
    client tells its trace what happens (tell).

A Client holds settings given once; send() is the same call on a default client. Each
appendix is a layer: a subclass of the core's Client that owns the settings it adds and
overrides the hooks named here, in the order of httpx's layers, from the connection out:
 A. KeptConnections: one TCP connection for many requests (send_on_connection, release,
    close).
 B. TLS: the caller's CAs, client certificates, and hints on failure (context=; route,
    tls_failure); tls_context() makes a context.
 C. Proxies, chosen as curl chooses them (proxy=, noproxy=; route, open_tunnel).
 D. Credentials: Basic authentication from auth=, the URL or .netrc (netrc=; add_headers).
 E. Cookies: an http.cookiejar jar, filled by replies and sent from (cookies=; head_for,
    replied).
 F. Forms: multipart/form-data with files read as they are sent, and URL-encoded forms
    (body_for).
 G. Downloads: a body written to a file as it arrives (save_to=, progress=, save_errors=;
    settings_for, replied, body_limit, body_pieces, keep_body, outcome).
 H. Content codings: gzip and deflate replies, decoded in bounded steps (compressed=;
    add_headers, decoded).
 I. Redirects, followed by curl -L's rules when asked (follow_redirects=, max_redirects=,
    keep_method=, auto_referer=; next_request).
 J. Retries of idempotent requests, with backoff and Retry-After (retries=; attempts).
 K. Verbose: what the client tells its trace, shown in curl -v's lines (tell, reply_class).
 L. Client: the core with every layer in one list, sending with those in use; send()'s.
 M. The command line, on the public Client alone: curl's own command lines (python
    rest_client.py -fsSL URL -o file), with curl's meaning and exit statuses, and this
    client's first form, METHOD URL, where API_KEY in the environment becomes a Bearer
    token (a curl line reads no API_KEY):

    python rest_client.py GET http://127.0.0.1:8000/users -q limit=5 -i
    python rest_client.py POST http://127.0.0.1:8000/users -H "X-Test: 1" \\
        -d '{"name": "Ada", "email": "ada@example.com"}'
    python rest_client.py -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/users
"""

import functools
import http.client
import io
import itertools
import os
import re
import socket
import stat  # loaded with os already
import sys
import threading
import time
from collections import namedtuple
from urllib.parse import quote, urlencode, urljoin, urlsplit, urlunsplit

__all__ = ["Method", "Request", "Response", "Headers", "Client", "SAFE", "ALL", "MultipartForm",
           "UrlEncodedForm", "Upload", "Download", "send", "tls_context", "close", "main",
           "retry_after", "read_cookie_file", "cookie_file_text", "netrc_credentials",
           "REDIRECT_STATUSES",
           "TransferError", "NameNotResolved", "CouldNotConnect", "Timeout", "TLSError",
           "UntrustedCertificate", "ProxyError", "ProxyNotResolved", "TooManyRedirects",
           "EmptyReply", "ReceiveError", "ReplyCutShort", "UndecodableReply", "ReplyTooLarge",
           "MalformedReply"]

DEFAULT_TIMEOUT = 30.0  # seconds
ASCII_DIGITS = re.compile(r"[0-9]+")  # a length, or delay-seconds (RFC 9110 §10.2.3): ASCII
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a method or header name (RFC 9110 §5.6.2)
NON_ASCII = re.compile(r"[^\x00-\x7f]")
URL_SAFE = "/%:@!$&'()*+,;=?-._~[]"  # what quote() leaves alone in a path and query:
# brackets too, as curl, browsers and requests send them (ids[]=1, a PHP or Rails list)
USER_AGENT = "rest_client.py"
CHUNK_SIZE = 1 << 20  # bytes read at a time from a reply, and from a file to upload
MAX_BODY = 64 << 20  # bytes of a body, once decoded, kept in memory unless max_body says
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
Request.__doc__ = """What to send: a method, a full URL (or one relative to the client's
base URL), and optional headers (a dict, or (name, value) pairs when a name repeats), query
parameters (the same, added to the URL) and body (bytes, str sent as UTF-8, a dict or list
sent as JSON, a MultipartForm or an UrlEncodedForm, a binary file object or an iterable of
bytes sent as it is read, or None)."""


class Response(namedtuple("Response", "status_code body headers")):
    """What came back: the status (int), the body decoded as text, and the headers (a
    Headers dict from each name, as the server spelled it, to the list of its values).
    content is the body's exact bytes; url is the URL that answered, after redirects
    (redirects says how many); version and reason are the status line's, as received.
    After a download (send's save_to), body and content are empty, saved_to is where the
    bytes went, and saved_size how many there were. A Response is made whole (made) and
    never changed after."""

    url = None
    content = b""
    saved_to = None
    saved_size = 0
    version, reason, redirects, header_lines = "HTTP/1.1", "", 0, ()
    from_proxy = False  # a proxy's refusal to open a tunnel (a 407 to CONNECT, say)
    raw_head = None  # the head's bytes as they came, when a trace was given

    @classmethod
    def made(cls, status_code, body, headers, details):
        """A Response with the details above that differ from none ({"url": ...}: a dict, as
        keywords gathered by ** cost a call a comparison with each parameter's name apiece)."""
        response = cls(status_code, body, headers)
        response.__dict__.update(details)
        return response

    @property
    def status_line(self):
        """The status line as the server sent it: "HTTP/1.0 299 Custom Reason"."""
        return ("%s %d %s" % (self.version, self.status_code, self.reason)).rstrip()

    def json(self):
        """The body parsed as JSON; ValueError when it is not JSON, an empty body included."""
        import json
        return json.loads(self.body)

    def links(self):
        """The Link header's links (RFC 8288) by relation, lower case, as absolute URLs
        resolved against the URL that answered: {"next": "http://...", ...}; the first link
        of a relation wins."""
        found = {}
        for value in self.headers.get("Link", []):
            for target, parameters in re.findall(LINK, value):
                for name, argument in re.findall(LINK_PARAMETER, parameters):
                    if name.lower() == "rel":  # rel="next last" names two relations
                        for relation in argument.strip('"').lower().split():
                            found.setdefault(relation, urljoin(self.url or "", target))
        return found

    def head_lines(self):
        """The status line and the header lines, as received (their spacing too, when the
        reply kept its head), as curl -i prints them."""
        if self.raw_head:  # the last two: the blank line's end, and what follows it
            for line in self.raw_head.decode("latin-1").split("\n")[:-2]:
                yield line[:-1] if line.endswith("\r") else line
            return
        yield self.status_line
        for name, value in self.header_lines:
            yield "%s: %s" % (name, value)

    def head_bytes(self):
        """The head, status line to blank line, as bytes as received (as curl -i and -D
        write it), or, when the reply did not keep it, with CRLF after each line."""
        if self.raw_head:
            return self.raw_head
        lines = list(self.head_lines()) + [""]
        return "".join(line + "\r\n" for line in lines).encode("latin-1")


LINK = r'<([^>]*)>((?:\s*;\s*[^;,="]+(?:=\s*(?:"[^"]*"|[^;,"]*))?)*)'


LINK_PARAMETER = r';\s*([^;,="\s]+)\s*(?:=\s*("[^"]*"|[^;,"]*))?'


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

    def first(self, name, default=""):
        """The first value of a header, in any case, or default."""
        return (self.get(name) or [default])[0]


# ---------------------------------------------------------------------------------------
# Errors that say what failed
# ---------------------------------------------------------------------------------------

class TransferError(OSError):
    """No (whole) reply came; the subclass says why, the text names the host and port, the
    proxy or the file. reason is the lower-level error, when there was one; head_arrived
    says whether the reply's head came before the trouble (the reply is cut short, not
    missing)."""

    head_arrived = False

    def __init__(self, message, reason=None):
        super().__init__(message)
        self.reason = reason

    def __str__(self):
        """The message alone, without the lower-level error."""
        return self.args[0]


class NameNotResolved(TransferError):
    """The host's name has no address (curl's exit 6)."""


class CouldNotConnect(TransferError):
    """The connection was refused, or the host could not be reached (curl's exit 7)."""


TIMEOUT_TYPES = (TimeoutError,) if socket.timeout is TimeoutError else (socket.timeout,
                                                                         TimeoutError)


class Timeout(TransferError, *TIMEOUT_TYPES):  # socket.timeout is TimeoutError from 3.10
    """The exchange took longer than the timeout allows (curl's exit 28)."""


class TLSError(TransferError):
    """The TLS handshake failed (curl's exit 35)."""


class UntrustedCertificate(TLSError):
    """The server's certificate did not verify (curl's exit 60); the text says what would
    help."""


class ProxyError(TransferError):
    """The proxy could not be reached (curl's exit 7), or refused a tunnel (56)."""


class ProxyNotResolved(ProxyError):
    """The proxy's name has no address (curl's exit 5)."""


class TooManyRedirects(TransferError):
    """More redirects than the limit allows (curl's exit 47)."""


class EmptyReply(TransferError):
    """The server closed the connection without a word (curl's exit 52)."""


class ReceiveError(TransferError):
    """The connection failed while the reply was read (curl's exit 56)."""


class ReplyCutShort(ReceiveError):
    """A body that ended before its end: short of its length, or its connection lost
    (curl's exit 18)."""


BrokenDownload = ReplyCutShort  # its name when only downloads were said to break


class UndecodableReply(TransferError):
    """A reply in a content coding the request accepted that does not decode: no usable
    reply came, so it is an error value, never a half-decoded body."""


class ReplyTooLarge(TransferError):
    """A body larger, once decoded, than max_body allows (curl's exit 63, --max-filesize)."""


class MalformedReply(ReceiveError):
    """A reply whose head breaks HTTP's rules, so that it cannot be read safely."""


def explained(error, outgoing, head_arrived=False):
    """The error to return, typed by what failed and naming where, if it is not yet; one
    after the reply's head is marked so."""
    error = typed(error, outgoing, head_arrived)
    if head_arrived and isinstance(error, TransferError):
        error.head_arrived = True
    return error


def typed(error, outgoing, head_arrived):
    """The error as a TransferError whose type says what failed, if it is not one yet."""
    if isinstance(error, (TransferError, ValueError)):
        return error
    where = "?" if outgoing is None else urlsplit(outgoing.url).netloc
    if isinstance(error, socket.timeout) and head_arrived:
        return Timeout("the reply from %s was cut short: the rest of its body did not come "
                       "within the time allowed" % where, error)
    if isinstance(error, socket.timeout):
        return Timeout("no reply from %s within the time allowed" % where, error)
    if isinstance(error, (http.client.RemoteDisconnected, http.client.BadStatusLine)):
        return EmptyReply("%s closed the connection without a reply" % where, error)
    if isinstance(error, http.client.IncompleteRead):
        return ReplyCutShort("the reply from %s ended before its end" % where, error)
    ssl = sys.modules.get("ssl")  # loaded with http.client, where Python has it
    if isinstance(error, (ConnectionError, http.client.HTTPException)) or (
            ssl is not None and isinstance(error, ssl.SSLError)):
        return ReceiveError("the connection to %s broke: %s" % (where, error), error)
    return error


# ---------------------------------------------------------------------------------------
# The client: settings held once, and one straight path from a request to its reply
# ---------------------------------------------------------------------------------------

class Settings:
    """A client's settings, by name: the core's (see Client) and each appendix's own. A
    request may change any of them for itself (Client.send's keywords)."""

    def __init__(self, **values):
        self.__dict__.update(values)

    def changed(self, changes):
        """These settings with some changed; TypeError for a name no part of the client has."""
        unknown = set(changes) - set(self.__dict__)
        if unknown:
            raise TypeError("send() got an unexpected keyword argument %r" % unknown.pop())
        return Settings(**dict(self.__dict__, **changes))


Route = namedtuple("Route", "scheme host port context proxy proxy_authorization tunnel")
Route.__new__.__defaults__ = (None, None, None, False)
Route.__doc__ = """Where a connection goes: the origin's scheme, host and port; the TLS
context for https (None: the system's CAs); and, when a proxy is on the way, the proxy's
(host, port), its credentials, and whether the origin is reached through its tunnel
(CONNECT, for https). The core fills the first three; its appendices the rest."""

Outgoing = namedtuple("Outgoing", "method url headers body")
Outgoing.__doc__ = """A request ready to go: method, absolute URL, headers (a dict of str,
with Host first), and body (bytes, a file, an iterable of bytes, or None)."""


class Client:
    """Settings given once, used by every request this client sends (as requests' Session
    and httpx's Client); each appendix adds settings of its own, named where it begins.

        client = Client("http://127.0.0.1:8000", headers={"X-Test": "1"}, timeout=5)
        resp, err = client.send(Request("GET", "/users"))

    base_url          what a relative Request URL is resolved against
    headers           sent with every request (a request's own win)
    timeout           seconds the whole exchange may take (curl's --max-time)
    connect_timeout   seconds a connection may take to open (--connect-timeout)
    user_agent        the User-Agent sent
    repeat_headers    whether a header given twice goes on two lines (as curl sends it)
                      rather than one (RFC 9110 §5.3)
    method_as_given   whether a method goes as written ("post", as curl -X sends it; RFC
                      9110 §9.1: methods are case-sensitive) rather than in capitals
    resolve           a function (host, port) -> the address to connect to, in place of
                      the system's look-up (curl's --resolve, -4 and -6)
    max_body          the most bytes a body may have, once decoded (more is ReplyTooLarge,
                      so that no server can fill the memory); None: 64 MiB
    trace             what the client tells of each exchange (see tell), such as a
                      function that is given each line curl -v would show
    """

    def __init__(self, base_url=None, headers=None, timeout=DEFAULT_TIMEOUT,
                 connect_timeout=None, user_agent=USER_AGENT, repeat_headers=False,
                 method_as_given=False, resolve=None, max_body=None, trace=None):
        self.settings = Settings(
            base_url=base_url, headers=headers, timeout=timeout, connect_timeout=connect_timeout,
            user_agent=user_agent, repeat_headers=repeat_headers,
            method_as_given=method_as_given, resolve=resolve, max_body=max_body, trace=trace)

    def send(self, request, timeout=None, retries=None, trace=None, **changes):
        """Send the request; return (Response, None) when a reply came, else (None, error).

        Network, URL, header, timeout, TLS, proxy and file trouble never raises: the
        exception comes back as the error value, an OSError (or a ValueError for what
        cannot be sent) whose type says what failed. A body of another kind, or a keyword
        no setting of the client has, is a mistake in the program, and raises TypeError at
        once. Any setting of the client (timeout=, trace=, and each appendix's: retries=,
        save_to=, auth=, proxy=, ...) may be given for this one request."""
        if retries is not None:  # by position too, as code written for earlier releases gives it
            changes["retries"] = retries
        if trace is not None:
            changes["trace"] = trace
        settings = self.settings_for(changes, timeout)
        sender = self.sender_for(settings)
        return sender.outcome(*sender.attempts(request, settings), settings)

    def settings_for(self, changes, timeout):
        """The client's settings with this request's changes."""
        if timeout is not None and timeout != self.settings.timeout:
            changes["timeout"] = timeout
        return self.settings.changed(changes) if changes else self.settings

    def sender_for(self, settings):
        """What sends with these settings: this client (the layered Client drops idle layers)."""
        return self

    def attempts(self, request, settings):
        """Send the request as often as it takes: once, in the core (Retries sends again)."""
        return self.attempt(request, settings)

    def outcome(self, response, error, settings):
        """What send returns: the result as it is, in the core (a download's says where its
        body went)."""
        return response, error

    def attempt(self, request, settings):
        """Send the request once, and a redirect's request if next_request says so:
        (Response, None), or (None, error) when no reply came."""
        deadline = time.monotonic() + settings.timeout
        outgoing = None
        try:
            outgoing = self.prepare(request, settings)
            for hops in itertools.count():
                response = self.exchange(outgoing, settings, deadline, hops)
                following = self.next_request(outgoing, response, settings, hops)
                if following is None:
                    return response, None
                self.tell(settings, "redirecting", response, following.url)
                outgoing = following
        except (OSError, ValueError, http.client.HTTPException) as error:
            return None, explained(error, outgoing)

    def next_request(self, outgoing, response, settings, hops):
        """The request a redirect asks for, or None: the reply is the answer (always, in the
        core; Redirects follows them)."""
        return None

    def tell(self, settings, event, *details):
        """Tell the trace what happened, if it watches for it (a method of the event's
        name): "connecting", "connected" (the Connection), "tunnelling" (the CONNECT's
        head lines), "tunnelled" (the proxy's reply), "secured" (the TLS socket), "sending"
        (a request's head, as bytes), "replied" (a reply's head, as a Response),
        "redirecting" (the 3xx and the URL it names), "retrying" (the reply or error, and
        the wait). The command line's -w reports times, addresses and sizes from them."""
        watcher = getattr(settings.trace, event, None)
        if watcher is not None:
            watcher(*details)

    # -- preparing the request --------------------------------------------------------------

    def prepare(self, request, settings):
        """Turn a Request into an Outgoing; ValueError for what cannot be sent."""
        method = str(request.method) if settings.method_as_given else str(
            request.method).upper()
        if not TOKEN.fullmatch(method):
            raise ValueError("%r is not a valid HTTP method" % method)
        url = request.url if settings.base_url is None else urljoin(settings.base_url,
                                                                     request.url)
        full_url = build_url(url, request.params)
        headers = check_headers({"Host": urlsplit(full_url).netloc,
                                 "User-Agent": settings.user_agent},
                                settings.headers, request.headers, settings.repeat_headers)
        body = None if request.body is None else self.body_for(request.body, headers)
        spellings = {name.lower(): name for name in headers}
        self.add_headers(url, headers, spellings, settings)
        add_length(method, body, headers, spellings)
        return Outgoing(method, full_url, drop_empty(headers), body)

    def body_for(self, body, headers):
        """The body to send, its Content-Type added to headers if they have none; see
        body_bytes (Forms adds forms)."""
        return body_bytes(body, headers)

    def add_headers(self, url, headers, spellings, settings):
        """Add the headers the client's settings call for: none, in the core (Credentials
        adds Authorization, content codings Accept-Encoding); spellings maps the lower-case
        names of those there to theirs."""

    # -- one exchange: a request on a connection, and its reply ---------------------------

    def exchange(self, outgoing, settings, deadline, hops=0):
        """Send one request and read its reply; hops is how many redirects led to it."""
        route = self.route(outgoing.url, settings)
        target, headers = self.head_for(outgoing, route, settings)
        connection, reply = self.send_on_connection(route, outgoing.method, target, headers,
                                                    outgoing.body, settings, deadline)
        try:
            head = response_head(reply, outgoing.url)
            self.replied(outgoing, reply, head, settings)
            raw = self.read_body(reply, outgoing, settings)
        except (OSError, http.client.HTTPException) as error:  # the head came, the rest not
            connection.close()
            raise explained(error, outgoing, head_arrived=True) from None
        except BaseException:
            connection.close()
            raise
        self.release(route, connection, reply)
        return with_body(head, raw, hops)

    def route(self, url, settings):
        """Where a request to the URL goes: its scheme, host and port (TLS and Proxies add
        theirs)."""
        parts = urlsplit(url)
        return origin(parts.scheme, parts.netloc)

    def head_for(self, outgoing, route, settings):
        """The request target and headers for this hop: the path and query (RFC 9112
        §3.2.1), and the Outgoing's headers (Cookies adds the jar's); to a proxy that is
        not a tunnel, the whole URL (RFC 9112 §3.2.2: the absolute form) and the proxy's
        credentials."""
        headers = dict(outgoing.headers)
        if not route.proxy or route.tunnel:
            return request_target(outgoing.url), headers
        if route.proxy_authorization:
            headers["Proxy-Authorization"] = route.proxy_authorization
        return outgoing.url, headers

    def send_on_connection(self, route, method, target, headers, body, settings, deadline):
        """(a connection along the route, the reply to the request sent on it, its head
        read): a new connection, in the core (KeptConnections reuses one)."""
        connection = Connection(route, settings.connect_timeout, settings.resolve)
        return connection, or_close(connection, self.send_request, connection, method, target,
                                    headers, body, settings, deadline)

    def send_request(self, connection, method, target, headers, body, settings, deadline):
        """Write the request's head and body on the connection (opening it first if it is
        new), and read the reply's head."""
        connection.deadline, connection.reply_class = deadline, self.reply_class(settings)
        connection.on_head = functools.partial(self.tell, settings, "sending") if (
            settings.trace) else None
        if connection.sock is None:
            remaining = time_left(deadline)
            connection.timeout = min(remaining, connection.connect_timeout or remaining)
            early_reply = self.connect(connection, settings)
            if early_reply is not None:
                return early_reply
        keep_within(connection.sock, deadline)
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            if value.__class__ is list:  # a header repeated on lines of its own
                for line in value:
                    connection.putheader(name, line)
            else:
                connection.putheader(name, value)
        chunked = headers.get("Transfer-Encoding") == "chunked"
        connection.endheaders(pieces_of(body), encode_chunked=chunked)
        return connection.getresponse()

    def reply_class(self, settings):
        """The class that reads a reply: Reply (Verbose keeps its head's bytes for a trace)."""
        return Reply

    def connect(self, connection, settings):
        """Open the connection: TCP, then the proxy's tunnel (none, in the core), then TLS
        for https. None, or the reply that ends the exchange before the request goes (a
        proxy's refusal to open its tunnel)."""
        self.tell(settings, "connecting")
        connection.sock = connection.open_socket()
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.tell(settings, "connected", connection)
        refusal = self.open_tunnel(connection, settings)
        if refusal is not None:
            return refusal
        if connection.route.scheme == "https":
            connection.sock = self.start_tls(connection)
            self.tell(settings, "secured", connection.sock)
        return None

    def open_tunnel(self, connection, settings):
        """Open a proxy's tunnel to the origin: none, in the core (Proxies opens one); the
        proxy's reply when it refuses."""
        return None

    def start_tls(self, connection):
        """The connection's socket in TLS, the server's certificate verified, by the route's
        context or the system's CAs; Timeout or TLSError (tls_failure) when it fails."""
        import ssl
        route, sock = connection.route, connection.sock
        try:
            return (route.context or system_tls_context()).wrap_socket(
                sock, server_hostname=route.host)
        except socket.timeout as error:
            sock.close()
            raise Timeout("the TLS handshake with %s:%d took too long"
                          % (route.host, route.port), error) from None
        except (ssl.SSLError, ssl.CertificateError, OSError) as error:
            sock.close()
            raise self.tls_failure(error, route) from None

    def tls_failure(self, error, route):
        """The error for a failed TLS handshake (TLS says what would help)."""
        return TLSError("the TLS handshake with %s:%d failed: %s"
                        % (route.host, route.port, error), error)

    def replied(self, outgoing, reply, head, settings):
        """See a reply's head, before its body: the trace is told (Cookies keeps the
        cookies it sets, Downloads shows it to the download)."""
        if settings.trace is not None:
            self.tell(settings, "replied", head)

    def read_body(self, reply, outgoing, settings):
        """The reply's body, decoded as the request asked; ReplyTooLarge past the limit. A
        proxy's refusal of its tunnel was read with its head."""
        if reply.from_proxy:
            return reply.body
        limit = self.body_limit(reply, settings)
        raw = self.body_pieces(reply, settings)
        pieces = self.decoded(raw, reply, outgoing)
        if limit is not None and (pieces is not raw or reply.length is None):
            pieces = within(pieces, limit, outgoing.url)  # the size is known as it comes
        elif limit is not None and reply.length > limit:
            raise too_large(outgoing.url, limit)  # known before a byte of it is read
        return self.keep_body(pieces, reply, settings)

    def body_limit(self, reply, settings):
        """The most bytes the body may have: max_body, or 64 MiB (Downloads: no limit for a
        body written to a file)."""
        return MAX_BODY if settings.max_body is None else settings.max_body

    def body_pieces(self, reply, settings):
        """The body's pieces as they arrive (Downloads tells progress of them)."""
        return raw_pieces(reply)

    def decoded(self, pieces, reply, outgoing):
        """The pieces with the reply's content codings undone: as they came, in the core."""
        return pieces

    def keep_body(self, pieces, reply, settings):
        """The body, whole (Downloads writes it to a file instead)."""
        return b"".join(pieces)

    def release(self, route, connection, reply):
        """Let a connection go once its reply is read: closed, in the core (KeptConnections
        keeps it for the next request)."""
        connection.close()

    def close(self):
        """Close every connection the client keeps: none, in the core."""

    def __enter__(self):
        """with Client(...) as client: its connections are closed at the end."""
        return self

    def __exit__(self, *exception):
        """Close the connections, whatever ended the block."""
        self.close()


DEFAULT_CLIENT = None
DEFAULT_CLIENT_LOCK = threading.Lock()


def default_client():
    """The client send() uses, made (reading the environment) at the first request: the
    Client of the last part of this file that makes one."""
    global DEFAULT_CLIENT
    if DEFAULT_CLIENT is None:
        with DEFAULT_CLIENT_LOCK:
            if DEFAULT_CLIENT is None:
                DEFAULT_CLIENT = Client()
    return DEFAULT_CLIENT


def send(request, timeout=DEFAULT_TIMEOUT, retries=0, trace=None, **options):
    """Send the request with the default client; see Client.send. (Response, None) when a
    reply came, else (None, error)."""
    return (DEFAULT_CLIENT or default_client()).send(request, timeout, retries or None, trace,
                                                      **options)


def close():
    """Close the default client's kept connections (they are closed at exit too)."""
    if DEFAULT_CLIENT is not None:
        DEFAULT_CLIENT.close()


# -- preparing the request ----------------------------------------------------------------

def drop_empty(headers):
    """The headers without those given as None (a default the caller turned off)."""
    if None in headers.values():
        return {name: value for name, value in headers.items() if value is not None}
    return headers


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
    parts.port  # a ValueError for a port that is not a number
    # Percent-encode what may not travel raw (spaces, non-ASCII), keeping existing escapes;
    # user info never travels in the request line (it becomes an Authorization header).
    return urlunsplit((parts.scheme.lower(), ascii_authority(parts),
                       quote(without_dot_segments(parts.path), safe=URL_SAFE) or "/",
                       quote(parts.query, safe=URL_SAFE), ""))


def without_dot_segments(path):
    """The path with its "." and ".." segments resolved (RFC 3986 §5.2.4), as browsers and
    curl send it: /a/../b/./c is /b/c."""
    if "/." not in path:
        return path
    kept = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            kept = kept[:-1]
        elif segment != ".":
            kept.append(segment)
    ends_in_folder = path.endswith(("/.", "/.."))
    return "/" + "/".join(kept) + ("/" if ends_in_folder and kept else "")


def ascii_authority(parts):
    """The URL's host and port, a name in non-ASCII letters as IDNA (RFC 5890: "bücher" is
    "xn--bcher-kva"), as DNS, proxies and the Host header need it."""
    authority = parts.netloc.rpartition("@")[2]
    if not NON_ASCII.search(authority):
        return authority
    host = parts.hostname.encode("idna").decode("ascii")  # a UnicodeError is a ValueError
    return host if parts.port is None else "%s:%d" % (host, parts.port)


def request_target(url):
    """The path and query of a URL, as the request line names them (RFC 9112 §3.2.1)."""
    parts = urlsplit(url)
    return (parts.path or "/") + ("?" + parts.query if parts.query else "")


def check_headers(own, defaults, headers, repeat=False):
    """Return the client's own headers (Host, User-Agent), its defaults and the request's
    as str to str, the request's winning, or raise ValueError for any that cannot be sent.
    A name given twice (as pairs) keeps both values in order, on one line (RFC 9110 §5.3),
    or with repeat, as a list of the lines to send; None as a value drops the header."""
    checked, spellings = dict(own), {name.lower(): name for name in own}
    for given in (defaults, headers):
        names = set()
        for name, value in given.items() if hasattr(given, "items") else given or ():
            if not TOKEN.fullmatch(name):
                raise ValueError("%r is not a valid header name" % name)
            value = None if value is None else checked_value(name, value)
            key = spellings.setdefault(name.lower(), name)
            if key in names and value is not None and checked[key] is not None:
                joiner = "; " if key.lower() == "cookie" else ", "  # RFC 6265 §5.4
                value = (as_list(checked[key]) + [value]) if repeat else checked[key] + (
                    joiner + value)
            checked[key] = value
            names.add(key)
    return checked


def as_list(value):
    """A header's value as the list of its lines."""
    return value if isinstance(value, list) else [value]


def checked_value(name, value):
    """A header's value as str; ValueError for CR, LF, NUL, or what Latin-1 cannot carry."""
    value = str(value)
    if "\r" in value or "\n" in value or "\0" in value:
        raise ValueError("the value of header %s contains CR, LF or NUL" % name)
    value.encode("latin-1")  # a UnicodeEncodeError is a ValueError too
    return value


def default_content_type(body):
    """The Content-Type to send with a body whose sender named none (never a form): JSON for
    a JSON object or array; "123" or "true" is text, or octets."""
    import json
    try:
        is_json = isinstance(json.loads(body), (dict, list))
    except (ValueError, RecursionError):  # not JSON (or nested past what json can read)
        is_json = False
    if is_json:
        return "application/json"
    return "text/plain; charset=utf-8" if isinstance(body, str) else "application/octet-stream"


def body_bytes(body, headers):
    """The body as bytes (or a file or an iterable, sent as read), with a Content-Type
    added to headers if it has none: a dict or list goes as JSON; TypeError for any other
    kind of body, or one json cannot encode."""
    has_type = any(name.lower() == "content-type" for name in headers)
    if isinstance(body, (dict, list)):
        import json
        try:
            body = json.dumps(body)
        except ValueError as error:  # a circular reference: a mistake like any TypeError
            raise TypeError("the body cannot be sent as JSON: %s" % error) from None
        if not has_type:
            headers["Content-Type"] = "application/json"
    elif hasattr(body, "read") or (hasattr(body, "__iter__") and not isinstance(
            body, (bytes, str, bytearray, set, frozenset))):  # a set has no order to send
        if not has_type:
            headers["Content-Type"] = "application/octet-stream"
        return body  # a file or an iterable of bytes, sent as it is read
    elif not isinstance(body, (bytes, str)):
        raise TypeError("body must be bytes, str, a dict, a list, a form, a file, an "
                        "iterable of bytes or None, not %s" % type(body).__name__)
    elif not has_type:
        headers["Content-Type"] = default_content_type(body)
    return body.encode("utf-8") if isinstance(body, str) else body


def add_length(method, body, headers, spellings):
    """Say how long the body is: Content-Length when known (a file's size), else chunked
    (RFC 9112 §7.1). POST, PUT and PATCH without a body say 0, as http.client does."""
    if "content-length" in spellings or "transfer-encoding" in spellings:
        return
    if isinstance(body, bytes):
        headers["Content-Length"] = str(len(body))
    elif body is None:
        if method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = "0"
    else:
        size = file_size(body)
        if size is None:
            headers["Transfer-Encoding"] = "chunked"
        else:
            headers["Content-Length"] = str(size)


def file_size(body):
    """The bytes left in a regular file to send, or None (a pipe, an iterable)."""
    try:
        status = os.fstat(body.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        return status.st_size - body.tell()
    except (AttributeError, OSError, ValueError):
        return None


# -- the connection ------------------------------------------------------------------------

def time_left(deadline):
    """Seconds until the deadline; socket.timeout once it has passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise socket.timeout("timed out")
    return remaining


def keep_within(sock, deadline):
    """Let the socket wait no longer than the time left, so that a server that drips a
    byte at a time cannot stretch the exchange past it (settimeout is a system call: only
    once the time left differs by more than 50 ms)."""
    remaining = time_left(deadline)
    if abs(sock.gettimeout() - remaining) > 0.05:
        sock.settimeout(remaining)


def rewound(body):
    """A body to send again, a file read from its start (io.UnsupportedOperation, an
    OSError, for a pipe, which cannot be read twice)."""
    if hasattr(body, "read"):
        body.seek(0)
    return body


def pieces_of(body):
    """The body as http.client sends it: bytes, or an iterable of bytes (a file read a
    large piece at a time)."""
    if hasattr(body, "read"):
        return iter(functools.partial(body.read, CHUNK_SIZE), b"")
    return body


def or_close(connection, work, *arguments):
    """work(*arguments), closing the connection if anything goes wrong: after a timeout too,
    as the reply might still come, out of step with the next request."""
    try:
        return work(*arguments)
    except BaseException:
        connection.close()
        raise


class Reply(http.client.HTTPResponse):
    """http.client's reply, read from the socket before the deadline; from_proxy marks a
    proxy's refusal of a tunnel."""

    from_proxy = False

    def __init__(self, sock, deadline, *args, **options):
        super().__init__(TimedReader(sock, deadline), *args, **options)


READ_BUFFER = CHUNK_SIZE if sys.implementation.name == "pypy" else io.DEFAULT_BUFFER_SIZE


class TimedReader(io.RawIOBase):
    """A socket's bytes, no wait for them longer than the time left before the deadline:
    a server that drips its reply a byte at a time, or sends 100 Continue without end,
    cannot stretch the exchange past it (each recv would wait a whole timeout anew)."""

    def __init__(self, sock, deadline):
        self.sock, self.deadline, self.raw = sock, deadline, sock.makefile("rb", 0)

    def makefile(self, mode):
        """A buffered reader of these bytes, as http.client's reply asks its socket for."""
        return io.BufferedReader(self, READ_BUFFER)

    def readable(self):
        """Whether it can be read: it can."""
        return True

    def readinto(self, buffer):
        """Read what has come into buffer, waiting until the deadline at most."""
        keep_within(self.sock, self.deadline)
        return self.sock.recv_into(buffer)

    def close(self):
        """Let the socket go: it closes once its connection lets it go too."""
        self.raw.close()
        super().close()


class Connection(http.client.HTTPConnection):
    """A connection along a route: to the origin, or to the proxy the route names. The
    Client opens it (Client.connect) and sends on it; on_head, if set, is given the first
    bytes it sends for a request, the request's head."""

    def __init__(self, route, connect_timeout=None, resolve=None):
        host, port = route.proxy or (route.host, route.port)
        super().__init__(host, port)
        self.route, self.connect_timeout, self.resolve = route, connect_timeout, resolve
        self.deadline = None  # the request's, which its reply keeps to
        self.reply_class, self.on_head = Reply, None

    def response_class(self, sock, *args, **options):
        """The reply to the request sent (http.client makes it), read before its deadline."""
        return self.reply_class(sock, self.deadline, *args, **options)

    def open_socket(self):
        """A TCP connection to the host (or proxy); an error naming it when none opens."""
        proxy = " proxy" if self.route.proxy else ""
        try:
            # the name as bytes: it is ASCII already (IDNA), and a str would make socket
            # load the idna codec to say so
            address = self.host if self.resolve is None else self.resolve(self.host, self.port)
            return socket.create_connection((address.encode("ascii"), self.port),
                                            self.timeout)
        except socket.gaierror as error:
            kind = ProxyNotResolved if proxy else NameNotResolved
            raise kind("could not resolve%s host %s: %s" % (proxy, self.host, error.strerror),
                       error) from None
        except socket.timeout as error:
            raise Timeout("could not connect to%s %s port %d within %.3g s"
                          % (proxy, self.host, self.port, self.timeout), error) from None
        except OSError as error:
            kind = ProxyError if proxy else CouldNotConnect
            raise kind("could not connect to%s %s port %d: %s"
                       % (proxy, self.host, self.port, error.strerror or error), error) from None

    def send(self, data):
        """Send bytes; the first of a request, its head, goes to on_head."""
        if self.on_head is not None:
            on_head, self.on_head = self.on_head, None  # what follows is the body
            on_head(data)
        super().send(data)


@functools.lru_cache(maxsize=256)
def origin(scheme, authority):
    """The Route to a scheme and authority ("host:port"), kept for the next request to the
    same place: a client sends to the same few, and reading a port takes some calls."""
    parts = urlsplit(scheme + "://" + authority)
    return Route(scheme, parts.hostname, parts.port or DEFAULT_PORTS[scheme])


@functools.lru_cache(maxsize=1)
def system_tls_context():
    """The TLS context that trusts the system's CAs (and SSL_CERT_FILE's, SSL_CERT_DIR's)."""
    import ssl
    return ssl.create_default_context()


# -- the reply -----------------------------------------------------------------------------

def response_head(reply, url):
    """A Response with the reply's status line and headers; its body comes later."""
    headers, spellings, lines = Headers(), {}, reply.msg.items()
    for name, value in lines:
        key = spellings.setdefault(name.lower(), name)  # the first spelling is the key
        dict.setdefault(headers, key, []).append(value)
    lengths = dict.get(headers, spellings.get("content-length"))
    if lengths and (len(lengths) > 1 or "," in lengths[0]):
        set_one_length(reply, lengths, url)
    return Response.made(reply.status, "", headers, {
        "url": url, "reason": reply.reason, "header_lines": lines,
        "version": "HTTP/1.0" if reply.version == 10 else "HTTP/1.1",
        "from_proxy": reply.from_proxy, "raw_head": getattr(reply, "raw_head", None)})


def with_body(head, raw, redirects=0):
    """The Response with its body (the bytes, and the text in the charset it names), and
    how many redirects led to it."""
    charset = charset_of(head.headers.first("Content-Type")) or "utf-8"
    try:
        text = raw.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        text = raw.decode("utf-8", errors="replace")
    return Response.made(head.status_code, text, head.headers,
                         dict(head.__dict__, content=raw, redirects=redirects))


def charset_of(content_type):
    """The charset a Content-Type value names, in lower case, or None."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower() or None
    return None


def set_one_length(reply, values, url):
    """Read a body by Content-Length values that agree, as one (http.client reads "5, 5"
    as none); MalformedReply for values that differ, as then where the body ends cannot
    be known (RFC 9112 §6.3)."""
    lengths = list(dict.fromkeys(length.strip() for value in values
                                 for length in value.split(",")))
    if len(lengths) > 1:
        raise MalformedReply("the reply from %s has conflicting Content-Length values (%s): "
                             "where its body ends cannot be known"
                             % (urlsplit(url).netloc, " and ".join(lengths)))
    if ASCII_DIGITS.fullmatch(lengths[0]):
        reply.length = int(lengths[0])


def raw_pieces(reply, progress=None):
    """The reply's body as it arrives, as it came (progress, if given, is told how much so
    far); ReplyCutShort when it ends before its end."""
    received, total = 0, reply.length
    while True:
        piece = read_piece(reply)
        if not piece:
            break
        received += len(piece)
        yield piece
        if progress:
            progress(received, total)
    ended(reply, received)


def within(pieces, limit, url):
    """The pieces, until they come to more than limit bytes: then ReplyTooLarge."""
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > limit:
            raise too_large(url, limit)
        yield piece


def too_large(url, limit):
    """The error for a body larger than max_body allows."""
    return ReplyTooLarge("the reply from %s is larger than max_body allows (%d bytes)"
                         % (url, limit))


def ended(reply, received):
    """Mark a reply read to its end (its connection may carry the next request), or raise
    ReplyCutShort: http.client does not say when a body ends before its Content-Length."""
    if reply.length:
        raise ReplyCutShort("the reply ended after %d bytes, %d short of its length"
                            % (received, reply.length))
    reply.close()


def read_piece(reply, size=CHUNK_SIZE):
    """What has arrived of the body, up to size bytes (b"" at its end), before the
    deadline (the reply's reader keeps to it)."""
    try:
        return reply.read1(size)
    except http.client.IncompleteRead:  # a chunked body that stopped before its last chunk
        raise ReplyCutShort("the reply ended before its last chunk") from None


# =======================================================================================
# Appendices: you can stop reading here
#
# The client above is complete. Each appendix is a layer: a subclass of the core's Client
# that overrides hooks the core leaves, owns the settings it adds (each names them where it
# begins), and builds only on what comes before it. Appendix L lists them in the Client that
# send() uses; the command line, last, uses that Client alone. Delete the appendices from
# the bottom up, and what remains still runs.
# =======================================================================================

CoreClient = Client  # the core's Client, which each layer below extends


# ---------------------------------------------------------------------------------------
# Appendix A: kept connections, one TCP connection for many requests (RFC 9112 §9.3)
#
# A connection whose reply was read to its end waits in its client's pool for the next
# request to the same place, as Go's client, requests' Session and urllib3 keep theirs.
# ---------------------------------------------------------------------------------------

MAX_IDLE_PER_HOST = 32  # kept connections waiting for a request, per host
IDLE_TIMEOUT = 90.0  # seconds a kept connection may wait before it is closed (as Go's)
IDEMPOTENT_METHODS = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")  # RFC 9110 §9.2.2
DEAD_CONNECTION = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                   http.client.BadStatusLine)  # RemoteDisconnected is both of the first and last


class KeptConnections(CoreClient):
    """A client that keeps its connections, per route (so one made without verification
    never carries a request that asks for it), safe to share between threads; close()
    closes them, and they are closed at exit."""

    def __init__(self, *arguments, **settings):
        super().__init__(*arguments, **settings)
        self.pool = ConnectionPool()

    def send_on_connection(self, route, method, target, headers, body, settings, deadline):
        """Send a request on a kept connection, or a new one. A kept connection found dead
        under an idempotent request is replaced once; a POST may have reached the server,
        and is never sent twice."""
        connection = self.pool.take(route)
        if connection is not None:
            try:
                return connection, or_close(connection, self.send_request, connection, method,
                                            target, headers, body, settings, deadline)
            except DEAD_CONNECTION:
                if method not in IDEMPOTENT_METHODS:
                    raise
                body = rewound(body)
        return super().send_on_connection(route, method, target, headers, body, settings,
                                          deadline)

    def release(self, route, connection, reply):
        """Keep the connection for the next request to the same place."""
        self.pool.done(route, connection, reply)

    def close(self):
        """Close every kept connection."""
        self.pool.close()


class ConnectionPool:
    """Idle connections by route, safe to share between threads; a connection in use is in
    no pool, so none waits for another."""

    def __init__(self):
        self.lock = threading.Lock()
        self.idle = {}  # route -> [(connection, when it became idle)], the newest last
        register_for_exit(self)

    def take(self, route):
        """An idle connection for the route that the server has not closed meanwhile."""
        with self.lock:
            waiting = self.idle.get(route)
            while waiting:
                connection, since = waiting.pop()
                if time.monotonic() - since < IDLE_TIMEOUT and still_open(connection):
                    return connection
                connection.close()
        return None

    def done(self, route, connection, reply):
        """Keep a connection whose reply was read to its end, unless the reply ends it
        (Connection: close, HTTP/1.0 without keep-alive, a length unknown)."""
        if reply.will_close or connection.sock is None:
            connection.close()
            return
        with self.lock:
            waiting = self.idle.setdefault(route, [])
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


POOLS = None  # every live client's pool, closed at exit (made with the first)


def register_for_exit(pool):
    """Close the pool's connections at interpreter exit, unless it is gone by then."""
    global POOLS
    if POOLS is None:
        import atexit
        import weakref
        POOLS = weakref.WeakSet()  # a client dropped takes its pool with it
        atexit.register(lambda: [each.close() for each in list(POOLS)])
    POOLS.add(pool)


def still_open(connection):
    """Whether a kept connection may carry a request: the server has neither closed it nor
    sent anything unasked, as urllib3 and Go check: nothing is there to read."""
    import select
    try:
        return not select.select([connection.sock], [], [], 0)[0]  # EOF reads as readable
    except (ValueError, TypeError, OSError):  # no socket, or one select cannot watch
        return False


# ---------------------------------------------------------------------------------------
# Appendix B: TLS, with the system's CAs or the caller's, client certificates, and what to
# say on failure
# ---------------------------------------------------------------------------------------

UNKNOWN_ISSUER = (2, 18, 19, 20, 21)  # OpenSSL's X509_V_ERR_* for an issuer not trusted


class TLS(CoreClient):
    """A client with TLS settings of its own:

    context           an ssl.SSLContext for https, such as tls_context(cacert="ca.pem");
                      None: tls_context(), the system's CAs
    """

    def __init__(self, *arguments, context=None, **settings):
        super().__init__(*arguments, **settings)
        self.settings.context = context

    def route(self, url, settings):
        """The route, with the context https takes."""
        route = super().route(url, settings)
        if route.scheme != "https":
            return route
        return route._replace(context=settings.context or default_tls_context())

    def tls_failure(self, error, route):
        """The error for a failed handshake, naming what would help (handshake_failure)."""
        if sys.implementation.name == "pypy":
            forget_openssl_errors()
        return handshake_failure(error, route)


@functools.lru_cache(maxsize=32)
def tls_context(cacert=None, capath=None, cert=None, key=None, insecure=False, lowest=None):
    """An ssl.SSLContext for Client(context=...): it trusts the CAs in cacert (a PEM file)
    or capath (a folder) instead of the system's, shows a client certificate (cert, and key
    unless cert holds it) for mutual TLS, or, only with insecure=True, checks nothing.
    lowest ("TLSv1.2" or "TLSv1.3") is the oldest TLS version it speaks. OSError
    (ssl.SSLError too) for a file it cannot read. The same settings give the same
    context, so that requests made with them share kept connections.

    Without a context, the system's CAs are trusted, and SSL_CERT_FILE and SSL_CERT_DIR
    name others, as OpenSSL reads them."""
    import ssl
    if capath is not None:
        os.listdir(capath)  # OpenSSL would look in it only when a certificate comes
    context = ssl.create_default_context(cafile=cacert, capath=capath)
    # Python 3.13 adds VERIFY_X509_STRICT, which refuses a CA made without a key usage
    # extension (openssl req -x509 makes one); curl, urllib3 and browsers accept it.
    context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    if cert is not None:
        context.load_cert_chain(cert, key)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    versions = getattr(ssl, "TLSVersion", None)  # Python 3.7's; 3.6 has no minimum_version
    if lowest is not None and versions is not None:
        context.minimum_version = getattr(versions, lowest.replace(".", "_"))
    elif lowest is not None:
        context.options |= ssl.OP_NO_TLSv1 | ssl.OP_NO_TLSv1_1 | (
            ssl.OP_NO_TLSv1_2 if lowest == "TLSv1.3" else 0)
    return context


def default_tls_context():
    """The context for https without one given: the system's CAs (tls_context())."""
    return tls_context()


def handshake_failure(error, route):
    """The error for a failed handshake: UntrustedCertificate naming --cacert only for an
    issuer not trusted, never for a name that does not match or a certificate expired."""
    import ssl
    where = "%s:%d" % (route.host, route.port)
    verify_failed = getattr(error, "reason", None) == "CERTIFICATE_VERIFY_FAILED" or isinstance(
        error, ssl.CertificateError)
    if not verify_failed:
        return TLSError("the TLS handshake with %s failed: %s" % (where, error), error)
    text = "the certificate of %s did not verify: %s" % (where, error)
    code = getattr(error, "verify_code", None)
    if code in UNKNOWN_ISSUER or (code is None and not isinstance(error, ssl.CertificateError)):
        # Python 3.6 does not say why a certificate failed, only a name that did not match
        text += (". If the server's CA is your company's or your own, trust it with --cacert "
                 "FILE (from Python: Client(context=tls_context(cacert=FILE))) or "
                 "SSL_CERT_FILE=FILE in the environment")
    return UntrustedCertificate(text, error)


def forget_openssl_errors():
    """Empty OpenSSL's error queue, which PyPy's ssl leaves full after a failed handshake:
    the next request of this thread on a kept TLS connection would fail with the same
    error. Making an SSL object empties it."""
    import ssl
    ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO())


# ---------------------------------------------------------------------------------------
# Appendix C: proxies, chosen as curl chooses them
# ---------------------------------------------------------------------------------------

from urllib.parse import unquote

MAX_ROUTES = 256  # places a client remembers the way to


class Proxies(CoreClient):
    """A client that goes through a proxy, as curl chooses one:

    proxy, noproxy    the proxy's URL (-x; "" for none) and hosts reached without it
                      (--noproxy); from the environment, as curl reads it, when None

    The environment (http_proxy, https_proxy, all_proxy, no_proxy) is read when a client
    is made, never at import."""

    def __init__(self, *arguments, proxy=None, noproxy=None, **settings):
        super().__init__(*arguments, **settings)
        self.settings.proxy, self.settings.noproxy = proxy, noproxy
        self.environment, self.routes = environment_proxies(), {}

    def in_use(self, settings):
        """Whether a proxy may be on the way: proxy=, or the environment's."""
        return bool(settings.proxy) or settings.proxy is None and bool(
            set(self.environment) - {"no_proxy"})

    def route(self, url, settings):
        """The route, through the proxy for its host if there is one; kept for the next
        request to the same place."""
        route = super().route(url, settings)
        key = (route, settings.proxy, settings.noproxy)
        proxied = self.routes.get(key)
        if proxied is None:
            if len(self.routes) >= MAX_ROUTES:
                self.routes.clear()
            proxy = choose_proxy(route.scheme, route.host, settings, self.environment)
            proxied = self.routes[key] = route._replace(
                **dict(zip(("proxy", "proxy_authorization", "tunnel"),
                           proxy_parts(proxy, route.scheme))))
        return proxied

    def open_tunnel(self, connection, settings):
        """Ask the proxy for a tunnel to the origin (CONNECT, RFC 9110 §9.3.6), its
        credentials on the CONNECT alone; its reply, marked from_proxy, when it says no."""
        if not connection.route.tunnel:
            return None
        route = connection.route
        authority = "%s:%d" % (route.host, route.port)
        head = ["CONNECT %s HTTP/1.1" % authority, "Host: " + authority]
        if route.proxy_authorization:
            head.append("Proxy-Authorization: " + route.proxy_authorization)
        self.tell(settings, "tunnelling", head)
        connection.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        reply = Reply(connection.sock, connection.deadline, method="CONNECT")
        reply.begin()
        self.tell(settings, "tunnelled", reply)
        if reply.status == 200:
            return None
        connection.close()
        reply.from_proxy, reply.body, reply.will_close = True, reply.read(), True
        return reply


def environment_proxies():
    """http_proxy, https_proxy, all_proxy (for a scheme without its own) and no_proxy as
    curl reads them, the lower-case name first (HTTPS_PROXY, ALL_PROXY, NO_PROXY
    otherwise); read when a client is made, as curl reads them at its start. Never
    HTTP_PROXY: in CGI, a request's "Proxy:" header arrives as HTTP_PROXY, so a web
    request could choose the proxy (httpoxy, CVE-2016-5385); curl skips it too."""
    found = {}
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        for spelling in (name,) if name == "http_proxy" else (name, name.upper()):
            if spelling in os.environ:
                found.setdefault(name, os.environ[spelling])
    return found


def choose_proxy(scheme, host, settings, environment):
    """The URL of the proxy for a scheme and host, or None: proxy=, else the environment's,
    unless noproxy= (or no_proxy) names the host."""
    proxy = settings.proxy
    if proxy is None:
        proxy = environment.get(scheme + "_proxy", environment.get("all_proxy"))
    if not proxy:
        return None
    no_proxy = environment.get("no_proxy", "") if settings.noproxy is None else settings.noproxy
    return None if bypassed(host, no_proxy) else proxy


def proxy_parts(proxy, scheme):
    """(the proxy's (host, port) or None, its Proxy-Authorization or None, whether the
    origin is reached through its tunnel). Credentials in the proxy's URL go to the proxy
    alone: in Proxy-Authorization for http://, on the CONNECT for https://."""
    if not proxy:
        return None, None, False
    parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
    if parts.scheme.lower() != "http":
        raise ValueError("only http:// proxies are supported, not %r" % proxy)
    authorization = None
    if parts.username is not None:
        authorization = basic_credentials(unquote(parts.username), unquote(parts.password or ""))
    host = parts.hostname.encode("idna").decode("ascii") if NON_ASCII.search(
        parts.hostname) else parts.hostname
    return (host, parts.port or 1080), authorization, scheme == "https"  # curl's port 1080


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
    if "/" not in entry:
        return False
    import ipaddress
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, False)
    except ValueError:  # a name, not an address
        return False


def basic_credentials(user, password):
    """The Authorization value for Basic authentication (RFC 7617), in UTF-8 (its §2.1)."""
    import base64
    pair = ("%s:%s" % (user, password)).encode("utf-8")
    return "Basic " + base64.b64encode(pair).decode("ascii")


# ---------------------------------------------------------------------------------------
# Appendix D: credentials, Basic authentication from auth=, the URL, or .netrc (RFC 7617)
# ---------------------------------------------------------------------------------------

class Credentials(CoreClient):
    """A client that signs in with Basic authentication (RFC 7617):

    auth              (user, password) (curl's -u); else the URL's user info
    netrc             True (~/.netrc, or the file NETRC names) or a netrc file's path: its
                      login and password for the host, when neither of those is given
                      (--netrc)
    """

    def __init__(self, *arguments, auth=None, netrc=False, **settings):
        super().__init__(*arguments, **settings)
        self.settings.auth, self.settings.netrc = auth, netrc

    def add_headers(self, url, headers, spellings, settings):
        """Add Authorization, unless the request has one."""
        super().add_headers(url, headers, spellings, settings)
        if "authorization" not in spellings:
            credentials = credentials_for(url, settings)
            if credentials:
                headers["Authorization"] = basic_credentials(*credentials)


def credentials_for(url, settings):
    """The (user, password) to send: auth=, else the URL's user info (percent-decoded), else
    .netrc's when netrc=True (or a netrc file's path); or None."""
    if settings.auth is not None:
        return settings.auth
    if "@" in url:  # only then can there be user info; most URLs are spared the parsing
        parts = urlsplit(url)
        if parts.username is not None:
            return unquote(parts.username), unquote(parts.password or "")
    if settings.netrc:
        return netrc_credentials(urlsplit(url).hostname, settings.netrc)
    return None


def netrc_credentials(host, path=True):
    """The login and password a netrc file has for host, or None: path, or with True,
    ~/.netrc (or the file NETRC names)."""
    import netrc
    if path is True:
        path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        found = netrc.netrc(path).authenticators(host)
    except FileNotFoundError:
        return None
    except netrc.NetrcParseError as error:
        raise ValueError("cannot read %s: %s" % (path, error)) from None
    return (found[0], found[2]) if found else None


# ---------------------------------------------------------------------------------------
# Appendix E: cookies, a jar (http.cookiejar) filled by replies and sent from, by its rules
# ---------------------------------------------------------------------------------------

class Cookies(CoreClient):
    """A client that keeps a session's cookies:

    cookies           an http.cookiejar.CookieJar, filled by replies and sent from (-b, -c)
    """

    def __init__(self, *arguments, cookies=None, **settings):
        super().__init__(*arguments, **settings)
        self.settings.cookies = cookies

    def in_use(self, settings):
        """Whether there is a jar."""
        return settings.cookies is not None

    def head_for(self, outgoing, route, settings):
        """The headers, with the jar's cookies for this URL (RFC 6265 §5.4)."""
        target, headers = super().head_for(outgoing, route, settings)
        if settings.cookies is not None:
            settings.cookies.add_cookie_header(CookieExchange(outgoing, headers))
        return target, headers

    def replied(self, outgoing, reply, head, settings):
        """Keep the cookies a reply sets, as the jar's rules allow (domain, path, Secure)."""
        super().replied(outgoing, reply, head, settings)
        if settings.cookies is not None:
            settings.cookies.extract_cookies(CookieExchange(outgoing, outgoing.headers, reply),
                                             CookieExchange(outgoing, dict(outgoing.headers)))


class CookieExchange:
    """One hop as http.cookiejar asks to see it (with urllib.request's names): the
    request's URL and headers, and the reply's headers."""

    unverifiable = False

    def __init__(self, outgoing, headers, reply=None):
        self.url, self.headers, self.reply = outgoing.url, headers, reply
        parts = urlsplit(outgoing.url)
        self.type, self.host, self.origin_req_host = parts.scheme, parts.netloc, parts.hostname

    def get_full_url(self):
        """The request's URL."""
        return self.url

    def has_header(self, name):
        """Whether the request has a header, in any case."""
        return any(key.lower() == name.lower() for key in self.headers)

    def get_header(self, name, default=None):
        """A request header's value, in any case, or default."""
        return next((value for key, value in self.headers.items()
                     if key.lower() == name.lower()), default)

    def header_items(self):
        """The request's headers, as (name, value) pairs."""
        return list(self.headers.items())

    def add_unredirected_header(self, name, value):
        """Add the Cookie header the jar made."""
        self.headers[name] = value

    def info(self):
        """The reply's headers, for the jar to read Set-Cookie from."""
        return self.reply.msg


def read_cookie_file(jar, path):
    """Add to the jar the cookies of a Netscape cookie file (curl's and browsers' format);
    none from a file not there yet. OSError or ValueError for one that cannot be read."""
    try:
        with open(path) as file:
            for number, line in enumerate(file.read().splitlines(), 1):
                add_netscape_cookie(jar, line, number)
    except FileNotFoundError:
        pass


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
    if "." not in domain:  # http.cookiejar knows "localhost" as "localhost.local"
        domain += ".local"
    expires = int(expires or 0)  # "" as http.cookiejar writes a session cookie, 0 as curl does
    import http.cookiejar
    jar.set_cookie(http.cookiejar.Cookie(
        0, name, value, None, False, domain, domain.startswith("."), domain.startswith("."),
        path, True, secure == "TRUE", expires or None, not expires, None, None, {}))


def cookie_file_text(jar):
    """The jar as curl writes a Netscape cookie file: a session cookie with 0 for its
    expiry, a host's own cookie for that host alone (FALSE), "localhost" as itself."""
    lines = ["# Netscape HTTP Cookie File", "# https://curl.se/docs/http-cookies.html",
             "# This file was generated by rest_client.py! Edit at your own risk.", ""]
    for cookie in jar:
        domain = cookie.domain[:-len(".local")] if cookie.domain.endswith(".local") and (
            not cookie.domain_specified) else cookie.domain
        prefix = "#HttpOnly_" if cookie.has_nonstandard_attr("HttpOnly") else ""
        lines.append("\t".join([prefix + domain, "TRUE" if domain.startswith(".") else "FALSE",
                                cookie.path, "TRUE" if cookie.secure else "FALSE",
                                str(cookie.expires or 0), cookie.name, cookie.value or ""]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Appendix F: forms, multipart/form-data (RFC 7578) with files read as they are sent, and
# URL-encoded
# ---------------------------------------------------------------------------------------

class Forms(CoreClient):
    """A client that sends a MultipartForm or an UrlEncodedForm body as its kind says."""

    def body_for(self, body, headers):
        """A form's body, its Content-Type and length in headers; any other as the core's."""
        if isinstance(body, (MultipartForm, UrlEncodedForm)):
            return form_body(body, headers)
        return super().body_for(body, headers)


MultipartForm = namedtuple("MultipartForm", "fields")
MultipartForm.__doc__ = """A multipart/form-data body (RFC 7578): fields as a dict or (name,
value) pairs, each value a str, bytes, or an Upload, a file read from disk as it is sent."""


UrlEncodedForm = namedtuple("UrlEncodedForm", "fields")
UrlEncodedForm.__doc__ = """An application/x-www-form-urlencoded body, as an HTML form sends:
fields as a dict or (name, value) pairs."""


Upload = namedtuple("Upload", "path content_type filename")
Upload.__new__.__defaults__ = (None, None)
Upload.__doc__ = """A file in a MultipartForm: its path (or its bytes themselves), and the
content type (guessed from its name when None, none when "") and file name (the path's last
part when None; none for bytes without one) that the part names."""


def form_body(form, headers):
    """A form's body, its Content-Type in headers; a multipart body's type is always ours,
    for it names the boundary, and its length is known before it is read."""
    has_type = any(name.lower() == "content-type" for name in headers)
    if isinstance(form, UrlEncodedForm):
        if not has_type:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        return urlencode(form.fields, quote_via=quote).encode("ascii")
    body = MultipartBody(form.fields)
    for name in [name for name in headers if name.lower() == "content-type"]:
        del headers[name]
    headers["Content-Type"] = "multipart/form-data; boundary=" + body.boundary
    if not any(name.lower() in ("content-length", "transfer-encoding") for name in headers):
        headers["Content-Length"] = str(body.length)
    return body


class MultipartBody:
    """A multipart/form-data body (RFC 7578) that reads its files as it is sent, a piece at a
    time, never whole; it can be sent again (after a dead kept connection) from the start."""

    def __init__(self, fields):
        self.boundary = "------------------------" + os.urandom(8).hex()
        self.parts = [(part_head(self.boundary, name, value), value)
                      for name, value in (fields.items() if hasattr(fields, "items") else fields)]
        self.end = ("--%s--\r\n" % self.boundary).encode("ascii")
        self.length = len(self.end) + sum(len(head) + part_size(value) + 2
                                          for head, value in self.parts)

    def __iter__(self):
        """The body's bytes, a part's head, then its text or its file's pieces, and so on."""
        for head, value in self.parts:
            yield head
            if isinstance(value, Upload) and isinstance(value.path, bytes):
                yield value.path
            elif isinstance(value, Upload):
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
    filename = value.filename if isinstance(value, Upload) else None
    if isinstance(value, Upload) and filename is None and not isinstance(value.path, bytes):
        filename = os.path.basename(value.path)
    if filename is not None:
        disposition += '; filename="%s"' % form_quoted(filename)
    lines.append("Content-Disposition: " + disposition)
    if isinstance(value, Upload) and value.content_type != "":
        lines.append("Content-Type: " + (value.content_type or guessed_type(filename or "")))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")  # RFC 7578 §5.1.1: UTF-8 names


def guessed_type(filename):
    """The media type a file's name suggests, application/octet-stream when none."""
    import mimetypes
    return mimetypes.guess_type(filename)[0] or "application/octet-stream"


def form_quoted(name):
    """A field or file name inside quotes, escaped as browsers do (RFC 7578 §4.2)."""
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def part_size(value):
    """The bytes of a part's content: a file's size on disk, or the text's in UTF-8."""
    if isinstance(value, Upload) and isinstance(value.path, bytes):
        return len(value.path)
    if isinstance(value, Upload):
        return os.path.getsize(value.path)  # an OSError when it cannot be read: an error value
    return len(value.encode("utf-8") if isinstance(value, str) else value)


# ---------------------------------------------------------------------------------------
# Appendix G: downloads, a body written to a file as it arrives, never whole in memory
# ---------------------------------------------------------------------------------------

class Downloads(CoreClient):
    """A client that can write a reply's body to a file as it arrives:

    save_to           a path or a binary file object (or a Download) that gets the body
                      of a 2xx as it arrives (-o); the Response then has an empty body,
                      saved_to and saved_size; max_body=None is then no limit
    progress          if given, called with (bytes so far, total or None) as they arrive
    save_errors       False: a 4xx or 5xx leaves the file alone (--fail), and its body is
                      the Response's
    """

    def __init__(self, *arguments, save_to=None, progress=None, save_errors=True, **settings):
        super().__init__(*arguments, **settings)
        self.settings.save_to, self.settings.progress = save_to, progress
        self.settings.save_errors = save_errors

    def in_use(self, settings):
        """Whether the body goes to a file."""
        return settings.save_to is not None

    def settings_for(self, changes, timeout):
        """The settings, save_to as a Download of this request's."""
        settings = super().settings_for(changes, timeout)
        if settings.save_to is None or isinstance(settings.save_to, Download):
            return settings
        return settings.changed({"save_to": Download(settings.save_to, settings.progress,
                                                     settings.save_errors)})

    def replied(self, outgoing, reply, head, settings):
        """Show the head to the download, before its body."""
        super().replied(outgoing, reply, head, settings)
        if settings.save_to is not None:
            settings.save_to.head(head)

    def body_limit(self, reply, settings):
        """No limit but max_body's for a body that goes to the file."""
        if settings.save_to is not None and streamed(reply, settings):
            return settings.max_body
        return super().body_limit(reply, settings)

    def body_pieces(self, reply, settings):
        """The pieces as they arrive, progress told of them."""
        if settings.save_to is None:
            return super().body_pieces(reply, settings)
        return raw_pieces(reply, settings.save_to.progress)

    def keep_body(self, pieces, reply, settings):
        """A 2xx body written to the file as it arrives (b"" is kept), any other whole."""
        if settings.save_to is None or not streamed(reply, settings):
            return super().keep_body(pieces, reply, settings)
        stream(pieces, settings.save_to)
        return b""

    def outcome(self, response, error, settings):
        """The download's result (see saved)."""
        if settings.save_to is None:
            return response, error
        return saved(response, error, settings.save_to)


def streamed(reply, settings):
    """Whether a reply's body goes to the download as it arrives: a 2xx's does."""
    return settings.save_to is not None and 200 <= reply.status < 300


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
        random_part = os.urandom(4).hex()
        return open(os.path.join(folder, ".%s.%s.part" % (name, random_part)), "xb")

    def head(self, response):
        """See the head of each reply, before its body (curl -i writes it out)."""

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
        else:
            self.file.flush()

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


def stream(pieces, download):
    """Write a body's pieces to the download as they arrive; the error that ends them
    (ReplyCutShort, UndecodableReply, ...) when it fails half-way."""
    download.begin()
    for piece in pieces:
        download.write(piece)
    download.complete = True


def saved(response, error, download):
    """send()'s result for a download: an empty body that says where the bytes went and
    how many; a reply whose body was kept in memory (a 3xx, a 4xx) is written there now,
    unless save_errors is False and it is a 4xx or 5xx (then it is the Response's)."""
    if error is None and not download.save_errors and response.status_code >= 400:
        return response, None  # the target is left as it was
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
    return Response.made(response.status_code, "", response.headers,
                         dict(response.__dict__, content=b"", saved_to=download.target,
                              saved_size=download.size)), None


# ---------------------------------------------------------------------------------------
# Appendix H: content codings, gzip and deflate replies decoded as they arrive, in bounded
# steps (RFC 9110 §8.4)
# ---------------------------------------------------------------------------------------

ACCEPT_ENCODING = "gzip, deflate"  # what the client asks for unless the caller says otherwise
ACCEPT_ENCODING_NAME = "Accept-Encoding"


class ContentCodings(CoreClient):
    """A client that asks for compressed replies and decodes them:

    compressed        whether to ask for gzip and deflate replies; a reply in a coding the
                      request's Accept-Encoding named is decoded, whoever set it
    """

    def __init__(self, *arguments, compressed=True, **settings):
        super().__init__(*arguments, **settings)
        self.settings.compressed = compressed

    def add_headers(self, url, headers, spellings, settings):
        """Add Accept-Encoding, unless the request has one (kept under one spelling, for
        decoded to find)."""
        super().add_headers(url, headers, spellings, settings)
        if settings.compressed and "accept-encoding" not in spellings:
            headers[ACCEPT_ENCODING_NAME] = ACCEPT_ENCODING
        elif "accept-encoding" in spellings:
            headers[ACCEPT_ENCODING_NAME] = headers.pop(spellings["accept-encoding"])

    def decoded(self, pieces, reply, outgoing):
        """The pieces with each coding the request accepted undone."""
        accepted = ", ".join(as_list(outgoing.headers.get(ACCEPT_ENCODING_NAME, "")))
        for inflater in inflaters_for(reply.msg.get_all("Content-Encoding") or [], accepted):
            pieces = inflater.undo(pieces)
        return pieces


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
    """Undoes one gzip or deflate coding as the body arrives, in bounded steps: a small
    gzip reply can hold gigabytes of zeros."""

    def __init__(self, coding):
        import zlib  # here: a plain request never needs it
        self.zlib, self.coding, self.opening = zlib, coding, b""
        # deflate's engine waits for the first two bytes, which say which format it is
        self.engine = None if coding == "deflate" else zlib.decompressobj(16 + zlib.MAX_WBITS)

    def undo(self, pieces):
        """The pieces decoded, CHUNK_SIZE bytes at most at a time, however much they hold;
        UndecodableReply for data that does not decode, or that ends before its end. An
        empty body has nothing to decode: a HEAD reply, a 204 or a 304 names the coding of
        a body it does not carry."""
        fed = False
        for piece in filter(None, pieces):  # an empty piece says nothing
            fed = True
            if self.engine is None:
                piece = self.opening = self.opening + piece
                if len(piece) < 2:
                    continue
                self.engine = self.deflate_engine(piece)
            data = self.step(piece)
            yield data
            while self.engine.unconsumed_tail or len(data) == CHUNK_SIZE:
                data = self.step(self.engine.unconsumed_tail)  # what did not fit yet
                yield data
        if fed:
            yield self.finish()

    def deflate_engine(self, opening):
        """The engine for deflate: the zlib format (RFC 9110 §8.4.1.2) when the first two
        bytes are a zlib header (RFC 1950 §2.2), else bare deflate, which some servers send
        and browsers take."""
        zlib_header = opening[0] & 0x0F == 8 and (opening[0] << 8 | opening[1]) % 31 == 0
        return self.zlib.decompressobj(self.zlib.MAX_WBITS if zlib_header
                                       else -self.zlib.MAX_WBITS)

    def step(self, data):
        """Decode data up to CHUNK_SIZE bytes (the rest waits in the engine's
        unconsumed_tail); UndecodableReply if it does not decode."""
        try:
            return self.engine.decompress(data, CHUNK_SIZE)
        except self.zlib.error as error:
            raise UndecodableReply("the %s reply does not decode: %s"
                                   % (self.coding, error)) from None

    def finish(self):
        """The last decoded bytes, once the body has ended; UndecodableReply if it ended early."""
        rest = self.engine.flush() if self.engine else b""
        if self.engine is None or not self.engine.eof:
            raise UndecodableReply("the %s reply does not decode: it ends before its end"
                                   % self.coding)
        return rest


# ---------------------------------------------------------------------------------------
# Appendix I: redirects, followed as curl -L follows them when asked
# ---------------------------------------------------------------------------------------

MAX_REDIRECTS = 10
REDIRECT_STATUSES = (301, 302, 303, 307, 308)  # RFC 9110 §15.4
CREDENTIAL_HEADERS = ("authorization", "cookie", "proxy-authorization")  # never sent on to
# another host or from https to http by a redirect (RFC 9110 §15.4: a client should not)
SAFE, ALL = "safe", "all"  # follow_redirects: GET and HEAD only (the default), or every method


class Redirects(CoreClient):
    """A client that follows redirects:

    follow_redirects  SAFE (GET and HEAD only, at most max_redirects, then the 3xx is the
                      answer), ALL (every method, by curl -L's rules, and more than
                      max_redirects is TooManyRedirects) or None (never)
    max_redirects     how many at most (10)
    keep_method       with ALL, the method stays on every hop (curl -X with -L), its body
                      kept or dropped as for the method this names (POST for curl's -d)
    auto_referer      whether a redirect sends the URL it came from as Referer (-e ";auto")
    """

    def __init__(self, *arguments, follow_redirects=SAFE, max_redirects=MAX_REDIRECTS,
                 keep_method=None, auto_referer=False, **settings):
        super().__init__(*arguments, **settings)
        self.settings.follow_redirects, self.settings.max_redirects = (follow_redirects,
                                                                       max_redirects)
        self.settings.keep_method, self.settings.auto_referer = keep_method, auto_referer

    def in_use(self, settings):
        """Whether redirects are followed."""
        return bool(settings.follow_redirects)

    def next_request(self, outgoing, response, settings, hops):
        """The request that follows a redirect, or None when the reply is the answer."""
        if response.status_code not in REDIRECT_STATUSES:
            return None
        return next_request(outgoing, response, settings, hops)


def next_request(outgoing, response, settings, hops):
    """The request that follows a redirect, or None when the reply is the answer. SAFE
    follows GET and HEAD only and lets the last 3xx be the answer; ALL follows curl -L's
    rules and says TooManyRedirects past the limit."""
    mode = settings.follow_redirects
    location = response.headers.first("Location", None)
    if not mode or location is None or response.status_code not in REDIRECT_STATUSES:
        return None
    if mode == SAFE and outgoing.method not in ("GET", "HEAD"):
        return None
    if hops >= settings.max_redirects:
        if mode == SAFE:
            return None
        raise TooManyRedirects("more than %d redirects, the last to %s"
                               % (settings.max_redirects, location))
    new_url = urljoin(outgoing.url, location.strip().replace(" ", "%20"))
    if urlsplit(new_url).scheme.lower() not in ("http", "https"):
        return None
    method, body, headers = redirected(outgoing, response.status_code, settings.keep_method)
    if not credentials_may_follow(outgoing.url, new_url):
        headers = {name: value for name, value in headers.items()
                   if name.lower() not in CREDENTIAL_HEADERS}
    if settings.auto_referer:  # curl -e ";auto": each hop names the URL it came from
        headers = {name: value for name, value in headers.items() if name.lower() != "referer"}
        headers["Referer"] = outgoing.url  # without user info or #fragment (RFC 9110 §10.1.3)
    headers["Host"] = urlsplit(sendable_url(new_url)).netloc
    return Outgoing(method, sendable_url(new_url), headers, body)


def redirected(outgoing, status, keep_method):
    """The method, body and headers after a redirect (RFC 9110 §15.4, as curl and browsers
    do): a 303, and a 301 or 302 to a POST, go on as GET without the body; a 307 or 308
    keeps both. With keep_method (curl's -X), the method stays, and the body goes as it
    would for the method keep_method names (POST for curl's -d)."""
    method, body = outgoing.method, rewound(outgoing.body)
    rules = keep_method or method
    if (status == 303 and rules != "HEAD") or (status in (301, 302) and rules == "POST"):
        method, body = (method if keep_method else "GET"), None
    headers = dict(outgoing.headers)
    if body is None:
        for name in [name for name in headers if name.lower() in (
                "content-type", "content-length", "transfer-encoding")]:
            del headers[name]
    return method, body, headers


def credentials_may_follow(url, new_url):
    """Whether credentials may follow a redirect: to the same host and port, never from https
    to http; http to https from and to the default ports counts as the same place."""
    old, new = urlsplit(url), urlsplit(new_url)
    if (old.scheme, new.scheme) == ("https", "http") or old.hostname != new.hostname:
        return False
    ports = (old.port or DEFAULT_PORTS[old.scheme], new.port or DEFAULT_PORTS[new.scheme])
    return ports[0] == ports[1] or ports == (80, 443)


# ---------------------------------------------------------------------------------------
# Appendix J: retries of idempotent requests, after a backoff or as Retry-After asks
# ---------------------------------------------------------------------------------------

RETRY_STATUSES = (429, 503)  # Too Many Requests, Service Unavailable: "try again later"
MAX_RETRY_AFTER = 30.0  # seconds: a server asking for longer gets this much
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 8.0  # seconds, without a Retry-After


class Retries(CoreClient):
    """A client that sends a request again when no reply came, or the reply said to try
    again later:

    retries           how many more times an idempotent request is sent (RFC 9110 §9.2.2)
                      while no reply comes or the reply is 429 or 503; see retry_wait. POST
                      and PATCH are never sent twice: the server may have acted on the first
    """

    def __init__(self, *arguments, retries=0, **settings):
        super().__init__(*arguments, **settings)
        self.settings.retries = retries

    def in_use(self, settings):
        """Whether a request may be sent again."""
        return settings.retries > 0

    def attempts(self, request, settings):
        """Send the request, and again while retries and worth_retrying say so; the last
        result."""
        method = str(request.method).upper()
        for attempt in itertools.count():
            response, error = super().attempts(request, settings)
            if attempt >= settings.retries or not worth_retrying(method, response, error) or (
                    spilled(getattr(settings, "save_to", None))):
                return response, error
            wait = retry_wait(response, attempt)
            self.tell(settings, "retrying", response, error, wait)
            time.sleep(wait)


def spilled(download):
    """Whether part of a body went where a retry cannot take it back: a file object (a
    pipe, say), not a path, whose file beside the target starts again."""
    return download is not None and download.size > 0 and not download.is_path


def worth_retrying(method, response, error):
    """Whether to send a request again: it must be idempotent (RFC 9110 §9.2.2), and no
    reply came (for a request that could be sent) or the reply said to try again later."""
    if method not in IDEMPOTENT_METHODS or isinstance(error, (ValueError, ReplyTooLarge,
                                                               MalformedReply)):
        return False
    return response is None or response.status_code in RETRY_STATUSES


def retry_wait(response, attempt):
    """Seconds to wait before retry number attempt + 1 (counting from 0).

    The reply's Retry-After, in seconds or as an HTTP date (RFC 9110 §10.2.3), capped at
    30 s; without one, 0.5 s doubled each time, with random jitter of up to half the wait
    either way, so that many clients do not come back at the same moment; at most 8 s.
    """
    asked = retry_after(response) if response is not None else None
    if asked is not None:
        return min(asked, MAX_RETRY_AFTER)
    import random
    wait = FIRST_BACKOFF * 2 ** min(attempt, 16)
    return min(random.uniform(wait / 2, wait * 1.5), MAX_BACKOFF)


def retry_after(response):
    """The seconds a reply's Retry-After asks for (0 for a date past), or None."""
    import email.utils
    from datetime import datetime, timezone
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


# ---------------------------------------------------------------------------------------
# Appendix K: verbose, what the client tells its trace shown as curl -v shows it
# ---------------------------------------------------------------------------------------

class Verbose(CoreClient):
    """A client whose trace, a function, is given each line curl -v would show: the
    request's head and the reply's (credentials as ***), each retry and why; with a trace
    whose detailed is true, connections, tunnels, TLS and redirects too."""

    def in_use(self, settings):
        """Whether there is a trace."""
        return settings.trace is not None

    def tell(self, settings, event, *details):
        """Tell the trace, and give it the event's lines."""
        super().tell(settings, event, *details)
        trace = settings.trace
        if trace is not None:
            for line in event_lines(event, details, getattr(trace, "detailed", False)):
                trace(line)

    def reply_class(self, settings):
        """A reply that keeps its head's bytes, for a trace (curl -i, -v and -D show a head
        so, its spacing kept): a few calls more than Reply's."""
        return HeadKeepingReply if settings.trace else Reply


def event_lines(event, details, detailed):
    """The lines curl -v shows for an event; those of connections, tunnels, TLS and
    redirects only when detailed."""
    if event == "sending":
        return request_head_lines(details[0])
    if event == "replied":
        return ["< " + masked(line) for line in details[0].head_lines()] + ["<"]
    if event == "retrying":
        response, error, wait = details
        return ["* %s: retrying in %.3g s (%s)" % (why(response, error), wait,
                                                   how_long(response))]
    if not detailed:
        return []
    return detailed_lines(event, details)


def detailed_lines(event, details):
    """The lines curl -v shows of a connection, a tunnel, TLS or a redirect."""
    if event == "connected":
        connection = details[0]
        return ["* Connected to %s (%s) port %d"
                % (connection.host, connection.sock.getpeername()[0], connection.port)]
    if event == "tunnelling":
        return ["> " + masked(line) for line in details[0]]
    if event == "tunnelled":
        reply = details[0]
        return ["< HTTP/1.%d %d %s" % (reply.version % 10, reply.status, reply.reason)]
    if event == "secured":
        tls = details[0]
        subject = dict(item[0] for item in (tls.getpeercert() or {}).get("subject", ()))
        return ["* %s connection, server certificate subject: CN=%s"
                % (tls.version(), subject.get("commonName", "?"))]
    if event == "redirecting":
        return ["* following the %d to %s" % (details[0].status_code, details[1])]
    return []


def request_head_lines(data):
    """The lines of a request's head as it goes out, its credentials masked."""
    head = bytes(data).split(b"\r\n\r\n", 1)[0].decode("latin-1")
    return ["> " + masked(line) for line in head.split("\r\n")] + [">"]


def masked(line):
    """A header line with its credential shown as ***; an authorization keeps its scheme."""
    name, colon, value = line.partition(":")
    if colon and name.lower() in ("authorization", "proxy-authorization"):
        return "%s: %s ***" % (name, value.split()[0] if value.split() else "")
    if colon and name.lower() in ("cookie", "set-cookie"):
        return "%s: ***" % name
    return line


def why(response, error):
    """Why a retry is made, in a few words."""
    if response is not None:
        return "%d %s" % (response.status_code, response.reason)
    return "no reply (%s)" % error


def how_long(response):
    """Where the wait before a retry comes from."""
    if response is not None and retry_after(response) is not None:
        return "Retry-After: %s" % response.headers["Retry-After"][0]
    return "backoff"


class HeadKeepingReply(Reply):
    """A reply that keeps its head's bytes as they came, for a trace (curl -i, -v and -D
    show a head so, its spacing kept), in raw_head: a few calls more than Reply's."""

    def begin(self):
        """Read the head as http.client does, keeping the last one's lines (after 1xx)."""
        file, self.fp = self.fp, HeadLines(self.fp)
        try:
            super().begin()
        finally:
            self.raw_head, self.fp = b"".join(self.fp.lines), file


class HeadLines:
    """A reply's file as http.client reads a head from it, line by line: the lines of the
    last head are kept."""

    def __init__(self, file):
        self.file, self.lines = file, []

    def readline(self, limit=-1):
        """A line, kept; a status line after a blank one starts a new head (after a 1xx)."""
        line = self.file.readline(limit)
        if self.lines and self.lines[-1] in (b"\r\n", b"\n"):
            self.lines = []
        self.lines.append(line)
        return line

    def __getattr__(self, name):
        """Anything else is the file's own."""
        return getattr(self.file, name)


# ---------------------------------------------------------------------------------------
# Appendix L: the Client, the core with every layer, and send() on it
#
# Each layer overrides hooks of its own, or adds to a hook (head_for, replied,
# add_headers) what no other layer touches, so their order changes no answer.
# ---------------------------------------------------------------------------------------

class Client(Retries, Redirects, ContentCodings, Downloads, Forms, Cookies, Credentials,
             Proxies, TLS, KeptConnections, Verbose):
    """A client with every appendix: kept connections, TLS settings, proxies, credentials,
    cookies, forms, downloads, content codings, redirects, retries and a verbose trace.
    Its settings are the core's Client's and each layer's (see each):

        client = Client("http://127.0.0.1:8000", headers={"X-Test": "1"}, retries=2)
        resp, err = client.send(Request("GET", "/users"))
    """

    sender = None  # what sends with the client's own settings, made at its first request

    def sender_for(self, settings):
        """This client with only the layers these settings use (in_use), so that a layer
        turned off costs a request nothing: made once for the client's own settings, and
        for each request's changes. A subclass's hooks need every layer: it sends itself."""
        if type(self) is not Client:
            return self
        if settings is self.settings and self.sender is not None:
            return self.sender
        layers = tuple(layer for layer in Client.__bases__
                       if getattr(layer, "in_use", None) is None or layer.in_use(self, settings))
        sender = object.__new__(layered(layers))
        for name, value in vars(self).items():  # the same settings, pool and routes, set
            setattr(sender, name, value)  # one by one: CPython reads those fastest
        if settings is self.settings:
            self.sender = sender
        return sender


@functools.lru_cache(maxsize=None)
def layered(layers):
    """The Client made of these layers alone, in their order (at most one per subset)."""
    return type("Client", layers or (CoreClient,), {"__doc__": Client.__doc__})


# ---------------------------------------------------------------------------------------
# Appendix M: the command line, curl's own lines (below), and this client's first form,
# METHOD URL. It uses the public API alone: Client, Request, Response, the error types,
# Download (save_to's), tls_context, retry_after and the cookie files' functions.
# ---------------------------------------------------------------------------------------


def main(argv=None):
    """Run the command line: curl's form, or this client's first one (METHOD URL ...);
    return the exit status. Ctrl-C ends it with 130 and one line."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if first_form(argv):
            return main_first_form(argv)
        if argv in (["-h"], ["--help"]):
            print(curl_usage())
            return 0
        return curl_main(argv)
    except KeyboardInterrupt:
        print("rest_client: interrupted", file=sys.stderr)
        return 130


def first_form(argv):
    """Whether a command line is this client's first form: its first word that is neither
    an option nor an option's value is a method (GET URL -i, and --fail GET URL too)."""
    for before, word in zip([""] + argv, argv):
        if not (word.startswith("-") and word != "-") and not takes_value(before):
            return word.isupper() and word.isalpha() and TOKEN.fullmatch(word) is not None and (
                word != argv[-1])
    return False


FIRST_FORM_VALUES = ("-q", "-j", "--timeout")  # the first form's own options with a value


def takes_value(option):
    """Whether a word is an option that takes the next word as its value, in either form
    (-H, --data; -sSo, whose last letter does)."""
    if option in FIRST_FORM_VALUES:
        return True
    if option.startswith("--"):
        return OPTION_NAMES.get(option, (False,))[0]
    return option.startswith("-") and OPTION_NAMES.get("-" + option[-1:], (False,))[0]


# -- the first form: METHOD URL [-H ...] [-q ...] [-d BODY | -j JSON] ... -----------------

def bad_argument(message):
    """The error an argparse type gives for a value it cannot take."""
    import argparse
    return argparse.ArgumentTypeError(message)


def header_argument(text):
    """argparse type for -H: "Name: value" -> (name, value)."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise bad_argument("headers look like 'Name: value', not %r" % text)
    return name.strip(), value.strip()


def param_argument(text):
    """argparse type for -q: "name=value" -> (name, value)."""
    name, equals, value = text.partition("=")
    if not equals:
        raise bad_argument("query parameters look like 'name=value', not %r" % text)
    return name, value


def seconds_argument(text):
    """argparse type for --timeout: a number of seconds above 0."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):  # nan compares False to everything
        raise bad_argument("must be a number of seconds above 0, not %r" % text)
    return seconds


def count_argument(text):
    """argparse type for --retry: a whole number, 0 or more."""
    if not text.isdigit():
        raise bad_argument("must be a whole number, 0 or more, not %r" % text)
    return int(text)


def form_argument(text):
    """argparse type for -F: "name=value", "name=@path" or "name=@path;type=image/png"
    -> (name, value or Upload), as curl reads them."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise bad_argument("form fields look like 'name=value' or 'name=@FILE', "
                                         "not %r" % text)
    if not value.startswith("@"):
        return name, value
    path, *parameters = value[1:].split(";")
    named = dict(parameter.strip().partition("=")[::2] for parameter in parameters)
    return name, Upload(path, named.get("type"), named.get("filename"))


def parse_arguments(argv):
    """Read the command line."""
    import argparse
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
                        help="seconds the whole exchange may take (default: %(default)s)")
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
        import json
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
        import getpass
        keywords["auth"] = (user, password if colon else getpass.getpass(
            "Enter host password for user '%s':" % user))  # as curl asks
    if options.cookie_jar or (options.cookie and "=" not in options.cookie):
        keywords["cookies"] = cookie_jar(options.cookie if options.cookie else None)
    if keywords["save_to"] and sys.stderr.isatty():
        keywords["progress"] = ProgressLine()
    return keywords


def save_target(options):
    """Where the body goes as it arrives: the -o file; or stdout, when that is a file or a
    pipe (a terminal sees only text), after the head with -i (a body cut short there is
    not sent again: what went out cannot be taken back). None: the body is printed once
    it is whole."""
    if options.output not in (None, "-"):
        return options.output
    if options.output is None and not sys.stdout.isatty():
        return HeadFirst(sys.stdout.buffer) if options.include else sys.stdout.buffer
    return None


class HeadFirst(Download):
    """stdout for -i: the answer's head (not a redirect's that was followed) goes just
    before its body, which is written as it arrives."""

    answer = None

    def head(self, response):
        """Note the latest head: the last one before the body is the answer's."""
        self.answer = response

    def write(self, data):
        """Write the answer's head once, then the body."""
        if self.answer is not None:
            lines = "".join(line + "\n" for line in self.answer.head_lines()) + "\n"
            self.answer = None
            self.target.write(lines.encode("latin-1", "replace"))
        super().write(data)


def context_from(options):
    """The TLS context --cacert, --capath, --cert, --key and -k ask for, or None."""
    if not (options.cacert or options.capath or options.cert or options.key or options.insecure):
        return None
    if not hasattr(http.client, "HTTPSConnection"):
        raise UsageError("this Python has no ssl module")
    try:
        return tls_context(options.cacert, options.capath, options.cert, options.key,
                           options.insecure)
    except OSError as error:  # ssl.SSLError is one too
        raise UsageError("cannot read --cacert, --capath, --cert or --key: %s" % error) from None


def cookie_jar(path):
    """A jar with the cookies of a Netscape cookie file, as curl and browsers write them;
    an empty one when there is no such file yet (-b FILE -c FILE on a first run)."""
    import http.cookiejar
    jar = http.cookiejar.CookieJar()
    try:
        if path:
            read_cookie_file(jar, path)
    except (OSError, ValueError) as error:
        raise UsageError("cannot read the cookies of -b: %s" % error) from None
    return jar


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
    for line in response.head_lines():
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


def main_first_form(argv):
    """Run METHOD URL ...; the exit status: 0 for a reply, 1 for a 4xx or 5xx under --fail,
    2 for a mistake in the command (argparse's too), 3 when no reply came."""
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
        what = "incomplete reply" if getattr(error, "head_arrived", False) else "no reply"
        print("rest_client: %s: %s" % (what, error), file=sys.stderr)
        return 3
    if options.include and not (isinstance(keywords["save_to"], HeadFirst)
                                and response.saved_to is not None):
        print_head(response)
    if response.saved_to is None and not isinstance(keywords["save_to"], str):
        print_body(response, binary_too=options.output == "-")
    sys.stdout.flush()
    return 1 if options.fail and response.status_code >= 400 else 0


def save_cookies(jar, path):
    """Write the jar to a Netscape cookie file (-c), session cookies too, as curl does; "-"
    is stdout."""
    try:
        if path == "-":
            write_bytes(cookie_file_text(jar).encode("utf-8"))
            return
        with open(path, "w") as file:
            file.write(cookie_file_text(jar))
    except OSError as error:
        print("rest_client: cannot write the cookies to %s: %s" % (path, error), file=sys.stderr)


# -- curl's form: curl's own lines, with curl's meaning and exit statuses -------------------

# Each option: its names, the value it takes (None for a flag), where it goes (a list:
# repeatable), and what it does, as --help says.
CURL_OPTIONS = [
    ("-X --request", "<method>", "method", "Send this method (GET, or POST with a body)"),
    ("-H --header", "<header>", "headers[]", "Send this header (\"Name:\" removes one)"),
    ("-A --user-agent", "<name>", "agent", "Send this User-Agent"),
    ("-e --referer", "<URL>", "referer", "Send this Referer (\";auto\": the last URL on -L)"),
    ("-u --user", "<user:password>", "user", "Send these Basic credentials (asks if no :)"),
    ("--oauth2-bearer", "<token>", "bearer", "Send this OAuth 2 Bearer token (RFC 6750)"),
    ("-b --cookie", "<data|file>", "cookies[]", "Send name=value, or a cookie file's cookies"),
    ("-c --cookie-jar", "<file>", "jar", "Write the cookies to a Netscape cookie file"),
    ("-k --insecure", None, "insecure", "Check no server certificate (warns)"),
    ("--cacert", "<file>", "cacert", "Trust the CAs in this PEM file"),
    ("--capath", "<dir>", "capath", "Trust the CAs in this folder (c_rehash'ed)"),
    ("-E --cert", "<file>", "cert", "Show this client certificate (mutual TLS)"),
    ("--key", "<file>", "key", "The client certificate's private key"),
    ("--tlsv1.2", None, "tlsv1_2", "Speak TLS 1.2 or later"),
    ("--tlsv1.3", None, "tlsv1_3", "Speak TLS 1.3 or later"),
    ("-x --proxy", "<URL>", "proxy", "Go through this proxy"),
    ("--noproxy", "<hosts>", "noproxy", "Reach these hosts without the proxy"),
    ("-n --netrc", None, "netrc", "Take credentials from ~/.netrc"),
    ("--netrc-file", "<file>", "netrc_file", "Take credentials from this netrc file"),
    ("--compressed", None, "compressed", "Ask for a compressed reply (always decoded)"),
    ("-d --data --data-ascii", "<data>", "data[]", "POST this data (@file: its lines joined)"),
    ("--data-raw", "<data>", "data[]", "POST this data, an @ as it is"),
    ("--data-binary", "<data>", "data[]", "POST this data (@file: its exact bytes)"),
    ("--data-urlencode", "<data>", "data[]", "POST this data URL-encoded"),
    ("--json", "<data>", "data[]", "POST this JSON, with JSON's Content-Type and Accept"),
    ("-F --form", "<name=content>", "form[]", "POST this multipart form field or @file"),
    ("-T --upload-file", "<file>", "uploads[]", "PUT this file (- for stdin, chunked)"),
    ("-G --get", None, "get", "Put the data in the URL's query, and GET"),
    ("-L --location", None, "location", "Follow redirects"),
    ("--max-redirs", "<num>", "max_redirs", "Follow at most this many redirects (50)"),
    ("--proto", "<protocols>", "proto", "Use only these schemes (=https: https alone)"),
    ("--proto-redir", "<protocols>", "proto_redir", "Follow redirects to these schemes only"),
    ("--url", "<URL>", "urls[]", "Fetch this URL too"),
    ("-g --globoff", None, "globoff", "Take [] and {} in URLs as written, not as globs"),
    ("-K --config", "<file>", "config", "Read options from this file (- for stdin)"),
    ("-o --output", "<file>", "outputs[]", "Write the body to this file"),
    ("-O --remote-name", None, "outputs[]", "Write the body to a file named as the URL's"),
    ("-J --remote-header-name", None, "header_name",
     "With -O, name the file as Content-Disposition does"),
    ("--output-dir", "<dir>", "output_dir", "Write -o's and -O's files in this folder"),
    ("--create-dirs", None, "create_dirs", "Make the folders -o's file needs"),
    ("-D --dump-header", "<file>", "dump_header", "Write the replies' heads to this file"),
    ("-i --include", None, "include", "Write the reply's head before its body"),
    ("-I --head", None, "head", "Send HEAD, and write the head alone"),
    ("-v --verbose", None, "verbose", "Show the exchange on stderr"),
    ("--trace-ascii", "<file>", "trace_ascii", "Write the exchange to this file"),
    ("--stderr", "<file>", "stderr", "Write what goes to stderr to this file (- stdout)"),
    ("-s --silent", None, "silent", "Show no progress, warning or error"),
    ("-S --show-error", None, "show_error", "Show errors, even with -s"),
    ("-# --progress-bar", None, "progress_bar", "Show the progress as a bar of #"),
    ("-f --fail", None, "fail", "Write nothing for a 4xx or 5xx, and exit 22"),
    ("--fail-with-body", None, "fail_with_body", "Write the body of a 4xx or 5xx, exit 22"),
    ("-w --write-out", "<format>", "write_out", "Write this after the body (%{http_code})"),
    ("-m --max-time", "<seconds>", "max_time", "Give up after this long"),
    ("--connect-timeout", "<seconds>", "connect_timeout", "Give up connecting after this"),
    ("--max-filesize", "<bytes>", "max_filesize", "Refuse a body larger than this (1k, 2M)"),
    ("--limit-rate", "<speed>", "limit_rate", "Read at most this many bytes a second"),
    ("--retry", "<num>", "retry", "Retry a timeout, 408, 429, 500, 502, 503, 504"),
    ("--retry-delay", "<seconds>", "retry_delay", "Wait this long between retries"),
    ("--retry-max-time", "<seconds>", "retry_max_time", "Retry only within this time"),
    ("--retry-connrefused", None, "retry_connrefused", "Retry a refused connection too"),
    ("--retry-all-errors", None, "retry_all_errors", "Retry every error"),
    ("-C --continue-at", "<offset>", "continue_at", "Resume at this byte (- : the file's end)"),
    ("-r --range", "<range>", "range", "Ask for these bytes only (0-499)"),
    ("--resolve", "<host:port:addr>", "resolve[]", "Connect to addr for host and port"),
    ("-4 --ipv4", None, "ipv4", "Connect over IPv4 only"),
    ("-6 --ipv6", None, "ipv6", "Connect over IPv6 only"),
    ("--http1.1", None, "http1_1", "Speak HTTP/1.1 (it always does)"),
    ("-V --version", None, "version", "Say what this is, and stop"),
    ("-h --help", None, "help", "Show these options, and stop"),
]
OPTION_NAMES = {name: (takes_value, dest) for names, takes_value, dest, _ in CURL_OPTIONS
                for name in names.split()}
CURL_ACCEPT = "*/*"
RETRIED_STATUSES = (408, 429, 500, 502, 503, 504)  # curl's "transient" replies
NO_TIME_LIMIT = 864000.0  # curl has none; ten days is as good (PyPy's TLS sockets take
# a timeout in 32-bit milliseconds)
FORM_TYPE = "application/x-www-form-urlencoded"


class CurlUsage(Exception):
    """A command line curl's form cannot run: exit 2 (or the status given), nothing sent."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


def parse_curl_line(argv):
    """Read curl's options, with short ones combined (-fsSL, -sSo FILE, -ofile), into a
    dict; CurlUsage naming an option outside the set."""
    line = {dest.rstrip("[]"): [] for _, _, dest, _ in CURL_OPTIONS if dest.endswith("[]")}
    words = iter(argv)
    for word in words:
        if word == "--":  # the end of the options: what follows are URLs
            line["urls"].extend(words)
        elif word.startswith("--") and len(word) > 2:
            take_option(line, word, words, None)
        elif word.startswith("-") and len(word) > 1:
            take_short_options(line, word, words)
        else:
            line["urls"].append(word)
    check_choices(line)
    return line


def take_config(line, path):
    """-K: the options of a config file (stdin for "-"), in place, as curl reads them; a
    line curl would warn about and skip is refused, naming the file and line."""
    reading = line.setdefault("configs", [])
    if path in reading:
        raise CurlUsage("-K %s: the file reads itself" % path)
    reading.append(path)
    text = read_input(path).decode("utf-8", "replace")
    for number, text_line in enumerate(text.splitlines(), 1):
        option = config_line(text_line)
        if option is None:
            continue
        name, value = option
        try:
            if name.startswith("--"):
                take_option(line, name, iter(()), value, from_file=True)
            else:
                take_short_options(line, name, iter(() if value is None else (value,)))
        except CurlUsage as problem:
            raise CurlUsage("%s:%d: %s" % ("<stdin>" if path == "-" else path, number,
                                           problem), problem.status) from None
    reading.remove(path)


def config_line(text):
    """(option, value or None) from a line of a config file, or None for a comment or a
    blank line: "name = value", "name: value", "--name value" or "-n value", a value in
    double quotes taking \\, \", \t, \n, \r and \v, as curl's tool_parsecfg.c reads it."""
    text = text.lstrip()
    if not text or text[0] in "#/*":
        return None
    dashed = text.startswith("-")
    name = re.match(r"\S+" if dashed else r"[^\s=:]+", text).group(0)
    rest = text[len(name):].lstrip() if dashed else text[len(name):].lstrip(" \t\r\n\v\f=:")
    name = name if dashed else "--" + name
    if rest.startswith('"'):
        quoted = re.match(r'(?:[^"\\]|\\.)*', rest[1:]).group(0)
        escapes = {"t": "\t", "n": "\n", "r": "\r", "v": "\v"}
        return name, re.sub(r"\\(.)", lambda escape: escapes.get(escape.group(1),
                                                                escape.group(1)), quoted)
    return name, (rest.split() or [None])[0]


def check_choices(line):
    """CurlUsage for options curl will not take together."""
    bodies = [name for name, given in (("-F", line["form"]), ("-d", line["data"]),
                                       ("-I", line.get("head"))) if given]
    if len(bodies) > 1:
        raise CurlUsage("%s and %s: only one HTTP request method can be chosen" % tuple(
            bodies[:2]))
    if line.get("fail") and line.get("fail_with_body"):
        raise CurlUsage("--fail and --fail-with-body cannot be used together")
    if line.get("header_name") and line.get("include"):
        raise CurlUsage("showing headers and --remote-header-name cannot be combined")


def take_short_options(line, word, words):
    """Record combined short options: flags, the last of which may take a value, attached
    (-ofile, -sSofile) or the next word (-sSo file)."""
    for position in range(1, len(word)):
        name, rest = "-" + word[position], word[position + 1:]
        if OPTION_NAMES.get(name, (False,))[0]:
            take_option(line, name, words, rest or None)
            return
        take_option(line, name, words, None)


def take_option(line, name, words, attached, from_file=False):
    """Record one option, its value attached (-ofile) or the next word; -K reads its file
    here, as curl does."""
    if name not in OPTION_NAMES:
        raise CurlUsage("option %s: is unknown" % name)
    takes_value, dest = OPTION_NAMES[name]
    if not takes_value and attached is not None and from_file:
        raise CurlUsage("option %s: takes no value" % name)
    if not takes_value and dest.endswith("[]"):  # -O: a place among -o's, in order
        line[dest[:-2]].append((name, None))
        return
    if not takes_value:
        line[dest] = True
        return
    value = attached if attached is not None else next(words, None)
    if value is None:
        raise CurlUsage("option %s: requires parameter" % name)
    if dest == "config":
        take_config(line, value)
    elif dest.endswith("[]"):
        line[dest[:-2]].append((name, value))
    else:
        line[dest] = value


def curl_usage():
    """What --help prints: both forms, and what each option of curl's form does."""
    options = []
    for names, value, _, does in CURL_OPTIONS:
        short, _, long = names.partition(" ") if names[1] != "-" else ("", "", names)
        named = "%-4s%s" % (short + "," if short else "", long.split()[0])
        options.append(" %s  %s" % (("%s %s" % (named, value or "")).ljust(31), does))
    return ("Usage: python rest_client.py [options...] URL        (curl's options, as curl "
            "reads them)\n       python rest_client.py METHOD URL [options...] (see "
            "python rest_client.py GET x --help)\n\nOptions:\n" + "\n".join(options) +
            "\n\nThe README says which of curl's options are not done.")


def curl_main(argv):
    """Run a curl command line, a transfer for each URL in turn; return curl's exit status,
    the last transfer's, as curl's."""
    line = {}
    try:
        line = parse_curl_line(argv)
    except CurlUsage as problem:
        return refused(problem, line)
    if line.get("help") or line.get("version"):
        print(curl_usage() if line.get("help") else curl_version())
        return 0
    saved, status = sys.stderr, 0
    try:  # --stderr's, -D's and --trace-ascii's files are the line's, every transfer's
        sys.stderr = stderr_file(line.get("stderr")) or saved
        line["dump"] = line_file(line.get("dump_header"), "-D")
        line["trace_file"] = line_file(line.get("trace_ascii"), "--trace-ascii")
        line["headers"] = with_header_files(line)
        line["write_out"] = write_out_format(line)
        jar = curl_cookie_jar(line)
        for one in one_per_url(line):  # as curl, a URL's glob is read when its turn comes
            status = CurlTransfer(one, jar).run()
        return status
    except CurlUsage as problem:
        return refused(problem, line)
    finally:
        for file in (sys.stderr, line.get("dump"), line.get("trace_file")):
            if file not in (saved, sys.stdout, sys.stdout.buffer, None):
                file.close()
        sys.stderr = saved


def refused(problem, line):
    """Say why a line cannot run: a usage error with where to read about the options,
    one of curl's statuses as curl does, "(3) ...", unless -s hides it; its exit status."""
    if problem.status == 2:
        print("rest_client: %s" % problem, file=sys.stderr)
        print("rest_client: try 'python rest_client.py --help' for the options curl's "
              "form takes (see the README)", file=sys.stderr)
    else:
        show_failure(line, problem.status, problem)
    return problem.status


def show_failure(line, status, message):
    """curl's line for a failure, "(22) ...", unless -s (without -S) silences it."""
    if status and (not line.get("silent") or line.get("show_error")):
        print("rest_client: (%d) %s" % (status, message), file=sys.stderr)


def stderr_file(path):
    """Where --stderr sends what would go to stderr: a file, stdout for "-", or None."""
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    try:
        return open(path, "w")
    except OSError as error:
        raise CurlUsage("cannot write --stderr %s: %s" % (path, error.strerror), 23) from None


def curl_version():
    """What -V prints: what this is, what it speaks and can do, as curl -V's lines say."""
    try:
        import ssl
        tls = (" " + ssl.OPENSSL_VERSION, " https", " SSL")
    except ImportError:
        tls = ("", "", "")
    features = ("IPv6 " if socket.has_ipv6 else "") + "Largefile libz" + tls[2]
    return ("rest_client.py (curl 7.88's command lines) Python/%d.%d.%d%s\nProtocols: http%s"
            "\nFeatures: %s" % (sys.version_info[:3] + (tls[0], tls[1], features)))


def one_per_url(line):
    """The line once for each URL, each with its own output and upload: the n-th -o (or
    -O) and the n-th -T go with the n-th URL, as curl pairs them, and a URL without one
    writes to stdout and uploads nothing; a glob in a URL or a -T file name once for each
    name it stands for (each file, then each URL), -o's #1, #2... made what the URL's took."""
    urls = line_urls(line)
    if not urls:
        raise CurlUsage("no URL specified")
    outputs = line["outputs"] + [(None, None)] * len(urls)
    uploads = [value for _, value in line["uploads"]] + [None] * len(urls)
    for number, (url, (kind, name), upload) in enumerate(zip(urls, outputs, uploads)):
        for each_upload, _ in globbed(glob_parts(upload, line)) if upload else [(None, [])]:
            parts = glob_parts(url, line)
            for each, taken in globbed(parts):
                yield dict(line, urls=[each], upload=each_upload, urlnum=number,
                           output=name and with_glob_values(name, taken, len(parts)),
                           remote_name=kind in ("-O", "--remote-name"))


# -- globs: one URL for many, as curl reads [1-3], [01-10], [a-c], [1-9:2] and {a,b} -------

MAX_GLOB_PARTS = 100  # curl's limit (tool_urlglob.h)


def globbed(parts):
    """The URLs a URL's parts stand for, each with the values its globs took, in curl's
    order: the last glob turns fastest."""
    globs = [number for number, (is_glob, _) in enumerate(parts) if is_glob]
    for choice in itertools.product(*[values for _, values in parts]):
        yield "".join(choice), [choice[number] for number in globs]


def with_glob_values(name, taken, parts):
    """An -o name with each #N made what the N-th glob took; a #N with no such glob stays
    as written, as curl's (tool_urlglob.c counts every part, globs or not, in its check)."""
    def value(match):
        """What one #N stands for."""
        number = int(match.group(1))
        return taken[number - 1] if 0 < number <= len(taken) and number < parts else (
            match.group(0))
    return re.sub(r"#([0-9]+)", value, name)


def glob_parts(url, line):
    """A URL cut into its parts, as curl's tool_urlglob.c reads it: (False, [text]) for
    text as written (a "\\" before a bracket or brace escapes it), (True, values) for a glob;
    CurlUsage with curl's status 3, its words and the column, for one it cannot read. With
    -g, the URL is one part, as written."""
    if line.get("globoff"):
        return [(False, [url])]
    parts, text, at = [], "", 0
    while at < len(url):
        character, skip = url[at], literal_brackets(url, at)
        if skip:
            text, at = text + url[at:at + skip], at + skip
        elif character in "{[":
            parts += [(False, [text])] if text else []
            values, at = (glob_set if character == "{" else glob_range)(url, at + 1)
            parts, text = parts + [(True, values)], ""
        elif character in "}]":
            raise glob_error("unmatched close brace/bracket", url, at + 1)
        else:
            if character == "\\" and url[at + 1:at + 2] in ("{", "[", "}", "]"):
                at += 1  # an escaped bracket or brace: it is kept, not the backslash
            text, at = text + url[at], at + 1
        if len(parts) >= MAX_GLOB_PARTS:
            raise glob_error("too many globs", url, at + 1)
    return parts + ([(False, [text])] if text else [])


def literal_brackets(url, at):
    """How many characters from at are brackets that are no glob: "[]", or an IPv6
    address ("[::1]"); 0 for none."""
    if url[at] != "[":
        return 0
    if url[at + 1:at + 2] == "]":
        return 2
    end = url.find("]", at)
    if end < 0 or ":" not in url[at:end]:
        return 0
    import ipaddress
    try:
        ipaddress.IPv6Address(url[at + 1:end].partition("%")[0])
    except ValueError:
        return 0
    return end + 1 - at


def glob_set(url, start):
    """The values of {a,b,...} whose first is at start, and where the URL goes on."""
    values, value, at = [], "", start
    while True:
        character = url[at:at + 1]
        if not character:
            raise glob_error("unmatched brace", url, start)
        if character in "{[":
            raise glob_error("nested brace", url, at + 1)
        if character == "]":
            raise glob_error("unexpected close bracket", url, at + 1)
        if character == "}" and at == start:
            raise glob_error("empty string within braces", url, at + 1)
        if character in ",}":
            values.append(value)
            if character == "}":
                return values, at + 1
            value, at = "", at + 1
            continue
        if character == "\\" and at + 1 < len(url):
            at += 1  # in a set, a backslash escapes any character
        value, at = value + url[at], at + 1


def glob_range(url, start):
    """The values of [1-3], [01-10], [a-c] or [1-9:2] whose text starts at start, and where
    the URL goes on; CurlUsage (3), at the column curl names, for a range it cannot read."""
    if re.match("[A-Za-z]", url[start:start + 1]):
        values, read = letter_range(url[start:])
    elif re.match("[0-9]", url[start:start + 1]):
        values, read = number_range(url[start:])
    else:
        raise glob_error("bad range specification", url, start + 1)
    if values is None:  # curl names the column after what it read
        raise glob_error("bad range", url, start + 1 + read)
    return values, start + read


def letter_range(text):
    """[a-c] or [a-e:2], without its "[": the letters (None for a range curl finds bad),
    and how far curl reads it."""
    match = re.match(r"(.)-(.)(?:\]|:([0-9]+)\])", text, re.DOTALL)
    if not match:
        return None, 0
    low, high, step = ord(match.group(1)), ord(match.group(2)), int(match.group(3) or 1)
    if high - low > ord("z") - ord("a") or not good_range(low, high, step):
        return None, match.end()
    return [chr(code) for code in range(low, high + 1, step)], match.end()


def number_range(text):
    """[1-3], [01-10] or [1-9:2], without its "[": the numbers, padded with zeros as wide
    as the first is written when it starts with 0 (None for a range curl finds bad), and
    how far curl reads it."""
    head = re.match(r"([0-9]+)-[ \t]*", text)
    if not head:
        return None, 0
    tail = re.compile(r"([0-9]+)(:([0-9]*))?(\])?").match(text, head.end())
    if not tail or not tail.group(4):  # no "]": curl read to the ":", else to the "-"
        return None, tail.start(3) if tail and tail.group(2) else head.end()
    low, high = int(head.group(1)), int(tail.group(1))
    step = int(tail.group(3) or 0) if tail.group(2) else 1
    width = len(head.group(1)) if head.group(1).startswith("0") else 0
    if not good_range(low, high, step):
        return None, tail.end()
    return ["%0*d" % (width, number) for number in range(low, high + 1, step)], tail.end()


def good_range(low, high, step):
    """Whether curl takes a range from low to high by step."""
    return step > 0 and (step == 1 if low == high else low < high and step <= high - low)


def glob_error(words, url, column):
    """curl's error for a glob it cannot read: its words, the URL, and a caret under the
    column (counted from 1)."""
    caret = "%*s^" % (column - 1, " ")  # curl's printf: at least one space before it
    return CurlUsage("%s in URL position %d:\n%s\n%s" % (words, column, url, caret), 3)


class CurlTransfer:
    """One curl command line: the request it makes, and what it writes where."""

    def __init__(self, line, jar=None):
        self.line = line
        self.headers, self.body = curl_headers(line), paced(curl_body(line), line)
        self.method = curl_method(line, self.body)
        self.url = curl_url(line)
        if line.get("get") and self.body is not None:  # -G: the data goes in the query
            self.url, self.body = with_query(self.url, self.body), None
        if line.get("upload"):  # -T file URL/: the file's name ends the path
            self.url = with_file_name(self.url, line["upload"])
        self.jar, self.client = jar, Client(cookies=jar, **curl_settings(line, self.body))
        self.trace = curl_trace(line)
        self.output = CurlOutput(line, self.url, self.trace)
        self.retries = curl_count(line, "retry", 0)
        self.retry_delay = curl_seconds(line, "retry_delay", 0)
        self.retry_max_time = curl_seconds(line, "retry_max_time", 0)
        self.headers += [header for header in [resume_headers(line, self.output)] if header]
        if self.body is None:  # curl -X POST without data says no Content-Length
            self.headers.append(("Content-Length", None))

    def request(self):
        """The request, its streamed body (a file) read from the start."""
        body = self.body
        if hasattr(body, "seek") and body is not sys.stdin.buffer:
            body.seek(0)
        return Request(self.method, self.url, self.headers, None, body)

    def run(self):
        """Send the request (again, as --retry says), write the reply; the exit status."""
        started = time.monotonic()
        if self.line.get("insecure") and not self.line.get("silent"):
            print("rest_client: warning: -k: the server's certificate is not checked",
                  file=sys.stderr)
        try:
            refusal = unsupported_scheme(self.url, curl_schemes(self.line.get("proto")))
            response, error = (None, refusal) if refusal else self.send(started)
        finally:
            self.output.close()
        return self.finish(response, error, time.monotonic() - self.trace.started)

    def send(self, started):
        """Send the request, and again while --retry's rules say so; the last result. Each
        failed attempt says so, with -S, as curl's do."""
        for attempt in itertools.count():
            if attempt:  # -w tells of the last attempt
                self.trace = self.output.trace = curl_trace(self.line)
            response, error = self.client.send(self.request(), trace=self.trace,
                                               save_to=self.output)
            problem = self.retry_problem(response, error, attempt)
            wait = problem and self.retry_wait(response, attempt, started)
            if wait is None or not problem:
                return response, error
            show_failure(self.line, *self.failure(response, error))
            self.warn("Problem %s. Will retry in %d seconds. %d retries left."
                      % (problem, wait, self.retries - attempt))
            time.sleep(wait)
            self.output.again()

    def retry_problem(self, response, error, attempt):
        """Why curl would send again, in its words, or None: a timeout or a name not
        resolved, a 408, 429, 500, 502, 503 or 504, a refused connection with
        --retry-connrefused, and any failure with --retry-all-errors."""
        if attempt >= self.retries:
            return None
        if isinstance(error, (Timeout, NameNotResolved, ProxyNotResolved)):
            return ": timeout"
        if isinstance(error, CouldNotConnect) and self.line.get("retry_connrefused"):
            return ": connection refused"
        if response is not None and response.status_code in RETRIED_STATUSES:
            return ": HTTP error"
        if self.line.get("retry_all_errors") and self.failure(response, error)[0]:
            return "(retrying all errors)"
        return None

    def retry_wait(self, response, attempt, started):
        """Seconds to wait before sending again, or None when --retry-max-time is past:
        --retry-delay, else the reply's Retry-After, else 1 s doubled each time."""
        wait = self.retry_delay
        asked = retry_after(response) if response is not None and not wait else None
        wait = wait or (asked if asked is not None else min(2 ** attempt, 600))
        limit = self.retry_max_time
        if limit and time.monotonic() + wait - started > limit:
            return None
        return wait

    def finish(self, response, error, elapsed):
        """Write -w's text and the cookie jar; say what failed; the exit status."""
        status, message = self.failure(response, error)
        if self.line.get("jar") and self.jar is not None:
            save_cookies(self.jar, self.line["jar"])
        if self.line.get("write_out"):
            values = write_out_values(response, self, status, message, elapsed)
            for stream, text in written_out(self.line["write_out"], values, status):
                write_bytes(text.encode("utf-8", "surrogateescape"), stream)
        show_failure(self.line, status, message)
        return status

    def failure(self, response, error):
        """curl's exit status for what came back, and its words for it ("" for none)."""
        status = curl_status(response, error, self.line)
        if status == 56 and error is None:  # curl's words for a proxy's refusal
            return status, "CONNECT tunnel failed, response %d" % response.status_code
        if status == 22 and error is None:
            return status, "The requested URL returned error: %d" % response.status_code
        return status, "" if error is None else str(error)

    def warn(self, text):
        """A warning on stderr, unless -s silences it (-S shows errors, not warnings)."""
        if not self.line.get("silent"):
            print("rest_client: warning: " + text, file=sys.stderr)


def curl_status(response, error, line):
    """curl's exit status for what came back."""
    if error is not None:
        return exit_status_of(error)
    if response.from_proxy:
        return 56  # the proxy refused the tunnel
    if response.status_code >= 400 and (line.get("fail") or line.get("fail_with_body")):
        return 22
    return 0


def exit_status_of(error):
    """curl's exit status for an error value."""
    for kind, status in [(WriteError, 23), (RangeIgnored, 33), (TooManyRedirects, 47),
                         (SchemeRefused, 1), (UntrustedCertificate, 60),
                         (TLSError, 35), (NameNotResolved, 6), (ProxyNotResolved, 5),
                         (CouldNotConnect, 7), (ProxyError, 7), (Timeout, 28),
                         (EmptyReply, 52), (ReplyCutShort, 18), (ReceiveError, 56),
                         (UndecodableReply, 61), (ReplyTooLarge, 63), (ValueError, 3)]:
        if isinstance(error, kind):
            return status
    return 56 if isinstance(error, (ConnectionError, http.client.HTTPException)) else 26


def curl_method(line, body):
    """-X, else HEAD for -I, PUT for -T, POST with a body (GET with -G), else GET."""
    if line.get("method"):
        return line["method"]
    if line.get("head"):
        return "HEAD"
    if line.get("upload"):
        return "PUT"
    return "POST" if body is not None and not line.get("get") else "GET"


def curl_headers(line):
    """The request's headers as curl sends them: Accept, -A, -e, -b's cookies, --json's
    types, and -H's ("Name:" removes one, "Name;" sends it empty), as (name, value) pairs."""
    headers = {"accept": ("Accept", CURL_ACCEPT)}
    if any(name == "--json" for name, _ in line["data"]):
        headers["accept"] = ("Accept", "application/json")
        headers["content-type"] = ("Content-Type", "application/json")
    elif line["data"] and not line.get("get"):
        headers["content-type"] = ("Content-Type", FORM_TYPE)
    elif line.get("upload"):
        headers["content-type"] = ("Content-Type", None)  # curl names no type for -T
    if line.get("bearer"):  # RFC 6750 §2.1; -H's Authorization wins, as curl's
        headers["authorization"] = ("Authorization", "Bearer " + line["bearer"])
    given = {"agent": line.get("agent"), "referer": without_auto(line.get("referer"))}
    for key, name in (("agent", "User-Agent"), ("referer", "Referer")):
        if given[key] is not None:  # -A "" sends none, as curl's
            headers[name.lower()] = (name, given[key] or None)
    cookies = [value for _, value in line["cookies"] if "=" in value]
    if cookies:
        headers["cookie"] = ("Cookie", ";".join(cookies))  # as curl joins them
    return with_given_headers(list(headers.values()), line["headers"])


def without_auto(referer):
    """-e's URL without its ";auto" (which asks for a Referer on each redirect)."""
    return referer[:-len(";auto")] if referer and referer.endswith(";auto") else referer


def with_header_files(line):
    """-H's values with each -H @FILE (or @-) made the headers the file holds, one a line,
    as curl reads them; a file that cannot be read gives none, with curl's warning."""
    given = []
    for name, value in line["headers"]:
        if not value.startswith("@"):
            given.append((name, value))
            continue
        try:
            text = read_input(value[1:]).decode("utf-8", "surrogateescape")
        except CurlUsage:
            if not line.get("silent"):
                print("rest_client: warning: Failed to open %s!" % value[1:], file=sys.stderr)
            continue
        given += [(name, header) for header in re.split("[\r\n]+", text) if header]
    return given


def with_given_headers(pairs, given_headers):
    """The headers with -H's: each replaces curl's own of its name, "Name:" removes one,
    "Name;" sends it empty, and a name given twice goes on two lines."""
    given = set()
    for _, text in given_headers:
        name, colon, value = text.partition(":")
        if not colon and text.endswith(";"):
            name, value = text[:-1], ""
        elif not colon:
            continue  # curl ignores a header without a colon
        key = name.strip().lower()
        if key not in given:
            pairs = [(old, old_value) for old, old_value in pairs if old.lower() != key]
            given.add(key)
        pairs.append((name.strip(), value.strip() if value.strip() or not colon else None))
    return pairs


def curl_body(line):
    """The body the data options give (joined with &, as curl joins them), -F's form, or
    -T's file; a lone --data-binary @FILE is the file itself, sent as it is read."""
    if line["form"]:
        return MultipartForm([form_part(value) for _, value in line["form"]])
    if line.get("upload"):
        return upload_file(line["upload"])
    if not line["data"]:
        return None
    if len(line["data"]) == 1 and not line.get("get"):
        name, value = line["data"][0]
        if name in ("--data-binary", "--json") and value.startswith("@") and value != "@-" and (
                os.access(value[1:], os.R_OK)):
            return upload_file(value[1:])
    joined = b""
    for number, (name, value) in enumerate(line["data"]):
        joiner = b"" if number == 0 or name == "--json" else b"&"  # curl adds --json as is
        joined += joiner + data_part(name, value, line)
    return joined


def data_part(name, value, line):
    """The bytes one data option adds, as curl reads it (a file it cannot read adds
    nothing, with a warning, as curl's does)."""
    if name == "--data-raw":
        return value.encode("utf-8")
    if name == "--data-urlencode":
        try:
            return urlencoded_part(value)
        except CurlUsage as problem:
            return unread(problem, line)
    if not value.startswith("@"):
        return value.encode("utf-8")
    try:
        data = read_input(value[1:])
    except CurlUsage as problem:
        return unread(problem, line)
    if name in ("-d", "--data", "--data-ascii"):
        data = data.replace(b"\r", b"").replace(b"\n", b"")  # curl drops line ends
    return data


def unread(problem, line):
    """What a data file that cannot be read adds: nothing, with a warning, as curl's."""
    if not line.get("silent"):
        print("rest_client: warning: %s; the data is empty" % problem, file=sys.stderr)
    return b""


def urlencoded_part(value):
    """--data-urlencode's forms: content, =content, name=content, @file, name@file."""
    from urllib.parse import quote_plus
    if "=" in value and ("@" not in value or value.index("=") < value.index("@")):
        name, _, content = value.partition("=")
        content = content.encode("utf-8")
    elif "@" in value:
        name, _, path = value.partition("@")
        content = read_input(path)
    else:
        name, content = "", value.encode("utf-8")
    encoded = quote_plus(content, safe="~").encode("ascii")  # ~ as 3.7's quote and curl
    return (name.encode("utf-8") + b"=" + encoded) if name else encoded


def read_input(path):
    """The bytes of a file named on the line, or of standard input for "-"; CurlUsage with
    curl's status 26 when it cannot be read."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as error:
        raise CurlUsage("cannot read %s: %s" % (path, error.strerror or error), 26) from None


def paced(body, line):
    """The body, a file read no faster than --limit-rate says (stdin and bytes as they
    are)."""
    rate = curl_sizes(line, "limit_rate")[0]
    if rate and hasattr(body, "read") and body is not sys.stdin.buffer:
        return PacedFile(body, rate)
    return body


class PacedFile:
    """A file to upload, each read waiting until the bytes read before it had their time
    at rate bytes a second (--limit-rate), and reading a quarter of a second's worth at
    most, so that the bytes go at an even pace."""

    def __init__(self, file, rate):
        self.file, self.rate, self.sent, self.started = file, rate, 0, None

    def read(self, size=-1):
        """The next bytes, when their time has come."""
        if self.started is None:
            self.started = time.monotonic()
        time.sleep(rate_wait(self.sent, time.monotonic() - self.started, self.rate))
        most = max(self.rate // 4, 1024)
        data = self.file.read(most if size is None or size < 0 else min(size, most))
        self.sent += len(data)
        return data

    def seek(self, offset, whence=0):
        """Go to offset, to be sent again at the pace from the start."""
        self.sent, self.started = 0, None
        return self.file.seek(offset, whence)

    def tell(self):
        """Where the file is."""
        return self.file.tell()

    def fileno(self):
        """The file's descriptor (its size gives the Content-Length)."""
        return self.file.fileno()

    def close(self):
        """Close the file."""
        self.file.close()


def upload_file(path):
    """A file to send as it is read (standard input for "-", sent chunked)."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as error:
        raise CurlUsage("cannot read %s: %s" % (path, error.strerror or error), 26) from None


def form_part(text):
    """A -F field: name=value, name=<file (the file's text), name=@file[;type=...]
    [;filename=...], or name=@- (standard input, without a type, as curl sends it)."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise CurlUsage("-F takes name=value, name=@FILE or name=<FILE, not %r" % text)
    kind = value[:1] if value[:1] in "<@" else ""
    content, named = part_parameters(value[len(kind):])
    if kind == "<" or (not kind and "type" in named):
        text = read_input(content) if kind else content.encode("utf-8")
        return name, Upload(text, named.get("type", ""), None)
    if not kind:
        return name, content
    if content == "-":
        return name, Upload(read_input("-"), named.get("type", ""), named.get("filename", "-"))
    if "," in content:  # curl sends each file of name=@a,b in a multipart/mixed part
        raise CurlUsage("-F %s: several files in one field are not done" % text)
    if not os.access(content, os.R_OK):
        raise CurlUsage("cannot read %s" % content, 26)
    return name, Upload(content, named.get("type", curl_file_type(content)),
                        named.get("filename"))


def part_parameters(text):
    """A -F value's content and its ;type= and ;filename= parameters, as curl reads them;
    CurlUsage for curl's ;headers= and ;encoder=, which are not done."""
    named = {}
    while True:
        head, semicolon, tail = text.rpartition(";")
        key, equals, argument = tail.strip().partition("=")
        if semicolon and equals and key in ("headers", "encoder"):
            raise CurlUsage("-F ...;%s=: not done" % key)
        if not semicolon or not equals or key not in ("type", "filename"):
            return text, named
        named.setdefault(key, argument.strip('"'))
        text = head


CURL_FILE_TYPES = {".gif": "image/gif", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                   ".png": "image/png", ".svg": "image/svg+xml", ".txt": "text/plain",
                   ".htm": "text/html", ".html": "text/html", ".pdf": "application/pdf",
                   ".xml": "application/xml"}  # curl's own short list (lib/mime.c)


def curl_file_type(path):
    """The content type curl names for a file it uploads with -F, by its name."""
    extension = os.path.splitext(path)[1].lower()
    return CURL_FILE_TYPES.get(extension, "application/octet-stream")


def line_urls(line):
    """The URLs of the line, given bare or with --url."""
    return [url[1] if isinstance(url, tuple) else url for url in line["urls"]]


def curl_url(line):
    """The one URL of the line, http:// when it names no scheme (as curl guesses); exit 3
    for one with a space or a control character, as curl's."""
    url = line_urls(line)[0]
    if any(character.isspace() or ord(character) < 32 for character in url):
        raise CurlUsage("URL rejected: Malformed input to a URL function", 3)
    return url if "://" in url else "http://" + url


def with_file_name(url, path):
    """-T's URL, the file's name added to a path that ends in a folder (URL/, URL/?q)."""
    parts = urlsplit(url)
    if not parts.path.endswith("/") or path == "-":
        return url
    return urlunsplit(parts._replace(path=parts.path + quote(os.path.basename(path))))


def with_query(url, body):
    """-G: the data appended to the URL's query."""
    return url + ("&" if "?" in url else "?") + body.decode("latin-1")


def curl_settings(line, body):
    """The Client's settings that curl's options give."""
    settings = {"follow_redirects": ALL if line.get("location") else None,
                "max_redirects": unlimited_if_negative(curl_count(line, "max_redirs", 50)),
                "compressed": bool(line.get("compressed")), "repeat_headers": True,
                "method_as_given": True,
                "timeout": curl_seconds(line, "max_time", 0) or NO_TIME_LIMIT,
                "connect_timeout": curl_seconds(line, "connect_timeout", 0) or 300,
                "proxy": line.get("proxy"), "noproxy": line.get("noproxy"),
                "context": curl_tls(line), "resolve": curl_resolver(line),
                "auto_referer": (line.get("referer") or "").endswith(";auto"),
                "max_body": curl_sizes(line, "max_filesize")[0]}
    if line.get("method"):  # -X names the method alone; the body goes by curl's own rules
        settings["keep_method"] = curl_method(dict(line, method=None), body)
    settings.update(curl_credentials(line))
    return settings


def curl_cookie_jar(line):
    """The jar every transfer of the line shares: the cookies of the files -b names, and
    those replies set, for -c; None when neither is asked for."""
    files = [value for _, value in line["cookies"] if "=" not in value]
    return read_cookie_files(files) if files or line.get("jar") else None


def read_cookie_files(paths):
    """A jar with the cookies of the files -b names; curl's status 26 for one it cannot
    read."""
    import http.cookiejar
    jar = http.cookiejar.CookieJar()
    for path in paths:
        try:
            read_cookie_file(jar, path)
        except (OSError, ValueError) as error:
            raise CurlUsage("cannot read the cookies of %s: %s" % (path, error), 26) from None
    return jar


def unlimited_if_negative(count):
    """A limit where -1 means none, as --max-redirs -1 does."""
    return count if count >= 0 else float("inf")


def curl_credentials(line):
    """The settings -u (asking for the password when it has none, as curl does), --netrc
    and --netrc-file give."""
    settings = {}
    if line.get("user") is not None:
        user, colon, password = line["user"].partition(":")
        if not colon:
            import getpass
            password = getpass.getpass("Enter host password for user '%s':" % user)
        settings["auth"] = (user, password)
    if line.get("netrc_file"):
        settings["netrc"] = line["netrc_file"]
    elif line.get("netrc"):  # curl 7.88 reads ~/.netrc, whatever NETRC says
        settings["netrc"] = os.path.join(os.path.expanduser("~"), ".netrc")
    return settings


def curl_tls(line):
    """The TLS context --cacert, --capath, --cert, --key, -k, --tlsv1.2 and --tlsv1.3 ask
    for, or None, for every https URL the line reaches, a redirect from http included;
    curl's status 77 for a CA it cannot read, 58 for a certificate or key, when the line
    names an https URL."""
    if not any(line.get(name) for name in ("cacert", "capath", "cert", "key", "insecure",
                                           "tlsv1_2", "tlsv1_3")):
        return None
    for name, status in (("cacert", 77), ("capath", 77), ("cert", 58), ("key", 58)):
        if line.get(name) and not os.access(line[name], os.R_OK):
            if not any(urlsplit(url).scheme.lower() == "https" for url in line_urls(line)):
                return trusting_nothing()  # curl reads them at a handshake, if one comes
            raise CurlUsage("cannot read --%s %s" % (name, line[name]), status)
    try:
        return tls_context(line.get("cacert"), line.get("capath"), line.get("cert"),
                           line.get("key"), bool(line.get("insecure")),
                           "TLSv1.3" if line.get("tlsv1_3") else
                           "TLSv1.2" if line.get("tlsv1_2") else None)
    except OSError as error:
        raise CurlUsage("cannot use the certificate or key: %s" % error, 58) from None


def curl_resolver(line):
    """The function --resolve, -4 and -6 give the Client (None without them): the address
    --resolve names for a host and port ("*" for any host), else the system's look-up in
    the one family asked for; CurlUsage with curl's status 49 for an entry it cannot read."""
    entries = {}
    for _, entry in line["resolve"]:
        match = re.fullmatch(r"\+?([^:]+):(\d+):\[?([0-9A-Fa-f.:]+?)\]?(,.*)?", entry)
        if not match:
            raise CurlUsage("Couldn't parse CURLOPT_RESOLVE entry '%s'" % entry, 49)
        entries.setdefault((match.group(1).lower(), int(match.group(2))), match.group(3))
    family = socket.AF_INET if line.get("ipv4") else socket.AF_INET6 if line.get(
        "ipv6") else None
    if not entries and family is None:
        return None

    def resolve(host, port):
        """The address to connect to for host and port."""
        named = entries.get((host.lower(), port)) or entries.get(("*", port))
        if named or family is None:
            return named or host
        try:
            return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)[0][4][0]
        except socket.gaierror:
            # as curl: a name not resolved stays so (exit 6); an address of the other
            # family is one that cannot be reached (exit 7)
            socket.getaddrinfo(host, port, 0, 0, 0, socket.AI_NUMERICHOST)  # names raise
            raise OSError("%s is not an address of the family asked for" % host) from None

    return resolve


def curl_schemes(text):
    """The schemes --proto or --proto-redir allows, as curl reads its list ("=https" for
    https alone, "-all,+http" for http alone, "+https" for one more); None for any."""
    if text is None:
        return None
    allowed = {"http", "https"}
    for token in text.split(","):
        name = token.lstrip("+-=").lower()
        action = (token[:len(token) - len(name)] or "+")[-1]
        named = {"http", "https"} if name == "all" else {name}
        allowed = set() if action == "=" else allowed
        allowed = allowed - named if action == "-" else allowed | named
    return allowed


def redirect_schemes(line):
    """The schemes a redirect may go to: those both --proto and --proto-redir allow (None
    for any)."""
    given = [curl_schemes(line.get(name)) for name in ("proto", "proto_redir")]
    if given == [None, None]:
        return None
    return set.intersection(*[schemes for schemes in given if schemes is not None])


def unsupported_scheme(url, allowed):
    """SchemeRefused, as curl says it, for a URL whose scheme is not allowed; else None."""
    scheme = url.partition("://")[0].lower()
    if allowed is None or scheme in allowed:
        return None
    return SchemeRefused('Protocol "%s" not supported or disabled in libcurl' % scheme)


def curl_sizes(line, *names):
    """The numbers of bytes the options named give (None for one not given)."""
    return [curl_size(line[name], name.replace("_", "-")) if line.get(name) else None
            for name in names]


def curl_size(text, name):
    """A number of bytes with curl's suffixes (1k is 1024, then M, G, T and P); CurlUsage
    for one that is not."""
    match = re.fullmatch(r"([0-9]+)([kKmMgGtTpP]?)", text or "")
    if not match:
        raise CurlUsage("option --%s: is badly used here" % name)
    return int(match.group(1)) << 10 * " kmgtp".index(match.group(2).lower() or " ")


def trusting_nothing():
    """A TLS context that trusts no certificate: a redirect to https then fails, where the
    files asked for could not be read, rather than going without them."""
    import ssl
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def curl_seconds(line, name, default):
    """An option's number of seconds; CurlUsage for one that is not a number."""
    if line.get(name) is None:
        return default
    try:
        seconds = float(line[name])
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise CurlUsage("--%s: expected a proper numerical parameter"
                        % name.replace("_", "-"))
    return seconds


def curl_count(line, name, default):
    """An option's whole number (-1 too for --max-redirs); CurlUsage for one that is not."""
    if line.get(name) is None:
        return default
    number = line[name][1:] if line[name] == "-1" and name == "max_redirs" else line[name]
    if not ASCII_DIGITS.fullmatch(number):
        raise CurlUsage("--%s: expected a proper numerical parameter"
                        % name.replace("_", "-"))
    return int(line[name])


class WriteError(TransferError):
    """The output could not be written (curl's exit 23); the text names the file."""


class SchemeRefused(TransferError):
    """A URL, or a redirect, to a scheme --proto or --proto-redir leaves out (curl's exit
    1)."""


class RangeIgnored(TransferError):
    """A resumed download (-C) whose server sent the whole body again (curl's exit 33):
    appending it would spoil the file."""


class CurlOutput(Download):
    """Where curl writes a reply: stdout, or the -o (or -O) file, written into as it is,
    opened when the first byte comes (a --fail answer never makes it); -i's heads go
    first, -D's to a file of their own; -C - appends to what is there. A transfer cut
    short keeps what came (curl's exit 18), so that -C - can resume it."""

    def __init__(self, line, url, trace=None):
        name = output_name(line, url)
        super().__init__(sys.stdout.buffer if name in (None, "-") else name)
        self.trace, self.exclusive = trace, False
        self.name_from_reply = line.get("header_name") and line.get("remote_name") and (
            not line.get("output"))
        self.dump = line.get("dump")
        self.rate = curl_sizes(line, "limit_rate")[0]
        self.redirect_schemes = redirect_schemes(line)
        self.line, self.opened, self.last_head, self.hops = line, False, None, -1
        self.resume_from, self.complete_already = 0, False
        self.guard_terminal = name is None and sys.stdout.isatty()  # "-o -" says go ahead
        self.heads = line.get("include") or line.get("head")
        self.append = line.get("continue_at") is not None
        self.save_errors = not line.get("fail")
        if line.get("progress_bar") and not line.get("silent"):
            self.progress = ProgressBar()
        elif sys.stderr.isatty() and not line.get("silent") and self.is_path:
            self.progress = ProgressLine()

    def open(self):
        """Open the output at its first byte: stdout, or the file, in place."""
        if not self.opened:
            self.opened = True
            if self.is_path:
                try:
                    if self.line.get("create_dirs") and os.path.dirname(self.target):
                        os.makedirs(os.path.dirname(self.target), 0o750, exist_ok=True)
                    # a name the reply gave never replaces a file (curl's -J)
                    self.file = open(self.target, "ab" if self.append else
                                     "xb" if self.exclusive else "wb")
                except OSError as error:
                    raise WriteError("cannot write %s: %s" % (self.target, error.strerror),
                                     error) from None
            else:
                self.file = self.target

    def begin(self):
        """A body starts (the first, or a retry's, which stdout shows after the first)."""
        self.size, self.complete, self.started = 0, False, time.monotonic()

    def again(self):
        """Before a retry: a regular file starts empty again, as curl's does."""
        self.last_head, self.hops = None, -1
        if self.opened and self.is_path and not self.append and stat.S_ISREG(
                os.fstat(self.file.fileno()).st_mode):
            self.file.seek(0)
            self.file.truncate()

    def head(self, response):
        """With -i or -I, write each reply's head, as it came, before its body; remember
        the last, for -w after a failure."""
        self.last_head, self.hops = response, self.hops + 1
        self.check_length(response)
        if self.dump and not response.from_proxy:
            self.dump.write(response.head_bytes())
            self.dump.flush()
        self.check_limits(response)
        if self.name_from_reply and not self.opened:
            self.take_name(response)
        if self.resume_from and response.status_code == 200:
            self.check_resumable(response)
        if self.resume_from and response.status_code == 416:  # RFC 9110 §15.5.17: there
            self.complete_already = True  # is nothing after the end: curl keeps the file
        if self.heads and not response.from_proxy:
            self.write_bytes(response.head_bytes())

    def check_length(self, response):
        """-I: ReplyTooLarge for a reply whose Content-Length is past --max-filesize, as
        curl refuses the file it describes (exit 63), its head written without its end."""
        limit = curl_sizes(self.line, "max_filesize")[0]
        length = response.headers.first("Content-Length")
        if not (self.line.get("head") and limit is not None and length.isdigit()
                and int(length) > limit):
            return
        head = response.head_bytes()[:-2]  # curl stops before the blank line
        if self.dump:
            self.dump.write(head)
        if self.heads:
            self.write_bytes(head)
        raise ReplyTooLarge("Maximum file size exceeded")

    def check_limits(self, response):
        """SchemeRefused for a redirect -L would follow to a scheme --proto or --proto-redir
        leaves out."""
        location = response.headers.first("Location", None)
        if self.redirect_schemes is not None and self.line.get("location") and location and (
                response.status_code in REDIRECT_STATUSES):
            refusal = unsupported_scheme(urljoin(response.url, location),
                                         self.redirect_schemes)
            if refusal:
                raise refusal

    def take_name(self, response):
        """-J: the file is named as the reply's Content-Disposition says, when it is a
        plain file name, and never replaces one that is there."""
        name = disposition_name(response.headers.first("Content-Disposition"))
        if name:
            folder = self.line.get("output_dir")
            self.target, self.exclusive = "%s/%s" % (folder, name) if folder else name, True

    def check_resumable(self, response):
        """A whole body where -C asked for the rest: the file is complete already if it is
        as long, else RangeIgnored, as curl says (appending it would spoil the file)."""
        if response.headers.first("Content-Length") == str(self.resume_from):
            self.complete_already = True  # curl: "the entire document is already downloaded"
            return
        raise RangeIgnored("the server sent the whole of %s, not the rest from byte %d: it "
                           "does not seem to take ranges" % (response.url, self.resume_from))

    def write(self, data):
        """Add a piece of the body (none of a proxy's refusal of a tunnel, none with -I,
        which shows the head alone whatever the method, as curl's, and none of a file
        complete already)."""
        if self.line.get("head") or self.complete_already or not data or (
                self.last_head is not None and self.last_head.from_proxy):
            return
        if self.guard_terminal and b"\0" in data:
            raise WriteError('binary output can mess up your terminal: use "-o -" to '
                             'have it there anyway, or "-o FILE" to save it')
        if self.rate:  # --limit-rate: a piece waits until those before it had their time
            time.sleep(rate_wait(self.size, time.monotonic() - self.started, self.rate))
        self.write_bytes(data)
        self.size += len(data)
        if hasattr(self.trace, "data"):
            self.trace.data(data)

    def write_bytes(self, data):
        """Write bytes to the output as they come; WriteError naming it when it cannot."""
        self.open()
        try:
            self.file.write(data)
            if not self.is_path:
                self.file.flush()
        except OSError as error:
            raise WriteError("cannot write %s: %s" % (
                self.target if self.is_path else "to stdout", error.strerror or error),
                error) from None

    def finish(self):
        """The body is whole: an empty one still makes its file, as curl's does."""
        self.open()

    def abandon(self):
        """A transfer that failed keeps what came."""

    def close(self):
        """Close the file, if one was opened; flush stdout."""
        if self.file is not None and self.is_path:
            self.file.close()
        elif self.file is not None:
            self.file.flush()
        if self.progress:
            self.progress.end()


def output_name(line, url):
    """The file a transfer writes to: -o's, or with -O the URL's last segment, in
    --output-dir's folder; "-" or None for stdout."""
    name = line.get("output")
    if line.get("remote_name") and not name:
        name = os.path.basename(urlsplit(url).path)
        if not name:
            raise CurlUsage("-O: the URL names no file", 23)
    if name not in (None, "-") and line.get("output_dir"):
        name = "%s/%s" % (line["output_dir"], name)  # as curl joins them
    return name


def line_file(path, option):
    """A file the line writes to (-D's, --trace-ascii's), made at once, as curl's: stdout
    for "-", None when the option is not given."""
    if path is None:
        return None
    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as error:
        raise CurlUsage("cannot write %s %s: %s" % (option, path, error.strerror),
                        23) from None


def disposition_name(value):
    """The file name a Content-Disposition value gives (RFC 6266 §4.3), when it is a plain
    one: no folder, no leading dot, no control character (a server could otherwise name
    ../.bashrc); None otherwise. As curl, filename*= is not read."""
    match = re.search(r"(?:^|[;\s])filename=(\"[^\"]*|'[^']*|[^;]*)", value)
    if not match:
        return None
    name = match.group(1)[1:] if match.group(1)[:1] in "\"'" else match.group(1).strip()
    plain = name and not name.startswith(".") and not re.search(r"[/\\\x00-\x1f\x7f]", name)
    return name if plain else None


def rate_wait(size, elapsed, rate):
    """Seconds to wait so that size bytes in elapsed seconds average rate a second at most
    (--limit-rate)."""
    return max(0.0, size / rate - elapsed)


class ProgressBar(ProgressLine):
    """-#: the progress as a line of # across 72 columns and the share done, as curl's."""

    def draw(self):
        """Write the bar over the one before."""
        self.drawn = time.monotonic()
        received, total = self.last
        share = received / total if total else 0.0
        sys.stderr.write("\r%-72s %5.1f%%" % ("#" * int(share * 72), share * 100))
        sys.stderr.flush()


def resume_headers(line, output):
    """The Range header -C - (from the output file's size) or -r asks for, if any; the
    output learns where a resumed body starts."""
    if line.get("range"):
        return ("Range", "bytes=" + line["range"])
    if line.get("continue_at") is None:
        return None
    if line["continue_at"] == "-":
        try:
            output.resume_from = os.path.getsize(output.target) if output.is_path else 0
        except OSError:
            output.resume_from = 0
    else:
        output.resume_from = curl_count(line, "continue_at", 0)
    return ("Range", "bytes=%d-" % output.resume_from) if output.resume_from else None


class CurlTrace:
    """curl -v's lines on stderr (with -v): connections, TLS, redirects, and each head; and
    what -w tells of an exchange: when each step came, in seconds from the start, the
    addresses, and the bytes of the heads."""

    def __init__(self, verbose):
        self.detailed, self.started, self.times = verbose, time.monotonic(), {}
        self.remote = self.local = ("", 0)
        self.connects = self.tunnel = self.replies = 0
        self.request_size = self.upload_size = self.header_size = 0
        self.method = None  # of the last request sent (a 303 makes a POST a GET)

    def connecting(self):
        """A connection opens: its name is looked up as it does (socket.create_connection
        does both), so the lookup's time is when it began."""
        self.mark("namelookup")

    def connected(self, connection):
        """A TCP connection is open (to the proxy, through one)."""
        self.mark("connect")
        self.connects += 1
        sock = connection.sock
        self.remote, self.local = sock.getpeername()[:2], sock.getsockname()[:2]

    def tunnelled(self, reply):
        """The proxy answered a CONNECT."""
        self.tunnel = reply.status

    def secured(self, tls):
        """The TLS handshake is done."""
        self.mark("appconnect")

    def sending(self, head):
        """A request's head goes; its body, of the Content-Length it names, follows."""
        if self.replies:  # a redirect's request: the hops before took this long
            self.mark("redirect")
        self.mark("pretransfer")
        self.method = bytes(head).split(b" ", 1)[0].decode("latin-1")
        length = re.search(rb"\r\ncontent-length: *([0-9]+)\r\n", bytes(head), re.I)
        self.upload_size = int(length.group(1)) if length else 0
        self.request_size += len(head) + self.upload_size

    def replied(self, response):
        """A reply's head came."""
        self.mark("starttransfer")
        self.replies += 1
        self.header_size += len(response.head_bytes())

    def mark(self, step):
        """Note when a step came."""
        self.times[step] = time.monotonic() - self.started

    def __call__(self, line):
        """Show one line; a head's end in CRLF, its blank line "> " or "< ", as curl's."""
        if not self.detailed:
            return
        if line[:1] in ("<", ">"):
            line = line[:1] + " " + line[2:] + "\r"
        print(line, file=sys.stderr)


def curl_trace(line):
    """What watches the exchange, for -w: --trace-ascii's file, else -v's lines (none
    shown without -v)."""
    if line.get("trace_file"):
        return TraceFile(line["trace_file"])
    return CurlTrace(line.get("verbose"))


class TraceFile(CurlTrace):
    """--trace-ascii's file: what -v shows, in curl's blocks (== Info, => Send header,
    <= Recv header, <= Recv data), each line after its offset in hex; credentials masked,
    as -v's."""

    def __init__(self, file):
        super().__init__(True)
        self.file, self.sent = file, []  # the request head's lines, until its blank line

    def write(self, text):
        """Add text to the file."""
        self.file.write(text.encode("utf-8"))

    def __call__(self, line):
        """Add one of -v's lines."""
        if line.startswith(">"):
            self.sent.append(line[2:])
            if line == ">":
                self.block("=> Send header", self.sent)
                self.sent = []
        elif line.startswith("<"):
            self.block("<= Recv header", [line[2:]])
        else:
            self.write("== Info: %s\n" % line.lstrip("* "))

    def block(self, title, lines):
        """Write lines as one block, each CRLF-ended line counted."""
        size, offset = sum(len(text) + 2 for text in lines), 0
        self.write("%s, %d bytes (%#x)\n" % (title, size, size))
        for text in lines:
            self.write("%04x: %s\n" % (offset, text))
            offset += len(text) + 2

    def data(self, data):
        """Write a piece of the body, 64 bytes a line, what is not printable as a dot."""
        self.write("<= Recv data, %d bytes (%#x)\n" % (len(data), len(data)))
        for offset in range(0, len(data), 64):
            piece = data[offset:offset + 64].decode("latin-1")
            self.write("%04x: %s\n" % (offset, re.sub(r"[^\x20-\x7e]", ".", piece)))


# -w's variables as curl 7.88 has them (tool_writeout.c), in the order %{json} lists them
WRITE_OUT_VARIABLES = (
    "certs", "content_type", "errormsg", "exitcode", "filename_effective", "ftp_entry_path",
    "http_code", "http_connect", "http_version", "local_ip", "local_port", "method",
    "num_certs", "num_connects", "num_headers", "num_redirects", "proxy_ssl_verify_result",
    "redirect_url", "referer", "remote_ip", "remote_port", "response_code", "scheme",
    "size_download", "size_header", "size_request", "size_upload", "speed_download",
    "speed_upload", "ssl_verify_result", "time_appconnect", "time_connect",
    "time_namelookup", "time_pretransfer", "time_redirect", "time_starttransfer",
    "time_total", "url", "url_effective", "urlnum")
WRITE_OUT_CONTROLS = ("json", "header_json", "onerror", "stdout", "stderr")
HTTP_VERSIONS = {"HTTP/1.0": "1", "HTTP/1.1": "1.1"}  # as curl names them
WRITE_OUT = r"%%|%\{([^}]*)\}|%header\{([^}]*)\}|%.|\\."  # compiled when first used


def write_out_format(line):
    """-w's format, read once, as curl reads it: @FILE (or @-) for the format in a file, its
    line ends dropped; a file that cannot be read gives none, with curl's warning."""
    format_text = line.get("write_out")
    if not format_text or not format_text.startswith("@"):
        return format_text
    try:
        format_text = read_input(format_text[1:]).decode("utf-8", "replace")
    except CurlUsage:
        if not line.get("silent"):
            print("rest_client: warning: Failed to read %s" % format_text[1:], file=sys.stderr)
        return None
    return format_text.replace("\r", "").replace("\n", "")


def written_out(format_text, values, status):
    """-w's text as (stream, text) pieces: its %{variables} filled in, \n, \r, \t and %%
    as curl reads them, what curl does not know left as written. %{stderr} and %{stdout}
    switch the stream; %{onerror} ends the text unless the transfer failed."""
    pieces, stream, at = [], "stdout", 0
    for match in re.finditer(WRITE_OUT, format_text):
        pieces.append((stream, format_text[at:match.start()]))
        at, name = match.end(), (match.group(1) or "").lower()
        if name == "onerror" and not status:
            return pieces
        stream = name if name in ("stdout", "stderr") else stream
        pieces.append((stream, written_value(match, name, values)))
    return pieces + [(stream, format_text[at:])]


def written_value(match, name, values):
    """What one %{variable}, %header{name}, escape or %% stands for; curl's warning for a
    variable it does not know."""
    text = match.group(0)
    if match.group(2) is not None:  # %header{name}: the first value, in the last reply
        return (values["headers"].get(match.group(2)) or [""])[0]
    if match.group(1) is None:  # %%, \n, \r, \t; another escape stays as written
        return {"%%": "%", "\\n": "\n", "\\r": "\r", "\\t": "\t"}.get(text, text)
    if name == "json":
        return json_of_values(values)
    if name == "header_json":
        return header_json(values["headers"])
    if name in values["not_known"]:  # never a wrong value: none, and why
        print("rest_client: warning: -w %%{%s}: %s" % (name, values["not_known"][name]),
              file=sys.stderr)
    if name in WRITE_OUT_VARIABLES:
        return value_text(name, values[name])
    if name not in WRITE_OUT_CONTROLS:
        print("rest_client: warning: unknown --write-out variable: '%s'" % match.group(1),
              file=sys.stderr)
    return ""


def value_text(name, value):
    """A -w value as curl writes it: nothing for none, seconds with six decimals, a status
    in three digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "%.6f" % value
    return "%03d" % value if name in ("http_code", "response_code", "http_connect") else str(
        value)


def json_of_values(values):
    """%{json}: every variable, null for none, and curl_version last, as curl writes it."""
    fields = ['"%s":%s' % (name, json_value(values[name])) for name in WRITE_OUT_VARIABLES]
    return '{%s,"curl_version":%s}' % (",".join(fields), json_value(USER_AGENT))


def header_json(headers):
    """%{header_json}: the last reply's headers, each name once in lower case with all its
    values, as curl writes them."""
    return "{%s\n}" % ",\n".join("%s:%s" % (json_value(name.lower()), json_value(values))
                                 for name, values in headers.items())


def json_value(value):
    """A value as curl's -w writes it in JSON: null for none, seconds with six decimals."""
    import json
    if value is None:
        return "null"
    if isinstance(value, float):
        return "%.6f" % value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_out_values(response, transfer, status, message, elapsed):
    """The values -w's variables name, for this transfer (after a failure, of the last
    reply whose head came): a str, an int, seconds as a float, or None for what curl leaves
    out (null in %{json}); "headers" are the last reply's."""
    trace, output, hops = transfer.trace, transfer.output, None
    if response is None and output.last_head is not None:
        response, hops = output.last_head, output.hops
    url = transfer.url if response is None else response.url
    values = dict(
        {"time_" + step: trace.times.get(step, 0.0) for step in (
            "namelookup", "connect", "appconnect", "pretransfer", "redirect",
            "starttransfer")},
        certs="", num_certs=0, content_type=None, errormsg=message or None, exitcode=status,
        filename_effective=output.target if output.is_path else None, ftp_entry_path=None,
        http_code=0, http_connect=trace.tunnel, http_version="0", local_ip=trace.local[0],
        local_port=trace.local[1], method=trace.method or transfer.method,
        num_connects=trace.connects,
        num_headers=0, num_redirects=0, proxy_ssl_verify_result=0, redirect_url=None,
        referer=transfer.line.get("referer"), remote_ip=trace.remote[0],
        remote_port=trace.remote[1], scheme=urlsplit(url).scheme.upper() if trace.connects
        else None, size_download=output.size, size_header=trace.header_size,
        size_request=trace.request_size, size_upload=trace.upload_size,
        speed_download=int(output.size / elapsed) if elapsed else 0,
        speed_upload=int(trace.upload_size / elapsed) if elapsed else 0,
        ssl_verify_result=0, time_total=elapsed, url=line_urls(transfer.line)[0],
        url_effective=url,
        urlnum=transfer.line.get("urlnum", 0), headers=Headers())
    if response is not None:
        values.update(reply_values(response, hops))
    values["response_code"] = values["http_code"]
    values["not_known"] = not_known(values, transfer.line)
    values.update(dict.fromkeys(values["not_known"]))
    return values


def not_known(values, line):
    """The -w variables whose value the client cannot know for this transfer, and why."""
    if values["scheme"] != "HTTPS":
        return {}
    unknown = dict.fromkeys(("certs", "num_certs"), "the client does not show the chain")
    if line.get("insecure"):
        unknown["ssl_verify_result"] = "-k checks no certificate"
    return unknown


def reply_values(response, hops=None):
    """The values -w's variables take from the last reply (hops: the redirects before it,
    when it is not the Response send returned)."""
    location = response.headers.first("Location", "")
    return {"http_code": 0 if response.from_proxy else response.status_code,
            "content_type": response.headers.first("Content-Type", None),
            "redirect_url": urljoin(response.url, location) if location and (
                response.status_code in REDIRECT_STATUSES) else None,
            "num_redirects": response.redirects if hops is None else hops,
            "http_version": HTTP_VERSIONS.get(response.version, "0"),
            "num_headers": len(response.header_lines), "headers": response.headers}


def write_bytes(data, stream="stdout"):
    """Write bytes to stdout (or stderr), after what is there."""
    stream = getattr(sys, stream)
    stream.flush()
    stream.buffer.write(data)
    stream.buffer.flush()


if __name__ == "__main__":
    sys.exit(main())
