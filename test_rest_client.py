"""The client, tested with real servers, behaviour by behaviour.

A small http.server on port 0 answers with whatever a test needs (any status, repeated
headers, other charsets, redirects, a stalled reply) and records what it received; the
end-to-end tests drive rest_users.py itself, from Python and from the command line.
"""

import array
import base64
import collections
import concurrent.futures
import email.parser
import email.policy
import email.utils
import fcntl
import functools
import getpass
import gzip
import hashlib
import http.client
import http.cookiejar
import io
import itertools
import json
import os
import pty
import queue
import re
import select
import selectors
import shlex
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
import types
import zlib
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urlsplit

import pytest

try:
    import tracemalloc
except ImportError:  # PyPy has none: the tests of memory at its peak are CPython's
    tracemalloc = None

import rest_client
import rest_users
from rest_client import (Method, MultipartForm, Request, Response, Upload, UrlEncodedForm, send,
                         tls_context)

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "client-test-key"


class ReplyingHandler(BaseHTTPRequestHandler):
    """A test server's handler: HTTP/1.1, no log lines, and reply() to answer."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a head and a body in two writes would wait 40 ms for an ACK

    def log_message(self, format, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class ScriptedHandler(ReplyingHandler):
    """Answers by path; every request it sees is appended to server.received."""

    def answer(self):
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.received.append({"method": self.command, "path": self.path,
                                     "headers": self.headers.items(), "body": body})
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        route = parts.path.strip("/").split("/")
        getattr(self, "answer_" + route[0])(route[1:], query)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = answer

    def answer_echo(self, route, query):
        received = self.server.received[-1]
        self.reply(200, json.dumps({"method": received["method"], "path": received["path"],
                                    "body": received["body"].decode("latin-1")}).encode(),
                   [("Content-Type", "application/json")])

    def answer_status(self, route, query):
        self.reply(int(route[0]), b'{"status": %s}' % route[0].encode(),
                   [("Content-Type", "application/problem+json")])

    def answer_cookies(self, route, query):
        self.reply(200, b"ok", [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
                                ("x-lower-case", "kept")])

    def answer_text(self, route, query):
        charset = query.get("charset")
        content_type = "text/plain" + ("; charset=" + charset if charset else "")
        self.reply(200, query["text"].encode("latin-1"), [("Content-Type", content_type)])

    def answer_bytes(self, route, query):
        self.reply(200, b"caf\xe9 \xff ok", [("Content-Type", "text/plain; charset=utf-8")])

    def answer_redirect(self, route, query):
        self.reply(int(route[0]), b"moved", [("Location", query.get("to", "/echo"))])

    def answer_chain(self, route, query):
        step = int(route[0])
        self.reply(302, b"step %d" % step, [("Location", "/chain/%d" % (step + 1))])

    def answer_flaky(self, route, query):
        """503 (or ?status=) for the first ?fails= attempts at /flaky/KEY, then 200."""
        attempts = self.server.attempts[route[0]] = self.server.attempts.get(route[0], 0) + 1
        self.server.arrivals.setdefault(route[0], []).append(time.time())
        if attempts <= int(query.get("fails", "2")):
            headers = [("Content-Type", "application/problem+json")]
            if "after" in query:
                headers.append(("Retry-After", query["after"]))
            if "after_date" in query:  # a date, which counts whole seconds
                when = int(time.time() + int(query["after_date"]))
                self.server.dates[route[0]] = when
                headers.append(("Retry-After", email.utils.formatdate(when, usegmt=True)))
            return self.reply(int(query.get("status", "503")), b'{"try": "again"}', headers)
        self.reply(200, b"ok after %d" % attempts, [("Content-Type", "text/plain")])

    def answer_mixed_case(self, route, query):
        self.reply(200, b"{}", [("content-type", "application/json"), ("X-Dup", "1"),
                                ("x-dup", "2"), ("ETAG", '"7"')])

    def answer_empty(self, route, query):
        self.reply(200, b"", [("Content-Type", "application/json")])

    def answer_set_cookie(self, route, query):
        """Set the cookie ?cookie= names; with ?to=, as a 302 to there."""
        headers = [("Set-Cookie", query["cookie"])] + (
            [("Location", query["to"])] if "to" in query else [])
        self.reply(302 if "to" in query else 200, b"set", headers)

    def answer_slow(self, route, query):
        self.server.release.wait(10)  # the client's timeout must end the wait first
        self.reply(200, b"late")


class ScriptedServer(ThreadingMixIn, HTTPServer):  # ThreadingHTTPServer, which 3.6 lacks
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # /slow writes to a client that gave up: expected, not worth a traceback


@pytest.fixture(scope="module")
def scripted():
    server = ScriptedServer(("127.0.0.1", 0), ScriptedHandler)
    server.received = []
    server.attempts, server.arrivals, server.dates = {}, {}, {}
    server.release = threading.Event()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    server.url = "http://127.0.0.1:%d" % server.server_address[1]
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def users():
    server = rest_users.make_server("127.0.0.1", 0, api_key=KEY, quiet=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    server.url = "http://127.0.0.1:%d" % server.server_address[1]
    yield server
    server.shutdown()
    server.server_close()


def last_header(server, name):
    """The value of a header in the last request the scripted server received."""
    values = [value for key, value in server.received[-1]["headers"] if key.lower() == name.lower()]
    return values[-1] if values else None


# -- the API -------------------------------------------------------------------------------

def test_method_constants_are_the_verbs_strings():
    assert [Method.GET, Method.POST, Method.PUT, Method.PATCH, Method.DELETE, Method.HEAD,
            Method.OPTIONS] == ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def test_request_and_response_are_namedtuples_with_defaults():
    assert Request("GET", "http://x") == ("GET", "http://x", None, None, None)
    assert Response._fields == ("status_code", "body", "headers")


def test_a_reply_comes_back_as_a_response(scripted):
    resp, err = send(Request(Method.GET, scripted.url + "/echo"))
    assert err is None
    assert resp.status_code == 200
    assert json.loads(resp.body)["method"] == "GET"
    assert resp.headers["Content-Type"] == ["application/json"]


def test_a_lower_case_method_string_works(scripted):
    resp, err = send(Request("patch", scripted.url + "/echo", body="x"))
    assert err is None and json.loads(resp.body)["method"] == "PATCH"


def test_headers_are_sent(scripted):
    send(Request("GET", scripted.url + "/echo", headers={"X-Test": "1", "Accept": "text/xml"}))
    assert last_header(scripted, "X-Test") == "1"
    assert last_header(scripted, "Accept") == "text/xml"


# -- building the request ------------------------------------------------------------------

def test_params_are_encoded_and_appended_after_the_existing_query(scripted):
    resp, _ = send(Request("GET", scripted.url + "/echo?a=1#fragment",
                           params={"name": "Zoë & co", "sort": "-name"}))
    assert json.loads(resp.body)["path"] == "/echo?a=1&name=Zo%C3%AB+%26+co&sort=-name"


def test_a_fragment_is_dropped(scripted):
    resp, _ = send(Request("GET", scripted.url + "/echo#top"))
    assert json.loads(resp.body)["path"] == "/echo"


def test_a_non_ascii_path_is_percent_encoded(scripted):
    resp, err = send(Request("GET", scripted.url + "/echo/café?q=ü v"))
    assert err is None
    assert json.loads(resp.body)["path"] == "/echo/caf%C3%A9?q=%C3%BC%20v"


@pytest.mark.parametrize("body, content_type", [
    (b'{"a": 1}', "application/json"),
    ('{"a": 1}', "application/json"),
    ("[1, 2]", "application/json"),
    ("42", "text/plain; charset=utf-8"),  # JSON, but not an object or array
    ("123", "text/plain; charset=utf-8"),
    ("true", "text/plain; charset=utf-8"),
    ('"text"', "text/plain; charset=utf-8"),
    (b"123", "application/octet-stream"),
    ("hello", "text/plain; charset=utf-8"),
    (b"hello", "application/octet-stream"),
    (b"\xff\xfe", "application/octet-stream"),
    ("", "text/plain; charset=utf-8"),
])
def test_a_body_without_content_type_gets_a_sensible_one(scripted, body, content_type):
    resp, err = send(Request("POST", scripted.url + "/echo", body=body))
    assert err is None
    assert last_header(scripted, "Content-Type") == content_type
    expected = body if isinstance(body, bytes) else body.encode("utf-8")
    assert scripted.received[-1]["body"] == expected


def test_a_body_nested_too_deep_for_json_is_sent_as_text(scripted):
    resp, err = send(Request("POST", scripted.url + "/echo", body="[" * 100000))
    assert err is None and resp.status_code == 200
    assert last_header(scripted, "Content-Type") == "text/plain; charset=utf-8"


def test_a_content_type_given_is_kept_whatever_its_case(scripted):
    send(Request("POST", scripted.url + "/echo", headers={"content-type": "application/xml"},
                 body="<user/>"))
    assert last_header(scripted, "Content-Type") == "application/xml"


def test_a_str_body_is_sent_as_utf8(scripted):
    send(Request("PUT", scripted.url + "/echo", body="Zoë 🦉"))
    assert scripted.received[-1]["body"] == "Zoë 🦉".encode("utf-8")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "data:,hello",
                                 "javascript:alert(1)", "127.0.0.1:8000/users", "http://",
                                 "http://[::1", "not a url"])
def test_only_http_and_https_urls_are_sent(url):
    resp, err = send(Request("GET", url))
    assert resp is None
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("headers", [{"X-Bad": "a\r\nInjected: 1"}, {"X-Bad": "a\nb"},
                                     {"X-Bad\r\n": "a"}, {"X-Bad": "snow ☃"},
                                     {"Bad Name": "a"}, {"": "a"}, {"X-Nul": "a\0b"}])
def test_headers_that_cannot_be_sent_are_an_error_value(scripted, headers):
    before = len(scripted.received)
    resp, err = send(Request("GET", scripted.url + "/echo", headers=headers))
    assert resp is None and isinstance(err, ValueError)
    assert len(scripted.received) == before  # nothing was sent


def test_a_latin1_header_value_is_sent(scripted):
    resp, err = send(Request("GET", scripted.url + "/echo", headers={"X-Name": "café"}))
    assert err is None
    assert last_header(scripted, "X-Name") == "café"


CIRCULAR = []
CIRCULAR.append(CIRCULAR)


@pytest.mark.parametrize("body, message", [
    (42, "body must be bytes, str, a dict, a list, a form, a file, an iterable of bytes or None, "
         "not int"),
    ({"a": {1, 2}}, None),  # None: what json.dumps itself says (its words differ by version)
    (CIRCULAR, "the body cannot be sent as JSON: Circular reference detected"),
])
def test_a_body_of_another_type_raises_type_error_at_once(scripted, body, message):
    if message is None:
        with pytest.raises(TypeError) as raised:
            json.dumps(body)
        message = str(raised.value)
    count = len(scripted.received)
    with pytest.raises(TypeError) as raised:
        send(Request("POST", scripted.url + "/echo", body=body))
    assert str(raised.value) == message
    assert len(scripted.received) == count  # nothing was sent


@pytest.mark.parametrize("method", ["GET X", "", "G\r\nET"])
def test_a_malformed_method_is_an_error_value(scripted, method):
    resp, err = send(Request(method, scripted.url + "/echo"))
    assert resp is None and isinstance(err, ValueError)


def test_a_timeout_comes_back_as_an_error_value(scripted):
    resp, err = send(Request("GET", scripted.url + "/slow"), timeout=0.1)
    assert resp is None
    assert isinstance(err, rest_client.Timeout) and isinstance(err, TimeoutError)
    assert str(err) == "no reply from %s within the time allowed" % scripted.url[7:]


def test_connection_refused_comes_back_as_an_error_value():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: the connection is refused
        resp, err = send(Request("GET", "http://127.0.0.1:%d/" % port), timeout=5)
    assert resp is None and isinstance(err, rest_client.CouldNotConnect)
    assert isinstance(err.reason, ConnectionRefusedError)
    assert str(err) == "could not connect to 127.0.0.1 port %d: Connection refused" % port


def test_an_unknown_host_comes_back_as_an_error_value():
    resp, err = send(Request("GET", "http://no-such-host.invalid/"), timeout=5)
    assert resp is None and isinstance(err, rest_client.NameNotResolved)
    assert str(err).startswith("could not resolve host no-such-host.invalid: ")


def test_a_server_that_hangs_up_comes_back_as_an_error_value():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def hang_up():
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.close()

        thread = threading.Thread(target=hang_up)
        thread.start()
        resp, err = send(Request("GET", "http://127.0.0.1:%d/" % listener.getsockname()[1]),
                         timeout=5)
        thread.join()
    assert resp is None and err is not None


# -- reading the reply ---------------------------------------------------------------------

@pytest.mark.parametrize("status", [400, 401, 404, 409, 422, 500, 503])
def test_an_error_status_is_a_response_with_body_and_headers(scripted, status):
    resp, err = send(Request("GET", "%s/status/%d" % (scripted.url, status)))
    assert err is None
    assert resp.status_code == status
    assert resp.body == '{"status": %d}' % status
    assert resp.headers["Content-Type"] == ["application/problem+json"]


def test_repeated_headers_keep_every_value_and_the_servers_spelling(scripted):
    resp, _ = send(Request("GET", scripted.url + "/cookies"))
    assert resp.headers["Set-Cookie"] == ["a=1", "b=2"]
    assert resp.headers["x-lower-case"] == ["kept"]
    assert [name for name in resp.headers if name.lower() in ("set-cookie", "x-lower-case")] == [
        "Set-Cookie", "x-lower-case"]  # the keys are spelled as the server sent them


def test_the_body_is_decoded_with_the_charset_named(scripted):
    resp, _ = send(Request("GET", scripted.url + "/text", params={"text": "café",
                                                                   "charset": "iso-8859-1"}))
    assert resp.body == "café"


def test_without_a_charset_the_body_is_utf8_with_bad_bytes_replaced(scripted):
    resp, err = send(Request("GET", scripted.url + "/bytes"))
    assert err is None
    assert resp.body == "caf\ufffd \ufffd ok"


def test_an_unknown_charset_falls_back_to_utf8(scripted):
    resp, _ = send(Request("GET", scripted.url + "/text", params={"text": "ok",
                                                                   "charset": "klingon"}))
    assert resp.body == "ok"


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_get_and_head_follow_redirects(scripted, method, code):
    resp, err = send(Request(method, "%s/redirect/%d" % (scripted.url, code),
                             params={"to": "/echo"}))
    assert err is None and resp.status_code == 200
    assert scripted.received[-1]["path"] == "/echo"
    assert scripted.received[-1]["method"] == method


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_other_methods_get_the_redirect_itself(scripted, method, code):
    before = len(scripted.received)
    resp, err = send(Request(method, "%s/redirect/%d" % (scripted.url, code), body="{}"))
    assert err is None
    assert resp.status_code == code
    assert resp.headers["Location"] == ["/echo"]
    assert resp.body == "moved"
    assert len(scripted.received) == before + 1  # the redirect was not followed


def test_at_most_10_redirects_then_the_last_3xx_is_the_response(scripted):
    before = len(scripted.received)
    resp, err = send(Request("GET", scripted.url + "/chain/0"))
    assert err is None
    assert resp.status_code == 302
    assert resp.body == "step 10"
    assert len(scripted.received) == before + 11


def test_a_redirect_keeps_headers_but_not_a_credential_for_another_host(scripted):
    port = scripted.server_address[1]
    auth = {"Authorization": "Bearer x", "X-Test": "1"}
    send(Request("GET", scripted.url + "/redirect/302", headers=auth, params={"to": "/echo"}))
    assert last_header(scripted, "Authorization") == "Bearer x"
    send(Request("GET", scripted.url + "/redirect/302", headers=auth,
                 params={"to": "http://localhost:%d/echo" % port}))
    assert scripted.received[-1]["path"] == "/echo"
    assert last_header(scripted, "Authorization") is None
    assert last_header(scripted, "X-Test") == "1"


def test_a_redirect_to_another_scheme_is_not_followed(scripted):
    resp, err = send(Request("GET", scripted.url + "/redirect/302",
                             params={"to": "file:///etc/passwd"}))
    assert err is None and resp.status_code == 302


def test_head_has_an_empty_body(scripted):
    resp, err = send(Request("HEAD", scripted.url + "/echo"))
    assert err is None and resp.status_code == 200 and resp.body == ""


# -- end to end against rest_users.py ------------------------------------------------------

def test_create_read_update_delete_against_the_users_service(users):
    auth = {"Authorization": "Bearer " + KEY, "X-Test": "1"}
    resp, err = send(Request(Method.POST, users.url + "/users", headers=auth,
                             body=b'{"name": "Ada", "email": "ada@example.com"}'))
    assert err is None and resp.status_code == 201
    location = resp.headers["Location"][0]
    resp, _ = send(Request("GET", users.url + "/users", headers=auth,
                           params={"sort": "-name", "limit": "10"}), timeout=5)
    assert resp.status_code == 200 and json.loads(resp.body)[0]["name"] == "Ada"
    assert resp.headers["X-Total-Count"] == ["1"]
    resp, _ = send(Request(Method.PATCH, users.url + location, headers=auth,
                           body='{"name": "Ada King"}'))
    assert resp.status_code == 200 and json.loads(resp.body)["name"] == "Ada King"
    resp, _ = send(Request(Method.DELETE, users.url + location, headers=auth))
    assert resp.status_code == 200
    assert json.loads(resp.body) == {"id": 1, "name": "Ada King", "email": "ada@example.com"}
    resp, _ = send(Request(Method.GET, users.url + location, headers=auth))
    assert resp.status_code == 404
    assert resp.headers["Content-Type"] == ["application/problem+json"]


def test_a_problem_from_the_service_is_a_response(users):
    resp, err = send(Request("GET", users.url + "/users"))
    assert err is None and resp.status_code == 401
    assert resp.headers["WWW-Authenticate"] == ['Bearer realm="users"']
    assert json.loads(resp.body)["status"] == 401


# -- the command line ----------------------------------------------------------------------

def run_cli_process(*args, api_key=None, stdin=None, env=None):
    """Run rest_client.py as a shell would, in a process of its own, with env added to
    the environment."""
    return subprocess.run([sys.executable, os.path.join(HERE, "rest_client.py")] + list(args),
                          input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=cli_environment(api_key, env), timeout=20)


def run_cli_forked(forks, *args, api_key=None, stdin=None, env=None):
    """Run the command line as run_cli_process does, in a process of its own (its own
    environment, streams and exit), forked by a ForkServer rather than started afresh:
    for what is not about Python's start."""
    run = forks.start(list(args), os.getcwd(), cli_environment(api_key, env))
    stdout, stderr = run.communicate(stdin or b"")
    return CliResult(run.returncode, stdout, stderr)


def cli_environment(api_key=None, added=None):
    """This process's environment without API_KEY, with added and api_key as API_KEY."""
    env = dict({name: value for name, value in os.environ.items() if name != "API_KEY"},
               **(added or {}))
    if api_key is not None:
        env["API_KEY"] = api_key
    return env


CliResult = collections.namedtuple("CliResult", "returncode stdout stderr")


def run_cli(*args, api_key=None, stdin=None):
    """Run the command line's main() in this process, as run_cli_process would run the file:
    its own stdin, stdout and stderr (bytes), its own API_KEY, argparse's exit as a status."""
    streams = [io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
               for data in (stdin or b"", b"", b"")]
    saved = sys.stdin, sys.stdout, sys.stderr, os.environ.pop("API_KEY", None)
    if api_key is not None:
        os.environ["API_KEY"] = api_key
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        returncode = rest_client.main(list(args))
    except SystemExit as exit:
        returncode = exit.code
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved[:3]
        os.environ.pop("API_KEY", None)
        if saved[3] is not None:
            os.environ["API_KEY"] = saved[3]
    for stream in streams[1:]:
        stream.flush()
    return CliResult(returncode, streams[1].buffer.getvalue(), streams[2].buffer.getvalue())


def test_cli_crud_with_the_key_from_api_key(users, forks):
    # end to end: the file itself, in a process of its own; then, as Python's start is
    # proven, each step in a process of its own forked from one that imported the file
    post = run_cli_process("POST", users.url + "/users", "-H", "X-Test: 1",
                           "-d", '{"name": "Cli", "email": "cli@example.com"}', api_key=KEY)
    assert post.returncode == 0, post.stderr
    user = json.loads(post.stdout)
    assert user["name"] == "Cli"
    path = "%s/users/%d" % (users.url, user["id"])
    run_cli = functools.partial(run_cli_forked, forks)
    get = run_cli("GET", path, api_key=KEY)
    assert json.loads(get.stdout) == user
    put = run_cli("PUT", path, "-d", '{"name": "Cli 2", "email": "cli@example.com"}', api_key=KEY)
    assert json.loads(put.stdout)["name"] == "Cli 2"
    delete = run_cli("DELETE", path, "-i", api_key=KEY)
    assert delete.returncode == 0
    assert delete.stdout.startswith(b"HTTP/1.1 200 OK\n")
    assert json.loads(delete.stdout.split(b"\n\n", 1)[1]) == dict(user, name="Cli 2")
    minimal = run_cli("DELETE", path, "-i", "-H", "Prefer: return=minimal", api_key=KEY)
    assert minimal.stdout.startswith(b"HTTP/1.1 404 Not Found\n")  # it is gone


def test_cli_sends_the_api_key_and_custom_headers(scripted):
    result = run_cli("POST", scripted.url + "/echo", "-H", "X-Test: 1", "-d", "{}", api_key=KEY)
    assert result.returncode == 0
    assert last_header(scripted, "Authorization") == "Bearer " + KEY
    assert last_header(scripted, "X-Test") == "1"
    assert last_header(scripted, "Content-Type") == "application/json"


def test_cli_an_authorization_header_given_wins_over_api_key(scripted):
    run_cli("GET", scripted.url + "/echo", "-H", "authorization: Basic eDp5", api_key=KEY)
    assert last_header(scripted, "Authorization") == "Basic eDp5"


def test_cli_without_api_key_sends_no_authorization(scripted):
    run_cli("GET", scripted.url + "/echo")
    assert last_header(scripted, "Authorization") is None


def test_cli_include_prints_status_line_headers_and_blank_line(scripted):
    result = run_cli("GET", scripted.url + "/cookies", "-i")
    head, _, body = result.stdout.decode().partition("\n\n")
    lines = head.split("\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    assert "Set-Cookie: a=1" in lines and "Set-Cookie: b=2" in lines
    assert body == "ok"


def test_cli_query_parameters_are_encoded(scripted):
    result = run_cli("GET", scripted.url + "/echo", "-q", "name=Ada Lovelace", "-q", "limit=5")
    assert json.loads(result.stdout)["path"] == "/echo?name=Ada+Lovelace&limit=5"


def test_cli_body_from_a_file_and_from_stdin(scripted, tmp_path):
    body_file = tmp_path / "body.json"
    body_file.write_bytes(b'{"from": "file"}')
    run_cli("POST", scripted.url + "/echo", "-d", "@" + str(body_file))
    assert scripted.received[-1]["body"] == b'{"from": "file"}'
    run_cli("POST", scripted.url + "/echo", "-d", "@-", stdin=b'{"from": "stdin"}')
    assert scripted.received[-1]["body"] == b'{"from": "stdin"}'


def test_cli_a_missing_body_file_is_exit_2(scripted, tmp_path):
    result = run_cli("POST", scripted.url + "/echo", "-d", "@" + str(tmp_path / "nope"))
    assert result.returncode == 2
    assert result.stderr.decode().startswith("rest_client: cannot read the body:")


def test_cli_exit_status_0_for_any_reply_without_fail(scripted):
    result = run_cli("GET", scripted.url + "/status/404")
    assert result.returncode == 0
    assert result.stdout == b'{"status": 404}'


@pytest.mark.parametrize("status, code", [(200, 0), (302, 0), (404, 1), (500, 1)])
def test_cli_fail_exits_1_on_4xx_and_5xx(scripted, status, code, capsys, monkeypatch):
    monkeypatch.delenv("API_KEY", raising=False)
    path = "/status/%d" % status if status != 302 else "/redirect/302?to=/status/302"
    assert rest_client.main(["POST" if status == 302 else "GET", scripted.url + path,
                             "--fail"]) == code
    assert capsys.readouterr().out == ("moved" if status == 302 else '{"status": %d}' % status)


def test_cli_no_reply_is_exit_3_with_one_line_on_stderr(scripted):
    result = run_cli("GET", scripted.url + "/slow", "--timeout", "0.1")
    assert result.returncode == 3
    assert result.stdout == b""
    stderr = result.stderr.decode()
    assert stderr.startswith("rest_client: no reply:") and stderr.count("\n") == 1


def test_cli_a_file_url_is_exit_2():
    result = run_cli("GET", "file:///etc/passwd")
    assert result.returncode == 2
    assert b"root:" not in result.stdout
    assert result.stderr.decode().startswith("rest_client: cannot send: only http:// and https://")


def test_cli_bad_arguments_are_argparse_errors():
    result = run_cli("GET", "http://x", "-H", "no colon")
    assert result.returncode == 2
    assert result.stderr.startswith(b"usage: rest_client.py")


def test_main_can_be_called_from_python(scripted, monkeypatch):
    monkeypatch.delenv("API_KEY", raising=False)
    output = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(output, encoding="utf-8"))
    assert rest_client.main(["GET", scripted.url + "/echo?from=python"]) == 0
    assert json.loads(output.getvalue().decode("utf-8")) == {
        "method": "GET", "path": "/echo?from=python", "body": ""}


# -- headers whatever their case, and json() -----------------------------------------------

def test_header_look_ups_ignore_case_and_keys_keep_the_servers_spelling(scripted):
    resp, err = send(Request("GET", scripted.url + "/mixed_case"))
    assert err is None
    assert resp.headers["Content-Type"] == resp.headers["CONTENT-TYPE"] == ["application/json"]
    assert resp.headers.get("etag") == ['"7"'] and "Etag" in resp.headers
    assert resp.headers["x-DUP"] == ["1", "2"]  # repeated, whatever the case: one entry
    assert [name for name in resp.headers if name.lower() == "x-dup"] == ["X-Dup"]
    assert "content-type" in list(resp.headers)
    assert resp.headers.get("X-Missing") is None and "X-Missing" not in resp.headers
    with pytest.raises(KeyError):
        resp.headers["X-Missing"]
    assert isinstance(resp.headers, dict)


def test_json_parses_the_body(scripted):
    resp, _ = send(Request("GET", scripted.url + "/echo?x=1"))
    assert resp.json() == {"method": "GET", "path": "/echo?x=1", "body": ""}


@pytest.mark.parametrize("path", ["/empty", "/cookies"])
def test_json_of_an_empty_or_non_json_body_is_a_value_error(scripted, path):
    resp, _ = send(Request("GET", scripted.url + path))
    with pytest.raises(ValueError):
        resp.json()


# -- retries -------------------------------------------------------------------------------

def flaky(scripted, query):
    """A new /flaky key, so that each test counts its own attempts."""
    key = "k%d" % len(scripted.attempts)
    scripted.attempts[key] = 0
    return key, "%s/flaky/%s?%s" % (scripted.url, key, query)


@pytest.mark.parametrize("status", [503, 429])
def test_a_503_or_429_is_retried_until_the_reply_comes(scripted, status):
    key, url = flaky(scripted, "after=0&fails=2&status=%d" % status)
    resp, err = send(Request("GET", url), retries=3)
    assert err is None and resp.status_code == 200 and resp.body == "ok after 3"
    assert scripted.attempts[key] == 3


def test_retries_stop_at_the_count_with_the_last_reply(scripted):
    key, url = flaky(scripted, "after=0&fails=5")
    resp, err = send(Request("GET", url), retries=2)
    assert err is None and resp.status_code == 503 and resp.body == '{"try": "again"}'
    assert scripted.attempts[key] == 3


def test_without_retries_a_503_is_the_reply(scripted):
    key, url = flaky(scripted, "after=0")
    resp, _ = send(Request("GET", url))
    assert resp.status_code == 503 and scripted.attempts[key] == 1


@pytest.mark.parametrize("method", ["PUT", "DELETE", "HEAD", "OPTIONS"])
def test_idempotent_methods_are_retried(scripted, method):
    key, url = flaky(scripted, "after=0&fails=1")
    resp, _ = send(Request(method, url, body="{}" if method == "PUT" else None), retries=1)
    assert resp.status_code == 200 and scripted.attempts[key] == 2


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_post_and_patch_are_never_retried(scripted, method):
    key, url = flaky(scripted, "after=0&fails=1")
    resp, _ = send(Request(method, url, body="{}"), retries=3)
    assert resp.status_code == 503 and scripted.attempts[key] == 1


def waits_instead_of_sleeping(monkeypatch):
    """The waits send() sleeps, recorded instead of slept (its clock otherwise the real one)."""
    waits = []
    monkeypatch.setattr(rest_client, "time", types.SimpleNamespace(
        sleep=waits.append, monotonic=time.monotonic, time=time.time))
    return waits


def test_retry_after_in_seconds_is_honoured(scripted, monkeypatch):
    key, url = flaky(scripted, "after=1&fails=1")
    waits = waits_instead_of_sleeping(monkeypatch)
    resp, _ = send(Request("GET", url), retries=1)
    assert resp.status_code == 200
    assert waits == [1.0]  # Retry-After: 1
    assert len(scripted.arrivals[key]) == 2


def test_retry_after_as_an_http_date_is_honoured(scripted):
    key, url = flaky(scripted, "after_date=1&fails=1")
    resp, _ = send(Request("GET", url), retries=1)
    assert resp.status_code == 200
    first, second = scripted.arrivals[key]
    assert second >= scripted.dates[key] - 0.05  # not before the date the server named
    assert second - first < 2.0


def test_without_retry_after_the_client_backs_off(scripted, monkeypatch):
    key, url = flaky(scripted, "fails=1")
    waits = waits_instead_of_sleeping(monkeypatch)
    resp, _ = send(Request("GET", url), retries=1)
    assert resp.status_code == 200
    assert len(waits) == 1 and 0.25 <= waits[0] <= 0.75  # the first wait: 0.5 s, give or take half
    assert len(scripted.arrivals[key]) == 2


def reply_with_retry_after(value):
    return Response(503, "", {"Retry-After": [value]})


@pytest.mark.parametrize("value, wait", [("0", 0.0), ("7", 7.0), ("3600", 30.0),
                                         (email.utils.formatdate(0, usegmt=True), 0.0)])
def test_the_wait_is_retry_after_capped_at_30_seconds(value, wait):
    assert rest_client.retry_wait(reply_with_retry_after(value), 0) == wait


def test_a_retry_after_date_in_the_future_is_seconds_from_now():
    later = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8.5 <= rest_client.retry_wait(reply_with_retry_after(later), 0) <= 10.0


def test_backoff_doubles_with_jitter_and_is_capped_at_8_seconds():
    for attempt, base in enumerate([0.5, 1, 2, 4, 8, 16, 32]):
        for _ in range(50):
            wait = rest_client.retry_wait(reply_with_retry_after("soon"), attempt)
            assert min(base / 2, 8.0) <= wait <= min(base * 1.5, 8.0)
            assert rest_client.retry_wait(None, attempt) <= 8.0


class HangUpServer:
    """A server that accepts each connection and closes it at once, counting them."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = "http://127.0.0.1:%d/" % self.listener.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.hang_up, daemon=True).start()

    def hang_up(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            self.accepted += 1
            connection.close()


@pytest.fixture
def hang_up_server():
    server = HangUpServer()
    yield server
    server.listener.close()


def test_no_reply_is_retried_for_get(hang_up_server, monkeypatch):
    waits_instead_of_sleeping(monkeypatch)  # the back-off: test_without_retry_after_..._backs_off
    resp, err = send(Request("GET", hang_up_server.url), timeout=5, retries=1)
    assert resp is None and err is not None
    assert hang_up_server.accepted == 2


def test_no_reply_is_not_retried_for_post(hang_up_server):
    resp, err = send(Request("POST", hang_up_server.url, body="{}"), timeout=5, retries=2)
    assert resp is None and err is not None
    assert hang_up_server.accepted == 1


# -- the command line: -v, --retry, --timeout, a line end on a terminal ---------------------

def test_cli_verbose_shows_the_request_as_sent_and_the_reply_head(scripted):
    port = scripted.server_address[1]
    result = run_cli("GET", scripted.url + "/echo", "-q", "limit=5", "-v", api_key=KEY)
    assert result.returncode == 0
    lines = result.stderr.decode().splitlines()
    assert lines[0] == "> GET /echo?limit=5 HTTP/1.1"
    assert "> Host: 127.0.0.1:%d" % port in lines
    assert "> Authorization: Bearer ***" in lines
    assert ">" in lines and lines.index(">") < lines.index("< HTTP/1.1 200 OK")
    assert "< Content-Type: application/json" in lines and lines[-1] == "<"
    assert KEY not in result.stderr.decode()
    assert json.loads(result.stdout)["path"] == "/echo?limit=5"


def test_cli_retry_says_why_each_retry_is_made(scripted):
    key, url = flaky(scripted, "after=0&fails=2")
    result = run_cli("GET", url, "--retry", "3", "-v")
    assert result.returncode == 0 and result.stdout == b"ok after 3"
    retries = [line for line in result.stderr.decode().splitlines() if line.startswith("* ")]
    assert retries == ["* 503 Service Unavailable: retrying in 0 s (Retry-After: 0)"] * 2
    assert scripted.attempts[key] == 3


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "x"])
def test_cli_a_timeout_must_be_above_0(timeout, capsys):
    with pytest.raises(SystemExit) as exited:
        rest_client.main(["GET", "http://127.0.0.1:1/", "--timeout", timeout])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("usage: rest_client.py")
    assert "--timeout: must be a number of seconds above 0" in stderr


def read_terminal(controller):
    """Everything a pseudo-terminal's other end wrote, until it is closed."""
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other end is closed: all is read
            return shown
        if not chunk:
            return shown
        shown += chunk


def test_cli_adds_a_line_end_on_a_terminal_only(scripted):
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen([sys.executable, os.path.join(HERE, "rest_client.py"), "GET",
                                    scripted.url + "/status/404"], stdout=terminal)
        assert process.wait(20) == 0
        os.close(terminal)
        terminal = None
        output = read_terminal(controller)
    finally:
        os.close(controller)
        if terminal is not None:
            os.close(terminal)
    assert output == b'{"status": 404}\r\n'  # the terminal shows the line end as CR LF


# -- kept connections, JSON bodies, compressed replies, links ------------------------------

class CountingServer:
    """An HTTP/1.1 server on a raw socket that counts connections and requests. answer(n,
    request) gives the bytes that answer the connection's request number n (from 1); None
    to close the connection without a word; or (bytes, CLOSE) to answer, then close."""

    def __init__(self, answer):
        self.answer, self.requests, self.connections, self.closed_by_client = answer, [], 0, 0
        self.closed_by_server = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def serve(self, connection):
        with connection, connection.makefile("rb") as stream:
            for number in itertools.count(1):
                request = self.read_request(stream)
                if request is None:
                    with self.lock:
                        self.closed_by_client += 1
                    return
                with self.lock:
                    self.requests.append(request)
                answer = self.answer(number, request)
                if answer is None:
                    return
                if isinstance(answer, tuple):
                    connection.sendall(answer[0])
                    connection.shutdown(socket.SHUT_RDWR)
                    self.closed_by_server.set()
                    return
                connection.sendall(answer)

    @staticmethod
    def read_request(stream):
        """The next request as a dict, or None when the client closed the connection."""
        head = CountingServer.read_request_head(stream)
        if head is None:
            return None
        method, target, headers = head
        if headers.get("transfer-encoding") == "chunked":
            body = CountingServer.read_chunks(stream)
        else:
            body = stream.read(int(headers.get("content-length", 0)))
        return {"method": method, "target": target, "headers": headers, "body": body}

    @staticmethod
    def read_chunks(stream):
        """A chunked body (RFC 9112 §7.1), its chunks joined."""
        body = b""
        for size in iter(lambda: int(stream.readline().split(b";")[0], 16), 0):
            body += stream.read(size)
            stream.readline()
        stream.readline()  # the empty trailer section
        return body

    @staticmethod
    def read_request_head(stream):
        """The method, target and headers (names in lower case) of the next request, or None
        when the client closed the connection."""
        line = stream.readline()
        if not line:
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        for line in iter(stream.readline, b"\r\n"):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.lower()] = value.strip()
        return method, target, headers

    def close(self):
        self.listener.close()


CLOSE = "close"


def answer(body=b"ok", status="200 OK", headers=()):
    """The bytes of a reply with a Content-Length."""
    head = ["HTTP/1.1 " + status, "Content-Length: %d" % len(body)] + list(headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


@pytest.fixture
def counting():
    """Make CountingServers, closed and with the client's kept connections closed after."""
    servers = []

    def make(answer_for):
        server = CountingServer(answer_for)
        servers.append(server)
        return server

    yield make
    rest_client.close()
    for server in servers:
        server.close()


def test_twenty_gets_go_on_one_connection(counting):
    server = counting(lambda number, request: answer(b"%d" % number))
    bodies = [send(Request("GET", server.url + "/users/1"))[0].body for _ in range(20)]
    assert bodies == [str(number) for number in range(1, 21)]
    assert server.connections == 1 and len(server.requests) == 20
    assert "connection" not in server.requests[0]["headers"]  # urllib would send close


@pytest.mark.parametrize("reply", [  # the server leaves the connection open, but said
    answer(b"bye", headers=["Connection: close"]),  # the client is to close it
    b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nbye",  # HTTP/1.0 without keep-alive
    (b"HTTP/1.1 200 OK\r\n\r\nbye", CLOSE),  # no length: the body ends with the connection
])
def test_a_reply_that_ends_its_connection_is_not_reused(counting, reply):
    server = counting(lambda number, request: reply)
    replies = [send(Request("GET", server.url + "/"))[0] for _ in range(3)]
    assert [(resp.status_code, resp.body) for resp in replies] == [(200, "bye")] * 3
    assert server.connections == 3


def test_a_connection_the_server_closed_while_idle_is_not_used(counting):
    server = counting(lambda number, request: (answer(), CLOSE))
    first = send(Request("GET", server.url + "/"))[0]
    assert server.closed_by_server.wait(5)  # the kept connection is closed under the client
    resp, err = send(Request("POST", server.url + "/users", body={"name": "Ada"}))
    assert first.body == "ok" and err is None and resp.body == "ok"
    assert [request["method"] for request in server.requests] == ["GET", "POST"]
    assert server.connections == 2


@pytest.mark.parametrize("method, sent", [("GET", 3), ("PUT", 3), ("DELETE", 3),
                                          ("POST", 2), ("PATCH", 2)])
def test_a_kept_connection_that_dies_under_a_request_retries_only_what_may_go_twice(
        counting, method, sent):
    """The server answers the first request, then drops the connection when the second
    arrives: an idempotent request goes once more on a new connection; a POST or PATCH,
    which may have reached the server, comes back as an error value."""
    server = counting(lambda number, request: answer() if number == 1 else None)
    assert send(Request("GET", server.url + "/"))[0].body == "ok"
    resp, err = send(Request(method, server.url + "/users/1", body={"name": "Ada"}))
    assert len(server.requests) == sent
    if sent == 3:
        assert err is None and resp.body == "ok" and server.connections == 2
    else:
        assert resp is None and isinstance(err, rest_client.EmptyReply)
        assert isinstance(err.reason, http.client.RemoteDisconnected)
        assert server.connections == 1


def test_a_new_connection_that_dies_is_not_tried_again(counting):
    server = counting(lambda number, request: None)
    resp, err = send(Request("GET", server.url + "/"))
    assert resp is None and isinstance(err, rest_client.EmptyReply)
    assert isinstance(err.reason, http.client.RemoteDisconnected)
    assert len(server.requests) == 1


def test_eight_threads_share_the_kept_connections(counting):
    server = counting(lambda number, request: answer(request["target"].encode()))
    failures = []

    def fetch(thread):
        for n in range(25):
            path = "/t%d/%d" % (thread, n)
            resp, err = send(Request("GET", server.url + path))
            if err is not None or resp.body != path:
                failures.append((path, err, resp))

    threads = [threading.Thread(target=fetch, args=(thread,)) for thread in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(server.requests) == 200
    assert server.connections <= 8  # no thread waits for another's, none needs a ninth


def test_close_closes_the_kept_connections(counting):
    server = counting(lambda number, request: answer())
    send(Request("GET", server.url + "/"))
    rest_client.close()
    deadline = time.monotonic() + 5
    while server.closed_by_client < 1:
        assert time.monotonic() < deadline, "the server never saw the connection close"
        time.sleep(0.01)
    send(Request("GET", server.url + "/"))
    assert server.connections == 2


@pytest.mark.parametrize("body, sent, content_type", [
    ({"name": "Ada", "tags": ["é"]}, b'{"name": "Ada", "tags": ["\\u00e9"]}', "application/json"),
    ([1, 2], b"[1, 2]", "application/json"),
    ("123", b"123", "text/plain; charset=utf-8"),
])
def test_dict_and_list_bodies_go_as_json(counting, body, sent, content_type):
    server = counting(lambda number, request: answer())
    send(Request("POST", server.url + "/", body=body))
    assert server.requests[-1]["body"] == sent
    assert server.requests[-1]["headers"]["content-type"] == content_type


def test_a_dict_body_keeps_the_content_type_given(counting):
    server = counting(lambda number, request: answer())
    send(Request("PATCH", server.url + "/", headers={"Content-Type": "application/merge-patch+json"},
                 body={"name": None}))
    assert server.requests[-1]["body"] == b'{"name": null}'
    assert server.requests[-1]["headers"]["content-type"] == "application/merge-patch+json"


def deflated(data, wbits):
    compressor = zlib.compressobj(wbits=wbits)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize("coding, encoded", [
    ("gzip", gzip.compress("héllo".encode())),
    ("GZip", gzip.compress("héllo".encode())),
    ("deflate", zlib.compress("héllo".encode())),
    ("deflate", deflated("héllo".encode(), -zlib.MAX_WBITS)),  # bare deflate, as some send
])
def test_a_compressed_reply_is_decoded(counting, coding, encoded):
    server = counting(lambda number, request: answer(encoded, headers=[
        "Content-Encoding: " + coding, "Content-Type: text/plain; charset=utf-8"]))
    resp, err = send(Request("GET", server.url + "/"))
    assert err is None and resp.body == "héllo"
    assert resp.headers["Content-Encoding"] == [coding]  # the headers as the server sent them
    assert server.requests[-1]["headers"]["accept-encoding"] == "gzip, deflate"


def test_a_corrupt_gzip_reply_is_an_error_value(counting):
    server = counting(lambda number, request: answer(b"\x1f\x8b not gzip",
                                                     headers=["Content-Encoding: gzip"]))
    resp, err = send(Request("GET", server.url + "/"))
    assert resp is None and isinstance(err, rest_client.UndecodableReply)
    assert str(err).startswith("the gzip reply does not decode: ")
    result = run_cli("GET", server.url + "/")
    assert (result.returncode, result.stdout) == (3, b"")
    assert result.stderr.startswith(
        b"rest_client: incomplete reply: the gzip reply does not decode: ")


def test_a_coding_the_request_did_not_ask_for_is_left_alone(counting):
    encoded = gzip.compress(b"raw")
    server = counting(lambda number, request: answer(encoded, headers=["Content-Encoding: gzip"]))
    resp, err = send(Request("GET", server.url + "/", headers={"Accept-Encoding": "identity"}))
    assert err is None and resp.body == encoded.decode("utf-8", errors="replace")
    assert server.requests[-1]["headers"]["accept-encoding"] == "identity"


def test_links_are_absolute_urls_by_relation_after_a_redirect(counting):
    links = ('</users?offset=10&limit=5>; rel="next", </users?offset=0&limit=5>; rel=first, '
             '<https://other.example/all>; rel="last Archive"; title="a, b", </x>; rel="next"')

    def answer_for(number, request):
        if request["target"] == "/start":
            return answer(b"", "302 Found", ["Location: /api/v1/users?offset=5"])
        return answer(b"[]", headers=["Link: " + links])

    server = counting(answer_for)
    resp, err = send(Request("GET", server.url + "/start"))
    assert err is None and resp.url == server.url + "/api/v1/users?offset=5"
    assert resp.links() == {"next": server.url + "/users?offset=10&limit=5",
                            "first": server.url + "/users?offset=0&limit=5",
                            "last": "https://other.example/all",
                            "archive": "https://other.example/all"}
    status, body, headers = resp  # still a 3-tuple
    assert (status, body) == (200, "[]")


def test_a_reply_without_link_has_no_links(scripted):
    assert send(Request("GET", scripted.url + "/empty"))[0].links() == {}


def test_paging_by_link_is_a_plain_loop(users):
    auth = {"Authorization": "Bearer " + KEY}
    for n in range(7):
        send(Request("POST", users.url + "/users", headers=auth,
                     body={"name": "Page %d" % n, "email": "page%d@example.com" % n}))
    names, url = [], users.url + "/users?q=page&limit=3"
    while url:
        resp, err = send(Request("GET", url, headers=auth))
        names += [user["name"] for user in resp.json()]
        url = resp.links().get("next")
    assert names == ["Page %d" % n for n in range(7)]


def test_a_proxy_from_the_environment_is_used(counting):
    server = counting(lambda number, request: answer(request["target"].encode()))
    env = {"http_proxy": server.url, "no_proxy": ""}
    first = run_cli_process("GET", "http://users.example/users?limit=1", env=env)
    assert (first.returncode, first.stdout) == (0, b"http://users.example/users?limit=1")
    assert server.requests[-1]["headers"]["host"] == "users.example"


@pytest.mark.parametrize("flag", ["-j", "--json"])
def test_cli_json_sends_json_text_with_its_content_type(counting, flag):
    server = counting(lambda number, request: answer())
    result = run_cli("POST", server.url + "/users", flag, '{"name": "Ada"}')
    assert result.returncode == 0
    assert server.requests[-1]["body"] == b'{"name": "Ada"}'
    assert server.requests[-1]["headers"]["content-type"] == "application/json"


def test_cli_json_that_does_not_parse_is_a_usage_error_naming_the_place(counting):
    server = counting(lambda number, request: answer())
    typo = '{"name":\n "Ada",}'
    with pytest.raises(ValueError) as raised:
        json.loads(typo)
    said = str(raised.value)  # json's words, which differ between versions and PyPy
    assert re.search(r"line 2 column \d+ \(char \d+\)", said)
    result = run_cli("POST", server.url + "/users", "-j", typo)
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr == ("rest_client: --json is not JSON: %s\n" % said).encode()
    assert server.requests == []


def test_cli_data_and_json_together_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        rest_client.main(["POST", "http://127.0.0.1:1/", "-d", "x", "-j", "{}"])
    assert exited.value.code == 2
    assert "argument -j/--json: not allowed with argument -d" in capsys.readouterr().err


def test_a_request_that_timed_out_is_not_sent_again_and_ends_its_connection(counting):
    late = threading.Event()

    def answer_for(number, request):
        if number == 2:
            late.wait(5)  # until the client has given up
        return answer()

    server = counting(answer_for)
    assert send(Request("GET", server.url + "/"))[0].body == "ok"
    resp, err = send(Request("GET", server.url + "/slow"), timeout=0.1, retries=0)
    late.set()
    assert resp is None and isinstance(err, socket.timeout)
    assert send(Request("GET", server.url + "/"))[0].body == "ok"
    assert [request["target"] for request in server.requests] == ["/", "/slow", "/"]
    assert server.connections == 2


# -- where curl works: exact bytes ---------------------------------------------------------

BLOB = bytes(range(256)) * 12  # every byte value, 3,072 bytes: no charset decodes it back


def blob_server(counting, headers=("Content-Type: application/octet-stream",)):
    return counting(lambda number, request: answer(BLOB, headers=list(headers)))


def test_content_holds_the_exact_bytes_and_body_the_text(counting):
    server = blob_server(counting)
    resp, err = send(Request("GET", server.url + "/blob.bin"))
    assert err is None and resp.content == BLOB
    assert resp.body == BLOB.decode("utf-8", errors="replace")
    status, body, headers = resp  # still the three-tuple
    assert (status, body, headers["Content-Length"]) == (200, resp.body, ["3072"])


def test_content_is_the_bytes_after_the_coding_asked_for_is_undone(counting):
    server = counting(lambda number, request: answer(gzip.compress(BLOB), headers=[
        "Content-Encoding: gzip", "Content-Type: application/octet-stream"]))
    resp, err = send(Request("GET", server.url + "/"))
    assert err is None and resp.content == BLOB


def test_cli_writes_the_exact_bytes_to_stdout(counting):
    server = blob_server(counting)
    result = run_cli("GET", server.url + "/blob.bin")
    assert (result.returncode, result.stdout, result.stderr) == (0, BLOB, b"")


def test_cli_output_dash_is_stdout(counting, tmp_path):
    server = blob_server(counting)
    result = run_cli("GET", server.url + "/blob.bin", "-o", "-")
    assert (result.returncode, result.stdout, result.stderr) == (0, BLOB, b"")


def test_cli_writes_the_exact_bytes_to_a_file_and_nothing_else(counting, tmp_path):
    server = blob_server(counting)
    target = tmp_path / "blob.bin"
    result = run_cli("GET", server.url + "/blob.bin", "-o", str(target))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert target.read_bytes() == BLOB
    assert os.listdir(str(tmp_path)) == ["blob.bin"]


def on_terminal(forks, args, stream="stdout"):
    """Run the command line (forked: test_cli_adds_a_line_end_on_a_terminal_only starts the
    file) with stdout or stderr on a terminal, the other piped; its exit status, what the
    terminal showed, and what the pipe got."""
    controller, terminal = pty.openpty()
    with open(terminal, "wb") as end:
        run = forks.start(args, os.getcwd(), cli_environment(), **{stream: end})
    shown = read_terminal(controller)
    os.close(controller)
    stdout, stderr = run.communicate()
    return run.returncode, shown, stderr if stream == "stdout" else stdout


def test_cli_does_not_print_a_binary_body_on_a_terminal_and_says_to_use_o(forks, counting):
    server = blob_server(counting)
    status, shown, stderr = on_terminal(forks, ["GET", server.url + "/blob.bin"])
    assert (status, shown) == (0, b"")
    assert stderr == (b"rest_client: the reply is binary (application/octet-stream, 3072 "
                      b"bytes) and is not printed on a terminal; use -o FILE to save it (-o - "
                      b"prints it)\n")
    status, shown, stderr = on_terminal(forks, ["GET", server.url + "/blob.bin", "-o", "-"])
    assert (status, stderr) == (0, b"") and len(shown) >= len(BLOB)  # as the terminal shows it


@pytest.mark.parametrize("content_type", ["text/csv", "application/json", "application/xml",
                                          "application/problem+json", "image/svg+xml"])
def test_cli_prints_text_types_on_a_terminal(forks, counting, content_type):
    server = counting(lambda number, request: answer(b"a,b", headers=[
        "Content-Type: " + content_type]))
    status, shown, stderr = on_terminal(forks, ["GET", server.url + "/"])
    assert (status, shown, stderr) == (0, b"a,b\r\n", b"")


def test_cli_a_nul_byte_makes_text_binary_on_a_terminal(forks, counting):
    server = counting(lambda number, request: answer(b"a\0b", headers=["Content-Type: text/plain"]))
    status, shown, stderr = on_terminal(forks, ["GET", server.url + "/"])
    assert (status, shown) == (0, b"")
    assert stderr.startswith(b"rest_client: the reply is binary (text/plain, 3 bytes)")


# -- where curl works: downloads to a file as they arrive ----------------------------------

MIB = 1 << 20


class BulkServer:
    """A raw HTTP/1.1 server for many bytes that allocates nothing per byte, so that
    tracemalloc sees the client alone: GET /N sends N MiB of one repeated MiB; POST reads
    the body into one buffer and answers its length, SHA-256 and Content-Type."""

    CHUNK = bytes(range(256)) * 4096

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def serve(self, connection):
        with connection, connection.makefile("rb") as stream:
            while True:
                request = CountingServer.read_request_head(stream)
                if request is None:
                    return
                method, target, headers = request
                if method == "POST":
                    self.answer_upload(connection, stream, headers)
                else:
                    self.send_mebibytes(connection, int(target.strip("/")))

    def send_mebibytes(self, connection, count):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                           b"Content-Length: %d\r\n\r\n" % (count * MIB))
        for _ in range(count):
            connection.sendall(self.CHUNK)

    def answer_upload(self, connection, stream, headers):
        length = int(headers["content-length"])
        digest, buffer, left = hashlib.sha256(), memoryview(bytearray(MIB)), length
        while left:
            count = stream.readinto(buffer[:min(left, MIB)])
            digest.update(buffer[:count])
            left -= count
        body = json.dumps({"bytes": length, "sha256": digest.hexdigest(),
                           "content_type": headers["content-type"]}).encode()
        connection.sendall(answer(body, headers=["Content-Type: application/json"]))

    def close(self):
        self.listener.close()


@pytest.fixture(scope="module")
def bulk():
    server = BulkServer()
    yield server
    server.close()


def with_peak_memory(call):
    """What call() returns, and the most memory Python held at once meanwhile."""
    if tracemalloc is None:
        pytest.skip("tracemalloc is CPython's")
    tracemalloc.start()
    try:
        return call(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_64_mib_download_goes_to_a_file_never_more_than_8_mib_in_memory(bulk, tmp_path):
    target = str(tmp_path / "big.bin")
    (resp, err), peak = with_peak_memory(
        lambda: send(Request("GET", bulk.url + "/64"), save_to=target))
    assert err is None and resp.status_code == 200
    assert (resp.body, resp.content, resp.saved_to, resp.saved_size) == ("", b"", target,
                                                                          64 * MIB)
    assert peak < 8 * MIB
    with open(target, "rb") as file:
        pieces = iter(lambda: file.read(MIB), b"")
        assert all(piece == BulkServer.CHUNK for piece in pieces)
    assert os.path.getsize(target) == 64 * MIB and os.listdir(str(tmp_path)) == ["big.bin"]


def peak_memory_of_cli(forks, stdout, *args):
    """Run rest_client.py's command line in a process of its own (forked: see ForkServer),
    its stdout a file; the largest resident memory it had, in KiB (Linux's unit)."""
    run = forks.start(list(args), os.getcwd(), environment(), stdout=stdout)
    run.communicate()
    assert run.returncode == 0
    return run.peak


def test_cli_streams_a_large_body_to_a_file_or_pipe_as_it_arrives(bulk, forks, tmp_path):
    """`rest_client.py GET URL > file` holds no more of the body than `-o file` does."""
    target, url = str(tmp_path / "big.bin"), bulk.url + "/64"
    with open(os.devnull, "wb") as nowhere:
        with_o = peak_memory_of_cli(forks, nowhere, "GET", url, "-o", target)
    with open(target, "wb") as stdout:
        redirected = peak_memory_of_cli(forks, stdout, "GET", url)
    assert redirected < with_o + 8 * 1024  # KiB: the 64 MiB never sit in memory
    with open(target, "rb") as file:
        pieces = iter(lambda: file.read(MIB), b"")
        assert all(piece == BulkServer.CHUNK for piece in pieces)
    assert os.path.getsize(target) == 64 * MIB


def test_cli_retry_streams_the_body_too(bulk, forks, tmp_path):
    """`rest_client.py GET URL --retry 2 > file` holds no more of the body than `-o` does."""
    target, url = str(tmp_path / "big.bin"), bulk.url + "/64"
    with open(target, "wb") as stdout:
        with_o = peak_memory_of_cli(forks, stdout, "GET", url, "-o", str(tmp_path / "o.bin"))
    with open(target, "wb") as stdout:
        retried = peak_memory_of_cli(forks, stdout, "GET", url, "--retry", "2")
    assert retried < with_o + 8 * 1024  # KiB: the 64 MiB never sit in memory
    assert os.path.getsize(target) == 64 * MIB


def test_a_body_cut_short_in_a_file_object_is_not_sent_again(counting):
    server = counting(lambda number, request: SHORT)
    file = io.BytesIO()
    resp, err = send(Request("GET", server.url + "/"), save_to=file, retries=2)
    assert resp is None and isinstance(err, rest_client.ReplyCutShort)
    assert len(server.requests) == 1 and file.getvalue() == BLOB[:1000]


def test_cli_include_streams_the_body_after_the_head(bulk, forks, tmp_path):
    """`rest_client.py GET URL -i > file` holds no more of the body than `-o file` does."""
    target, url = str(tmp_path / "big.bin"), bulk.url + "/64"
    with open(target, "wb") as stdout:
        with_o = peak_memory_of_cli(forks, stdout, "GET", url, "-o", str(tmp_path / "o.bin"))
    with open(target, "wb") as stdout:
        included = peak_memory_of_cli(forks, stdout, "GET", url, "-i")
    assert included < with_o + 8 * 1024  # KiB: the 64 MiB never sit in memory
    with open(target, "rb") as file:
        head = file.read(len(b"HTTP/1.1 200 OK\n"))
        assert head == b"HTTP/1.1 200 OK\n"
        rest = file.read(4096)
    assert rest.split(b"\n\n", 1)[1].startswith(BulkServer.CHUNK[:100])
    assert os.path.getsize(target) == 64 * MIB + len(head) + len(rest.split(b"\n\n")[0]) + 2


def test_a_download_to_a_file_object_says_where_the_bytes_went(counting):
    server = counting(lambda number, request: answer(gzip.compress(BLOB), headers=[
        "Content-Encoding: gzip"]))
    file = io.BytesIO()
    resp, err = send(Request("GET", server.url + "/"), save_to=file)
    assert err is None and (resp.saved_to, resp.saved_size) == (file, len(BLOB))
    assert file.getvalue() == BLOB and resp.body == ""


def test_a_download_after_a_redirect_holds_the_last_body_only(counting, tmp_path):
    def answer_for(number, request):
        if request["target"] == "/old":
            return answer(b"moved", status="302 Found", headers=["Location: /new"])
        return answer(BLOB)

    server = counting(answer_for)
    target = tmp_path / "blob.bin"
    resp, err = send(Request("GET", server.url + "/old"), save_to=str(target))
    assert err is None and resp.url == server.url + "/new"
    assert target.read_bytes() == BLOB and resp.saved_size == len(BLOB)


def test_an_error_reply_is_written_to_the_file_too_as_curl_does(counting, tmp_path):
    server = counting(lambda number, request: answer(b"gone", status="404 Not Found"))
    target = tmp_path / "x"
    resp, err = send(Request("GET", server.url + "/"), save_to=str(target))
    assert (resp.status_code, target.read_bytes(), resp.saved_size) == (404, b"gone", 4)


SHORT = (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + BLOB[:1000], CLOSE)
BROKEN_GZIP = (answer(gzip.compress(BLOB)[:-20], headers=["Content-Encoding: gzip"]), CLOSE)


@pytest.mark.parametrize("reply, error", [(SHORT, rest_client.BrokenDownload),
                                          (BROKEN_GZIP, rest_client.UndecodableReply)])
def test_a_download_that_fails_half_way_is_an_error_and_leaves_no_file(
        counting, tmp_path, reply, error):
    server = counting(lambda number, request: reply)
    resp, err = send(Request("GET", server.url + "/"), save_to=str(tmp_path / "x.bin"))
    assert resp is None and isinstance(err, error)
    assert os.listdir(str(tmp_path)) == []
    result = run_cli("GET", server.url + "/", "-o", str(tmp_path / "x.bin"))
    assert (result.returncode, result.stdout) == (3, b"")
    assert result.stderr.startswith(b"rest_client: incomplete reply: ")
    assert result.stderr.count(b"\n") == 1
    assert os.listdir(str(tmp_path)) == []


def test_a_short_download_says_how_short(counting, tmp_path):
    server = counting(lambda number, request: SHORT)
    resp, err = send(Request("GET", server.url + "/"), save_to=io.BytesIO())
    assert str(err) == "the reply ended after 1000 bytes, 4000 short of its length"


def test_a_download_into_a_missing_folder_is_an_error_value(counting, tmp_path):
    server = blob_server(counting)
    resp, err = send(Request("GET", server.url + "/"), save_to=str(tmp_path / "no" / "x"))
    assert resp is None and isinstance(err, FileNotFoundError)


def test_a_downloaded_file_gets_the_mode_any_new_file_gets(counting, tmp_path):
    server = blob_server(counting)
    target, other = tmp_path / "blob.bin", tmp_path / "other"
    other.write_bytes(b"")
    assert run_cli("GET", server.url + "/", "-o", str(target)).returncode == 0
    assert os.stat(str(target)).st_mode == os.stat(str(other)).st_mode


def test_cli_shows_progress_on_a_terminal_stderr_only(forks, bulk, tmp_path):
    target = str(tmp_path / "three.bin")
    started = time.monotonic()
    status, shown, stdout = on_terminal(forks, ["GET", bulk.url + "/3", "-o", target], "stderr")
    elapsed = time.monotonic() - started
    assert (status, stdout, os.path.getsize(target)) == (0, b"", 3 * MIB)
    lines = shown.decode().split("\r")
    assert shown.endswith(b"\r\n") and 2 <= len(lines) <= 2 + 10 * elapsed + 1
    assert re.fullmatch(r"3145728 of 3145728 bytes, [0-9.]+ MB/s \n", lines[-2] + "\n")
    assert run_cli("GET", bulk.url + "/1", "-o", target).stderr == b""  # not a terminal


# -- where curl works: the three bugs ------------------------------------------------------

def test_cli_repeated_query_parameters_and_headers_keep_every_value_in_order(counting):
    server = counting(lambda number, request: answer())
    result = run_cli("GET", server.url + "/", "-q", "name=Ada", "-q", "name=Alan",
                     "-H", "X-Tag: b", "-H", "X-Tag: a")
    assert result.returncode == 0
    assert server.requests[-1]["target"] == "/?name=Ada&name=Alan"
    assert server.requests[-1]["headers"]["x-tag"] == "b, a"  # one line (RFC 9110 §5.3)


@pytest.mark.parametrize("value", ["²", "¹0", "\u0661", "\uff13"])
def test_a_retry_after_in_non_ascii_digits_is_not_a_number(value):
    assert rest_client.retry_after(reply_with_retry_after(value)) is None


def test_a_superscript_retry_after_backs_off_instead_of_raising(counting, monkeypatch):
    server = counting(lambda number, request: answer(status="503 Service Unavailable",
                                                     headers=["Retry-After: ²"]))
    waits = waits_instead_of_sleeping(monkeypatch)
    resp, err = send(Request("GET", server.url + "/"), retries=1)
    assert err is None and resp.status_code == 503 and resp.headers["Retry-After"] == ["²"]
    assert len(waits) == 1 and 0.25 <= waits[0] <= 0.75


@pytest.mark.parametrize("method, head", [
    ("HEAD", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 31\r\n\r\n"),
    ("GET", "HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n\r\n"),
    ("GET", "HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\nContent-Length: 31\r\n\r\n"),
])
def test_head_204_and_304_have_no_body_to_decode(counting, method, head):
    server = counting(lambda number, request: head.encode())
    resp, err = send(Request(method, server.url + "/"))
    assert err is None and (resp.body, resp.content) == ("", b"")
    assert resp.headers["Content-Encoding"] == ["gzip"]


# -- where curl works: TLS with your own CA and client certificates -----------------------

PKI = {  # a CA, and a server (localhost, 127.0.0.1) and a client it signed, EC P-256,
    # valid from 2020 to 2126: a clock somewhat off still finds them valid
    "ca.pem": """-----BEGIN CERTIFICATE-----
MIIBgjCCASigAwIBAgIUD6e181bIL8uUX/jxVBKVoY/DrK8wCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTcmVzdF9jbGllbnQgdGVzdCBDQTAgFw0yMDAxMDEwMDAwMDBa
GA8yMTI2MDEwMTAwMDAwMFowHjEcMBoGA1UEAwwTcmVzdF9jbGllbnQgdGVzdCBD
QTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABG4J3tbluQfUPnvvLVp79wLseIpB
Wu5RNWYmIJrteWWPT3di+tGatwzzAUvb7cMWzHtGYmcREnT4jPYh9u/nlc+jQjBA
MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgGGMB0GA1UdDgQWBBQucafR
+eTr/ozhpk96r+vXce9tLTAKBggqhkjOPQQDAgNIADBFAiEArkvof5c6iXDlhx4G
rgZk02sFCmhmMJbv1pjgWhybGUsCIHz5FACYXjyLKr8dHfpR991LCK4MdLReCRXb
tJNMHP3F
-----END CERTIFICATE-----
""",
    "server.pem": """-----BEGIN CERTIFICATE-----
MIIBuDCCAV6gAwIBAgIULFlYj3M10anO0CZiyHJXc8PWsOEwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTcmVzdF9jbGllbnQgdGVzdCBDQTAgFw0yMDAxMDEwMDAwMDBa
GA8yMTI2MDEwMTAwMDAwMFowFDESMBAGA1UEAwwJbG9jYWxob3N0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEq+FvHUdjMiQVVewX1MmIerAe65zooRqnU7INumt8
iSHNtPOmwJk5KZiNW4rUiAh+/PxcCJ6oSPpxk6tGei6XrKOBgTB/MAwGA1UdEwEB
/wQCMAAwEwYDVR0lBAwwCgYIKwYBBQUHAwEwHQYDVR0OBBYEFPqCFRBHTRCgd4gn
9U2O7IMnUwQMMB8GA1UdIwQYMBaAFC5xp9H55Ov+jOGmT3qv69dx720tMBoGA1Ud
EQQTMBGCCWxvY2FsaG9zdIcEfwAAATAKBggqhkjOPQQDAgNIADBFAiAAiW9+ulPX
KQF9bNxzaBgRwdhlbIO9XdSZ/XnFri4GrQIhAIdUKfiBqEivy/6KraF5A1KT0LRP
j1oJtbulQ19s9/Md
-----END CERTIFICATE-----
""",
    "server.key": """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg6zMJl7iVhSlUFnlb
ZL5RLYKUwfuJfu8A43XjPh1ovGWhRANCAASr4W8dR2MyJBVV7BfUyYh6sB7rnOih
GqdTsg26a3yJIc2086bAmTkpmI1bitSICH78/FwInqhI+nGTq0Z6Lpes
-----END PRIVATE KEY-----
""",
    "client.pem": """-----BEGIN CERTIFICATE-----
MIIBqTCCAU+gAwIBAgIUU/QnepUJ3yXIqdHZJiRjCyNPqCgwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTcmVzdF9jbGllbnQgdGVzdCBDQTAgFw0yMDAxMDEwMDAwMDBa
GA8yMTI2MDEwMTAwMDAwMFowIjEgMB4GA1UEAwwXcmVzdF9jbGllbnQgdGVzdCBj
bGllbnQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQ+9XnhhCnYnL5vdcxB/LhJ
Gc3uachB1iuT8M0M13cXxvHjjX/4tI0irnTHerE6x9PxdW3Bdi4GRndKVbXtkLgN
o2UwYzAMBgNVHRMBAf8EAjAAMBMGA1UdJQQMMAoGCCsGAQUFBwMCMB0GA1UdDgQW
BBQvGaZ2zwP3mzg/I/a59AYBQzR6JjAfBgNVHSMEGDAWgBQucafR+eTr/ozhpk96
r+vXce9tLTAKBggqhkjOPQQDAgNIADBFAiA0qxr2a2D8gQ6oFwWacTIyHSu/okwp
b3CITSYpvJYEjQIhAOkltdY9RvBfi5kg2BQeJPc4zxefVHEi5zodjnENKFoO
-----END CERTIFICATE-----
""",
    "client.key": """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgGtIVLEbHje579EBk
4HnRdXozwMZnBKZpYkD029+/S+6hRANCAAQ+9XnhhCnYnL5vdcxB/LhJGc3uachB
1iuT8M0M13cXxvHjjX/4tI0irnTHerE6x9PxdW3Bdi4GRndKVbXtkLgN
-----END PRIVATE KEY-----
""",
}
CA_HASH = "c3039ded"  # openssl x509 -hash: the name OpenSSL looks for in a CA folder


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """The PEM files on disk, and a CA folder as OpenSSL reads one (capath, SSL_CERT_DIR)."""
    folder = tmp_path_factory.mktemp("pki")
    for name, text in PKI.items():
        (folder / name).write_text(text)
    (folder / "cas").mkdir()
    (folder / "cas" / (CA_HASH + ".0")).write_text(PKI["ca.pem"])
    paths = {name.replace(".", "_"): str(folder / name) for name in PKI}
    return types.SimpleNamespace(cas=str(folder / "cas"), **paths)


def serve_scripted(server, scheme="http"):
    """Start a ScriptedServer in a thread; it records what it receives."""
    server.received, server.attempts, server.arrivals, server.dates = [], {}, {}, {}
    server.release = threading.Event()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    server.url = "%s://127.0.0.1:%d" % (scheme, server.server_address[1])
    return server


def tls_server(pki, client_certificate):
    """A ScriptedServer on TLS with the test CA's server certificate, which asks for a
    client certificate signed by that CA when client_certificate is true."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_pem, pki.server_key)
    if client_certificate:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(pki.ca_pem)
    server = ScriptedServer(("127.0.0.1", 0), ScriptedHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return serve_scripted(server, "https")


@pytest.fixture(scope="module")
def tls(pki):
    server = tls_server(pki, client_certificate=False)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def mutual_tls(pki):
    server = tls_server(pki, client_certificate=True)
    yield server
    server.shutdown()
    server.server_close()


ECHO_GET = {"method": "GET", "path": "/echo", "body": ""}


def test_https_with_the_ca_given_is_verified(tls, pki):
    resp, err = send(Request("GET", tls.url + "/echo"), context=tls_context(cacert=pki.ca_pem))
    assert err is None and resp.status_code == 200 and resp.json() == ECHO_GET


def test_https_with_a_ca_folder_is_verified(tls, pki):
    resp, err = send(Request("GET", tls.url + "/echo"), context=tls_context(capath=pki.cas))
    assert err is None and resp.json() == ECHO_GET


def test_the_same_tls_settings_give_the_same_context(pki):
    assert tls_context(cacert=pki.ca_pem) is tls_context(cacert=pki.ca_pem)


def test_an_untrusted_certificate_is_an_error_that_says_how_to_trust_the_ca(tls):
    rest_client.close()
    before = len(tls.received)
    resp, err = send(Request("GET", tls.url + "/echo"))
    assert resp is None and isinstance(err, rest_client.UntrustedCertificate)
    assert "certificate verify failed" in str(err)
    assert "--cacert FILE" in str(err) and "SSL_CERT_FILE=FILE" in str(err)
    result = run_cli("GET", tls.url + "/echo")
    assert (result.returncode, result.stdout) == (3, b"")
    assert result.stderr.count(b"\n") == 1 and b"--cacert FILE" in result.stderr
    assert len(tls.received) == before


@pytest.mark.parametrize("variable, name", [("SSL_CERT_FILE", "ca_pem"),
                                            ("SSL_CERT_DIR", "cas")])
def test_ssl_cert_file_and_ssl_cert_dir_are_honoured(tls, pki, variable, name):
    result = run_cli_process("GET", tls.url + "/echo", env={variable: getattr(pki, name)})
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)


def test_a_client_certificate_is_shown_for_mutual_tls(mutual_tls, pki):
    context = tls_context(cacert=pki.ca_pem, cert=pki.client_pem, key=pki.client_key)
    resp, err = send(Request("GET", mutual_tls.url + "/echo"), context=context)
    assert err is None and resp.json() == ECHO_GET
    result = run_cli("GET", mutual_tls.url + "/echo", "--cacert", pki.ca_pem,
                     "--cert", pki.client_pem, "--key", pki.client_key)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)


def test_without_a_client_certificate_mutual_tls_is_an_error_value(mutual_tls, pki):
    before = len(mutual_tls.received)
    resp, err = send(Request("GET", mutual_tls.url + "/echo"),
                     context=tls_context(cacert=pki.ca_pem))
    assert resp is None and isinstance(err, OSError)
    assert len(mutual_tls.received) == before


def test_cli_insecure_skips_verification_and_warns_once(tls):
    result = run_cli("GET", tls.url + "/echo", "-k")
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)
    assert result.stderr == (b"rest_client: warning: -k: the server's certificate is not "
                             b"checked, so anyone on the way can read and change this "
                             b"exchange\n")
    assert run_cli("GET", tls.url + "/echo", "--insecure").returncode == 0


def test_a_connection_made_without_verification_is_never_reused_to_verify(tls):
    rest_client.close()
    insecure = tls_context(insecure=True)
    assert send(Request("GET", tls.url + "/echo"), context=insecure)[0].status_code == 200
    resp, err = send(Request("GET", tls.url + "/echo"))
    assert resp is None and isinstance(err, rest_client.UntrustedCertificate)
    assert send(Request("GET", tls.url + "/echo"), context=insecure)[0].status_code == 200


@pytest.mark.parametrize("arguments", [["--cacert", "missing.pem"], ["--capath", "missing"],
                                       ["--cert", "missing.pem"],
                                       ["--cert", "client.pem", "--key", "missing.key"],
                                       ["--cacert", "server.key"]])
def test_cli_a_certificate_that_cannot_be_read_is_a_usage_error(counting, pki, arguments):
    server = counting(lambda number, request: answer())
    folder = os.path.dirname(pki.ca_pem)
    arguments = [os.path.join(folder, argument) if not argument.startswith("-") else argument
                 for argument in arguments]
    result = run_cli("GET", server.url + "/", *arguments)
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.startswith(b"rest_client: cannot read --cacert, --capath, --cert "
                                    b"or --key: ") and result.stderr.count(b"\n") == 1
    assert server.requests == []


# -- where curl works: credentials ---------------------------------------------------------

def basic(user, password):
    """The Authorization value RFC 7617 gives for a user and password, in UTF-8."""
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def with_user_info(url, user_info):
    return url.replace("://", "://%s@" % user_info)


def test_basic_auth_sends_the_user_and_password_in_utf8(scripted):
    send(Request("GET", scripted.url + "/echo"), auth=("ada", "pässwörd"))
    assert last_header(scripted, "Authorization") == "Basic YWRhOnDDpHNzd8O2cmQ="
    assert basic("ada", "pässwörd") == "Basic YWRhOnDDpHNzd8O2cmQ="


def test_credentials_in_the_url_are_percent_decoded_and_never_in_the_request_line(scripted):
    url = with_user_info(scripted.url + "/echo", "ad%40a:p%3As%20s")
    resp, err = send(Request("GET", url))
    assert err is None and resp.json()["path"] == "/echo"
    assert last_header(scripted, "Authorization") == basic("ad@a", "p:s s")
    result = run_cli("GET", url, "-v")
    assert result.returncode == 0
    assert b"p%3As" not in result.stderr and b"ad%40a" not in result.stderr
    assert b"> GET /echo HTTP/1.1\n" in result.stderr
    assert b"> Authorization: Basic ***\n" in result.stderr


@pytest.fixture
def netrc_file(tmp_path, monkeypatch):
    path = tmp_path / "netrc"
    path.write_text("machine 127.0.0.1 login net password rc\n")
    monkeypatch.setenv("NETRC", str(path))
    return path


@pytest.mark.parametrize("headers, auth, user_info, use_netrc, sent", [
    ({"Authorization": "Bearer k"}, ("u", "p"), "url:info", True, "Bearer k"),
    (None, ("u", "p"), "url:info", True, basic("u", "p")),
    (None, None, "url:info", True, basic("url", "info")),
    (None, None, None, True, basic("net", "rc")),
    (None, None, None, False, None),  # .netrc is read only when asked
])
def test_which_credentials_are_sent_header_then_auth_then_url_then_netrc(
        scripted, netrc_file, headers, auth, user_info, use_netrc, sent):
    url = scripted.url + "/echo"
    url = with_user_info(url, user_info) if user_info else url
    resp, err = send(Request("GET", url, headers=headers), auth=auth, netrc=use_netrc)
    assert err is None and last_header(scripted, "Authorization") == sent


def test_cli_netrc_and_user_with_password(scripted, netrc_file):
    assert run_cli("GET", scripted.url + "/echo", "--netrc").returncode == 0
    assert last_header(scripted, "Authorization") == basic("net", "rc")
    assert run_cli("GET", scripted.url + "/echo", "--netrc", "-u", "ada:a:b").returncode == 0
    assert last_header(scripted, "Authorization") == basic("ada", "a:b")


def test_cli_user_without_password_asks_for_it_on_the_terminal(scripted, monkeypatch):
    prompts = []
    monkeypatch.setattr(getpass, "getpass",
                        lambda prompt: prompts.append(prompt) or "s3cret")
    assert run_cli("GET", scripted.url + "/echo", "-u", "ada").returncode == 0
    assert prompts == ["Enter host password for user 'ada':"]
    assert last_header(scripted, "Authorization") == basic("ada", "s3cret")


@pytest.mark.parametrize("name", ["Authorization", "Cookie", "Proxy-Authorization"])
def test_no_credential_follows_a_redirect_to_another_host_or_port(scripted, counting, name):
    other_port = counting(lambda number, request: answer())
    headers = {name: "secret", "X-Test": "1"}
    for target, kept in [("/echo", True), ("http://localhost:%d/echo" % scripted.server_address[1],
                                           False)]:
        send(Request("GET", scripted.url + "/redirect/302", headers, {"to": target}))
        assert scripted.received[-1]["path"] == "/echo"
        assert last_header(scripted, name) == ("secret" if kept else None)
        assert last_header(scripted, "X-Test") == "1"
    send(Request("GET", scripted.url + "/redirect/302", headers, {"to": other_port.url + "/"}))
    assert name.lower() not in other_port.requests[-1]["headers"]
    assert other_port.requests[-1]["headers"]["x-test"] == "1"


def test_no_credential_follows_a_redirect_from_https_to_http(tls, scripted, pki):
    context = tls_context(cacert=pki.ca_pem)
    resp, err = send(Request("GET", tls.url + "/redirect/302", {"Authorization": "Bearer x"},
                             {"to": scripted.url + "/echo"}), context=context)
    assert err is None and resp.url == scripted.url + "/echo"
    assert last_header(scripted, "Authorization") is None


@pytest.mark.parametrize("url, new_url, kept", [
    ("http://h/a", "http://h/b", True),
    ("http://h/a", "https://h/b", True),  # to https on the same host, default ports
    ("http://h:80/a", "https://h:443/b", True),
    ("https://h/a", "http://h/b", False),
    ("http://h:8080/a", "https://h:8443/b", False),
    ("http://h/a", "http://h:8080/b", False),
    ("http://h/a", "http://g/b", False),
])
def test_credentials_may_follow_to_the_same_host_and_port_never_to_http(url, new_url, kept):
    assert rest_client.credentials_may_follow(url, new_url) is kept


def test_cli_verbose_shows_every_credential_as_stars(scripted):
    result = run_cli("GET", scripted.url + "/cookies", "-v", "-u", "ada:pw",
                     "-H", "Cookie: sid=s3cret", "-H", "Proxy-Authorization: Basic c2VjcmV0")
    lines = result.stderr.decode().splitlines()
    assert "> Authorization: Basic ***" in lines and "> Cookie: ***" in lines
    assert "> Proxy-Authorization: Basic ***" in lines
    assert lines.count("< Set-Cookie: ***") == 2
    assert b"pw" not in result.stderr and b"s3cret" not in result.stderr
    assert b"c2VjcmV0" not in result.stderr and b"a=1" not in result.stderr
    assert last_header(scripted, "Cookie") == "sid=s3cret"


# -- where curl works: proxies -------------------------------------------------------------

PROXY_USER, PROXY_PASSWORD = "proxy", "p@ss:w rd"


class TestProxyHandler(BaseHTTPRequestHandler):
    """A forward proxy, to 127.0.0.1 only: it asks for Basic proxy credentials (a 407
    without them), forwards plain http requests, and tunnels CONNECT; server.received
    records each request it got."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    __test__ = False  # not a test class, whatever its name

    def log_message(self, format, *args):
        pass

    def allowed(self):
        """Record the request; answer 407 unless it has the proxy's credentials."""
        self.server.received.append({"method": self.command, "target": self.path,
                                     "version": self.request_version,
                                     "headers": dict(self.headers.items())})
        if self.headers.get("Proxy-Authorization") == basic(PROXY_USER, PROXY_PASSWORD):
            return True
        body = b"proxy credentials, please"
        self.send_response(407)
        self.send_header("Proxy-Authenticate", 'Basic realm="proxy"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return False

    def do_GET(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if not self.allowed():
            return
        target = urlsplit(self.path)
        assert target.hostname == "127.0.0.1"
        headers = {name: value for name, value in self.headers.items()
                   if name.lower() not in ("host", "proxy-authorization", "connection")}
        origin = http.client.HTTPConnection("127.0.0.1", target.port, timeout=10)
        origin.request(self.command, self.path.split(target.netloc, 1)[1], body or None, headers)
        reply = origin.getresponse()
        data = reply.read()
        origin.close()
        self.send_response(reply.status)
        for name, value in reply.getheaders():
            if name.lower() not in ("content-length", "connection", "transfer-encoding",
                                    "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET

    def do_CONNECT(self):
        if not self.allowed():
            return
        host, _, port = self.path.rpartition(":")
        assert host == "127.0.0.1"
        with socket.create_connection((host, int(port)), timeout=10) as upstream:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            relay(self.connection, upstream)
        self.close_connection = True


def relay(one, other):
    """Pass bytes both ways until either side closes."""
    while True:
        for sock in select.select([one, other], [], [], 30)[0] or [one]:
            data = sock.recv(65536)
            if not data:
                return
            (other if sock is one else one).sendall(data)


@pytest.fixture(scope="module")
def proxy():
    server = serve_scripted(ScriptedServer(("127.0.0.1", 0), TestProxyHandler))
    server.with_credentials = with_user_info(server.url, "proxy:p%40ss%3Aw%20rd")
    yield server
    rest_client.close()  # the tunnels kept open
    server.shutdown()
    server.server_close()


def test_a_proxy_gets_its_credentials_for_plain_http(proxy, scripted):
    resp, err = send(Request("GET", scripted.url + "/echo?x=1"), proxy=proxy.with_credentials)
    assert err is None and resp.status_code == 200
    assert resp.json() == {"method": "GET", "path": "/echo?x=1", "body": ""}
    got = proxy.received[-1]
    assert (got["method"], got["target"]) == ("GET", scripted.url + "/echo?x=1")
    assert got["headers"]["Proxy-Authorization"] == basic(PROXY_USER, PROXY_PASSWORD)


def test_https_through_a_proxy_sends_its_credentials_on_the_connect_only(proxy, tls, pki):
    rest_client.close()
    port = tls.server_address[1]
    resp, err = send(Request("GET", tls.url + "/echo"), proxy=proxy.with_credentials,
                     context=tls_context(cacert=pki.ca_pem))
    assert err is None and resp.json() == ECHO_GET
    got = proxy.received[-1]
    assert (got["method"], got["target"], got["version"]) == (
        "CONNECT", "127.0.0.1:%d" % port, "HTTP/1.1")  # not HTTP/1.0 without Host: gh-66897
    assert got["headers"]["Host"] == "127.0.0.1:%d" % port
    assert got["headers"]["Proxy-Authorization"] == basic(PROXY_USER, PROXY_PASSWORD)
    assert "proxy-authorization" not in [name.lower() for name, _ in tls.received[-1]["headers"]]


def test_cli_verbose_through_a_tunnel_shows_the_request_not_the_connect(proxy, tls, pki):
    rest_client.close()
    result = run_cli("GET", tls.url + "/echo", "-v", "-x", proxy.with_credentials,
                     "--cacert", pki.ca_pem)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 0 and lines[0] == "> GET /echo HTTP/1.1"
    assert "CONNECT" not in result.stderr.decode() and "proxy-authorization" not in [
        line[2:].partition(":")[0].lower() for line in lines]


def test_https_through_a_proxy_keeps_the_tunnel_for_the_next_request(proxy, tls, pki):
    rest_client.close()
    before = len(proxy.received)
    for _ in range(3):
        resp, err = send(Request("GET", tls.url + "/echo"), proxy=proxy.with_credentials,
                         context=tls_context(cacert=pki.ca_pem))
        assert err is None and resp.status_code == 200
    assert len(proxy.received) == before + 1  # one CONNECT


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_that_wants_credentials_gives_a_407_response(proxy, scripted, tls, pki, scheme):
    rest_client.close()
    url = (scripted if scheme == "http" else tls).url + "/echo"
    resp, err = send(Request("GET", url), proxy=proxy.url, context=tls_context(cacert=pki.ca_pem))
    assert err is None and resp.status_code == 407
    assert resp.body == "proxy credentials, please"
    assert resp.headers["Proxy-Authenticate"] == ['Basic realm="proxy"']
    result = run_cli("GET", url, "-x", proxy.url, "--cacert", pki.ca_pem, "--fail")
    assert (result.returncode, result.stdout) == (1, b"proxy credentials, please")


def test_the_environment_names_the_proxy_lower_case_first(proxy, scripted, forks):
    env = {"http_proxy": proxy.with_credentials, "HTTP_PROXY": "http://127.0.0.1:1",
           "no_proxy": "", "NO_PROXY": "127.0.0.1"}
    before = len(proxy.received)
    result = run_cli_forked(forks, "GET", scripted.url + "/echo", env=env)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)
    assert len(proxy.received) == before + 1


def test_no_proxy_sends_direct(proxy, scripted, forks):
    env = {"http_proxy": proxy.url, "no_proxy": "example.com, 127.0.0.1"}
    before = len(proxy.received)
    result = run_cli_forked(forks, "GET", scripted.url + "/echo", env=env)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)
    assert len(proxy.received) == before


def clear_proxy_variables(monkeypatch):
    """No proxy variable of the machine's, in either case, for the test's own to be read."""
    for name in ("http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_the_proxy_variables_are_read_as_curl_reads_them(monkeypatch):
    clear_proxy_variables(monkeypatch)
    monkeypatch.setenv("http_proxy", "http://lower:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://upper:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://upper:3129")
    monkeypatch.setenv("no_proxy", "")
    monkeypatch.setenv("NO_PROXY", "example.com")
    assert rest_client.environment_proxies() == {
        "http_proxy": "http://lower:3128", "https_proxy": "http://upper:3129", "no_proxy": ""}


def test_cli_proxy_and_noproxy_win_over_the_environment(proxy, scripted, forks):
    env = {"http_proxy": "http://127.0.0.1:1", "no_proxy": ""}
    before = len(proxy.received)
    result = run_cli_forked(forks, "GET", scripted.url + "/echo", "-x", proxy.with_credentials,
                            env=env)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)
    assert len(proxy.received) == before + 1
    result = run_cli_forked(forks, "GET", scripted.url + "/echo", "--noproxy", "127.0.0.1",
                            env=env)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)
    assert len(proxy.received) == before + 1


@pytest.mark.parametrize("host, no_proxy, bypassed", [
    ("api.example.com", ".example.com", True),  # bpo-39057: a leading dot
    ("example.com", ".example.com", True),
    ("api.example.com", "example.com", True),
    ("badexample.com", "example.com", False),
    ("example.com", "  other.org , example.com  ", True),
    ("anything", "*", True),
    ("10.1.2.3", "10.0.0.0/8", True),
    ("11.1.2.3", "10.0.0.0/8", False),
    ("127.0.0.1", "localhost", False),
    ("example.com", "", False),
])
def test_no_proxy_is_read_as_curl_reads_it(host, no_proxy, bypassed):
    assert rest_client.bypassed(host, no_proxy) is bypassed


# -- where curl works: forms ---------------------------------------------------------------

def read_multipart(content_type, body):
    """Each part of a multipart/form-data body, read by the email package (not the client's
    code): (field name, file name, content type, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    assert message.get_content_type() == "multipart/form-data" and not message.defects
    return [(part.get_param("name", header="content-disposition"), part.get_filename(),
             part.get_content_type(), part.get_payload(decode=True))
            for part in message.iter_parts()]


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "ada.png"
    path.write_bytes(BLOB)
    return str(path)


def test_a_multipart_form_sends_fields_and_files_as_rfc_7578_has_them(scripted, photo):
    form = MultipartForm([("name", "Ada"), ("photo", Upload(photo, "image/png")),
                          ('say "hi"', "é\r\n"), ("name", "Alan")])
    resp, err = send(Request("POST", scripted.url + "/echo", body=form))
    assert err is None and resp.status_code == 200
    content_type = last_header(scripted, "Content-Type")
    boundary = content_type.partition("; boundary=")[2].encode()
    assert content_type.startswith("multipart/form-data; boundary=") and boundary
    expected = b"".join([
        b"--%s\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAda\r\n" % boundary,
        b"--%s\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"ada.png\"\r\n"
        b"Content-Type: image/png\r\n\r\n" % boundary, BLOB, b"\r\n",
        b"--%s\r\nContent-Disposition: form-data; name=\"say %%22hi%%22\"\r\n\r\n" % boundary,
        "é\r\n".encode(), b"\r\n",
        b"--%s\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAlan\r\n" % boundary,
        b"--%s--\r\n" % boundary])
    assert scripted.received[-1]["body"] == expected
    assert last_header(scripted, "Content-Length") == str(len(expected))
    assert read_multipart(content_type, expected) == [
        ("name", None, "text/plain", b"Ada"), ("photo", "ada.png", "image/png", BLOB),
        ("say %22hi%22", None, "text/plain", "é\r\n".encode()),  # as browsers escape it
        ("name", None, "text/plain", b"Alan")]


def test_a_file_to_upload_gets_its_type_from_its_name_unless_given(scripted, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"hello")
    form = MultipartForm({"a": Upload(str(notes)), "b": Upload(str(notes), filename="x.bin",
                                                                content_type="app/x")})
    send(Request("PUT", scripted.url + "/echo", body=form))
    parts = read_multipart(last_header(scripted, "Content-Type"), scripted.received[-1]["body"])
    assert parts == [("a", "notes.txt", "text/plain", b"hello"), ("b", "x.bin", "app/x", b"hello")]


def test_a_file_is_uploaded_from_disk_never_whole_in_memory(bulk, tmp_path):
    path = tmp_path / "big.bin"
    with open(str(path), "wb") as file:
        for _ in range(16):
            file.write(BulkServer.CHUNK)
    (resp, err), peak = with_peak_memory(lambda: send(Request(
        "POST", bulk.url + "/", body=MultipartForm({"file": Upload(str(path))}))))
    assert err is None and peak < 4 * MIB
    boundary = resp.json()["content_type"].partition("; boundary=")[2].encode()
    digest = hashlib.sha256(b"--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                            b"filename=\"big.bin\"\r\nContent-Type: application/octet-stream"
                            b"\r\n\r\n" % boundary)
    for _ in range(16):
        digest.update(BulkServer.CHUNK)
    digest.update(b"\r\n--%s--\r\n" % boundary)
    assert resp.json()["sha256"] == digest.hexdigest()


def test_a_file_to_upload_that_cannot_be_read_is_an_error_value(scripted, tmp_path):
    form = MultipartForm({"file": Upload(str(tmp_path / "missing.png"))})
    resp, err = send(Request("POST", scripted.url + "/echo", body=form))
    assert resp is None and isinstance(err, FileNotFoundError)


def test_cli_form_fields_and_files_as_curl_has_them(scripted, photo):
    result = run_cli("POST", scripted.url + "/echo", "-F", "name=Ada", "-F", "photo=@" + photo,
                     "-F", "icon=@%s;type=image/x-icon;filename=a.ico" % photo)
    assert result.returncode == 0
    assert read_multipart(last_header(scripted, "Content-Type"), scripted.received[-1]["body"]) == [
        ("name", None, "text/plain", b"Ada"), ("photo", "ada.png", "image/png", BLOB),
        ("icon", "a.ico", "image/x-icon", BLOB)]


def test_cli_a_form_file_that_cannot_be_read_is_a_usage_error(counting, tmp_path):
    server = counting(lambda number, request: answer())
    result = run_cli("POST", server.url + "/", "-F", "f=@" + str(tmp_path / "missing"))
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.startswith(b"rest_client: cannot read the body: [Errno 2]")
    assert server.requests == []


def test_a_url_encoded_form_is_sent_when_asked_for_by_name(scripted):
    form = UrlEncodedForm([("name", "Ada L"), ("lang", "en&fr"), ("lang", "é")])
    send(Request("POST", scripted.url + "/echo", body=form))
    assert scripted.received[-1]["body"] == b"name=Ada%20L&lang=en%26fr&lang=%C3%A9"
    assert last_header(scripted, "Content-Type") == "application/x-www-form-urlencoded"


def test_a_form_keeps_a_content_type_given_unless_multipart_needs_its_boundary(scripted):
    headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}
    send(Request("POST", scripted.url + "/echo", headers, body=UrlEncodedForm({"a": "1"})))
    assert last_header(scripted, "Content-Type") == headers["content-type"]
    send(Request("POST", scripted.url + "/echo", {"content-type": "multipart/form-data"},
                 body=MultipartForm({"a": "1"})))
    assert last_header(scripted, "Content-Type").startswith("multipart/form-data; boundary=")


def test_cli_data_urlencode(scripted):
    result = run_cli("POST", scripted.url + "/echo", "--data-urlencode", "name=Ada L",
                     "--data-urlencode", "q=a=b")
    assert result.returncode == 0
    assert scripted.received[-1]["body"] == b"name=Ada%20L&q=a%3Db"
    assert last_header(scripted, "Content-Type") == "application/x-www-form-urlencoded"


def test_cli_form_and_data_together_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        rest_client.main(["POST", "http://127.0.0.1:1/", "-d", "x", "-F", "a=b"])
    assert exited.value.code == 2


# -- where curl works: cookies -------------------------------------------------------------

def test_a_cookie_jar_keeps_cookies_across_calls_by_their_rules(scripted):
    jar = http.cookiejar.CookieJar()
    send(Request("GET", scripted.url + "/cookies"), cookies=jar)
    send(Request("GET", scripted.url + "/set_cookie", params={"cookie": "s=1; Secure"}),
         cookies=jar)
    send(Request("GET", scripted.url + "/set_cookie", params={"cookie": "p=1; Path=/other"}),
         cookies=jar)
    send(Request("GET", scripted.url + "/echo"), cookies=jar)
    assert last_header(scripted, "Cookie") == "a=1; b=2"  # not Secure over http, not /other
    send(Request("GET", scripted.url + "/other"), cookies=jar)
    assert last_header(scripted, "Cookie") in ("p=1; a=1; b=2", "a=1; b=2; p=1")


def test_a_cookie_set_by_a_redirect_is_sent_on_the_next_hop(scripted):
    jar = http.cookiejar.CookieJar()
    resp, err = send(Request("GET", scripted.url + "/set_cookie",
                             params={"cookie": "sid=42", "to": "/echo"}), cookies=jar)
    assert err is None and resp.url == scripted.url + "/echo"
    assert last_header(scripted, "Cookie") == "sid=42"


def test_a_jar_never_sends_a_cookie_to_another_host(scripted):
    jar = http.cookiejar.CookieJar()
    send(Request("GET", scripted.url + "/cookies"), cookies=jar)
    port = scripted.server_address[1]
    send(Request("GET", "http://localhost:%d/echo" % port), cookies=jar)
    assert last_header(scripted, "Cookie") is None


NETSCAPE_COOKIES = """# Netscape HTTP Cookie File
127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfrom-file
#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t4102444800\thttp\tonly
"""  # as curl writes them: 0 for a session cookie, #HttpOnly_ before an HttpOnly one


def sent_cookies(server):
    """The cookies of the last request, as a set of "name=value"."""
    return set((last_header(server, "Cookie") or "").split("; ")) - {""}


def test_cli_reads_a_netscape_cookie_file_and_writes_the_jar(scripted, tmp_path):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(NETSCAPE_COOKIES)
    jar_file = tmp_path / "jar.txt"
    result = run_cli("GET", scripted.url + "/cookies", "-b", str(cookies), "-c", str(jar_file))
    assert result.returncode == 0 and sent_cookies(scripted) == {"sid=from-file", "http=only"}
    written = http.cookiejar.MozillaCookieJar()
    written.load(str(jar_file), ignore_discard=True, ignore_expires=True)
    assert sorted((cookie.name, cookie.value) for cookie in written) == [
        ("a", "1"), ("b", "2"), ("http", "only"), ("sid", "from-file")]
    result = run_cli("GET", scripted.url + "/echo", "-b", str(jar_file))
    assert sent_cookies(scripted) == {"a=1", "b=2", "http=only", "sid=from-file"}


def test_cli_a_cookie_file_not_there_yet_starts_an_empty_jar(scripted, tmp_path):
    jar_file = tmp_path / "jar.txt"
    arguments = ["-b", str(jar_file), "-c", str(jar_file)]
    assert run_cli("GET", scripted.url + "/cookies", *arguments).returncode == 0
    assert run_cli("GET", scripted.url + "/echo", *arguments).returncode == 0
    assert last_header(scripted, "Cookie") == "a=1; b=2"


def test_cli_a_cookie_given_as_name_value_is_sent(scripted):
    assert run_cli("GET", scripted.url + "/echo", "-b", "sid=42; theme=dark").returncode == 0
    assert last_header(scripted, "Cookie") == "sid=42; theme=dark"


def test_cli_a_cookie_file_that_is_not_one_is_a_usage_error(counting, tmp_path):
    server = counting(lambda number, request: answer())
    not_cookies = tmp_path / "cookies.txt"
    not_cookies.write_text("hello\n")
    result = run_cli("GET", server.url + "/", "-b", str(not_cookies))
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.startswith(b"rest_client: cannot read the cookies of -b: ")
    assert server.requests == []


# -- nothing damaged -------------------------------------------------------------------------

def special_file(tmp_path):
    """A path that is not a regular file, made by the test (never the real /dev/null): a
    device node with /dev/null's numbers when running as root, else a FIFO."""
    import stat
    path = str(tmp_path / "null")
    if os.geteuid() == 0:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return path, stat.S_ISCHR
    os.mkfifo(path)
    return path, stat.S_ISFIFO


def drain(path):
    """Read a FIFO to its end in a thread; the bytes read are in the list returned."""
    got = []
    thread = threading.Thread(target=lambda: got.append(open(path, "rb").read()), daemon=True)
    thread.start()
    return got, thread


def test_cli_download_into_a_device_node_writes_into_it_as_it_is(counting, tmp_path):
    server = blob_server(counting)
    path, is_kind = special_file(tmp_path)
    got, thread = drain(path) if is_kind.__name__ == "S_ISFIFO" else ([BLOB], None)
    assert run_cli("GET", server.url + "/", "-o", path).returncode == 0
    if thread:
        thread.join(5)
    assert is_kind(os.lstat(path).st_mode) and got == [BLOB]
    assert sorted(os.listdir(str(tmp_path))) == ["null"]


def test_a_download_into_a_fifo_writes_into_it_as_it_is(counting, tmp_path):
    import stat
    server = blob_server(counting)
    path = str(tmp_path / "fifo")
    os.mkfifo(path)
    got, thread = drain(path)
    resp, err = send(Request("GET", server.url + "/"), save_to=path)
    thread.join(5)
    assert err is None and resp.saved_size == len(BLOB) and got == [BLOB]
    assert stat.S_ISFIFO(os.lstat(path).st_mode) and os.listdir(str(tmp_path)) == ["fifo"]


def test_a_download_through_a_symbolic_link_replaces_the_file_it_names(counting, tmp_path):
    server = blob_server(counting)
    (tmp_path / "data").mkdir()
    target, link = tmp_path / "data" / "real.bin", tmp_path / "link.bin"
    target.write_bytes(b"old")
    os.symlink(str(target), str(link))
    assert run_cli("GET", server.url + "/", "-o", str(link)).returncode == 0
    assert os.path.islink(str(link)) and os.readlink(str(link)) == str(target)
    assert target.read_bytes() == BLOB
    assert sorted(os.listdir(str(tmp_path / "data"))) == ["real.bin"]


def test_cli_fail_never_touches_the_file(scripted, tmp_path):
    target = tmp_path / "data.json"
    target.write_bytes(b"kept")
    result = run_cli("GET", scripted.url + "/status/503", "--fail", "-o", str(target))
    assert (result.returncode, target.read_bytes()) == (1, b"kept")
    assert os.listdir(str(tmp_path)) == ["data.json"]
    result = run_cli("GET", scripted.url + "/status/404", "--fail", "-o", str(tmp_path / "new"))
    assert result.returncode == 1 and os.listdir(str(tmp_path)) == ["data.json"]


def test_upper_case_http_proxy_is_never_read_for_plain_http(proxy, scripted):
    # httpoxy (CVE-2016-5385): in CGI, a request's "Proxy:" header becomes HTTP_PROXY
    env = {"HTTP_PROXY": proxy.with_credentials, "http_proxy": "", "no_proxy": "",
           "NO_PROXY": ""}
    env.pop("http_proxy")
    before = len(proxy.received)
    clean = {name: value for name, value in os.environ.items() if name.lower() != "http_proxy"}
    result = subprocess.run([sys.executable, os.path.join(HERE, "rest_client.py"), "GET",
                             scripted.url + "/echo"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(clean, **env), timeout=20)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)
    assert len(proxy.received) == before


def test_the_upper_case_proxy_variables_but_http_proxy_are_read_as_curl_reads_them(monkeypatch):
    clear_proxy_variables(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", "http://upper:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://upper:3129")
    monkeypatch.setenv("NO_PROXY", "example.com")
    assert rest_client.environment_proxies() == {
        "https_proxy": "http://upper:3129", "no_proxy": "example.com"}


@pytest.mark.parametrize("arguments, url_info, sent", [
    (["-u", "ada:pw"], None, basic("ada", "pw")),
    ([], "url:info", basic("url", "info")),
    (["--netrc"], None, basic("net", "rc")),
    ([], None, "Bearer " + KEY),
])
def test_cli_credentials_given_win_over_api_key(scripted, netrc_file, arguments, url_info, sent):
    url = scripted.url + "/echo"
    url = with_user_info(url, url_info) if url_info else url
    assert run_cli("GET", url, *arguments, api_key=KEY).returncode == 0
    assert last_header(scripted, "Authorization") == sent


def test_cli_api_key_never_follows_a_redirect_to_another_host(scripted, counting):
    other = counting(lambda number, request: answer())
    result = run_cli("GET", scripted.url + "/redirect/302?to=" + other.url + "/", api_key=KEY)
    assert result.returncode == 0 and last_header(scripted, "Authorization") == "Bearer " + KEY
    assert "authorization" not in other.requests[-1]["headers"]


def test_a_non_ascii_host_is_sent_as_idna_through_a_proxy(counting):
    server = counting(lambda number, request: answer())
    resp, err = send(Request("GET", "http://bücher.example/ä?q=ü"), proxy=server.url)
    assert err is None and resp.status_code == 200
    sent = server.requests[-1]
    assert sent["target"] == "http://xn--bcher-kva.example/%C3%A4?q=%C3%BC"
    assert sent["headers"]["host"] == "xn--bcher-kva.example"


def test_a_non_ascii_host_is_looked_up_and_sent_as_idna(counting, monkeypatch):
    server = counting(lambda number, request: answer())
    port = int(server.url.rsplit(":", 1)[1])
    looked_up, real = [], socket.getaddrinfo

    def getaddrinfo(host, *rest, **keywords):
        host = host.decode("ascii") if isinstance(host, bytes) else host
        looked_up.append(host)
        return real("127.0.0.1" if host == "xn--bcher-kva.example" else host, *rest, **keywords)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    resp, err = send(Request("GET", "http://bücher.example:%d/" % port), proxy="")
    assert err is None and looked_up == ["xn--bcher-kva.example"]
    assert server.requests[-1]["headers"]["host"] == "xn--bcher-kva.example:%d" % port


# -- the client object: settings held once ------------------------------------------------

def test_a_client_holds_base_url_headers_and_credentials_for_every_request(scripted):
    client = rest_client.Client(scripted.url, headers={"X-Test": "1", "Accept": "text/xml"},
                                auth=("ada", "pw"))
    try:
        resp, err = client.send(Request("GET", "/echo", headers={"Accept": "application/json"}))
        assert err is None and resp.json() == ECHO_GET
        assert last_header(scripted, "X-Test") == "1"
        assert last_header(scripted, "Accept") == "application/json"  # the request's wins
        assert last_header(scripted, "Authorization") == basic("ada", "pw")
    finally:
        client.close()


def test_a_client_in_a_with_block_closes_its_connections(counting):
    server = counting(lambda number, request: answer())
    with rest_client.Client(server.url) as client:
        assert client.send(Request("GET", "/"))[0].body == "ok"
    deadline = time.monotonic() + 5
    while server.closed_by_client < 1:
        assert time.monotonic() < deadline, "the server never saw the connection close"
        time.sleep(0.01)


def test_import_reads_nothing_builds_nothing_and_imports_no_more_than_http_client():
    code = ("import sys, http.client, threading; before = set(sys.modules); "
            "threads = threading.active_count(); import rest_client; "
            "print(sorted(set(sys.modules) - before), rest_client.DEFAULT_CLIENT, "
            "threading.active_count() - threads)")
    result = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, cwd=HERE,
                            timeout=20)
    assert result.stdout == b"['rest_client'] None 0\n"


def test_the_environment_is_read_when_a_client_is_made(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://first:3128")
    first = rest_client.Client()
    monkeypatch.setenv("http_proxy", "http://second:3128")
    assert first.environment["http_proxy"] == "http://first:3128"
    assert rest_client.Client().environment["http_proxy"] == "http://second:3128"


def test_a_keyword_send_does_not_know_is_a_type_error(scripted):
    with pytest.raises(TypeError) as raised:
        send(Request("GET", scripted.url + "/echo"), colour="blue")
    assert str(raised.value) == "send() got an unexpected keyword argument 'colour'"


# -- redirects for every method, by curl -L's rules ------------------------------------------

@pytest.mark.parametrize("code, method, body", [
    (301, "GET", ""), (302, "GET", ""), (303, "GET", ""), (307, "POST", "a=1"),
    (308, "POST", "a=1")])
def test_following_all_redirects_uses_curls_method_rules(scripted, code, method, body):
    client = rest_client.Client(follow_redirects=rest_client.ALL)
    resp, err = client.send(Request("POST", scripted.url + "/redirect/%d" % code, body="a=1"))
    assert err is None and resp.json() == {"method": method, "path": "/echo", "body": body}
    assert resp.redirects == 1 and resp.url == scripted.url + "/echo"
    assert (last_header(scripted, "Content-Type") is None) == (body == "")
    client.close()


def test_a_method_kept_across_redirects_drops_the_body_as_its_rules_say(scripted):
    client = rest_client.Client(follow_redirects=rest_client.ALL, keep_method="POST")
    resp, err = client.send(Request("PUT", scripted.url + "/redirect/302", body="a=1"))
    assert err is None and resp.json() == {"method": "PUT", "path": "/echo", "body": ""}
    client.close()


def test_a_redirect_loop_is_an_error_when_following_all(scripted):
    client = rest_client.Client(follow_redirects=rest_client.ALL, max_redirects=3)
    resp, err = client.send(Request("GET", scripted.url + "/chain/1"))
    assert resp is None and isinstance(err, rest_client.TooManyRedirects)
    assert str(err) == "more than 3 redirects, the last to /chain/5"
    client.close()


# -- errors that say what failed -------------------------------------------------------------

def test_a_name_mismatch_is_untrusted_without_a_hint_to_trust_a_ca(tls, pki, monkeypatch):
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *rest, **keywords: real(
        "127.0.0.1" if host in (b"other.example", "other.example") else host, *rest, **keywords))
    url = "https://other.example:%d/echo" % tls.server_address[1]
    resp, err = send(Request("GET", url), context=tls_context(cacert=pki.ca_pem))
    assert resp is None and isinstance(err, rest_client.UntrustedCertificate)
    assert str(err).startswith("the certificate of other.example:%d did not verify: "
                               % tls.server_address[1])
    assert "--cacert" not in str(err)
    result = run_cli("-s", url, "--cacert", pki.ca_pem)
    assert (result.returncode, result.stdout, result.stderr) == (60, b"", b"")


def test_a_tls_context_takes_a_ca_without_key_usage_as_curl_does():
    # Python 3.13 adds VERIFY_X509_STRICT, which refuses a CA made by openssl req -x509
    strict = getattr(ssl, "VERIFY_X509_STRICT", 0)
    assert not tls_context().verify_flags & strict


class DripServer:
    """Sends a reply's head, then one byte of its body every 50 ms, for 10 s."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n")
            while not self.stopped.wait(0.05):
                try:
                    connection.sendall(b"x")
                except OSError:  # the client gave up
                    return


def test_a_server_that_drips_cannot_stretch_the_timeout():
    server = DripServer()
    try:
        resp, err = send(Request("GET", server.url + "/"), timeout=0.2)  # 4 bytes in it
    finally:
        server.stopped.set()
        server.listener.close()
    assert resp is None and isinstance(err, rest_client.Timeout)


# -- bodies that stream ---------------------------------------------------------------------

def test_a_file_body_is_sent_as_it_is_read_with_its_length(counting, tmp_path):
    server = counting(lambda number, request: answer())
    path = tmp_path / "upload.bin"
    path.write_bytes(BLOB)
    with open(str(path), "rb") as file:
        resp, err = send(Request("PUT", server.url + "/upload", body=file))
    sent = server.requests[-1]
    assert err is None and sent["body"] == BLOB
    assert sent["headers"]["content-length"] == str(len(BLOB))
    assert sent["headers"]["content-type"] == "application/octet-stream"


def test_an_iterable_body_is_sent_chunked(counting):
    server = counting(lambda number, request: answer())
    resp, err = send(Request("POST", server.url + "/upload", body=iter([b"one ", b"two"]),
                             headers={"Content-Type": "text/plain"}))
    assert err is None and resp.status_code == 200
    sent = server.requests[-1]
    assert sent["headers"]["transfer-encoding"] == "chunked" and sent["body"] == b"one two"


# -- the command line: curl's form -----------------------------------------------------------

def test_cli_ctrl_c_exits_130_with_one_line(scripted, monkeypatch):
    def interrupted(*arguments, **keywords):
        raise KeyboardInterrupt

    monkeypatch.setattr(rest_client.Client, "send", interrupted)
    for line in (["-s", scripted.url + "/echo"], ["GET", scripted.url + "/echo"]):
        result = run_cli(*line)
        assert (result.returncode, result.stdout, result.stderr) == (
            130, b"", b"rest_client: interrupted\n")


def test_cli_include_shows_the_status_line_as_received(counting):
    server = counting(lambda number, request: b"HTTP/1.0 299 Custom Reason Here\r\n"
                                              b"Content-Length: 2\r\nX-A: 1\r\n\r\nok")
    result = run_cli("-si", server.url + "/")
    assert (result.returncode, result.stdout) == (
        0, b"HTTP/1.0 299 Custom Reason Here\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nok")
    result = run_cli("GET", server.url + "/", "-i")
    assert result.stdout.startswith(b"HTTP/1.0 299 Custom Reason Here\n")


def test_cli_curl_form_reads_no_api_key(scripted):
    result = run_cli("-s", scripted.url + "/echo", api_key=KEY)
    assert result.returncode == 0 and last_header(scripted, "Authorization") is None


@pytest.mark.parametrize("form", [["-s"], ["GET"]])
def test_cli_a_cookie_jar_round_trips_with_curls_for_localhost(scripted, tmp_path, form):
    url = "http://localhost:%d" % scripted.server_address[1]
    jar = tmp_path / "jar.txt"
    result = run_cli(*form + [url + "/set_cookie?cookie=sid%3D1", "-c", str(jar)])
    assert result.returncode == 0
    lines = [line for line in jar.read_text().splitlines() if line and not line.startswith("# ")]
    assert lines == ["localhost\tFALSE\t/\tFALSE\t0\tsid\t1"]  # as curl writes it
    jar.write_text("# Netscape HTTP Cookie File\n"
                   "localhost\tFALSE\t/\tFALSE\t0\tfrom\tcurl\n")  # as curl wrote it
    assert run_cli(*form + [url + "/echo", "-b", str(jar)]).returncode == 0
    assert last_header(scripted, "Cookie") == "from=curl"


def test_cli_an_unknown_option_is_a_usage_error_naming_it_and_nothing_is_sent(scripted):
    before = len(scripted.received)
    result = run_cli("-s", "--digest", "-u", "a:b", scripted.url + "/echo")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.startswith(b"rest_client: option --digest: is unknown\n")
    assert len(scripted.received) == before


@pytest.mark.parametrize("line, status", [
    (["-s", "http://no-such-host.invalid/"], 6),
    (["-s", "-x", "http://no-such-proxy.invalid:3128", "http://127.0.0.1:1/"], 5),
    (["-s", "http://[::1/"], 3),
])
def test_cli_curl_form_exits_with_curls_statuses(line, status):
    result = run_cli(*line)
    assert (result.returncode, result.stdout, result.stderr) == (status, b"", b"")


def test_cli_show_error_names_what_failed(scripted):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        result = run_cli("-sS", "http://127.0.0.1:%d/" % port)
    assert result.returncode == 7
    assert result.stderr == ("rest_client: (7) could not connect to 127.0.0.1 port %d: "
                             "Connection refused\n" % port).encode()


def test_cli_curl_form_verbose_shows_the_connect_the_tls_and_each_hop(proxy, tls, pki):
    rest_client.close()
    result = run_cli("-sv", "-L", tls.url + "/redirect/302?to=/echo", "-x", proxy.with_credentials,
                     "--cacert", pki.ca_pem)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 0 and json.loads(result.stdout) == ECHO_GET
    port = tls.server_address[1]
    assert lines[:4] == ["* Connected to 127.0.0.1 (127.0.0.1) port %d" % proxy.server_address[1],
                         "> CONNECT 127.0.0.1:%d HTTP/1.1" % port,
                         "> Host: 127.0.0.1:%d" % port, "> Proxy-Authorization: Basic ***"]
    assert "< HTTP/1.1 200 Connection established" in lines
    assert any(line.startswith("* TLSv1.") and line.endswith("CN=localhost")
               for line in lines)
    assert "* following the 302 to %s/echo" % tls.url in lines
    assert lines.count("> GET /echo HTTP/1.1") == 1


def test_cli_curl_form_keeps_what_came_of_a_transfer_cut_short(counting, tmp_path):
    server = counting(lambda number, request: SHORT)
    target = tmp_path / "x.bin"
    result = run_cli("-sS", "-o", str(target), server.url + "/")
    assert (result.returncode, target.read_bytes()) == (18, BLOB[:1000])
    assert result.stderr == b"rest_client: (18) the reply ended after 1000 bytes, " \
                            b"4000 short of its length\n"


BROKEN_CHUNKS = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", CLOSE)


@pytest.mark.parametrize("reply, status", [(None, 52), (BROKEN_CHUNKS, 18)])
def test_cli_curl_form_an_empty_or_broken_reply(counting, reply, status):
    server = counting(lambda number, request: reply)  # None: closed without a word
    result = run_cli("-s", server.url + "/")
    assert result.returncode == status


def test_cli_curl_form_tls_trouble_has_curls_statuses(scripted, tls, pki, proxy, tmp_path):
    https_to_plain = "https://127.0.0.1:%d/" % scripted.server_address[1]
    assert run_cli("-s", https_to_plain).returncode == 35  # a handshake with no TLS server
    assert run_cli("-s", tls.url + "/echo").returncode == 60  # an issuer not trusted
    missing = str(tmp_path / "missing.pem")
    assert run_cli("-s", "--cert", missing, tls.url + "/echo").returncode == 58
    rest_client.close()
    refused = run_cli("-s", "-x", proxy.url, "--cacert", pki.ca_pem, tls.url + "/echo")
    assert (refused.returncode, refused.stdout) == (56, b"")  # the proxy's 407 to CONNECT
    refused = run_cli("-s", "-x", proxy.url, "--cacert", pki.ca_pem, tls.url + "/echo",
                      "-w", "%{http_code}")
    assert (refused.returncode, refused.stdout) == (56, b"000")  # no reply from the origin



def test_cli_curl_form_says_the_proxy_refused_the_tunnel(tls, pki, proxy):
    rest_client.close()
    refused = run_cli("-sS", "-x", proxy.url, "--cacert", pki.ca_pem, tls.url + "/echo")
    assert (refused.returncode, refused.stdout) == (56, b"")
    assert refused.stderr == b"rest_client: (56) CONNECT tunnel failed, response 407\n"


@pytest.mark.parametrize("before, after", [
    (["--fail"], []), (["-H", "X-Test: 1"], []), (["-i"], ["-q", "limit=1"])])
def test_cli_first_form_takes_options_before_the_method_too(users, before, after):
    """`--fail GET URL` is the first form, as it always was: options may come anywhere."""
    result = run_cli(*before + ["GET", users.url + "/", "-H", "Accept: application/json"]
                     + after)
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.endswith(b'{"users": "/users"}')


def test_cli_curl_form_keeps_binary_output_off_a_terminal(forks, counting):
    server = blob_server(counting)
    status, shown, stderr = on_terminal(forks, ["-sS", server.url + "/blob.bin"])
    assert (status, shown) == (23, b"")
    assert stderr == (b'rest_client: (23) binary output can mess up your terminal: use "-o -" '
                      b'to have it there anyway, or "-o FILE" to save it\n')
    status, shown, stderr = on_terminal(forks, ["-s", "-o", "-", server.url + "/blob.bin"])
    assert (status, stderr) == (0, b"") and len(shown) >= len(BLOB)


def test_dot_segments_are_resolved_before_sending(scripted):
    resp, err = send(Request("GET", scripted.url + "/a/../echo/./x/.."))
    assert err is None and resp.json()["path"] == "/echo/"


def test_cli_curl_form_form_parts_as_curl_sends_them(scripted, tmp_path):
    (tmp_path / "a.json").write_bytes(b"{}")
    result = run_cli("-s", "-F", "name=Ada;type=text/x-name", "-F",
                     "data=@%s" % (tmp_path / "a.json"), scripted.url + "/echo")
    assert result.returncode == 0
    received = scripted.received[-1]
    content_type = dict(received["headers"])["Content-Type"]
    assert [part[:3] for part in read_multipart(content_type, received["body"])] == [
        ("name", None, "text/x-name"), ("data", "a.json", "application/octet-stream")]


def test_cli_curl_form_a_post_without_data_has_no_length(counting):
    server = counting(lambda number, request: answer())
    assert run_cli("-s", "-X", "POST", server.url + "/").returncode == 0
    assert "content-length" not in server.requests[-1]["headers"]


@pytest.mark.parametrize("line, status, sent", [
    (["-sI", "-X", "GET"], 0, ("GET", None)),  # -I shows the head alone, whatever the method
    (["-s", "--json", "a", "--json", "b"], 0, ("POST", b"ab")),  # --json adds as is
    (["-s", "-d", "a=1", "--json", "{}"], 0, ("POST", b"a=1{}")),
    (["-s", "-A", ""], 0, ("GET", None)),  # no User-Agent at all
    (["-s", "-X", "post"], 0, ("post", None)),  # as written: methods are case-sensitive
    (["-s", "--cacert", "missing.pem"], 0, ("GET", None)),  # read for https alone
    (["-s", "-F", "a=1", "-d", "b=2"], 2, None),  # one request method only
    (["-s", "-I", "-d", "b=2"], 2, None),
    (["-s", "--fail", "--fail-with-body"], 2, None),
    (["-s", "--retry", "-1"], 2, None),
])
def test_cli_curl_form_choices_as_curl_makes_them(counting, line, status, sent):
    server = counting(lambda number, request: answer(b"body", headers=["X-A: 1"]))
    result = run_cli(*line + ["--", server.url + "/"])
    assert result.returncode == status
    if sent is None:
        assert server.requests == []
        return
    request = server.requests[-1]
    assert (request["method"], request["body"] or None) == sent
    assert "user-agent" not in request["headers"] or line[-1] != ""
    assert result.stdout == (b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-A: 1\r\n\r\n"
                             if "-sI" in line else b"body")


def test_cli_curl_form_write_out_names_more_than_the_status(counting):
    server = counting(lambda number, request: answer(b"body", headers=["X-A: 1"]))
    result = run_cli("-s", "-o", "-", "-w", " %{http_version} %{method} %{scheme} "
                     "%{num_headers} %header{x-a} %{url}", server.url + "/")
    assert result.stdout == b"body 1.1 GET HTTP 2 1 " + server.url.encode() + b"/"


class HeldChunksServer:
    """Sends a chunked reply's first chunk, then waits (5 s at most) for release before the
    last: a client that shows the first before the reply ends lets the test release it."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.url = "http://127.0.0.1:%d/" % self.listener.getsockname()[1]
        self.release, self.waited_out = threading.Event(), None
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        connection, _ = self.listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                               b"6\r\nfirst\n\r\n")
            self.waited_out = not self.release.wait(5)
            connection.sendall(b"5\r\nlast\n\r\n0\r\n\r\n")


def test_a_chunked_reply_shows_as_it_arrives():
    server = HeldChunksServer()
    process = subprocess.Popen([sys.executable, os.path.join(HERE, "rest_client.py"), "-s",
                                server.url], stdout=subprocess.PIPE)
    first = process.stdout.readline()
    server.release.set()
    rest = process.stdout.read()
    assert process.wait(20) == 0 and (first, rest) == (b"first\n", b"last\n")
    assert server.waited_out is False  # the first chunk was out before the reply ended
    server.listener.close()


@pytest.mark.parametrize("there, status, after", [
    (BLOB[:1000], 33, BLOB[:1000]),  # the whole body again would spoil the file
    (BLOB, 0, BLOB),  # complete already: the whole body is as long as the file
])
def test_cli_curl_form_resumes_only_where_the_server_sends_the_rest(counting, tmp_path, there,
                                                                    status, after):
    server = counting(lambda number, request: answer(BLOB))  # a 200, whatever the Range
    target = tmp_path / "blob.bin"
    target.write_bytes(there)
    result = run_cli("-s", "-C", "-", "-o", str(target), server.url + "/")
    assert (result.returncode, target.read_bytes()) == (status, after)
    assert server.requests[-1]["headers"]["range"] == "bytes=%d-" % len(there)


def test_a_file_body_goes_again_whole_after_a_307(counting, tmp_path):
    def answer_for(number, request):
        if request["target"] == "/old":
            return answer(b"", "307 Temporary Redirect", ["Location: /new"])
        return answer(request["body"])

    server = counting(answer_for)
    path = tmp_path / "upload.bin"
    path.write_bytes(BLOB)
    with open(str(path), "rb") as file:
        resp, err = rest_client.Client(follow_redirects=rest_client.ALL).send(
            Request("PUT", server.url + "/old", body=file))
    assert err is None and resp.content == BLOB
    assert [request["body"] for request in server.requests] == [BLOB, BLOB]


def test_cli_curl_form_fetches_each_url_in_turn(scripted, tmp_path):
    first, jar = tmp_path / "first.json", tmp_path / "jar.txt"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        refused = "http://127.0.0.1:%d/" % sock.getsockname()[1]
        result = run_cli("-s", "-c", str(jar), "-o", str(first), "-w", "%{http_code};",
                         scripted.url + "/set_cookie?cookie=sid%3D1", scripted.url + "/echo",
                         refused)
    assert result.returncode == 7  # the last transfer's, as curl's
    assert first.read_bytes() == b"set"  # the first -o goes with the first URL
    assert result.stdout == b'200;{"method": "GET", "path": "/echo", "body": ""}200;000;'
    assert last_header(scripted, "Cookie") == "sid=1"  # the transfers share the jar


EXPIRED_PKI = {  # a CA of its own, and a server certificate (localhost, 127.0.0.1) it signed,
    # valid on 1 January 2020 alone (openssl ca -startdate 20200101000000Z -enddate ...)
    "ca.pem": """-----BEGIN CERTIFICATE-----
MIIBszCCAVmgAwIBAgIUBkBk98s+Nr/lLE3aNZ2Pfjwr1/wwCgYIKoZIzj0EAwIw
JjEkMCIGA1UEAwwbcmVzdF9jbGllbnQgZXhwaXJlZC10ZXN0IENBMCAXDTI2MTEy
NjEwMDUxNVoYDzIxMjYxMTAyMTAwNTE1WjAmMSQwIgYDVQQDDBtyZXN0X2NsaWVu
dCBleHBpcmVkLXRlc3QgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATc8Fy/
82u9kl6ujDeth/yEkpuIdo47sTnfuYHupMXkiGgydcgLcN4KWhQ2hGj3Of4X1mlU
TgY8x+zrMJYJAYGUo2MwYTAdBgNVHQ4EFgQUL7Jqpc4tyquqQNwqGExUCuGjKyww
HwYDVR0jBBgwFoAUL7Jqpc4tyquqQNwqGExUCuGjKywwDwYDVR0TAQH/BAUwAwEB
/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZIzj0EAwIDSAAwRQIgKCYLZHsuY7zu75r0
uqSQL47U1UuvcKcnS4640kKhPZACIQDnzmMwo4Vl918hDkPGTkvtGTPbFNF2/ngU
VrEkHFh0Lg==
-----END CERTIFICATE-----
""",
    "server.pem": """-----BEGIN CERTIFICATE-----
MIIBtzCCAV2gAwIBAgICEAAwCgYIKoZIzj0EAwIwJjEkMCIGA1UEAwwbcmVzdF9j
bGllbnQgZXhwaXJlZC10ZXN0IENBMB4XDTIwMDEwMTAwMDAwMFoXDTIwMDEwMjAw
MDAwMFowFDESMBAGA1UEAwwJbG9jYWxob3N0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAE8hUUTzmkRS8s5geHOCoYqVva6ioFwotbWEkZvFvShi3no0SogPTUSuyR
poSFzXGS2RfKSOf6YRP/MlOp5z+wqKOBjDCBiTAJBgNVHRMEAjAAMAsGA1UdDwQE
AwIHgDATBgNVHSUEDDAKBggrBgEFBQcDATAaBgNVHREEEzARgglsb2NhbGhvc3SH
BH8AAAEwHQYDVR0OBBYEFEMXNDUDzZwhsmsFYk2Oh3rNzYJWMB8GA1UdIwQYMBaA
FC+yaqXOLcqrqkDcKhhMVArhoyssMAoGCCqGSM49BAMCA0gAMEUCIQD4744w+huS
23kkNtoVq5HgbH0raClTG4rzeNbLbGJrZwIgJvzKRxA7cKrbNao+Zz5f55DLdqUl
+rjdDf+Ht7FT9AU=
-----END CERTIFICATE-----
""",
    "server.key": """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnKKE1rm90YcKtGiq
y4CrMpTEEeHEt9bZBp/TgXvyTHahRANCAATyFRRPOaRFLyzmB4c4KhipW9rqKgXC
i1tYSRm8W9KGLeejRKiA9NRK7JGmhIXNcZLZF8pI5/phE/8yU6nnP7Co
-----END PRIVATE KEY-----
""",
}


def test_an_expired_certificate_is_untrusted_without_a_hint_to_trust_a_ca(tmp_path):
    for name, text in EXPIRED_PKI.items():
        (tmp_path / name).write_text(text)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tmp_path / "server.pem"), str(tmp_path / "server.key"))
    server = ScriptedServer(("127.0.0.1", 0), ScriptedHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    serve_scripted(server, "https")
    try:
        cacert = str(tmp_path / "ca.pem")
        resp, err = send(Request("GET", server.url + "/echo"), context=tls_context(cacert=cacert))
        assert resp is None and isinstance(err, rest_client.UntrustedCertificate)
        if sys.version_info >= (3, 7):  # 3.6's ssl does not say why a certificate failed
            assert "--cacert" not in str(err) and "certificate has expired" in str(err)
        result = run_cli("-s", "--cacert", cacert, server.url + "/echo")
        assert (result.returncode, result.stdout) == (60, b"")
    finally:
        server.shutdown()
        server.server_close()


# -----------------------------------------------------------------------------------------
# curl's own command lines, run by curl and by the client side by side
#
# Each line of the table runs twice at once: as `curl LINE` (Debian's curl 7.88, a system
# program as Chromium is for the explorer's tests) and as `python rest_client.py LINE`, each
# in a fresh folder holding the same input files, each against local recording servers of
# its own. Both must give the same exit status, the same bytes on stdout, the same files, and
# the same requests on the wire. Then the cases where the client must not damage anything, and its
# memory on large transfers. The tests skip when curl is not installed.
# -----------------------------------------------------------------------------------------

CLIENT = [sys.executable, os.path.join(HERE, "rest_client.py")]
CURL = shutil.which("curl", path="/usr/bin") or shutil.which("curl")

DATA_BIN = bytes(range(256)) * 16  # 4,096 bytes, every byte value: for -O, -r and -C -
FILES = {"report.csv": (b"id,name\n1,Ada\n2,Alan\n", "text/csv"),
         "data.bin": (DATA_BIN, "application/octet-stream")}
GZIP_TEXT = b"the same line, again and again\n" * 40


def gzipped(data):
    """data as gzip with a fixed time stamp, so every request gets the same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as stream:
        stream.write(data)
    return buffer.getvalue()


# -- the servers: one records every request and answers by path ------------------------------

class RecordingHandler(ReplyingHandler):
    """Answers by the path's first segment; every request goes into server.received."""

    def version_string(self):
        return "recording-server"

    def date_time_string(self, timestamp=None):
        # The curl run and the client run are a moment apart: a fixed Date keeps `-i` and
        # `-I` output comparable byte for byte without normalising it.
        return "Thu, 26 Nov 2026 10:00:00 GMT"

    def answer(self):
        parts = urlsplit(self.path)
        route = parts.path.strip("/").split("/")
        body = self.read_body(keep=route[0] != "sink")
        self.server.received.append({"method": self.command, "target": self.path,
                                     "headers": self.headers.items(), "body": body})
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        getattr(self, "answer_" + route[0], self.answer_echo)(route[1:], query)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = answer

    def read_body(self, keep=True):
        """The request's body, chunked or by length; a sink's is counted and its CRC-32
        taken, not kept."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            pieces = iter(self.read_chunk, b"")
        else:
            pieces = self.read_length(int(self.headers.get("Content-Length") or 0))
        self.crc, self.length, kept = 0, 0, []
        for piece in pieces:
            self.crc = zlib.crc32(piece, self.crc)
            self.length += len(piece)
            if keep:
                kept.append(piece)
        return b"".join(kept)

    def read_length(self, left):
        """The pieces of a body of a known length, a MiB at most each."""
        while left > 0:
            piece = self.rfile.read(min(left, MIB))
            if not piece:
                return
            left -= len(piece)
            yield piece

    def read_chunk(self):
        """One chunk of a chunked body (RFC 9112 §7.1); b"" for the last."""
        size = int(self.rfile.readline().split(b";")[0], 16)
        piece = self.rfile.read(size)
        self.rfile.readline()  # the CRLF after the chunk (and the empty trailer at the end)
        return piece

    def reply(self, status, body=b"", headers=(("Content-Type", "text/plain"),)):
        super().reply(status, body, headers)

    def answer_echo(self, route, query):
        self.reply(200, ("%s %s\n" % (self.command, self.path)).encode())

    def answer_status(self, route, query):
        self.reply(int(route[0]), b"page %s\n" % route[0].encode())

    def answer_redirect(self, route, query):
        self.reply(int(route[0]), b"moved\n", [("Location", query.get("to", "/echo"))])

    def answer_loop(self, route, query):
        self.reply(302, b"again\n", [("Location", "/loop")])

    def answer_gzip(self, route, query):
        """Gzip only for a request that asked for it, as servers do."""
        if "gzip" in self.headers.get("Accept-Encoding", ""):
            return self.reply(200, gzipped(GZIP_TEXT), [("Content-Type", "text/plain"),
                                                        ("Content-Encoding", "gzip")])
        self.reply(200, GZIP_TEXT)

    def answer_cookies(self, route, query):
        self.reply(200, b"set\n", [  # a fixed expiry, so both jars hold the same time stamp
            ("Set-Cookie", "sid=abc123; Path=/"),
            ("Set-Cookie", "theme=dark; Path=/; Expires=Fri, 01 Jan 2100 00:00:00 GMT")])

    def answer_custom(self, route, query):
        """A status line with a reason of its own, which -i must show as it came."""
        self.wfile.write(b"HTTP/1.0 299 Custom Reason\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: 5\r\n\r\nfine\n")
        self.close_connection = True

    def answer_chunked(self, route, query):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in (b"one\n", b"two, three\n", b"four\n", b""):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))

    def answer_drip(self, route, query):
        """100 bytes, one every 50 ms: no single read waits long, the whole takes 5 s."""
        self.send_response(200)
        self.send_header("Content-Length", "100")
        self.end_headers()
        try:
            for _ in range(100):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.05)  # the server's pace, not a wait for the test
        except OSError:
            pass  # the client gave up, as it should

    def answer_files(self, route, query):
        """A file by name, with Range (RFC 9110 §14.2) for -r and -C -."""
        data, media_type = FILES[route[0]]
        wanted = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if not wanted:
            return self.reply(200, data, [("Content-Type", media_type),
                                          ("Accept-Ranges", "bytes")])
        first = int(wanted.group(1))
        if first >= len(data):  # nothing there to send (RFC 9110 §15.5.17), as nginx says
            return self.reply(416, b"<html>416</html>\n", [
                ("Content-Type", "text/html"), ("Content-Range", "bytes */%d" % len(data))])
        last = int(wanted.group(2)) if wanted.group(2) else len(data) - 1
        self.reply(206, data[first:last + 1], [
            ("Content-Type", media_type),
            ("Content-Range", "bytes %d-%d/%d" % (first, last, len(data)))])

    def answer_upload(self, route, query):
        self.reply(201, b"stored %d bytes at %s\n" % (self.length, self.path.encode()))

    def answer_flaky(self, route, query):
        """503 the first time after each reset, then 200."""
        self.server.attempts += 1
        if self.server.attempts == 1:
            return self.reply(503, b"busy\n")
        self.reply(200, b"ok after %d\n" % self.server.attempts)

    def answer_bulk(self, route, query):
        """N MiB of one repeated MiB, never held more than once."""
        chunk, count = bytes(range(256)) * 4096, int(route[0])
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(count * MIB))
        self.end_headers()
        for _ in range(count):
            self.wfile.write(chunk)

    def answer_sink(self, route, query):
        self.reply(200, b"%d %08x\n" % (self.length, self.crc))


class RecordingServer(ThreadingMixIn, HTTPServer):  # ThreadingHTTPServer, which 3.6 lacks
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a drip or a bulk reply to a client that gave up: expected


def start(address, received):
    """A recording server on address, port 0, appending to the shared list received."""
    server = RecordingServer((address, 0), RecordingHandler)
    server.received, server.attempts = received, 0
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    server.url = "http://%s:%d" % (address, server.server_address[1])
    return server


def start_servers():
    """This host's server, another host's (127.0.0.2) sharing its record, and a port
    nothing listens on."""
    received = []
    here, other = start("127.0.0.1", received), start("127.0.0.2", received)
    unheard = socket.socket()  # bound and never listening: a connection there is refused,
    unheard.bind(("127.0.0.1", 0))  # and no other server can take the port meanwhile
    refused = "http://127.0.0.1:%d" % unheard.getsockname()[1]
    return Servers(here=here, other=other, refused=refused, received=received, unheard=unheard)


def stop_servers(*started):
    """Stop what start_servers started, every server at once: each stops only at its loop's
    next poll."""
    servers = [server for each in started for server in (each.here, each.other)]
    stopping = [threading.Thread(target=server.shutdown) for server in servers]
    for thread in stopping:
        thread.start()
    for thread in stopping:
        thread.join()
    for server in servers:
        server.server_close()
    for each in started:
        each.unheard.close()


Servers = collections.namedtuple("Servers", "here other refused received unheard")


@pytest.fixture(scope="module")
def servers():
    """The servers of the tests that run the client alone."""
    started = start_servers()
    yield started
    stop_servers(started)


def reset(servers):
    """Forget what the servers received and saw, before a run."""
    del servers.received[:]
    servers.here.attempts = servers.other.attempts = 0


# -- running a line, by curl and by the client ------------------------------------------------

INPUTS = {
    "data.txt": b"name=Ada Lovelace\r\nrole=admin&co\n",
    "body.json": b'{"name": "Ada"}\n',
    "body.bin": bytes(range(256)),
    "doc.txt": b"Doc line 1\nline 2\n",
    # two paths of different lengths, so Cookie has one right order (RFC 6265 §5.4)
    "cookies.txt": b"# Netscape HTTP Cookie File\n"
                   b"127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfrom-file\n"
                   b"127.0.0.1\tFALSE\t/echo\tFALSE\t4102444800\ttheme\tlight\n",
    "partial.bin": DATA_BIN[:1000],
    "fmt.txt": b"%{http_code}\r\n%{content_type}\\n",
    "existing.json": b'{"precious": true}\n',
    "netrc.txt": b"machine 127.0.0.1 login ada password from-netrc\n",
}

Transfer = collections.namedtuple("Transfer", "status stdout files wire stderr")


# The environment lines run in: no proxy, no API_KEY and no ~/.curlrc or ~/.netrc of the
# machine's, so only the line decides. Taken once here: pytest changes os.environ
# (PYTEST_CURRENT_TEST) while the lines' threads would read it.
# PyPy sizes its nursery from the cache size the CPU reports, and lets garbage of about
# eight nurseries pile up before a major collection: a virtual machine that reports 300 MB
# of cache gets a 150 MB nursery, and a client streaming 1 GiB in 1 MiB pieces peaks at
# 1.2 GB though it holds none of them. 4 MB is the nursery a usual CPU's cache gives.
ENVIRONMENT = dict({name: value for name, value in os.environ.items()
                    if "proxy" not in name.lower() and name != "API_KEY"},
                   HOME=os.path.join(tempfile.gettempdir(), "no-such-home"),
                   PYPY_GC_NURSERY="4MB")


def environment(**added):
    """ENVIRONMENT with added."""
    return dict(ENVIRONMENT, **added)


def run_line(program, line, servers, folder, stdin=b"", env=None):
    """Run program with the line's arguments in a folder holding INPUTS; what it did."""
    return finish_line(start_line(program, line, servers, folder, env), line, servers,
                       folder, stdin)


def start_line(program, line, servers, folder, env=None):
    """Start program (a command, or a ForkServer's client) with the line's arguments in a
    folder holding INPUTS."""
    os.makedirs(folder, exist_ok=True)
    for name, data in INPUTS.items():
        with open(os.path.join(folder, name), "wb") as file:
            file.write(data)
    reset(servers)
    if isinstance(program, ForkServer):
        return program.start(arguments(line, servers), folder, env or environment())
    return subprocess.Popen(program + arguments(line, servers), cwd=folder,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env or environment())


def finish_line(process, line, servers, folder, stdin=b""):
    """What a started line did, once it ends."""
    stdout, stderr = process.communicate(stdin, timeout=20)
    wire = [on_the_wire(request, line) for request in servers.received]
    files = {name: normal_output(line, data) for name, data in files_in(folder).items()}
    return Transfer(process.returncode, portless(normal_output(line, stdout), servers),
                    portless(files, servers), portless(wire, servers), stderr)


# Python's start and its import of http.client are most of a client run's time (about 70
# of 85 ms of CPU on CPython 3.6; more on PyPy): the table's runs of the client are forked
# from a process that imported rest_client once. Each child ends as `python rest_client.py`
# does, with `sys.exit(main())`, on stdin, stdout and stderr pipes of its own, in its
# folder, with its environment and arguments; the process it is forked from runs none of
# the client, so each child starts from a fresh import. Tests of single runs fork too (the
# module's `forks`), but those of what only a fresh start shows: the file run as a shell
# runs it, the environment read at start, a terminal, stdout a pipe read as it comes.
FORK_SERVER = """import array, gc, json, os, socket, sys
sys.path[0] = sys.argv[1]  # the file's folder, not the current one, as for rest_client.py
import rest_client
if hasattr(gc, "freeze"):  # 3.7+: a child's collections and its exit then leave the objects
    gc.freeze()            # it shares with this process alone, rather than copy their pages
control = socket.fromfd(int(sys.argv[2]), socket.AF_UNIX, socket.SOCK_SEQPACKET)
os.close(int(sys.argv[2]))
while True:
    fds = array.array("i")
    message, ancillary, _, _ = control.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
    if not message:
        sys.exit()  # the tests are done
    for _, _, data in ancillary:
        fds.frombytes(data)
    pid = os.fork()
    if pid == 0:
        break
    for fd in fds:
        os.close(fd)
    _, status, usage = os.wait4(pid, 0)
    control.send(b"%d %d" % (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else
                             os.WEXITSTATUS(status), usage.ru_maxrss))
control.close()
for number, fd in enumerate(fds):  # stdin, stdout, stderr
    os.dup2(fd, number)
    os.close(fd)
run = json.loads(message.decode())
os.chdir(run["cwd"])
os.environ.clear()
os.environ.update(run["env"])
sys.argv = run["argv"]
sys.exit(rest_client.main())
"""


class ForkServer:
    """A process that imported rest_client, forking a child for each run of the client:
    one run at a time. Its own stdin, stdout and stderr are pipes, as a run's are. A child's
    peak memory starts at this small process's, not at pytest's (Linux keeps the
    high-water mark across fork), so it measures the client's too."""

    def __init__(self):
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-c", FORK_SERVER, HERE, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=environment())
        theirs.close()

    def start(self, args, folder, env, stdout=None, stderr=None):
        """Run the client with args in folder, with env, its stdout and stderr pipes or the
        files given; a ForkedRun."""
        stdin = os.pipe()  # (read end, write end)
        outputs = [os.pipe() if file is None else (None, file.fileno())
                   for file in (stdout, stderr)]
        given = array.array("i", [stdin[0]] + [written for _, written in outputs])
        run = {"argv": CLIENT[1:] + args, "cwd": folder, "env": env}
        self.control.sendmsg([json.dumps(run).encode()],
                             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, given)])
        os.close(stdin[0])
        for read, written in outputs:
            if read is not None:
                os.close(written)
        return ForkedRun(self.control, stdin[1], *[read for read, _ in outputs])

    def close(self):
        """End the process (it ends when the control socket closes)."""
        self.control.close()
        self.process.communicate(timeout=20)


class ForkedRun:
    """A run of the client forked by a ForkServer: what finish_line uses of a Popen, and
    its peak resident memory in KiB once it ends."""

    def __init__(self, control, stdin, stdout, stderr):
        self.control, self.stdin, self.outputs, self.returncode, self.peak = (
            control, stdin, (stdout, stderr), None, None)

    def communicate(self, input=b"", timeout=20):
        """Write input (a few bytes: they fit in the pipe) and close stdin, read stdout and
        stderr (those that are pipes, b"" for a file) to their ends; then the exit status
        comes."""
        try:
            with open(self.stdin, "wb") as stdin:
                stdin.write(input)
        except BrokenPipeError:
            pass  # the run ended without reading it all, which Popen.communicate allows too
        read, deadline = {fd: [] for fd in self.outputs}, time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            for fd in self.outputs:
                if fd is not None:
                    selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                ready = selector.select(deadline - time.monotonic())
                if not ready:
                    raise subprocess.TimeoutExpired(CLIENT, timeout)
                for key, _ in ready:
                    piece = os.read(key.fd, 65536)
                    read[key.fd].append(piece)
                    if not piece:
                        selector.unregister(key.fd)
                        os.close(key.fd)
        self.wait()
        return tuple(b"".join(read[fd]) for fd in self.outputs)

    def wait(self):
        """The exit status, once the run ends (and its peak memory in self.peak)."""
        self.returncode, self.peak = map(int, self.control.recv(64).split())
        return self.returncode


@pytest.fixture(scope="module")
def forks():
    """A ForkServer for the runs of the client that are not about a process's start."""
    server = ForkServer()
    yield server
    server.close()


def portless(value, servers):
    """value with the servers' ports written as $PORT and $OTHER_PORT: curl's runs and
    the client's go at the same time, each to servers of its own, on ports of their own."""
    if isinstance(value, (list, tuple)):
        return type(value)(portless(item, servers) for item in value)
    if isinstance(value, dict):
        return {name: portless(item, servers) for name, item in value.items()}
    for server, name in ((servers.here, "$PORT"), (servers.other, "$OTHER_PORT")):
        host = "%s:%d" % server.server_address
        if isinstance(value, bytes):
            value = value.replace(host.encode(), host.rpartition(":")[0].encode() + b":" +
                                  name.encode())
        elif isinstance(value, str):
            value = value.replace(host, host.rpartition(":")[0] + ":" + name)
    return value


def arguments(line, servers):
    """The line's words, its $URL, $OTHER, $REFUSED, $PORT and $OTHER_PORT made the test
    servers' addresses."""
    for name, value in (("$URL", servers.here.url), ("$OTHER_PORT", port(servers.other)),
                        ("$OTHER", servers.other.url), ("$REFUSED", servers.refused),
                        ("$PORT", port(servers.here))):
        line = line.replace(name, value)
    return shlex.split(line)


def port(server):
    """The server's port, as text."""
    return str(server.server_address[1])


def files_in(folder):
    """Every regular file in folder by name, with its bytes (a cookie jar's, normalised)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        if not stat.S_ISREG(os.lstat(os.path.join(folder, name)).st_mode):
            continue  # a link, a FIFO or a device node of a test of its own
        with open(os.path.join(folder, name), "rb") as file:
            found[name] = normal_jar(file.read()) if name.startswith("jar") else file.read()
    return found


def normal_jar(data):
    """A cookie jar's cookie lines, sorted: its comment lines name the program that wrote
    it, and the order of its lines means nothing."""
    return b"".join(sorted(line for line in data.splitlines(True)
                           if line.strip() and not line.startswith(b"# ")))


def normal_output(line, data):
    """stdout or a file's bytes, with only what must differ between two runs made the same."""
    if "%{time_total}" in line:  # time values differ from run to run
        data = re.sub(rb"\d+[.,]\d+", b"T", data)
    if "/drip" in line:  # how many bytes arrive before the deadline is the scheduler's
        data = re.sub(rb"x+", b"x...", data)
    if "-c -" in line:  # a cookie jar on stdout: compared as a jar file is
        data = normal_jar(data)
    return data


IGNORED = {
    "user-agent",  # curl/7.88.1 and the client name themselves (compared where -A sets it)
    "accept-encoding",  # the client always asks for gzip (and decodes it); curl only with
                        # --compressed; stdout must still be the same bytes
    "proxy-connection",  # curl's own header to a proxy, never standard (RFC 9112,
                         # Appendix C.2.2: clients are encouraged not to send it)
    "expect",  # curl asks `Expect: 100-continue` before a large or unsized body: a
               # handshake about sending the body, not part of the request (RFC 9110 §10.1.1)
}


def on_the_wire(request, line):
    """A received request as compared: header names in lower case and in name order
    (RFC 9110 §5.3: only the order of fields of one name matters), a multipart
    boundary made the same."""
    keep_agent = re.search(r"(^| )(-A|--user-agent) |User-Agent:", line)
    headers = [(name.lower(), value) for name, value in request["headers"]
               if name.lower() not in IGNORED or (name.lower() == "user-agent" and keep_agent)]
    body = request["body"]
    boundary = re.search(r"boundary=(\S+)", dict(headers).get("content-type", ""))
    if boundary:  # each program draws its own random boundary (RFC 7578 §4.1)
        body = body.replace(boundary.group(1).encode(), b"BOUNDARY")
        headers = [(name, value.replace(boundary.group(1), "BOUNDARY")) for name, value in
                   headers]
        headers = [(name, str(len(body)) if name == "content-length" else value)
                   for name, value in headers]
    return (request["method"], request["target"],
            sorted(headers, key=lambda header: header[0]), body)


@pytest.fixture(scope="module")
def curl():
    """curl's command, or a skip where it is not installed."""
    if CURL is None:
        pytest.skip("curl is not installed (.ci/run installs it)")
    return [CURL]


# -- the table: curl lines as people write them -----------------------------------------------

def piped(line, stdin):
    """A line with stdin."""
    return pytest.param(line, stdin, id=line + " <stdin")


def lines(*table):
    """Table rows: a line alone, or piped(line, stdin)."""
    return [row if not isinstance(row, str) else pytest.param(row, b"", id=row) for row in table]


REDIRECTS = (301, 302, 303, 307, 308)

CURL_LINES = lines(
    # what people paste first
    "-s $URL/echo",
    "-s -o page.txt -w '%{http_code}' $URL/echo",
    "-s -o page.txt -w '%{http_code}' $URL/status/404",
    "-fsSL $URL/files/report.csv -o report.csv",
    "-fsSL -o report.csv '$URL/redirect/302?to=/files/report.csv'",
    "-sSo out.txt $URL/echo",
    "-sopage.txt $URL/echo",
    "-s -o missing/out.txt $URL/echo",
    "-s '$URL/echo?q=a b'",
    "-s $URL/a/../echo/./1",
    "$URL/echo -s",
    # methods
    "-s -X DELETE $URL/echo/1",
    "-s --request PATCH -d x=1 $URL/echo/1",
    "-s -X PUT -d '{\"a\": 1}' -H 'Content-Type: application/json' $URL/echo/1",
    "-s -X GET -d a=1 $URL/echo",
    # redirects: not followed without -L; with -L by curl's method rules
    "-s $URL/redirect/302",
    "-sL $URL/redirect/302",
    *["-sL -d a=1 $URL/redirect/%d" % code for code in REDIRECTS],
    "-sL -X PUT -d a=1 $URL/redirect/302",  # the method kept, the body dropped
    "-sL -X PUT -d a=1 $URL/redirect/307",  # the method and the body kept
    "-sL -X POST -d a=1 $URL/redirect/302",
    "-sL -I $URL/redirect/301",
    "-sL '$URL/redirect/302?to=../echo'",
    "-sL --max-redirs 3 $URL/loop",
    "-sL $URL/loop",
    "-sL --max-redirs -1 $URL/redirect/302",
    "-sL -o out.txt -w '%{http_code} %{num_redirects}\\n' --max-redirs 2 $URL/loop",
    "-sfL '$URL/redirect/302?to=/status/404'",
    "-sL -u ada:pw '$URL/redirect/302?to=$OTHER/echo'",
    "-sL -H 'Authorization: Bearer t0k' -H 'Cookie: a=1' -H 'X-Test: 1' "
    "'$URL/redirect/302?to=$OTHER/echo'",
    # what comes back
    "-sI $URL/echo",
    "-sI -X GET $URL/echo",
    "-si $URL/echo",
    "-si $URL/custom",
    "-s -i -o both.txt $URL/echo",
    "-s $URL/gzip",
    "-si --compressed $URL/gzip",
    "-sI --compressed $URL/gzip",
    "-s $URL/chunked",
    # --fail
    "-sf -o out.txt $URL/status/404",
    "-fsS -w '%{http_code}' $URL/status/503",
    "-s --fail-with-body $URL/status/503",
    "-s --fail-with-body -o out.txt $URL/status/404",
    # bodies
    "-s -d a=1 -d b=2 $URL/echo",
    "-s -d @missing.txt $URL/echo",
    "-s -d @data.txt $URL/echo",
    "-s --data-binary @data.txt $URL/echo",
    piped("-s --data-binary @- $URL/echo", b"from\r\nstdin\n"),
    "-s --data-raw @data.txt $URL/echo",
    "-s --data-urlencode 'name=Ada Lovelace&co' $URL/echo",
    "-s --data-urlencode '=a b+c' $URL/echo",
    "-s --data-urlencode 'name=Zoë a=b' $URL/echo",
    "-s --data-urlencode name@data.txt $URL/echo",
    "-s --data-urlencode @data.txt $URL/echo",
    "-s --json '{\"name\": \"Ada\"}' $URL/echo",
    "-s --json '{}' -H 'Accept: text/plain' $URL/echo",
    "-s -F name=Ada -F role=admin $URL/echo",
    "-s -F doc=@doc.txt $URL/echo",
    "-s -F 'doc=<doc.txt' $URL/echo",
    "-s -F 'img=@body.bin;type=image/png' $URL/echo",
    "-s -F 'name=Ada;type=text/x-name' -F data=@body.json $URL/echo",
    "-s -F doc=@missing.txt $URL/echo",
    piped("-s -F note=@- $URL/echo", b"piped note\n"),
    "-s -T doc.txt $URL/upload/",
    "-s -T doc.txt '$URL/upload/?x=1'",
    "-s -T missing.txt $URL/upload/",
    piped("-s -T - $URL/upload/piped", b"streamed\nfrom stdin\n"),
    "-s -G -d q=ada -d limit=5 $URL/echo",
    "-s -G --data-urlencode 'q=a b' '$URL/echo?x=1'",
    # headers and credentials
    "-s -A 'probe/1.0' $URL/echo",
    "-s -e https://example.com/from $URL/echo",
    "-s -u ada:pw $URL/echo",
    "-s -u 'ada:p@ss:word' $URL/echo",
    "-s http://ada:pw@127.0.0.2:$OTHER_PORT/echo",
    "-s -b a=1 -b b=2 $URL/echo",
    "-s -b cookies.txt $URL/echo",
    "-s -c jar.txt $URL/cookies",
    "-s -c - $URL/cookies",
    "-s -b cookies.txt -c jar.txt $URL/cookies",
    "-s --netrc-file netrc.txt $URL/echo",
    "-s -H 'X-Test: 1' -H 'Accept: application/xml' $URL/echo",
    "-s -H 'X-Twice: 1' -H 'X-Twice: 2' $URL/echo",
    # proxies
    "-s -x $OTHER $URL/echo",
    "-s --proxy http://bob:pw@127.0.0.2:$OTHER_PORT $URL/echo",
    "-s -x $OTHER --noproxy 127.0.0.1 $URL/echo",
    # -w and its variables
    "-s -o out.txt -w '%{http_code} %{response_code} %{content_type} [%{exitcode}]"
    "[%{errormsg}] 100%%\\n' $URL/files/report.csv",
    "-s -w '%{size_download}' $URL/echo",
    "-s -o out.txt -w '%{time_total}' $URL/echo",
    "-sL -o out.txt -w '%{url_effective} %{num_redirects}' $URL/redirect/302",
    "-s -o out.txt -w '%{redirect_url}' $URL/redirect/302",
    "-s -o out.txt -w '%{size_download}' $URL/gzip",
    "-s -o out.txt -w @fmt.txt $URL/files/report.csv",
    # failures and time
    "-s $REFUSED/",
    "-s -w '%{http_code}' $REFUSED/",
    "-s http://nothing.invalid/",
    "-s -m 0.5 $URL/drip",
    "-s -m 0.5 -o drip.txt -w '%{http_code} %{exitcode}' $URL/drip",
    "-s --retry 1 --retry-delay 1 $URL/flaky",
    # ranges and names from the URL
    "-s -C - -o partial.bin $URL/files/data.bin",
    "-s -r 0-9 --connect-timeout 5 $URL/files/data.bin",
    "-s -O $URL/files/report.csv",
    "-s -O '$URL/files/report.csv?version=2'",
    "-s -C - -o report.csv $URL/files/report.csv",
    # an option neither knows: both exit 2 and send nothing
    "-s --no-such-option $URL/echo",
)


WORKERS = 4  # lines run at once


@pytest.fixture(scope="module")
def ran(request, tmp_path_factory):
    """For each table line this session runs, a future of what curl and the client did:
    WORKERS lines at a time, each on two sets of servers and a ForkServer of its own.
    Started with the first line's test: the lines after it are run while it waits."""
    chosen = [(item.callspec.params["line"], item.callspec.params["stdin"])
              for item in request.session.items  # in the order the tests will ask
              if getattr(item, "originalname", None) == "test_a_curl_line_does_what_curl_does"
              and CURL is not None]
    free = queue.Queue()
    for _ in range(min(WORKERS, len(chosen))):
        free.put(((start_servers(), start_servers()), ForkServer()))
    folder = tmp_path_factory.mktemp("lines")  # made here: mktemp is not safe in threads
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        yield {line: pool.submit(run_beside_curl, [CURL], line, free, folder / str(number))
               for number, line in enumerate(chosen)}
    workers = [free.get() for _ in range(free.qsize())]
    for servers, forks in workers:
        forks.close()
    stop_servers(*[started for servers, forks in workers for started in servers])


def run_beside_curl(curl, line, free, folder):
    """Run the line (line, stdin) with curl and with the client at once, in two folders
    under folder; what each did."""
    (line, stdin), (servers, forks) = line, free.get()
    try:
        folders = str(folder / "curl"), str(folder / "client")
        started = [start_line(program, line, where, place)
                   for program, where, place in zip((curl, forks), servers, folders)]
        return [finish_line(process, line, where, place, stdin)
                for process, where, place in zip(started, servers, folders)]
    finally:
        free.put((servers, forks))


@pytest.mark.parametrize("line, stdin", CURL_LINES)
def test_a_curl_line_does_what_curl_does(curl, ran, line, stdin):
    """The same exit status, stdout bytes, files and requests on the wire as curl's."""
    by_curl, by_client = ran[line, stdin].result()
    assert by_client.status == by_curl.status
    assert by_client.stdout == by_curl.stdout
    assert by_client.files == by_curl.files
    assert by_client.wire == by_curl.wire


def test_the_table_has_sixty_lines_or_more():
    assert len(CURL_LINES) >= 60


def test_an_option_outside_the_set_is_a_usage_error_naming_it_and_nothing_is_sent(
        forks, servers, tmp_path):
    """curl knows hundreds of options the client does not; any it does not know is exit 2,
    before anything is sent."""
    done = run_line(forks, "-s --digest -u a:b $URL/echo", servers, str(tmp_path / "run"))
    assert (done.status, done.stdout, done.wire) == (2, b"", [])
    assert b"--digest" in done.stderr


# -- nothing damaged ---------------------------------------------------------------------------
# Never /dev/null itself: a client that writes beside its target and renames would replace
# the machine's /dev/null with a file when run as root. Each test makes its own special file.

OUTPUT_FORMS = {"curl": "-s -o %s $URL/echo", "first form": "GET $URL/echo -o %s"}


def own_null_device(path):
    """A character device like /dev/null (1, 3) at path; False where mknod is not allowed
    (not root, or a container without CAP_MKNOD)."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        return False
    return True


def fifo_with_reader(path):
    """A FIFO at path, with a reader already there, so a writer's open does not block."""
    os.mkfifo(path)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


def drained(reader):
    """What a FIFO's writers left in it (a small reply fits its buffer)."""
    pieces = []
    try:
        for piece in iter(lambda: os.read(reader, 65536), b""):
            pieces.append(piece)
    except BlockingIOError:
        pass  # nothing more, though a writer may still hold it open
    os.close(reader)
    return b"".join(pieces)


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_to_a_device_node_writes_into_it_and_leaves_it_a_device(
        forks, servers, tmp_path, form):
    """`-o /dev/null` as root, on a device of the test's own; a FIFO where mknod is not
    allowed."""
    node = str(tmp_path / "null")
    if not own_null_device(node):
        return check_output_to_a_fifo(forks, servers, tmp_path, form)
    done = run_line(forks, OUTPUT_FORMS[form] % "null", servers, str(tmp_path))
    assert (done.status, done.stdout) == (0, b"")
    mode = os.lstat(node)
    assert stat.S_ISCHR(mode.st_mode) and mode.st_rdev == os.makedev(1, 3)
    assert sorted(os.listdir(str(tmp_path))) == sorted(["null"] + list(INPUTS))


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(forks, servers, tmp_path, form):
    check_output_to_a_fifo(forks, servers, tmp_path, form)


def check_output_to_a_fifo(forks, servers, tmp_path, form):
    """-o onto a FIFO: the reply goes through it, and it stays a FIFO."""
    reader = fifo_with_reader(str(tmp_path / "pipe"))
    done = run_line(forks, OUTPUT_FORMS[form] % "pipe", servers, str(tmp_path))
    assert (done.status, done.stdout, drained(reader)) == (0, b"", b"GET /echo\n")
    assert stat.S_ISFIFO(os.lstat(str(tmp_path / "pipe")).st_mode)
    assert sorted(os.listdir(str(tmp_path))) == sorted(["pipe"] + list(INPUTS))


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_through_a_symbolic_link_replaces_the_file_it_names(forks, servers, tmp_path,
                                                                    form):
    (tmp_path / "target.txt").write_bytes(b"old\n")
    os.symlink("target.txt", str(tmp_path / "link.txt"))
    done = run_line(forks, OUTPUT_FORMS[form] % "link.txt", servers, str(tmp_path))
    assert (done.status, done.stdout) == (0, b"")
    assert os.readlink(str(tmp_path / "link.txt")) == "target.txt"
    assert (tmp_path / "target.txt").read_bytes() == b"GET /echo\n"
    assert sorted(os.listdir(str(tmp_path))) == sorted(["link.txt", "target.txt"] + list(INPUTS))


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_through_a_link_to_a_fifo_writes_into_the_fifo(forks, servers, tmp_path, form):
    """As `-o /dev/stdout` does: a link to what the shell gave as stdout, here a FIFO."""
    reader = fifo_with_reader(str(tmp_path / "pipe"))
    os.symlink("pipe", str(tmp_path / "stdout"))
    done = run_line(forks, OUTPUT_FORMS[form] % "stdout", servers, str(tmp_path))
    assert (done.status, done.stdout, drained(reader)) == (0, b"", b"GET /echo\n")
    assert os.readlink(str(tmp_path / "stdout")) == "pipe"
    assert stat.S_ISFIFO(os.lstat(str(tmp_path / "pipe")).st_mode)


@pytest.mark.parametrize("line, status", [("-sf -o existing.json $URL/status/503", 22),
                                          ("GET $URL/status/503 --fail -o existing.json", 1)])
def test_fail_leaves_an_existing_file_untouched(forks, servers, tmp_path, line, status):
    done = run_line(forks, line, servers, str(tmp_path))
    assert (done.status, done.stdout) == (status, b"")
    assert done.files == INPUTS


# -- the environment: httpoxy and API_KEY ------------------------------------------------------

@pytest.mark.parametrize("line", ["-s $URL/echo", "GET $URL/echo"])
def test_an_upper_case_http_proxy_is_not_read_for_http(forks, servers, tmp_path, line):
    """In CGI a request's `Proxy:` header becomes HTTP_PROXY (httpoxy, CVE-2016-5385), so
    only the lower-case http_proxy names a proxy for plain HTTP, as in curl (a fresh start
    shows it in test_upper_case_http_proxy_is_never_read_for_plain_http)."""
    env = environment(HTTP_PROXY=servers.other.url, REQUEST_METHOD="GET")
    done = run_line(forks, line, servers, str(tmp_path), env=env)
    assert (done.status, done.stdout) == (0, b"GET /echo\n")
    assert [target for method, target, headers, body in done.wire] == ["/echo"]


@pytest.mark.parametrize("line", ["-s $URL/echo", "GET $URL/echo"])
def test_the_lower_case_http_proxy_is_used(forks, servers, tmp_path, line):
    env = environment(http_proxy=servers.other.url)
    done = run_line(forks, line, servers, str(tmp_path), env=env)
    absolute = "http://127.0.0.1:$PORT/echo"  # the absolute form a proxy gets (RFC 9112 §3.2.2)
    assert (done.status, done.stdout) == (0, b"GET %s\n" % absolute.encode())
    assert [target for method, target, headers, body in done.wire] == [absolute]


def authorization(request):
    """The Authorization a compared request carried, or None."""
    return dict(request[2]).get("authorization")


@pytest.mark.parametrize("line", ["GET $URL/echo -u ada:pw",
                                  "GET http://ada:pw@127.0.0.1:$PORT/echo"])
def test_credentials_on_the_command_line_win_over_api_key(forks, servers, tmp_path, line):
    done = run_line(forks, line, servers, str(tmp_path), env=environment(API_KEY="secret"))
    assert done.status == 0
    assert [authorization(request) for request in done.wire] == [
        "Basic " + base64.b64encode(b"ada:pw").decode()]


def test_api_key_goes_to_the_host_given_and_not_after_a_redirect_to_another(
        forks, servers, tmp_path):
    line = "GET '$URL/redirect/302?to=$OTHER/echo'"
    done = run_line(forks, line, servers, str(tmp_path), env=environment(API_KEY="secret"))
    assert (done.status, done.stdout) == (0, b"GET /echo\n")
    assert [(dict(request[2])["host"], authorization(request)) for request in done.wire] == [
        ("127.0.0.1:$PORT", "Bearer secret"), ("127.0.0.2:$OTHER_PORT", None)]


@pytest.mark.parametrize("line", ["-s $URL/echo", "-sL '$URL/redirect/302?to=$OTHER/echo'"])
def test_the_curl_form_does_not_read_api_key(forks, servers, tmp_path, line):
    """curl does not know API_KEY, and a line written for curl may name any host."""
    done = run_line(forks, line, servers, str(tmp_path), env=environment(API_KEY="secret"))
    assert (done.status, done.stdout) == (0, b"GET /echo\n")
    assert [authorization(request) for request in done.wire] == [None] * len(done.wire)


# -- memory: large transfers stream through ----------------------------------------------------

BIG = 256  # MiB downloaded: four times the limit, which a client holding the body would pass
UPLOAD = 200  # MiB uploaded
LIMIT = 64 * 1024  # KiB of resident memory, ru_maxrss's unit on Linux
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux's; in fcntl from Python 3.10


def measured(line, forks, servers, folder):
    """Run the client's line; its exit status, the first 4,096 bytes and the count of bytes
    it wrote to stdout (read as they come into one buffer, never kept: a read fills it), and
    its peak resident memory in KiB."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "stderr"), "w+b") as stderr:
        run = forks.start(arguments(line, servers), folder, environment(), stderr=stderr)
        os.close(run.stdin)
        try:  # a pipe of 1 MiB, not 64 KiB: 16 times fewer waits on each side of it
            fcntl.fcntl(run.outputs[0], F_SETPIPE_SZ, MIB)
        except OSError:
            pass  # not Linux: the pipe as it is
        first, count = b"", 0
        buffer = bytearray(MIB)  # a GiB read into one buffer: no allocation per read
        try:
            with open(run.outputs[0], "rb", buffering=0) as stdout:
                for size in iter(lambda: stdout.readinto(buffer), 0):
                    # a read may end with a head written on its own (-i)
                    first = first + bytes(buffer[:min(size, 4096 - len(first))])
                    count += size
        finally:
            run.wait()  # the run's status, read even after a failure, is not the next run's
        return run.returncode, first, count, run.peak


@pytest.fixture(scope="module")
def memory_limit(forks, servers, tmp_path_factory):
    """64 MB on CPython; elsewhere (PyPy starts larger) 64 MB more than a 1 MiB transfer."""
    if sys.implementation.name == "cpython":
        return LIMIT
    folder = str(tmp_path_factory.mktemp("baseline"))
    return measured("-s -o - $URL/bulk/1", forks, servers, folder)[3] + LIMIT


@pytest.mark.parametrize("line, head", [
    ("-s -o - $URL/bulk/%d" % BIG, 0),
    ("-s -i $URL/bulk/%d" % BIG, len(b"HTTP/1.1 200 OK\r\nServer: recording-server\r\n"
                                      b"Date: Thu, 26 Nov 2026 10:00:00 GMT\r\n"
                                      b"Content-Type: application/octet-stream\r\n"
                                      b"Content-Length: %d\r\n\r\n" % (BIG * MIB))),
    ("-s --retry 2 $URL/bulk/%d" % BIG, 0)])
def test_a_large_download_streams_through_stdout(forks, servers, tmp_path, memory_limit, line,
                                                 head):
    """256 MiB through stdout, after a head (-i) or ready for a retry (--retry), never held
    whole."""
    status, first, count, peak = measured(line, forks, servers, str(tmp_path))
    assert (status, count) == (0, head + BIG * MIB)
    assert first[head:head + 256] == bytes(range(256))
    assert peak < memory_limit


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """UPLOAD MiB of zeros, sparse, so making it costs nothing; its CRC-32. (With the count,
    it catches any byte changed, lost or added. A SHA-256 of 200 MiB took 0.6 to 1 s on a
    Python 3.6 built without OpenSSL's hashlib, three times a run; a CRC-32 takes 0.03 s.)"""
    path = tmp_path_factory.mktemp("upload") / "big.bin"
    with open(str(path), "wb") as file:
        file.truncate(UPLOAD * MIB)
    crc, zeros = 0, bytes(MIB)
    for _ in range(UPLOAD):
        crc = zlib.crc32(zeros, crc)
    return str(path), crc


@pytest.mark.parametrize("line", ["-s --data-binary @%s $URL/sink", "-s -T %s $URL/sink/"])
def test_a_large_upload_streams_from_its_file(forks, servers, tmp_path, memory_limit, big_file,
                                              line):
    path, crc = big_file
    status, first, count, peak = measured(line % path, forks, servers, str(tmp_path))
    assert (status, first) == (0, b"%d %08x\n" % (UPLOAD * MIB, crc))
    assert peak < memory_limit


# -- c-cli-b: curl's options for config files, headers, names, limits and traces ---------------

INPUTS.update({
    "opts.cfg": b"# curl's config syntax: an option a line, its dashes optional\n"
                b"silent\n"
                b"header = \"X-Test: from the file\"\n"
                b"--user-agent \"probe/2.0 (\\\"quoted\\\")\"\n"
                b"  output: out.txt\n"
                b"-d a=1\n"
                b"write-out = \"%{http_code}\\n\"\n",
})


def answer_attachment(self, route, query):
    """A body whose Content-Disposition names a file (RFC 6266), for -J."""
    self.reply(200, b"attached\n", [("Content-Type", "text/csv"),
                                   ("Content-Disposition", query.get("cd", ""))])


RecordingHandler.answer_attachment = answer_attachment  # a route of this part's own

# The table goes on (its test reads the list when pytest collects it, after this module ran).
CURL_LINES.extend(lines(
    # -K: curl's config files, and stdin
    "-K opts.cfg $URL/echo",
    piped("-K - $URL/echo", b'-s\nheader "X-From: stdin"\nreferer = "https://example.com/"\n'),
    "-s -K missing.cfg $URL/echo",
    # -D: the heads, as -i writes them, to a file or stdout
    "-s -D heads.txt -o out.txt $URL/echo",
    "-s -D - -o out.txt $URL/echo",
    "-sL -D heads.txt '$URL/redirect/302?to=/echo'",
    "-s -D heads.txt $REFUSED/",
    # where files go, and their names
    "-s --create-dirs -o new/deeper/out.txt $URL/echo",
    "-s --output-dir saved -O $URL/files/report.csv",
    "-s --create-dirs --output-dir saved -O $URL/files/report.csv",
    "-s -OJ '$URL/attachment/x.csv?cd=attachment;%20filename=%22export.csv%22'",
    "-s -OJ '$URL/attachment/x.csv?cd=attachment;%20filename=existing.json'",
    "-s -OJ '$URL/attachment/x.csv?cd=inline'",
    "-s -J -o named.csv '$URL/attachment/x.csv?cd=attachment;%20filename=other.csv'",
    "-s -OJ -i '$URL/attachment/x.csv?cd=attachment;%20filename=export.csv'",
    # credentials, referers, protocols
    "-s --oauth2-bearer t0k.3n $URL/echo",
    "-s --oauth2-bearer t0k.3n -H 'Authorization: Basic eA==' $URL/echo",
    "-sL -e ';auto' '$URL/redirect/302?to=/echo'",
    "-sL -e 'https://example.com/from;auto' '$URL/redirect/302?to=/echo'",
    "-s --url $URL/echo",
    "-s --http1.1 -4 $URL/echo",
    "-s -6 $URL/echo",
    "--proto '=https' --tlsv1.2 -sSf $URL/echo",
    "-s --proto =http,https --tlsv1.3 $URL/echo",
    "-s --proto -all,+http $URL/echo",
    "-sL --proto-redir =https '$URL/redirect/302?to=/echo'",
    "-sL --proto-redir =https -w '%{http_code}' -D - '$URL/redirect/302?to=/echo'",
    # limits, progress and where errors go
    "-s --max-filesize 10 -o out.txt $URL/files/report.csv",
    "-s --max-filesize 1k $URL/files/report.csv",
    "-s --max-filesize 2q $URL/files/report.csv",
    "-s --limit-rate 100k $URL/files/report.csv",
    "-# -o out.txt $URL/files/report.csv",
    "-s --stderr errors.txt $URL/echo",
    "-s --resolve bad $URL/echo",
    # more of the same, together
    "-sI -D heads.txt $URL/echo",
    "-si -D heads.txt $URL/custom",
    "-s -e ';auto' '$URL/redirect/302?to=/echo'",
    "-s --proto =https http://no-such-host.invalid/",
    "-s --output-dir saved -o out.txt $URL/echo",
    "-s --create-dirs --output-dir a/b -o c/out.txt $URL/echo",
    "-s --create-dirs -o existing.json/x $URL/echo",
    "-s -D heads.txt -o one.txt -o two.txt $URL/echo $URL/custom",
    "-s --limit-rate 1M -T doc.txt $URL/upload/",
    "-s --limit-rate 1M --data-binary @body.bin $URL/echo",
    piped("-K - -O", b'url = "http://127.0.0.1:1/"\n'),
))


def test_help_gives_each_option_a_line_saying_what_it_does():
    result = run_cli("--help")
    assert result.returncode == 0
    options = [line for line in result.stdout.decode().splitlines()
               if line.lstrip().startswith("-")]
    assert len(options) == len(rest_client.CURL_OPTIONS)
    for line in options:  # " -o, --output <file>     Write the body to this file"
        assert re.match(r" (-\S, |    )--[a-z0-9.-]+( <[^>]+>)? +[A-Z].{10,}$", line), line
    assert " -D, --dump-header <file>  " in result.stdout.decode()


def test_version_says_what_the_client_is_and_sends_nothing(scripted):
    before = len(scripted.received)
    for option in ("-V", "--version"):
        result = run_cli(option, scripted.url + "/echo")
        lines = result.stdout.decode().splitlines()
        assert result.returncode == 0 and result.stderr == b""
        assert lines[0].startswith("rest_client.py (curl 7.88's command lines) Python/")
        assert lines[1] == "Protocols: http https"
        assert lines[2].startswith("Features: ") and "IPv6" in lines[2]
    assert len(scripted.received) == before


def test_resolve_connects_to_the_address_given_for_the_host_named(servers):
    port = servers.here.server_address[1]
    reset(servers)
    result = run_cli("-s", "--resolve", "example.test:%d:127.0.0.1" % port,
                     "http://example.test:%d/echo" % port)
    assert (result.returncode, result.stdout) == (0, b"GET /echo\n")
    assert ("Host", "example.test:%d" % port) in servers.received[0]["headers"]


@pytest.mark.parametrize("name", ["all_proxy", "ALL_PROXY"])
def test_all_proxy_is_used_when_no_proxy_of_the_scheme_is_named(servers, monkeypatch, name):
    clear_proxy_variables(monkeypatch)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    monkeypatch.setenv(name, servers.other.url)
    result = run_cli("-s", servers.here.url + "/echo")
    assert (result.returncode, result.stdout) == (0, b"GET %s/echo\n" % servers.here.url.encode())


def test_trace_ascii_writes_the_exchange_in_curls_blocks(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("-s", "--trace-ascii", "trace.txt", servers.here.url + "/echo")
    assert (result.returncode, result.stdout) == (0, b"GET /echo\n")
    trace = (tmp_path / "trace.txt").read_text().splitlines()
    sent = trace.index(next(line for line in trace if line.startswith("=> Send header, ")))
    assert trace[sent + 1] == "0000: GET /echo HTTP/1.1"
    assert trace[sent + 2].startswith("0014: Host: 127.0.0.1:")
    assert trace[-6:] == ["<= Recv header, 20 bytes (0x14)", "0000: Content-Length: 10",
                          "<= Recv header, 2 bytes (0x2)", "0000: ",
                          "<= Recv data, 10 bytes (0xa)", "0000: GET /echo."]
    assert trace[0].startswith("== Info: ")


def test_progress_bar_draws_hashes_and_the_share_on_stderr(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("-#", "-o", "out.txt", servers.here.url + "/files/report.csv")
    assert result.returncode == 0 and result.stderr.endswith(b"#" * 72 + b" 100.0%\n")


def test_stderr_sends_the_error_lines_to_a_file(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("-sS", "--stderr", "errors.txt", servers.refused + "/")
    assert (result.returncode, result.stderr) == (7, b"")
    assert b"(7) could not connect to 127.0.0.1 port" in (tmp_path / "errors.txt").read_bytes()


@pytest.mark.parametrize("text, read", [
    ("url = \"http://x/\"", ("--url", "http://x/")),
    ("  --output out.txt  # a comment after", ("--output", "out.txt")),
    ("-o:x", ("-o:x", None)),
    ("silent", ("--silent", None)),
    ("header: \"A: \\\"b\\\"\\tc\\\\d\\q\"", ("--header", "A: \"b\"\tc\\dq")),
    ("# a comment", None), ("", None), ("   ", None),
])
def test_a_config_line_is_read_as_curl_reads_it(text, read):
    assert rest_client.config_line(text) == read


def test_remote_header_name_takes_a_plain_file_name_only(servers, tmp_path, monkeypatch):
    """A name with a path in it, or one starting with a dot, could put the file anywhere:
    the URL's name is used instead."""
    for number, name in enumerate(("../up.csv", "/etc/cron.d/x", "..", ".bashrc", "a\\b.csv")):
        (tmp_path / str(number)).mkdir()
        monkeypatch.chdir(tmp_path / str(number))
        url = servers.here.url + "/attachment/x.csv?cd=attachment;%20filename=%22" + name
        assert run_cli("-s", "-OJ", url + "%22").returncode == 0, name
        assert os.listdir(".") == ["x.csv"] and open("x.csv", "rb").read() == b"attached\n"
    assert not (tmp_path / "up.csv").exists()


def test_max_filesize_stops_a_body_of_unknown_length_at_the_limit(servers, tmp_path,
                                                                  monkeypatch):
    """curl 7.88 lets a body without Content-Length through whatever its size; here the
    limit holds as the bytes come (as curl does from 8.4)."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("-sS", "--max-filesize", "5", "-o", "out.txt", servers.here.url + "/chunked")
    assert result.returncode == 63 and result.stderr.startswith(b"rest_client: (63) ")
    assert result.stderr.count(b"\n") == 1 and b"5 bytes" in result.stderr


@pytest.mark.parametrize("size, elapsed, wait", [(2048, 0.5, 1.5), (1024, 2.0, 0.0),
                                                 (100, 0.0, 100 / 1024)])
def test_limit_rate_waits_until_the_average_is_the_rate(size, elapsed, wait):
    assert rest_client.rate_wait(size, elapsed, 1024) == pytest.approx(wait)


@pytest.mark.parametrize("text, number", [("100", 100), ("1k", 1024), ("2M", 2 << 20),
                                          ("1G", 1 << 30), ("3m", 3 << 20)])
def test_sizes_take_curls_suffixes(text, number):
    assert rest_client.curl_size(text, "max-filesize") == number


def test_the_installer_line_fetches_over_https_and_never_follows_to_http(tls, scripted, pki):
    """`curl --proto '=https' --tlsv1.2 -sSf URL | sh`: https alone, redirects included."""
    line = ["--proto", "=https", "--tlsv1.2", "-sSfL", "--cacert", pki.ca_pem]
    fetched = run_cli(*line + [tls.url + "/echo"])
    assert (fetched.returncode, json.loads(fetched.stdout.decode())) == (0, ECHO_GET)
    before = len(scripted.received)
    refused = run_cli(*line + [tls.url + "/redirect/302?to=" + scripted.url + "/echo"])
    assert (refused.returncode, refused.stdout) == (1, b"")
    assert refused.stderr == (b'rest_client: (1) Protocol "http" not supported or disabled '
                              b'in libcurl\n')
    assert run_cli(*line + [scripted.url + "/echo"]).returncode == 1
    assert len(scripted.received) == before


def test_tlsv1_3_refuses_a_server_that_speaks_tls_1_2_at_most(pki):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_pem, pki.server_key)
    if hasattr(ssl, "TLSVersion"):
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    else:  # Python 3.6
        context.options |= getattr(ssl, "OP_NO_TLSv1_3", 0)
    server = ScriptedServer(("127.0.0.1", 0), ScriptedHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    serve_scripted(server, "https")
    try:
        line = ["-s", "--cacert", pki.ca_pem, server.url + "/echo"]
        assert run_cli("--tlsv1.2", *line).returncode == 0
        assert run_cli("--tlsv1.3", *line).returncode == 35
    finally:
        server.shutdown()
        server.server_close()


def test_a_config_file_that_reads_itself_is_refused(tmp_path):
    config = tmp_path / "loop.cfg"
    config.write_text("silent\nconfig = %s\n" % config)
    result = run_cli("-K", str(config), "http://127.0.0.1:1/")
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr.startswith(b"rest_client: %s:2: -K %s: the file reads itself\n"
                                    % (str(config).encode(), str(config).encode()))


def test_trace_ascii_holds_every_transfer_of_the_line(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = servers.here.url
    result = run_cli("-s", "--trace-ascii", "trace.txt", url + "/echo", url + "/custom")
    assert (result.returncode, result.stdout) == (0, b"GET /echo\nfine\n")
    sent = [line for line in (tmp_path / "trace.txt").read_text().splitlines()
            if line.startswith("0000: GET ") and line.endswith(" HTTP/1.1")]
    assert sent == ["0000: GET /echo HTTP/1.1", "0000: GET /custom HTTP/1.1"]


def test_limit_rate_paces_a_file_upload_too(tmp_path, monkeypatch):
    """curl's --limit-rate holds for uploads as for downloads: each read of the file waits
    until those before it had their time (time.sleep is watched, not waited for)."""
    path = tmp_path / "up.bin"
    path.write_bytes(bytes(3000))
    waits = []
    monkeypatch.setattr(rest_client.time, "sleep", waits.append)
    body = rest_client.paced(open(str(path), "rb"), {"limit_rate": "1k"})
    assert rest_client.file_size(body) == 3000  # still sent with its Content-Length
    assert [len(body.read(1024)) for _ in range(4)] == [1024, 1024, 952, 0]
    assert [round(wait) for wait in waits] == [0, 1, 2, 3]
    body.seek(0)  # sent again, after a 307: its pace starts again
    assert len(body.read(1024)) == 1024 and round(waits[-1]) == 0
    body.close()


# -- c-safe: a client that trusts no server with its memory or its time --------------------

class LyingServer:
    """A server on 127.0.0.1 that reads each request's head, then lets lie(connection,
    stopped) answer: dripped, endless or a bomb. Every lie ends when stopped is set, so a
    test that gave up leaves no thread writing."""

    def __init__(self, lie):
        self.lie, self.stopped = lie, threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.authority = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.url = "http://" + self.authority
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def serve(self, connection):
        with connection, connection.makefile("rb") as stream:
            try:
                while CountingServer.read_request_head(stream) is not None:
                    self.lie(connection, self.stopped)
            except OSError:  # the client gave up and closed the connection
                pass

    def close(self):
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def lying():
    """Make LyingServers, stopped and with the client's kept connections closed after."""
    servers = []

    def make(lie):
        servers.append(LyingServer(lie))
        return servers[-1]

    yield make
    rest_client.close()
    for server in servers:
        server.close()


def dripped(data, every=0.3, head=b""):
    """A lie that sends the head at once, then data one byte at a time, every so often."""
    def lie(connection, stopped):
        connection.sendall(head)
        for byte in data:
            if stopped.wait(every):
                return
            connection.sendall(bytes([byte]))
    return lie


def endless_continues(connection, stopped):
    """A lie that sends 100 Continue, again and again (for 10 s at most)."""
    for _ in range(200):
        connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if stopped.wait(0.05):
            return


def endless_chunks(connection, stopped):
    """A lie that sends a chunked body that never ends."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    while not stopped.is_set():
        connection.sendall(chunk)


def gzip_of_zeros(mebibytes):
    """A gzip stream of that many MiB of zeros, made in milliseconds: after a full flush
    deflate starts afresh, so each MiB compresses to the same bytes, made once."""
    zeros, crc = bytes(MIB), 0
    engine = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    mebibyte = engine.compress(zeros) + engine.flush(zlib.Z_FULL_FLUSH)
    for _ in range(mebibytes):
        crc = zlib.crc32(zeros, crc)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + mebibyte * mebibytes + b"\x03\x00"
            + crc.to_bytes(4, "little") + (mebibytes * MIB).to_bytes(4, "little"))


BOMB_MIB = 32


@pytest.fixture(scope="module")
def bomb():
    """A lie that sends a small gzip reply (about 33 KB) that decodes to 32 MiB."""
    data = gzip_of_zeros(BOMB_MIB)
    head = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n" % len(data))
    def lie(connection, stopped):
        connection.sendall(head + data)

    lie.data = data
    return lie


def timed_send(request, **options):
    """send()'s result and the seconds it took."""
    started = time.monotonic()
    result = send(request, **options)
    return result, time.monotonic() - started


@pytest.mark.parametrize("lie", [
    dripped(b"HTTP/1.1 200 OK\r\nX-Drip: " + b"x" * 40 + b"\r\n\r\n", every=0.1),
    endless_continues], ids=["dripped head", "endless 100 Continue"])
def test_a_head_that_never_ends_is_a_timeout_within_the_timeout(lying, lie):
    server = lying(lie)  # a byte or a 1xx comes well within each 0.25 s: only a deadline ends it
    (resp, err), elapsed = timed_send(Request("GET", server.url + "/"), timeout=0.25)
    assert resp is None and isinstance(err, rest_client.Timeout)
    assert str(err) == "no reply from %s within the time allowed" % server.authority
    assert elapsed < 1.5


# A body whose first chunk's size line never ends: its extension (RFC 9112 §7.1.1) dripped
DRIPPED_BODY = dripped(b"5;" + b"x" * 40, every=0.05,
                       head=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")


def test_a_dripped_body_is_a_timeout_that_says_the_reply_was_cut_short(lying):
    server = lying(DRIPPED_BODY)
    (resp, err), elapsed = timed_send(Request("GET", server.url + "/"), timeout=0.25)
    assert resp is None and isinstance(err, rest_client.Timeout)
    assert str(err) == ("the reply from %s was cut short: the rest of its body did not come "
                        "within the time allowed" % server.authority)
    assert elapsed < 1.5


def test_a_gzip_bomb_kept_in_memory_stops_at_max_body(lying, bomb):
    server = lying(bomb)
    (resp, err), peak = with_peak_memory(
        lambda: send(Request("GET", server.url + "/bomb"), max_body=8 * MIB))
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)
    assert isinstance(err, rest_client.TransferError)
    assert str(err) == ("the reply from %s/bomb is larger than max_body allows (8388608 "
                        "bytes)" % server.url)
    assert peak < 8 * MIB + 3 * MIB


def test_an_endless_chunked_body_stops_at_max_body(lying):
    server = lying(endless_chunks)
    client = rest_client.Client(max_body=4 * MIB)
    (resp, err), peak = with_peak_memory(lambda: client.send(Request("GET", server.url + "/")))
    client.close()
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)
    assert str(err) == ("the reply from %s/ is larger than max_body allows (4194304 bytes)"
                        % server.url)
    assert peak < 4 * MIB + 3 * MIB


def announced(length):
    """A lie that announces a body of that length, and sends none of it."""
    def lie(connection, stopped):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % length)
        stopped.wait(10)
    return lie


def test_max_body_is_64_mib_by_default(lying):
    server = lying(announced(64 * MIB + 1))
    resp, err = send(Request("GET", server.url + "/"))
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)
    assert str(err) == ("the reply from %s/ is larger than max_body allows (67108864 bytes)"
                        % server.url)


def test_max_body_counts_the_bytes_after_decoding(counting):
    body = bytes(range(256)) * 4096  # 1 MiB
    server = counting(lambda number, request: answer(gzip.compress(body), headers=[
        "Content-Encoding: gzip"]))
    resp, err = send(Request("GET", server.url + "/"), max_body=MIB)
    assert err is None and resp.content == body
    resp, err = send(Request("GET", server.url + "/"), max_body=MIB - 1)
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)


def test_a_length_above_max_body_is_refused_before_its_body_is_read(lying):
    server = lying(announced(1 << 30))
    (resp, err), elapsed = timed_send(Request("GET", server.url + "/"), max_body=MIB)
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)
    assert elapsed < 0.5


def test_a_gzip_bomb_saved_to_a_file_streams_under_64_mb(lying, bomb, tmp_path):
    server = lying(bomb)
    target = str(tmp_path / "zeros.bin")
    (resp, err), peak = with_peak_memory(
        lambda: send(Request("GET", server.url + "/"), save_to=target))
    assert err is None and (resp.status_code, resp.saved_size) == (200, BOMB_MIB * MIB)
    assert os.path.getsize(target) == BOMB_MIB * MIB  # the gzip's own check of its length
    assert peak < 8 * MIB


def test_max_body_given_bounds_a_body_saved_to_a_file_too(lying, tmp_path):
    server = lying(endless_chunks)
    target = tmp_path / "endless.bin"
    resp, err = send(Request("GET", server.url + "/"), save_to=str(target), max_body=2 * MIB)
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)
    assert os.listdir(str(tmp_path)) == []  # no half-written file


@pytest.mark.parametrize("lengths", ["Content-Length: 5\r\nContent-Length: 6",
                                     "Content-Length: 5, 6"])
def test_conflicting_content_lengths_are_an_error_value(counting, lengths):
    server = counting(lambda number, request: (
        b"HTTP/1.1 200 OK\r\n%s\r\n\r\nhello!" % lengths.encode(), CLOSE))
    resp, err = send(Request("GET", server.url + "/"))
    assert resp is None and isinstance(err, rest_client.MalformedReply)
    assert str(err) == ("the reply from %s has conflicting Content-Length values (5 and 6): "
                        "where its body ends cannot be known" % server.url[7:])


@pytest.mark.parametrize("lengths", ["Content-Length: 5\r\nContent-Length: 5",
                                     "Content-Length: 5, 5"])
def test_repeated_content_lengths_that_agree_are_one_length(counting, lengths):
    server = counting(lambda number, request: b"HTTP/1.1 200 OK\r\n%s\r\n\r\nhello" % (
        lengths.encode()))
    resp, err = send(Request("GET", server.url + "/"), timeout=2)  # not read until it closes
    assert err is None and resp.body == "hello"


@pytest.mark.parametrize("body", [{b"a", b"b"}, frozenset([b"a"])])
def test_a_set_body_raises_type_error_before_anything_is_sent(scripted, body):
    count = len(scripted.received)
    with pytest.raises(TypeError) as raised:
        send(Request("POST", scripted.url + "/echo", body=body))
    assert str(raised.value) == ("body must be bytes, str, a dict, a list, a form, a file, an "
                                 "iterable of bytes or None, not %s" % type(body).__name__)
    assert len(scripted.received) == count


def test_a_reply_too_large_is_not_sent_again(lying):
    calls = []
    server = lying(lambda connection, stopped: (calls.append(1), endless_chunks(
        connection, stopped)))
    resp, err = send(Request("GET", server.url + "/"), max_body=MIB, retries=2)
    assert isinstance(err, rest_client.ReplyTooLarge) and len(calls) == 1


def test_cli_an_error_after_the_head_says_the_reply_is_incomplete(lying):
    server = lying(DRIPPED_BODY)
    result = run_cli("GET", server.url + "/", "--timeout", "0.2")
    assert (result.returncode, result.stdout) == (3, b"")
    assert result.stderr == ("rest_client: incomplete reply: the reply from %s was cut short: "
                             "the rest of its body did not come within the time allowed\n"
                             % server.authority).encode()


def test_codings_on_codings_decode_however_the_bytes_arrive(lying):
    body = gzip.compress(deflated(b"hello", -zlib.MAX_WBITS))  # bare deflate, then gzip
    server = lying(dripped(body, every=0.002, head=b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                           b"Content-Encoding: deflate, gzip\r\n\r\n" % len(body)))
    resp, err = send(Request("GET", server.url + "/"), timeout=5)
    assert err is None and resp.body == "hello"


def test_a_bomb_in_two_codings_stops_at_max_body_too(lying, bomb):
    twice = gzip.compress(bomb.data)
    server = lying(lambda connection, stopped: connection.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Encoding: gzip, gzip\r\n\r\n"
        % len(twice) + twice))
    (resp, err), peak = with_peak_memory(
        lambda: send(Request("GET", server.url + "/"), max_body=4 * MIB))
    assert resp is None and isinstance(err, rest_client.ReplyTooLarge)
    assert peak < 4 * MIB + 3 * MIB


# -- c-cli-a: curl's globs, -w's variables, TLS after a redirect, retries, resume, bytes ------

def echoed(*paths):
    """What the recording server's echo answers to GETs of paths, one after the other."""
    return b"".join(b"GET %s\n" % path.encode() for path in paths)


def test_cli_a_glob_fetches_each_url_it_stands_for_in_curls_order(servers):
    result = run_cli("-s", servers.here.url + "/echo/{a,b}/[1-2]")
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == echoed("/echo/a/1", "/echo/a/2", "/echo/b/1", "/echo/b/2")


@pytest.mark.parametrize("glob, paths", [
    ("[01-10:3]", ["01", "04", "07", "10"]),  # padded as the first number is written
    ("[a-e:2]", ["a", "c", "e"]),
    ("[8-10]", ["8", "9", "10"]),
    ("{x,,y}", ["x", "", "y"]),  # an empty value is one too
    ("\\[1-2\\]", ["[1-2]"]),  # escaped: sent as written
    ("[]", ["[]"]),  # empty brackets are no glob
])
def test_cli_glob_ranges_steps_padding_and_sets_as_curl_reads_them(servers, glob, paths):
    result = run_cli("-s", servers.here.url + "/echo/" + glob)
    assert result.stdout == echoed(*["/echo/" + path for path in paths])


def test_cli_output_names_take_what_each_glob_took(servers, tmp_path):
    result = run_cli("-s", "-o", str(tmp_path / "copy_#2_#1_#3.txt"),
                     servers.here.url + "/echo/{a,b}/[1-2]")
    assert result.returncode == 0
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == {
        "copy_%s_%s_#3.txt" % (number, letter): b"GET /echo/%s/%s\n" % (
            letter.encode(), number.encode()) for letter in "ab" for number in "12"}


def test_cli_remote_names_for_each_globbed_url_and_each_o(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("-s", "-O", servers.here.url + "/echo/f[1-2].txt", "-O",
                     servers.here.url + "/echo/g.txt", servers.here.url + "/echo/last")
    assert (result.returncode, result.stdout) == (0, b"GET /echo/last\n")
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == {
        name: b"GET /echo/%s\n" % name.encode() for name in ("f1.txt", "f2.txt", "g.txt")}


@pytest.mark.parametrize("path, message", [
    ("[1-3", "bad range in URL position %d:\n%s\n%*s^"),
    ("[3-1]", "bad range in URL position %d:\n%s\n%*s^"),
    ("[1-3:0]", "bad range in URL position %d:\n%s\n%*s^"),
    ("[a-3]", "bad range in URL position %d:\n%s\n%*s^"),
    ("{a", "unmatched brace in URL position %d:\n%s\n%*s^"),
    ("{a,{b}}", "nested brace in URL position %d:\n%s\n%*s^"),
    ("{}", "empty string within braces in URL position %d:\n%s\n%*s^"),
    ("a]", "unmatched close brace/bracket in URL position %d:\n%s\n%*s^"),
    ("[-]", "bad range specification in URL position %d:\n%s\n%*s^"),
])
def test_cli_a_glob_curl_cannot_read_is_its_error_3_and_nothing_is_sent(servers, path,
                                                                        message):
    reset(servers)
    url = servers.here.url + "/echo/" + path
    result = run_cli("-S", "-s", url)
    assert (result.returncode, result.stdout, servers.received) == (3, b"", [])
    column = {"[1-3": 4, "[3-1]": 6, "[1-3:0]": 8, "[a-3]": 6, "{a": 1, "{a,{b}}": 4,
              "{}": 2, "a]": 2, "[-]": 2}[path] + len(servers.here.url + "/echo/")
    assert result.stderr == ("rest_client: (3) " + message % (column, url, column - 1, " ")
                             + "\n").encode()


def test_cli_globoff_sends_brackets_as_written(servers):
    result = run_cli("-s", "-g", servers.here.url + "/echo/[1-2]?ids[]=1")
    assert (result.returncode, result.stdout) == (0, b"GET /echo/[1-2]?ids[]=1\n")


# The table above, continued: more of curl's lines, each run by curl and by the client (the
# table's test reads CURL_LINES when the tests are collected, after this module has run).
CURL_LINES.extend(lines(
    # globs: each URL a glob stands for, in curl's order; several URLs and -O's on a line
    "-s '$URL/echo/[1-3]'",
    "-s '$URL/echo/file[01-10:3].txt'",
    "-s '$URL/echo/{a,b}/[a-e:2]'",
    "-s -o 'copy_#1_#2.txt' '$URL/echo/{a,b}/[1-2]'",
    "-s -o 'same.txt' '$URL/echo/[1-3]' $URL/echo/last",
    "-s -O '$URL/echo/file[1-3].txt' -O $URL/echo/one.txt",
    "-s '$URL/echo/[1-2]' $REFUSED/ $URL/echo/last",
    "-s '$URL/echo/\\[1-2\\]/{x,,y}'",
    "-s -g '$URL/echo/[1-2]?ids[]=1'",
    "-s '$URL/echo?ids[]=1&ids[]=2'",
    "-s -G -d 'ids[]=1' $URL/echo",
    # a glob curl cannot read: its error 3, and nothing sent
    "-s '$URL/echo/[1-3'",
    "-s '$URL/echo/{a,{b}}'",
    "-s '$URL/echo/[3-1]'",
    "-s '$URL/echo/a]'",
    # resume: a file already whole is left as it is; retries as curl's
    "-sS -C - -o whole.bin $URL/files/data.bin",
    "-fsS -C - -o whole.bin -w '%{http_code}' $URL/files/data.bin",
    "-fsS --retry 1 --retry-all-errors -w '%{http_code}' $URL/status/404",
    # bytes as curl's
    "-s --data-urlencode 'a=1+2 ~*/-._é' --data-urlencode 'ids[]=1' $URL/echo",
    "-si $URL/custom -H 'Accept: text/plain'",
    # -w: every variable of curl 7.88 the client can know
    "-s -o out.txt -e http://from/ -w '%{remote_ip}:%{remote_port} %{num_connects} "
    "%{num_headers} %{size_header} %{filename_effective} %{scheme} %{http_version} %{method} "
    "%{ssl_verify_result} %{urlnum} %{referer} %{http_connect}|%{content_type}|%{errormsg}|"
    "%{exitcode}|%{ftp_entry_path}|%{proxy_ssl_verify_result}' $URL/echo",
    "-s -o out.txt -w '%{time_namelookup} %{time_connect} %{time_appconnect} "
    "%{time_pretransfer} %{time_starttransfer} %{time_redirect} %{time_total}' $URL/echo",
    "-s -o out.txt -w '%header{content-type}|%header{SET-COOKIE}|%header{x-none}|"
    "%{header_json}' $URL/cookies",
    "-sL -o out.txt -w '%{num_redirects} %{size_header} %{url_effective} %{urlnum}\\n' "
    "'$URL/redirect/302' $URL/echo",
    "-s -d 'a=1&b=2' -o out.txt -w '%{size_upload} %{method}' $URL/echo",
    "-s -o out.txt -w '[%{no_such}][%{HTTP_CODE}][%{][%header{x][\\q%q\\\\][%' $URL/echo",
    "-s -o out.txt -w '%{stderr}to stderr %{stdout}to stdout%{onerror} not shown' $URL/echo",
    "-s -w '%{onerror}[%{exitcode}] %{http_code} %{scheme}|%{header_json}|' $REFUSED/",
    "-s -o 'w_#1.txt' -w '%{filename_effective} %{url}\\n' '$URL/echo/{x,y}'",
    # -T: the n-th file goes with the n-th URL, and a glob uploads each file
    "-s -T doc.txt $URL/upload/ $URL/echo",
    "-s -T '{doc,data}.txt' $URL/upload/ -T body.json '$URL/upload/[1-2]'",
    # -H @FILE: a header a line
    "-s -H @headers.txt -H 'X-Last: 3' $URL/echo",
    "-s -H @missing.txt -H 'X-Last: 3' $URL/echo",
    "-sL -d a=1 -o out.txt -w '%{method} %{num_redirects}' $URL/redirect/303",
    "-s -o out.txt -w '%{url} %{url_effective}' 127.0.0.1:$PORT/echo",
    "-sI -o out.txt -w '%{size_download} %{size_header} %{num_headers}' $URL/echo",
    "-s -x $OTHER -o out.txt -w '%{remote_ip}:%{remote_port} %{http_connect} "
    "%{num_connects}' $URL/echo",
    "-sf -o out.txt -w '%{http_code} %{exitcode} %{errormsg}' $URL/status/404",
    "-sL --max-redirs 1 -o out.txt -w '%{http_code} %{num_redirects} %{redirect_url} "
    "%{exitcode} %{url_effective}' $URL/loop",
    "-s -o out.txt -w '[%{remote_ip}][%{local_ip}][%{scheme}][%{num_connects}]"
    "[%{size_header}][%{http_version}][%{content_type}]' $REFUSED/",
    "-s -o 'fmt_#1.txt' -w @fmt.txt '$URL/files/{report.csv,data.bin}'",
    "-s -o out.txt -w @missing.txt $URL/echo",
    piped("-s -o 'p_#1.txt' -w @- '$URL/echo/{a,b}'", b"%{http_code} %{url}\\n"),
))

INPUTS["headers.txt"] = b"X-One: 1\r\nX-Two:  two\n\nAccept: text/plain\nUser-Agent:\n"
INPUTS["whole.bin"] = DATA_BIN  # for -C -: all of data.bin is there already


@pytest.mark.parametrize("trust", [["--cacert", "ca.pem"], ["--capath", "cas"], ["-k"]])
def test_cli_tls_settings_follow_a_redirect_from_http_to_https(scripted, tls, pki, trust):
    trust = [{"ca.pem": pki.ca_pem, "cas": pki.cas}.get(word, word) for word in trust]
    url = scripted.url + "/redirect/302?to=" + tls.url + "/echo"
    result = run_cli("-fsSL", *trust + [url])
    assert (result.returncode, result.stderr) == (0, b"")
    assert json.loads(result.stdout) == ECHO_GET


def test_cli_a_client_certificate_follows_a_redirect_to_https(scripted, mutual_tls, pki):
    url = scripted.url + "/redirect/302?to=" + mutual_tls.url + "/echo"
    result = run_cli("-fsSL", "--cacert", pki.ca_pem, "--cert", pki.client_pem, "--key",
                     pki.client_key, url)
    assert (result.returncode, json.loads(result.stdout)) == (0, ECHO_GET)


@pytest.fixture
def waits(monkeypatch):
    """The waits the command line asks for, none of them waited."""
    asked = []
    monkeypatch.setattr(rest_client.time, "sleep", asked.append)
    return asked


def test_cli_retry_all_errors_with_fail_retries_an_http_error_as_curl_does(scripted, waits):
    url = scripted.url + "/flaky/all-errors?fails=2&status=404"
    result = run_cli("-fS", "--retry", "5", "--retry-all-errors", url)
    assert (result.returncode, waits) == (0, [1, 2])
    assert result.stderr == b"".join(
        b"rest_client: (22) The requested URL returned error: 404\n"
        b"rest_client: warning: Problem (retrying all errors). Will retry in %d seconds. "
        b"%d retries left.\n" % (wait, left) for wait, left in ((1, 5), (2, 4)))


def test_cli_retry_warnings_count_as_curls_and_silent_hides_them(scripted, waits):
    url = scripted.url + "/flaky/counted?fails=1"
    result = run_cli("--retry", "2", "-o", "-", url)
    assert (result.returncode, waits) == (0, [1])
    assert result.stderr == (b"rest_client: warning: Problem : HTTP error. Will retry in 1 "
                             b"seconds. 2 retries left.\n")
    result = run_cli("-sS", "--retry", "2", scripted.url + "/flaky/hidden?fails=1")
    assert (result.returncode, result.stderr) == (0, b"")


@pytest.mark.parametrize("fail, status", [([], 0), (["-f"], 22)])
def test_cli_resume_of_a_file_already_whole_leaves_it_as_it_was(counting, tmp_path, fail,
                                                                 status):
    server = counting(lambda number, request: answer(
        b"<html>416</html>", "416 Range Not Satisfiable", ["Content-Range: bytes */4"]))
    target = tmp_path / "whole.txt"
    target.write_bytes(b"data")
    result = run_cli(*fail + ["-s", "-C", "-", "-o", str(target), "-w", "%{http_code}",
                              server.url + "/"])
    assert (result.returncode, result.stdout) == (status, b"416")
    assert target.read_bytes() == b"data"
    assert server.requests[-1]["headers"]["range"] == "bytes=4-"


SPACED = (b"HTTP/1.1 200 OK\r\nContent-Type:text/plain\r\nX-Spaced:   two  words  \r\n"
          b"Content-Length: 3\r\n\r\nok\n")  # a head as some servers write it


def test_cli_include_shows_each_header_line_as_received(counting):
    server = counting(lambda number, request: SPACED)
    result = run_cli("-si", server.url + "/")
    assert (result.returncode, result.stdout) == (0, SPACED)


def test_cli_verbose_shows_curls_lines_crlf_ended_with_the_blank_ones(counting):
    server = counting(lambda number, request: SPACED)
    result = run_cli("-sv", "-H", "Authorization: Bearer t0k", server.url + "/a")
    assert result.stdout == b"ok\n"
    assert result.stderr.split(b"\n", 1)[1] == (
        b"> GET /a HTTP/1.1\r\n> Host: 127.0.0.1:%d\r\n> User-Agent: rest_client.py\r\n"
        b"> Accept: */*\r\n> Authorization: Bearer ***\r\n> \r\n< HTTP/1.1 200 OK\r\n"
        b"< Content-Type:text/plain\r\n< X-Spaced:   two  words  \r\n< Content-Length: 3\r\n"
        b"< \r\n" % int(server.url.rpartition(":")[2]))


def test_cli_write_out_sizes_and_addresses_are_those_of_the_exchange(servers):
    result = run_cli("-sv", "-d", "a=1&b=2", "-w", "%{size_request} %{size_upload} "
                     "%{size_header} %{local_ip} %{local_port} %{remote_port}",
                     servers.here.url + "/echo")
    lines = result.stderr.split(b"\n")  # -v's head lines end in CR, then LF

    def head_size(mark):
        """The bytes of the head whose lines -v shows after mark ("> " or "< ")."""
        return sum(len(line) - len(mark) + 1 for line in lines if line.startswith(mark))

    request, upload, header, local, local_port, remote_port = result.stdout.split(b"\n")[
        -1].split()
    assert (int(request), int(upload), int(header)) == (head_size(b"> ") + 7, 7,
                                                        head_size(b"< "))
    assert (local, int(remote_port)) == (b"127.0.0.1", servers.here.server_address[1])
    assert 0 < int(local_port) != int(remote_port)


def test_cli_write_out_times_come_in_the_order_of_the_steps(servers):
    result = run_cli("-sL", "-o", "-", "-w", "\n%{time_namelookup} %{time_connect} "
                     "%{time_appconnect} %{time_pretransfer} %{time_redirect} "
                     "%{time_starttransfer} %{time_total}", servers.here.url + "/redirect/302")
    times = [float(value) for value in result.stdout.split(b"\n")[-1].split()]
    lookup, connect, appconnect, pretransfer, redirect, first_byte, total = times
    assert appconnect == 0.0 and 0 < lookup <= connect <= redirect <= pretransfer <= (
        first_byte) <= total < 5


def test_cli_write_out_json_has_curls_names_in_curls_order(curl, forks, servers, tmp_path):
    line = "-s -o out.txt -w '%{json}' $URL/echo"
    by_curl = json.loads(run_line([curl[0]], line, servers, str(tmp_path / "curl")).stdout)
    by_client = json.loads(run_line(forks, line, servers, str(tmp_path / "client")).stdout)
    assert list(by_client) == list(by_curl)
    varying = ("curl_version", "local_port", "size_request", "speed_download")

    def stable(values):
        """The values that are the same in two runs to the same server."""
        return {name: value for name, value in values.items()
                if not name.startswith("time_") and name not in varying}

    assert stable(by_client) == stable(by_curl)


def test_cli_an_unknown_write_out_variable_prints_curls_warning_and_nothing(servers):
    result = run_cli("-s", "-o", "-", "-w", "[%{nope}]", servers.here.url + "/echo")
    assert (result.returncode, result.stdout) == (0, b"GET /echo\n[]")
    assert result.stderr == b"rest_client: warning: unknown --write-out variable: 'nope'\n"


def test_cli_each_upload_goes_with_its_url_and_a_glob_uploads_each_file(servers, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_bytes(name.encode())
    reset(servers)
    result = run_cli("-s", "-T", "{a,b}.txt", servers.here.url + "/upload/", "-T", "a.txt",
                     servers.here.url + "/upload/one", servers.here.url + "/echo")
    assert result.returncode == 0
    assert [(request["method"], request["target"], request["body"]) for request in
            servers.received] == [("PUT", "/upload/a.txt", b"a.txt"),
                                  ("PUT", "/upload/b.txt", b"b.txt"),
                                  ("PUT", "/upload/one", b"a.txt"), ("GET", "/echo", b"")]


def test_cli_headers_from_standard_input_one_a_line(servers):
    reset(servers)
    result = run_cli("-s", "-H", "@-", servers.here.url + "/echo",
                     stdin=b"X-A: 1\r\n\r\nX-B: 2")
    assert result.returncode == 0
    assert [(name, value) for name, value in servers.received[-1]["headers"]
            if name.startswith("X-")] == [("X-A", "1"), ("X-B", "2")]


@pytest.mark.parametrize("field, named", [
    ("note=hi;headers=X-A: 1", b"-F ...;headers=: not done"),
    ("doc=@doc.txt;encoder=base64", b"-F ...;encoder=: not done"),
    ("docs=@doc.txt,data.txt", b"-F docs=@doc.txt,data.txt: several files in one field are "
                               b"not done"),
])
def test_cli_form_syntax_not_done_is_a_usage_error_naming_it(servers, field, named):
    reset(servers)
    result = run_cli("-s", "-F", field, servers.here.url + "/echo")
    assert (result.returncode, result.stdout, servers.received) == (2, b"", [])
    assert result.stderr.startswith(b"rest_client: " + named + b"\n")


def test_cli_write_out_says_what_it_cannot_know_of_https_rather_than_a_wrong_value(tls, pki):
    result = run_cli("-sk", "-o", "-", "-w", "[%{ssl_verify_result}][%{num_certs}]"
                     "[%{scheme}]", tls.url + "/echo")
    assert result.stdout.endswith(b"[][][HTTPS]")
    assert result.stderr == (b"rest_client: warning: -w %{ssl_verify_result}: -k checks no "
                             b"certificate\nrest_client: warning: -w %{num_certs}: the client "
                             b"does not show the chain\n")
    result = run_cli("-s", "--cacert", pki.ca_pem, "-o", "-", "-w", "%{json}",
                     tls.url + "/echo")
    values = json.loads(result.stdout.split(b"}", 1)[1])
    assert (values["certs"], values["num_certs"], values["ssl_verify_result"]) == (
        None, None, 0)


# -- c-merged: the client's three branches as one ----------------------------------------------

def test_max_filesize_is_the_clients_max_body():
    """--max-filesize is one limit, the library's: ReplyTooLarge, curl's exit 63."""
    line = rest_client.parse_curl_line(["--max-filesize", "1k", "http://127.0.0.1:1/"])
    assert rest_client.curl_settings(line, None)["max_body"] == 1024
    assert rest_client.exit_status_of(rest_client.ReplyTooLarge("x")) == 63
    assert not hasattr(rest_client, "FileTooLarge")


CURL_LINES.extend(lines(
    # the branches' options together: -D with a glob, --max-filesize on each URL it stands
    # for, --limit-rate pacing each file a -T glob uploads
    "-s -D - -o 'out_#1.txt' '$URL/echo/{a,b}'",
    "-s --max-filesize 1k -w '%{exitcode} %{size_download}\\n' "
    "'$URL/files/{report.csv,data.bin}'",
    "-s --limit-rate 1M -T '{doc,data}.txt' $URL/upload/",
))


def test_trace_ascii_is_a_trace_that_write_out_reads(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("-s", "--trace-ascii", "trace.txt", "-w", " %{num_connects} %{http_code}",
                     servers.here.url + "/echo")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"GET /echo\n 1 200", b"")
    assert "0000: GET /echo HTTP/1.1" in (tmp_path / "trace.txt").read_text().splitlines()


def test_a_glob_curl_cannot_read_is_said_in_the_stderr_file(servers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = servers.here.url + "/echo/[1-3"
    result = run_cli("-sS", "--stderr", "errors.txt", url)
    assert (result.returncode, result.stdout, result.stderr) == (3, b"", b"")
    column = len(url)
    assert (tmp_path / "errors.txt").read_text() == (
        "rest_client: (3) bad range in URL position %d:\n%s\n%*s^\n" % (column, url,
                                                                       column - 1, " "))


# -- c7-shape: a core that stands alone, layers that own their settings, a trace told ------

import ast
import builtins
import importlib.util

CLIENT_BANNER = "# Appendices: you can stop reading here"


def client_core_source():
    """The lines of rest_client.py before the appendices' banner."""
    with open(os.path.join(HERE, "rest_client.py"), encoding="utf-8") as file:
        source = file.read()
    return source[:source.rindex("\n", 0, source.index(CLIENT_BANNER) - 1) + 1]


def unbound_names(source):
    """The names a module's code reads that it binds nowhere (at the top, or locally) and
    that are not builtins: the names it would take from code after it."""
    read, bound = names_read_and_bound(ast.parse(source))
    return read - bound - set(dir(builtins))


def names_read_and_bound(tree):
    """The names a piece of code reads, and those it binds (at the top, or locally)."""
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read, bound


@pytest.fixture(scope="module")
def core_client(tmp_path_factory):
    """The client's core alone, saved as a file of its own and imported."""
    path = tmp_path_factory.mktemp("core") / "core_client.py"
    path.write_text(client_core_source(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("core_client", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    module.close()


def test_the_client_core_names_nothing_that_only_the_appendices_define():
    source = client_core_source()
    assert unbound_names(source) == set()
    assert len(source.splitlines()) <= 1120  # the core is read in one sitting


def test_the_core_alone_sends_a_get_with_headers_and_params(core_client, scripted):
    resp, err = core_client.send(core_client.Request(
        core_client.Method.GET, scripted.url + "/echo?a=1", headers={"X-Test": "1"},
        params={"sort": "-name", "q": "a b"}), timeout=5)
    assert err is None and resp.status_code == 200
    assert resp.json() == {"method": "GET", "path": "/echo?a=1&sort=-name&q=a+b", "body": ""}
    assert resp.headers["content-type"] == ["application/json"]
    assert last_header(scripted, "X-Test") == "1"
    assert last_header(scripted, "User-Agent") == "rest_client.py"
    assert last_header(scripted, "Accept-Encoding") is None  # the core decodes no coding


def test_the_core_alone_posts_a_json_body(core_client, scripted):
    resp, err = core_client.send(core_client.Request(
        "POST", scripted.url + "/echo", body={"name": "Ada", "email": "ada@example.com"}))
    assert err is None and (resp.status_code, resp.redirects) == (200, 0)
    assert resp.json() == {"method": "POST", "path": "/echo",
                           "body": '{"name": "Ada", "email": "ada@example.com"}'}
    assert last_header(scripted, "Content-Type") == "application/json"
    assert last_header(scripted, "Content-Length") == "43"


def test_the_core_alone_returns_the_reply_to_a_redirect(core_client, scripted):
    resp, err = core_client.send(core_client.Request("GET", scripted.url + "/redirect/302"))
    assert err is None and (resp.status_code, resp.body) == (302, "moved")


def test_the_core_alone_returns_the_error_value_for_a_refused_connection(core_client):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: the connection is refused
        resp, err = core_client.send(core_client.Request("GET", "http://127.0.0.1:%d/" % port))
    assert resp is None and isinstance(err, core_client.CouldNotConnect)
    assert str(err) == "could not connect to 127.0.0.1 port %d: Connection refused" % port


def test_the_core_alone_keeps_no_connection(core_client, counting):
    server = counting(lambda number, request: answer())
    client = core_client.Client(server.url)
    for _ in range(2):
        assert client.send(core_client.Request("GET", "/"))[0].body == "ok"
    assert server.connections == 2


LAYERS = ["Retries", "Redirects", "ContentCodings", "Downloads", "Forms", "Cookies",
          "Credentials", "Proxies", "TLS", "KeptConnections", "Verbose"]


def test_the_client_is_the_core_with_every_layer_listed_once():
    bases = [base.__name__ for base in rest_client.Client.__bases__]
    assert bases == LAYERS
    for base in rest_client.Client.__bases__:
        assert base.__bases__ == (rest_client.CoreClient,)


def test_each_layer_documents_the_settings_it_owns():
    import inspect
    for name in LAYERS:
        layer = getattr(rest_client, name)
        own = [parameter.name for parameter in inspect.signature(
            layer.__init__).parameters.values() if parameter.kind == parameter.KEYWORD_ONLY]
        for setting in own:
            assert re.search(r"^    (\w+, )*%s\b" % setting, layer.__doc__, re.M), (name, setting)
        assert set(own) <= set(vars(rest_client.Client().settings))


def test_the_layers_in_another_order_give_the_same_answers(scripted, tmp_path):
    reversed_client = type("Reversed", tuple(reversed(rest_client.Client.__bases__)), {})
    jar = http.cookiejar.CookieJar()

    def exchange(client):
        """A redirect that sets a cookie, a gzip reply saved to a file, and a retry."""
        first = client.send(Request("GET", "/set_cookie?cookie=s%3D1&to=/echo"))
        key = "order-%d" % len(scripted.attempts)
        retried = client.send(Request("GET", "/flaky/%s?after=0&fails=1" % key), retries=1)
        saved = client.send(Request("POST", "/echo", body=MultipartForm({"a": "1"})),
                            save_to=str(tmp_path / "saved.json"))
        return [(resp.status_code, resp.redirects, resp.body, resp.saved_size)
                for resp, _ in (first, retried, saved)], last_header(scripted, "Cookie")

    answers = [exchange(kind(scripted.url, cookies=jar))
               for kind in (rest_client.Client, reversed_client)]
    assert answers[0] == answers[1]
    assert answers[0][1] == "s=1"


class Watcher:
    """A trace that watches: each event, and each line curl -v would show."""

    detailed = True

    def __init__(self):
        self.seen = []

    def __call__(self, line):
        self.seen.append(line)

    def __getattr__(self, event):
        if event.startswith("__"):
            raise AttributeError(event)
        return lambda *details: self.seen.append((event,) + tuple(
            type(detail).__name__ for detail in details))


def test_the_trace_is_told_each_event_and_given_each_line(scripted):
    watcher = Watcher()
    with rest_client.Client(scripted.url) as client:
        resp, err = client.send(Request("GET", "/redirect/302?to=/echo"), trace=watcher)
    assert err is None and resp.redirects == 1
    port = scripted.url.rsplit(":", 1)[1]
    assert [step if isinstance(step, tuple) or ": " not in step else step.split(":")[0]
            for step in watcher.seen] == [
        ("connecting",), ("connected", "Connection"),
        "* Connected to 127.0.0.1 (127.0.0.1) port " + port,
        ("sending", "bytes"), "> GET /redirect/302?to=/echo HTTP/1.1", "> Host", "> User-Agent",
        "> Accept-Encoding", ">",
        ("replied", "Response"), "< HTTP/1.1 302 Found", "< Server", "< Date", "< Location",
        "< Content-Length", "<",
        ("redirecting", "Response", "str"), "* following the 302 to " + scripted.url + "/echo",
        ("sending", "bytes"), "> GET /echo HTTP/1.1", "> Host", "> User-Agent",
        "> Accept-Encoding", ">",
        ("replied", "Response"), "< HTTP/1.1 200 OK", "< Server", "< Date", "< Content-Type",
        "< Content-Length", "<"]


def test_the_trace_is_a_setting_given_once_not_a_parameter_of_the_path():
    import inspect
    entries = {rest_client.send, rest_client.Client.send}  # the API takes trace= by position
    for name, function in inspect.getmembers(rest_client, inspect.isfunction):
        if function not in entries:
            assert "trace" not in inspect.signature(function).parameters, name
    for name, method in inspect.getmembers(rest_client.Client, inspect.isfunction):
        if method not in entries:
            assert "trace" not in inspect.signature(method).parameters, name
    assert rest_client.Client(trace=print).settings.trace is print


def test_a_response_is_made_whole_and_the_cli_changes_none():
    source = open(os.path.join(HERE, "rest_client.py"), encoding="utf-8").read()
    assert not re.search(r"\b(response|head|result|last_head)\.\w+ = ", source)


def test_the_command_line_uses_only_the_public_api_of_the_layers():
    source = open(os.path.join(HERE, "rest_client.py"), encoding="utf-8").read()
    banner = source.index(CLIENT_BANNER)
    cli = source.index("# Appendix M: the command line")
    layers_bind = set(re.findall(r"^(?:def |class )?([A-Za-z_]\w*)", source[banner:cli], re.M))
    used = unbound_names(source[cli:]) & layers_bind
    assert used - set(rest_client.__all__) == set()


def test_the_client_takes_every_keyword_it_took_as_one_class(scripted):
    jar = http.cookiejar.CookieJar()
    client = rest_client.Client(
        base_url=scripted.url, headers={"X-Test": "1"}, auth=("ada", "pw"), netrc=False,
        context=None, proxy="", noproxy="", cookies=jar, timeout=5, connect_timeout=5,
        retries=1, follow_redirects=rest_client.ALL, max_redirects=3, keep_method=None,
        compressed=False, user_agent="agent/1", repeat_headers=True, method_as_given=True,
        resolve=None, auto_referer=True, max_body=1024)
    with client:
        resp, err = client.send(Request("GET", "/set_cookie?cookie=s%3D1&to=/echo"),
                                timeout=4, retries=0, max_redirects=2)
    assert err is None and (resp.status_code, resp.redirects) == (200, 1)
    assert (last_header(scripted, "Cookie"), last_header(scripted, "User-Agent")) == (
        "s=1", "agent/1")
    assert last_header(scripted, "Authorization") == "Basic " + base64.b64encode(
        b"ada:pw").decode()
    assert last_header(scripted, "Referer") == scripted.url + "/set_cookie?cookie=s%3D1&to=/echo"
    assert last_header(scripted, "Accept-Encoding") is None


def test_each_appendix_names_only_what_comes_before_it():
    with open(os.path.join(HERE, "rest_client.py"), encoding="utf-8") as file:
        source = file.read()
    cuts = [source.count("\n", 0, match.start()) + 1
            for match in re.finditer(r"^# Appendix [A-M]:", source, re.M)]
    assert len(cuts) == 13
    statements = ast.parse(source).body  # each read once: the file up to a cut is a prefix
    read, bound = set(), set(dir(builtins))
    for cut in cuts[1:] + [source.count("\n") + 2]:
        while statements and statements[0].lineno < cut:
            names = names_read_and_bound(statements.pop(0))
            read |= names[0]
            bound |= names[1]
        assert read - bound == set(), "before line %d" % cut


# -- lead: the API's positional arguments, as written against earlier releases --------------

def test_send_takes_timeout_retries_and_trace_by_position(scripted):
    key, url = flaky(scripted, "after=0&fails=1")
    lines = []
    resp, err = send(Request("GET", url), 5, 1, lines.append)
    assert err is None and resp.status_code == 200 and scripted.attempts[key] == 2
    assert "> GET /flaky/%s?after=0&fails=1 HTTP/1.1" % key in lines


def test_a_clients_send_takes_timeout_retries_and_trace_by_position(scripted):
    key, url = flaky(scripted, "after=0&fails=1")
    lines = []
    with rest_client.Client() as client:
        resp, err = client.send(Request("GET", url), 5, 1, lines.append)
    assert err is None and resp.status_code == 200 and scripted.attempts[key] == 2
    assert "> GET /flaky/%s?after=0&fails=1 HTTP/1.1" % key in lines


# -- c-speed: a layer whose setting is off costs a request nothing --------------------------

def layers_sending(client, **changes):
    """The layers of what sends a request with these changes to the client's settings."""
    sender = client.sender_for(client.settings_for(changes, None))
    return [kind.__name__ for kind in type(sender).__mro__[1:-2]]


def test_a_client_sends_with_only_the_layers_its_settings_use(monkeypatch, tmp_path):
    clear_proxy_variables(monkeypatch)
    client = rest_client.Client()
    assert layers_sending(client) == ["Redirects", "ContentCodings", "Forms", "Credentials",
                                      "TLS", "KeptConnections"]
    assert client.sender_for(client.settings) is client.sender_for(client.settings)
    assert layers_sending(client, retries=1, save_to=str(tmp_path / "file"),
                          cookies=http.cookiejar.CookieJar(), proxy="http://proxy:3128",
                          trace=print) == LAYERS
    assert layers_sending(client, follow_redirects=None, proxy="") == [
        "ContentCodings", "Forms", "Credentials", "TLS", "KeptConnections"]
    monkeypatch.setenv("http_proxy", "http://proxy:3128")
    assert "Proxies" in layers_sending(rest_client.Client())


def test_a_kept_get_calls_no_hook_of_a_layer_turned_off(monkeypatch, scripted):
    clear_proxy_variables(monkeypatch)
    kinds = [rest_client.CoreClient, rest_client.Client] + list(rest_client.Client.__bases__)
    hooks = {function.__code__: "%s.%s" % (kind.__name__, name) for kind in kinds
             for name, function in vars(kind).items() if hasattr(function, "__code__")}
    called = []

    def watch(frame, event, argument):
        if event == "call" and frame.f_code in hooks:
            called.append(hooks[frame.f_code])

    with rest_client.Client(scripted.url) as client:
        assert client.send(Request("GET", "/echo"))[1] is None  # the connection, kept
        sys.setprofile(watch)
        try:
            resp, err = client.send(Request("GET", "/echo"))
        finally:
            sys.setprofile(None)
    assert err is None and resp.status_code == 200
    # 33 calls when every layer had a hand in every request (Retries' attempts, Cookies'
    # head_for and replied, Verbose's reply_class, Downloads' replied, body_limit,
    # body_pieces, keep_body and outcome); settings_for makes the settings that choose the
    # layers, so Downloads' runs before the choice
    assert called == [
        "Client.send", "Downloads.settings_for", "Client.settings_for", "Client.sender_for",
        "Client.attempts", "Client.attempt", "Client.prepare", "ContentCodings.add_headers",
        "Credentials.add_headers", "Client.add_headers", "Client.exchange", "TLS.route",
        "Client.route", "Client.head_for", "KeptConnections.send_on_connection",
        "Client.send_request", "Client.reply_class", "Client.replied", "Client.read_body",
        "Client.body_limit", "Client.body_pieces", "ContentCodings.decoded",
        "Client.keep_body", "KeptConnections.release", "Redirects.next_request",
        "Client.outcome"]


def test_a_subclass_of_the_client_keeps_its_own_hooks(scripted):
    class Signed(rest_client.Client):
        def add_headers(self, url, headers, spellings, settings):
            super().add_headers(url, headers, spellings, settings)
            headers["X-Signed"] = "yes"

    with Signed(scripted.url) as client:
        resp, err = client.send(Request("GET", "/echo"))
    assert err is None and resp.status_code == 200
    assert last_header(scripted, "X-Signed") == "yes"


# -- c-speed: -I with --max-filesize, as curl: the head, and exit 63 for a length too large --

CURL_LINES.extend(lines(
    "-sI --max-filesize 10 $URL/files/report.csv",
    "-sSI --max-filesize 10 -w '%{exitcode}' $URL/files/report.csv",
    "-sI --max-filesize 1k $URL/files/report.csv",
    "-s --head --max-filesize 10 -D heads.txt $URL/files/report.csv",
))
