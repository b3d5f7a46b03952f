"""The users service, tested over real sockets, behaviour by behaviour.

Each configuration (memory store, SQLite store, with an API key, with CORS...) gets one
real server on port 0, shared by the tests that use it. Behaviour tests run against both
stores. Tests wait on sockets, processes and events; where they must wait for the server
to reach a state, they poll for it in a loop under a deadline, never sleeping a fixed time.
"""

import ast
import builtins
import contextlib
import errno
import functools
import html
import http.client
import http.server
import importlib.util
import io
import itertools
import json
import os
import re
import select
import shlex
import shutil
import signal
import socket
import socketserver
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http import HTTPStatus
from urllib.parse import quote
from xml.etree import ElementTree

import pytest

import rest_users
from rest_users import Field, Resource, USERS

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "s3cret-key"
JSON_TYPE = "application/json; charset=utf-8"
XML_TYPE = "application/xml; charset=utf-8"
PROBLEM_JSON = "application/problem+json"
PROBLEM_XML = "application/problem+xml"


# -- servers and a small client ------------------------------------------------------------

def start_server(variant="default", **options):
    """A real server on a free port, serving from a daemon thread: the default one, or the
    "plain" one, which is the same without the speed-ups."""
    options.setdefault("quiet", True)
    server = rest_users.make_server("127.0.0.1", 0, plain=variant == "plain", **options)
    serve_in_a_thread(server)
    return server


def serve_in_a_thread(server):
    """Serve from a daemon thread whose loop wakes for a connection, or twice a second to
    see whether it is asked to stop: the dozens of servers the module keeps at once, each
    woken a hundred times a second, would take a fifth of a CPU from the tests."""
    threading.Thread(target=server.serve_forever, args=(0.5,), daemon=True).start()


def stop_server(server):
    """Stop serving, then close. A connection wakes the serving loop at once, which would
    otherwise see the request to stop only when its poll interval runs out; one more is
    made if the first came before the request to stop."""
    close_kept(server.server_address[1])
    stopping = threading.Thread(target=server.shutdown)
    stopping.start()
    while stopping.is_alive():
        with contextlib.suppress(OSError):
            socket.create_connection(server.server_address[:2], timeout=1).close()
        stopping.join(0.01)
    server.server_close()


def options_for(kind, tmp_path_factory):
    """start_server's options for a kind of server: the default one with each store, and the
    plain one, without the speed-ups."""
    if kind == "sqlite":
        return {"db": str(tmp_path_factory.mktemp("db") / "users.db")}
    return {"variant": "plain"} if kind == "plain" else {}


SERVER_KINDS = ["memory", "sqlite", "plain"]
VARIANTS = ["default", "plain"]


def pytest_generate_tests(metafunc):
    """Every server test runs on the default server and on the plain one: a test taking
    `server` with each store too, any other that takes `variant` on both."""
    if "server" in metafunc.fixturenames:
        metafunc.parametrize("server", SERVER_KINDS, indirect=True, scope="module")
    if "variant" in metafunc.fixturenames:
        metafunc.parametrize("variant", VARIANTS, indirect=True, scope="module")


@pytest.fixture(scope="module")
def variant(request):
    """Which server a test starts: "default", or "plain", without the speed-ups."""
    return request.param


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    """The service: the default with each store, or the plain core."""
    running = start_server(**options_for(request.param, tmp_path_factory))
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def auth_server(variant):
    running = start_server(variant, api_key=KEY)
    yield running
    stop_server(running)


class Reply:
    """A response read whole: status, headers (an http.client.HTTPMessage) and body bytes."""

    def __init__(self, response):
        self.status = response.status
        self.headers = response.headers
        self.body = response.read()

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def text(self):
        return self.body.decode("utf-8")


def connect(server, timeout=5):
    return http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=timeout)


def call(server, method, path, body=None, headers=None):
    """Send one request, on the connection this thread keeps to the server (a new one when
    it has none open), as a browser or a client library would. A dict or list body is sent
    as JSON."""
    headers = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
        headers.setdefault("Content-Type", "application/json")
    key = (threading.get_ident(), server.server_address[1])
    with KEPT_LOCK:
        connection = KEPT.pop(key, None)
    if connection is not None and not still_open(connection):
        connection.close()
        connection = None
    try:
        response = send_on(connection or connect(server), method, path, body, headers)
    except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
        if connection is None:
            raise
        # The server closed the kept connection as the request went: once more on a new one
        response = send_on(connect(server), method, path, body, headers)
    reply = Reply(response)
    if response.will_close:
        response.connection.close()
    else:
        with KEPT_LOCK:
            KEPT[key] = response.connection
    return reply


KEPT = {}  # (thread, port): the connection that thread keeps to the server on that port
KEPT_LOCK = threading.Lock()


def send_on(connection, method, path, body, headers):
    """Send the request on the connection; its response, which knows its connection."""
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
    except BaseException:
        connection.close()
        raise
    response.connection = connection
    return response


def still_open(connection):
    """Whether a kept connection is open still: the server has sent nothing (no end)."""
    return connection.sock is not None and not select.select([connection.sock], [], [], 0)[0]


def close_kept(port):
    """Close the connections every thread keeps to a port, as its server stops."""
    with KEPT_LOCK:
        for key in [key for key in KEPT if key[1] == port]:
            KEPT.pop(key).close()


def raw(server, data, timeout=5):
    """Send raw bytes and return everything the server sends back until it closes."""
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


numbers = itertools.count(1)


def new_email():
    return "user%d@example.com" % next(numbers)


def create(server, name="Ada Lovelace", email=None, headers=None):
    """POST a user and return its JSON."""
    reply = call(server, "POST", "/users", {"name": name, "email": email or new_email()}, headers)
    assert reply.status == 201, reply.body
    return reply.json()


PROBLEM_NAMESPACE = "{urn:ietf:rfc:7807}"


def xml_problem(body):
    """An XML problem (RFC 9457 Appendix B) as a dict of its fields; errors as a list of dicts."""
    root = ElementTree.fromstring(body)
    assert root.tag == PROBLEM_NAMESPACE + "problem"
    problem = {}
    for child in root:
        name = child.tag[len(PROBLEM_NAMESPACE):]
        if name == "errors":
            problem[name] = [{field.tag[len(PROBLEM_NAMESPACE):]: field.text for field in item}
                             for item in child]
        else:
            problem[name] = int(child.text) if name == "status" else child.text
    return problem


def reason_phrase(status):
    """The reason phrase of a status as this interpreter names it; Python 3.6's HTTPStatus
    has no 421, for which the service says Misdirected Request."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return {421: "Misdirected Request"}[status]


def assert_problem(reply, status, fmt="json"):
    """The reply is an RFC 9457 problem with this status, in JSON or XML; returns it parsed."""
    assert reply.status == status
    if fmt == "xml":
        assert reply.headers["Content-Type"] == PROBLEM_XML
        problem = xml_problem(reply.body)
    else:
        assert reply.headers["Content-Type"] == PROBLEM_JSON
        problem = reply.json()
    assert problem["type"] == "about:blank"
    assert problem["title"] == reason_phrase(status)
    assert problem["status"] == status
    assert isinstance(problem["detail"], str) and problem["detail"]
    return problem


# -- starting it ---------------------------------------------------------------------------

# Python's start and its compiling of rest_users.py are most of what a run of the service
# costs a test (0.3 s on CPython, more on PyPy): the tests' runs are forked from a process
# that imported rest_users once and runs none of it. Each run is a process of its own, as
# `python rest_users.py` is: its own pid, signals, exit status, environment, folder, argv,
# stdout and stderr, ending with `sys.exit(main())`, the file's last line. A waiter forked
# between them reports the run's pid and exit status, so runs may overlap. Tests that need
# the file itself (a learner's copy, another user) still start it.
FORK_SERVER = """import array, json, os, random, signal, socket, sys
sys.path[0] = sys.argv[1]  # the file's folder, as for python rest_users.py
import rest_users
control = socket.fromfd(int(sys.argv[2]), socket.AF_UNIX, socket.SOCK_SEQPACKET)
os.close(int(sys.argv[2]))
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters are reaped as they end
while True:
    fds = array.array("i")
    message, ancillary, _, _ = control.recvmsg(1 << 16, socket.CMSG_LEN(3 * fds.itemsize))
    if not message:
        sys.exit()  # the tests are done
    for _, _, data in ancillary:
        fds.frombytes(data)
    if os.fork() == 0:
        break
    for fd in fds:
        os.close(fd)
control.close()
signal.signal(signal.SIGCHLD, signal.SIG_DFL)
report = socket.fromfd(fds[0], socket.AF_UNIX, socket.SOCK_SEQPACKET)
pid = os.fork()
if pid:  # the waiter, which holds none of the run's pipes
    for fd in fds:
        os.close(fd)
    report.send(b"%d" % pid)
    status = os.waitpid(pid, 0)[1]
    report.send(b"%d" % (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else
                         os.WEXITSTATUS(status)))
    os._exit(0)
report.close()
for number, fd in enumerate(fds[1:], 1):  # stdout, stderr
    os.dup2(fd, number)
for fd in fds:
    os.close(fd)
run = json.loads(message.decode())
os.chdir(run["cwd"])
os.environ.clear()
os.environ.update(run["env"])
sys.argv = run["argv"]
random.seed()  # as a new process seeds it (Python 3.7+ does this at a fork)
sys.exit(rest_users.main())
"""


class ForkServer:
    """A process that imported rest_users, forking a run of the service for each start."""

    def __init__(self):
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-c", FORK_SERVER, HERE, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        theirs.close()

    def start(self, args, env=None):
        """Run rest_users.py with args, in its folder, with env (else this one's)."""
        report, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stdout, stderr = os.pipe(), os.pipe()  # (read end, write end)
        given = [theirs.fileno(), stdout[1], stderr[1]]
        run = {"argv": [os.path.join(HERE, "rest_users.py")] + list(args), "cwd": HERE,
               "env": dict(os.environ if env is None else env)}
        self.control.sendmsg([json.dumps(run).encode()],
                             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", *given))])
        theirs.close()
        os.close(stdout[1])
        os.close(stderr[1])
        return ForkedRun(report, stdout[0], stderr[0])

    def close(self):
        """End the process: it ends when its control socket closes."""
        self.control.close()
        self.process.wait(10)


class ForkedRun:
    """A run of the service forked by the ForkServer: the part of a Popen the tests use."""

    def __init__(self, report, stdout, stderr):
        self.report, self.returncode = report, None
        report.settimeout(10)  # the waiter tells the pid at once: never a hang
        self.pid = int(report.recv(16))
        self.stdout, self.stderr = open(stdout), open(stderr)  # text, as universal_newlines

    def send_signal(self, signum):
        """Send the run a signal, unless it has ended (its pid may be another's by then)."""
        if self.returncode is None:
            os.kill(self.pid, signum)

    def terminate(self):
        """SIGTERM, as Popen.terminate."""
        self.send_signal(signal.SIGTERM)

    def kill(self):
        """SIGKILL, as Popen.kill."""
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        """The exit status, as Popen gives it: minus the signal that ended the run."""
        if self.returncode is None:
            self.report.settimeout(timeout)
            self.returncode = int(self.report.recv(16))
            self.report.close()
        return self.returncode

    def communicate(self, timeout=None):
        """Read stdout and stderr to their ends, side by side, then wait for the exit."""
        read = {}

        def read_to_end(stream):
            with stream:
                read[stream] = stream.read()

        readers = [threading.Thread(target=read_to_end, args=(stream,), daemon=True)
                   for stream in (self.stdout, self.stderr)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired("rest_users.py", timeout)
        self.wait(timeout)
        return read[self.stdout], read[self.stderr]


@functools.lru_cache(maxsize=None)
def fork_server():
    """The module's one ForkServer, started when a test first runs the service."""
    return ForkServer()


def teardown_module():
    """End the ForkServer, if a test started it."""
    if fork_server.cache_info().currsize:
        fork_server().close()


def run_service(*args, env=None):
    """Start rest_users.py as a process and return it with its first stdout line."""
    process = fork_server().start(args, env)
    return process, process.stdout.readline()


def run_to_exit(*args):
    """Run rest_users.py until it exits by itself: --help, or a start that must fail."""
    process = fork_server().start(args)
    stdout, stderr = process.communicate(timeout=10)
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def failed_start(capsys, *args):
    """Run main() in this process for a start that must fail: its exit status, stdout and
    stderr. (A process of its own costs half a second on PyPy; the tests above and below
    that need one, for --help, usage errors or another process, start one.)"""
    status = rest_users.main(list(args))
    output = capsys.readouterr()
    return status, output.out, output.err


def port_of(banner):
    return int(banner.rsplit(":", 1)[1].split("/")[0])


def test_bad_arguments_print_usage_and_exit_2():
    result = run_to_exit("--port", "http")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: rest_users.py")


def test_port_in_use_is_one_clear_line(auth_server, capsys):
    port = auth_server.server_address[1]
    status, out, err = failed_start(capsys, "--port", str(port))
    assert status == 1
    assert out == ""
    in_use = "[Errno %d] %s" % (errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
    assert err == "rest_users: cannot start on 127.0.0.1:%d: %s\n" % (port, in_use)


def test_unwritable_db_is_one_clear_line(tmp_path, capsys):
    db = str(tmp_path / "missing-folder" / "users.db")
    status, out, err = failed_start(capsys, "--port", "0", "--db", db)
    with pytest.raises(sqlite3.Error) as refused:  # in this interpreter's sqlite3's words
        sqlite3.connect(db)
    assert status == 1
    assert out == ""
    assert err == "rest_users: cannot start on %s: %s\n" % (db, refused.value)


def test_help_explains_every_option():
    result = run_to_exit("--help")
    assert result.returncode == 0
    for option in ("--host", "--port", "--db", "--api-key", "--cors", "--max-body", "--quiet",
                   "--allow-host", "--delay", "--fail-rate", "--fake-users", "--load"):
        assert option in result.stdout


def test_api_key_comes_from_the_environment_on_the_command_line():
    env = dict(os.environ, API_KEY=KEY)
    process, banner = run_service("--port", "0", env=env)
    try:
        port = port_of(banner)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/users")
        assert connection.getresponse().status == 401
        connection.close()
    finally:
        process.kill()  # a stop's own tests are below; SIGTERM waits for the serving loop
        _, stderr = process.communicate(timeout=10)  # read once it has ended: never a hang
    assert stderr.splitlines()[0] == (
        "Open http://127.0.0.1:%d/ in a browser to explore the API. Users are kept in "
        "memory, lost when the server stops. Requests to /users need Authorization: Bearer and "
        "the key in the API_KEY environment variable (unset it to need none). Test controls: "
        "POST /__admin/reset, GET /__admin/requests." % port)
    assert KEY not in banner + stderr


@pytest.mark.parametrize("args, env, note", [
    ([], {}, "memory, lost when the server stops. No API key is needed."),
    (["--db", "DB"], {}, "the SQLite file DB. No API key is needed."),
    (["--api-key", KEY], {"API_KEY": "other"}, "memory, lost when the server stops. Requests "
     "to /users need Authorization: Bearer and the key given with --api-key."),
    ([], {"API_KEY": KEY}, "memory, lost when the server stops. Requests to /users need "
     "Authorization: Bearer and the key in the API_KEY environment variable (unset it to "
     "need none)."),
    (["--api-key", ""], {"API_KEY": KEY}, "memory, lost when the server stops. No API key is "
     "needed."),
])
def test_the_second_startup_line_says_what_a_newcomer_needs_next(args, env, note, tmp_path):
    db = str(tmp_path / "users.db")
    options = rest_users.parse_arguments(["--port", "0"] + [db if arg == "DB" else arg
                                                            for arg in args])
    server = rest_users.make_server(options.host, options.port, db=options.db)
    try:
        told = rest_users.startup_note(options, server, env)
    finally:
        server.server_close()
    assert told == ("Open http://127.0.0.1:%d/ in a browser to explore the API. Users are kept "
                    "in %s Test controls: POST /__admin/reset, GET /__admin/requests."
                    % (server.server_address[1], note.replace("DB", db)))
    assert KEY not in told


def test_make_server_reads_no_environment(monkeypatch, variant):
    monkeypatch.setenv("API_KEY", KEY)
    running = start_server(variant)
    try:
        assert call(running, "GET", "/users").status == 200
    finally:
        stop_server(running)


def test_make_server_returns_a_bound_server_not_yet_serving():
    running = rest_users.make_server("127.0.0.1", 0, quiet=True)
    try:
        assert isinstance(running, http.server.HTTPServer)
        assert isinstance(running, socketserver.ThreadingMixIn)  # ThreadingHTTPServer's bases
        assert running.server_address[1] != 0
    finally:
        running.server_close()


# -- the user resource ---------------------------------------------------------------------

def test_first_user_has_id_1_and_ids_are_never_reused(variant):
    running = start_server(variant)
    try:
        assert create(running)["id"] == 1
        assert create(running)["id"] == 2
        assert call(running, "DELETE", "/users/2").status == 200
        assert create(running)["id"] == 3
    finally:
        stop_server(running)


def test_ids_are_not_reused_after_a_restart_with_db(tmp_path, variant):
    db = str(tmp_path / "users.db")
    running = start_server(variant, db=db)
    create(running)
    last = create(running)["id"]
    call(running, "DELETE", "/users/%d" % last)
    stop_server(running)
    running = start_server(variant, db=db)
    try:
        assert create(running)["id"] == last + 1
        assert call(running, "GET", "/users/1").status == 200  # the data survived the restart
    finally:
        stop_server(running)


def test_the_total_count_survives_a_restart_with_db(tmp_path, variant):
    db = str(tmp_path / "users.db")
    running = start_server(variant, db=db)
    for _ in range(3):
        create(running)
    call(running, "DELETE", "/users/2")
    stop_server(running)
    running = start_server(variant, db=db)
    try:
        assert call(running, "GET", "/users").headers["X-Total-Count"] == "2"
        create(running)
        assert call(running, "GET", "/users?limit=1").headers["X-Total-Count"] == "3"
    finally:
        stop_server(running)


def test_post_returns_the_user_exactly_as_sent(server):
    reply = call(server, "POST", "/users", {"name": "  Zoë 🦉 李 ", "email": "zoe@example.com"})
    assert reply.status == 201
    assert reply.headers["Content-Type"] == JSON_TYPE
    user = reply.json()
    assert user == {"id": user["id"], "name": "  Zoë 🦉 李 ", "email": "zoe@example.com"}
    xml = call(server, "GET", "/users/%d" % user["id"], headers={"Accept": "application/xml"})
    assert xml.text() == ("<user><id>%d</id><name>  Zoë 🦉 李 </name>"
                          "<email>zoe@example.com</email></user>" % user["id"])


@pytest.mark.parametrize("id_value", [None, 1, "1"])
def test_an_id_in_a_post_body_is_422(server, id_value):
    reply = call(server, "POST", "/users", {"id": id_value, "name": "A", "email": new_email()})
    problem = assert_problem(reply, 422)
    assert [error["field"] for error in problem["errors"]] == ["id"]


def test_put_may_repeat_the_path_id(server):
    user = create(server)
    reply = call(server, "PUT", "/users/%d" % user["id"],
                 {"id": user["id"], "name": "B", "email": user["email"]})
    assert reply.status == 200


@pytest.mark.parametrize("other", ["same-as-string", "other", True, None, 1.0])
def test_put_with_another_id_is_422(server, other):
    user = create(server)
    id_value = {"same-as-string": str(user["id"]), "other": user["id"] + 1000}.get(other, other)
    if other == 1.0:
        id_value = float(user["id"])
    reply = call(server, "PUT", "/users/%d" % user["id"],
                 {"id": id_value, "name": "B", "email": user["email"]})
    assert assert_problem(reply, 422)["errors"][0]["field"] == "id"


@pytest.mark.parametrize("name, ok", [
    ("", False), ("   ", False), ("\u3000", False), ("x" * 200, True), ("x" * 201, False),
    ("🦉" * 200, True), (" padded ", True), (7, False), (None, False), (["A"], False),
])
def test_name_rules(server, name, ok):
    reply = call(server, "POST", "/users", {"name": name, "email": new_email()})
    if ok:
        assert reply.status == 201 and reply.json()["name"] == name
    else:
        assert assert_problem(reply, 422)["errors"][0]["field"] == "name"


@pytest.mark.parametrize("email, ok", [
    ("a@b", True), ("ab", False), ("@b", False), ("a@", False), ("a@b@c", False),
    ("a b@c", False), ("a@b\u00a0c", False), ("x" * 251 + "@b.c", False),
    ("x" * 250 + "@b.c", True), ("user@[::1]", True), (5, False), ("", False),
])
def test_email_rules(server, email, ok):
    reply = call(server, "POST", "/users", {"name": "A", "email": email})
    if ok:
        assert reply.status == 201 and reply.json()["email"] == email
    else:
        assert assert_problem(reply, 422)["errors"][0]["field"] == "email"


@pytest.mark.parametrize("character", ["\x00", "\x01", "\t", "\n", "\r", "\x1f", "\x7f",
                                       "\ud800", "\udfff", "\ufffe", "\uffff"])
@pytest.mark.parametrize("field", ["name", "email"])
def test_characters_xml_cannot_carry_are_422(server, character, field):
    user = {"name": "A", "email": new_email()}
    user[field] = "a" + character + user[field]
    body = json.dumps(user)  # ensure_ascii: lone surrogates travel as \\ud800 escapes
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/json"})
    assert assert_problem(reply, 422)["errors"][0]["field"] == field


def test_unknown_fields_are_422_not_dropped(server):
    reply = call(server, "POST", "/users", {"name": "A", "email": new_email(), "age": 3})
    problem = assert_problem(reply, 422)
    assert problem["errors"] == [{"field": "age", "message":
                                  "is not a field of a user; the fields are name and email"}]


def test_a_422_lists_every_invalid_field(server):
    reply = call(server, "POST", "/users", {"name": 5, "email": "nope", "role": "admin"})
    problem = assert_problem(reply, 422)
    assert [error["field"] for error in problem["errors"]] == ["name", "email", "role"]
    assert problem["errors"][0]["message"] == "must be a string, not a number"


def test_missing_fields_are_422(server):
    problem = assert_problem(call(server, "POST", "/users", {}), 422)
    assert problem["errors"] == [{"field": "name", "message": "is required"},
                                 {"field": "email", "message": "is required"}]


def test_a_field_given_twice_in_json_is_422(server):
    body = '{"name": "A", "name": "B", "email": "%s"}' % new_email()
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/json"})
    assert assert_problem(reply, 422)["errors"] == [
        {"field": "name", "message": "is given more than once"}]


def test_duplicate_email_is_409_ignoring_ascii_case(server):
    email = new_email()
    create(server, email=email)
    reply = call(server, "POST", "/users", {"name": "B", "email": email.upper()})
    assert_problem(reply, 409)


def test_emails_differing_in_non_ascii_case_are_distinct(server):
    stem = new_email()
    create(server, email="é" + stem)
    assert call(server, "POST", "/users", {"name": "B", "email": "É" + stem}).status == 201


def test_changing_the_case_of_ones_own_email_is_allowed(server):
    user = create(server)
    reply = call(server, "PATCH", "/users/%d" % user["id"], {"email": user["email"].upper()})
    assert reply.status == 200 and reply.json()["email"] == user["email"].upper()


def test_put_to_another_users_email_is_409_and_changes_nothing(server):
    first, second = create(server), create(server)
    reply = call(server, "PUT", "/users/%d" % second["id"],
                 {"name": "X", "email": first["email"]})
    assert_problem(reply, 409)
    assert call(server, "GET", "/users/%d" % second["id"]).json() == second


def test_a_freed_email_can_be_used_again(server):
    user = create(server)
    call(server, "DELETE", "/users/%d" % user["id"])
    assert create(server, email=user["email"])["email"] == user["email"]


# -- representations and negotiation -------------------------------------------------------

@pytest.mark.parametrize("accept, content_type", [
    (None, JSON_TYPE),
    ("application/json", JSON_TYPE),
    ("application/xml", XML_TYPE),
    ("text/xml", "text/xml; charset=utf-8"),
    ("text/*", "text/xml; charset=utf-8"),
    ("*/*", JSON_TYPE),
    ("application/*", JSON_TYPE),
    ("application/xml, application/json", JSON_TYPE),
    ("application/json;q=0.5, application/xml", XML_TYPE),
    ("application/json;q=0, */*;q=0.5", XML_TYPE),
    ("application/json;q=0, application/*;q=0.5", XML_TYPE),
    ("application/json;q=0, text/xml;q=0.3, application/xml;q=0.3", XML_TYPE),
    ("application/json;q=0.1, text/xml;q=0.9", "text/xml; charset=utf-8"),
    ("APPLICATION/XML", XML_TYPE),
    # a browser's address bar ranks text/html first: it gets JSON, which it can show
    ("text/html, application/xhtml+xml, application/xml;q=0.9, */*;q=0.8", JSON_TYPE),
    ("text/html, application/json;q=0.1, application/xml;q=0.5", JSON_TYPE),
    ("text/html, application/xml", XML_TYPE),  # JSON is not acceptable here
    ("text/html;q=0.5, application/xml", XML_TYPE),  # XML ranks first: not a browser
])
def test_the_response_format_follows_accept(server, accept, content_type):
    user = create(server)
    headers = {"Accept": accept} if accept else {}
    reply = call(server, "GET", "/users/%d" % user["id"], headers=headers)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == content_type
    assert reply.headers["Vary"] == "Accept, Origin"
    if "xml" in content_type:
        assert reply.text().startswith("<user><id>%d</id>" % user["id"])
    else:
        assert reply.json() == user


@pytest.mark.parametrize("accept", ["text/html", "image/png", "application/json;q=0",
                                    "application/json;q=0, application/xml;q=0, text/xml;q=0"])
def test_nothing_acceptable_is_406_in_problem_json(server, accept):
    reply = call(server, "GET", "/users", headers={"Accept": accept})
    problem = assert_problem(reply, 406)
    assert "application/json, application/xml or text/xml" in problem["detail"]
    assert reply.headers["Vary"] == "Accept, Origin"


ONLY_PROBLEMS = {"Accept": "application/problem+json"}
NO_SUCCESS = ("This client takes only problem details (application/problem+json or "
              "application/problem+xml), and the request would have succeeded; nothing was "
              "changed. This service answers in application/json, application/xml or text/xml.")


@pytest.mark.parametrize("method, path", [("GET", "/users"), ("GET", "/"), ("HEAD", "/users"),
                                          ("POST", "/users"), ("PUT", "/users/{id}"),
                                          ("PATCH", "/users/{id}"), ("DELETE", "/users/{id}"),
                                          ("GET", "/users/{id}")])
def test_a_problem_only_client_gets_406_for_what_would_succeed_and_nothing_changes(
        server, method, path):
    user = create(server)
    path = path.format(id=user["id"])
    body = {"name": "B", "email": new_email()} if method in ("POST", "PUT", "PATCH") else None
    before = call(server, "GET", "/users?limit=1000").body
    reply = call(server, method, path, body, ONLY_PROBLEMS)
    assert reply.status == 406
    assert reply.headers["Content-Type"] == PROBLEM_JSON
    if method != "HEAD":
        assert reply.json() == {"type": "about:blank", "title": "Not Acceptable", "status": 406,
                                "detail": NO_SUCCESS}
    assert call(server, "GET", "/users?limit=1000").body == before


def test_a_problem_only_client_gets_each_error_in_its_type(server):
    user, other = create(server), create(server)
    path = "/users/%d" % user["id"]
    stale = dict(ONLY_PROBLEMS, **{"If-Match": '"99-json"'})
    cases = [
        (call(server, "GET", "/users/999999", headers=ONLY_PROBLEMS), 404),
        (call(server, "GET", "/nope", headers=ONLY_PROBLEMS), 404),
        (call(server, "GET", "/users?limit=0", headers=ONLY_PROBLEMS), 400),
        (call(server, "POST", "/users", {"name": ""}, ONLY_PROBLEMS), 422),
        (call(server, "POST", "/users", {"name": "A", "email": other["email"]}, ONLY_PROBLEMS), 409),
        (call(server, "PUT", path, {"name": "A", "email": other["email"]}, ONLY_PROBLEMS), 409),
        (call(server, "PUT", path, {"name": "A", "email": new_email()}, stale), 412),
        (call(server, "DELETE", path, headers=stale), 412),
        (call(server, "DELETE", "/users/999999", headers=ONLY_PROBLEMS), 404),
    ]
    for reply, status in cases:
        assert_problem(reply, status)
    assert call(server, "GET", path).json() == user


def test_a_problem_only_xml_client_gets_problems_in_xml(server):
    headers = {"Accept": "application/problem+xml"}
    assert_problem(call(server, "POST", "/users", {"name": ""}, headers), 422, fmt="xml")
    assert_problem(call(server, "GET", "/users", headers=headers), 406, fmt="xml")


def test_a_list_is_an_array_in_json_and_users_in_xml(server):
    user = create(server)
    path = "/users?email=%s" % user["email"]
    assert call(server, "GET", path).json() == [user]
    xml = call(server, "GET", path, headers={"Accept": "application/xml"})
    assert xml.text() == ("<users><user><id>%d</id><name>Ada Lovelace</name><email>%s</email>"
                          "</user></users>" % (user["id"], user["email"]))


def test_xml_escapes_markup_in_values(server):
    user = create(server, name="<b>&\"'</b>")
    xml = call(server, "GET", "/users/%d" % user["id"], headers={"Accept": "application/xml"})
    assert "<name>&lt;b&gt;&amp;\"'&lt;/b&gt;</name>" in xml.text()


@pytest.mark.parametrize("content_type", ["application/xml", "text/xml",
                                          "application/xml; charset=UTF-8"])
def test_an_xml_body_creates_a_user(server, content_type):
    email = new_email()
    body = '<?xml version="1.0"?><user><name>Zoë</name><email>%s</email></user>' % email
    reply = call(server, "POST", "/users", body.encode("utf-8"), {"Content-Type": content_type})
    assert reply.status == 201
    assert reply.json()["name"] == "Zoë"


def test_a_json_body_with_charset_utf8_is_read(server):
    body = json.dumps({"name": "A", "email": new_email()})
    reply = call(server, "POST", "/users", body,
                 {"Content-Type": "application/json; charset=utf-8"})
    assert reply.status == 201


@pytest.mark.parametrize("method, content_type", [
    ("POST", "text/plain"), ("POST", "application/x-www-form-urlencoded"),
    ("POST", "application/merge-patch+json"), ("PUT", "application/merge-patch+json"),
    ("POST", "application/json; charset=latin-1"), ("PUT", "application/xml; charset=utf-16"),
    ("PATCH", "text/plain"),
])
def test_unsupported_body_types_are_415(server, method, content_type):
    user = create(server)
    path = "/users" if method == "POST" else "/users/%d" % user["id"]
    reply = call(server, method, path, json.dumps({"name": "A", "email": new_email()}),
                 {"Content-Type": content_type})
    problem = assert_problem(reply, 415)
    assert "application/json, application/xml or text/xml" in problem["detail"]


def test_a_body_without_content_type_is_415(server):
    connection = connect(server)
    connection.putrequest("POST", "/users")
    body = json.dumps({"name": "A", "email": new_email()}).encode()
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    assert_problem(Reply(connection.getresponse()), 415)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_an_empty_body_is_400(server, method):
    user = create(server)
    path = "/users" if method == "POST" else "/users/%d" % user["id"]
    reply = call(server, method, path, b"", {"Content-Type": "application/json"})
    assert_problem(reply, 400)


@pytest.mark.parametrize("body", [b"{", b"[]", b'"a"', b"null", b"\xff\xfe", b"{'a': 1}",
                                  b'{"name": NaN}', b"[" * 100000])
def test_malformed_json_is_400(server, body):
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/json"})
    assert_problem(reply, 400)


@pytest.mark.parametrize("body", [b"<user>", b"<person><name>A</name></person>", b"nope",
                                  b"<user><name>A</name></user><user/>",
                                  "<user><name>\xe9</name></user>".encode("latin-1")])
def test_malformed_xml_is_400(server, body):
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/xml"})
    assert_problem(reply, 400)


def test_an_xml_field_with_child_elements_is_422(server):
    body = "<user><name><first>A</first></name><email>%s</email></user>" % new_email()
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/xml"})
    assert assert_problem(reply, 422)["errors"] == [
        {"field": "name", "message": "must be a string, not an element with child elements"}]


def test_an_xml_field_given_twice_is_422(server):
    email = new_email()
    body = "<user><name>A</name><email>%s</email><email>%s</email></user>" % (email, email)
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/xml"})
    assert assert_problem(reply, 422)["errors"][0]["field"] == "email"


def test_an_xml_put_may_repeat_the_id(server):
    user = create(server)
    body = "<user><id>%d</id><name>B</name><email>%s</email></user>" % (user["id"], user["email"])
    reply = call(server, "PUT", "/users/%d" % user["id"], body, {"Content-Type": "text/xml"})
    assert reply.status == 200 and reply.json()["name"] == "B"


def test_xml_patch_changes_only_the_fields_given(server):
    user = create(server)
    reply = call(server, "PATCH", "/users/%d" % user["id"], "<user><name>C</name></user>",
                 {"Content-Type": "application/xml", "Accept": "application/xml"})
    assert reply.status == 200
    assert reply.text() == "<user><id>%d</id><name>C</name><email>%s</email></user>" % (
        user["id"], user["email"])


# -- routes --------------------------------------------------------------------------------

def test_post_is_201_with_location(server):
    reply = call(server, "POST", "/users", {"name": "A", "email": new_email()})
    user = reply.json()
    assert reply.status == 201
    assert reply.headers["Location"] == "/users/%d" % user["id"]
    assert reply.headers["ETag"] == '"1-json"'


def test_get_returns_the_user(server):
    user = create(server)
    reply = call(server, "GET", "/users/%d" % user["id"])
    assert reply.status == 200
    assert reply.json() == user
    assert reply.headers["Content-Length"] == str(len(reply.body))


def test_put_replaces_the_user(server):
    user = create(server)
    email = new_email()
    reply = call(server, "PUT", "/users/%d" % user["id"], {"name": "Grace", "email": email})
    assert reply.status == 200
    assert reply.json() == {"id": user["id"], "name": "Grace", "email": email}
    assert call(server, "GET", "/users/%d" % user["id"]).json() == reply.json()


def test_put_needs_every_field_and_its_422_says_patch_changes_some(server):
    user = create(server)
    reply = call(server, "PUT", "/users/%d" % user["id"], {"name": "Grace"})
    problem = assert_problem(reply, 422)
    assert problem["errors"] == [{"field": "email", "message": "is required"}]
    assert problem["detail"] == ("The user is not valid; see the errors for email. PUT replaces "
                                 "the whole user, so it needs every field; PATCH changes only the "
                                 "fields it sends.")
    reply = call(server, "PUT", "/users/%d" % user["id"], {"name": "", "email": "x@y"})
    assert assert_problem(reply, 422)["detail"] == "The user is not valid; see the errors for name."


def test_put_does_not_create(server):
    reply = call(server, "PUT", "/users/999999", {"name": "A", "email": new_email()})
    assert_problem(reply, 404)


@pytest.mark.parametrize("content_type", ["application/merge-patch+json", "application/json"])
def test_patch_is_a_merge_patch(server, content_type):
    user = create(server)
    reply = call(server, "PATCH", "/users/%d" % user["id"], json.dumps({"name": "Grace"}),
                 {"Content-Type": content_type})
    assert reply.status == 200
    assert reply.json() == dict(user, name="Grace")


def test_patch_cannot_remove_a_field_with_null(server):
    user = create(server)
    reply = call(server, "PATCH", "/users/%d" % user["id"], {"name": None})
    assert assert_problem(reply, 422)["errors"] == [
        {"field": "name", "message": "must be a string, not null"}]


def test_delete_is_200_with_the_user_as_it_was_then_404(server):
    user = create(server)
    reply = call(server, "DELETE", "/users/%d" % user["id"])
    assert reply.status == 200
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert reply.headers["Content-Length"] == str(len(reply.body))
    assert "ETag" not in reply.headers  # that version is gone
    assert reply.json() == user
    assert_problem(call(server, "GET", "/users/%d" % user["id"]), 404)
    assert_problem(call(server, "DELETE", "/users/%d" % user["id"]), 404)


def test_delete_in_xml_answers_the_user_in_xml(server):
    user = create(server)
    reply = call(server, "DELETE", "/users/%d" % user["id"], headers={"Accept": "application/xml"})
    assert reply.status == 200
    assert reply.headers["Content-Type"] == XML_TYPE
    assert reply.text() == "<user><id>%d</id><name>%s</name><email>%s</email></user>" % (
        user["id"], user["name"], user["email"])


@pytest.mark.parametrize("prefer", ["return=minimal", "Return=Minimal", "handling=lenient, return=minimal",
                                    'return="minimal"', 'RETURN = "minimal"; x=1',
                                    'respond-async, wait=5, return=minimal'])
def test_delete_with_prefer_return_minimal_is_204_without_body(server, prefer):
    user = create(server)
    reply = call(server, "DELETE", "/users/%d" % user["id"], headers={"Prefer": prefer})
    assert reply.status == 204
    assert reply.body == b""
    assert reply.headers["Preference-Applied"] == "return=minimal"
    assert "Content-Length" not in reply.headers
    assert_problem(call(server, "GET", "/users/%d" % user["id"]), 404)


def test_prefer_in_a_second_header_field_is_read_too(server):
    user = create(server)
    reply = raw(server, b"DELETE /users/%d HTTP/1.1\r\nHost: localhost\r\nPrefer: handling=lenient"
                        b"\r\nPrefer: return=minimal\r\nConnection: close\r\n\r\n" % user["id"])
    assert reply.startswith(b"HTTP/1.1 204 No Content\r\n")
    assert b"\r\nPreference-Applied: return=minimal\r\n" in reply and reply.endswith(b"\r\n\r\n")


@pytest.mark.parametrize("prefer", ["return=representation", "return=minimalist", "noreturn=minimal",
                                    '"return=minimal"', "handling=return=minimal"])
def test_delete_with_another_preference_answers_the_user(server, prefer):
    user = create(server)
    reply = call(server, "DELETE", "/users/%d" % user["id"], headers={"Prefer": prefer})
    assert reply.status == 200
    assert reply.json() == user
    assert "Preference-Applied" not in reply.headers


@pytest.mark.parametrize("path", ["/users", "/users/{id}", "/"])
def test_head_has_the_headers_of_get_and_no_body(server, path):
    path = path.format(**create(server))  # the user this test made: an earlier test's may be gone
    get = call(server, "GET", path)
    assert get.status == 200
    head = call(server, "HEAD", path)
    assert head.status == 200 and head.body == b""
    for name in ("Content-Type", "Content-Length", "ETag", "X-Total-Count", "Vary"):
        assert head.headers[name] == get.headers[name]


@pytest.mark.parametrize("path, allow", [
    ("/users", "GET, POST, HEAD, OPTIONS"),
    ("/users/1", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("/users/987654321", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("/", "GET, HEAD, OPTIONS"),
])
def test_options_is_204_with_allow(server, path, allow):
    reply = call(server, "OPTIONS", path)
    assert reply.status == 204
    assert reply.headers["Allow"] == allow
    assert reply.body == b"" and "Content-Length" not in reply.headers


@pytest.mark.parametrize("method, path, allow", [
    ("DELETE", "/users", "GET, POST, HEAD, OPTIONS"),
    ("PUT", "/users", "GET, POST, HEAD, OPTIONS"),
    ("POST", "/users/1", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("DELETE", "/", "GET, HEAD, OPTIONS"),
])
def test_a_method_not_on_this_path_is_405_with_allow(server, method, path, allow):
    reply = call(server, method, path)
    assert_problem(reply, 405)
    assert reply.headers["Allow"] == allow


@pytest.mark.parametrize("method", ["TRACE", "BREW", "CONNECT", "PROPFIND"])
def test_a_method_the_service_does_not_know_is_501(server, method):
    assert_problem(call(server, method, "/users"), 501)


@pytest.mark.parametrize("path", ["/nope", "/users/abc", "/users/-1", "/users/01", "/users/0",
                                  "/users/1.0", "/users/99999999999999999999",
                                  "/users/9223372036854775808", "/users//1", "/users/1/x",
                                  "/Users", "/usersX", "/users/%31"])
def test_paths_that_are_not_routes_are_404(server, path):
    assert_problem(call(server, "GET", path), 404)


def test_the_largest_id_is_a_missing_user_not_an_error(server):
    assert_problem(call(server, "GET", "/users/9223372036854775807"), 404)


def test_trailing_slashes_name_the_same_resources(server):
    user = create(server)
    assert call(server, "GET", "/users/").status == 200
    assert call(server, "GET", "/users/%d/" % user["id"]).json() == user


def test_a_query_string_does_not_change_item_routes(server):
    user = create(server)
    assert call(server, "GET", "/users/%d?x=1" % user["id"]).json() == user


def test_the_index_points_to_the_users(server):
    assert call(server, "GET", "/").json() == {"users": "/users"}
    xml = call(server, "GET", "/", headers={"Accept": "application/xml"})
    assert xml.text() == "<index><users>/users</users></index>"


# -- listing -------------------------------------------------------------------------------

LISTED = [("Carol", "carol@example.com"), ("alice", "Alice@example.com"),
          ("Bob", "bob@example.com"), ("Carol", "carol2@example.com"),
          ("Émile", "emile@example.com")]


@pytest.fixture(scope="module", params=SERVER_KINDS)
def listing(request, tmp_path_factory):
    """A server holding exactly LISTED, ids 1 to 5, for read-only list tests."""
    running = start_server(**options_for(request.param, tmp_path_factory))
    for name, email in LISTED:
        create(running, name, email)
    yield running
    stop_server(running)


def ids(reply):
    return [user["id"] for user in reply.json()]


def test_the_list_defaults_to_id_order_and_counts(listing):
    reply = call(listing, "GET", "/users")
    assert ids(reply) == [1, 2, 3, 4, 5]
    assert reply.headers["X-Total-Count"] == "5"
    assert reply.headers["Link"] == ('</users?limit=100&offset=0>; rel="first", '
                                     '</users?limit=100&offset=0>; rel="last"')


@pytest.mark.parametrize("sort, expected", [
    ("id", [1, 2, 3, 4, 5]), ("-id", [5, 4, 3, 2, 1]),
    ("name", [3, 1, 4, 2, 5]), ("-name", [5, 2, 1, 4, 3]),
    ("email", [2, 3, 4, 1, 5]), ("-email", [5, 1, 4, 3, 2]),
])
def test_sorting_compares_code_points_with_ties_by_id(listing, sort, expected):
    assert ids(call(listing, "GET", "/users?sort=" + sort)) == expected


def test_paging_gives_links_that_keep_the_other_parameters(listing):
    reply = call(listing, "GET", "/users?sort=-name&limit=2&offset=2")
    assert ids(reply) == [1, 4]
    assert reply.headers["X-Total-Count"] == "5"
    assert reply.headers["Link"] == ", ".join([
        '</users?sort=-name&limit=2&offset=0>; rel="first"',
        '</users?sort=-name&limit=2&offset=4>; rel="last"',
        '</users?sort=-name&limit=2&offset=0>; rel="prev"',
        '</users?sort=-name&limit=2&offset=4>; rel="next"'])


def test_an_offset_past_the_end_is_an_empty_page(listing):
    reply = call(listing, "GET", "/users?offset=50&limit=10")
    assert reply.status == 200 and reply.json() == []
    assert reply.headers["Link"] == ('</users?limit=10&offset=0>; rel="first", '
                                     '</users?limit=10&offset=0>; rel="last", '
                                     '</users?limit=10&offset=40>; rel="prev"')


def test_the_name_filter_is_exact_and_case_sensitive(listing):
    reply = call(listing, "GET", "/users?name=Carol")
    assert ids(reply) == [1, 4]
    assert reply.headers["X-Total-Count"] == "2"
    assert ids(call(listing, "GET", "/users?name=carol")) == []
    assert ids(call(listing, "GET", "/users?name=Caro")) == []


def test_the_email_filter_ignores_ascii_case(listing):
    assert ids(call(listing, "GET", "/users?email=ALICE@EXAMPLE.COM")) == [2]
    assert ids(call(listing, "GET", "/users?email=alice@example.com&name=alice")) == [2]
    assert ids(call(listing, "GET", "/users?email=alice@example.com&name=Bob")) == []


SEARCHES = [("carol", [1, 4]), ("CAROL", [1, 4]), ("ALICE@", [2]), ("example", [1, 2, 3, 4, 5]),
            ("émile", [5]), ("ÉMILE", [5]), ("2@", [4]), ("%", []), ("_", []), ("zzz", [])]


def test_q_searches_names_and_emails_ignoring_case(listing):
    for q, expected in SEARCHES:
        reply = call(listing, "GET", "/users?q=" + quote(q))
        assert ids(reply) == expected, q
        assert reply.headers["X-Total-Count"] == str(len(expected))


def test_q_combines_with_filters_sorting_and_paging(listing):
    reply = call(listing, "GET", "/users?q=c&name=Carol&sort=-id&limit=1")
    assert ids(reply) == [4]
    assert reply.headers["X-Total-Count"] == "2"
    assert reply.headers["Link"] == (
        '</users?q=c&name=Carol&sort=-id&limit=1&offset=0>; rel="first", '
        '</users?q=c&name=Carol&sort=-id&limit=1&offset=1>; rel="last", '
        '</users?q=c&name=Carol&sort=-id&limit=1&offset=1>; rel="next"')


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_q_folds_case_as_casefold_does_in_both_stores(kind, tmp_path_factory):
    running = start_server(**options_for(kind, tmp_path_factory))
    try:
        for name, email in [("Straße", "s1@example.com"), ("STRASSE", "s2@example.com"),
                            ("Élodie", "e@example.com"), ("Kelvin \u212a", "k@example.com"),
                            ("100% _sure", "p@example.com")]:
            create(running, name, email)
        assert ids(call(running, "GET", "/users?q=strasse")) == [1, 2]
        assert ids(call(running, "GET", "/users?q=" + quote("STRAẞE"))) == [1, 2]
        assert ids(call(running, "GET", "/users?q=%C3%A9LODIE")) == [3]
        assert ids(call(running, "GET", "/users?q=kelvin+k")) == [4]  # K, the Kelvin sign
        assert ids(call(running, "GET", "/users?q=0%25+_")) == [5]  # % and _ are plain text
        assert ids(call(running, "GET", "/users?q=%25")) == [5]
        assert call(running, "GET", "/users?q=").status == 400
    finally:
        stop_server(running)


def test_query_strings_decode_plus_as_space(listing, variant):
    running = start_server(variant)
    try:
        create(running, "Ada Lovelace", "a+b@example.com")
        assert ids(call(running, "GET", "/users?name=Ada+Lovelace")) == [1]
        assert ids(call(running, "GET", "/users?email=a%2Bb@example.com")) == [1]
        link = call(running, "GET", "/users?name=Ada+Lovelace").headers["Link"]
        assert link.startswith('</users?name=Ada+Lovelace&limit=100&offset=0>; rel="first"')
    finally:
        stop_server(running)


BAD_QUERIES = [
    "limit=0", "limit=1001", "limit=+5", "limit=%205", "limit=1_0", "limit=%C2%B2", "limit=5.0",
    "limit=-1", "offset=-1", "offset=x", "limit=", "name=", "limit=1&limit=2", "sort=age",
    "sort=+name", "foo=1", "limit=99999999999999999999999", "name=%FF", "offset=" + "9" * 5000,
    "q=", "q=a&q=b",
]


def test_bad_query_parameters_are_400(listing):
    for query in BAD_QUERIES:
        problem = assert_problem(call(listing, "GET", "/users?" + query), 400)
        assert "query" in problem["detail"] or "sort" in problem["detail"], query


def test_every_unknown_parameter_is_named_once(listing):
    problem = assert_problem(call(listing, "GET", "/users?foo=1&limit=2&bar=10&foo=2"), 400)
    assert problem["detail"] == "Unknown query parameters foo, bar; " + DIALECT_TAKES
    problem = assert_problem(call(listing, "GET", "/users?limit=2&%0A=1"), 400)
    assert problem["detail"] == "Unknown query parameter '\\n'; " + DIALECT_TAKES


def test_jquerys_cache_buster_is_ignored(listing):
    reply = call(listing, "GET", "/users?_=1700000000000&limit=2&_=")
    assert reply.status == 200
    assert ids(reply) == [1, 2]
    assert reply.headers["X-Total-Count"] == "5"
    assert reply.headers["Link"] == call(listing, "GET", "/users?limit=2").headers["Link"]


@pytest.mark.parametrize("query", ["", "&sort=-id", "&sort=name", "&name=Carol", "&email=bob@example.com"])
def test_the_largest_offset_is_an_empty_page(listing, query):
    reply = call(listing, "GET", "/users?limit=1000&offset=9223372036854775807" + query)
    assert reply.status == 200 and reply.json() == []
    assert 'rel="prev"' in reply.headers["Link"] and 'rel="next"' not in reply.headers["Link"]


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_the_page_size_can_be_1000(kind, tmp_path_factory):
    running = start_server(**options_for(kind, tmp_path_factory))
    try:
        for n in range(1001):
            running.store.create({"name": "User %d" % n, "email": "user%d@example.com" % n})
        reply = call(running, "GET", "/users?limit=1000")
    finally:
        stop_server(running)
    assert reply.status == 200
    assert ids(reply) == list(range(1, 1001))
    assert reply.headers["X-Total-Count"] == "1001"
    assert reply.headers["Link"] == ('</users?limit=1000&offset=0>; rel="first", '
                                     '</users?limit=1000&offset=1000>; rel="last", '
                                     '</users?limit=1000&offset=1000>; rel="next"')


# -- the list dialects of front-end libraries -----------------------------------------------
# Each library's requests exactly as it sends them: the method, target and header fields
# were recorded by running ra-data-json-server 5.15.3, ra-data-simple-rest 5.15.3 and
# @refinedev/simple-rest 6.0.1 in Node 20 with fetch (and axios's adapter) replaced by a
# recorder. Each test checks the answer the library reads.

FAKE = [rest_users.User(*rest_users.fake_user(n)) for n in range(1, 26)]  # fake_users=25's
RA_JSON = {"accept": "application/json"}  # react-admin's fetchJson
AXIOS = {"Accept": "application/json, text/plain, */*"}  # refine's axios
DIALECT_TAKES = (
    "the list takes limit, offset, sort, name, email, q, id, FIELD_ne, FIELD_gte, FIELD_lte, "
    "FIELD_like, FIELD:TEST, _start, _end, _limit, _page, _per_page, _sort, _order, range, "
    "filter (FIELD: id, name or email; TEST: eq, ne, lt, lte, gt, gte, in, contains, "
    "startsWith, endsWith). See GET /users in the README.")


@pytest.fixture(scope="module", params=SERVER_KINDS)
def library_server(request, tmp_path_factory):
    """A server holding the 25 fake users, as `--fake-users 25` starts, on each store."""
    running = start_server(fake_users=25, **options_for(request.param, tmp_path_factory))
    yield running
    stop_server(running)


def send(server, method, target, headers, body=None):
    """Send a request with these header fields and no others but Host and Content-Length."""
    connection = connect(server)
    try:
        connection.putrequest(method, target, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body.encode("utf-8") if body is not None else None)
        return Reply(connection.getresponse())
    finally:
        connection.close()


def fake(*numbers):
    return [{"id": n, "name": FAKE[n - 1].name, "email": FAKE[n - 1].email} for n in numbers]


def links(*pairs):
    return ", ".join('</users?%s>; rel="%s"' % (query, rel) for rel, query in pairs)


BY_NAME_DOWN = [13, 22, 14, 18, 12, 5, 24, 16, 17, 25, 8, 23, 3, 2, 6,
                19, 7, 10, 11, 15, 21, 20, 9, 4, 1]


def test_the_fake_users_sorted_by_name_down_are_as_listed():
    assert BY_NAME_DOWN == [user.id for user in sorted(FAKE, key=lambda u: u.name, reverse=True)]


def test_ra_data_json_server_get_list(library_server):
    reply = send(library_server, "GET", "/users?_end=10&_order=ASC&_sort=id&_start=0", RA_JSON)
    assert (reply.status, reply.json()) == (200, fake(*range(1, 11)))
    assert reply.headers["X-Total-Count"] == "25"
    assert reply.headers["Link"] == links(
        ("first", "_order=ASC&_sort=id&limit=10&offset=0"),
        ("last", "_order=ASC&_sort=id&limit=10&offset=20"),
        ("next", "_order=ASC&_sort=id&limit=10&offset=10"))
    assert "Content-Range" not in reply.headers
    reply = send(library_server, "GET", "/users?_end=20&_order=DESC&_sort=name&_start=10", RA_JSON)
    assert (reply.status, reply.json()) == (200, fake(*BY_NAME_DOWN[10:20]))
    assert reply.headers["X-Total-Count"] == "25"
    reply = send(library_server, "GET", "/users?_end=10&_order=ASC&_sort=id&_start=0&q=ada",
                 RA_JSON)
    assert (reply.status, reply.json(), reply.headers["X-Total-Count"]) == (200, fake(1), "1")


def test_ra_data_json_server_get_many_and_get_many_reference(library_server):
    reply = send(library_server, "GET", "/users?id=1&id=3", RA_JSON)
    assert (reply.status, reply.json(), reply.headers["X-Total-Count"]) == (200, fake(1, 3), "2")
    assert reply.headers["Link"] == links(("first", "id=1&id=3&limit=100&offset=0"),
                                          ("last", "id=1&id=3&limit=100&offset=0"))
    reply = send(library_server, "GET",
                 "/users?_end=10&_order=ASC&_sort=id&_start=0&name=Ada%20Lovelace", RA_JSON)
    assert (reply.status, reply.json(), reply.headers["X-Total-Count"]) == (200, fake(1), "1")


def test_ra_data_simple_rest_get_list(library_server):
    reply = send(library_server, "GET", "/users?filter=%7B%7D&range=%5B0%2C9%5D&sort=%5B%22id"
                 "%22%2C%22ASC%22%5D", {"range": "users=0-9"})
    assert (reply.status, reply.json()) == (200, fake(*range(1, 11)))
    assert reply.headers["Content-Range"] == "users 0-9/25"
    assert reply.headers["X-Total-Count"] == "25"
    assert reply.headers["Link"] == links(
        ("first", "filter=%7B%7D&sort=%5B%22id%22%2C%22ASC%22%5D&limit=10&offset=0"),
        ("last", "filter=%7B%7D&sort=%5B%22id%22%2C%22ASC%22%5D&limit=10&offset=20"),
        ("next", "filter=%7B%7D&sort=%5B%22id%22%2C%22ASC%22%5D&limit=10&offset=10"))
    reply = send(library_server, "GET", "/users?filter=%7B%7D&range=%5B10%2C19%5D&sort=%5B%22"
                 "name%22%2C%22DESC%22%5D", {"range": "users=10-19"})
    assert (reply.status, reply.json()) == (200, fake(*BY_NAME_DOWN[10:20]))
    assert reply.headers["Content-Range"] == "users 10-19/25"
    reply = send(library_server, "GET", "/users?filter=%7B%22q%22%3A%22ada%22%7D&range=%5B0%2C9"
                 "%5D&sort=%5B%22id%22%2C%22ASC%22%5D", {"range": "users=0-9"})
    assert (reply.status, reply.json(), reply.headers["Content-Range"]) == (
        200, fake(1), "users 0-0/1")


def test_ra_data_simple_rest_get_many_and_get_many_reference(library_server):
    reply = send(library_server, "GET", "/users?filter=%7B%22id%22%3A%5B1%2C3%5D%7D", RA_JSON)
    assert (reply.status, reply.json(), reply.headers["Content-Range"]) == (
        200, fake(1, 3), "users 0-1/2")
    reply = send(library_server, "GET", "/users?filter=%7B%22name%22%3A%22Ada%20Lovelace%22%7D"
                 "&range=%5B0%2C9%5D&sort=%5B%22id%22%2C%22ASC%22%5D", {"range": "users=0-9"})
    assert (reply.status, reply.json(), reply.headers["Content-Range"]) == (
        200, fake(1), "users 0-0/1")


def test_content_range_names_the_users_sent_or_none(library_server):
    reply = call(library_server, "GET", "/users?range=[20,29]")
    assert (reply.json(), reply.headers["Content-Range"]) == (fake(*range(21, 26)), "users 20-24/25")
    reply = call(library_server, "GET", "/users?range=[30,39]")
    assert (reply.json(), reply.headers["Content-Range"]) == ([], "users */25")
    reply = call(library_server, "GET", "/users?filter=%7B%22name%22%3A%22Nobody%22%7D")
    assert (reply.json(), reply.headers["Content-Range"]) == ([], "users */0")


def test_refine_simple_rest_get_list(library_server):
    reply = send(library_server, "GET", "/users?_end=10&_order=asc&_sort=id&_start=0", AXIOS)
    assert (reply.status, reply.json(), reply.headers["X-Total-Count"]) == (
        200, fake(*range(1, 11)), "25")
    reply = send(library_server, "GET",
                 "/users?_end=20&_order=desc%2Casc&_sort=name%2Cid&_start=10", AXIOS)
    assert (reply.status, reply.json()) == (200, fake(*BY_NAME_DOWN[10:20]))
    assert reply.headers["Link"] == links(
        ("first", "_order=desc%2Casc&_sort=name%2Cid&limit=10&offset=0"),
        ("last", "_order=desc%2Casc&_sort=name%2Cid&limit=10&offset=20"),
        ("prev", "_order=desc%2Casc&_sort=name%2Cid&limit=10&offset=0"),
        ("next", "_order=desc%2Casc&_sort=name%2Cid&limit=10&offset=20"))
    reply = send(library_server, "GET", "/users?_end=10&_order=asc&_sort=id&_start=0&q=ada", AXIOS)
    assert (reply.status, reply.json()) == (200, fake(1))
    reply = send(library_server, "GET", "/users?_end=10&_start=0&id_gte=2&name_like=ada", AXIOS)
    assert (reply.status, reply.json(), reply.headers["X-Total-Count"]) == (200, [], "0")
    reply = send(library_server, "GET", "/users?_end=10&_start=0&id_gte=9&name_like=AN", AXIOS)
    assert (reply.status, reply.json(), reply.headers["X-Total-Count"]) == (
        200, fake(9, 13, 14, 19, 20), "5")
    reply = send(library_server, "GET", "/users?id=1&id=3", AXIOS)
    assert (reply.status, reply.json()) == (200, fake(1, 3))


def test_json_server_1_pages_are_page_objects(library_server):
    reply = call(library_server, "GET", "/users?_page=2&_per_page=10")
    assert (reply.status, reply.headers["Content-Type"]) == (200, JSON_TYPE)
    assert reply.json() == {"first": 1, "prev": 1, "next": 3, "last": 3, "pages": 3,
                            "items": 25, "data": fake(*range(11, 21))}
    assert reply.headers["X-Total-Count"] == "25"
    assert list(reply.json()) == ["first", "prev", "next", "last", "pages", "items", "data"]
    reply = call(library_server, "GET", "/users?_per_page=20&_sort=-name")
    assert reply.json() == {"first": 1, "prev": None, "next": 2, "last": 2, "pages": 2,
                            "items": 25, "data": fake(*BY_NAME_DOWN[:20])}
    reply = call(library_server, "GET", "/users?_page=3&_per_page=10&name:contains=zzz")
    assert reply.json() == {"first": 1, "prev": 2, "next": None, "last": 1, "pages": 1,
                            "items": 0, "data": []}


def test_a_json_server_1_page_in_xml(library_server):
    reply = call(library_server, "GET", "/users?_page=3&_per_page=2&id:lte=6",
                 headers={"Accept": "application/xml"})
    assert (reply.status, reply.headers["Content-Type"]) == (200, XML_TYPE)
    assert reply.text() == (
        "<page><first>1</first><prev>2</prev><next /><last>3</last><pages>3</pages>"
        "<items>6</items><data><user><id>5</id><name>Niklaus McCarthy</name>"
        "<email>niklaus.mccarthy.5@example.com</email></user><user><id>6</id><name>James "
        "Stallman</name><email>james.stallman.6@example.com</email></user></data></page>")


@pytest.mark.parametrize("query, expected, total", [
    ("_page=2", list(range(11, 21)), 25),  # 0.17: a bare list, ten to a page
    ("_page=2&_limit=5", list(range(6, 11)), 25),
    ("_start=22", [23, 24, 25], 25),
    ("_start=3&_limit=2", [4, 5], 25),
    ("_limit=2", [1, 2], 25),
    ("_end=2", [1, 2], 25),
    ("_sort=name&_limit=4", [1, 4, 9, 20], 25),
    ("_sort=name&_order=desc&_limit=3", BY_NAME_DOWN[:3], 25),
    ("_sort=-name&_limit=3", BY_NAME_DOWN[:3], 25),
    ("sort=-name&limit=3", BY_NAME_DOWN[:3], 25),
    ('sort=["name","DESC"]&range=[0,2]', BY_NAME_DOWN[:3], 25),
    ("name:contains=an", [2, 3, 6, 9, 13, 14, 19, 20], None),
    ("name_like=AN", [2, 3, 6, 9, 13, 14, 19, 20], None),
    ("name:startsWith=j", [2, 3, 6, 23], None),
    ("name:endsWith=N", [2, 6, 7, 8, 9, 14], None),
    ("name:lt=C", [1, 4, 9, 20], None),
    ("email:gte=t", [13, 22], None),
    ("email_gte=t&email_lte=u", [22], None),
    ("id:gt=23", [24, 25], None),
    ("id:lt=3", [1, 2], None),
    ("id:gte=9&id:lt=11", [9, 10], None),  # as integers: as text, "10" < "9"
    ("id_gte=24", [24, 25], None),
    ("id_lte=2", [1, 2], None),
    ("id_ne=2&id:lt=4", [1, 3], None),
    ("id:ne=2&id:ne=3&id:lte=4", [1, 4], None),
    ("id:in=3,1,99", [1, 3], None),
    ("id:eq=2", [2], None),
    ("name:in=Ada Lovelace,Joan Backus", [1, 3], None),
    ("name=Ada+Lovelace&name=Joan+Backus", [1, 3], None),
    ("email=ADA.lovelace.1@example.com", [1], None),
    ("email:eq=ADA.lovelace.1@example.com", [1], None),
    ("email_ne=ADA.lovelace.1@example.com&id:lt=3", [2], None),
    ('filter={"id":[3,"1"]}', [1, 3], None),
    ('filter={"id":2,"q":"jean"}', [2], None),
    ('filter={"id":[]}', [], None),
    ("q=ar&id:lt=10", [4, 5, 8], None),
    ("_=1700000000000&id:lt=3&_=", [1, 2], None),
    ("_sort=-name&limit=2&offset=1", BY_NAME_DOWN[1:3], 25),  # paging and sorting may differ
    ("range=[0,1]&_sort=name&_order=desc", BY_NAME_DOWN[:2], 25),
    ('_page=2&_per_page=2&sort=["id","DESC"]', [23, 22], 25),
])
def test_each_dialects_filters_sorts_and_pages(library_server, query, expected, total):
    """total: how many match, when that is not how many are on the page."""
    reply = call(library_server, "GET", "/users?" + query.replace(" ", "%20"))
    assert reply.status == 200, reply.body
    users = reply.json()["data"] if "_per_page" in query else reply.json()
    assert [user["id"] for user in users] == expected
    assert reply.headers["X-Total-Count"] == str(len(expected) if total is None else total)


@pytest.mark.parametrize("query, expected", [
    ("_sort=name&_order=desc", [5, 2, 1, 4, 3]),  # the two Carols (1, 4) by id, either way
    ("_sort=name", [3, 1, 4, 2, 5]),
    ("_sort=name,-id", [3, 4, 1, 2, 5]),
    ("_sort=name,id&_order=desc,desc", [5, 2, 4, 1, 3]),
    ("_sort=name,id&_order=asc", [3, 1, 4, 2, 5]),
    ("sort=name,-id", [3, 4, 1, 2, 5]),
    ("sort=-name,-id", [5, 2, 4, 1, 3]),
    ("sort=email,name", [2, 3, 4, 1, 5]),
    ('sort=["name","desc"]', [5, 2, 1, 4, 3]),
    ("name:gte=C&name:lt=D", [1, 4]),
    ("email_like=ALICE", [2]),
    ("name:eq=carol", []),
    ("email:lt=c", [2, 3]),  # by code point: "Alice@..." < "bob@..." < "c"
])
def test_sort_keys_and_ties_on_the_listing(listing, query, expected):
    reply = call(listing, "GET", "/users?" + query)
    assert reply.status == 200, reply.body
    assert ids(reply) == expected


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_text_tests_fold_case_as_casefold_does_in_both_stores(kind, tmp_path_factory):
    running = start_server(**options_for(kind, tmp_path_factory))
    try:
        for name, email in [("Straße", "s1@example.com"), ("STRASSE", "s2@example.com"),
                            ("100% _sure", "p@example.com"), ("Kelvin \u212a", "k@example.com")]:
            create(running, name, email)
        for query, expected in [("name:contains=strasse", [1, 2]), ("name_like=STRA%C3%9FE", [1, 2]),
                                ("name:startsWith=stra%C3%9F", [1, 2]), ("name:endsWith=SSE", [1, 2]),
                                ("name:endsWith=%25+_sure", [3]), ("name:startsWith=_", []),
                                ("name:endsWith=kelvin+k", [4]), ("name:endsWith=+k", [4]),
                                ("name:endsWith=a+very+long+ending+indeed", [])]:
            assert ids(call(running, "GET", "/users?" + query)) == expected, query
    finally:
        stop_server(running)


def test_following_a_dialects_links_gives_each_page(library_server):
    target, seen = "/users?_sort=-name&_start=0&_end=10&name_like=a", []
    while target:
        reply = call(library_server, "GET", target)
        seen += ids(reply)
        next_link = re.search(r'<([^>]*)>; rel="next"', reply.headers["Link"])
        target = next_link and next_link.group(1)
    assert seen == [n for n in BY_NAME_DOWN if "a" in FAKE[n - 1].name.casefold()]
    reply = call(library_server, "GET", "/users?_page=2&_per_page=10&id:gt=5")
    last = re.search(r'<([^>]*)>; rel="last"', reply.headers["Link"]).group(1)
    assert last == "/users?id%3Agt=5&limit=10&offset=10"
    assert ids(call(library_server, "GET", last)) == list(range(16, 26))


@pytest.mark.parametrize("query, detail", [
    ("limit=3&_start=1", "limit and _start are two ways of paging; use one."),
    ("_start=1&_page=2", "_start and _page are two ways of paging; use one."),
    ("_end=4&_limit=2", "_end and _limit are two ways of paging; use one."),
    ("_page=2&_per_page=5&_limit=5", "_per_page and _limit are two ways of paging; use one."),
    ("range=[0,9]&offset=5", "range and offset are two ways of paging; use one."),
    ("sort=name&_sort=id", "sort and _sort are two ways of sorting; use one."),
    ('_order=desc&sort=["id","ASC"]', "_order and sort are two ways of sorting; use one."),
    ("_order=desc", "_order needs _sort, the keys it orders."),
    ("_start=5&_end=5", "_end must be 1 to 1000 more than _start."),
    ("_start=0&_end=1001", "_end must be 1 to 1000 more than _start."),
    ("_start=x", "The query parameter _start must be a whole number from 0 to "
                 "9223372036854775807, in digits."),
    ("_page=0", "The query parameter _page must be a whole number from 1 to "
                "922337203685477580, in digits."),
    ("_per_page=1001", "The query parameter _per_page must be a whole number from 1 to 1000, "
                       "in digits."),
    ("_sort=age", "_sort takes keys from id, -id, name, -name, email, -email, comma-separated; "
                  "age is not one."),
    ("_sort=name,&_order=asc", "_sort takes keys from id, -id, name, -name, email, -email, "
                               "comma-separated; an empty key is not one."),
    ("_sort=name&_order=up", "_order must be asc or desc for each key of _sort, comma-separated "
                             "(and _sort's keys then have no -), not up."),
    ("_sort=name&_order=asc,desc", "_order must be asc or desc for each key of _sort, "
                                   "comma-separated (and _sort's keys then have no -), not asc,desc."),
    ("_sort=-name&_order=asc", "_order must be asc or desc for each key of _sort, "
                               "comma-separated (and _sort's keys then have no -), not asc."),
    ("range=[5,4]", "range must be [first, last]: whole numbers, first from 0, and 1 to 1000 "
                    "users from first to last."),
    ("range=[0,1000]", "range must be [first, last]: whole numbers, first from 0, and 1 to 1000 "
                       "users from first to last."),
    ("range=[-1,3]", "range must be [first, last]: whole numbers, first from 0, and 1 to 1000 "
                     "users from first to last."),
    ("range=[0.0,3]", "range must be [first, last]: whole numbers, first from 0, and 1 to 1000 "
                      "users from first to last."),
    ("range=[true,3]", "range must be [first, last]: whole numbers, first from 0, and 1 to 1000 "
                       "users from first to last."),
    ("range=0-9", "range must be JSON like [first, last], not 0-9."),
    ("range=[0,1,2]", "range must be JSON like [first, last], not [0,1,2]."),
    ('sort=["age","ASC"]', 'sort must be ["FIELD", "ASC" or "DESC"], FIELD one of id, name, '
                           'email, not ["age","ASC"].'),
    ('sort=["name","UP"]', 'sort must be ["FIELD", "ASC" or "DESC"], FIELD one of id, name, '
                           'email, not ["name","UP"].'),
    ("sort=[NaN,1]", 'sort must be JSON like ["FIELD", "ASC" or "DESC"], not [NaN,1].'),
    ('filter={"age":3}', 'filter must be a JSON object of "q" or a field (id, name, email), with '
                         'a value or a list of values; "age" is not.'),
    ('filter={"name":null}', 'filter must be a JSON object of "q" or a field (id, name, email), '
                             'with a value or a list of values; "name" is not.'),
    ('filter={"name":[["a"]]}', 'filter must be a JSON object of "q" or a field (id, name, email), '
                                'with a value or a list of values; "name" is not.'),
    ("filter=[1]", "filter must be JSON like {\"FIELD\": value, ...}, not [1]."),
    ('filter={"id":"x"}', "filter compares ids: whole numbers from 0 to 9223372036854775807, not x."),
    ('filter={"name":""}', "filter has an empty value."),
    ('q=a&filter={"q":"b"}', "q is given both as q and in filter; give it once."),
    ("id=x", "id compares ids: whole numbers from 0 to 9223372036854775807, not x."),
    ("id:lt=-1", "id:lt compares ids: whole numbers from 0 to 9223372036854775807, not -1."),
    ("id_gte=99999999999999999999", "id_gte compares ids: whole numbers from 0 to "
                                    "9223372036854775807, not 99999999999999999999."),
    ("id:in=1,,2", "id:in has an empty value."),
    ("name:in=a,", "name:in has an empty value."),
    ("_start=1&_start=2", "The query parameter _start is given more than once."),
    ("filter={}&filter={}", "The query parameter filter is given more than once."),
    ("name_like=", "The query parameter name_like is empty."),
])
def test_a_mistake_in_a_dialect_is_a_400_naming_it(library_server, query, detail):
    problem = assert_problem(call(library_server, "GET", "/users?" + query), 400)
    assert problem["detail"] == detail + " See GET /users in the README."


def test_every_unknown_dialect_parameter_is_named(library_server):
    problem = assert_problem(call(library_server, "GET", "/users?foo=1&_limit=2&name_gt=1&foo=2"
                                  "&id_like=1&name:like=a&_embed=x&age:eq=3&id:contains=1"
                                  "&id_lt=3"), 400)
    assert problem["detail"] == ("Unknown query parameters foo, name_gt, id_like, name:like, "
                                 "_embed, age:eq, id:contains, id_lt; " + DIALECT_TAKES)


@pytest.mark.parametrize("kind", SERVER_KINDS)
@pytest.mark.parametrize("library", ["ra-data-json-server", "ra-data-simple-rest", "refine"])
def test_each_librarys_writes(library, kind, tmp_path_factory):
    running = start_server(fake_users=25, **options_for(kind, tmp_path_factory))
    try:
        headers = AXIOS if library == "refine" else RA_JSON
        written = dict(headers, **{"Content-Type": "application/json"})
        reply = send(running, "POST", "/users", written, '{"name":"Zed","email":"zed@example.com"}')
        assert (reply.status, reply.json()) == (
            201, {"id": 26, "name": "Zed", "email": "zed@example.com"})
        method = "PATCH" if library == "refine" else "PUT"
        body = ('{"name":"Ada"}' if library == "refine"
                else '{"id":1,"name":"Ada","email":"ada@example.com"}')
        reply = send(running, method, "/users/1", written, body)
        assert (reply.status, reply.json()["name"]) == (200, "Ada")
        deleting = {"content-type": "text/plain"} if library == "ra-data-simple-rest" else headers
        for n in (2, 3, 4):  # delete, then deleteMany's one request per user
            reply = send(running, "DELETE", "/users/%d" % n, deleting)
            assert (reply.status, reply.headers["Content-Type"], reply.json()) == (
                200, JSON_TYPE, fake(n)[0])
        assert ids(call(running, "GET", "/users?id=2&id=3&id=4&id=5")) == [5]
    finally:
        stop_server(running)


# -- errors: problem details (RFC 9457) ----------------------------------------------------

def test_a_client_preferring_xml_gets_problem_xml(server):
    reply = call(server, "GET", "/users/999999", headers={"Accept": "application/xml"})
    assert_problem(reply, 404, "xml")
    assert reply.text() == (
        '<problem xmlns="urn:ietf:rfc:7807"><type>about:blank</type><title>Not Found</title>'
        "<status>404</status><detail>There is no user with id 999999.</detail></problem>")


def test_a_422_in_xml_lists_errors_as_i_elements(server):
    reply = call(server, "POST", "/users", {"name": "", "email": new_email()},
                 {"Accept": "text/xml"})
    assert_problem(reply, 422, "xml")
    assert ("<errors><i><field>name</field><message>must not be empty or only white space"
            "</message></i></errors></problem>") in reply.text()


def test_a_404_path_is_a_problem(server):
    problem = assert_problem(call(server, "GET", "/nope"), 404)
    assert problem["detail"] == "There is nothing at /nope; the users are at /users."


def test_a_request_line_too_long_is_414_problem(server):
    reply = raw(server, b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 414 ")
    assert b"Content-Type: application/problem+json" in reply
    assert b'"status": 414' in reply


def test_too_many_headers_is_431_problem(server):
    headers = b"".join(b"X-%d: 1\r\n" % n for n in range(101))
    reply = raw(server, b"GET /users HTTP/1.1\r\nHost: localhost\r\n" + headers + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 431 ")
    assert b'"status": 431' in reply


def test_a_header_line_too_long_is_431_problem(server):
    reply = raw(server, b"GET /users HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 431 ")
    assert b"application/problem+json" in reply


def test_exactly_the_header_field_limit_is_accepted(server):
    limit = 99  # http.server's: it counts the blank line among its 100
    headers = b"".join(b"X-%d: 1\r\n" % n for n in range(limit - 2))
    reply = raw(server, b"GET /users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                + headers + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 200 ")
    one_more = (b"GET /users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-1: 1\r\n"
                + headers + b"\r\n")
    reply = raw(server, one_more)
    assert reply.startswith(b"HTTP/1.1 431 ")
    assert reply.endswith(b'"detail": "A request may have at most 99 header fields."}')


def test_header_names_match_in_any_case(server):
    body = json.dumps({"name": "A", "email": new_email()}).encode()
    reply = raw(server, b"POST /users HTTP/1.1\r\nhost: localhost\r\ncontent-TYPE: application/json\r\n"
                        b"CONTENT-LENGTH: %d\r\nconnection: CLOSE\r\n\r\n" % len(body) + body)
    assert reply.startswith(b"HTTP/1.1 201 ")


def test_an_http_1_0_request_is_answered_and_closed(server):
    reply = raw(server, b"GET /users HTTP/1.0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 ")
    assert b"Connection: close" in reply


def test_an_http_1_0_keep_alive_request_keeps_the_connection(server):
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                     b"GET / HTTP/1.0\r\n\r\n")
        reply = sock.makefile("rb").read()
    assert reply.count(b"HTTP/1.1 200 OK\r\n") == 2


def test_expect_100_continue_gets_100_then_the_answer(server):
    body = json.dumps({"name": "A", "email": new_email()}).encode()
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
        sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
                     % len(body))
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(body)
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 201 ")


def test_every_response_has_a_date_and_server_header(server):
    reply = call(server, "GET", "/nope")
    assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", reply.headers["Date"])
    assert reply.headers["Server"] == "rest_users/1.0"


def test_http_2_is_505_problem(server):
    reply = raw(server, b"GET /users HTTP/2.0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 505 ")
    assert b'"status": 505' in reply


@pytest.mark.parametrize("request_line", [b"GET\r\n", b"GET /users HTTP/1.1 extra\r\n",
                                          b"GET /users HTTX/1.1\r\n", b"GET /users\r\n",
                                          b"GET /users HTTP/1.10\r\n", b"GET /users http/1.1\r\n"])
def test_a_malformed_request_line_is_400_problem(server, request_line):
    reply = raw(server, request_line + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"application/problem+json" in reply


def test_a_bug_is_a_500_that_tells_nothing_internal(server, monkeypatch):
    def broken(user_id):
        raise RuntimeError("secret internals")
    monkeypatch.setattr(server.store, "get", broken)
    reply = call(server, "GET", "/users/1")
    problem = assert_problem(reply, 500)
    assert "secret" not in reply.text() and "Traceback" not in reply.text()
    assert problem["detail"] == "The server met an unexpected error; it has been logged."
    monkeypatch.undo()
    assert call(server, "GET", "/users").status == 200  # and it goes on serving


@pytest.mark.parametrize("method, path, headers, body, status", [
    # a stranger learns nothing: 401 before 404, 405, 501 and body errors
    ("GET", "/users/abc", {}, None, 401),
    ("DELETE", "/users", {}, None, 401),
    ("BREW", "/users", {}, None, 401),
    ("POST", "/users", {"Content-Type": "text/plain"}, "x", 401),
    # authenticated: the path, then the method, then the format, then the body
    ("BREW", "/nope", {}, None, 501),
    ("POST", "/nope", {"Authorization": "Bearer " + KEY}, "{", 404),
    ("DELETE", "/users", {"Authorization": "Bearer " + KEY, "Accept": "image/png"}, None, 405),
    ("POST", "/users", {"Authorization": "Bearer " + KEY, "Accept": "image/png",
                        "Content-Type": "text/plain"}, "x", 406),
    ("POST", "/users", {"Authorization": "Bearer " + KEY, "Content-Type": "text/plain"},
     "{", 415),
    ("PUT", "/users/999999", {"Authorization": "Bearer " + KEY,
                              "Content-Type": "application/json"}, "{", 400),
    ("PUT", "/users/999999", {"Authorization": "Bearer " + KEY, "If-Match": '"x"',
                              "Content-Type": "application/json"}, '{"name": 1}', 404),
])
def test_the_first_problem_in_s6_order_answers(auth_server, method, path, headers, body, status):
    reply = call(auth_server, method, path, body, headers)
    assert_problem(reply, status)


def test_a_precondition_comes_before_fields_and_fields_before_uniqueness(server):
    first, second = create(server), create(server)
    path = "/users/%d" % second["id"]
    bad = {"name": "", "email": first["email"]}
    assert_problem(call(server, "PUT", path, bad, {"If-Match": '"9-json"'}), 412)
    assert_problem(call(server, "PUT", path, bad), 422)
    assert_problem(call(server, "PUT", path, dict(bad, name="B")), 409)


def test_content_length_with_transfer_encoding_is_400_and_closes(server):
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"0\r\n\r\nGET /users/1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"Connection: close" in reply
    assert reply.count(b"HTTP/1.1 ") == 1  # what followed was never read as a request


def test_a_chunked_body_is_411_and_closes(server):
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n"
                        b"5\r\n{\"a\":\r\n0\r\n\r\nGET /users/1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 411 ")
    assert b"Connection: close" in reply
    assert reply.count(b"HTTP/1.1 ") == 1


@pytest.mark.parametrize("lengths", [[b"+5"], [b"5 5"], [b"-1"], [b"0x5"], [b"5", b"6"],
                                     [b"5, 5"]])
def test_a_bad_content_length_is_400_and_closes(server, lengths):
    headers = b"".join(b"Content-Length: " + value + b"\r\n" for value in lengths)
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + headers + b"\r\n{}{}{}{}")
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"Connection: close" in reply


def test_the_same_content_length_twice_is_accepted(server):
    body = json.dumps({"name": "A", "email": new_email()}).encode()
    length = b"Content-Length: %d\r\n" % len(body)
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + length + length + b"Connection: close\r\n\r\n" + body)
    assert reply.startswith(b"HTTP/1.1 201 ")


@pytest.fixture(scope="module")
def small_body_server(variant):
    running = start_server(variant, max_body=100)
    yield running
    stop_server(running)


def test_a_body_over_max_body_is_413_without_reading_it(small_body_server):
    with socket.create_connection(("127.0.0.1", small_body_server.server_address[1]),
                                  timeout=5) as sock:
        # Only the headers go out: the server must answer without waiting for 10 MB.
        sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 10000000\r\n\r\n")
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert b"Connection: close" in reply
    assert b'"status": 413' in reply


def test_a_body_at_max_body_is_accepted(small_body_server):
    body = json.dumps({"name": "A" * 40, "email": new_email()})
    body += " " * (100 - len(body))
    reply = call(small_body_server, "POST", "/users", body, {"Content-Type": "application/json"})
    assert reply.status == 201


def test_errors_leave_the_store_unchanged(server):
    user = create(server)
    path = "/users/%d" % user["id"]
    attempts = [("PUT", {"name": "", "email": "x"}), ("PATCH", {"email": "bad"}),
                ("PATCH", {"name": "Z", "id": 12345}), ("PUT", {"name": "Z"}),
                ("PATCH", {"name": "Z", "extra": 1})]
    for method, body in attempts:
        assert call(server, method, path, body).status == 422
    reply = call(server, "GET", path)
    assert reply.json() == user and reply.headers["ETag"] == '"1-json"'


# Requests of every shape a client might get wrong: none of them may produce a 5xx.
BAD_INPUTS = [
    ("POST", "/users", {"Content-Type": "application/json"}, b"\x00\x01\x02"),
    ("POST", "/users", {"Content-Type": "application/json"}, b'{"name": {"a": [1, {}]}}'),
    ("POST", "/users", {"Content-Type": "application/json"}, b'{"\\ud800": 1}'),
    ("POST", "/users", {"Content-Type": "application/json"}, b'{"name": "\\ud800\\udc00"}'),
    ("POST", "/users", {"Content-Type": "application/json"}, b"1e999999"),
    ("POST", "/users", {"Content-Type": "application/json"}, b'{"name": 1e999999}'),
    ("POST", "/users", {"Content-Type": "application/json"}, b"\xef\xbb\xbf{}"),
    ("POST", "/users", {"Content-Type": "application/json"}, b'{"a": "' + b"x" * 5000 + b'"}'),
    ("POST", "/users", {"Content-Type": "application/json", "Accept": "text/xml"},
     b'{"\\u0001": 1}'),
    ("POST", "/users", {"Content-Type": "application/xml"}, b"<user><name>&bogus;</name></user>"),
    ("POST", "/users", {"Content-Type": "application/xml"}, b"<user>" * 10000),
    ("POST", "/users", {"Content-Type": "application/xml"}, b'<user a="1"><name/></user>'),
    ("POST", "/users", {"Content-Type": "application/xml"}, b"<user><id>x</id></user>"),
    ("POST", "/users", {"Content-Type": "application/xml"}, b"<user><name>&#1;</name></user>"),
    ("POST", "/users", {"Content-Type": "application/xml"}, b"<?xml version='1.0' "
                                                            b"encoding='latin-1'?><user/>"),
    ("POST", "/users", {"Content-Type": ";;;="}, b"{}"),
    ("POST", "/users", {"Content-Type": "application/json; charset"}, b"{}"),
    ("PATCH", "/users/1", {"Content-Type": "application/json"}, b'{"id": 99999999999999999999}'),
    ("PATCH", "/users/1", {"Content-Type": "application/xml"},
     b"<user><id>99999999999999999999</id></user>"),
    ("GET", "/users/1", {"If-None-Match": '"""'}, None),
    ("PUT", "/users/1", {"If-Match": "W/", "Content-Type": "application/json"}, b"{}"),
    ("GET", "/users", {"Accept": "application/json;q=abc"}, None),
    ("GET", "/users", {"Accept": ";,/,*/;q=,"}, None),
    ("GET", "/users", {"Accept": "application/json;q=NaN, application/xml;q=inf"}, None),
    ("GET", "/users?%", {}, None),
    ("GET", "/users?limit=%00", {}, None),
    ("GET", "/users?&&&", {}, None),
    ("GET", "/users?sort=%FF%FE", {}, None),
    ("GET", "/%00", {}, None),
    ("GET", "/users", {"Authorization": "Bearer \u00e9"}, None),
]


def test_no_bad_input_produces_a_5xx(server):
    create(server)
    for method, path, headers, body in BAD_INPUTS:
        reply = call(server, method, path, body, headers)
        assert reply.status < 500, (method, path, reply.body)
        assert call(server, "GET", "/users?limit=1").status == 200


@pytest.mark.parametrize("request_bytes", [
    b"GET /users/\xc3\xa9 HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"GET /users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \xff\xfe\r\n\r\n",
    b"GET /users HTTP/1.1\r\nHost: localhost\r\nAccept: \xe9\r\n\r\n",
])
def test_non_ascii_and_odd_bytes_in_the_head_are_not_a_500(server, request_bytes):
    reply = raw(server, request_bytes.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert re.match(rb"HTTP/1\.1 [234]\d\d ", reply), reply


@pytest.mark.parametrize("header_line", [b"no colon here", b"Content-Length : 25",
                                         b" folded: continuation", b"\tX: 1"])
def test_a_malformed_header_line_is_400_and_closes(server, header_line):
    smuggled = b"GET /users/1 HTTP/1.1\r\n\r\n"
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\n" + header_line +
                b"\r\nContent-Type: application/json\r\n\r\n" + smuggled)
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"Connection: close" in reply
    assert reply.count(b"HTTP/1.1 ") == 1


def test_a_deeply_nested_xml_body_is_not_a_500(server):
    body = b"<user><name>" + b"<a>" * 50000 + b"</a>" * 50000 + b"</name></user>"
    reply = call(server, "POST", "/users", body, {"Content-Type": "application/xml"})
    assert reply.status == 422


# -- strict framing, the request target and Host (RFC 9112) ---------------------------------

@pytest.mark.parametrize("padding", [b"\x0b", b"\x0c", b"\xa0", b"\x85", b"\x00"])
def test_a_content_length_padded_with_other_white_space_is_400_and_closes(server, padding):
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\n"
                        b"Content-Type: application/json\r\nContent-Length: " + padding + b"2"
                + padding + b"\r\n\r\n{}GET /users/1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"\r\nConnection: close\r\n" in reply
    assert reply.count(b"HTTP/1.1 ") == 1


def test_a_content_length_with_spaces_and_tabs_around_it_is_read(server):
    body = json.dumps({"name": "A", "email": new_email()}).encode()
    reply = raw(server, b"POST /users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                        b"Content-Type: application/json\r\nContent-Length: \t %d \t\r\n\r\n%s"
                % (len(body), body))
    assert reply.startswith(b"HTTP/1.1 201 Created\r\n")


@pytest.mark.parametrize("value", [b"a\x00b", b"a\rb", b"a\r"])
def test_a_header_value_with_nul_or_cr_is_400_and_closes(server, value):
    reply = raw(server, b"GET /users HTTP/1.1\r\nHost: localhost\r\nX-Odd: " + value +
                b"\r\n\r\nGET /users/1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"\r\nConnection: close\r\n" in reply
    problem = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert problem["detail"] in ("The header X-Odd is malformed or folded.",
                                 "A header line is malformed: each must be Name: value.")
    assert reply.count(b"HTTP/1.1 ") == 1


def test_an_http_1_1_request_without_host_is_400(server):
    reply = raw(server, b"GET /users HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    problem = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert problem["detail"] == "An HTTP/1.1 request needs one Host header (RFC 9112 §3.2)."


def test_two_host_headers_are_400(server):
    reply = raw(server, b"GET /users HTTP/1.1\r\nHost: localhost\r\nHost: 127.0.0.1\r\n"
                        b"Connection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    problem = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert problem["detail"] == "An HTTP/1.1 request needs one Host header (RFC 9112 §3.2)."


def test_the_same_header_line_sent_twice_is_two_fields(server):
    # the default server keeps the header lines that passed its checks: each still counts
    alone = b"GET /users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    assert raw(server, alone).startswith(b"HTTP/1.1 200 OK\r\n")
    reply = raw(server, alone.replace(b"Host: localhost\r\n", b"Host: localhost\r\n" * 2))
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    problem = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert problem["detail"] == "An HTTP/1.1 request needs one Host header (RFC 9112 §3.2)."


def test_a_header_line_that_passed_before_is_refused_when_a_folded_line_follows(server):
    head = b"GET /users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Seen: %d\r\n" % (
        next(numbers))
    assert raw(server, head + b"\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
    reply = raw(server, head + b" folded\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    problem = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert problem["detail"] == "The header X-Seen is malformed or folded."


def test_an_http_1_0_request_needs_no_host(server):
    assert raw(server, b"GET /users HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")


@pytest.mark.parametrize("target", [b"http://localhost/users/1", b"HTTP://127.0.0.1:8000/users/1?x=1",
                                    b"https://[::1]/users/1"])
def test_an_absolute_form_target_is_routed_by_its_path(server, target):
    user = create(server)
    target = target.replace(b"/users/1", b"/users/%d" % user["id"])
    reply = raw(server, b"GET " + target + b" HTTP/1.1\r\nHost: evil.example\r\n"
                                           b"Connection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1]) == user


LOCAL_HOSTS = [b"127.0.0.1", b"127.0.0.1:8000", b"10.1.2.3:80", b"[::1]:8000", b"[::1]",
               b"localhost", b"LocalHost:8000", b"app.localhost", b"a.b.localhost:1"]


def test_local_hosts_are_served(auth_server):
    for host in LOCAL_HOSTS:
        reply = raw(auth_server, b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 200 OK\r\n"), host


MISDIRECTED = ("This server answers for localhost and IP addresses only, not for %s; start it "
               "with --allow-host %s to answer for that name (a guard against DNS rebinding).")


@pytest.mark.parametrize("host, name", [
    (b"evil.example", "evil.example"), (b"evil.example:8000", "evil.example"),
    (b"localhost.evil.example", "localhost.evil.example"), (b"127.0.0.1.nip.io", "127.0.0.1.nip.io"),
    (b"xlocalhost", "xlocalhost"), (b"", "''"), (b"a b", "'a b'"),
])
def test_other_hosts_are_421_before_anything_else(server, host, name):
    reply = raw(server, b"POST /nope HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n"
                        b"Content-Length: 2\r\n\r\n{}")
    assert reply.startswith(b"HTTP/1.1 421 Misdirected Request\r\n")
    assert b"\r\nContent-Type: application/problem+json\r\n" in reply
    problem = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert problem == {"type": "about:blank", "title": reason_phrase(421), "status": 421,
                       "detail": MISDIRECTED % (name, name if name[0] != "'" else "NAME")}


def test_an_absolute_form_authority_is_checked_and_not_the_host_header(server):
    reply = raw(server, b"GET http://evil.example/users HTTP/1.1\r\nHost: localhost\r\n"
                        b"Connection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 421 Misdirected Request\r\n")


def test_the_host_check_comes_before_the_key(auth_server):
    reply = raw(auth_server, b"GET /users HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 421 ")
    for path in (b"/", b"/openapi.json"):
        reply = raw(auth_server, b"GET " + path + b" HTTP/1.1\r\nHost: evil.example\r\n"
                                                  b"Connection: close\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 421 ")


@pytest.mark.parametrize("allowed, host, status", [
    (["api.example"], b"api.example", 200), (["API.example"], b"api.EXAMPLE:443", 200),
    (["api.example"], b"other.example", 421), (["api.example"], b"localhost", 200),
    (["*"], b"anything.example", 200),
])
def test_allow_host_names_more_hosts(allowed, host, status, variant):
    running = start_server(variant, allow_host=allowed)
    try:
        reply = raw(running, b"GET /users HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
    finally:
        stop_server(running)
    assert reply.startswith(b"HTTP/1.1 %d " % status)


def test_a_host_answer_is_kept_per_server_and_asked_again_gives_the_same(server, variant):
    allowing = start_server(variant, allow_host=["api.example"])
    try:
        for _ in range(2):  # the second answer comes from the Host check's cache
            for running, status in ((allowing, 200), (server, 421), (allowing, 200)):
                reply = raw(running, b"GET /users HTTP/1.1\r\nHost: api.example\r\n"
                                     b"Connection: close\r\n\r\n")
                assert reply.startswith(b"HTTP/1.1 %d " % status)
    finally:
        stop_server(allowing)


def test_allow_host_is_repeatable_on_the_command_line():
    options = rest_users.parse_arguments(["--allow-host", "a.example", "--allow-host", "b.example"])
    assert options.allow_host == ["a.example", "b.example"]


# -- stalls, resets and Expect ------------------------------------------------------------

STALLS = {
    "idle": b"",
    "request line": b"GET /us",
    "headers": b"GET /users HTTP/1.1\r\nHost: localhost\r\nAcc",
    "body": b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 40\r\n\r\n{\"name\": ",
    "unread body": b"POST /nope HTTP/1.1\r\nHost: localhost\r\nContent-Length: 40\r\n\r\n{",
}


def stall_and_reset(server, results):
    """Open a connection per kind of stall, and one reset mid-body; collect what comes back."""

    def stall(kind, data):
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
            sock.sendall(data)
            results[kind] = sock.makefile("rb").read()

    def reset():
        sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5)
        sock.sendall(STALLS["body"])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # an RST: the client is gone mid-body

    threads = [threading.Thread(target=stall, args=item) for item in STALLS.items()]
    threads.append(threading.Thread(target=reset))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.fixture(scope="module")
def stalled(variant):
    """What a server with a 0.2 s timeout sends to stalled requests and logs, with and
    without --quiet: the stalls run side by side, so all of this takes about 0.2 s."""
    results = {}
    servers = {quiet: start_server(variant, timeout=0.2, quiet=quiet) for quiet in (False, True)}
    logged = io.StringIO()
    with contextlib.redirect_stderr(logged):
        threads = [threading.Thread(target=stall_and_reset, args=(server, results.setdefault(quiet, {})))
                   for quiet, server in servers.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for server in servers.values():
            stop_server(server)
    yield results, logged.getvalue()


TIMED_OUT = (b'{"type": "about:blank", "title": "Request Timeout", "status": 408, "detail": '
             b'"The request stopped arriving: nothing came for 0.2 seconds."}')


@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("kind", ["request line", "headers", "body", "unread body"])
def test_a_request_that_stalls_gets_408_and_is_closed(stalled, quiet, kind):
    reply = stalled[0][quiet][kind]
    head, body = reply.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"\r\nConnection: close" in head
    assert b"\r\nContent-Type: application/problem+json" in head
    assert body == TIMED_OUT


@pytest.mark.parametrize("quiet", [False, True])
def test_an_idle_connection_is_closed_without_a_word(stalled, quiet):
    assert stalled[0][quiet]["idle"] == b""


def test_stalls_and_resets_log_one_line_each_and_no_traceback(stalled):
    log = stalled[1]
    assert "Traceback" not in log
    assert " 500 " not in log
    assert log.count('" 408 ') == 4  # the 408s of the server that is not quiet
    assert log.count("connection lost") == 1
    assert "timed out" not in log
    assert len(log.splitlines()) == 5


def test_a_body_too_large_with_expect_100_continue_gets_413_at_once(server):
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
        sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 2000000\r\nExpect: 100-continue\r\n\r\n")
        reply = sock.makefile("rb").read()  # no body sent: the server answers and closes
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert b"100 Continue" not in reply
    assert b"\r\nConnection: close\r\n" in reply


def test_an_early_refusal_with_expect_100_continue_sends_no_100(auth_server):
    with socket.create_connection(("127.0.0.1", auth_server.server_address[1]), timeout=5) as sock:
        sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 20\r\nExpect: 100-continue\r\n\r\n")
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 401 ")
    assert b"100 Continue" not in reply
    assert b"\r\nConnection: close\r\n" in reply


# -- authentication ------------------------------------------------------------------------

@pytest.mark.parametrize("authorization", [None, "", "Basic dXNlcjpwYXNz", "Bearer",
                                           "Bearer ", "Bearer a b", "Token " + KEY])
def test_a_missing_or_malformed_authorization_is_401(auth_server, authorization):
    headers = {"Authorization": authorization} if authorization is not None else {}
    reply = call(auth_server, "GET", "/users", headers=headers)
    assert_problem(reply, 401)
    assert reply.headers["WWW-Authenticate"] == 'Bearer realm="users"'


@pytest.mark.parametrize("token", [KEY + "x", KEY[:-1], "x", KEY.upper(), "é"])
def test_a_wrong_token_is_401_invalid_token(auth_server, token):
    reply = call(auth_server, "GET", "/users", headers={"Authorization": "Bearer " + token})
    assert_problem(reply, 401)
    assert reply.headers["WWW-Authenticate"] == 'Bearer realm="users", error="invalid_token"'


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_the_key_opens_the_users_with_any_case_of_bearer(auth_server, scheme):
    headers = {"Authorization": scheme + " " + KEY}
    reply = call(auth_server, "POST", "/users", {"name": "A", "email": new_email()}, headers)
    assert reply.status == 201
    assert call(auth_server, "GET", reply.headers["Location"], headers=headers).status == 200


@pytest.mark.parametrize("method, path", [("GET", "/users/1"), ("DELETE", "/users/1"),
                                          ("GET", "/users/x/y"), ("PATCH", "/users"),
                                          ("HEAD", "/users")])
def test_every_users_path_and_method_needs_the_key(auth_server, method, path):
    reply = call(auth_server, method, path)
    assert reply.status == 401
    assert KEY not in reply.text() and KEY not in str(reply.headers)


@pytest.mark.parametrize("method, path, status", [("GET", "/", 200), ("OPTIONS", "/users", 204),
                                                  ("OPTIONS", "/users/1", 204),
                                                  ("GET", "/usersX", 404), ("GET", "/x", 404)])
def test_paths_outside_users_and_options_stay_open(auth_server, method, path, status):
    assert call(auth_server, method, path).status == status


def test_the_key_never_appears_in_the_log(capfd, variant):
    running = start_server(variant, api_key=KEY, quiet=False)
    try:
        call(running, "GET", "/users", headers={"Authorization": "Bearer " + KEY})
        call(running, "GET", "/users", headers={"Authorization": "Bearer wrong"})
    finally:
        stop_server(running)
    err = capfd.readouterr().err
    assert '"GET /users HTTP/1.1" 200' in err and '"GET /users HTTP/1.1" 401' in err
    assert KEY not in err


# -- versions and conditional requests -----------------------------------------------------

def test_etags_differ_by_format_and_change_with_the_user(server):
    user = create(server)
    path = "/users/%d" % user["id"]
    json_tag = call(server, "GET", path).headers["ETag"]
    xml_tag = call(server, "GET", path, headers={"Accept": "application/xml"}).headers["ETag"]
    assert (json_tag, xml_tag) == ('"1-json"', '"1-xml"')
    changed = call(server, "PATCH", path, {"name": "Grace"})
    assert changed.headers["ETag"] == '"2-json"'
    assert call(server, "GET", path).headers["ETag"] == '"2-json"'


@pytest.mark.parametrize("if_none_match", ['"1-json"', 'W/"1-json"', '"x", "1-json"', "*"])
def test_if_none_match_gives_304_without_body(server, if_none_match):
    user = create(server)
    reply = call(server, "GET", "/users/%d" % user["id"], headers={"If-None-Match": if_none_match})
    assert reply.status == 304
    assert reply.body == b""
    assert reply.headers["ETag"] == '"1-json"'
    assert reply.headers["Vary"] == "Accept, Origin"
    assert "Content-Length" not in reply.headers


def test_if_none_match_with_another_tag_gives_200(server):
    user = create(server)
    reply = call(server, "GET", "/users/%d" % user["id"],
                 headers={"If-None-Match": '"1-xml"'})
    assert reply.status == 200 and reply.json() == user


def test_head_with_if_none_match_gives_304(server):
    user = create(server)
    reply = call(server, "HEAD", "/users/%d" % user["id"], headers={"If-None-Match": '"1-json"'})
    assert reply.status == 304


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_if_match_with_a_stale_tag_is_412_and_changes_nothing(server, method):
    user = create(server)
    path = "/users/%d" % user["id"]
    call(server, "PATCH", path, {"name": "Changed"})
    body = {"name": "Mine", "email": user["email"]} if method != "DELETE" else None
    reply = call(server, method, path, body, {"If-Match": '"1-json"'})
    assert_problem(reply, 412)
    assert call(server, "GET", path).json()["name"] == "Changed"


@pytest.mark.parametrize("if_match", ['"1-json"', "*", '"0-json", "1-json"'])
def test_if_match_with_the_current_tag_writes(server, if_match):
    user = create(server)
    reply = call(server, "PUT", "/users/%d" % user["id"],
                 {"name": "B", "email": user["email"]}, {"If-Match": if_match})
    assert reply.status == 200 and reply.headers["ETag"] == '"2-json"'


@pytest.mark.parametrize("accept, if_match, detail", [
    (None, '"1-json"', "The user has changed since you read it (If-Match does not name its "
                       "current ETag); GET it again and retry."),
    (None, "2-json", 'ETags are quoted: send If-Match: "2-json", with the quotes, as the ETag '
                     'header gave it.'),
    (None, "", "If-Match is empty: send the ETag a GET gave, with its quotes, or leave the "
               "header out."),
    (None, '"2-xml"', 'If-Match names "2-xml", a tag of the XML representation, and this '
                      'request asks for JSON: each format has its own ETag, so send the one a '
                      'GET in JSON gave.'),
    ("application/xml", '"2-json"', 'If-Match names "2-json", a tag of the JSON representation, '
                                    'and this request asks for XML: each format has its own '
                                    'ETag, so send the one a GET in XML gave.'),
])
def test_a_412_says_what_is_wrong_with_if_match(server, accept, if_match, detail):
    user = create(server)
    path = "/users/%d" % user["id"]
    call(server, "PATCH", path, {"name": "Changed"})  # now at version 2
    headers = dict({"If-Match": if_match}, **({"Accept": accept} if accept else {}))
    reply = call(server, "DELETE", path, headers=headers)
    assert assert_problem(reply, 412, "xml" if accept else "json")["detail"] == detail
    assert call(server, "GET", path).status == 200


def test_if_match_never_matches_a_weak_tag(server):
    user = create(server)
    reply = call(server, "DELETE", "/users/%d" % user["id"], headers={"If-Match": 'W/"1-json"'})
    assert_problem(reply, 412)


def test_if_match_compares_with_the_negotiated_format(server):
    user = create(server)
    path = "/users/%d" % user["id"]
    headers = {"Accept": "application/xml", "If-Match": '"1-xml"'}
    reply = call(server, "PATCH", path, "<user><name>X</name></user>",
                 dict(headers, **{"Content-Type": "application/xml"}))
    assert reply.status == 200 and reply.headers["ETag"] == '"2-xml"'
    assert_problem(call(server, "DELETE", path, headers={"If-Match": '"2-xml"'}), 412)


def test_if_match_on_a_missing_user_is_404(server):
    reply = call(server, "DELETE", "/users/999999", headers={"If-Match": "*"})
    assert_problem(reply, 404)


def test_two_writers_with_the_same_tag_one_wins_one_gets_412(server):
    user = create(server)
    path = "/users/%d" % user["id"]
    statuses = []
    barrier = threading.Barrier(8)

    def write(n):
        barrier.wait()
        reply = call(server, "PUT", path, {"name": "Writer %d" % n, "email": user["email"]},
                     {"If-Match": '"1-json"'})
        statuses.append(reply.status)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [412] * 7
    assert call(server, "GET", path).headers["ETag"] == '"2-json"'


# -- failures on demand (--fail-rate) -------------------------------------------------------

@pytest.fixture(scope="module")
def always_failing(variant):
    running = start_server(variant, fail_rate=1.0, api_key=KEY)
    yield running
    stop_server(running)


BEARER = {"Authorization": "Bearer " + KEY}


@pytest.mark.parametrize("method, path", [("GET", "/users"), ("POST", "/users"),
                                          ("GET", "/users/1"), ("DELETE", "/users/1"),
                                          ("TRACE", "/users"), ("GET", "/users/abc")])
def test_fail_rate_answers_503_with_retry_after(always_failing, method, path):
    reply = call(always_failing, method, path, {"name": "A", "email": new_email()}
                 if method == "POST" else None, BEARER)
    problem = assert_problem(reply, 503)
    assert reply.headers["Retry-After"] == "1"
    assert problem["detail"] == ("This failure was asked for: the server runs with --fail-rate "
                                 "1.0. Try again.")


def test_fail_rate_comes_after_authentication(always_failing):
    assert_problem(call(always_failing, "GET", "/users"), 401)
    assert_problem(call(always_failing, "TRACE", "/users"), 401)


@pytest.mark.parametrize("method, path, status", [("GET", "/", 200), ("GET", "/openapi.json", 200),
                                                  ("OPTIONS", "/users", 204)])
def test_fail_rate_spares_the_index_the_document_and_options(always_failing, method, path, status):
    assert call(always_failing, method, path).status == status


def test_a_failed_request_changes_nothing(always_failing):
    assert call(always_failing, "POST", "/users", {"name": "A", "email": new_email()},
                BEARER).status == 503
    assert always_failing.store.list(rest_users.ListQuery(10, 0, ("id",), (), None)) == (0, [])


def test_fail_rate_fails_about_that_share_of_requests(variant):
    running = start_server(variant, fail_rate=0.5)
    connection = connect(running)  # one connection: http.client opens another if one closes
    try:
        statuses = []
        for _ in range(200):
            connection.request("GET", "/users")
            statuses.append(Reply(connection.getresponse()).status)
    finally:
        connection.close()
        stop_server(running)
    assert set(statuses) == {200, 503}
    assert 60 <= statuses.count(503) <= 140


def test_fail_rate_with_db_never_loses_or_duplicates_a_write(tmp_path, variant):
    running = start_server(variant, fail_rate=0.5, db=str(tmp_path / "u.db"))
    try:
        answers = {}
        for n in range(60):
            email = "fail%d@example.com" % n
            answers[email] = call(running, "POST", "/users", {"name": "F", "email": email}).status
        total, users = running.store.list(rest_users.ListQuery(1000, 0, ("id",), (), None))
    finally:
        stop_server(running)
    assert set(answers.values()) == {201, 503}
    assert sorted(rest_users.User(*user).email for user in users) == sorted(
        email for email, status in answers.items() if status == 201)
    assert total == len(users)


def test_make_server_refuses_a_fail_rate_outside_0_to_1():
    with pytest.raises(ValueError):
        rest_users.make_server("127.0.0.1", 0, fail_rate=1.5)


@pytest.mark.parametrize("value", ["-0.1", "1.01", "x", "nan"])
def test_a_bad_fail_rate_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exited:
        rest_users.parse_arguments(["--fail-rate", value])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("usage: ") and "--fail-rate: must be a number from 0 to 1" in stderr


# -- a fake API: --delay, --fake-users, --load and running() --------------------------------

EVERYONE = rest_users.ListQuery(1000000, 0, ("id",), (), None)


def timed_call(server, method, path, body=None, headers=None):
    """call() and the seconds it took."""
    started = time.monotonic()
    reply = call(server, method, path, body, headers)
    return reply, time.monotonic() - started


def side_by_side(*calls):
    """Run the calls each in its own thread, and return their results in order."""
    results = [None] * len(calls)

    def run(index, function, *arguments):
        results[index] = function(*arguments)

    threads = [threading.Thread(target=run, args=(index,) + tuple(function_and_arguments))
               for index, function_and_arguments in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def post_and_see_when_applied(server):
    """POST a user on a raw socket: when the store has added it, and when its answer comes.
    (The server's store is watched from here on.)"""
    added, create = threading.Event(), server.store.create

    def create_and_tell(fields, **options):
        user = create(fields, **options)
        added.set()
        return user

    server.store.create = create_and_tell
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
        body = json.dumps({"name": "Slow", "email": new_email()}).encode()
        sent = time.monotonic()  # before it goes: the answer cannot come sooner than DELAY after
        sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        assert added.wait(5)
        applied = time.monotonic() - sent
        reply = sock.recv(65536)
        return reply, applied, time.monotonic() - sent


DELAY = 0.6  # seconds: far longer than any answer takes here, even on a machine under load
DELAYED = [("GET", "/users", 200), ("GET", "/users/99", 404), ("DELETE", "/users", 405)]
NOT_DELAYED = [("GET", "/", 200), ("GET", "/openapi.json", 200), ("OPTIONS", "/users", 204)]


@pytest.fixture(scope="module")
def delayed(variant):
    """What a server with --delay DELAY answers to requests sent side by side, so that all of
    them together wait DELAY once: replies, seconds taken, and the whole run's seconds."""
    running = start_server(variant, delay=int(DELAY * 1000))
    started = time.monotonic()
    try:
        results = side_by_side(*[(timed_call, running, method, path)
                                 for method, path, _ in DELAYED + NOT_DELAYED],
                               (post_and_see_when_applied, running))
    finally:
        stop_server(running)
    yield results, time.monotonic() - started


def test_delay_holds_back_every_users_answer(delayed):
    for (method, path, status), (reply, seconds) in zip(DELAYED, delayed[0]):
        assert reply.status == status
        assert DELAY <= seconds < 2


def test_delay_spares_the_index_the_document_and_options(delayed):
    for (method, path, status), (reply, seconds) in zip(NOT_DELAYED, delayed[0][len(DELAYED):]):
        assert reply.status == status
        assert seconds < DELAY


def test_a_delayed_answer_holds_up_no_other_request(delayed):
    assert delayed[1] < len(DELAYED) * DELAY  # the waits ran side by side, not one after another


def test_a_delayed_write_is_applied_before_the_wait(delayed):
    reply, applied, answered = delayed[0][-1]
    assert reply.startswith(b"HTTP/1.1 201 Created\r\n")
    assert applied < DELAY <= answered


def test_a_delay_range_waits_a_random_time_in_it(variant):
    running = start_server(variant, delay=(100, 150))
    try:
        waits = side_by_side(*[(timed_call, running, "GET", "/users")] * 3)
    finally:
        stop_server(running)
    assert all(reply.status == 200 and 0.1 <= wait < 1 for reply, wait in waits)


@pytest.mark.parametrize("value, expected", [("300", (300, 300)), ("0", (0, 0)),
                                             ("100-500", (100, 500)), ("60000", (60000, 60000))])
def test_delay_takes_milliseconds_or_a_range(value, expected):
    assert rest_users.parse_arguments(["--delay", value]).delay == expected


@pytest.mark.parametrize("value", ["-1", "60001", "500-100", "1.5", "x", "1-2-3", "", "100-"])
def test_a_bad_delay_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exited:
        rest_users.parse_arguments(["--delay", value])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("usage: ") and ("--delay/-d: must be milliseconds from 0 to 60000, "
                                             "or MIN-MAX, not %r" % value) in stderr


@pytest.mark.parametrize("options", [{"delay": -1}, {"delay": 60001}, {"delay": (5, 1)},
                                     {"fake_users": -1}, {"fake_users": 1000001}])
def test_make_server_refuses_fake_api_values_out_of_range(options):
    with pytest.raises(ValueError):
        rest_users.make_server("127.0.0.1", 0, **options)


def fake_users(count, **options):
    server = rest_users.make_server("127.0.0.1", 0, fake_users=count, **options)
    try:
        return [rest_users.User(*user) for user in server.store.list(EVERYONE)[1]]
    finally:
        server.server_close()


def test_fake_users_are_the_same_on_every_run_and_valid():
    users = fake_users(500)
    assert users == fake_users(500)
    assert [user.id for user in users] == list(range(1, 501))
    assert users[0] == rest_users.User(1, "Ada Lovelace", "ada.lovelace.1@example.com", 1)
    for user in users:
        assert rest_users.validate_user([("name", user.name), ("email", user.email)]) == {
            "name": user.name, "email": user.email}
        given, family = user.name.lower().split(" ")
        assert user.email == "%s.%s.%d@example.com" % (given, family, user.id)
    assert len({user.name for user in users}) == 500  # names differ, not just emails
    assert len({user.email for user in users}) == 500


def test_fake_users_beyond_the_name_pairs_get_a_middle_initial_and_stay_distinct():
    users = fake_users(10000)
    names = [user.name for user in users]
    assert len(set(names)) == 10000
    assert re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", names[4095])
    assert re.fullmatch(r"[A-Z][a-z]+ A\. [A-Z][a-z]+", names[4096])


def test_new_users_come_after_the_fake_ones():
    with rest_users.running(fake_users=3) as base_url:
        reply = http_request(base_url, "POST", "/users", {"name": "New", "email": new_email()})
    assert reply.status == 201 and reply.json()["id"] == 4


def test_fake_users_with_db_are_added_only_to_a_file_without_users(tmp_path):
    db = str(tmp_path / "u.db")
    assert len(fake_users(5, db=db)) == 5
    assert len(fake_users(7, db=db)) == 5  # the file holds users: left as it is
    empty = str(tmp_path / "empty.db")
    rest_users.make_server("127.0.0.1", 0, db=empty).server_close()
    assert len(fake_users(7, db=empty)) == 7


def write_users_file(tmp_path, content):
    path = tmp_path / "users.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return str(path)


def test_load_starts_with_the_users_in_the_file(tmp_path):
    path = write_users_file(tmp_path, [{"name": "Ada", "email": "ada@example.com"},
                                       {"id": 7, "name": "Grace", "email": "grace@example.com"},
                                       {"email": "alan@example.com", "name": "Alan"}])
    server = rest_users.make_server("127.0.0.1", 0, load=path)
    try:
        assert server.store.list(EVERYONE)[1] == [
            rest_users.User(7, "Grace", "grace@example.com", 1),
            rest_users.User(8, "Ada", "ada@example.com", 1),
            rest_users.User(9, "Alan", "alan@example.com", 1)]
        assert server.store.create({"name": "Next", "email": "next@example.com"}).id == 10
    finally:
        server.server_close()


def test_load_with_db_happens_only_when_the_file_holds_no_users(tmp_path):
    db = str(tmp_path / "u.db")
    path = write_users_file(tmp_path, [{"name": "Ada", "email": "ada@example.com"}])
    for _ in range(2):
        server = rest_users.make_server("127.0.0.1", 0, db=db, load=path)
        total = server.store.list(EVERYONE)[0]
        server.server_close()
        assert total == 1
    server = rest_users.make_server("127.0.0.1", 0, db=db)
    try:
        assert server.store.create({"name": "Next", "email": "next@example.com"}).id == 2
    finally:
        server.server_close()


BAD_LOAD_FILES = [
    (b"\xff[]", "users.json: is not UTF-8 text"),
    ({"name": "A", "email": "a@x"}, "users.json: name: is a string, not an array of items or an object"),
    ([["A", "a@x"]], "users.json: user 1 of 1: must be an object with name, email and "
                     "optionally id"),
    ([{"name": "A", "email": "a@x"}, {"name": "", "email": "b"}],
     "users.json: user 2 of 2: name must not be empty or only white space; email must have one @ "
     "with text on both sides, like ada@example.com"),
    ([{"name": "A", "email": "a@x", "age": 3}],
     "users.json: user 1 of 1: age is not a field of a user; the fields are name and email"),
    ([{"name": "A", "email": "a@x"}, {"name": "B", "email": "A@X"}],
     "users.json: user 2 of 2: the email A@X is user 1's too (compared ignoring case)"),
    ([{"id": 3, "name": "A", "email": "a@x"}, {"id": 3, "name": "B", "email": "b@x"}],
     "users.json: user 2 of 2: the id 3 is user 1's too"),
    ([{"id": 0, "name": "A", "email": "a@x"}],
     "users.json: user 1 of 1: id must be a whole number from 1 to 9223372036854775807"),
    ([{"id": "1", "name": "A", "email": "a@x"}],
     "users.json: user 1 of 1: id must be a whole number from 1 to 9223372036854775807"),
    ([{"id": True, "name": "A", "email": "a@x"}],
     "users.json: user 1 of 1: id must be a whole number from 1 to 9223372036854775807"),
    (b'[{"id": 1, "id": 2, "name": "A", "email": "a@x"}]',
     "users.json: user 1 of 1: id is given more than once"),
]


@pytest.mark.parametrize("content, message", BAD_LOAD_FILES)
def test_a_bad_load_file_loads_nothing_and_names_the_entry(tmp_path, content, message):
    path = write_users_file(tmp_path, content)
    db = str(tmp_path / "u.db")
    with pytest.raises(ValueError) as raised:
        rest_users.make_server("127.0.0.1", 0, load=path, db=db)
    assert str(raised.value) == message.replace("users.json", path)
    assert not os.path.exists(db)  # refused before the database is opened


def test_a_load_file_that_is_not_json_is_refused(tmp_path):
    path = write_users_file(tmp_path, b'[{"name": "A",')
    with pytest.raises(ValueError) as raised:
        rest_users.make_server("127.0.0.1", 0, load=path)
    # the rest is json's own message, which differs between interpreters
    assert str(raised.value).startswith(
        path + ": is not a JSON array of users or object of resources: ")


def test_a_missing_load_file_is_refused(tmp_path):
    path = str(tmp_path / "nowhere.json")
    with pytest.raises(ValueError) as raised:
        rest_users.make_server("127.0.0.1", 0, load=path)
    assert str(raised.value).startswith(path + ": cannot be read: ")


def test_a_loaded_email_that_a_fake_user_would_have_is_refused(tmp_path):
    path = write_users_file(tmp_path, [{"name": "A", "email": "jean.shannon.2@example.com"}])
    with pytest.raises(ValueError) as raised:
        rest_users.make_server("127.0.0.1", 0, load=path, fake_users=3)
    assert str(raised.value) == "the loaded email jean.shannon.2@example.com is fake user 2's too"


def test_load_and_fake_users_together_number_the_fakes_after_the_loaded(tmp_path):
    path = write_users_file(tmp_path, [{"id": 5, "name": "Ada", "email": "ada@example.com"}])
    server = rest_users.make_server("127.0.0.1", 0, load=path, fake_users=2)
    try:
        assert [user.id for user in server.store.list(EVERYONE)[1]] == [5, 6, 7]
        assert server.store.get(6) == rest_users.fake_user(6)
    finally:
        server.server_close()


def test_a_bad_load_file_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    path = write_users_file(tmp_path, [{"name": "A", "email": "no-at-sign"}])
    status, out, err = failed_start(capsys, "--port", "0", "--load", path)
    assert status == 2
    assert out == ""
    assert err == ("rest_users: cannot load %s: user 1 of 1: email must have one @ "
                             "with text on both sides, like ada@example.com\n" % path)


def http_request(base_url, method, path, body=None):
    """One request to a base URL such as running() yields."""
    host, port = base_url[len("http://"):].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(method, path, body=json.dumps(body) if body else None,
                           headers={"Content-Type": "application/json"} if body else {})
        return Reply(connection.getresponse())
    finally:
        connection.close()


def test_running_yields_a_base_url_and_stops_the_server_after():
    with rest_users.running(users=[{"name": "Ada", "email": "ada@example.com"}]) as base_url:
        assert re.fullmatch(r"http://127\.0\.0\.1:[0-9]+", base_url)
        reply = http_request(base_url, "GET", "/users")
        assert reply.status == 200
        assert reply.json() == [{"id": 1, "name": "Ada", "email": "ada@example.com"}]
    with pytest.raises(OSError):
        http_request(base_url, "GET", "/users")


def test_two_running_servers_stay_independent():
    with rest_users.running(fake_users=2) as first, rest_users.running() as second:
        assert first != second
        assert http_request(second, "POST", "/users",
                            {"name": "B", "email": "b@example.com"}).status == 201
        assert len(http_request(first, "GET", "/users").json()) == 2
        assert len(http_request(second, "GET", "/users").json()) == 1


def test_running_takes_make_servers_keywords(tmp_path):
    db = str(tmp_path / "u.db")
    with rest_users.running(db=db, api_key=KEY, users=[{"name": "A", "email": "a@x"}]) as base_url:
        assert http_request(base_url, "GET", "/users").status == 401
    with rest_users.running(db=db) as base_url:
        assert http_request(base_url, "GET", "/users").json() == [
            {"id": 1, "name": "A", "email": "a@x"}]


def test_running_refuses_bad_users_before_it_starts():
    with pytest.raises(ValueError) as raised:
        with rest_users.running(users=[{"name": "A"}]):
            pass
    assert str(raised.value) == "users=: user 1 of 1: email is required"


def test_help_shows_each_option_with_an_example(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "500")  # no line wrapped
    with pytest.raises(SystemExit) as exited:
        rest_users.parse_arguments(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for example in ("--host 0.0.0.0", "--db users.db", "--cors http://localhost:5173",
                    "--allow-host api.example", "--delay 300", "--delay 100-500",
                    "--fail-rate 0.5", "--fake-users 1000", "--load users.json"):
        assert example in text


# -- storage faults and the one owner of a database ----------------------------------------

FULL = {"type": "about:blank", "title": HTTPStatus(507).phrase, "status": 507,
        "detail": "The server's disk is full: nothing was changed. Try again once there is space."}
FAILING = {"type": "about:blank", "title": "Service Unavailable", "status": 503,
           "detail": "The database is locked or failing just now: nothing was changed. Try again."}


def post_until_refused(server, prefix):
    """POST users with long names until one is refused; return the statuses and that reply."""
    statuses = []
    for n in range(2000):
        reply = call(server, "POST", "/users", {"name": "x" * 200, "email": "%s%d@x" % (prefix, n)})
        statuses.append(reply.status)
        if reply.status != 201:
            return statuses, reply
    raise AssertionError("the store never filled up")


def test_a_full_database_is_507_changes_nothing_logs_one_line_and_recovers(tmp_path, capfd, variant):
    running = start_server(variant, db=str(tmp_path / "u.db"))
    try:
        store = running.store
        store.db.execute("PRAGMA max_page_count = %d"
                         % store.db.execute("PRAGMA page_count").fetchone()[0])
        statuses, reply = post_until_refused(running, "full")
        assert set(statuses[:-1]) == {201} and reply.status == 507
        assert reply.headers["Content-Type"] == PROBLEM_JSON and reply.json() == FULL
        total, users = store.list(rest_users.ListQuery(1000, 0, ("id",), (), None))
        assert total == len(users) == len(statuses) - 1
        store.db.execute("PRAGMA max_page_count = 1000000")  # space again
        assert call(running, "POST", "/users", {"name": "A", "email": new_email()}).status == 201
    finally:
        stop_server(running)
    assert capfd.readouterr().err == ("rest_users: %s: database or disk is full\n"
                                      % (tmp_path / "u.db"))


class FailingDatabase:
    """A sqlite3 connection whose every statement fails, as a broken disk would."""

    def __init__(self, db):
        self.db = db

    def execute(self, *args):
        raise sqlite3.OperationalError("disk I/O error")

    def __enter__(self):
        return self.db.__enter__()

    def __exit__(self, *exception):
        return self.db.__exit__(*exception)

    def __getattr__(self, name):
        return getattr(self.db, name)


@pytest.mark.parametrize("method, path, body", [("GET", "/users", None), ("GET", "/users/1", None),
                                                ("POST", "/users", {"name": "A", "email": "a@x"}),
                                                ("DELETE", "/users/1", None)])
def test_a_failing_database_is_503_with_retry_after(tmp_path, capfd, method, path, body, variant):
    running = start_server(variant, db=str(tmp_path / "u.db"))
    try:
        create(running)
        working, running.store.db = running.store.db, FailingDatabase(running.store.db)
        reply = call(running, method, path, body)
        running.store.db = working
        assert reply.status == 503 and reply.json() == FAILING
        assert reply.headers["Retry-After"] == "1"
        assert running.store.list(rest_users.ListQuery(10, 0, ("id",), (), None))[0] == 1
        assert call(running, "GET", "/users/1").status == 200
    finally:
        stop_server(running)
    assert capfd.readouterr().err == "rest_users: %s: disk I/O error\n" % (tmp_path / "u.db")


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs, where mounting one is permitted."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE).returncode != 0:
        pytest.skip("mounting a small tmpfs is not permitted here")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_is_507_and_the_server_recovers_once_there_is_space(small_disk, capfd, variant):
    running = start_server(variant, db=str(small_disk / "u.db"))
    try:
        filler = small_disk / "filler"
        with open(str(filler), "wb", buffering=0) as file:
            try:
                while True:
                    file.write(b"x" * 4096)
            except OSError:
                pass  # the disk is full
        statuses, reply = post_until_refused(running, "disk")
        assert reply.status == 507 and reply.json() == FULL
        total = running.store.list(rest_users.ListQuery(1, 0, ("id",), (), None))[0]
        assert total == statuses.count(201)
        filler.unlink()
        assert call(running, "POST", "/users", {"name": "A", "email": new_email()}).status == 201
        assert call(running, "GET", "/users").headers["X-Total-Count"] == str(total + 1)
    finally:
        stop_server(running)
    assert "Traceback" not in capfd.readouterr().err


def start_unprivileged(folder, *args):
    """Run a copy of rest_users.py in folder as a user who cannot write what it may not (as
    root, the user nobody); skipped where that cannot be arranged."""
    shutil.copy(os.path.join(HERE, "rest_users.py"), folder)
    os.chmod(folder, 0o777)
    as_nobody = {}
    if os.geteuid() == 0:
        as_nobody = {"preexec_fn": lambda: os.setuid(65534)}
    for python in (sys.executable, "/usr/bin/python3"):
        try:
            if python and subprocess.run([python, "-c", ""], **as_nobody).returncode == 0:
                return subprocess.run([python, os.path.join(folder, "rest_users.py"), "--port", "0"]
                                      + list(args), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True,
                                      timeout=10, **as_nobody)
        except OSError:
            pass
    pytest.skip("no Python that an unprivileged user may run")


def test_a_read_only_database_is_one_line_at_start():  # a missing folder: tested above
    folder = tempfile.mkdtemp()
    try:
        db = os.path.join(folder, "u.db")
        sqlite3.connect(db).close()
        os.chmod(db, 0o444)
        result = start_unprivileged(folder, "--db", db)
    finally:
        shutil.rmtree(folder)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == ("rest_users: cannot start on %s: attempt to write a readonly "
                             "database\n" % db)


def test_a_second_process_on_the_same_db_exits_with_one_line(tmp_path, variant):
    db = str(tmp_path / "u.db")
    first = start_server(variant, db=db)  # this process serves the file
    try:
        second = run_to_exit("--port", "0", "--db", db)
        assert second.returncode == 1
        assert second.stdout == ""
        assert second.stderr == ("rest_users: cannot start on %s: another process is using it; "
                                 "one rest_users.py serves a file at a time\n" % db)
        assert call(first, "POST", "/users", {"name": "A", "email": "a@x"}).status == 201
    finally:
        stop_server(first)


# -- stopping -----------------------------------------------------------------------------

def test_ctrl_c_answers_a_request_in_flight_then_stops_cleanly(tmp_path):
    process, banner = run_service("--port", "0", "--db", str(tmp_path / "u.db"), "--delay", "250")
    assert banner == ("Serving users API on http://127.0.0.1:%d/users (press Ctrl-C to stop)\n"
                      % port_of(banner)) and port_of(banner) != 0  # one line, the real port
    idle = http.client.HTTPConnection("127.0.0.1", port_of(banner), timeout=5)
    idle.request("GET", "/")  # served and kept: the server holds it, idle, when the stop comes
    assert idle.getresponse().read() == b'{"users": "/users"}'
    with socket.create_connection(("127.0.0.1", port_of(banner)), timeout=5) as busy, idle.sock:
        body = b'{"name": "A", "email": "a@x"}'
        busy.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        replies = busy.makefile("rb")
        assert replies.readline() == b"HTTP/1.1 100 Continue\r\n"  # the request is in flight
        assert replies.readline() == b"\r\n"
        process.send_signal(signal.SIGINT)  # as Ctrl-C does; SIGTERM is tested below
        busy.sendall(body)  # applied at once, then the answer waits out the 250 ms delay
        reply = replies.read()  # answered, then closed
        assert idle.sock.recv(1) == b""  # the idle keep-alive connection is closed
    _, stderr = process.communicate(timeout=10)
    assert reply.startswith(b"HTTP/1.1 201 Created\r\n")
    assert process.returncode == 0
    assert stderr.startswith("Open http://127.0.0.1:%d/ in a browser to explore the API. Users "
                             "are kept in the SQLite file %s. No API key is needed. In force: "
                             "--delay 250. Test controls: POST /__admin/reset, GET "
                             "/__admin/requests.\n"
                             % (port_of(banner), tmp_path / "u.db"))
    assert "Traceback" not in stderr
    assert '"POST /users HTTP/1.1" 201' in stderr  # one log line per request by default
    assert not os.path.exists(str(tmp_path / "u.db-wal"))  # the store was closed


def test_sigterm_during_writes_loses_no_acknowledged_user(tmp_path):
    db = str(tmp_path / "u.db")
    process, banner = run_service("--port", "0", "--db", db, "--quiet")
    port, acknowledged = port_of(banner), []

    forty_acknowledged = threading.Event()

    def write_until_refused():
        for n in itertools.count():
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("POST", "/users", json.dumps({"name": "W", "email": "w%d@x" % n}),
                                   {"Content-Type": "application/json"})
                if connection.getresponse().status == 201:
                    acknowledged.append("w%d@x" % n)
                    if len(acknowledged) >= 40:
                        forty_acknowledged.set()
                connection.close()
            except (OSError, http.client.HTTPException):
                return

    writers = [threading.Thread(target=write_until_refused) for _ in range(4)]
    for writer in writers:
        writer.start()
    assert forty_acknowledged.wait(10)
    process.send_signal(signal.SIGTERM)
    for writer in writers:
        writer.join()
    _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "Traceback" not in stderr and stderr == ""
    assert not os.path.exists(db + "-wal")  # the store was closed
    users = rest_users.SQLiteStore(db)
    try:
        stored = {rest_users.User(*user).email for user in users.list(EVERYONE)[1]}
    finally:
        users.close()
    assert set(acknowledged) <= stored


# -- storage -------------------------------------------------------------------------------

def test_with_db_no_acknowledged_write_is_lost_to_kill_9(tmp_path):
    db = str(tmp_path / "users.db")
    process, banner = run_service("--port", "0", "--quiet", "--db", db)
    port = port_of(banner)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    acknowledged = []
    for n in range(50):
        body = json.dumps({"name": "Durable %d" % n, "email": "durable%d@example.com" % n})
        connection.request("POST", "/users", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        acknowledged.append(response.status)
    process.kill()  # SIGKILL, straight after the last 201
    process.wait(10)
    assert acknowledged == [201] * 50
    rows = sqlite3.connect(db).execute("SELECT id, name FROM users ORDER BY id").fetchall()
    assert rows == [(n + 1, "Durable %d" % n) for n in range(50)]


def test_the_db_enforces_unique_emails_ignoring_case(tmp_path):
    store = rest_users.SQLiteStore(str(tmp_path / "u.db"))
    store.create({"name": "A", "email": "a@example.com"})
    with pytest.raises(rest_users.ApiError) as raised:
        store.create({"name": "B", "email": "A@EXAMPLE.COM"})
    assert raised.value.status == 409
    store.close()


def test_sorted_pages_with_db_read_an_index(tmp_path):
    """The SQL that SQLiteStore.list runs, as SQLite traces it, reads an index in order."""
    store = rest_users.SQLiteStore(str(tmp_path / "u.db"))
    statements = []
    store.db.set_trace_callback(lambda statement: statements.append(statement))  # 3.6 hashes it
    for sort in ("name", "-name", "email", "-email"):
        store.list(rest_users.ListQuery(limit=10, offset=0, sort=(sort,), filters=(), q=None))
    store.db.set_trace_callback(None)
    assert len(statements) == 4
    for statement in statements:
        # older SQLite traces the statement with its ? placeholders, newer with the values
        arguments = (10, 0) if "?" in statement else ()
        plan = store.db.execute("EXPLAIN QUERY PLAN " + statement, arguments).fetchall()
        assert "USING INDEX" in str(plan) and "TEMP B-TREE" not in str(plan), (statement, plan)
    store.close()


def written(tag, k):
    """The name and email of a racing writer's k-th write; tag keeps emails apart."""
    return "n%d" % k, "e%d-%d@example.com" % (tag, k)


@pytest.fixture
def fast_thread_switching():
    """Threads switch every microsecond, so that a race shows within a second."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


STORES = {"memory": rest_users.MemoryStore, "fast-memory": rest_users.DefaultMemoryStore,
          "sqlite": rest_users.SQLiteStore}


@pytest.mark.parametrize("kind", sorted(STORES))
def test_readers_racing_a_writer_see_whole_versions(kind, tmp_path, fast_thread_switching):
    """A reader gets the old or the new version of a user, never a mix of the two."""
    store = STORES[kind](str(tmp_path / "u.db")) if kind == "sqlite" else STORES[kind]()
    name, email = written(0, 0)
    user = store.create({"name": name, "email": email})
    pages = [rest_users.ListQuery(limit=10, offset=0, sort=(sort,), filters=(), q=None)
             for sort in ("-name", "-id")]
    deadline = time.monotonic() + 0.3  # and after it, until each reader has read ten times
    torn, reads = [], []

    def write():
        for k in itertools.count(1):
            if len(reads) == len(readers) or time.monotonic() > deadline + 30:  # done, or stuck
                return
            name, email = written(0, k)
            store.update(user.id, lambda current: {"name": name, "email": email})

    def read(pages):
        count = 0
        while time.monotonic() < deadline or count < 10:
            seen = [store.get(user.id)] + [one for page in pages for one in store.list(page)[1]]
            # version v was made by write v - 1; an item is (id, name, email, version)
            torn.extend(one for one in seen if one[1:3] != written(0, one.version - 1))
            count += 1
        reads.append(count)

    readers = [threading.Thread(target=read, args=(pages,)) for pages in ([], [], pages)]
    threads = [threading.Thread(target=write)] + readers
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    assert torn == []
    assert min(reads) >= 10  # every reader really raced the writer


def user_from(reply):
    """(version from the ETag, name, email) of a reply that carries one user, JSON or XML."""
    version = int(reply.headers["ETag"].strip('"').split("-")[0])
    if reply.headers["Content-Type"] == XML_TYPE:
        root = ElementTree.fromstring(reply.body)
        return version, root.findtext("name"), root.findtext("email")
    user = reply.json()
    return version, user["name"], user["email"]


def test_http_readers_racing_writers_get_whole_versions_and_no_500(server):
    """GETs of a user and of pages, in JSON and XML, race a PATCH writer and a POST/DELETE churn."""
    tag = next(numbers)
    user = create(server, *written(tag, 0))
    path = "/users/%d" % user["id"]
    deadline = time.monotonic() + 0.3
    failures, statuses = [], []

    def loop(step):
        connection = connect(server)
        for k in itertools.count(1):
            if time.monotonic() > deadline:
                break
            step(connection, k)
        connection.close()

    def request(connection, method, target, body=None, headers=None):
        connection.request(method, target, body=body, headers=headers or {})
        reply = Reply(connection.getresponse())
        statuses.append(reply.status)
        return reply

    def write(connection, k):
        name, email = written(tag, k)
        body = json.dumps({"name": name, "email": email})
        request(connection, "PATCH", path, body, {"Content-Type": "application/json"})

    def churn(connection, k):
        body = json.dumps({"name": "Churn", "email": new_email()})
        created = request(connection, "POST", "/users", body, {"Content-Type": "application/json"})
        request(connection, "DELETE", created.headers["Location"])

    def read(connection, k):
        accept = JSON_TYPE if k % 2 else XML_TYPE
        reply = request(connection, "GET", path, headers={"Accept": accept})
        version, name, email = user_from(reply)
        if (name, email) != written(tag, version - 1):
            failures.append((version, name, email))
        page = request(connection, "GET", "/users?sort=-id&limit=5", headers={"Accept": accept})
        if page.headers["Content-Type"] == JSON_TYPE:
            page.json()  # a whole JSON document
        else:
            ElementTree.fromstring(page.body)  # a whole XML document

    threads = [threading.Thread(target=loop, args=(step,)) for step in (write, churn, read, read)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert set(statuses) <= {200, 201, 204}, sorted(set(statuses))
    assert len(statuses) > 50


@pytest.mark.parametrize("name", ['Ada "the" Countess', "back\\slash", "</user>&<b>", "Zoë 🦉 李",
                                  "\u2028\u0085\u00a0 in text", " padded ", "x" * 200])
def test_every_server_renders_a_user_as_the_core_does(server, name):
    created = create(server, name=name)
    user = rest_users.User(created["id"], name, created["email"], 1)
    for accept, fmt in (("application/json", rest_users.JSON), ("application/xml", rest_users.XML)):
        for _ in range(2):  # rendered, then as kept by the default server
            reply = call(server, "GET", "/users/%d" % user.id, headers={"Accept": accept})
            assert reply.status == 200
            assert reply.body == rest_users.render_user(user, fmt)


def test_make_server_serves_the_speed_ups_unless_plain():
    default = rest_users.make_server("127.0.0.1", 0)
    plain = rest_users.make_server("127.0.0.1", 0, plain=True)
    try:
        assert default.RequestHandlerClass is rest_users.DefaultHandler
        assert type(default.store) is rest_users.DefaultMemoryStore
        assert plain.RequestHandlerClass is rest_users.PlainHandler
        assert type(plain.store) is rest_users.PlainMemoryStore
    finally:
        default.server_close()
        plain.server_close()


def test_the_default_servers_connections_have_the_kernel_keep_their_timeout():
    running = start_server(timeout=0.5)
    try:
        with socket.create_connection(("127.0.0.1", running.server_address[1]), timeout=5) as sock:
            sock.sendall(b"GET /users/1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 404 Not Found\r\n")
            [handler] = running.connections
            connection = handler.connection
            assert type(connection) is rest_users.KernelTimedSocket
            assert connection.gettimeout() is None  # Python does not poll before each call
            timeval = struct.pack("ll", 0, 500000)  # the kernel keeps it in ticks: 0.5 s is whole
            for option in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
                assert connection.getsockopt(socket.SOL_SOCKET, option, len(timeval)) == timeval
    finally:
        stop_server(running)


def test_a_client_that_reads_no_answer_is_dropped_after_the_timeout(variant):
    users = [{"name": "N" * 200, "email": "user%d@example.com" % number} for number in range(100)]
    running = start_server(variant, timeout=0.1, quiet=False, users=users)
    logged = io.StringIO()
    try:
        with contextlib.redirect_stderr(logged):
            with socket.create_connection(("127.0.0.1", running.server_address[1]),
                                          timeout=5) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                deadline = time.monotonic() + 5
                while not running.connections and time.monotonic() < deadline:
                    time.sleep(0.01)  # until the server has the connection, under a deadline
                [handler] = running.connections  # small buffers, soon full
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
                sock.sendall(b"GET /users HTTP/1.1\r\nHost: localhost\r\n\r\n" * 20)
                while "connection lost" not in logged.getvalue() and time.monotonic() < deadline:
                    time.sleep(0.01)  # until the server gives up, under the deadline
                assert not running.connections
    finally:
        stop_server(running)
    lines = logged.getvalue().splitlines()
    assert lines[-1] == "127.0.0.1: connection lost: timed out", lines
    assert 2 <= len(lines) < 21, lines  # some answers fit in the buffers, never all twenty
    assert all(line.endswith('"GET /users HTTP/1.1" 200 -') for line in lines[:-1]), lines  # no 408


# -- serving -------------------------------------------------------------------------------

def test_one_connection_carries_many_requests(server):
    connection = connect(server)
    for n in range(3):
        connection.request("POST", "/users", json.dumps({"name": "K", "email": new_email()}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 201
        assert response.getheader("Connection") is None
        response.read()
        connection.request("GET", "/users?limit=100")
        response = connection.getresponse()
        assert response.status == 200 and int(response.getheader("Content-Length")) > 0
        response.read()
    connection.close()


@pytest.mark.parametrize("method, path, headers", [
    ("POST", "/users", {}),                                       # 415: no Content-Type
    ("DELETE", "/users", {"Content-Type": "application/json"}),  # 405
    ("GET", "/users/1", {"Content-Type": "application/json"}),   # a GET with a body
    ("POST", "/nope", {"Content-Type": "application/json"}),     # 404
])
def test_an_unread_body_does_not_poison_the_connection(server, method, path, headers):
    create(server)
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5) as sock:
        body = b'GET /users/1 HTTP/1.1\r\nHost: localhost\r\n\r\n'  # a body that looks like a request
        head = "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n" % (method, path, len(body))
        head += "".join("%s: %s\r\n" % item for item in headers.items())
        sock.sendall(head.encode() + b"\r\n" + body + b"GET /users?limit=1 HTTP/1.1\r\n"
                     b"Host: localhost\r\nConnection: close\r\n\r\n")
        reply = sock.makefile("rb").read()
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)
    assert len(statuses) == 2
    assert statuses[1] == b"200"
    assert b"X-Total-Count" in reply  # the second answer is the list, not user 1


def test_an_unread_body_after_401_does_not_poison_the_connection(auth_server):
    with socket.create_connection(("127.0.0.1", auth_server.server_address[1]), timeout=5) as sock:
        body = b"GET /users/1 HTTP/1.1\r\n\r\n"
        sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body +
                     b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 401 ")
    assert reply.count(b"HTTP/1.1 ") == 2
    assert reply.endswith(b'{"users": "/users"}')


@pytest.mark.parametrize("plain, large_writes", [
    (False, [True, False, False]),  # page, user, 404: one write each
    (True, [True, False, False])])  # the core joins head and body too: one write each
def test_every_response_is_sent_at_once_with_nodelay(monkeypatch, plain, large_writes):
    """No response may wait for a delayed ACK: Nagle is off. Both servers send each
    response, head and body, in one write, even a page larger than wfile's 8 KiB buffer."""
    writes, nodelay = [], []
    original_setup = rest_users.UsersHandler.setup

    def watched_setup(handler):
        original_setup(handler)
        nodelay.append(handler.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        to_socket = getattr(handler.wfile, "raw", handler.wfile)  # under the buffer, if any
        original_write = to_socket.write
        to_socket.write = lambda data: writes.append(len(data)) or original_write(data)
        if not plain:  # the default server sends on its KernelTimedSocket itself
            original_sendall = handler.connection.sendall
            handler.connection.sendall = lambda data: (writes.append(len(data))
                                                       or original_sendall(data))

    monkeypatch.setattr(rest_users.UsersHandler, "setup", watched_setup)
    running = start_server("plain" if plain else "default")
    try:
        for n in range(100):
            create(running, name="A rather long name to fill the page %d" % n)
        del writes[:]
        connection = connect(running)
        for path in ("/users?limit=100", "/users/1", "/nope"):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
        connection.close()
    finally:
        stop_server(running)
    assert [size > 8192 for size in writes] == large_writes
    assert all(nodelay)


def test_a_client_that_resets_mid_request_harms_nothing(server):
    sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5)
    sock.sendall(b"POST /users HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 50\r\n\r\n{\"name\":")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # with linger 0: a TCP reset
    assert call(server, "GET", "/users?limit=1").status == 200


def test_concurrent_posts_each_apply_exactly_once(server):
    created = []
    lock = threading.Lock()

    def post_many(worker):
        connection = connect(server)
        for n in range(25):
            body = json.dumps({"name": "W", "email": "w%d-%d-%s" % (worker, n, new_email())})
            connection.request("POST", "/users", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            user = json.loads(response.read())
            with lock:
                created.append((response.status, user["id"]))
        connection.close()

    threads = [threading.Thread(target=post_many, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _ in created] == [201] * 200
    assert len({user_id for _, user_id in created}) == 200


def test_an_idle_connection_is_dropped_and_holds_up_no_one(variant):
    running = start_server(variant, timeout=0.2)
    try:
        with socket.create_connection(("127.0.0.1", running.server_address[1]), timeout=5) as idle:
            assert call(running, "GET", "/users").status == 200  # served meanwhile
            assert idle.recv(1) == b""  # the server closed the idle connection
    finally:
        stop_server(running)


@pytest.mark.parametrize("xml", [
    b'<?xml version="1.0"?><!DOCTYPE user [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">'
    b']><user><name>&b;</name><email>x@y</email></user>',
    b'<!DOCTYPE user [<!ENTITY x SYSTEM "file:///etc/passwd">]><user><name>&x;</name></user>',
    b'<!DOCTYPE user SYSTEM "http://example.com/user.dtd"><user/>',
])
def test_xml_with_a_doctype_is_refused_before_expansion(server, xml):
    reply = call(server, "POST", "/users", xml, {"Content-Type": "application/xml"})
    problem = assert_problem(reply, 400)
    assert problem["detail"] == "XML with a DOCTYPE or entity declarations is not accepted."


@pytest.fixture(scope="module")
def cors_server(variant):
    running = start_server(variant, cors="https://app.example")
    yield running
    stop_server(running)


def test_cors_headers_go_to_the_allowed_origin(cors_server):
    reply = call(cors_server, "GET", "/users", headers={"Origin": "https://app.example"})
    assert reply.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert reply.headers["Access-Control-Expose-Headers"] == (
        "Location, ETag, Link, X-Total-Count, Content-Range, Retry-After, Preference-Applied")
    assert reply.headers["Vary"] == "Accept, Origin"


def test_other_origins_get_no_cors_headers(cors_server):
    reply = call(cors_server, "GET", "/users", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in reply.headers
    assert "Access-Control-Expose-Headers" not in reply.headers
    assert reply.headers["Vary"] == "Accept, Origin"


def test_a_cors_preflight_lists_methods_and_headers(cors_server):
    reply = call(cors_server, "OPTIONS", "/users/1", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "if-match, content-type"})
    assert reply.status == 204
    assert reply.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert reply.headers["Access-Control-Allow-Methods"] == "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"
    assert reply.headers["Access-Control-Allow-Headers"] == (
        "Authorization, Content-Type, If-Match, If-None-Match, Prefer, Range, X-Requested-With")
    assert reply.headers["Access-Control-Max-Age"] == "600"


def test_a_cors_preflight_gets_back_the_headers_it_asked_for_that_are_field_names(cors_server):
    reply = call(cors_server, "OPTIONS", "/users", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-requested-with,range, x-trace-id ,bad name,"
                                          "x-trace-id,a(b,content-type"})
    assert reply.status == 204
    assert reply.headers["Access-Control-Allow-Headers"] == (
        "Authorization, Content-Type, If-Match, If-None-Match, Prefer, Range, X-Requested-With, "
        "x-trace-id")


def test_cors_takes_several_origins(variant):
    running = start_server(variant, cors=["https://app.example", "http://localhost:5173"])
    try:
        for origin in ("https://app.example", "http://localhost:5173"):
            reply = call(running, "GET", "/users", headers={"Origin": origin})
            assert reply.headers["Access-Control-Allow-Origin"] == origin
            assert reply.headers["Vary"] == "Accept, Origin"
        reply = call(running, "GET", "/users", headers={"Origin": "https://other.example"})
        assert "Access-Control-Allow-Origin" not in reply.headers
    finally:
        stop_server(running)


@pytest.mark.parametrize("cors", [None, "https://app.example"])
def test_a_refused_origin_is_logged_once_naming_it_and_cors(capfd, variant, cors):
    running = start_server(variant, quiet=False, cors=cors)
    quiet = start_server(variant, quiet=True, cors=cors)
    try:
        for server in (running, quiet):
            for origin in ("https://evil.example", "https://evil.example", "https://other.example",
                           "https://app.example", "http://127.0.0.1:%d" % server.server_address[1]):
                call(server, "GET", "/users", headers={"Origin": origin})
    finally:
        stop_server(running)
        stop_server(quiet)
    lines = [line for line in capfd.readouterr().err.splitlines() if "GET /users" not in line]
    names = ["https://evil.example", "https://other.example"] + (["https://app.example"]
                                                                 if cors is None else [])
    assert [line.split("] ", 1)[1] for line in lines] == [
        "A page at %s may not read the answers (CORS): start the server with --cors %s to "
        "allow it." % (name, name) for name in names]


def test_cors_star_allows_any_origin_literally(variant):
    running = start_server(variant, cors="*")
    try:
        reply = call(running, "GET", "/users", headers={"Origin": "https://any.example"})
        assert reply.headers["Access-Control-Allow-Origin"] == "*"
        assert reply.headers["Vary"] == "Accept"
        assert "Access-Control-Allow-Origin" not in call(running, "GET", "/users").headers
    finally:
        stop_server(running)


def test_without_cors_there_are_no_cors_headers(server):
    reply = call(server, "GET", "/users", headers={"Origin": "https://app.example"})
    assert "Access-Control-Allow-Origin" not in reply.headers


def test_each_request_logs_one_line_as_http_server_does(capfd, variant):
    running = start_server(variant, quiet=False)
    try:
        call(running, "GET", "/users/999999")
    finally:
        stop_server(running)
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 1
    assert re.fullmatch(r'127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4} \d\d:\d\d:\d\d\] '
                        r'"GET /users/999999 HTTP/1\.1" 404 -', lines[0])


def test_quiet_logs_no_request_lines(capfd, variant):
    running = start_server(variant, quiet=True)
    try:
        call(running, "GET", "/users")
    finally:
        stop_server(running)
    assert "GET /users" not in capfd.readouterr().err


def test_a_listed_page_shows_every_write_that_follows(server):
    newest = "/users?sort=-id&limit=1"
    first = create(server)
    assert call(server, "GET", newest).json() == [first]  # rendered, and kept
    total = int(call(server, "GET", newest).headers["X-Total-Count"])
    second = create(server)
    reply = call(server, "GET", newest)
    assert reply.json() == [second] and reply.headers["X-Total-Count"] == str(total + 1)
    call(server, "PATCH", "/users/%d" % second["id"], {"name": "Renamed"})
    assert call(server, "GET", newest).json() == [dict(second, name="Renamed")]
    xml = call(server, "GET", newest, headers={"Accept": "application/xml"})
    assert "<name>Renamed</name>" in xml.text()
    call(server, "DELETE", "/users/%d" % second["id"])
    assert call(server, "GET", newest).json() == [first]


def test_a_failed_write_keeps_the_listed_page(server):
    user = create(server)
    newest = "/users?sort=-id&limit=1"
    assert call(server, "GET", newest).json() == [user]
    assert call(server, "PATCH", "/users/%d" % user["id"], {"name": ""}).status == 422
    assert call(server, "GET", newest).json() == [user]


# -- the explorer --------------------------------------------------------------------------

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize("accept", [BROWSER_ACCEPT, "text/html", "text/html, */*;q=0.1"])
def test_a_browser_gets_the_explorer_page(server, accept):
    reply = call(server, "GET", "/", headers={"Accept": accept})
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert reply.headers["Vary"] == "Accept, Origin"
    assert reply.text().startswith("<!doctype html>")


@pytest.mark.parametrize("accept, content_type, body", [
    (None, JSON_TYPE, b'{"users": "/users"}'),
    ("*/*", JSON_TYPE, b'{"users": "/users"}'),
    ("application/json", JSON_TYPE, b'{"users": "/users"}'),
    ("application/xml", XML_TYPE, b"<index><users>/users</users></index>"),
    ("text/html;q=0.5, application/json", JSON_TYPE, b'{"users": "/users"}'),
    ("text/html, application/json", JSON_TYPE, b'{"users": "/users"}'),
    ("text/html, application/xml", XML_TYPE, b"<index><users>/users</users></index>"),
])
def test_api_clients_still_get_the_index(server, accept, content_type, body):
    reply = call(server, "GET", "/", headers={"Accept": accept} if accept else {})
    assert reply.status == 200
    assert reply.headers["Content-Type"] == content_type
    assert reply.body == body


def test_the_explorer_allows_only_its_own_script_and_style(server):
    reply = call(server, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
    policy = dict(part.strip().split(" ", 1) for part in
                  reply.headers["Content-Security-Policy"].split(";"))
    page = reply.text()
    [script] = re.findall(r"<script>(.*?)</script>", page, re.S)
    [style] = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == rest_users.csp_source(script)
    assert policy["style-src"] == rest_users.csp_source(style)
    assert policy["connect-src"] == "'self'"
    assert policy["img-src"] == "data:"  # the empty icon, so no request for /favicon.ico
    assert "unsafe" not in reply.headers["Content-Security-Policy"]


def test_the_explorer_loads_nothing_from_elsewhere(server):
    page = call(server, "GET", "/", headers={"Accept": BROWSER_ACCEPT}).text()
    icon = '<link rel="icon" href="data:,">'  # an empty icon, in the page: none is fetched
    assert page.count(icon) == 1
    page = page.replace(icon, "")
    assert not re.search(r"<(script|img|link|iframe|object|embed)\b[^>]*\b(src|href)=", page)
    assert "url(" not in page and "@import" not in page
    assert "innerHTML" not in page and "eval(" not in page
    assert "localStorage" not in page and "sessionStorage" not in page
    assert "document.cookie" not in page


def test_the_explorer_labels_every_field(server):
    page = call(server, "GET", "/", headers={"Accept": BROWSER_ACCEPT}).text()
    labelled = set(re.findall(r'<label for="([\w-]+)"', page))
    inputs = set(re.findall(r'<(?:input|select) id="([\w-]+)"', page))
    assert inputs and inputs <= labelled
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page


def test_the_explorer_is_open_without_the_key(auth_server):
    reply = call(auth_server, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")


def test_head_of_the_explorer_has_its_headers(server):
    get = call(server, "GET", "/", headers={"Accept": BROWSER_ACCEPT})
    head = call(server, "HEAD", "/", headers={"Accept": BROWSER_ACCEPT})
    assert head.body == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
    assert head.headers["Content-Security-Policy"] == get.headers["Content-Security-Policy"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """Headless Chromium, driven through its DevTools protocol on a pipe
    (--remote-debugging-pipe: JSON messages ended by a NUL, read from file descriptor 3 and
    written to 4), so that a test can click and type as a person would."""

    def __init__(self, profile):
        to_browser, self.commands = os.pipe()
        self.events, from_browser = os.pipe()

        def give_the_pipes():  # in the child, before Chromium starts
            import fcntl  # POSIX only, as --remote-debugging-pipe is
            # first above 10, so that neither pipe is overwritten if it was 3 or 4 itself
            reading, writing = [fcntl.fcntl(pipe, fcntl.F_DUPFD, 10)
                                for pipe in (to_browser, from_browser)]
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-pipe", "--user-data-dir=" + str(profile),
             "--host-resolver-rules=MAP evil.example 127.0.0.1",  # another origin, here
             "about:blank"], pass_fds=(3, 4), preexec_fn=give_the_pipes,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self.unread, self.last_id, self.session, self.target = b"", 0, None, None

    def send(self, method, **params):
        """Send one command and return its result."""
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.unread:
                chunk = os.read(self.events, 65536)
                assert chunk, "Chromium closed its pipe"
                self.unread += chunk
            reply, _, self.unread = self.unread.partition(b"\0")
            reply = json.loads(reply)
            if reply.get("id") == self.last_id:
                assert "error" not in reply, reply
                return reply["result"]

    def open(self, url):
        """Open url in a new tab, in place of the last one, and wait until it has loaded."""
        if self.session:
            self.session = None  # the tab is closed by the browser, not by itself
            self.send("Target.closeTarget", targetId=self.target)
        self.target = self.send("Target.createTarget", url=url)["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=self.target, flatten=True)[
            "sessionId"]
        self.wait_for("location.href === %s && document.readyState === 'complete'"
                      % json.dumps(url))

    def run(self, script):
        """The value of a JavaScript expression in the page."""
        result = self.send("Runtime.evaluate", expression=script, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def wait_for(self, script, seconds=10):
        """Wait until a JavaScript expression is true in the page."""
        deadline = time.monotonic() + seconds
        while not self.run(script):
            assert time.monotonic() < deadline, "never true: " + script
            time.sleep(0.01)  # a look costs the page a millisecond; a longer wait, the test

    def close(self):
        self.process.kill()
        self.process.wait(10)
        os.close(self.commands)
        os.close(self.events)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One Chromium for the module's browser tests; each opens its page in a new tab."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium); .ci/run installs it")
    driven = Browser(tmp_path_factory.mktemp("chromium"))
    yield driven
    driven.close()


AUTHORS = Resource("authors", [Field("name", required=True), Field("email", required=True)])


@pytest.mark.parametrize("resources", [None, [AUTHORS]], ids=["users", "authors"])
def test_the_tour_shows_every_verb_then_the_404_the_list_and_a_summary(browser, resources):
    """The tour runs on the resource the explorer shows: users, or any of names and emails."""
    running = start_server(resources=resources)
    try:
        browser.open("http://127.0.0.1:%d/#tour" % running.server_address[1])
        browser.wait_for("document.body.dataset.tour === 'done'")
        dom = browser.run("document.documentElement.outerHTML")
    finally:
        stop_server(running)
    steps = [(re.search(r'data-step="([\w ]+)"', tag).group(1),
              re.search(r'data-status="(\d+)"', tag).group(1))
             for tag in re.findall(r"<li [^>]*\btour\b[^>]*>", dom)]
    assert steps == [("POST", "201"), ("GET", "200"), ("PUT", "200"), ("PATCH", "200"),
                     ("DELETE", "200"), ("GET after DELETE", "404"), ("list", "200")]
    assert 'data-tour="done"' in dom
    assert "If-Match: &quot;1-json&quot;" in dom or 'If-Match: "1-json"' in dom
    assert re.search(r'<p [^>]*\bid="tour-summary"[^>]*>That was the life of a resource: ', dom)


LAST_EXCHANGE = "document.querySelector('#exchanges > li:last-child')"


def requests_logged(err):
    """The "METHOD target" of each request in a server's log lines."""
    return re.findall(r'"([A-Z]+ \S+) HTTP/1\.1"', err)


def test_a_stale_edit_in_the_explorer_gets_412_and_reload_lets_the_save_succeed(browser, capsys):
    running = start_server(quiet=False)  # its log lines say which requests came, in order
    try:
        base = "http://127.0.0.1:%d" % running.server_address[1]
        create(running, "Ada Lovelace", "ada@example.com")
        browser.open(base + "/")
        browser.wait_for("document.querySelector('#rows td:nth-child(2)')?.textContent"
                         " === 'Ada Lovelace'")
        capsys.readouterr()  # from here on: what the person does
        browser.run("document.querySelector('#rows button').click()")  # Edit
        browser.wait_for("document.getElementById('user-name').value === 'Ada Lovelace'")
        call(running, "PATCH", "/users/1", {"name": "Grace Hopper"})  # someone else's change
        browser.run("document.getElementById('user-name').value = 'Ada King';"
                    "document.getElementById('send-PUT').click()")
        browser.wait_for(LAST_EXCHANGE + ".dataset.status === '412'")
        shown = browser.run(LAST_EXCHANGE + ".textContent")
        assert 'If-Match: "1-json"' in shown
        assert ("Nothing was written: someone changed this user after you opened it, so "
                '"1-json" is no longer its ETag. Reload it to see their change, then make '
                "yours again.") in shown
        assert browser.run("document.getElementById('reload-user').textContent") == (
            "Reload user 1 (GET)")
        assert requests_logged(capsys.readouterr().err) == [
            "GET /users/1", "PATCH /users/1", "PUT /users/1"]  # no GET between open and write
        assert call(running, "GET", "/users/1").json()["name"] == "Grace Hopper"
        capsys.readouterr()  # the log line of that GET

        browser.run("document.getElementById('reload-user').click()")
        browser.wait_for("document.getElementById('user-name').value === 'Grace Hopper'")
        browser.run("document.getElementById('user-name').value = 'Ada King';"
                    "document.getElementById('send-PUT').click()")
        browser.wait_for("[...document.querySelectorAll('#exchanges > li[data-status=\"200\"]"
                         " > pre:first-of-type')].some(pre => pre.textContent.startsWith('PUT'))")
        # the list read after the write has been answered, so logged, once it shows the change
        browser.wait_for("document.querySelector('#rows td:nth-child(2)')?.textContent"
                         " === 'Ada King'")
        assert requests_logged(capsys.readouterr().err) == [
            "GET /users/1", "PUT /users/1", "GET /users?sort=id&limit=10"]
        assert call(running, "GET", "/users/1").json()["name"] == "Ada King"
    finally:
        stop_server(running)


def test_the_explorer_searches_with_q(browser, capsys):
    running = start_server(quiet=False)
    try:
        for name, email in (("Ada Lovelace", "ada@example.com"), ("Grace Hopper", "grace@example.com"),
                            ("Alan Turing", "lovelace.fan@example.com")):
            create(running, name, email)
        capsys.readouterr()
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        browser.wait_for("document.querySelectorAll('#rows tr').length === 3")
        browser.run("document.getElementById('search').value = 'LOVE';"
                    "document.querySelector('#list-form button[type=submit]').click()")
        browser.wait_for("document.querySelectorAll('#rows tr').length === 2")
        names = browser.run("[...document.querySelectorAll('#rows td:nth-child(2)')]"
                            ".map(cell => cell.textContent)")
        assert names == ["Ada Lovelace", "Alan Turing"]
        assert browser.run("document.getElementById('total').textContent") == (
            "2 users match (X-Total-Count).")
    finally:
        stop_server(running)
    assert requests_logged(capsys.readouterr().err) == [
        "GET /", "GET /users?sort=id&limit=10", "GET /users?sort=id&q=LOVE&limit=10"]


def test_the_explorer_keeps_errors_in_view_and_names_the_store(browser, capsys, tmp_path):
    db = str(tmp_path / "users.db")
    running = start_server(db=db, quiet=False)
    try:
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        browser.wait_for("document.getElementById('total').textContent !== ''")
        assert browser.run("document.getElementById('store').textContent") == (
            "Users are kept in the SQLite file %s." % db)
        capsys.readouterr()
        browser.run("document.getElementById('user-name').value = 'Ada';"
                    "document.getElementById('user-email').value = 'no-at-sign';"
                    "document.getElementById('send-POST').click()")
        browser.wait_for(LAST_EXCHANGE + ".dataset.status === '422'")
        browser.run("window.marked = false; fetch('/users/999999').then(() => { "
                    "window.marked = true; })")  # a request sent after any the 422 led to
        browser.wait_for("window.marked")
        assert requests_logged(capsys.readouterr().err) == ["POST /users", "GET /users/999999"]
        assert browser.run(LAST_EXCHANGE + ".dataset.status") == "422"
        for method in ("PUT", "PATCH", "DELETE"):
            browser.run("document.getElementById('item-id').value = '';"
                        "document.getElementById('send-%s').click()" % method)
            assert browser.run("document.getElementById('item-id-note').textContent") == (
                "Enter the id of a user, or press Edit in the list, to open it first.")
            assert browser.run("document.activeElement.id") == "item-id"
        assert requests_logged(capsys.readouterr().err) == []
    finally:
        stop_server(running)


def test_user_data_is_shown_as_text_in_a_browser(browser):
    running = start_server()
    try:
        create(running, name="<img src=x onerror=alert(1)>", email="xss@example.com")
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        browser.wait_for("document.querySelector('#rows td') !== null")
        dom = browser.run("document.documentElement.outerHTML")
    finally:
        stop_server(running)
    assert "<td>&lt;img src=x onerror=alert(1)&gt;</td>" in dom
    assert "<img" not in dom


# A learner adds an optional phone to the user: its check, and its row in the users'
# declaration with a fake value. Those two edits, 11 lines, are all it takes
# (test_adding_a_field_takes_11_lines).
PHONE_CHANGE = [  # (what the file says, what the learner makes it say)
    ("\nclass Field:", """
PHONE = re.compile(r"[0-9 ()+-]{1,30}")


def check_phone(value):
    \"\"\"Say what is wrong with a phone number, or return None.\"\"\"
    if not PHONE.fullmatch(value):
        return "must be at most 30 of digits, spaces and + - ( )"
    return None

class Field:"""),
    ('          example="ada@example.com"),\n',
     '          example="ada@example.com"),\n'
     '    Field("phone", max_length=30, check=check_phone, searched=False,\n'
     '          fake=lambda user_id: "+1 555 %04d" % user_id, example="+44 20 7946 0958"),\n'),
]


def changed_source(changes):
    """rest_users.py with a learner's changes, each made where the file says it once."""
    with open(os.path.join(HERE, "rest_users.py"), encoding="utf-8") as file:
        source = file.read()
    for said, changed in changes:
        assert source.count(said) == 1, said
        source = source.replace(said, changed)
    return source


def test_adding_a_field_takes_11_lines():
    added = sum(changed.count("\n") - said.count("\n") for said, changed in PHONE_CHANGE)
    assert (added, len(PHONE_CHANGE)) == (11, 2)  # lines added, places changed


@pytest.fixture(scope="module")
def phone_users(tmp_path_factory):
    """rest_users.py as a learner changes it: an optional phone added, nothing else."""
    return module_from_source(tmp_path_factory.mktemp("phone"), "phone_users",
                              changed_source(PHONE_CHANGE))


PHONE = "+44 (20) 7946-0958"
ADA_WITH_PHONE = {"name": "Ada", "email": "ada@example.com", "phone": PHONE}


@pytest.mark.parametrize("plain", [False, True])
def test_a_field_added_to_the_table_is_read_written_and_listed(phone_users, plain):
    with serving(phone_users, plain=plain) as running:
        reply = call(running, "POST", "/users", ADA_WITH_PHONE)
        assert (reply.status, reply.json()) == (201, dict(ADA_WITH_PHONE, id=1))
        assert call(running, "GET", "/users/1").body == (
            b'{"id": 1, "name": "Ada", "email": "ada@example.com", "phone": "+44 (20) 7946-0958"}')
        assert call(running, "GET", "/users/1", headers={"Accept": "application/xml"}).body == (
            b"<user><id>1</id><name>Ada</name><email>ada@example.com</email>"
            b"<phone>+44 (20) 7946-0958</phone></user>")
        xml = b"<user><name>Bob</name><email>bob@example.com</email><phone>0</phone></user>"
        reply = call(running, "POST", "/users", xml, {"Content-Type": "application/xml"})
        assert (reply.status, reply.json()["phone"]) == (201, "0")
        reply = call(running, "PATCH", "/users/2", {"phone": None})  # a merge patch removes it
        assert reply.json() == {"id": 2, "name": "Bob", "email": "bob@example.com", "phone": None}
        assert call(running, "GET", "/users/2", headers={"Accept": "application/xml"}).body == (
            b"<user><id>2</id><name>Bob</name><email>bob@example.com</email></user>")
        assert assert_problem(call(running, "PATCH", "/users/2", {"phone": "call me"}), 422)[
            "errors"] == [{"field": "phone", "message": "must be at most 30 of digits, spaces "
                                                        "and + - ( )"}]
        reply = call(running, "GET", "/users?phone=" + quote(PHONE) + "&sort=-phone")
        assert (reply.json(), reply.headers["X-Total-Count"]) == ([dict(ADA_WITH_PHONE, id=1)], "1")
        assert [user["id"] for user in call(running, "GET", "/users?sort=phone").json()] == [2, 1]


def test_a_field_added_to_the_table_has_fake_values(phone_users):
    with serving(phone_users, fake_users=2) as running:
        assert [user["phone"] for user in call(running, "GET", "/users").json()] == [
            "+1 555 0001", "+1 555 0002"]


def test_a_field_added_to_the_table_gains_its_column_in_an_older_db_file(phone_users, tmp_path):
    path = str(tmp_path / "users.db")
    running = rest_users.make_server("127.0.0.1", 0, quiet=True, db=path,
                                     users=[{"name": "Ada", "email": "ada@example.com"}])
    running.server_close()  # a file of the release before the field, with one user
    with serving(phone_users, db=path) as running:
        assert call(running, "GET", "/users/1").json() == {
            "id": 1, "name": "Ada", "email": "ada@example.com", "phone": None}
        reply = call(running, "PATCH", "/users/1", {"phone": PHONE})
        assert (reply.status, reply.headers["ETag"]) == (200, '"2-json"')
        assert call(running, "GET", "/users?phone=" + quote(PHONE)).json() == [
            dict(ADA_WITH_PHONE, id=1)]
    db = sqlite3.connect(path)
    assert db.execute("SELECT id, name, email, phone, version FROM users").fetchall() == [
        (1, "Ada", "ada@example.com", PHONE, 2)]
    db.close()


# A learner changes one decision of the core in each place it is made, once
CORE_DECISIONS = [  # (what the core says, what the learner makes it say)
    ('    return dict(pairs)\n',  # the JSON shape: one more key
     '    return dict(pairs, kind=resource.item)\n'),
    ('    return xml_element(resource.item, item_document(resource, item)',  # the XML element
     '    return xml_element("person", item_document(resource, item)'),
    ("        return value in values",  # a rule of the list's filter: names in any case
     "        return str(value).casefold() in [str(each).casefold() for each in values]"),
    ("    if json_q > 0 and (json_q >= xml_q or browser):",  # a tie goes to XML
     "    if json_q > 0 and (json_q > xml_q or browser):"),
    ('"There is no %s with id %s."', '"No %s has the id %s."'),  # a problem's detail
    ('"Date: " + self.date_time_string()]',  # a header on every response
     '"Date: " + self.date_time_string(), "X-Learner: was here"]'),
    ("json.JSONEncoder(ensure_ascii=False)", "json.JSONEncoder(ensure_ascii=True)"),
]


@pytest.mark.parametrize("plain", [False, True])
def test_a_decision_changed_in_the_core_shows_in_every_server(tmp_path, plain):
    module = module_from_source(tmp_path, "decided_users", changed_source(CORE_DECISIONS))
    with serving(module, plain=plain, users=[{"name": "Zoë", "email": "zoe@example.com"}]) as running:
        for _ in range(2):  # answered, then as the default server keeps it
            reply = call(running, "GET", "/users/1")
            assert reply.body == (
                b'{"id": 1, "name": "Zo\\u00eb", "email": "zoe@example.com", "kind": "user"}')
            assert reply.headers["X-Learner"] == "was here"
            reply = call(running, "GET", "/users?name=ZO%C3%8B",
                         headers={"Accept": "application/json, application/xml"})
            assert reply.body == (b"<users><person><id>1</id><name>Zo\xc3\xab</name><email>"
                                  b"zoe@example.com</email><kind>user</kind></person></users>")
            reply = call(running, "GET", "/users/9")
            assert assert_problem(reply, 404)["detail"] == "No user has the id 9."
            assert reply.headers["X-Learner"] == "was here"
        schemas = call(running, "GET", "/openapi.json").json()["components"]["schemas"]
        assert schemas["User"]["xml"] == {"name": "person"}  # the description says so too


@pytest.mark.parametrize("plain", [False, True])
def test_a_decision_changed_in_the_core_shows_for_a_second_resource(tmp_path, plain):
    module = module_from_source(tmp_path, "decided_todos", changed_source(CORE_DECISIONS))
    todos = module.Resource("todos", [module.Field("title", required=True),
                                      module.Field("done", "boolean", default=False)])
    with serving(module, plain=plain, resources=[module.USERS, todos]) as running:
        assert call(running, "POST", "/todos", {"title": "Zoë's"}).status == 201
        for _ in range(2):  # answered, then as the default server keeps it
            reply = call(running, "GET", "/todos/1")
            assert reply.body == (
                b'{"id": 1, "title": "Zo\\u00eb\'s", "done": false, "kind": "todo"}')
            assert reply.headers["X-Learner"] == "was here"
            reply = call(running, "GET", "/todos?title=ZO%C3%8B%27S",
                         headers={"Accept": "application/json, application/xml"})
            assert reply.body == (b"<todos><person><id>1</id><title>Zo\xc3\xab's</title>"
                                  b"<done>false</done><kind>todo</kind></person></todos>")
            reply = call(running, "GET", "/todos/9")
            assert assert_problem(reply, 404)["detail"] == "No todo has the id 9."
        schemas = call(running, "GET", "/openapi.json").json()["components"]["schemas"]
        assert schemas["Todo"]["xml"] == {"name": "person"}


MESSAGES_SAID_ONCE = [  # (what the core says, what the learner makes it say)
    ('"The %s is not valid; see the errors "', '"The %s is wrong; see the errors "'),
    ('"The query parameter %s is given more than once."', '"Give %s once."'),
    ('"has a key that is not an XML name, or a character XML cannot carry; ask for JSON"',
     '"is beyond XML"'),
]


def test_a_message_changed_in_the_core_shows_wherever_the_server_says_it(tmp_path):
    module = module_from_source(tmp_path, "said_once", changed_source(MESSAGES_SAID_ONCE))
    todos = module.Resource("todos", [module.Field("title", required=True),
                                      module.Field("userId", "integer", refers_to="users")])
    docs = module.Resource("docs", [module.Field("body", "json")])
    with serving(module, resources=[module.USERS, todos, docs]) as running:
        reply = call(running, "POST", "/users", {"name": ""})  # the fields' checks
        assert assert_problem(reply, 422)["detail"] == (
            "The user is wrong; see the errors for name, email.")
        reply = call(running, "POST", "/todos", {"title": "T", "userId": 9})  # a reference's
        assert assert_problem(reply, 422)["detail"] == (
            "The todo is wrong; see the errors for userId.")
        reply = call(running, "POST", "/docs", {"body": {"1a": 1}},
                     headers={"Accept": "application/xml"})  # what XML cannot carry
        assert xml_problem(reply.body)["errors"] == [
            {"field": "body", "message": "is beyond XML"}]
        assert call(running, "POST", "/docs", {"body": {"1a": 1}}).status == 201
        reply = call(running, "GET", "/docs/1", headers={"Accept": "application/xml"})
        assert assert_problem(reply, 406, "xml")["detail"] == "The doc's body is beyond XML."
        reply = call(running, "GET", "/users?limit=1&limit=2")  # the list's query
        assert assert_problem(reply, 400)["detail"] == (
            "Give limit once. See GET /users in the README.")
        reply = call(running, "GET", "/users?_page=1&_page=2")  # a dialect's
        assert assert_problem(reply, 400)["detail"] == (
            "Give _page once. See GET /users in the README.")


@pytest.fixture
def phone_server(phone_users):
    """The learner's copy, serving on a free port: the default server, every appendix in."""
    running = phone_users.make_server("127.0.0.1", 0, quiet=True)
    threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    yield running
    stop_server(running)


def test_a_field_added_to_the_table_shows_in_the_explorer(phone_server, phone_users):
    assert phone_users.USERS.field_names == ("name", "email", "phone")
    reply = call(phone_server, "GET", "/", headers={"Accept": "text/html"})
    page = reply.text()
    for label, control in (("user-phone", "input"), ("filter-phone", "input"), ("sort", "select")):
        assert '<label for="%s">' % label in page and '<%s id="%s"' % (control, label) in page
    assert '<th scope="col">email</th><th scope="col">phone</th><th scope="col">action</th>' in page
    assert '<option value="phone">' in page and '<option value="-phone">' in page
    assert '<input id="user-name" data-field="name" required>' in page
    assert '<input id="user-phone" data-field="phone">' in page  # optional: not required
    # the fields are in the page's HTML, not in its script: the policy's hashes do not change
    assert reply.headers["Content-Security-Policy"] == rest_users.EXPLORER_CSP


def test_the_explorer_sends_and_lists_a_field_added_to_the_table(browser, phone_server):
    base = "http://127.0.0.1:%d" % phone_server.server_address[1]
    browser.open(base + "/")
    browser.wait_for("document.getElementById('total').textContent !== ''")
    fill = ("document.getElementById('user-name').value = %s;"
            "document.getElementById('user-email').value = %s;"
            "document.getElementById('user-phone').value = %s;"
            "document.getElementById('send-POST').click()")
    browser.run(fill % ('"Ada"', '"ada@example.com"', '"+44 20 7946 0958"'))
    browser.wait_for("document.querySelector('#rows td:nth-child(4)')?.textContent"
                     " === '+44 20 7946 0958'")
    browser.run("document.querySelector('input[name=format][value=xml]').click()")
    browser.run(fill % ('"Bob"', '"bob@example.com"', '""'))  # an empty optional field...
    browser.wait_for("document.querySelectorAll('#rows tr').length === 2")
    posts = browser.run("[...document.querySelectorAll('#exchanges > li > pre:first-of-type')]"
                        ".map(pre => pre.textContent).filter(text => text.startsWith('POST'))")
    assert posts[0].endswith('{"name":"Ada","email":"ada@example.com","phone":"+44 20 7946 0958"}')
    assert posts[1].endswith(  # ...is left out
        "<user><name>Bob</name><email>bob@example.com</email></user>")
    assert call(phone_server, "GET", "/users/2").json()["phone"] is None
    cells = browser.run("[...document.querySelectorAll('#rows td')].map(cell => cell.textContent)")
    assert cells == ["1", "Ada", "ada@example.com", "+44 20 7946 0958", "Edit",
                     "2", "Bob", "bob@example.com", "", "Edit"]
    browser.run("document.querySelector('#rows button').click()")  # Edit Ada, read as XML
    browser.wait_for("document.getElementById('user-phone').value === '+44 20 7946 0958'")
    browser.run("document.getElementById('filter-phone').value = '+44 20 7946 0958';"
                "document.getElementById('sort').value = '-phone';"
                "document.querySelector('#list-form button[type=submit]').click()")
    browser.wait_for("document.querySelectorAll('#rows tr').length === 1")
    assert browser.run(LAST_EXCHANGE + ".querySelector('pre').textContent").startswith(
        "GET /users?sort=-phone&phone=%2B44+20+7946+0958&limit=10 HTTP/1.1")
    browser.run("document.getElementById('user-phone').value = '';"
                "document.getElementById('send-PUT').click()")  # a PUT without the phone...
    browser.wait_for("document.querySelectorAll('#rows tr').length === 0")  # (the filter's)
    assert call(phone_server, "GET", "/users/1").json()["phone"] is None  # ...removes it


# -- the OpenAPI description ---------------------------------------------------------------

def openapi(server):
    reply = call(server, "GET", "/openapi.json")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    return reply.json()


def test_the_openapi_document_declares_3_1_and_its_server(server, auth_server):
    for document in openapi(server), openapi(auth_server):
        assert document["openapi"].startswith("3.1")
        assert document["servers"] == [{"url": "/"}]  # the server that served the document
    assert "securitySchemes" not in openapi(server)["components"]  # no key: none declared
    assert openapi(auth_server)["components"]["securitySchemes"] == {
        "bearerAuth": {"type": "http", "scheme": "bearer"}}


def test_the_openapi_document_covers_every_route_and_method(server):
    paths = openapi(server)["paths"]
    assert set(paths) == {found.path for found in rest_users.DefaultHandler.route_table()}
    for found in rest_users.DefaultHandler.route_table():
        documented = {method.upper() for method in paths[found.path] if method != "parameters"}
        assert documented == set(found.allow.split(", ")), found.path


def test_the_openapi_document_lists_every_list_parameter(server):
    operation = openapi(server)["paths"]["/users"]["get"]
    assert [p["name"] for p in operation["parameters"]] == list(rest_users.USERS.list_parameters)


def test_the_list_operation_names_each_dialect_with_an_example_that_works(server):
    description = openapi(server)["paths"]["/users"]["get"]["description"]
    examples = re.findall(r"`(/users\?[^`]*)`", description)
    assert [example.split("?")[1].split("=")[0] for example in examples] == [
        "_start", "_page", "sort"]
    for dialect in ("json-server 0.17", "json-server 1.0", "ra-data-simple-rest"):
        assert dialect in description
    answers = [call(server, "GET", quote(example, safe="/?&=,:")) for example in examples]
    assert [reply.status for reply in answers] == [200, 200, 200]
    assert sorted(answers[1].json()) == ["data", "first", "items", "last", "next", "pages", "prev"]
    assert answers[2].headers["Content-Range"].startswith("users ")


def test_with_a_key_every_users_and_admin_operation_but_options_needs_bearer(auth_server):
    document = call(auth_server, "GET", "/openapi.json").json()  # open without the key
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            keyed = path.startswith(("/users", "/__admin/", "/db")) and method != "options"
            assert operation["security"] == ([{"bearerAuth": []}] if keyed else []), (path, method)
            if keyed:
                assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]


def test_without_a_key_every_operation_says_it_is_open(server):
    document = openapi(server)
    for path, method, operation in operations(document):
        assert operation["security"] == [], (path, method)  # security: [] is "open"
        assert "401" not in operation["responses"], (path, method)
    assert "WWW-Authenticate" not in document["components"]["headers"]


def operations(document):
    """Every (path, method, operation) of an OpenAPI document."""
    return [(path, method, operation) for path, item in document["paths"].items()
            for method, operation in item.items() if method != "parameters"]


def test_every_operation_has_a_unique_id_and_a_declared_tag(server, auth_server):
    for document in openapi(server), openapi(auth_server):
        ids = [operation["operationId"] for _, _, operation in operations(document)]
        assert len(ids) == len(set(ids)) == 25  # with GET, HEAD and OPTIONS /db
        assert all(re.fullmatch(r"[a-z][A-Za-z]+", name) for name in ids), ids
        declared = {tag["name"] for tag in document["tags"]}
        for path, method, operation in operations(document):
            assert len(operation["tags"]) == 1 and operation["tags"][0] in declared
            assert len(operation["description"]) > len(operation["summary"]), (path, method)
    named = {(path, method): operation["operationId"]
             for path, method, operation in operations(openapi(server))}
    assert named[("/users", "get")] == "listUsers"
    assert named[("/users/{id}", "head")] == "headUser"
    assert named[("/users/{id}", "patch")] == "patchUser"
    assert named[("/__admin/reset", "post")] == "resetUsers"
    assert {operation["tags"][0] for path, _, operation in operations(openapi(server))
            if path.startswith("/__admin/")} == {"testing"}


def test_a_head_response_declares_no_body(server, auth_server):
    for document in openapi(server), openapi(auth_server):
        for path, method, operation in operations(document):
            if method == "head":
                for code, response in operation["responses"].items():
                    assert "content" not in resolve(document, response), (path, code)


def examples_in(document, node, schema=None):
    """Every (example, schema) pair in a part of the document, wherever examples stand."""
    found = []
    if isinstance(node, dict):
        for example in node.get("examples", []) if "type" in node else []:
            found.append((example, node))
        if "example" in node:
            found.append((node["example"], node.get("schema", node)))
        for value in node.values():
            found += examples_in(document, value)
    elif isinstance(node, list):
        for value in node:
            found += examples_in(document, value)
    return found


def test_the_examples_are_readable_and_valid(server, auth_server):
    for document in openapi(server), openapi(auth_server):
        found = examples_in(document, document)
        assert len(found) >= 6
        for example, schema in found:
            assert schema_errors(document, schema, example) == [], example
        schemas = document["components"]["schemas"]
        assert schemas["User"]["examples"] == [
            {"id": 1, "name": "Ada Lovelace", "email": "ada@example.com"}]
        assert schemas["NewUser"]["examples"] == [
            {"name": "Ada Lovelace", "email": "ada@example.com"}]
        assert schemas["UserPatch"]["examples"] == [{"name": "Ada King"}]
        [user_id] = document["paths"]["/users/{id}"]["parameters"]
        assert user_id["example"] == 1


def references(node):
    """The names every $ref in a part of the document points to."""
    if isinstance(node, dict):
        found = {node["$ref"]} if "$ref" in node else set()
        for value in node.values():
            found |= references(value)
        return found
    if isinstance(node, list):
        return set().union(*map(references, node)) if node else set()
    return set()


def test_nothing_is_declared_that_is_not_used(server, auth_server):
    for document in openapi(server), openapi(auth_server):
        used = references(document)
        for kind, declared in document["components"].items():
            if kind == "securitySchemes":
                continue
            for name in declared:
                assert "#/components/%s/%s" % (kind, name) in used, (kind, name)
        assert used <= {"#/components/%s/%s" % (kind, name)
                        for kind, declared in document["components"].items()
                        for name in declared}
        schemes = {name for _, _, operation in operations(document)
                   for requirement in operation["security"] for name in requirement}
        assert schemes == set(document["components"].get("securitySchemes", {}))


def test_the_xml_of_a_422_is_described_as_sent(server):
    document = openapi(server)
    problem = document["components"]["schemas"]["Problem"]
    errors = problem["properties"]["errors"]
    reply = call(server, "POST", "/users", "<user><name></name><email>x</email></user>",
                 {"Content-Type": "application/xml", "Accept": "application/xml"})
    sent = ElementTree.fromstring(reply.body)
    namespace = "{%s}" % problem["xml"]["namespace"]
    assert sent.tag == namespace + problem["xml"]["name"] or sent.tag == problem["xml"]["name"]
    assert errors["xml"] == {"name": "errors", "wrapped": True}
    assert errors["items"]["xml"] == {"name": "i"}
    [sent_errors] = [child for child in sent if child.tag.endswith("errors")]
    assert [item.tag.split("}")[-1] for item in sent_errors] == ["i", "i"]
    assert [field.tag.split("}")[-1] for field in sent_errors[0]] == ["field", "message"]


def resolve(document, schema):
    while "$ref" in schema:
        node = document
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


JSON_KINDS = {"object": dict, "array": list, "string": str, "integer": int,
              "number": (int, float), "boolean": bool, "null": type(None)}


def schema_errors(document, schema, value, where="body"):
    """What in value breaks the (small subset of) JSON Schema the document uses: the type,
    or any of a list of them (none given: any value), required keys and properties, items,
    lengths, patterns, ranges and enums."""
    schema = resolve(document, schema)
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or list(JSON_KINDS)
    if not any(isinstance(value, JSON_KINDS[kind]) and (kind == "boolean") == isinstance(
            value, bool) for kind in kinds):
        return ["%s: %r is not %s" % (where, value, " or ".join(kinds))]
    errors = []
    if isinstance(value, dict):
        errors += ["%s: %s missing" % (where, key) for key in schema.get("required", [])
                   if key not in value]
        for key, item in value.items():
            if key in schema.get("properties", {}):
                errors += schema_errors(document, schema["properties"][key], item, where + "." + key)
            elif schema.get("additionalProperties") is False:
                errors.append("%s: %s not allowed" % (where, key))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += schema_errors(document, schema["items"], item, "%s[%d]" % (where, index))
    if isinstance(value, str) and not schema.get("minLength", 0) <= len(value) <= schema.get(
            "maxLength", len(value)):
        errors.append("%s: length out of range" % where)
    if isinstance(value, str) and not re.search(schema.get("pattern", ""), value):
        errors.append("%s: does not match the pattern" % where)
    if type(value) in (int, float) and not schema.get("minimum", value) <= value <= schema.get(
            "maximum", value):
        errors.append("%s: out of range" % where)
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: not in enum" % where)
    return errors


def check_against_openapi(document, path, method, reply, status):
    """Assert that a reply has the status expected, that the document declares that status
    for the operation, and that the reply's headers and body are as it describes."""
    assert reply.status == status, (path, method, reply.status, reply.body)
    response = document["paths"][path][method.lower()]["responses"].get(str(status))
    assert response is not None, (path, method, status)
    for name, header in response.get("headers", {}).items():
        if name != "WWW-Authenticate" or reply.status == 401:
            assert name in reply.headers, (path, method, reply.status, name)
        if resolve(document, header)["schema"]["type"] == "integer":
            assert reply.headers[name].isdigit()
    media_type = reply.headers.get("Content-Type", "").split(";")[0]
    if reply.body:
        assert media_type in response["content"], (path, method, reply.status, media_type)
        if media_type.endswith("json"):
            schema = response["content"][media_type]["schema"]
            assert schema_errors(document, schema, reply.json()) == []


def test_every_response_matches_the_openapi_document(server):
    document = openapi(server)
    json_body = {"Content-Type": "application/json"}
    email = new_email()
    first = create(server)["id"]
    item = "/users/%d" % first
    exchanges = [
        ("/", "GET", "/", None, {}, 200),
        ("/", "GET", "/", None, {"Accept": "image/png"}, 406),
        ("/users", "POST", "/users", {"name": "Doc", "email": email}, {}, 201),
        ("/users", "POST", "/users", {"name": "Doc", "email": email}, {}, 409),
        ("/users", "POST", "/users", {"name": "", "email": "x"}, {}, 422),
        ("/users", "POST", "/users", "{", json_body, 400),
        ("/users", "POST", "/users", "x", {"Content-Type": "text/plain"}, 415),
        ("/users", "GET", "/users?limit=2&sort=-id", None, {}, 200),
        ("/users", "GET", "/users?limit=0", None, {}, 400),
        ("/users", "HEAD", "/users", None, {}, 200),
        ("/users", "OPTIONS", "/users", None, {}, 204),
        ("/users/{id}", "GET", item, None, {}, 200),
        ("/users/{id}", "GET", item, None, {"If-None-Match": "*"}, 304),
        ("/users/{id}", "GET", "/users/999999", None, {}, 404),
        ("/users/{id}", "PUT", item, {"name": "Doc", "email": new_email()}, {}, 200),
        ("/users/{id}", "PUT", item, {"name": "Doc", "email": email}, {"If-Match": '"0"'}, 412),
        ("/users/{id}", "PATCH", item, {"name": "Doc 2"}, {}, 200),
        ("/users/{id}", "PATCH", item, {"nope": 1}, {}, 422),
        ("/users/{id}", "DELETE", "/users/999999", None, {}, 404),
        ("/users/{id}", "DELETE", item, None, {"Prefer": "return=minimal"}, 204),
        ("/openapi.json", "GET", "/openapi.json", None, {}, 200),
    ]
    for path, method, target, body, headers, status in exchanges:
        check_against_openapi(document, path, method,
                              call(server, method, target, body, headers), status)
    user = create(server)
    check_against_openapi(document, "/users/{id}", "DELETE",
                          call(server, "DELETE", "/users/%d" % user["id"]), 200)


def test_auth_responses_match_the_openapi_document(auth_server):
    document = openapi(auth_server)
    check_against_openapi(document, "/users", "GET", call(auth_server, "GET", "/users"), 401)
    check_against_openapi(document, "/users/{id}", "PUT", call(
        auth_server, "PUT", "/users/1", {"name": "A"}, {"Authorization": "Bearer nope"}), 401)


def test_fail_rate_replies_match_the_openapi_document(always_failing):
    document = openapi(always_failing)
    for method, path, template in [("GET", "/users", "/users"), ("POST", "/users", "/users"),
                                   ("HEAD", "/users/1", "/users/{id}"),
                                   ("PATCH", "/users/1", "/users/{id}")]:
        body = {"name": "A"} if method in ("POST", "PATCH") else None
        reply = call(always_failing, method, path, body, BEARER)
        check_against_openapi(document, template, method, reply, 503)
        assert "Retry-After" in document["paths"][template][method.lower()]["responses"]["503"][
            "headers"]


def test_the_openapi_document_names_the_faults_every_operation_can_meet(server):
    document = openapi(server)
    for path, item in document["paths"].items():
        for method, described in item.items():
            if method == "parameters":
                continue
            codes = set(described["responses"])
            assert {"408", "421"} <= codes, (path, method)
            if path.startswith("/users") and method != "options":
                assert "503" in codes, (path, method)
            if path.startswith("/users") and method in ("post", "put", "patch", "delete"):
                assert "507" in codes, (path, method)  # the test controls write no store
    responses = document["paths"]["/users"]["get"]["responses"]
    assert responses["421"]["description"] == ("A Host this server does not answer for; "
                                               "start it with --allow-host NAME")
    assert responses["408"]["description"] == ("The request stopped arriving for the idle "
                                               "timeout")
    assert responses["503"]["description"] == ("Not now: asked for with --fail-rate, or the "
                                               "database is locked or failing; try again after "
                                               "Retry-After")
    assert document["paths"]["/users"]["post"]["responses"]["507"]["description"] == (
        "The server's disk is full: nothing was changed")


def learner_copy(tmp_path, name, *changes):
    """rest_users.py as a learner changed it, each (said, changed) once, imported as NAME."""
    return module_from_source(tmp_path, name, changed_source(changes))


@contextlib.contextmanager
def serving(module, **options):
    """A module's default server on a free port, for the length of a with block."""
    running = module.make_server("127.0.0.1", 0, quiet=True, **options)
    threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    try:
        yield running
    finally:
        stop_server(running)


def test_a_verb_removed_from_the_routes_leaves_the_openapi_document(tmp_path):
    module = learner_copy(tmp_path, "learner_without_post", (', "POST": "create"', ""))
    with serving(module, api_key=KEY) as running:
        document = openapi(running)
    assert set(document["paths"]["/users"]) == {"get", "head", "options"}
    assert set(document["paths"]["/users/{id}"]) == {
        "parameters", "get", "head", "put", "patch", "delete", "options"}
    assert "createUser" not in [operation["operationId"] for _, _, operation in operations(
        document)]
    assert "NewUser" not in document["components"]["schemas"]  # only POST's body used it
    assert "Location" not in document["components"]["headers"]



def test_a_route_added_to_the_routes_shows_in_the_openapi_document(tmp_path):
    module = learner_copy(tmp_path, "learner_with_count", (
        "                  ITEM_ACTIONS, resource)]",
        "                  ITEM_ACTIONS, resource),\n"
        '            route("/users/count", r"/users/count", {"GET": "count_users"})]'))
    document = module.openapi_document(module.DefaultHandler.route_table(), auth=True)
    item = document["paths"]["/users/count"]
    assert {method: operation["operationId"] for method, operation in item.items()} == {
        "get": "countUsers", "head": "headCountUsers", "options": "optionsUsersCount"}
    assert item["get"]["security"] == [{"bearerAuth": []}]
    ids = [operation["operationId"] for _, _, operation in operations(document)]
    assert len(ids) == len(set(ids)) == 28  # with GET, HEAD and OPTIONS /db

def test_a_field_added_to_the_fields_shows_in_the_openapi_document(tmp_path):
    module = learner_copy(tmp_path, "learner_with_phone", *PHONE_CHANGE)
    with serving(module) as running:
        document = openapi(running)
        user = create(running)  # no phone: JSON says null
        reply = call(running, "GET", "/users/%d" % user["id"])
        check_against_openapi(document, "/users/{id}", "GET", reply, 200)
    schemas = document["components"]["schemas"]
    phone = {"type": ["string", "null"], "maxLength": 30, "examples": ["+44 20 7946 0958"]}
    for name in "User", "NewUser", "UserReplacement", "UserPatch":
        assert schemas[name]["properties"]["phone"] == phone, name
    assert schemas["User"]["required"] == ["id", "name", "email"]  # an optional field
    assert schemas["User"]["examples"] == [{"id": 1, "name": "Ada Lovelace",
                                            "email": "ada@example.com",
                                            "phone": "+44 20 7946 0958"}]
    for example, schema in examples_in(document, document):
        assert schema_errors(document, schema, example) == [], example
    parameters = document["paths"]["/users"]["get"]["parameters"]
    assert [p["name"] for p in parameters] == ["limit", "offset", "sort", "name", "email",
                                               "phone", "q"]
    [sort] = [p for p in parameters if p["name"] == "sort"]
    assert re.search(sort["schema"]["pattern"], "phone,-phone,-id")
    [phone_filter] = [p for p in parameters if p["name"] == "phone"]
    assert phone_filter["description"] == "exact phone; repeated: any of them"
    assert phone_filter["schema"] == {"type": "array", "items": {"type": "string",
                                                                 "minLength": 1}}


# -- the core alone, and what the appendices change ------------------------------------------

BANNER = "# Appendices: you can stop reading here"


def core_source():
    """The lines of rest_users.py before the appendices' banner."""
    with open(os.path.join(HERE, "rest_users.py"), encoding="utf-8") as file:
        source = file.read()
    return source[:source.rindex("\n", 0, source.index(BANNER) - 1) + 1]


IMPORTED = {}  # (name, source): module


def module_from_source(tmp_path, name, source):
    """Save source as NAME.py in tmp_path and import it as a module of its own; a test run
    on more than one server imports the same NAME and source once (compiling a copy of
    rest_users.py takes a tenth of a second, half a second on PyPy)."""
    if (name, source) not in IMPORTED:
        path = tmp_path / (name + ".py")
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, str(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        IMPORTED[name, source] = module
    return IMPORTED[name, source]


def names_used_but_not_bound(source):
    """The names a module's code reads that it binds nowhere (at the top, or locally) and
    that are not builtins: the names it would take from code after it."""
    tree = ast.parse(source)
    read, bound = set(), set(dir(builtins))
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
    return read - bound


def test_the_core_names_nothing_that_only_the_appendices_define():
    source = core_source()
    # the core holds the resources' declarations and their types' table, reads bodies in
    # JSON and XML (the seed's promise: both formats, both ways) and answers Prefer, so it
    # runs the README's session; items hold any key as a field; the json type,
    # --fake-users' people, singular resources and the index of unique values are the
    # appendices': a book read in one sitting
    assert len(source.splitlines()) <= 1390
    assert names_used_but_not_bound(source) == set()


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """The core alone, as a module, serving on a free port with a MemoryStore."""
    module = module_from_source(tmp_path_factory.mktemp("core"), "core_users", core_source())
    running = module.UsersServer(("127.0.0.1", 0), module.MemoryStore())
    serve_in_a_thread(running)
    yield running
    stop_server(running)


ADA = {"id": 1, "name": "Ada Lovelace", "email": "ada@example.com"}
ADA_XML = b"<user><id>1</id><name>Ada Lovelace</name><email>ada@example.com</email></user>"


def test_the_core_alone_creates_reads_and_lists_in_json_and_xml(core):
    reply = call(core, "POST", "/users", {"name": "Ada Lovelace", "email": "ada@example.com"})
    assert (reply.status, reply.headers["Location"], reply.headers["ETag"]) == (
        201, "/users/1", '"1-json"')
    assert reply.headers["Content-Type"] == JSON_TYPE and reply.json() == ADA
    reply = call(core, "GET", "/users/1", headers={"Accept": "application/xml"})
    assert (reply.status, reply.headers["Content-Type"], reply.headers["ETag"], reply.body) == (
        200, XML_TYPE, '"1-xml"', ADA_XML)
    assert reply.headers["Vary"] == "Accept"
    for n in range(2, 4):
        call(core, "POST", "/users", {"name": "User %d" % n, "email": "u%d@example.com" % n})
    reply = call(core, "GET", "/users?limit=1&offset=1&sort=-name")
    assert reply.json() == [{"id": 2, "name": "User 2", "email": "u2@example.com"}]
    assert reply.headers["X-Total-Count"] == "3"
    assert reply.headers["Link"] == (
        '</users?sort=-name&limit=1&offset=0>; rel="first", '
        '</users?sort=-name&limit=1&offset=2>; rel="last", '
        '</users?sort=-name&limit=1&offset=0>; rel="prev", '
        '</users?sort=-name&limit=1&offset=2>; rel="next"')
    reply = call(core, "GET", "/users?q=LOVE", headers={"Accept": "application/xml"})
    assert reply.body == b"<users>" + ADA_XML + b"</users>"
    assert reply.headers["X-Total-Count"] == "1"


def test_the_core_alone_guards_versions_and_answers_problems(core):
    if call(core, "GET", "/users/1").status == 404:
        call(core, "POST", "/users", {"name": "Ada Lovelace", "email": "ada@example.com"})
    reply = call(core, "GET", "/users/1", headers={"If-None-Match": '"1-json"'})
    assert (reply.status, reply.headers["ETag"], reply.body) == (304, '"1-json"', b"")
    reply = call(core, "PUT", "/users/1", {"name": "Ada King", "email": "ada@example.com"},
                 {"If-Match": '"0-json"'})
    assert assert_problem(reply, 412)["detail"] == (
        "The user has changed since you read it (If-Match does not name its current ETag); "
        "GET it again and retry.")
    reply = call(core, "PATCH", "/users/1", {"name": "Ada King"},
                 {"If-Match": '"1-xml"', "Accept": "application/xml"})
    assert (reply.status, reply.headers["ETag"]) == (200, '"2-xml"')
    assert reply.body == ADA_XML.replace(b"Ada Lovelace", b"Ada King")
    assert assert_problem(call(core, "POST", "/users", {"name": "", "email": "ada@example.com"}),
                          422)["errors"] == [{"field": "name",
                                              "message": "must not be empty or only white space"}]
    assert_problem(call(core, "POST", "/users", {"name": "A", "email": "ADA@example.com"}), 409)
    reply = call(core, "DELETE", "/users/1", headers={"Accept": "application/xml"})
    assert (reply.status, reply.body) == (200, ADA_XML.replace(b"Ada Lovelace", b"Ada King"))
    assert assert_problem(call(core, "GET", "/users/1", headers={"Accept": "application/xml"}),
                          404, "xml")["detail"] == "There is no user with id 1."
    reply = call(core, "DELETE", "/users")
    assert assert_problem(reply, 405)["detail"] == (
        "/users does not take DELETE; it takes GET, POST, HEAD, OPTIONS.")
    assert reply.headers["Allow"] == "GET, POST, HEAD, OPTIONS"
    assert_problem(call(core, "GET", "/users", headers={"Accept": "image/png"}), 406)
    reply = call(core, "OPTIONS", "/users/7")
    assert (reply.status, reply.headers["Allow"]) == (204, "GET, PUT, PATCH, DELETE, HEAD, OPTIONS")


def test_the_default_server_names_every_body_type_it_reads_in_the_415(server):
    reply = call(server, "POST", "/users", "name=Ada", {"Content-Type": "text/plain"})
    assert assert_problem(reply, 415)["detail"] == (
        "The body must be application/json, application/xml or text/xml (and for PATCH "
        "application/merge-patch+json), in UTF-8, not text/plain.")


def test_the_core_alone_asks_for_the_api_key(tmp_path):
    module = module_from_source(tmp_path, "keyed_core", core_source())
    running = module.UsersServer(("127.0.0.1", 0), module.MemoryStore(), api_key=KEY)
    threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    try:
        reply = call(running, "GET", "/users")
        assert assert_problem(reply, 401)["detail"] == (
            "This request needs the header Authorization: Bearer <API key>.")
        assert reply.headers["WWW-Authenticate"] == 'Bearer realm="users"'
        assert call(running, "GET", "/users", headers={"Authorization": "Bearer " + KEY}).json() == []
    finally:
        stop_server(running)


LEARNER_CHANGES = [  # (what the core says, what a learner makes it say)
    ('"There is nothing at %s; %s." % (printable(path), where)', '"Nothing lives at %s." % path'),
    ('fields = [("Vary", self.server.vary), ',
     'fields = [("Vary", self.server.vary), ("X-Learner", "was here"), '),
    ('{"GET": "list", "POST": "create"}', '{"GET": "list"}'),
    ("MAX_NAME_LENGTH = 200", "MAX_NAME_LENGTH = 5"),
]


@pytest.mark.parametrize("plain", [False, True])
def test_a_learners_change_to_the_core_shows_in_the_default_server(tmp_path, plain):
    with open(os.path.join(HERE, "rest_users.py"), encoding="utf-8") as file:
        source = file.read()
    for said, changed in LEARNER_CHANGES:
        assert source.count(said) == 1, said
        source = source.replace(said, changed)
    module = module_from_source(tmp_path, "learner_users", source)
    running = module.make_server("127.0.0.1", 0, quiet=True, plain=plain,
                                 users=[{"name": "Ada", "email": "ada@example.com"}])
    threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    try:
        reply = call(running, "GET", "/nope")
        assert assert_problem(reply, 404)["detail"] == "Nothing lives at /nope."
        assert reply.headers["X-Learner"] == "was here"
        reply = call(running, "POST", "/users", {"name": "Bob", "email": "bob@example.com"})
        assert (reply.status, reply.headers["Allow"]) == (405, "GET, HEAD, OPTIONS")
        reply = call(running, "PUT", "/users/1", {"name": "Adaline", "email": "ada@example.com"})
        assert assert_problem(reply, 422)["errors"] == [
            {"field": "name", "message": "must be at most 5 characters long"}]
        assert call(running, "GET", "/users/1").headers["X-Learner"] == "was here"
    finally:
        stop_server(running)


def request(head, body=b""):
    """A raw request on a connection the server closes after it: HEAD lines, CRLF ends."""
    return head.replace(b"\n", b"\r\n") + b"Connection: close\r\n\r\n" + body


POST_JSON = b"POST /users HTTP/1.1\nHost: localhost\nContent-Type: application/json\n"
SAME_BYTES_REQUESTS = [
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nAccept: application/xml\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nAccept: text/xml, */*;q=0.1\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nAccept: application/problem+json\n"),
    request(b"GET /users/99 HTTP/1.1\nHost: localhost\nAccept: application/problem+xml\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nAccept: image/png\n"),
    request(b'GET /users/1 HTTP/1.1\nHost: localhost\nIf-None-Match: "1-json"\n'),
    request(b"HEAD /users/1 HTTP/1.1\nHost: localhost\n"),
    request(b"GET /users?limit=2&offset=1&sort=-name HTTP/1.1\nHost: localhost\n"),
    request(b"GET /users?limit=2&offset=1&sort=-id HTTP/1.1\nHost: localhost\n"),
    request(b"GET /users?offset=3 HTTP/1.1\nHost: localhost\n"),
    request(b"GET /users?q=ADA&limit=1 HTTP/1.1\nHost: localhost\nAccept: application/xml\n"),
    request(b"GET /users?limit=0 HTTP/1.1\nHost: localhost\n"),
    request(b"GET / HTTP/1.1\nHost: localhost\n"),
    request(b"GET / HTTP/1.1\nHost: localhost\nAccept: text/html\n"),
    request(b"GET /openapi.json HTTP/1.1\nHost: localhost\n"),
    request(POST_JSON + b"Content-Length: 43\n", b'{"name": "Eve", "email": "eve@example.com"}'),
    request(POST_JSON + b"Content-Length: 26\n", b'{"name": "", "email": "x"}'),
    request(POST_JSON + b"Content-Length: 1\n", b"{"),
    request(POST_JSON + b"Expect: 100-continue\nContent-Length: 43\n",
            b'{"name": "Fay", "email": "fay@example.com"}'),
    request(b"POST /users HTTP/1.1\nHost: localhost\nContent-Type: text/plain\n"
            b"Content-Length: 1\n", b"x"),
    request(b"POST /users HTTP/1.1\nHost: localhost\nContent-Type: application/xml\n"
            b"Content-Length: 59\n", b"<user><name>Gil</name><email>gil@example.com</email></user>"),
    request(b"POST /users HTTP/1.1\nHost: localhost\nContent-Type: application/xml\n"
            b"Content-Length: 37\n", b'<!DOCTYPE user [<!ENTITY a "a">]><u/>'),
    request(b'PUT /users/2 HTTP/1.1\nHost: localhost\nIf-Match: "0-json"\n'
            b"Content-Type: application/json\nContent-Length: 41\n",
            b'{"name": "Bo", "email": "bo@example.com"}'),
    request(b"PATCH /users/2 HTTP/1.1\nHost: localhost\nContent-Type: application/merge-patch+json"
            b"\nContent-Length: 16\n", b'{"name": "Bono"}'),
    request(b"DELETE /users/3 HTTP/1.1\nHost: localhost\nAccept: application/xml\n"),
    request(b"DELETE /users/4 HTTP/1.1\nHost: localhost\nPrefer: return=minimal\n"),
    request(b"GET /users?limit=2&offset=1&sort=-name HTTP/1.1\nHost: localhost\n"),  # anew
    request(b"GET /users?offset=3 HTTP/1.1\nHost: localhost\n"),
    request(b"OPTIONS /users HTTP/1.1\nHost: localhost\n"),
    request(b"DELETE /users HTTP/1.1\nHost: localhost\n"),
    request(b"BREW /users HTTP/1.1\nHost: localhost\n"),
    request(b"GET /nope HTTP/1.1\nHost: localhost\n"),
    request(b"GET //users HTTP/1.1\nHost: localhost\n"),
    request(b"GET http://localhost:1/users/1 HTTP/1.1\nHost: evil.example\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: evil.example\n"),
    request(b"GET /users/1 HTTP/1.0\n"),
    request(b"GET /users/1 HTTP/1.1\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nBad Name: x\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nX-A: 1\n folded\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nNo colon here\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nX(A): 1\nX-B: \x00\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nX-B: \x00\nBad Name: 1\n"),
    request(b"GET /users/1 HTTP/1.1\nHost: localhost\nX-C: a\rb\n"),
    request(b"GET /users/1 HTTP/1.1\n folded\nHost: localhost\n"),
    request(POST_JSON + b"Content-Length: 1\x0b\n", b"{"),
    request(POST_JSON + b"Content-Length: 2\nContent-Length: 3\n", b"{}"),
    request(POST_JSON + b"Content-Length: 2\nTransfer-Encoding: chunked\n", b"{}"),
    request(POST_JSON + b"Transfer-Encoding: chunked\n", b"2\r\n{}\r\n0\r\n\r\n"),
    request(POST_JSON + b"Content-Length: 2000000\n"),
    request(b"GET /users HTTX/1.1\nHost: localhost\n"),
    request(b"GET /users HTTP/2.0\nHost: localhost\n"),
    b"GET /users\r\n\r\n",
    request(b"GET /users HTTP/1.1\nHost: localhost\n" + b"X-N: 1\n" * 150),
    request(b"GET /users HTTP/1.1\nHost: localhost\nX-Long: " + b"x" * 70000 + b"\n"),
    request(b"GET /" + b"x" * 70000 + b" HTTP/1.1\nHost: localhost\n"),
]


def test_the_speed_ups_answer_byte_for_byte_as_the_core_does():
    """The default server and the plain one, in the same state, answer every request alike
    (but for the Date): the speed-ups change how, never what."""
    replies = {}
    for variant in VARIANTS:
        running = start_server(variant, users=[{"name": "User %d" % n, "email": "u%d@x" % n}
                                               for n in range(5)] + [ADA])
        try:
            replies[variant] = [re.sub(rb"Date: [^\r]*\r\n", b"Date: -\r\n", raw(running, sent))
                                for sent in SAME_BYTES_REQUESTS]
        finally:
            stop_server(running)
    for sent, default, plain in zip(SAME_BYTES_REQUESTS, replies["default"], replies["plain"]):
        assert default == plain, sent[:80]
    assert len(set(reply[:12] for reply in replies["default"])) > 10  # many kinds of answer


def test_the_speed_ups_format_dates_as_http_server_does(monkeypatch):
    handler = rest_users.DefaultHandler.__new__(rest_users.DefaultHandler)
    for second in (0, 951782400, 1795000000, 1795000059):
        monkeypatch.setattr(time, "time", lambda: second + 0.5)
        assert handler.date_time_string() == http.server.BaseHTTPRequestHandler.date_time_string(
            handler)
        assert handler.log_date_time_string() == (
            http.server.BaseHTTPRequestHandler.log_date_time_string(handler))


# -- test controls: a reset and the journal of requests -------------------------------------

LOADED = [{"name": "Ada Lovelace", "email": "ada@example.com"},
          {"id": 7, "name": "Alan Turing", "email": "alan@example.com"}]


def everyone(server):
    return call(server, "GET", "/users?limit=1000").json()


def change_everything(server):
    """Create, change and delete users, so that a reset has something to undo."""
    first = everyone(server)
    created = create(server, "Someone New")
    call(server, "PATCH", "/users/%d" % created["id"], {"name": "Changed"})
    if first:
        call(server, "DELETE", "/users/%d" % first[0]["id"])
        call(server, "PUT", "/users/%d" % first[-1]["id"], {"name": "X", "email": "x@example.com"})


@pytest.mark.parametrize("options, next_id", [
    ({"fake_users": 3}, 4), ({"users": LOADED}, 9), ({}, 1),
    ({"users": LOADED, "fake_users": 2}, 11)])  # Ada takes 8, after the 7 that was given
def test_a_reset_brings_back_the_starting_users_and_ids_after_them(variant, options, next_id):
    running = start_server(variant, **options)
    try:
        started_with = everyone(running)
        change_everything(running)
        assert everyone(running) != started_with
        reply = call(running, "POST", "/__admin/reset")
        assert (reply.status, reply.body) == (204, b"")
        assert everyone(running) == started_with
        assert create(running)["id"] == next_id  # as after a fresh start
        assert call(running, "GET", "/users/%d" % next_id).status == 200
    finally:
        stop_server(running)


def test_a_reset_with_a_database_is_409_and_changes_nothing(tmp_path, variant):
    running = start_server(variant, db=str(tmp_path / "u.db"), fake_users=2)
    try:
        change_everything(running)
        before = everyone(running)
        problem = assert_problem(call(running, "POST", "/__admin/reset"), 409)
        assert problem["detail"] == ("This server keeps its users in the SQLite file %s, and a "
                                     "database file is not reset over HTTP: nothing was "
                                     "changed." % (tmp_path / "u.db"))
        assert everyone(running) == before
    finally:
        stop_server(running)


@pytest.fixture
def journaled(variant):
    running = start_server(variant, api_key=KEY, fake_users=2)
    yield running
    stop_server(running)


BEARER_HEADERS = {"Authorization": "Bearer " + KEY}


def journal(server, headers=BEARER_HEADERS):
    """The requests a server's journal holds, read as a test suite would."""
    reply = call(server, "GET", "/__admin/requests", headers=headers)
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    return reply.json()["requests"]


def test_the_journal_keeps_each_users_request_as_it_came(journaled):
    started = time.time()
    body = json.dumps({"name": "Ada", "email": "ada@example.com"})
    headers = dict(BEARER_HEADERS, **{"Content-Type": "application/json", "X-Test": "1",
                                      "Cookie": "session=secret"})
    call(journaled, "POST", "/users?from=test", body, headers)
    call(journaled, "GET", "/users/99", headers=BEARER_HEADERS)
    call(journaled, "GET", "/", headers=BEARER_HEADERS)  # not under /users: not kept
    call(journaled, "GET", "/users")  # no key: kept, with its 401
    first, second, third = journal(journaled)
    assert {key: first[key] for key in ("method", "target", "body", "status")} == {
        "method": "POST", "target": "/users?from=test", "body": body, "status": 201}
    assert first["headers"] == {"Host": "127.0.0.1:%d" % journaled.server_address[1],
                                "Accept-Encoding": "identity", "Content-Length": str(len(body)),
                                "Authorization": "Bearer ***", "Content-Type": "application/json",
                                "X-Test": "1", "Cookie": "***"}
    assert (second["method"], second["target"], second["status"], second["body"]) == (
        "GET", "/users/99", 404, "")
    assert (third["target"], third["status"]) == ("/users", 401)
    for entry in (first, second, third):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["received"])
        when = time.mktime(time.strptime(entry["received"][:19], "%Y-%m-%dT%H:%M:%S"))
        assert abs(when - time.timezone - started) < 60
    assert [entry["received"] for entry in (first, second, third)] == sorted(
        entry["received"] for entry in (first, second, third))


def test_the_journal_keeps_the_last_thousand_and_64_kib_of_each_body(journaled):
    big = b"\xff" + b"a" * 70000
    call(journaled, "POST", "/users", big, dict(BEARER_HEADERS, **{"Content-Type": "text/plain"}))
    connection = connect(journaled)
    for n in range(1000):
        connection.request("GET", "/users/%d" % (n + 1), headers=BEARER_HEADERS)
        connection.getresponse().read()
    connection.close()
    kept = journal(journaled)
    assert len(kept) == 1000
    assert [entry["target"] for entry in kept] == ["/users/%d" % (n + 1) for n in range(1000)]
    call(journaled, "DELETE", "/__admin/requests", headers=BEARER_HEADERS)
    call(journaled, "POST", "/users", big, dict(BEARER_HEADERS, **{"Content-Type": "text/plain"}))
    (entry,) = journal(journaled)
    assert entry["status"] == 415 and entry["body"] == "\ufffd" + "a" * 65535


def test_the_journal_is_emptied_by_delete_and_by_a_reset(journaled):
    call(journaled, "GET", "/users", headers=BEARER_HEADERS)
    reply = call(journaled, "DELETE", "/__admin/requests", headers=BEARER_HEADERS)
    assert (reply.status, reply.body) == (204, b"")
    assert journal(journaled) == []
    call(journaled, "GET", "/users", headers=BEARER_HEADERS)
    assert call(journaled, "POST", "/__admin/reset", headers=BEARER_HEADERS).status == 204
    assert journal(journaled) == []


@pytest.mark.parametrize("method, path", [("POST", "/__admin/reset"),
                                          ("GET", "/__admin/requests"),
                                          ("DELETE", "/__admin/requests"),
                                          ("GET", "/__admin/nothing-here")])
def test_the_test_controls_need_the_key_before_anything_else(journaled, method, path):
    reply = call(journaled, method, path)
    assert assert_problem(reply, 401)["detail"] == (
        "This request needs the header Authorization: Bearer <API key>.")
    assert reply.headers["WWW-Authenticate"] == 'Bearer realm="users"'
    reply = call(journaled, method, path, headers={"Authorization": "Bearer " + KEY,
                                                  "Host": "evil.example"})
    assert assert_problem(reply, 421)["title"] == reason_phrase(421)
    assert call(journaled, "GET", "/__admin/nothing-here", headers=BEARER_HEADERS).status == 404


def test_the_test_controls_are_never_delayed_failed_cors_or_kept(variant):
    running = start_server(variant, delay=400, fail_rate=1.0, cors="https://app.example")
    origin = {"Origin": "https://app.example"}
    try:
        for method, path, status in [("GET", "/__admin/requests", 200),
                                     ("DELETE", "/__admin/requests", 204),
                                     ("POST", "/__admin/reset", 204),
                                     ("OPTIONS", "/__admin/reset", 204)]:
            for headers, answer in (({}, status), (origin, 403)):  # another origin's: 403
                reply, seconds = timed_call(running, method, path, headers=headers)
                assert reply.status == answer and seconds < 0.4
                assert not [name for name in reply.headers if name.startswith("Access-Control")]
        preflight = call(running, "OPTIONS", "/__admin/reset", headers=dict(
            origin, **{"Access-Control-Request-Method": "POST"}))
        assert not [name for name in preflight.headers if name.startswith("Access-Control")]
        assert call(running, "GET", "/__admin/requests").json() == {"requests": []}
    finally:
        stop_server(running)


def test_the_journal_reads_whole_while_threads_add(fast_thread_switching):
    journal, failures = rest_users.Journal(), []
    headers = [("Host", "localhost")]

    def add(worker):
        for n in range(3000):
            journal.add("POST", "/users/%d/%d" % (worker, n), headers, b"{}", HTTPStatus.CREATED)

    def read():
        for _ in range(200):
            try:
                entries = journal.entries()
            except Exception as error:  # "deque mutated during iteration", say
                failures.append(error)
                continue
            for entry in entries:
                if not re.fullmatch(r"/users/\d/\d+", entry["target"]) or entry["headers"] != {
                        "Host": "localhost"}:
                    failures.append(entry)
            journal.clear()

    side_by_side(*([(add, worker) for worker in range(4)] + [(read,)] * 2))
    assert failures == []
    assert len(journal.entries()) <= rest_users.Journal.LIMIT


def test_writers_racing_journal_readers_get_no_500_and_no_torn_entry(variant):
    running = start_server(variant)
    problems = []

    def write(worker):
        connection = connect(running)
        for n in range(40):
            email = "w%d-%d@example.com" % (worker, n)
            connection.request("POST", "/users", json.dumps({"name": "W", "email": email}),
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status != 201:
                problems.append(response.status)

    def read():
        connection = connect(running)
        for _ in range(40):
            connection.request("GET", "/__admin/requests")
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                problems.append(response.status)
                continue
            for entry in json.loads(body.decode("utf-8"))["requests"]:
                sent = json.loads(entry["body"])
                if (entry["method"], entry["status"]) != ("POST", 201) or not re.fullmatch(
                        r"w\d-\d+@example\.com", sent["email"]):
                    problems.append(entry)

    try:
        side_by_side(*([(write, worker) for worker in range(4)] + [(read,)] * 2))
        assert problems == []
        assert len(journal(running, headers={})) == 160
    finally:
        stop_server(running)


def test_running_yields_a_str_base_url_that_resets_and_reads_the_journal():
    with rest_users.running(fake_users=2, quiet=True) as base_url:
        assert isinstance(base_url, str) and re.fullmatch(r"http://127\.0\.0\.1:\d+", base_url)
        assert urllib.parse.urljoin(base_url, "/users/1").endswith("/users/1")
        response = urllib.request.urlopen(base_url + "/users?limit=1")
        assert json.loads(response.read())[0]["id"] == 1
        request = urllib.request.Request(f"{base_url}/users/1", method="DELETE")
        urllib.request.urlopen(request).read()
        assert [(entry["method"], entry["status"]) for entry in base_url.requests()] == [
            ("GET", 200), ("DELETE", 200)]
        base_url.reset()
        assert base_url.requests() == []
        assert json.loads(urllib.request.urlopen(base_url + "/users/1").read())["id"] == 1


def test_the_startup_line_names_the_options_in_force_as_given():
    options = rest_users.parse_arguments(
        ["--port", "0", "--fake-users", "7", "--delay", "100-200", "--fail-rate", "0.25",
         "--cors", "http://localhost:5173", "--cors", "https://app.example"])
    server = rest_users.make_server(options.host, options.port, fake_users=options.fake_users,
                                    cors=options.cors)
    try:
        told = rest_users.startup_note(options, server, {})
        assert server.cors == {"http://localhost:5173", "https://app.example",  # both kept
                               rest_users.LOOPBACK}
    finally:
        server.server_close()
    assert told == ("Open http://127.0.0.1:%d/ in a browser to explore the API. Users are kept "
                    "in memory, lost when the server stops. No API key is needed. In force: "
                    "--fake-users 7, --delay 100-200, --fail-rate 0.25, --cors "
                    "http://localhost:5173, --cors https://app.example. Test controls: POST "
                    "/__admin/reset, GET /__admin/requests." % server.server_address[1])


# =========================================================================================
# Every resource, declared once: a learner's todos, references, db.json and the rest
#
# A second resource, declared in a few lines as the README shows, gets all that users get:
# the routes, both formats, validation, the list and its dialects, both stores, references,
# the fake API's controls, the API description and the explorer. Servers are shared per
# module, as above.
# =========================================================================================

# A learner's second resource, declared in 5 lines: nothing else in the service is edited.
TODOS = Resource("todos", [
    Field("title", "string", required=True, max_length=200, example="Buy milk"),
    Field("done", "boolean", default=False),
    Field("userId", "integer", refers_to="users"),  # optional: a todo may belong to no one
])
BOTH = [USERS, TODOS]
KINDS = ["memory", "sqlite", "plain"]
XML_HEADERS = {"Accept": "application/xml"}
XML_BODY = {"Content-Type": "application/xml"}


class Port:
    """What call() needs of a server: its address."""

    def __init__(self, port):
        self.server_address = ("127.0.0.1", port)


def serve(kind, tmp_path_factory, **options):
    """A server of this kind (memory, sqlite, plain) serving users and todos."""
    options.update(options_for(kind, tmp_path_factory))
    return start_server(options.pop("variant", "default"), resources=BOTH, **options)


def item_ids(reply):
    """The ids of a list reply, in order."""
    assert reply.status == 200, reply.body
    return [item["id"] for item in reply.json()]


def post(server, path, body, headers=None):
    """POST a JSON body that must be created; return the item."""
    reply = call(server, "POST", path, body, headers)
    assert reply.status == 201, reply.body
    return reply.json()


def todo(todo_id, title, done=False, user_id=None):
    """A todo as JSON renders it."""
    return {"id": todo_id, "title": title, "done": done, "userId": user_id}


def names(detail, name):
    """Whether a problem's detail names a parameter or field as a word of its own."""
    return re.search(r"(?<![\w:])%s(?![\w])" % re.escape(name), detail) is not None


@pytest.fixture(scope="module", params=KINDS)
def todos_server(request, tmp_path_factory):
    """Users and todos, each store, for tests that make their own todos; Ada is user 1."""
    running = serve(request.param, tmp_path_factory)
    post(running, "/users", {"name": "Ada", "email": "ada@example.com"})
    yield running
    stop_server(running)


# Read only: Ada (1) and Grace (2), and four todos; ids are as listed.
LISTED_TODOS = [("Buy milk", False, 1), ("Write code", True, 2), ("Call mum", False, None),
                ("Read a book", True, 1)]


@pytest.fixture(scope="module", params=KINDS)
def listed(request, tmp_path_factory):
    running = serve(request.param, tmp_path_factory)
    post(running, "/users", {"name": "Ada", "email": "ada@example.com"})
    post(running, "/users", {"name": "Grace", "email": "grace@example.com"})
    for title, done, user_id in LISTED_TODOS:
        post(running, "/todos", {"title": title, "done": done, "userId": user_id})
    yield running
    stop_server(running)


def listed_todo(todo_id):
    title, done, user_id = LISTED_TODOS[todo_id - 1]
    return todo(todo_id, title, done, user_id)


LISTED_ADA = {"id": 1, "name": "Ada", "email": "ada@example.com"}
GRACE = {"id": 2, "name": "Grace", "email": "grace@example.com"}
LISTED_ADA_XML = "<user><id>1</id><name>Ada</name><email>ada@example.com</email></user>"


# -- the declaration ---------------------------------------------------------------------

def test_the_item_name_is_the_collection_without_its_final_s():
    assert TODOS.item == "todo"
    assert Resource("people", [Field("name")], item="person").item == "person"


def test_a_collection_not_ending_in_s_needs_its_item_named():
    with pytest.raises(ValueError):
        Resource("people", [Field("name")])


def test_running_serves_the_resources_it_is_given():
    with rest_users.running(resources=BOTH) as base_url:
        served = Port(int(base_url.rsplit(":", 1)[1]))
        reply = call(served, "POST", "/todos", {"title": "Buy milk"})
    assert (reply.status, reply.json()) == (201, todo(1, "Buy milk"))


# -- every route -------------------------------------------------------------------------

def test_post_creates_a_todo_with_its_default_and_a_location(todos_server):
    reply = call(todos_server, "POST", "/todos", {"title": "Buy milk"})
    created = reply.json()
    assert reply.status == 201
    assert created == todo(created["id"], "Buy milk")
    assert list(created) == ["id", "title", "done", "userId"]
    assert reply.headers["Location"] == "/todos/%d" % created["id"]
    assert reply.headers["ETag"] == '"1-json"'
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert reply.headers["Vary"] == "Accept, Origin"


def test_get_reads_a_todo_with_its_etag(todos_server):
    made = post(todos_server, "/todos", {"title": "Walk", "done": True, "userId": 1})
    reply = call(todos_server, "GET", "/todos/%d" % made["id"])
    assert reply.status == 200
    assert reply.json() == todo(made["id"], "Walk", True, 1)
    assert reply.headers["ETag"] == '"1-json"'
    assert reply.headers["Content-Type"] == JSON_TYPE


def test_the_list_holds_the_todos_and_counts_them(todos_server):
    made = post(todos_server, "/todos", {"title": "Listed"})
    reply = call(todos_server, "GET", "/todos")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert made in reply.json()
    assert reply.headers["X-Total-Count"] == str(len(reply.json()))
    total = len(reply.json())
    assert reply.headers["Link"] == (
        '</todos?limit=100&offset=0>; rel="first", </todos?limit=100&offset=%d>; rel="last"'
        % ((total - 1) // 100 * 100))


def test_put_replaces_a_todo_and_fills_the_default(todos_server):
    made = post(todos_server, "/todos", {"title": "Old", "done": True, "userId": 1})
    reply = call(todos_server, "PUT", "/todos/%d" % made["id"], {"title": "New"})
    assert reply.status == 200
    assert reply.json() == todo(made["id"], "New")
    assert reply.headers["ETag"] == '"2-json"'


def test_patch_changes_only_the_fields_it_sends(todos_server):
    made = post(todos_server, "/todos", {"title": "Patch me", "userId": 1})
    reply = call(todos_server, "PATCH", "/todos/%d" % made["id"], {"done": True})
    assert reply.status == 200
    assert reply.json() == todo(made["id"], "Patch me", True, 1)
    assert reply.headers["ETag"] == '"2-json"'


def test_patch_with_null_removes_an_optional_value(todos_server):
    made = post(todos_server, "/todos", {"title": "Mine", "userId": 1})
    reply = call(todos_server, "PATCH", "/todos/%d" % made["id"], {"userId": None},
                 {"Content-Type": "application/merge-patch+json"})
    assert (reply.status, reply.json()) == (200, todo(made["id"], "Mine"))


def test_delete_answers_the_todo_as_it_was_and_it_is_gone(todos_server):
    made = post(todos_server, "/todos", {"title": "Gone soon"})
    path = "/todos/%d" % made["id"]
    reply = call(todos_server, "DELETE", path)
    assert (reply.status, reply.json()) == (200, made)
    assert "ETag" not in reply.headers
    problem = assert_problem(call(todos_server, "GET", path), 404)
    assert problem["detail"] == "There is no todo with id %d." % made["id"]


def test_delete_with_return_minimal_is_204(todos_server):
    made = post(todos_server, "/todos", {"title": "Quietly"})
    reply = call(todos_server, "DELETE", "/todos/%d" % made["id"], headers={"Prefer": "return=minimal"})
    assert (reply.status, reply.body) == (204, b"")
    assert reply.headers["Preference-Applied"] == "return=minimal"


def test_concurrent_posts_give_distinct_todos(todos_server):
    made, threads = [], []
    for worker in range(4):
        thread = threading.Thread(target=lambda worker=worker: made.extend(
            post(todos_server, "/todos", {"title": "racer %d.%d" % (worker, n)})["id"]
            for n in range(10)))
        threads.append(thread)
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(made) == len(set(made)) == 40


def test_ids_of_todos_are_never_reused(todos_server):
    first = post(todos_server, "/todos", {"title": "First"})
    call(todos_server, "DELETE", "/todos/%d" % first["id"])
    assert post(todos_server, "/todos", {"title": "Next"})["id"] == first["id"] + 1


@pytest.mark.parametrize("path", ["/todos/1", "/todos"])
def test_head_answers_as_get_without_a_body(todos_server, path):
    post(todos_server, "/todos", {"title": "Head"})
    get, head = call(todos_server, "GET", path), call(todos_server, "HEAD", path)
    assert (head.status, head.body) == (200, b"")
    for name in ("Content-Type", "Content-Length", "ETag", "X-Total-Count", "Link", "Vary"):
        assert head.headers[name] == get.headers[name]


@pytest.mark.parametrize("path, allow", [
    ("/todos", "GET, POST, HEAD, OPTIONS"), ("/todos/", "GET, POST, HEAD, OPTIONS"),
    ("/todos/98765", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("/users/1/todos", "GET, POST, HEAD, OPTIONS")])
def test_options_answers_204_with_allow(todos_server, path, allow):
    reply = call(todos_server, "OPTIONS", path)
    assert (reply.status, reply.body) == (204, b"")
    assert reply.headers["Allow"] == allow


@pytest.mark.parametrize("method, path, allow", [
    ("DELETE", "/todos", "GET, POST, HEAD, OPTIONS"),
    ("PUT", "/todos", "GET, POST, HEAD, OPTIONS"),
    ("POST", "/todos/1", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("DELETE", "/users/1/todos", "GET, POST, HEAD, OPTIONS")])
def test_another_method_is_405_with_allow(todos_server, method, path, allow):
    reply = call(todos_server, method, path, {"title": "x"} if method in ("PUT", "POST") else None)
    problem = assert_problem(reply, 405)
    assert reply.headers["Allow"] == allow
    assert problem["detail"] == "%s does not take %s; it takes %s." % (path, method, allow)


def test_a_method_the_service_does_not_implement_is_501(todos_server):
    problem = assert_problem(call(todos_server, "BREW", "/todos"), 501)
    assert problem["detail"] == ("This service does not implement BREW; it implements GET, HEAD, "
                                 "POST, PUT, PATCH, DELETE, OPTIONS.")


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_a_missing_todo_is_404_naming_the_todo(todos_server, method):
    reply = call(todos_server, method, "/todos/98765", {"title": "x"} if method in ("PUT", "PATCH")
                 else None)
    problem = assert_problem(reply, 404)
    assert problem["detail"] == "There is no todo with id 98765."


def test_a_missing_todo_in_xml_is_an_xml_problem_naming_the_todo(todos_server):
    reply = call(todos_server, "GET", "/todos/98765", headers=XML_HEADERS)
    problem = assert_problem(reply, 404, "xml")
    assert problem["detail"] == "There is no todo with id 98765."


PEOPLE = Resource("people", [Field("name", "string", required=True)], item="person")


def test_a_named_item_names_the_xml_and_the_messages():
    running = start_server(resources=[USERS, PEOPLE])
    try:
        post(running, "/people", {"name": "Ada"})
        assert call(running, "GET", "/people", headers=XML_HEADERS).body == (
            b"<people><person><id>1</id><name>Ada</name></person></people>")
        problem = assert_problem(call(running, "GET", "/people/9"), 404)
        assert problem["detail"] == "There is no person with id 9."
        problem = assert_problem(call(running, "POST", "/people", {}), 422)
        assert problem["detail"] == "The person is not valid; see the errors for name."
    finally:
        stop_server(running)


@pytest.mark.parametrize("path", ["/todos/01", "/todos/-1", "/todos/x", "/todos/1/users",
                                  "/todosX", "/todos/99999999999999999999", "/users/1/todos/1",
                                  "/users/x/todos"])
def test_a_path_that_names_no_route_is_404_naming_every_resource(todos_server, path):
    problem = assert_problem(call(todos_server, "GET", path), 404)
    assert problem["detail"] == ("There is nothing at %s; the users are at /users and the "
                                 "todos are at /todos." % path)


# -- both formats ------------------------------------------------------------------------

def todo_xml(todo_id, title, done="false", user_id=None):
    """A todo as XML renders it: a none is no element."""
    owner = "" if user_id is None else "<userId>%d</userId>" % user_id
    return ("<todo><id>%d</id><title>%s</title><done>%s</done>%s</todo>"
            % (todo_id, title, done, owner)).encode()


def test_xml_in_and_out_types_each_value(todos_server):
    body = "<todo><title>Buy milk</title><done>true</done><userId>1</userId></todo>"
    reply = call(todos_server, "POST", "/todos", body, dict(XML_BODY, **XML_HEADERS))
    assert reply.status == 201
    todo_id = int(reply.headers["Location"].rsplit("/", 1)[1])
    assert reply.body == todo_xml(todo_id, "Buy milk", "true", 1)
    assert reply.headers["Content-Type"] == XML_TYPE
    assert reply.headers["ETag"] == '"1-xml"'
    assert call(todos_server, "GET", "/todos/%d" % todo_id).json() == todo(todo_id, "Buy milk", True, 1)


def test_an_empty_xml_element_is_an_empty_string(todos_server):
    reply = call(todos_server, "POST", "/todos", "<todo><title></title></todo>", XML_BODY)
    created = reply.json()
    assert (reply.status, created) == (201, todo(created["id"], ""))


def test_xml_writes_the_default_and_leaves_out_a_none(todos_server):
    made = post(todos_server, "/todos", {"title": "Plain"})
    reply = call(todos_server, "GET", "/todos/%d" % made["id"], headers=XML_HEADERS)
    assert reply.body == todo_xml(made["id"], "Plain")
    assert reply.headers["ETag"] == '"1-xml"'


def test_the_xml_list_is_todos_of_todo(listed):
    reply = call(listed, "GET", "/todos?done=true", headers=XML_HEADERS)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == XML_TYPE
    assert reply.body == (b"<todos>" + todo_xml(2, "Write code", "true", 2)
                          + todo_xml(4, "Read a book", "true", 1) + b"</todos>")


def test_an_xml_patch_with_xsi_nil_removes_an_optional_value(todos_server):
    made = post(todos_server, "/todos", {"title": "Owned", "userId": 1})
    body = ('<todo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
            '<userId xsi:nil="true"/></todo>')
    reply = call(todos_server, "PATCH", "/todos/%d" % made["id"], body, XML_BODY)
    assert (reply.status, reply.json()) == (200, todo(made["id"], "Owned"))


def test_an_xml_body_with_another_root_is_400(todos_server):
    reply = call(todos_server, "POST", "/todos", "<user><title>x</title></user>", XML_BODY)
    problem = assert_problem(reply, 400)
    assert problem["detail"] == "The XML root element must be <todo>, not <user>."


JSON_BODY = {"Content-Type": "application/json"}
BODY_PROBLEMS = [  # (body, its Content-Type, status, detail, [(field, message)])
    ("[1]", JSON_BODY, 400, 'The body must be a JSON object, like {"title": ..., "done": ...}.',
     []),
    ("", JSON_BODY, 400, "This request needs a todo in its body.", []),
    ('{"title": "a", "title": "b"}', JSON_BODY, 422, None, [("title", "is given more than once")]),
    ("<todo><title>a</title><title>b</title></todo>", XML_BODY, 422, None,
     [("title", "is given more than once")]),
    ("<todo><title><b>a</b></title></todo>", XML_BODY, 422, None,
     [("title", "must be a string, not an element with child elements")]),
    ("<todo><title>a</title><nope>1</nope></todo>", XML_BODY, 422, None,
     [("nope", "is not a field of a todo; the fields are title, done and userId")]),
    ('{"title": "a\\u0001"}', JSON_BODY, 422, None,
     [("title", "must not contain control characters (tab, newline, ...) or non-characters")]),
]


def test_a_todos_body_is_read_with_the_same_rules_as_a_users(todos_server):
    found, expected = [], []
    for body, headers, status, detail, errors in BODY_PROBLEMS:
        problem = call(todos_server, "POST", "/todos", body, headers).json()
        found.append((problem["status"], problem["detail"], problem.get("errors", [])))
        fields = ", ".join(field for field, _ in errors)
        expected.append((status, detail or "The todo is not valid; see the errors for %s."
                         % fields, [{"field": f, "message": m} for f, m in errors]))
    assert found == expected


# -- the 422s, by type -------------------------------------------------------------------

WHOLE = "must be a whole number"
BAD_VALUES = [  # (body, field, message)
    ({"title": "x", "done": "no"}, "done", "must be true or false, not a string"),
    ({"title": "x", "done": 0}, "done", "must be true or false, not a number"),
    ({"title": "x", "userId": 1.0}, "userId",
     WHOLE + ", written without a fraction or an exponent"),
    ({"title": "x", "userId": 36.5}, "userId",
     WHOLE + ", written without a fraction or an exponent"),
    ({"title": "x", "userId": True}, "userId", WHOLE + ", not true or false"),
    ({"title": "x", "userId": "1"}, "userId", WHOLE + ", not a string"),
    ({"title": "x", "userId": 2 ** 63}, "userId",
     WHOLE + " from -9223372036854775808 to 9223372036854775807"),
    ({"title": 3}, "title", "must be a string, not a number"),
    ({"title": "x" * 201}, "title", "must be at most 200 characters long"),
    ({"title": "x", "priority": 1}, "priority",
     "is not a field of a todo; the fields are title, done and userId"),
]


@pytest.mark.parametrize("body, field, message", BAD_VALUES)
def test_a_value_of_the_wrong_type_is_422_for_its_field(todos_server, body, field, message):
    problem = assert_problem(call(todos_server, "POST", "/todos", body), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for %s." % field
    assert problem["errors"] == [{"field": field, "message": message}]


@pytest.mark.parametrize("body, field, message", [
    ("<todo><title>x</title><done>yes</done></todo>", "done",
     'must be true or false, not the text "yes"'),
    ("<todo><title>x</title><done></done></todo>", "done",
     'must be true or false, not the text ""'),
    ("<todo><title>x</title><userId>1.0</userId></todo>", "userId",
     WHOLE + ', not the text "1.0"'),
    ("<todo><title>x</title><userId>one</userId></todo>", "userId",
     WHOLE + ', not the text "one"'),
])
def test_an_xml_value_of_the_wrong_type_is_422_for_its_field(todos_server, body, field, message):
    reply = call(todos_server, "POST", "/todos", body, dict(XML_BODY, **XML_HEADERS))
    problem = assert_problem(reply, 422, "xml")
    assert problem["detail"] == "The todo is not valid; see the errors for %s." % field
    assert problem["errors"] == [{"field": field, "message": message}]


def test_a_missing_title_is_required(todos_server):
    problem = assert_problem(call(todos_server, "POST", "/todos", {"done": True}), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for title."
    assert problem["errors"] == [{"field": "title", "message": "is required"}]


def test_an_id_in_a_post_is_422(todos_server):
    problem = assert_problem(call(todos_server, "POST", "/todos", {"id": 5, "title": "x"}), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for id."
    assert problem["errors"] == [{"field": "id", "message": "is assigned by the server; leave "
                                                           "it out"}]


def test_a_422_lists_every_bad_field(todos_server):
    problem = assert_problem(call(todos_server, "POST", "/todos", {"done": "no", "userId": True}), 422)
    assert sorted(error["field"] for error in problem["errors"]) == ["done", "title", "userId"]


def test_a_put_without_the_title_says_put_replaces_the_whole_todo(todos_server):
    made = post(todos_server, "/todos", {"title": "Whole"})
    problem = assert_problem(call(todos_server, "PUT", "/todos/%d" % made["id"], {"done": True}), 422)
    assert problem["detail"] == (
        "The todo is not valid; see the errors for title. PUT replaces the whole todo, so it "
        "needs every field; PATCH changes only the fields it sends.")


def test_a_put_may_repeat_the_paths_id_only(todos_server):
    made = post(todos_server, "/todos", {"title": "Mine"})
    path = "/todos/%d" % made["id"]
    assert call(todos_server, "PUT", path, {"id": made["id"], "title": "Same"}).status == 200
    problem = assert_problem(call(todos_server, "PUT", path, {"id": made["id"] + 1, "title": "x"}), 422)
    assert [error["field"] for error in problem["errors"]] == ["id"]


# -- versions ----------------------------------------------------------------------------

def test_if_none_match_gives_304(todos_server):
    made = post(todos_server, "/todos", {"title": "Cached"})
    reply = call(todos_server, "GET", "/todos/%d" % made["id"], headers={"If-None-Match": '"1-json"'})
    assert (reply.status, reply.body) == (304, b"")
    assert reply.headers["ETag"] == '"1-json"'


def test_a_stale_if_match_is_412_naming_the_todo(todos_server):
    made = post(todos_server, "/todos", {"title": "Raced"})
    path = "/todos/%d" % made["id"]
    assert call(todos_server, "PATCH", path, {"done": True}, {"If-Match": '"1-json"'}).status == 200
    reply = call(todos_server, "PATCH", path, {"title": "Lost"}, {"If-Match": '"1-json"'})
    problem = assert_problem(reply, 412)
    assert problem["detail"] == ("The todo has changed since you read it (If-Match does not name "
                                 "its current ETag); GET it again and retry.")
    assert call(todos_server, "GET", path).json() == todo(made["id"], "Raced", True)


def test_a_stale_if_match_on_delete_deletes_nothing(todos_server):
    made = post(todos_server, "/todos", {"title": "Kept"})
    path = "/todos/%d" % made["id"]
    assert_problem(call(todos_server, "DELETE", path, headers={"If-Match": '"2-json"'}), 412)
    assert call(todos_server, "GET", path).json() == made
    assert call(todos_server, "DELETE", path, headers={"If-Match": '"1-json"'}).status == 200


def test_a_write_is_checked_for_existence_then_version_then_fields(todos_server):
    made = post(todos_server, "/todos", {"title": "Checked"})
    path, bad = "/todos/%d" % made["id"], {"done": "no"}
    stale = {"If-Match": '"9-json"'}
    assert_problem(call(todos_server, "PATCH", "/todos/98765", bad, stale), 404)
    assert_problem(call(todos_server, "PATCH", path, bad, stale), 412)
    problem = assert_problem(call(todos_server, "PATCH", path, bad), 422)
    assert [error["field"] for error in problem["errors"]] == ["done"]


# -- the list: filters by type and every dialect -----------------------------------------

def answers(server, path, table):
    """Each query of a table against a list path: the ids it gives, or the status if not 200,
    so that one comparison shows every query that is wrong."""
    found = {}
    for query in table:
        reply = call(server, "GET", path + "?" + query)
        found[query] = item_ids(reply) if reply.status == 200 else reply.status
    return found


def test_filters_compare_by_type(listed):
    table = {"": [1, 2, 3, 4], "done=true": [2, 4], "done=false": [1, 3], "userId=1": [1, 4],
             "userId=1&userId=2": [1, 2, 4], "title=Call%20mum": [3], "title=call%20mum": [],
             "q=BOOK": [4], "done=true&userId=1": [4]}
    assert answers(listed, "/todos", table) == table


def test_sort_keys_order_by_type_with_a_none_first_ascending(listed):
    table = {"sort=-title": [2, 4, 3, 1], "sort=done": [1, 3, 2, 4],  # false before true
             "sort=-done,title": [4, 2, 1, 3], "sort=userId": [3, 1, 4, 2],
             "sort=-userId": [2, 1, 4, 3],  # a none last, ties by id in either direction
             "_sort=title": [1, 3, 4, 2], "_sort=title&_order=desc": [2, 4, 3, 1],
             "_sort=userId&_order=desc": [2, 1, 4, 3], "_sort=-userId,id": [2, 1, 4, 3],
             "sort=%5B%22title%22%2C%22DESC%22%5D": [2, 4, 3, 1],
             "sort=%5B%22userId%22%2C%22ASC%22%5D": [3, 1, 4, 2]}
    assert answers(listed, "/todos", table) == table


def test_json_server_0_17_operators_compare_by_type(listed):
    table = {"done_ne=true": [1, 3], "userId_ne=1": [2],  # a none never matches
             "title_like=O": [2, 4], "title_like=mIlK": [1], "userId_gte=2": [2],
             "userId_lte=1": [1, 4], "title_gte=C": [2, 3, 4], "_start=1&_end=3": [2, 3],
             "_page=2&_limit=3": [4], "_start=0&_limit=1&done=true": [2]}
    assert answers(listed, "/todos", table) == table


def test_json_server_1_0_operators_compare_by_type(listed):
    table = {"userId:gte=2": [2], "userId:lt=2": [1, 4], "userId:in=1,2": [1, 2, 4],
             "userId:ne=2": [1, 4], "done:eq=true": [2, 4], "done:ne=false": [2, 4],
             "title:startsWith=c": [3], "title:endsWith=E": [2], "title:contains=a%20b": [4],
             "title:gt=R": [2, 4], "title:lte=Call%20mum": [1, 3]}
    assert answers(listed, "/todos", table) == table


def test_simple_rest_filters_compare_by_type(listed):
    table = {"filter=" + quote('{"done": false}'): [1, 3],
             "filter=" + quote('{"userId": [2, 1]}'): [1, 2, 4],
             "filter=" + quote('{"q": "mum"}'): [3],
             "filter=" + quote('{"done": true, "userId": 1}'): [4]}
    assert answers(listed, "/todos", table) == table


def test_the_list_counts_the_matches(listed):
    reply = call(listed, "GET", "/todos?userId=1&limit=1")
    assert reply.json() == [listed_todo(1)]
    assert reply.headers["X-Total-Count"] == "2"
    assert reply.headers["Link"] == (
        '</todos?userId=1&limit=1&offset=0>; rel="first", '
        '</todos?userId=1&limit=1&offset=1>; rel="last", '
        '</todos?userId=1&limit=1&offset=1>; rel="next"')


@pytest.mark.parametrize("kind", KINDS)
def test_text_operators_take_their_value_literally_and_ignore_case_as_casefold(
        kind, tmp_path_factory):
    running = serve(kind, tmp_path_factory)
    try:
        for title in ("100% done", "a_b", "Stra\u00dfe", "plain"):
            post(running, "/todos", {"title": title})
        table = {"title_like=%25": [1], "title_like=_": [2], "title:contains=_": [2],
                 "title:startsWith=%25": [], "title_like=STRASSE": [3], "q=STRASSE": [3],
                 "title:endsWith=SSE": [3], "title:startsWith=A_": [2],
                 "title=%C3%9F": [], "title:eq=a_b": [2], "title_ne=a_b": [1, 3, 4]}
        assert answers(running, "/todos", table) == table
    finally:
        stop_server(running)


def test_json_server_1_pages_are_an_object(listed):
    reply = call(listed, "GET", "/todos?_page=1&_per_page=2")
    assert reply.status == 200
    assert reply.json() == {"first": 1, "prev": None, "next": 2, "last": 2, "pages": 2,
                            "items": 4, "data": [listed_todo(1), listed_todo(2)]}
    assert reply.headers["X-Total-Count"] == "4"


def test_json_server_1_pages_in_xml_hold_todos_under_data(listed):
    reply = call(listed, "GET", "/todos?_page=2&_per_page=3", headers=XML_HEADERS)
    page = ElementTree.fromstring(reply.body)
    assert [(child.tag, child.text) for child in page if child.tag != "data"] == [
        ("first", "1"), ("prev", "1"), ("next", None), ("last", "2"), ("pages", "2"),
        ("items", "4")]
    assert ElementTree.tostring(page.find("data")) == (
        b"<data>" + todo_xml(4, "Read a book", "true", 1) + b"</data>")


def test_simple_rest_sends_content_range_naming_todos(listed):
    query = "filter=%s&range=%s" % (quote('{"done": true}'), quote("[0,1]"))
    reply = call(listed, "GET", "/todos?" + query)
    assert reply.json() == [listed_todo(2), listed_todo(4)]
    assert reply.headers["Content-Range"] == "todos 0-1/2"
    assert reply.headers["X-Total-Count"] == "2"


def test_simple_rest_with_nothing_sent_is_star_over_the_total(listed):
    reply = call(listed, "GET", "/todos?range=%s" % quote("[10,19]"))
    assert reply.json() == []
    assert reply.headers["Content-Range"] == "todos */4"


@pytest.mark.parametrize("parameter, value", [
    ("done", "yes"), ("done", "1"), ("userId", "1.5"), ("userId", "x"),
    ("userId_gte", "x"), ("userId:lt", "1.0"), ("done:eq", "TRUE"), ("done_ne", "no"),
    ("userId:in", "1,two")])
def test_a_filter_value_of_the_wrong_type_is_400_naming_the_parameter(listed, parameter, value):
    problem = assert_problem(call(listed, "GET", "/todos?%s=%s" % (parameter, value)), 400)
    assert names(problem["detail"], parameter), problem["detail"]


@pytest.mark.parametrize("query, parameter", [
    ("sort=priority", "sort"), ("priority=1", "priority"), ("name=Ada", "name"),
    ("title_gt=a", "title_gt")])
def test_a_field_todos_do_not_have_is_400_naming_it(listed, query, parameter):
    problem = assert_problem(call(listed, "GET", "/todos?" + query), 400)
    assert names(problem["detail"], parameter), problem["detail"]


# -- SQLite: one file, a table per resource ---------------------------------------------

# The --db file of the release before resources were declared (9a46a93), written as that
# release wrote it: its schema, word for word, then the indexes it added on open, then rows
# as its store inserted them. The tests need no copy of that release, nor git.
RELEASE_BEFORE_SCHEMA = """
        PRAGMA locking_mode = EXCLUSIVE; -- the file's lock is held until the store closes
        PRAGMA journal_mode = WAL;      -- readers never wait for a writer
        PRAGMA synchronous = NORMAL;    -- in WAL mode a commit survives a killed process
        CREATE TABLE IF NOT EXISTS users (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            email TEXT NOT NULL,
            version INTEGER NOT NULL DEFAULT 1
        );
        CREATE UNIQUE INDEX IF NOT EXISTS users_email_key ON users (email COLLATE NOCASE);
        PRAGMA user_version = 1;        -- a write: a file it cannot write fails now, at start
        CREATE INDEX IF NOT EXISTS users_by_name ON users (name);
        CREATE INDEX IF NOT EXISTS users_by_name_desc ON users (name DESC);
        CREATE INDEX IF NOT EXISTS users_by_email ON users (email);
        CREATE INDEX IF NOT EXISTS users_by_email_desc ON users (email DESC);
"""


def write_release_before_file(path, users):
    """A --db file as the release before resources wrote it, holding these (name, email)s
    as users 1, 2, ... at version 1."""
    connection = sqlite3.connect(path)
    try:
        connection.executescript(RELEASE_BEFORE_SCHEMA)
        with connection:
            connection.executemany("INSERT INTO users (name, email) VALUES (?, ?)", users)
    finally:
        connection.close()


def test_a_file_from_the_release_before_keeps_its_users_and_gains_todos(tmp_path):
    db = str(tmp_path / "users.db")
    write_release_before_file(db, [("Ada", "ada@example.com"), ("Grace", "grace@example.com")])
    running = start_server(db=db, resources=BOTH)
    try:
        assert call(running, "GET", "/users").json() == [LISTED_ADA, GRACE]
        assert call(running, "GET", "/users/2").headers["ETag"] == '"1-json"'
        assert post(running, "/users", {"name": "Alan", "email": "alan@example.com"})["id"] == 3
        assert post(running, "/todos", {"title": "Buy milk", "userId": 2}) == todo(
            1, "Buy milk", False, 2)
    finally:
        stop_server(running)
    with sqlite3.connect(db) as connection:
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    connection.close()
    assert {"users", "todos"} <= tables


def test_a_file_from_the_release_before_keeps_its_users_and_gains_a_db_jsons_others(tmp_path):
    db = str(tmp_path / "users.db")
    write_release_before_file(db, [("Ada", "ada@example.com"), ("Grace", "grace@example.com")])
    running = start_server(db=db, load=write_db_json(tmp_path, DB_JSON))
    try:
        assert call(running, "GET", "/users").json() == [dict(LISTED_ADA, phone=None),
                                                          dict(GRACE, phone=None)]
        assert call(running, "GET", "/posts").json() == [POST_1, POST_2]
        assert call(running, "GET", "/comments").json() == COMMENTS
    finally:
        stop_server(running)


def test_todos_in_a_file_come_back_typed_after_a_restart(tmp_path):
    db = str(tmp_path / "todos.db")
    running = start_server(db=db, resources=BOTH)
    post(running, "/users", {"name": "Ada", "email": "ada@example.com"})
    post(running, "/todos", {"title": "Kept", "done": True, "userId": 1})
    post(running, "/todos", {"title": "Open"})
    stop_server(running)
    running = start_server(db=db, resources=BOTH)
    try:
        assert call(running, "GET", "/todos").json() == [todo(1, "Kept", True, 1),
                                                         todo(2, "Open")]
        assert post(running, "/todos", {"title": "Third"})["id"] == 3
    finally:
        stop_server(running)


# -- references --------------------------------------------------------------------------

def test_a_reference_to_no_user_is_422(todos_server):
    problem = assert_problem(call(todos_server, "POST", "/todos", {"title": "x", "userId": 9}), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for userId."
    assert problem["errors"] == [{"field": "userId", "message": "there is no user with id 9"}]


def test_a_patch_to_no_user_is_422_and_changes_nothing(todos_server):
    made = post(todos_server, "/todos", {"title": "Mine", "userId": 1})
    reply = call(todos_server, "PATCH", "/todos/%d" % made["id"], {"userId": 9})
    problem = assert_problem(reply, 422)
    assert problem["errors"] == [{"field": "userId", "message": "there is no user with id 9"}]
    assert call(todos_server, "GET", "/todos/%d" % made["id"]).json() == made


def test_a_users_todos_are_a_nested_list(listed):
    reply = call(listed, "GET", "/users/1/todos")
    assert reply.json() == [listed_todo(1), listed_todo(4)]
    assert reply.headers["X-Total-Count"] == "2"


def test_a_nested_list_takes_every_list_parameter_and_dialect(listed):
    assert item_ids(call(listed, "GET", "/users/1/todos?_sort=-title")) == [4, 1]
    assert item_ids(call(listed, "GET", "/users/1/todos?done=true")) == [4]
    assert item_ids(call(listed, "GET", "/users/1/todos?title:contains=MILK")) == [1]


def test_a_post_under_a_user_creates_a_todo_of_that_user(todos_server):
    reply = call(todos_server, "POST", "/users/1/todos", {"title": "Nested"})
    created = reply.json()
    assert reply.status == 201
    assert created == todo(created["id"], "Nested", False, 1)
    assert reply.headers["Location"] == "/todos/%d" % created["id"]


# The README's db.json: every comment has a post, so postId is a required field
README_DB_JSON = {"users": [{"id": 1, "name": "Ada", "email": "ada@example.com"}],
                  "posts": [{"id": 1, "title": "Hello", "userId": 1}],
                  "comments": [{"id": 1, "body": "Nice", "postId": 1}],
                  "profile": {"name": "typicode"}}


@pytest.fixture(scope="module", params=KINDS)
def readme_served(request, tmp_path_factory):
    """The README's db.json, on each kind of server."""
    options = options_for(request.param, tmp_path_factory)
    running = start_server(options.pop("variant", "default"), load=write_db_json(
        tmp_path_factory.mktemp("readme"), README_DB_JSON), **options)
    yield running
    stop_server(running)


def test_a_nested_post_gives_a_required_reference_its_parents_id(readme_served):
    reply = call(readme_served, "POST", "/posts/1/comments", {"body": "Me too"})
    assert reply.status == 201, reply.body
    created = reply.json()
    assert created == {"id": created["id"], "body": "Me too", "postId": 1}
    assert reply.headers["Location"] == "/comments/%d" % created["id"]


def test_a_nested_post_in_xml_gives_a_required_reference_its_parents_id(readme_served):
    reply = call(readme_served, "POST", "/posts/1/comments", "<comment><body>In XML</body>"
                 "</comment>", dict(XML_BODY, **XML_HEADERS))
    assert reply.status == 201, reply.body
    assert reply.body.endswith(b"<body>In XML</body><postId>1</postId></comment>")


def test_a_nested_post_may_repeat_its_parents_id(readme_served):
    reply = call(readme_served, "POST", "/posts/1/comments", {"body": "Again", "postId": 1})
    assert reply.status == 201, reply.body
    assert reply.json()["postId"] == 1


@pytest.mark.parametrize("other", [2, 9, None, "1", True, 1.0])
def test_a_nested_post_naming_another_parent_is_422(readme_served, other):
    reply = call(readme_served, "POST", "/posts/1/comments", {"body": "x", "postId": other})
    problem = assert_problem(reply, 422)
    assert problem["detail"] == "The comment is not valid; see the errors for postId."
    assert problem["errors"] == [
        {"field": "postId", "message": "must be 1, the id in the path, or be left out"}]


def test_a_nested_post_of_another_user_is_422_when_the_reference_is_optional(todos_server):
    problem = assert_problem(call(todos_server, "POST", "/users/1/todos", {"title": "x", "userId": 2}),
                             422)
    assert problem["errors"] == [
        {"field": "userId", "message": "must be 1, the id in the path, or be left out"}]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_nested_route_under_a_missing_user_is_404(todos_server, method):
    reply = call(todos_server, method, "/users/98765/todos",
                 {"title": "x"} if method == "POST" else None)
    problem = assert_problem(reply, 404)
    assert problem["detail"] == "There is no user with id 98765."


def test_embed_adds_a_users_todos(listed):
    reply = call(listed, "GET", "/users/1?_embed=todos")
    assert reply.status == 200
    assert reply.json() == dict(LISTED_ADA, todos=[listed_todo(1), listed_todo(4)])


def test_embed_adds_each_users_todos_to_a_list(listed):
    reply = call(listed, "GET", "/users?_embed=todos")
    assert reply.json() == [dict(LISTED_ADA, todos=[listed_todo(1), listed_todo(4)]),
                            dict(GRACE, todos=[listed_todo(2)])]


def test_embed_in_xml_is_a_todos_child(listed):
    reply = call(listed, "GET", "/users/1?_embed=todos", headers=XML_HEADERS)
    assert reply.body == (LISTED_ADA_XML[:-len("</user>")].encode() + b"<todos>"
                          + todo_xml(1, "Buy milk", "false", 1)
                          + todo_xml(4, "Read a book", "true", 1) + b"</todos></user>")


def test_simple_rest_embed_means_embed(listed):
    reply = call(listed, "GET", "/users/1?embed=" + quote('["todos"]'))
    assert reply.json() == dict(LISTED_ADA, todos=[listed_todo(1), listed_todo(4)])


def test_expand_adds_a_todos_user(listed):
    reply = call(listed, "GET", "/todos/2?_expand=user")
    assert reply.status == 200
    assert reply.json() == dict(listed_todo(2), user=GRACE)


@pytest.mark.parametrize("query", ["_expand=user", "_embed=user"])
def test_expand_adds_each_todos_user_to_a_list(listed, query):
    reply = call(listed, "GET", "/todos?userId=1&" + query)
    assert reply.json() == [dict(listed_todo(1), user=LISTED_ADA), dict(listed_todo(4), user=LISTED_ADA)]


def test_expand_in_xml_is_a_user_child(listed):
    reply = call(listed, "GET", "/todos/1?_expand=user", headers=XML_HEADERS)
    assert reply.body == (b"<todo><id>1</id><title>Buy milk</title><done>false</done>"
                          b"<userId>1</userId>" + LISTED_ADA_XML.encode() + b"</todo>")


def test_embed_and_expand_on_lists_in_xml(listed):
    embedded = call(listed, "GET", "/users?_embed=todos&id=2", headers=XML_HEADERS)
    assert embedded.body == (b"<users><user><id>2</id><name>Grace</name><email>grace@example.com"
                             b"</email><todos>" + todo_xml(2, "Write code", "true", 2)
                             + b"</todos></user></users>")
    expanded = call(listed, "GET", "/todos?_expand=user&userId=2", headers=XML_HEADERS)
    assert expanded.body == (b"<todos><todo><id>2</id><title>Write code</title><done>true</done>"
                             b"<userId>2</userId><user><id>2</id><name>Grace</name><email>"
                             b"grace@example.com</email></user></todo></todos>")


def test_embed_keeps_json_server_1s_page_object(listed):
    reply = call(listed, "GET", "/users?_page=1&_per_page=1&_embed=todos")
    assert reply.status == 200
    assert reply.json() == {"first": 1, "prev": None, "next": 2, "last": 2, "pages": 2,
                            "items": 2, "data": [dict(LISTED_ADA, todos=[listed_todo(1),
                                                                  listed_todo(4)])]}


def test_expand_keeps_json_server_1s_page_object_in_xml(listed):
    reply = call(listed, "GET", "/todos?_page=2&_per_page=3&_expand=user", headers=XML_HEADERS)
    page = ElementTree.fromstring(reply.body)
    assert [(child.tag, child.text) for child in page if child.tag != "data"] == [
        ("first", "1"), ("prev", "1"), ("next", None), ("last", "2"), ("pages", "2"),
        ("items", "4")]
    assert ElementTree.tostring(page.find("data")) == (
        b"<data><todo><id>4</id><title>Read a book</title><done>true</done><userId>1</userId>"
        + LISTED_ADA_XML.encode() + b"</todo></data>")


@pytest.mark.parametrize("path, name", [
    ("/users/1?_embed=posts", "posts"), ("/users?_embed=todo", "todo"),
    ("/todos/1?_expand=owner", "owner"), ("/todos?_expand=users", "users"),
    ("/todos?_embed=todos", "todos")])
def test_an_unknown_embed_or_expand_is_400_naming_it(listed, path, name):
    problem = assert_problem(call(listed, "GET", path), 400)
    assert names(problem["detail"], name), problem["detail"]


def test_deleting_a_referenced_user_is_409_naming_todos_and_the_count(todos_server):
    user = post(todos_server, "/users", {"name": "Owner", "email": "owner@example.com"})
    owned = [post(todos_server, "/users/%d/todos" % user["id"], {"title": title})
             for title in ("One", "Two")]
    problem = assert_problem(call(todos_server, "DELETE", "/users/%d" % user["id"]), 409)
    assert problem["detail"] == ("The user with id %d is referred to by 2 todos; change or "
                                 "delete them first, or delete them too with DELETE /users/%d"
                                 "?_dependent=todos: nothing was deleted." % ((user["id"],) * 2))
    assert call(todos_server, "GET", "/users/%d" % user["id"]).json() == user
    assert call(todos_server, "GET", "/users/%d/todos" % user["id"]).json() == owned
    for item in owned:
        call(todos_server, "DELETE", "/todos/%d" % item["id"])
    assert call(todos_server, "DELETE", "/users/%d" % user["id"]).status == 200


TAGS = Resource("tags", [Field("label", "string", required=True, unique=True,
                                ignores_case=True)])


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_unique_field_is_409_from_its_declaration(kind, tmp_path_factory):
    options = options_for(kind, tmp_path_factory)
    running = start_server(resources=[USERS, TAGS], **options)
    try:
        post(running, "/tags", {"label": "Home"})
        assert_problem(call(running, "POST", "/tags", {"label": "HOME"}), 409)
        assert post(running, "/tags", {"label": "Work"})["id"] == 2
    finally:
        stop_server(running)


def test_a_conditional_get_with_embed_sees_a_change_to_the_embedded_todos(todos_server):
    # RFC 9110 §8.8.3: a strong validator changes whenever the representation does, so a
    # user's own version cannot stand for a representation that holds its todos too
    user = post(todos_server, "/users", {"name": "Cached", "email": "cached@example.com"})
    path = "/users/%d?_embed=todos" % user["id"]
    first = call(todos_server, "GET", path)
    added = post(todos_server, "/users/%d/todos" % user["id"], {"title": "New"})
    tag = first.headers["ETag"]  # none at all would be right too
    reply = call(todos_server, "GET", path, headers={"If-None-Match": tag} if tag else {})
    assert reply.status == 200  # a 304 would keep the client's list without the new todo
    assert reply.json() == dict(user, todos=[added])
    call(todos_server, "DELETE", "/todos/%d" % added["id"])


def test_a_conditional_get_with_expand_sees_a_change_to_the_expanded_user(todos_server):
    user = post(todos_server, "/users", {"name": "Before", "email": "renamed@example.com"})
    owned = post(todos_server, "/users/%d/todos" % user["id"], {"title": "Owned"})
    path = "/todos/%d?_expand=user" % owned["id"]
    tag = call(todos_server, "GET", path).headers["ETag"]
    renamed = call(todos_server, "PATCH", "/users/%d" % user["id"], {"name": "After"}).json()
    reply = call(todos_server, "GET", path, headers={"If-None-Match": tag} if tag else {})
    assert reply.status == 200  # a 304 would keep the client's copy of the old name
    assert reply.json() == dict(owned, user=renamed)
    call(todos_server, "DELETE", "/todos/%d" % owned["id"])


def test_a_stale_if_match_on_deleting_a_referred_to_user_is_412_before_the_409(todos_server):
    user = post(todos_server, "/users", {"name": "Stale", "email": "stale@example.com"})
    owned = post(todos_server, "/users/%d/todos" % user["id"], {"title": "Held"})
    reply = call(todos_server, "DELETE", "/users/%d" % user["id"], headers={"If-Match": '"9-json"'})
    assert_problem(reply, 412)
    assert_problem(call(todos_server, "DELETE", "/users/%d" % user["id"]), 409)
    call(todos_server, "DELETE", "/todos/%d" % owned["id"])


def test_a_nested_lists_links_lead_to_the_same_users_pages(listed):
    reply = call(listed, "GET", "/users/1/todos?limit=1")
    following = re.search(r'<([^>]*)>; rel="next"', reply.headers["Link"]).group(1)
    assert call(listed, "GET", following).json() == [listed_todo(4)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_user_deleted_while_todos_are_made_for_it_leaves_none_pointing_at_nothing(
        kind, tmp_path_factory, fast_thread_switching):
    running, statuses = serve(kind, tmp_path_factory), []
    try:
        for _ in range(8):
            path = "/users/%d" % post(running, "/users", {"name": "R", "email": "r@example.com"})[
                "id"]
            racers = [threading.Thread(target=lambda: statuses.append(call(
                running, "DELETE", path).status))]
            racers += [threading.Thread(target=lambda: statuses.append(call(
                running, "POST", path + "/todos", {"title": "Raced"}).status)) for _ in range(3)]
            for racer in racers:
                racer.start()
            for racer in racers:
                racer.join(10)
            owned = call(running, "GET", "/todos?userId=" + path.rsplit("/", 1)[1]).json()
            if call(running, "GET", path).status == 404:
                assert owned == []  # deleted: nothing may still point at it
            for item in owned:
                call(running, "DELETE", "/todos/%d" % item["id"])
            call(running, "DELETE", path)
    finally:
        stop_server(running)
    # a POST that finds the user and then its reference gone is refused (404 or 422) either way
    assert set(statuses) <= {200, 201, 404, 409, 422} and len(statuses) == 32


NOTES_OF_USERS = Resource("notes", [Field("text", "string", required=True),
                                    Field("userId", "integer", refers_to="users")])


def test_a_409_on_delete_names_every_resource_that_refers_with_its_count():
    running = start_server(resources=[USERS, TODOS, NOTES_OF_USERS])
    try:
        post(running, "/users", {"name": "Ada", "email": "ada@example.com"})
        for title in ("One", "Two", "Three"):
            post(running, "/users/1/todos", {"title": title})
        post(running, "/users/1/notes", {"text": "A note"})
        problem = assert_problem(call(running, "DELETE", "/users/1"), 409)
        assert problem["detail"] == ("The user with id 1 is referred to by 3 todos and 1 note; "
                                     "change or delete them first, or delete them too with "
                                     "DELETE /users/1?_dependent=todos,notes: nothing was "
                                     "deleted.")
        assert call(running, "GET", "/users/1").status == 200
    finally:
        stop_server(running)


def test_a_409_on_delete_says_them_for_one_item_of_each_of_two_resources():
    running = start_server(resources=[USERS, TODOS, NOTES_OF_USERS])
    try:
        post(running, "/users", {"name": "Ada", "email": "ada@example.com"})
        post(running, "/users/1/todos", {"title": "One"})
        post(running, "/users/1/notes", {"text": "A note"})
        problem = assert_problem(call(running, "DELETE", "/users/1"), 409)
        assert problem["detail"] == ("The user with id 1 is referred to by 1 todo and 1 note; "
                                     "change or delete them first, or delete them too with "
                                     "DELETE /users/1?_dependent=todos,notes: nothing was "
                                     "deleted.")
    finally:
        stop_server(running)


# -- an optional field with a none, under every operator, on both stores ----------------

NOTES = Resource("notes", [Field("text", "string", required=True), Field("tag", "string"),
                           Field("rank", "integer"), Field("score", "number")])
# ids 1 to 4; 2 and 4 have nones
NOTED = [("one", "alpha", 2, 2.5), ("two", None, None, None), ("three", "beta", 1, 0.5),
         ("four", None, None, None)]


@pytest.fixture(scope="module", params=["memory", "sqlite"])
def noted(request, tmp_path_factory):
    options = options_for(request.param, tmp_path_factory)
    running = start_server(resources=[USERS, NOTES], **options)
    for text, tag, rank, score in NOTED:
        post(running, "/notes", {"text": text, "tag": tag, "rank": rank, "score": score})
    yield running
    stop_server(running)


def test_no_operator_matches_a_none_string(noted):
    table = {"tag=alpha": [1], "tag_ne=alpha": [3], "tag_gte=b": [3], "tag_lte=b": [1],
             "tag_like=ALP": [1], "tag_like=a": [1, 3], "tag:eq=beta": [3], "tag:ne=beta": [1],
             "tag:lt=b": [1], "tag:lte=beta": [1, 3], "tag:gt=alpha": [3],
             "tag:gte=alpha": [1, 3], "tag:in=alpha,beta": [1, 3], "tag:contains=ET": [3],
             "tag:startsWith=AL": [1], "tag:endsWith=A": [1, 3]}
    assert answers(noted, "/notes", table) == table


def test_no_operator_matches_a_none_integer(noted):
    table = {"rank=2": [1], "rank_ne=2": [3], "rank_gte=1": [1, 3], "rank_lte=1": [3],
             "rank:eq=1": [3], "rank:ne=1": [1], "rank:lt=2": [3], "rank:lte=2": [1, 3],
             "rank:gt=0": [1, 3], "rank:gte=2": [1], "rank:in=1,2": [1, 3], "rank=-1": []}
    assert answers(noted, "/notes", table) == table


def test_no_operator_matches_a_none_number(noted):
    table = {"score=2.5": [1], "score_ne=0.5": [1], "score_gte=1": [1], "score_lte=1": [3],
             "score:lt=1": [3], "score:gt=0.5": [1], "score:in=0.5,2.5": [1, 3],
             "score:eq=2.5": [1], "score:ne=2.5": [3]}
    assert answers(noted, "/notes", table) == table


def test_search_and_simple_rest_filters_skip_a_none(noted):
    table = {"q=ALP": [1], "q=t": [2, 3],
             "filter=" + quote('{"tag": "alpha"}'): [1],
             "filter=" + quote('{"tag": ["alpha", "beta"]}'): [1, 3],
             "filter=" + quote('{"rank": 1}'): [3]}
    assert answers(noted, "/notes", table) == table


def test_a_none_sorts_first_ascending_and_last_descending(noted):
    table = {"sort=tag": [2, 4, 1, 3], "sort=-tag": [3, 1, 2, 4], "_sort=tag": [2, 4, 1, 3],
             "_sort=-tag": [3, 1, 2, 4], "_sort=tag&_order=desc": [3, 1, 2, 4],
             "sort=" + quote('["tag", "DESC"]'): [3, 1, 2, 4],
             "sort=rank": [2, 4, 3, 1], "sort=-rank": [1, 3, 2, 4],
             "_sort=score": [2, 4, 3, 1], "_sort=-score": [1, 3, 2, 4],
             "sort=-tag&tag_ne=x": [3, 1]}
    assert answers(noted, "/notes", table) == table


# -- db.json, as json-server reads it -----------------------------------------------------

DB_JSON = {
    "users": [{"id": 1, "name": "Ada", "email": "ada@example.com", "phone": "+44 20 7946 0958"}],
    "posts": [{"id": "1", "title": "a title", "views": 100, "userId": 1,
               "meta": {"tags": ["rest", "json"], "draft": False, "score": 1.5}},
              {"id": "2", "title": "another title", "views": 200, "userId": 1, "meta": None}],
    "comments": [{"id": "1", "text": "a comment about post 1", "postId": "1"},
                 {"id": "2", "text": "another comment about post 1", "postId": 1},
                 {"id": "3", "text": "about post 2", "postId": "2"}],
    "profile": {"name": "typicode"},
}
POST_1 = {"id": 1, "title": "a title", "views": 100, "userId": 1,
          "meta": {"tags": ["rest", "json"], "draft": False, "score": 1.5}}
POST_2 = {"id": 2, "title": "another title", "views": 200, "userId": 1, "meta": None}
COMMENTS = [{"id": 1, "text": "a comment about post 1", "postId": 1},
            {"id": 2, "text": "another comment about post 1", "postId": 1},
            {"id": 3, "text": "about post 2", "postId": 2}]


def write_db_json(folder, content):
    path = folder / "db.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return str(path)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """rest_users.py started from a db.json, as a front-end developer starts it."""
    path = write_db_json(tmp_path_factory.mktemp("load"), DB_JSON)
    process, banner = run_service("--port", "0", "--load", path)
    try:
        assert banner.startswith("Serving users API on http://127.0.0.1:")
        served = Port(port_of(banner))
        served.note = process.stderr.readline()  # then a log line per request: a few KiB
        yield served
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert process.returncode == 0


def test_a_db_json_serves_its_collections_with_digit_ids_as_integers(loaded):
    assert call(loaded, "GET", "/posts").json() == [POST_1, POST_2]
    assert call(loaded, "GET", "/comments").json() == COMMENTS
    reply = call(loaded, "GET", "/posts/1")
    assert (reply.status, reply.json(), reply.headers["ETag"]) == (200, POST_1, '"1-json"')


def test_the_startup_note_names_every_resource_served(loaded):
    assert all(re.search(r"\b%s\b" % name, loaded.note)
               for name in ("users", "posts", "comments", "profile")), loaded.note


def test_a_db_json_lists_every_resource_at_the_root(loaded):
    assert call(loaded, "GET", "/").json() == {"users": "/users", "posts": "/posts",
                                               "comments": "/comments", "profile": "/profile"}


def test_a_path_that_names_nothing_is_404_saying_where_each_resource_is(loaded):
    problem = assert_problem(call(loaded, "GET", "/nowhere"), 404)
    assert problem["detail"] == (
        "There is nothing at /nowhere; the users are at /users, the posts are at /posts, the "
        "comments are at /comments and the profile is at /profile.")


def test_users_in_a_db_json_gain_its_extra_keys_as_optional_fields(loaded):
    assert call(loaded, "GET", "/users/1").json() == dict(LISTED_ADA, phone="+44 20 7946 0958")
    assert item_ids(call(loaded, "GET", "/users?q=7946")) == [1]  # q looks in the gained field too
    problem = assert_problem(call(loaded, "POST", "/users", {"name": "", "email": "x"}), 422)
    assert [error["field"] for error in problem["errors"]] == ["name", "email"]  # checks kept


def test_a_db_json_infers_types_for_filters_and_sorts(loaded):
    assert item_ids(call(loaded, "GET", "/posts?views_gte=150")) == [2]
    assert item_ids(call(loaded, "GET", "/posts?_sort=-views")) == [2, 1]
    assert_problem(call(loaded, "GET", "/posts?views=many"), 400)
    problem = assert_problem(call(loaded, "POST", "/posts", {"title": "t", "views": "many",
                                                             "userId": 1}), 422)
    assert [error["field"] for error in problem["errors"]] == ["views"]


def test_a_db_json_field_is_required_only_when_every_item_has_a_value(loaded):
    problem = assert_problem(call(loaded, "PUT", "/posts/2", {"views": 1, "userId": 1}), 422)
    assert problem["errors"] == [{"field": "title", "message": "is required"}]
    reply = call(loaded, "PUT", "/posts/2", {"title": "another title", "views": 200,
                                             "userId": 1})  # no meta: it is optional
    assert (reply.status, reply.json()) == (200, POST_2)


@pytest.mark.parametrize("body, field", [
    ({"title": "t", "views": 1.5, "userId": 1}, "views"),  # every value was written as digits
    ({"title": "x" * 10001, "views": 1, "userId": 1}, "title"),
    ({"title": "t", "views": 1, "userId": "1"}, "userId")])
def test_a_db_json_fields_type_is_read_off_its_values(loaded, body, field):
    problem = assert_problem(call(loaded, "POST", "/posts", body), 422)
    assert [error["field"] for error in problem["errors"]] == [field]


def test_db_json_items_without_an_id_get_the_ids_after_the_largest(tmp_path):
    running = start_server(load=write_db_json(tmp_path, {"posts": [
        {"title": "a"}, {"id": "5", "title": "b"}, {"title": "c"}]}))
    try:
        assert call(running, "GET", "/posts").json() == [
            {"id": 5, "title": "b"}, {"id": 6, "title": "a"}, {"id": 7, "title": "c"}]
        assert post(running, "/posts", {"title": "d"})["id"] == 8
    finally:
        stop_server(running)


def test_one_value_with_a_fraction_makes_a_db_json_key_a_number(tmp_path):
    running = start_server(load=write_db_json(tmp_path, {"items": [
        {"id": 1, "price": 100}, {"id": 2, "price": 2.5}, {"id": 3, "price": 1e1}]}))
    try:
        assert item_ids(call(running, "GET", "/items?price_gte=5")) == [1, 3]
        assert item_ids(call(running, "GET", "/items?_sort=price")) == [2, 3, 1]
        assert post(running, "/items", {"price": 0.5}) == {"id": 4, "price": 0.5}
    finally:
        stop_server(running)


def test_a_json_field_is_neither_filtered_nor_sorted(loaded):
    for query in ("meta=1", "_sort=meta", "meta_ne=1", "meta:eq=1"):
        problem = assert_problem(call(loaded, "GET", "/posts?" + query), 400)
        assert names(problem["detail"], "meta"), problem["detail"]


def test_a_merge_patch_merges_into_a_json_field(tmp_path):
    # RFC 7396 §2: a merge patch is applied recursively, and a null in it removes the key
    running = start_server(load=write_db_json(tmp_path, DB_JSON))
    try:
        reply = call(running, "PATCH", "/posts/1", {"meta": {"draft": True, "score": None}},
                     {"Content-Type": "application/merge-patch+json"})
        assert (reply.status, reply.json()) == (200, dict(POST_1, meta={
            "tags": ["rest", "json"], "draft": True}))
    finally:
        stop_server(running)


def test_a_json_field_round_trips_through_xml(loaded):
    xml = call(loaded, "GET", "/posts/1", headers=XML_HEADERS)
    assert (xml.status, xml.body) == (200, (
        b'<post><id>1</id><title>a title</title><views>100</views><userId>1</userId>'
        b'<meta type="object"><tags type="array"><item>rest</item><item>json</item></tags>'
        b'<draft type="boolean">false</draft><score type="number">1.5</score></meta></post>'))
    reply = call(loaded, "PUT", "/posts/1", xml.body, dict(XML_BODY, **dict(
        XML_HEADERS, **{"If-Match": '"1-xml"'})))
    assert (reply.status, reply.body, reply.headers["ETag"]) == (200, xml.body, '"2-xml"')
    assert call(loaded, "GET", "/posts/1").json() == POST_1


DOCS = Resource("docs", [Field("body", "json"), Field("name", "string")])


@pytest.fixture(scope="module")
def documents():
    """A resource with a json field, declared in Python."""
    running = start_server(resources=[USERS, DOCS])
    yield running
    stop_server(running)


def test_a_json_field_in_xml_is_read_by_its_type_attributes(documents):
    body = ('<doc><body type="object"><n type="number">2</n><b type="boolean">true</b>'
            '<z type="null"/><l type="array"><item>x</item><item type="number">1.5</item></l>'
            '<s>t</s><e type="object"/></body></doc>')
    reply = call(documents, "POST", "/docs", body, XML_BODY)
    assert reply.status == 201
    assert reply.json()["body"] == {"n": 2, "b": True, "z": None, "l": ["x", 1.5], "s": "t",
                                    "e": {}}


@pytest.mark.parametrize("leaf", ['<body type="number">x</body>',
                                  '<body type="boolean">yes</body>',
                                  '<body type="date">2024-01-01</body>'])
def test_a_json_leaf_in_xml_that_is_not_its_type_is_422(documents, leaf):
    reply = call(documents, "POST", "/docs", "<doc>%s</doc>" % leaf, XML_BODY)
    problem = assert_problem(reply, 422)
    assert [error["field"] for error in problem["errors"]] == ["body"]


def test_a_json_key_that_is_not_an_xml_name_is_kept_in_json_and_422_in_xml(documents):
    value = {"1st": 2, "a b": 3}
    reply = call(documents, "POST", "/docs", {"body": value}, XML_HEADERS)
    problem = assert_problem(reply, 422, "xml")
    assert [error["field"] for error in problem["errors"]] == ["body"]
    created = post(documents, "/docs", {"body": value})
    assert created["body"] == value
    reply = call(documents, "GET", "/docs/%d" % created["id"], headers=XML_HEADERS)
    assert reply.status != 500
    if reply.status == 200:  # whatever it answers in XML is XML
        ElementTree.fromstring(reply.body)
    else:
        assert_problem(reply, reply.status, "xml")


def test_a_db_json_reference_gives_nested_routes_embed_and_expand(loaded):
    assert call(loaded, "GET", "/posts/1/comments").json() == COMMENTS[:2]
    assert call(loaded, "GET", "/posts/2?_embed=comments").json() == dict(
        POST_2, comments=COMMENTS[2:])
    assert call(loaded, "GET", "/comments/3?_expand=post").json() == dict(COMMENTS[2], post=POST_2)
    assert call(loaded, "GET", "/comments/3?_embed=post").json() == dict(COMMENTS[2], post=POST_2)
    assert_problem(call(loaded, "GET", "/comments/1/posts"), 404)
    problem = assert_problem(call(loaded, "POST", "/comments", {"text": "x", "postId": 9}), 422)
    assert problem["errors"] == [{"field": "postId", "message": "there is no post with id 9"}]


def test_deleting_a_post_with_comments_is_409(loaded):
    problem = assert_problem(call(loaded, "DELETE", "/posts/1"), 409)
    assert problem["detail"] == ("The post with id 1 is referred to by 2 comments; change or "
                                 "delete them first, or delete them too with DELETE /posts/1"
                                 "?_dependent=comments: nothing was deleted.")
    assert call(loaded, "GET", "/posts/1").json() == POST_1


def test_a_singular_resource_reads_with_an_etag_in_both_formats(loaded):
    reply = call(loaded, "GET", "/profile")
    assert (reply.status, reply.json()) == (200, {"name": "typicode"})
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert re.fullmatch(r'"[0-9]+-json"', reply.headers["ETag"])
    xml = call(loaded, "GET", "/profile", headers=XML_HEADERS)
    assert xml.body == b"<profile><name>typicode</name></profile>"
    assert xml.headers["ETag"] == reply.headers["ETag"].replace("json", "xml")
    head = call(loaded, "HEAD", "/profile")
    assert (head.status, head.body, head.headers["ETag"]) == (200, b"", reply.headers["ETag"])


def test_a_singular_resource_is_replaced_and_patched_with_if_match(loaded):
    tag = call(loaded, "GET", "/profile").headers["ETag"]
    put = call(loaded, "PUT", "/profile", {"name": "Ada"}, {"If-Match": tag})
    assert (put.status, put.json()) == (200, {"name": "Ada"})
    assert put.headers["ETag"] != tag
    assert_problem(call(loaded, "PATCH", "/profile", {"name": "Lost"}, {"If-Match": tag}), 412)
    patch = call(loaded, "PATCH", "/profile", {"name": "Grace"}, {"If-Match": put.headers["ETag"]})
    assert (patch.status, patch.json()) == (200, {"name": "Grace"})
    problem = assert_problem(call(loaded, "PUT", "/profile", {}), 422)  # every key it had
    assert [error["field"] for error in problem["errors"]] == ["name"]


def test_a_singular_resource_has_no_id_so_an_id_in_its_body_is_422(loaded):
    before = call(loaded, "GET", "/profile").json()
    for method in ("PUT", "PATCH"):
        problem = assert_problem(call(loaded, method, "/profile", dict(before, id=1)), 422)
        assert [error["field"] for error in problem["errors"]] == ["id"]
    assert call(loaded, "GET", "/profile").json() == before


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_a_singular_resource_takes_no_post_or_delete(loaded, method):
    reply = call(loaded, method, "/profile", {"name": "x"} if method == "POST" else None)
    assert_problem(reply, 405)
    assert reply.headers["Allow"] == "GET, HEAD, PUT, PATCH, OPTIONS"
    options = call(loaded, "OPTIONS", "/profile")
    assert (options.status, options.headers["Allow"]) == (204, "GET, HEAD, PUT, PATCH, OPTIONS")
    assert_problem(call(loaded, "GET", "/profile/1"), 404)


BROKEN_DB_JSON = [  # (content, words the one line must hold: resource, entry, problem)
    ("not a db", ["object"]),
    ({"posts": [{"id": 1, "title": "a"}, "oops"]}, ["post", "2", "object"]),
    ({"posts": [{"id": "x1", "title": "a"}]}, ["post", "1", "id"]),
    ({"posts": [{"id": 1, "title": "a"}, {"id": -2, "title": "b"}]}, ["post", "2", "id"]),
    ({"posts": [{"id": "1", "title": "a"}, {"id": 1, "title": "b"}]}, ["post", "2", "id 1"]),
    ({"posts": [{"id": 1, "title": "a"}], "comments": [{"id": 1, "postId": 9}]},
     ["comment", "1", "postId", "9"]),
    ({"posts": [{"id": 1, "title": "a"}], "count": 3}, ["count"]),
    ({"users": [{"id": 1, "name": "", "email": "a@x"}]}, ["user", "1", "name"]),
]


@pytest.mark.parametrize("content, words", BROKEN_DB_JSON)
def test_a_broken_db_json_stops_the_start_with_one_line(tmp_path, capsys, content, words):
    path = write_db_json(tmp_path, content)
    status, out, err = failed_start(capsys, "--port", "0", "--quiet", "--load", path)
    assert (status, out) == (2, "")
    assert err.startswith("rest_users: cannot load %s: " % path) and err.count("\n") == 1
    said = err[len("rest_users: cannot load %s: " % path):]
    assert all(word in said for word in words), said


def test_a_broken_db_json_on_the_command_line_exits_2(tmp_path):
    path = write_db_json(tmp_path, {"posts": [1, 2]})
    result = run_to_exit("--port", "0", "--load", path)
    assert (result.returncode, result.stdout) == (2, "")
    assert len(result.stderr.splitlines()) == 1 and "posts" in result.stderr


def test_an_empty_collection_and_an_empty_object_in_a_db_json_are_served(tmp_path):
    # json-server's starting files often hold "posts": [] to be filled from the front end
    running = start_server(load=write_db_json(tmp_path, {"posts": [], "settings": {}}))
    try:
        assert call(running, "GET", "/posts").json() == []
        assert call(running, "GET", "/settings").json() == {}
        problem = assert_problem(call(running, "POST", "/posts", {"title": "x"}), 422)
        assert [error["field"] for error in problem["errors"]] == ["title"]
        assert post(running, "/posts", {}) == {"id": 1}
        document = call(running, "GET", "/openapi.json")
        assert document.status == 200
        assert {"/posts", "/posts/{id}", "/settings"} <= set(document.json()["paths"])
    finally:
        stop_server(running)


def test_reset_brings_back_what_a_db_json_started_with(tmp_path):
    path = write_db_json(tmp_path, DB_JSON)
    running = start_server(load=path)
    try:
        call(running, "DELETE", "/comments/3")
        call(running, "PATCH", "/profile", {"name": "changed"})
        assert post(running, "/posts", {"title": "new", "views": 1, "userId": 1})["id"] == 3
        assert call(running, "POST", "/__admin/reset").status == 204
        assert call(running, "GET", "/comments").json() == COMMENTS
        assert call(running, "GET", "/profile").json() == {"name": "typicode"}
        assert call(running, "GET", "/posts").json() == [POST_1, POST_2]
        assert post(running, "/posts", {"title": "new", "views": 1, "userId": 1})["id"] == 3
    finally:
        stop_server(running)


def test_with_db_a_db_json_fills_the_file_once(tmp_path):
    path, db = write_db_json(tmp_path, DB_JSON), str(tmp_path / "db.sqlite")
    running = start_server(load=path, db=db)
    call(running, "DELETE", "/comments/3")
    stop_server(running)
    running = start_server(load=path, db=db)
    try:
        assert call(running, "GET", "/comments").json() == COMMENTS[:2]
        assert call(running, "GET", "/posts/1").json() == POST_1
    finally:
        stop_server(running)


def test_with_db_a_start_without_the_file_serves_what_it_stored(tmp_path):
    path, db = write_db_json(tmp_path, DB_JSON), str(tmp_path / "db.sqlite")
    stop_server(start_server(load=path, db=db))
    running = start_server(db=db)
    try:
        assert call(running, "GET", "/posts").json() == [POST_1, POST_2]
        assert call(running, "GET", "/users/1").json() == dict(LISTED_ADA, phone="+44 20 7946 0958")
        assert call(running, "GET", "/profile").json() == {"name": "typicode"}
    finally:
        stop_server(running)


def test_with_db_a_collection_emptied_stays_empty_and_its_ids_are_not_given_again(tmp_path):
    path, db = write_db_json(tmp_path, DB_JSON), str(tmp_path / "db.sqlite")
    running = start_server(load=path, db=db)
    for comment in COMMENTS:
        call(running, "DELETE", "/comments/%d" % comment["id"])
    stop_server(running)
    running = start_server(load=path, db=db)
    try:
        assert call(running, "GET", "/comments").json() == []
        assert post(running, "/comments", {"text": "new", "postId": 1})["id"] == 4
    finally:
        stop_server(running)


# -- the fake API's controls, the key, the index and the description ---------------------

def test_reset_empties_todos_and_their_ids_start_again(tmp_path_factory):
    running = serve("memory", tmp_path_factory)
    try:
        post(running, "/todos", {"title": "One"})
        post(running, "/todos", {"title": "Two"})
        assert call(running, "POST", "/__admin/reset").status == 204
        assert call(running, "GET", "/todos").json() == []
        assert post(running, "/todos", {"title": "Again"})["id"] == 1
    finally:
        stop_server(running)


def test_the_journal_records_todos_requests(tmp_path_factory):
    running = serve("memory", tmp_path_factory)
    try:
        call(running, "POST", "/todos?from=test", {"title": "Logged"})
        call(running, "GET", "/users/1/todos")
        kept = call(running, "GET", "/__admin/requests").json()["requests"]
        assert [(entry["method"], entry["target"], entry["body"], entry["status"])
                for entry in kept] == [("POST", "/todos?from=test", '{"title": "Logged"}', 201),
                                       ("GET", "/users/1/todos", "", 404)]
    finally:
        stop_server(running)


def test_running_resets_todos_without_an_http_call():
    with rest_users.running(resources=BOTH) as base_url:
        served = Port(int(base_url.rsplit(":", 1)[1]))
        post(served, "/todos", {"title": "Temporary"})
        assert [entry["target"] for entry in base_url.requests()] == ["/todos"]
        base_url.reset()
        assert base_url.requests() == []
        assert call(served, "GET", "/todos").json() == []


def test_fail_rate_covers_todos_and_their_nested_routes():
    running = start_server(resources=BOTH, fail_rate=1.0)
    try:
        for path in ("/todos", "/todos/1", "/users/1/todos"):
            reply = call(running, "GET", path)
            problem = assert_problem(reply, 503)
            assert reply.headers["Retry-After"] == "1"
            assert problem["detail"] == ("This failure was asked for: the server runs with "
                                         "--fail-rate 1.0. Try again.")
        assert call(running, "GET", "/").status == 200
    finally:
        stop_server(running)


@pytest.fixture(scope="module")
def keyed():
    running = start_server(api_key=KEY, resources=BOTH, cors="*")
    yield running
    stop_server(running)


@pytest.mark.parametrize("method, path", [("GET", "/todos"), ("POST", "/todos"),
                                          ("GET", "/todos/1"), ("DELETE", "/todos/99"),
                                          ("GET", "/users/1/todos"), ("BREW", "/todos")])
def test_the_api_key_guards_todos(keyed, method, path):
    reply = call(keyed, method, path)
    assert_problem(reply, 401)
    assert reply.headers["WWW-Authenticate"] == 'Bearer realm="users"'


def test_with_the_key_todos_answer(keyed):
    reply = call(keyed, "POST", "/todos", {"title": "Keyed"}, BEARER)
    assert reply.status == 201
    assert call(keyed, "OPTIONS", "/todos").status == 204  # open, as for users


def test_cors_covers_todos(keyed):
    reply = call(keyed, "GET", "/todos", headers=dict(BEARER, Origin="https://app.example"))
    assert reply.status == 200
    assert reply.headers["Access-Control-Allow-Origin"] == "*"
    preflight = call(keyed, "OPTIONS", "/todos/1", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "PATCH"})
    assert preflight.status == 204
    assert preflight.headers["Access-Control-Allow-Methods"] == (
        "GET, PUT, PATCH, DELETE, HEAD, OPTIONS")


def test_the_index_lists_every_resource_in_order(listed):
    reply = call(listed, "GET", "/")
    assert (reply.status, reply.body) == (200, b'{"users": "/users", "todos": "/todos"}')
    xml = call(listed, "GET", "/", headers=XML_HEADERS)
    assert xml.body == b"<index><users>/users</users><todos>/todos</todos></index>"


def test_the_api_description_has_todos_under_their_own_tag(listed):
    document = call(listed, "GET", "/openapi.json").json()
    assert "todos" in {tag["name"] for tag in document["tags"]}
    for path in ("/todos", "/todos/{id}"):
        for method, operation in document["paths"][path].items():
            if method != "parameters":
                assert operation["tags"] == ["todos"], (path, method)
    schema = document["components"]["schemas"]["Todo"]
    assert list(schema["properties"]) == ["id", "title", "done", "userId"]
    assert schema["properties"]["done"]["type"] == "boolean"
    assert schema["xml"] == {"name": "todo"}
    assert "title" in schema["required"]
    assert "/users/{id}/todos" in document["paths"]


def check_reply_against_openapi(document, path, method, reply, status):
    """The reply has the status expected, the document declares that status for the
    operation, and the reply's headers and JSON body are as it describes."""
    assert reply.status == status, (path, method, reply.status, reply.body)
    response = document["paths"][path][method.lower()]["responses"].get(str(status))
    assert response is not None, (path, method, status)
    for name in response.get("headers", {}):
        if name != "WWW-Authenticate":
            assert name in reply.headers, (path, method, reply.status, name)
    media_type = reply.headers.get("Content-Type", "").split(";")[0]
    if reply.body:
        assert media_type in response["content"], (path, method, reply.status, media_type)
        if media_type.endswith("json"):
            schema = response["content"][media_type]["schema"]
            assert schema_errors(document, schema, reply.json()) == [], (path, method)


def test_every_todo_response_matches_the_api_description(todos_server):
    document = call(todos_server, "GET", "/openapi.json").json()
    item = "/todos/%d" % post(todos_server, "/todos", {"title": "Described", "userId": 1})["id"]
    owner = post(todos_server, "/users", {"name": "Owner", "email": "described@example.com"})
    exchanges = [
        ("/todos", "POST", "/todos", {"title": "Doc"}, {}, 201),
        ("/todos", "POST", "/todos", {"title": 3}, {}, 422),
        ("/todos", "POST", "/todos", {"title": "x", "userId": 9}, {}, 422),
        ("/todos", "GET", "/todos?limit=2&sort=-id&done=false", None, {}, 200),
        ("/todos", "GET", "/todos?done=maybe", None, {}, 400),
        ("/todos", "HEAD", "/todos", None, {}, 200),
        ("/todos", "OPTIONS", "/todos", None, {}, 204),
        ("/todos/{id}", "GET", item, None, {}, 200),
        ("/todos/{id}", "GET", item, None, {"If-None-Match": "*"}, 304),
        ("/todos/{id}", "GET", "/todos/999999", None, {}, 404),
        ("/todos/{id}", "PUT", item, {"title": "Doc", "done": True}, {}, 200),
        ("/todos/{id}", "PUT", item, {"title": "Doc"}, {"If-Match": '"0"'}, 412),
        ("/todos/{id}", "PATCH", item, {"userId": None}, {}, 200),
        ("/todos/{id}", "PATCH", item, {"nope": 1}, {}, 422),
        ("/users/{id}/todos", "GET", "/users/1/todos", None, {}, 200),
        ("/users/{id}/todos", "POST", "/users/%d/todos" % owner["id"], {"title": "N"}, {}, 201),
        ("/users/{id}", "DELETE", "/users/%d" % owner["id"], None, {}, 409),
        ("/todos/{id}", "DELETE", item, None, {}, 200),
        ("/users/{id}/todos", "GET", "/users/999999/todos", None, {}, 404),
    ]
    for path, method, target, body, headers, status in exchanges:
        check_reply_against_openapi(document, path, method, call(todos_server, method, target, body, headers),
                              status)


def test_every_db_json_response_matches_the_api_description(tmp_path):
    running = start_server(load=write_db_json(tmp_path, DB_JSON))
    try:
        document = call(running, "GET", "/openapi.json").json()
        assert {tag["name"] for tag in document["tags"]} >= {"users", "posts", "comments",
                                                               "profile"}
        exchanges = [
            ("/posts", "GET", "/posts", None, {}, 200),
            ("/posts/{id}", "GET", "/posts/1", None, {}, 200),
            ("/posts", "POST", "/posts", {"title": "t", "views": 1, "userId": 1}, {}, 201),
            ("/comments", "GET", "/comments?postId=1", None, {}, 200),
            ("/posts/{id}", "DELETE", "/posts/1", None, {}, 409),
            ("/profile", "GET", "/profile", None, {}, 200),
            ("/profile", "PUT", "/profile", {"name": "Ada"}, {}, 200),
            ("/profile", "PATCH", "/profile", {"name": 3}, {}, 422),
            ("/users/{id}", "GET", "/users/1", None, {}, 200),
        ]
        for path, method, target, body, headers, status in exchanges:
            check_reply_against_openapi(document, path, method,
                                  call(running, method, target, body, headers), status)
        for method, operation in document["paths"]["/profile"].items():
            if method != "parameters":
                assert operation["tags"] == ["profile"], method
    finally:
        stop_server(running)


def test_with_a_key_the_description_marks_todos_as_keyed(keyed):
    document = call(keyed, "GET", "/openapi.json").json()
    for method, operation in document["paths"]["/todos"].items():
        if method not in ("parameters", "options"):
            assert operation["security"] == [{"bearerAuth": []}], method


# -- composition: /__admin/ answers carry no CORS, whatever the order --------------------

def orders(classes):
    """Orders of the handler's parts to try: each rotation, each reversed, and a sample."""
    rotations = [classes[n:] + classes[:n] for n in range(len(classes))]
    every = list(itertools.permutations(classes))
    sample = every[::max(1, len(every) // 40)]
    return rotations + [order[::-1] for order in rotations] + [list(order) for order in sample]


def test_admin_answers_carry_no_cors_whatever_the_order_of_the_parts():
    running = start_server("plain", cors="*", resources=BOTH)
    parts = list(rest_users.PlainHandler.__bases__)
    # what the composing class says besides its parts (the routes they add) comes along
    said = {name: value for name, value in vars(rest_users.PlainHandler).items()
            if not name.startswith("__")}
    origin = {"Origin": "https://evil.example"}
    composed = 0
    try:
        for order in orders(parts):
            try:
                running.RequestHandlerClass = type("Reordered", tuple(order), dict(said))
            except TypeError:  # an order Python cannot linearise is no handler
                continue
            composed += 1
            assert call(running, "GET", "/todos", headers=origin).headers[
                "Access-Control-Allow-Origin"] == "*"  # CORS is on: the test can fail
            for method, path, status in (("GET", "/__admin/requests", 200),
                                         ("POST", "/__admin/reset", 204)):
                assert call(running, method, path).status == status, (order, path)  # it is there
                reply = call(running, method, path, headers=origin)
                assert reply.status == 403, (order, path)  # a page on another origin: refused
                assert not [name for name in reply.headers if name.startswith("Access-Control")]
    finally:
        stop_server(running)
    assert composed >= len(parts)


def test_each_hook_of_the_core_is_overridden_by_one_part_at_most():
    # a hook two parts override runs as their order says, which nothing states
    hooks = set(dir(rest_users.UsersHandler))
    owners = {}
    for part in rest_users.DefaultHandler.__mro__:
        if part in rest_users.UsersHandler.__mro__ or part in (rest_users.DefaultHandler,
                                                                 rest_users.PlainHandler):
            continue
        for name, value in vars(part).items():
            if name in hooks and not name.startswith("__") and (
                    callable(value) or isinstance(value, classmethod)):
                owners.setdefault(name, []).append(part.__name__)
    assert {name: parts for name, parts in owners.items() if len(parts) > 1} == {}


# -- the explorer ------------------------------------------------------------------------

def test_the_explorers_filters_leave_out_a_json_field_the_list_cannot_filter():
    running = start_server(resources=[USERS, DOCS])
    try:
        page = call(running, "GET", "/?resource=docs", headers={"Accept": BROWSER_ACCEPT})
        assert page.status == 200
        assert b'<input id="filter-name">' in page.body
        assert b'id="filter-body"' not in page.body
        assert call(running, "GET", "/docs?body=1").status == 400  # the list says the same
    finally:
        stop_server(running)

def choose_resource(browser, name):
    """Choose a resource on the explorer, by whatever offers the choice (a link, a button, a
    select's option) with its name."""
    browser.run(
        "(() => { const choice = [...document.querySelectorAll('a, button, option')].find("
        "c => [%s, '/' + %s].includes((c.value || c.textContent).trim().toLowerCase()));"
        " if (choice.tagName === 'OPTION') { choice.selected = true; choice.parentElement"
        ".dispatchEvent(new Event('change', {bubbles: true})); } else { choice.click(); }"
        " })()" % (json.dumps(name), json.dumps(name)))


def test_the_explorer_offers_todos(browser):
    running = start_server(resources=BOTH)
    try:
        post(running, "/todos", {"title": "Buy milk"})
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        choose_resource(browser, "todos")
        browser.wait_for("[...document.querySelectorAll('#rows td')].some("
                         "td => td.textContent === 'Buy milk')")
        # the form has a labelled input per field: type a title, and create the todo
        browser.run("const label = [...document.querySelectorAll('label')].find("
                    "l => l.textContent.trim().startsWith('title'));"
                    "document.getElementById(label.htmlFor).value = 'Walk the dog';"
                    "document.getElementById('send-POST').click()")
        created = "document.querySelector('#exchanges > li[data-status=\"201\"]')"
        browser.wait_for(created + " !== null")
        shown = browser.run(created + ".textContent")
        todos = call(running, "GET", "/todos").json()
    finally:
        stop_server(running)
    assert "POST /todos HTTP/1.1" in shown and "location: /todos/2" in shown.lower()
    assert todos == [todo(1, "Buy milk"), todo(2, "Walk the dog")]


PROFILE_DB_JSON = {"profile": {"name": "typicode"}}  # a singular resource, beside users


def test_the_explorer_offers_a_singular_resource_with_no_list_create_or_delete(tmp_path):
    running = start_server(load=write_db_json(tmp_path, PROFILE_DB_JSON))
    try:
        home = call(running, "GET", "/", headers={"Accept": BROWSER_ACCEPT}).text()
        page = call(running, "GET", "/?resource=profile", headers={"Accept": BROWSER_ACCEPT})
    finally:
        stop_server(running)
    assert re.findall(r'data-resource="(\w+)"', home) == ["users", "profile"]
    assert page.status == 200
    assert page.headers["Content-Security-Policy"] == rest_users.EXPLORER_CSP
    text = page.text()
    assert re.search(r"<title>Profile API explorer</title>", text)
    assert re.findall(r'<th scope="col">([^<]*)</th>', text) == ["name", "action"]  # no id
    assert re.findall(r'<button id="([\w-]+)"', text) == ["open-user", "send-PUT", "send-PATCH"]
    assert re.findall(r'<(?:input|select) id="([\w-]+)"', text) == ["api-key", "user-name"]
    assert '<label for="user-name">name</label>' in text  # no id, no filter, sort or page


def test_the_explorer_shows_a_singular_resource_and_patches_it_with_if_match(
        browser, capsys, tmp_path):
    running = start_server(load=write_db_json(tmp_path, PROFILE_DB_JSON), quiet=False)
    try:
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        browser.wait_for("document.getElementById('total').textContent !== ''")  # users
        choose_resource(browser, "profile")
        browser.wait_for("[...document.querySelectorAll('#rows td')].some("
                         "td => td.textContent === 'typicode')")
        read = browser.run(LAST_EXCHANGE + ".textContent")
        assert read.startswith("GET reads a resource and changes nothing; its ETag names the "
                               "version you got.GET /profile HTTP/1.1"), read
        assert 'etag: "1-json"' in read and read.endswith('{"name": "typicode"}')
        assert browser.run("[...document.querySelectorAll('th')].map(th => th.textContent)"
                           ) == ["name", "action"]
        assert browser.run("document.getElementById('send-POST') === null && "
                           "document.getElementById('send-DELETE') === null")
        assert browser.run("document.getElementById('total').textContent") == ""
        capsys.readouterr()  # from here on: what the person does
        browser.run("document.getElementById('send-PATCH').click()")  # not opened yet
        assert browser.run("document.getElementById('item-id-note').textContent") == (
            "Open the profile for editing first (GET): its ETag goes into If-Match.")
        browser.run("document.querySelector('#rows button').click()")  # Edit
        browser.wait_for("document.getElementById('user-name').value === 'typicode'")
        assert browser.run("document.getElementById('item-id-note').textContent") == (
            'The profile is open at ETag "1-json".')
        browser.run("document.getElementById('user-name').value = 'Ada';"
                    "document.getElementById('send-PATCH').click()")
        browser.wait_for("[...document.querySelectorAll('#rows td')].some("
                         "td => td.textContent === 'Ada')")
        patched = browser.run("[...document.querySelectorAll('#exchanges > li')].find(li => li"
                              ".querySelector('pre').textContent.startsWith('PATCH')).textContent")
        assert requests_logged(capsys.readouterr().err) == [
            "GET /profile", "PATCH /profile", "GET /profile"]  # open, write, show
        assert browser.run("document.getElementById('item-id-note').textContent") == (
            'The profile is open at ETag "2-json".')
        assert call(running, "GET", "/profile").json() == {"name": "Ada"}
    finally:
        stop_server(running)
    assert "PATCH /profile HTTP/1.1" in patched and 'If-Match: "1-json"' in patched
    assert "Content-Type: application/merge-patch+json" in patched
    assert 'HTTP/1.1 200 OK' in patched and patched.endswith('{"name": "Ada"}')


# -- messages: each names the resource it is about ---------------------------------------

def test_a_todo_lists_400_points_to_the_api_description_not_to_users(listed):
    problem = assert_problem(call(listed, "GET", "/todos?sort=priority"), 400)
    assert problem["detail"].endswith(" See GET /openapi.json for the parameters of GET /todos.")
    assert "/users" not in problem["detail"]


def test_a_users_list_400_still_points_to_the_readme(listed):
    problem = assert_problem(call(listed, "GET", "/users?sort=priority"), 400)
    assert problem["detail"].endswith(" See GET /users in the README.")


def test_simple_rests_range_counts_todos_for_todos(listed):
    problem = assert_problem(call(listed, "GET", "/todos?range=%s" % quote("[5,1]")), 400)
    assert problem["detail"].startswith("range must be [first, last]: whole numbers, first "
                                        "from 0, and 1 to 1000 todos from first to last.")


def test_a_409_on_delete_counts_one_referring_item_in_the_singular(todos_server):
    user = post(todos_server, "/users", {"name": "Once", "email": "once@example.com"})
    post(todos_server, "/users/%d/todos" % user["id"], {"title": "Only one"})
    problem = assert_problem(call(todos_server, "DELETE", "/users/%d" % user["id"]), 409)
    assert problem["detail"] == ("The user with id %d is referred to by 1 todo; change or "
                                 "delete it first, or delete it too with DELETE /users/%d"
                                 "?_dependent=todos: nothing was deleted." % ((user["id"],) * 2))


TOO_LARGE = "is too large: a number must be finite, from about -1.8e308 to 1.8e308"
ITEMS = Resource("items", [Field("label", "string", required=True)])


@pytest.mark.parametrize("resources, description", [
    ([ITEMS], "An item resource in JSON and XML, from rest_users.py."),
    ([TODOS], "A todo resource in JSON and XML, from rest_users.py."),
    ([USERS], "A user resource in JSON and XML, from rest_users.py.")])
def test_the_api_description_names_its_one_resource_with_its_article(resources, description):
    document = rest_users.openapi_document(
        [found for resource in resources for found in rest_users.resource_routes(resource)],
        auth=False)
    assert document["info"]["description"] == description


def test_help_says_the_key_the_file_and_the_fake_api_cover_every_resource():
    told = " ".join(run_to_exit("--help").stdout.split())
    assert "--db PATH keep the resources in this SQLite file" in told
    assert "--api-key KEY require 'Authorization: Bearer KEY' on every resource" in told
    assert "a fake API, for front ends and test suites (on every resource):" in told


def test_the_api_description_of_another_resource_speaks_of_no_users():
    document = rest_users.openapi_document(rest_users.resource_routes(ITEMS), auth=True)
    words = json.dumps(document).replace('Bearer realm=\\"users\\"', "")  # RFC 6750's realm
    assert re.findall(r".{30}\b[Uu]sers?\b.{10}", words) == []


@pytest.mark.parametrize("text", ["1e400", "-1e400", "1E999"])
def test_a_number_too_large_to_hold_is_422_saying_so(noted, text):
    reply = call(noted, "POST", "/notes", '{"text": "big", "score": %s}' % text, JSON_BODY)
    problem = assert_problem(reply, 422)
    assert problem["errors"] == [{"field": "score", "message": TOO_LARGE}]


def test_a_number_too_large_to_hold_in_xml_is_422_saying_so(noted):
    reply = call(noted, "POST", "/notes", "<note><text>big</text><score>1e400</score></note>",
                 XML_BODY)
    problem = assert_problem(reply, 422)
    assert problem["errors"] == [{"field": "score", "message": TOO_LARGE}]


# -- s-core: the core's shape: both formats both ways, its list of resources, its rules in force --

XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


@pytest.fixture(scope="module")
def core_with_notes(tmp_path_factory):
    """The core alone, serving users and a resource with an optional field, in memory."""
    module = module_from_source(tmp_path_factory.mktemp("core_xml"), "core_xml", core_source())
    notes = module.Resource("notes", [module.Field("text", required=True),
                                      module.Field("score", "integer")])
    user_store = module.MemoryStore()
    running = module.UsersServer(("127.0.0.1", 0), [
        user_store, module.MemoryStore((), notes, user_store)])
    serve_in_a_thread(running)
    yield running
    stop_server(running)


def test_the_core_alone_reads_an_item_sent_in_xml(core_with_notes):
    reply = call(core_with_notes, "POST", "/users",
                 "<user><name>Alan Turing</name><email>alan@example.com</email></user>",
                 {"Content-Type": "application/xml", "Accept": "application/xml"})
    assert (reply.status, reply.headers["Location"], reply.headers["Content-Type"]) == (
        201, "/users/1", XML_TYPE)
    assert reply.body == (b"<user><id>1</id><name>Alan Turing</name>"
                          b"<email>alan@example.com</email></user>")
    reply = call(core_with_notes, "PATCH", "/users/1",
                 "<user><email>turing@example.com</email></user>", {"Content-Type": "text/xml"})
    assert (reply.status, reply.headers["ETag"], reply.json()) == (
        200, '"2-json"', {"id": 1, "name": "Alan Turing", "email": "turing@example.com"})


def test_the_core_alone_removes_an_optional_value_with_xsi_nil(core_with_notes):
    reply = call(core_with_notes, "POST", "/notes", "<note><text>hi</text><score>3</score></note>",
                 {"Content-Type": "application/xml"})
    assert (reply.status, reply.json()) == (201, {"id": 1, "text": "hi", "score": 3})
    reply = call(core_with_notes, "PATCH", "/notes/1",
                 '<note %s><score xsi:nil="true"/></note>' % XSI,
                 {"Content-Type": "application/xml", "Accept": "application/xml"})
    assert (reply.status, reply.body) == (200, b"<note><id>1</id><text>hi</text></note>")


def test_the_core_alone_refuses_xml_it_cannot_take(core_with_notes):
    reply = call(core_with_notes, "POST", "/notes", '<!DOCTYPE note><note><text>a</text></note>',
                 {"Content-Type": "application/xml"})
    assert assert_problem(reply, 400)["detail"] == (
        "XML with a DOCTYPE or entity declarations is not accepted.")
    reply = call(core_with_notes, "POST", "/notes", "<user><text>a</text></user>",
                 {"Content-Type": "application/xml"})
    assert assert_problem(reply, 400)["detail"] == "The XML root element must be <note>, not <user>."
    reply = call(core_with_notes, "POST", "/notes",
                 "<note><text><b>a</b></text><score>x</score></note>",
                 {"Content-Type": "application/xml"})
    assert assert_problem(reply, 422)["errors"] == [
        {"field": "text", "message": "must be a string, not an element with child elements"},
        {"field": "score", "message": 'must be a whole number, not the text "x"'}]


def readme_curl_session():
    """The README's curl session: (curl's words, the reply it shows as lines) for each line."""
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    session = readme[readme.index("## A session with curl"):readme.index("## The explorer")]
    exchanges = []
    for block in re.findall(r"```sh\n(.*?)```", session, re.S):
        for command, shown in re.findall(r"^(curl (?:.*\\\n)*.*)\n((?:#.*\n)*)", block, re.M):
            exchanges.append((shlex.split(command.replace("\\\n", " ")),
                              [line[2:] for line in shown.splitlines()]))
    return exchanges


def send_as_curl(server, words):
    """Send what a curl command line of the README asks for (-i, -I, -X, -H, -d)."""
    method, headers, body, words = None, {}, None, list(words[1:])
    while words:
        word = words.pop(0)
        if word == "-I":
            method = "HEAD"
        elif word == "-X":
            method = words.pop(0)
        elif word == "-H":
            name, _, value = words.pop(0).partition(":")
            headers[name] = value.strip()
        elif word == "-d":
            body = words.pop(0)
        elif word != "-i":
            url = urllib.parse.urlsplit(word)
    path = url.path + ("?" + url.query if url.query else "")
    return call(server, method or ("POST" if body is not None else "GET"), path, body, headers)


def assert_reply_as_shown(reply, shown):
    """The reply has the status, header fields and body a README shows (as many as shown)."""
    if shown and shown[0].startswith("HTTP/1.1 "):
        status_line = shown.pop(0).split("  (")[0].strip()  # "  (no body, as asked)": a note
        assert "HTTP/1.1 %d" % reply.status == status_line[:12], status_line
        while shown and shown[0]:
            name, _, value = shown.pop(0).partition(": ")
            assert reply.headers.get_all(name) == [value], name
        shown = shown[1:]
    if shown:
        expected = "\n".join(shown)
        if reply.headers["Content-Type"] == PROBLEM_JSON:  # its title: this Python's phrase
            expected = json.dumps(dict(json.loads(expected), title=reason_phrase(reply.status)))
        assert reply.body.decode("utf-8") == expected


@pytest.mark.parametrize("kind", ["core", "default", "plain"])
def test_the_readmes_curl_session_is_answered_as_shown_by_the_core_alone_too(tmp_path, kind):
    if kind == "core":
        module = module_from_source(tmp_path, "core_readme", core_source())
        running = module.UsersServer(("127.0.0.1", 0), module.MemoryStore())
        threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    else:
        running = start_server(kind)
    try:
        exchanges = readme_curl_session()
        assert len(exchanges) == 14
        for words, shown in exchanges:
            assert_reply_as_shown(send_as_curl(running, words), shown)
    finally:
        stop_server(running)


LEARNERS_TODOS = ('RESOURCES = [USERS, Resource("todos", [Field("title", required=True), '
                  'Field("done", "boolean", default=False)])]')


def source_with_todos(source):
    """A learner's copy: a todos resource appended to the core's list of served resources."""
    assert source.count("\nRESOURCES = [USERS]") == 1
    return source.replace("\nRESOURCES = [USERS]", "\n" + LEARNERS_TODOS)


def assert_todos_served(server):
    reply = call(server, "POST", "/todos", {"title": "Learn REST"})
    assert (reply.status, reply.headers["Location"], reply.json()) == (
        201, "/todos/1", {"id": 1, "title": "Learn REST", "done": False})
    reply = call(server, "GET", "/todos", headers={"Accept": "application/xml"})
    assert (reply.status, reply.body) == (
        200, b"<todos><todo><id>1</id><title>Learn REST</title><done>false</done></todo></todos>")
    assert call(server, "GET", "/users").json() == []


def test_a_resource_appended_to_the_list_is_served_by_python_rest_users_py(tmp_path):
    with open(os.path.join(HERE, "rest_users.py"), encoding="utf-8") as file:
        (tmp_path / "rest_users.py").write_text(source_with_todos(file.read()), encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(tmp_path / "rest_users.py"), "--port", "0",
                                "--quiet"], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        banner = process.stdout.readline()
        assert_todos_served(Port(port_of(banner)))
    finally:
        process.kill()  # nothing to keep: no need to wait for a graceful stop
        process.wait(10)
        process.stdout.close()


def test_a_resource_appended_to_the_list_is_served_by_the_core_alone(tmp_path):
    module = module_from_source(tmp_path, "core_todos", source_with_todos(core_source()))
    running = module.UsersServer(("127.0.0.1", 0))  # as the docstring says: RESOURCES, in memory
    threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    try:
        assert_todos_served(running)
    finally:
        stop_server(running)


PASSES = '"""Whether an item passes every Filter, and has q in a searched field."""'
HIDING = PASSES + '\n        if has_text(self.resource, item, "hidden"):\n            return False'


def test_a_learners_rule_in_passes_holds_in_every_list_of_the_default_server(tmp_path):
    with open(os.path.join(HERE, "rest_users.py"), encoding="utf-8") as file:
        source = file.read()
    assert source.count(PASSES) == 1
    module = module_from_source(tmp_path, "hiding_users", source.replace(PASSES, HIDING))
    running = module.make_server("127.0.0.1", 0, quiet=True, users=[
        {"name": "Ada", "email": "ada@example.com"}, {"name": "Hidden Hal", "email": "h@x.org"}])
    threading.Thread(target=running.serve_forever, args=(0.01,), daemon=True).start()
    try:
        ada = {"id": 1, "name": "Ada", "email": "ada@example.com"}
        for path in ("/users", "/users?sort=-id", "/users?limit=1", "/users?_page=1"):
            reply = call(running, "GET", path)
            assert (reply.json(), reply.headers["X-Total-Count"]) == ([ada], "1"), path
        call(running, "PATCH", "/users/2", {"name": "Hal"})
        assert [user["id"] for user in call(running, "GET", "/users").json()] == [1, 2]
        call(running, "PATCH", "/users/1", {"name": "Ada, hidden"})
        call(running, "POST", "/users", {"name": "Hidden Hugo", "email": "hugo@x.org"})
        reply = call(running, "GET", "/users?sort=-id")
        assert (reply.json(), reply.headers["X-Total-Count"]) == (
            [{"id": 2, "name": "Hal", "email": "h@x.org"}], "1")
    finally:
        stop_server(running)


POSTS = Resource("posts", [Field("title", required=True),
                           Field("userId", "integer", refers_to="users")])
MANY_USERS = 200


def post_of(post_id):
    """The made-up post with this id: every 50th belongs to no one, the others go round."""
    return {"id": post_id, "title": "Post %d" % post_id,
            "userId": None if post_id % 50 == 0 else 1 + post_id % MANY_USERS}


# 50,000 posts in memory, where a look at every child is what the index saves; SQLite
# finds them by its index of userId whatever their number, and fewer load faster
@pytest.fixture(scope="module", params=[("memory", 50000), ("sqlite", 5000)],
                ids=["memory", "sqlite"])
def many_posts(request, tmp_path_factory):
    """The default server with 200 users and many posts that refer to them, in each store;
    posts_by_user: the posts of each user, in id order."""
    kind, count = request.param
    running = start_server(resources=[USERS, POSTS], **options_for(kind, tmp_path_factory),
                           users=[{"name": "User %d" % n, "email": "u%d@example.com" % n}
                                  for n in range(1, MANY_USERS + 1)])
    posts = [post_of(n) for n in range(1, count + 1)]
    items = [rest_users.new_item(POSTS, post["id"], post) for post in posts]
    store = running.stores["posts"]
    store.load(items) if kind == "sqlite" else store.reset(items)
    running.posts_by_user = {}
    for post in posts:
        running.posts_by_user.setdefault(post["userId"], []).append(post)
    yield running
    stop_server(running)


def test_embed_over_many_children_gives_each_parent_its_own(many_posts):
    users = call(many_posts, "GET", "/users?_embed=posts&_limit=20&_page=6").json()
    assert users == [{"id": n, "name": "User %d" % n, "email": "u%d@example.com" % n,
                      "posts": many_posts.posts_by_user.get(n, [])} for n in range(101, 121)]
    reply = call(many_posts, "GET", "/posts?_expand=user&userId=7&_limit=2")
    assert [post["user"]["id"] for post in reply.json()] == [7, 7]


class RecordingConnection:
    """A SQLite connection that notes the statements a store runs on it."""

    def __init__(self, db):
        self.db, self.statements = db, []

    def execute(self, sql, arguments=()):
        self.statements.append((sql, arguments))
        return self.db.execute(sql, arguments)


def looking_at(stores, looked):
    """Note in looked each item the core's passes is asked about, or each SQL statement."""
    for store in stores:
        if isinstance(store, rest_users.SQLiteStore):
            store.db = RecordingConnection(store.db)
            looked.append(store.db.statements)
        else:
            store.passes = lambda item, query, passes=store.passes: looked.append(1) or passes(
                item, query)


def test_embed_looks_at_the_items_it_answers_with_not_every_child(many_posts):
    looked, stores = [], list(many_posts.stores.values())
    looking_at(stores, looked)
    try:
        users = call(many_posts, "GET", "/users?_embed=posts&_limit=100").json()
        post = call(many_posts, "GET", "/posts/7?_embed=user").json()
    finally:
        for store in stores:
            if isinstance(store, rest_users.SQLiteStore):
                store.db = store.db.db
            else:
                del store.passes
    answered = len(users) + sum(len(user["posts"]) for user in users) + 1
    assert (post["user"]["id"], answered) == (8, 101 + sum(
        len(many_posts.posts_by_user.get(n, [])) for n in range(1, 101)))
    if looked[0] == 1:  # memory: the core's passes, asked of no item it does not answer with
        assert len(looked) <= answered  # 24,601 of 50,200 items
    else:  # SQLite: every query of posts finds them by an index, none reads the whole table
        db, statements = stores[0].db, [each for recorded in looked for each in recorded]
        plans = [row[-1] for sql, arguments in statements if "posts" in sql
                 for row in db.execute("EXPLAIN QUERY PLAN " + sql, arguments)]
        assert len(plans) >= 100 and not [plan for plan in plans
                                          if re.match(r"SCAN (TABLE )?posts\b", plan)]


SORTED_BY_DOCS = "id, -id, name, -name, comma-separated"


@pytest.mark.parametrize("query, detail", [
    ("sort=body", "sort takes keys from %s; body is not one." % SORTED_BY_DOCS),
    ("sort=name,-body", "sort takes keys from %s; -body is not one." % SORTED_BY_DOCS),
    ("_sort=body&_order=desc", "_sort takes keys from %s; body is not one." % SORTED_BY_DOCS),
    ("_sort=-body", "_sort takes keys from %s; -body is not one." % SORTED_BY_DOCS),
    ('sort=["body","DESC"]',
     'sort must be ["FIELD", "ASC" or "DESC"], FIELD one of id, name, not ["body","DESC"].'),
])
def test_a_json_field_in_a_sort_is_a_400_naming_it_in_every_dialect(documents, query, detail):
    reply = call(documents, "GET", "/docs?" + quote(query, safe="=&,"))
    assert assert_problem(reply, 400)["detail"] == (
        detail + " See GET /openapi.json for the parameters of GET /docs.")


# -- s-items: any JSON key is a field, and ids end at 2^63-1 ---------------------------------

ODD = {"from": "ada", "_id": "5f1a", "class": "memo", "_replace": "r", "version": 7,
       "ποσό": 2.5}  # names a namedtuple could not hold; all XML names
NOT_XML = {"a b": "c", 'say "hi"': "hi"}  # names XML cannot carry, SQL needs quoted
LETTERS = Resource("letters", [Field(name, "integer" if name == "version" else "number"
                                     if name == "ποσό" else "string") for name in ODD]
                   + [Field(name) for name in NOT_XML])
NONE_NOT_XML = dict.fromkeys(NOT_XML)  # what a letter without them shows: null
ODD_XML = ("<_id>5f1a</_id><class>memo</class><_replace>r</_replace><version>7</version>"
           "<ποσό>2.5</ποσό>")


@pytest.fixture(scope="module", params=KINDS)
def lettered(request, tmp_path_factory):
    """A server of users and letters, whose fields are named as no Python name may be."""
    running = start_server(resources=[USERS, LETTERS],
                           **options_for(request.param, tmp_path_factory))
    yield running
    stop_server(running)


def test_any_json_key_is_a_field_through_post_put_patch_and_get(lettered):
    sent = dict(ODD, **NOT_XML)
    created = post(lettered, "/letters", sent)
    path = "/letters/%d" % created["id"]
    assert created == dict({"id": created["id"]}, **sent)
    replaced = dict(sent, **{"from": "grace", "_replace": "s", "a b": "d", "ποσό": 3})
    reply = call(lettered, "PUT", path, replaced)
    assert (reply.status, reply.json()) == (200, dict(created, **replaced))
    reply = call(lettered, "PATCH", path, {"class": "note", 'say "hi"': None, "_id": "6e2b"})
    patched = dict(dict(created, **replaced), **{"class": "note", 'say "hi"': None,
                                                 "_id": "6e2b"})
    assert (reply.status, reply.json()) == (200, patched)
    reply = call(lettered, "GET", path)
    assert (reply.status, reply.json(), reply.headers["ETag"]) == (200, patched, '"3-json"')


def test_a_version_field_is_the_clients_and_the_etag_the_servers(lettered):
    created = post(lettered, "/letters", dict(ODD, version=41))
    path = "/letters/%d" % created["id"]
    assert call(lettered, "GET", path).headers["ETag"] == '"1-json"'
    reply = call(lettered, "PATCH", path, {"version": 42}, {"If-Match": '"1-json"'})
    assert (reply.status, reply.json()["version"], reply.headers["ETag"]) == (
        200, 42, '"2-json"')
    reply = call(lettered, "PATCH", path, {"version": 43}, {"If-Match": '"42-json"'})
    assert reply.status == 412
    assert call(lettered, "GET", path, headers={"If-None-Match": '"2-json"'}).status == 304


@pytest.mark.parametrize("name, value", [("from", "zoe"), ("_id", "77aa"), ("class", "rare"),
                                         ("_replace", "q"), ("version", "9001"),
                                         ("ποσό", "-7.5"), ("a b", "e f"), ('say "hi"', "yo")])
def test_a_list_filters_by_any_field_name(lettered, name, value):
    kept = {"from": "zoe", "_id": "77aa", "class": "rare", "_replace": "q", "version": 9001,
            "ποσό": -7.5, "a b": "e f", 'say "hi"': "yo"}
    wanted = [post(lettered, "/letters", dict(ODD, **{name: kept[name]}))]
    post(lettered, "/letters", ODD)
    reply = call(lettered, "GET", "/letters?" + urllib.parse.urlencode({name: value}))
    assert (reply.status, reply.json()) == (200, wanted)


def test_fields_with_odd_names_are_read_and_written_in_xml(lettered):
    reply = call(lettered, "POST", "/letters", ("<letter><from>ada</from>%s</letter>" % ODD_XML
                                                ).encode(), dict(XML_BODY, **XML_HEADERS))
    assert reply.status == 201
    item_id = int(reply.headers["Location"].rpartition("/")[2])
    assert reply.text() == "<letter><id>%d</id><from>ada</from>%s</letter>" % (
        item_id, ODD_XML)
    reply = call(lettered, "PATCH", "/letters/%d" % item_id,
                 "<letter><from>eve</from><version>8</version></letter>", XML_BODY)
    assert reply.json() == dict(ODD, id=item_id, version=8, **NONE_NOT_XML, **{"from": "eve"})


@pytest.mark.parametrize("name", sorted(NOT_XML))
def test_a_key_that_is_not_an_xml_name_is_406_to_read_in_xml(lettered, name):
    created = post(lettered, "/letters", dict(ODD, **{name: NOT_XML[name]}))
    for path in ("/letters/%d" % created["id"], "/letters?id=%d" % created["id"]):
        problem = assert_problem(call(lettered, "GET", path, headers=XML_HEADERS), 406, "xml")
        assert problem["detail"] == "The letter's %s %s." % (name, rest_users.BEYOND_XML)


@pytest.mark.parametrize("name", sorted(NOT_XML))
def test_a_key_that_is_not_an_xml_name_is_422_to_write_in_xml_and_nothing_is_kept(
        lettered, name):
    before = call(lettered, "GET", "/letters").headers["X-Total-Count"]
    reply = call(lettered, "POST", "/letters", dict(ODD, **{name: "x"}), XML_HEADERS)
    assert xml_problem(assert_problem(reply, 422, "xml") and reply.body)["errors"] == [
        {"field": name, "message": rest_users.BEYOND_XML}]
    assert call(lettered, "GET", "/letters").headers["X-Total-Count"] == before


MESSAGE_1 = {"id": 1, "from": "ada", "to": "alan", "_id": "5f1a", "class": "memo",
             "_replace": "r", "version": "v1", "ποσό": 3}
MESSAGE_2 = dict(MESSAGE_1, id=2, **{"from": "alan", "_id": "5f1b", "a b": "c"})


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_files_odd_keys_are_served_written_and_kept_in_a_db(kind, tmp_path):
    db = {"db": str(tmp_path / "odd.db")} if kind == "sqlite" else {}
    load = write_db_json(tmp_path, {"messages": [MESSAGE_1, MESSAGE_2]})
    running = start_server(load=load, **db)
    try:
        assert call(running, "GET", "/messages").json() == [dict(MESSAGE_1, **{"a b": None}),
                                                             MESSAGE_2]
        changed = dict(MESSAGE_1, **{"from": "grace", "class": "note", "version": "v2"})
        reply = call(running, "PUT", "/messages/1", changed)
        assert (reply.status, reply.headers["ETag"]) == (200, '"2-json"')
        reply = call(running, "PATCH", "/messages/1", {"_replace": "s", "a b": "d"})
        changed.update({"_replace": "s", "a b": "d"})
        assert (reply.status, reply.json(), reply.headers["ETag"]) == (200, changed, '"3-json"')
        assert call(running, "GET", "/messages?version=v2").json() == [changed]
    finally:
        stop_server(running)
    if db:
        running = start_server(**db)
        try:
            reply = call(running, "GET", "/messages/1")
            assert (reply.json(), reply.headers["ETag"]) == (changed, '"3-json"')
            assert call(running, "GET", "/messages?from=alan").json() == [MESSAGE_2]
        finally:
            stop_server(running)


# The --db file of 11a25e4, as that release wrote it: its schema word for word.
RELEASE_11A25E4_SCHEMA = """
        PRAGMA locking_mode = EXCLUSIVE; -- the file's lock is held until the store closes
        PRAGMA journal_mode = WAL;      -- readers never wait for a writer
        PRAGMA synchronous = NORMAL;    -- in WAL mode a commit survives a killed process
        CREATE TABLE IF NOT EXISTS users (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            email TEXT NOT NULL,
            version INTEGER NOT NULL DEFAULT 1
        );
        CREATE UNIQUE INDEX IF NOT EXISTS users_email_key ON users (email COLLATE NOCASE);
        -- one index per sort order, so a sorted page reads only its own rows
        CREATE INDEX IF NOT EXISTS users_by_name ON users (name);
        CREATE INDEX IF NOT EXISTS users_by_name_desc ON users (name DESC);
        CREATE INDEX IF NOT EXISTS users_by_email ON users (email);
        CREATE INDEX IF NOT EXISTS users_by_email_desc ON users (email DESC);
        PRAGMA user_version = 1;        -- a write: a file it cannot write fails now, at start
"""
# The --db file of ec8ffad, after `--load` of a db.json with users (and a phone) and posts.
RELEASE_EC8FFAD_SCHEMA = """
        PRAGMA journal_mode = WAL;
        PRAGMA user_version = 1;
        CREATE TABLE rest_users_resources (  -- what --load files declared
            collection TEXT PRIMARY KEY, declaration TEXT NOT NULL);
        CREATE TABLE "users" (id INTEGER PRIMARY KEY AUTOINCREMENT, "name" TEXT NOT NULL,
            "email" TEXT NOT NULL, "phone" TEXT, version INTEGER NOT NULL DEFAULT 1);
        CREATE UNIQUE INDEX "users_email_key" ON "users" ("email" COLLATE NOCASE);
        CREATE INDEX "users_by_name" ON "users" ("name");
        CREATE INDEX "users_by_name_desc" ON "users" ("name" DESC);
        CREATE INDEX "users_by_email" ON "users" ("email");
        CREATE INDEX "users_by_email_desc" ON "users" ("email" DESC);
        CREATE INDEX "users_by_phone" ON "users" ("phone");
        CREATE INDEX "users_by_phone_desc" ON "users" ("phone" DESC);
        CREATE TABLE "posts" (id INTEGER PRIMARY KEY AUTOINCREMENT, "title" TEXT NOT NULL,
            "userId" INTEGER NOT NULL, "meta" TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX "posts_by_title" ON "posts" ("title");
        CREATE INDEX "posts_by_title_desc" ON "posts" ("title" DESC);
        CREATE INDEX "posts_by_userId" ON "posts" ("userId");
        CREATE INDEX "posts_by_userId_desc" ON "posts" ("userId" DESC);
        CREATE INDEX "posts_by_meta" ON "posts" ("meta");
        CREATE INDEX "posts_by_meta_desc" ON "posts" ("meta" DESC);
        INSERT INTO rest_users_resources VALUES ('users', '{"item": "user", "singular": false,
            "fields": [{"name": "phone", "type": "string", "required": false,
            "refers_to": null, "max_length": 10000}]}');
        INSERT INTO rest_users_resources VALUES ('posts', '{"item": "post", "singular": false,
            "fields": [{"name": "title", "type": "string", "required": true, "refers_to": null,
            "max_length": 10000}, {"name": "userId", "type": "integer", "required": true,
            "refers_to": "users", "max_length": null}, {"name": "meta", "type": "json",
            "required": true, "refers_to": null, "max_length": null}]}');
        INSERT INTO users (name, email, phone, version) VALUES ('Ada', 'ada@example.com', '555', 3);
        INSERT INTO posts (title, userId, meta) VALUES ('a title', 1, '{"tags": ["rest"]}');
"""


def test_a_db_file_of_release_11a25e4_opens_with_its_users_and_versions(tmp_path):
    db = str(tmp_path / "old.db")
    with contextlib.closing(sqlite3.connect(db)) as connection:
        connection.executescript(RELEASE_11A25E4_SCHEMA)
        with connection:
            connection.execute("INSERT INTO users (name, email, version) VALUES (?, ?, 4)",
                               ("Ada", "ada@example.com"))
    running = start_server(db=db)
    try:
        reply = call(running, "GET", "/users/1")
        assert (reply.json(), reply.headers["ETag"]) == (LISTED_ADA, '"4-json"')
        assert post(running, "/users", {"name": "Grace", "email": "grace@example.com"}) == GRACE
    finally:
        stop_server(running)


def test_a_db_file_of_release_ec8ffad_opens_with_its_resources_and_versions(tmp_path):
    db = str(tmp_path / "today.db")
    with contextlib.closing(sqlite3.connect(db)) as connection:
        connection.executescript(RELEASE_EC8FFAD_SCHEMA)
    running = start_server(db=db)
    try:
        reply = call(running, "GET", "/users/1")
        assert (reply.json(), reply.headers["ETag"]) == (dict(LISTED_ADA, phone="555"),
                                                         '"3-json"')
        assert call(running, "GET", "/posts").json() == [
            {"id": 1, "title": "a title", "userId": 1, "meta": {"tags": ["rest"]}}]
        assert post(running, "/posts", {"title": "t", "userId": 1, "meta": 2})["id"] == 2
    finally:
        stop_server(running)


NO_ID_LEFT = ("The users have no id left: ids end at 9223372036854775807, and the last has "
              "been given. Nothing was stored.")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_post_past_the_last_id_is_507_and_stores_nothing(kind, tmp_path):
    db = {"db": str(tmp_path / "full.db")} if kind == "sqlite" else {}
    last = {"id": 2 ** 63 - 1, "name": "Last", "email": "last@example.com"}
    running = start_server(load=write_db_json(tmp_path, {"users": [last]}), **db)
    try:
        reply = call(running, "POST", "/users", {"name": "Next", "email": "next@example.com"})
        assert assert_problem(reply, 507)["detail"] == NO_ID_LEFT
        reply = call(running, "GET", "/users")
        assert (reply.json(), reply.headers["X-Total-Count"]) == ([last], "1")
        assert call(running, "GET", "/users/%d" % last["id"]).json() == last
    finally:
        stop_server(running)


def test_a_load_file_with_no_id_left_for_an_item_without_one_stops_the_start(tmp_path):
    path = write_db_json(tmp_path, {"users": [
        {"id": 2 ** 63 - 1, "name": "Last", "email": "last@example.com"},
        {"name": "Next", "email": "next@example.com"}]})
    with pytest.raises(ValueError) as refused:
        rest_users.make_server("127.0.0.1", 0, load=path)
    assert str(refused.value) == (
        "%s: the users have no id left for the items without one: ids end at "
        "9223372036854775807" % path)


@pytest.mark.parametrize("query", [
    "from_ne=ada", "version_gte=9001", "%CF%80%CE%BF%CF%83%CF%8C:lt=0", "_id:startsWith=77",
    "class_like=RAR", "filter=%s" % quote('{"a b": "e f"}'), "a%20b=e+f"])
def test_every_dialect_filters_by_any_field_name(lettered, query):
    wanted = post(lettered, "/letters", {"from": "zed", "_id": "77ab", "class": "rare",
                                         "version": 9001, "ποσό": -1, "a b": "e f"})
    reply = call(lettered, "GET", "/letters?%s&_sort=-id&_limit=1" % query)
    assert (reply.status, reply.json()) == (200, [dict(wanted)])


@pytest.mark.parametrize("query", ["sort=-version,from", "_sort=version,from&_order=desc,asc",
                                   "sort=%s" % quote('["version","DESC"]')])
def test_a_list_sorts_by_any_field_name(lettered, query):
    for version in (-3, -1, -2):  # a class of their own: other tests' letters left out
        post(lettered, "/letters", dict(ODD, version=version, **{"class": query}))
    reply = call(lettered, "GET", "/letters?class=%s&%s" % (quote(query), query))
    assert [letter["version"] for letter in reply.json()] == [-1, -2, -3]


def test_a_declared_resource_with_odd_names_is_kept_in_a_db_reopened(tmp_path):
    db = str(tmp_path / "letters.db")
    running = start_server(db=db, resources=[USERS, LETTERS])
    try:
        created = post(running, "/letters", dict(ODD, **NOT_XML))
        reply = call(running, "PATCH", "/letters/1", {"version": 8, "a b": None})
        assert reply.json() == dict(created, version=8, **{"a b": None})
    finally:
        stop_server(running)
    running = start_server(db=db, resources=[USERS, LETTERS])
    try:
        reply = call(running, "GET", "/letters/1")
        assert (reply.json(), reply.headers["ETag"]) == (
            dict(created, version=8, **{"a b": None}), '"2-json"')
    finally:
        stop_server(running)


def test_fields_differing_only_in_case_stop_a_db_start_with_one_line_saying_so(tmp_path, capsys):
    load = write_db_json(tmp_path, {"posts": [{"id": 1, "tag": "a", "Tag": "b"}]})
    db = str(tmp_path / "case.db")
    status, out, err = failed_start(capsys, "--port", "0", "--load", load, "--db", db)
    assert (status, out) == (1, "")
    assert err == ("rest_users: cannot start on %s: the posts' fields tag and Tag differ only "
                   "in case, and SQLite's column names ignore case: rename one, or serve them "
                   "without --db\n" % db)


def test_fields_named_as_the_tables_own_columns_keep_their_values_in_a_db(tmp_path):
    columns = Resource("columns", [Field(name) for name in (
        "version", "ID", "field:version", "Field:ID")])
    item = {"version": "a", "ID": "c", "field:version": "d", "Field:ID": "e"}
    db = str(tmp_path / "columns.db")
    for _ in range(2):  # written, then read back from the file reopened
        running = start_server(db=db, resources=[USERS, columns])
        try:
            if not call(running, "GET", "/columns").json():
                post(running, "/columns", item)
            reply = call(running, "GET", "/columns/1")
            assert (reply.json(), reply.headers["ETag"]) == (dict(item, id=1), '"1-json"')
            assert call(running, "GET", "/columns?ID=c&sort=-version").json() == [
                dict(item, id=1)]
        finally:
            stop_server(running)


# -- s-guards: /__admin/ from other origins, the journal's bounds, names and nesting ------

CROSS_SITE = [{"Origin": "http://evil.example"}, {"Origin": "null"},
              {"Origin": "http://127.0.0.1:1"}, {"Sec-Fetch-Site": "cross-site"},
              {"Sec-Fetch-Site": "same-site"}]
ADMIN_REFUSED = ("A request to /__admin/ from a web page on another origin is refused: the "
                 "test controls are for test runners, never for pages a browser visits.")


@pytest.fixture(scope="module", params=SERVER_KINDS)
def guarded(request, tmp_path_factory):
    """A server of its own on each store, whose list and journal stay short: the module's
    shared one holds the last thousand requests, read whole twice a test."""
    running = start_server(**options_for(request.param, tmp_path_factory))
    yield running
    stop_server(running)


@pytest.mark.parametrize("headers", CROSS_SITE)
@pytest.mark.parametrize("method, path", [("POST", "/__admin/reset"),
                                          ("GET", "/__admin/requests"),
                                          ("DELETE", "/__admin/requests"),
                                          ("OPTIONS", "/__admin/reset")])
def test_a_test_control_asked_from_another_origin_is_403_and_does_nothing(
        guarded, headers, method, path):
    create(guarded)  # something a reset would take away
    before, kept = everyone(guarded), journal(guarded, headers={})
    reply = call(guarded, method, path, headers=headers)
    assert assert_problem(reply, 403)["detail"] == ADMIN_REFUSED
    assert not [name for name in reply.headers if name.startswith("Access-Control")]
    assert journal(guarded, headers={}) == kept
    assert everyone(guarded) == before


@pytest.mark.parametrize("headers", [{}, {"Sec-Fetch-Site": "same-origin"},
                                     {"Sec-Fetch-Site": "none"}, "http", "https"])
def test_a_test_control_asked_from_its_own_origin_or_no_browser_is_answered(variant, headers):
    running = start_server(variant, fake_users=2)
    try:
        if headers in ("http", "https"):  # the page's own origin, or a TLS proxy's before it
            headers = {"Origin": "%s://127.0.0.1:%d" % (headers, running.server_address[1])}
        call(running, "DELETE", "/users/1")
        assert call(running, "POST", "/__admin/reset", headers=headers).status == 204
        assert [user["id"] for user in everyone(running)] == [1, 2]
    finally:
        stop_server(running)


class ForeignPage(http.server.BaseHTTPRequestHandler):
    """A page on another origin (another port) whose script resets the API it is given."""

    def do_GET(self):
        target = urllib.parse.unquote(self.path.partition("?")[2])
        page = ("<!doctype html><title>foreign</title><script>fetch(%s, {method: 'POST', "
                "mode: 'no-cors'}).then(() => { document.title = 'sent'; }, "
                "() => { document.title = 'failed'; });</script>" % json.dumps(target))
        body = page.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class ForeignServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Serves ForeignPage, a thread a connection: Chromium opens a spare one it may never use."""

    daemon_threads = True


def test_a_page_on_another_origin_cannot_reset_the_api_in_a_browser(browser):
    running = start_server(fake_users=3)
    foreign = ForeignServer(("127.0.0.1", 0), ForeignPage)
    threading.Thread(target=foreign.serve_forever, args=(0.01,), daemon=True).start()
    try:
        call(running, "DELETE", "/users/3")  # the reset would bring it back
        target = "http://127.0.0.1:%d/__admin/reset" % running.server_address[1]
        browser.open("http://127.0.0.1:%d/?%s" % (foreign.server_address[1], quote(target)))
        browser.wait_for("document.title === 'sent'")
        assert [user["id"] for user in everyone(running)] == [1, 2]
    finally:
        foreign.shutdown()
        foreign.server_close()
        stop_server(running)


def test_the_api_description_says_a_test_control_may_be_403(server):
    paths = openapi(server)["paths"]
    for path, method in (("/__admin/reset", "post"), ("/__admin/requests", "get"),
                         ("/__admin/requests", "delete")):
        assert paths[path][method]["responses"]["403"]["description"] == (
            "Sent by a web page on another origin (Origin or Sec-Fetch-Site says so)")


def traced_growth(action):
    """The bytes that stay allocated after an action, as tracemalloc counts them (CPython)."""
    try:
        import tracemalloc
    except ImportError:
        pytest.skip("tracemalloc is CPython's")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        action()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_journal_keeps_at_most_16_mib_the_oldest_going_first():
    journal, body = rest_users.Journal(), b"b" * 65536
    kept = traced_growth(lambda: [journal.add("POST", "/users/%d" % n, [("Host", "h")],
                                              b"%06d" % n + body[6:], HTTPStatus.CREATED)
                                  for n in range(1000)])
    targets = [entry["target"] for entry in journal.entries()]
    assert 16 * 2 ** 20 - 65536 * 2 < kept < 16 * 2 ** 20 + 2 ** 20  # not 64 MiB
    assert targets == ["/users/%d" % n for n in range(1000 - len(targets), 1000)]
    assert 240 < len(targets) < 256


def test_the_journal_cuts_each_requests_header_fields_at_8_kib_in_memory(journaled):
    padding = [("X-Padding-%d" % n, "p" * 60000) for n in range(15)]  # 900 KB a request

    def send():
        connection = connect(journaled)
        for _ in range(5):
            connection.request("GET", "/users", headers=dict(padding))  # a 401, kept too
            connection.getresponse().read()
        connection.close()
    assert traced_growth(send) < 2 ** 20  # not 4.5 MB
    fields = journal(journaled)[-1]["headers"]
    assert sum(len(name) + len(value) for name, value in fields.items()) == 8192 + len("...")
    assert fields["X-Padding-0"].endswith("p...") and "X-Padding-1" not in fields


def test_a_journal_entry_cut_ends_its_last_value_with_three_dots(journaled):
    host = "127.0.0.1:%d" % journaled.server_address[1]
    headers = {"Authorization": "Bearer " + KEY, "X-Small": "s", "X-Big": "b" * 9000,
               "X-Later": "left out"}
    call(journaled, "GET", "/users", headers=headers)
    used = sum(len(name) + len(value) for name, value in [
        ("Host", host), ("Accept-Encoding", "identity"), ("Authorization", "Bearer " + KEY),
        ("X-Small", "s"), ("X-Big", "")])
    assert journal(journaled)[-1]["headers"] == {
        "Host": host, "Accept-Encoding": "identity", "Authorization": "Bearer ***",
        "X-Small": "s", "X-Big": "b" * (8192 - used) + "..."}


def test_the_journal_masks_a_key_sent_in_the_query_or_as_x_api_key(journaled):
    call(journaled, "GET", "/users?api_key=s3cret&name=Ada&token=t0ken&access_token=a&API-KEY=b",
         headers=dict(BEARER_HEADERS, **{"X-Api-Key": "s3cret"}))
    (entry,) = [entry for entry in journal(journaled) if "name=Ada" in entry["target"]]
    assert entry["target"] == ("/users?api_key=***&name=Ada&token=***&access_token=***"
                               "&API-KEY=***")
    assert entry["headers"]["X-Api-Key"] == "***"
    assert "s3cret" not in json.dumps(journal(journaled))


DEEP_DOCS = Resource("docs", [Field("title", "string", required=True), Field("body", "json")])
TOO_DEEP = "is nested deeper than 100 levels of arrays and objects"


def nested(levels):
    """A JSON value this many levels of arrays and objects deep: {"a": [{"a": [...]}]}."""
    value = 1
    for level in range(levels):
        value = [value] if level % 2 else {"a": value}
    return value


@pytest.fixture(scope="module", params=KINDS)
def docs_server(request, tmp_path_factory):
    """Users and docs, whose body is any JSON value, on each store."""
    options = options_for(request.param, tmp_path_factory)
    running = start_server(options.pop("variant", "default"), resources=[USERS, DEEP_DOCS],
                           **options)
    yield running
    stop_server(running)


def test_a_json_value_100_levels_deep_is_written_and_read_in_both_formats(docs_server):
    created = post(docs_server, "/docs", {"title": "deep", "body": nested(100)})
    assert created["body"] == nested(100)
    path = "/docs/%d" % created["id"]
    assert call(docs_server, "GET", path).json()["body"] == nested(100)
    reply = call(docs_server, "GET", path, headers=XML_HEADERS)
    assert reply.status == 200 and reply.body.count(b"<a ") == 50
    assert call(docs_server, "GET", "/docs", headers=XML_HEADERS).status == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_a_json_value_101_levels_deep_is_422_for_its_field_and_breaks_no_list(
        docs_server, method):
    kept = post(docs_server, "/docs", {"title": "kept", "body": [1]})
    path = "/docs" if method == "POST" else "/docs/%d" % kept["id"]
    reply = call(docs_server, method, path, {"title": "deep", "body": nested(101)})
    assert assert_problem(reply, 422)["errors"] == [{"field": "body", "message": TOO_DEEP}]
    assert call(docs_server, "GET", "/docs/%d" % kept["id"]).json()["body"] == [1]
    assert call(docs_server, "GET", "/docs?limit=1000", headers=XML_HEADERS).status == 200


def test_a_json_value_101_levels_deep_in_xml_is_422_for_its_field(docs_server):
    element = "<body type=\"object\">" + "<a type=\"object\">" * 100 + "<a>x</a>" + (
        "</a>" * 100) + "</body>"
    reply = call(docs_server, "POST", "/docs", "<doc><title>t</title>%s</doc>" % element,
                 XML_BODY)
    assert assert_problem(reply, 422)["errors"] == [{"field": "body", "message": TOO_DEEP}]


@pytest.mark.parametrize("levels", [101, 900, 5000])
def test_a_db_json_nested_too_deep_stops_the_start_with_one_line(tmp_path, capsys, levels):
    path = write_db_json(tmp_path, b'{"posts": [{"id": 1, "meta": %s}]}' % json.dumps(
        nested(min(levels, 500))).encode() if levels < 900 else (
        b'{"posts": [{"id": 1, "meta": ' + b"[" * levels + b"]" * levels + b"}]}"))
    status, out, err = failed_start(capsys, "--port", "0", "--quiet", "--load", path)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err
    if levels < 900:
        assert err == "rest_users: cannot load %s: posts: post 1 of 1: meta %s\n" % (
            path, TOO_DEEP)
    else:  # where json's own recursion stops, the line cannot name the entry
        assert err.startswith("rest_users: cannot load %s: " % path)
        assert err.endswith(TOO_DEEP + "\n")


GREEK = "/%CF%80%CE%BF%CF%83%CF%84s"  # /ποστs, its name percent-encoded as UTF-8


@pytest.fixture(scope="module")
def greek(tmp_path_factory):
    """A db.json whose resource has a non-ASCII name."""
    path = write_db_json(tmp_path_factory.mktemp("greek"), {"ποστs": [{"id": 1, "title": "a"}]})
    running = start_server(load=path)
    yield running
    stop_server(running)


def test_a_non_ascii_resource_is_reached_at_its_name_percent_encoded(greek):
    assert call(greek, "GET", GREEK).json() == [{"id": 1, "title": "a"}]
    assert call(greek, "GET", GREEK + "/1").json() == {"id": 1, "title": "a"}
    reply = call(greek, "POST", GREEK, {"title": "b"})
    assert reply.status == 201 and reply.headers["Location"] == GREEK + "/2"
    assert call(greek, "DELETE", GREEK + "/2").status == 200
    reply = call(greek, "GET", GREEK + "?limit=1")  # a file's links are absolute, as json-server's
    page = "http://127.0.0.1:%d%s?limit=1&offset=0" % (greek.server_address[1], GREEK)
    assert reply.headers["Link"] == '<%s>; rel="first", <%s>; rel="last"' % (page, page)
    assert call(greek, "GET", "/").json()["ποστs"] == GREEK


def test_a_non_ascii_resource_is_described_and_explored_at_its_encoded_path(greek):
    assert {GREEK, GREEK + "/{id}"} <= set(openapi(greek)["paths"])
    page = call(greek, "GET", "/?resource=" + GREEK[1:], headers={"Accept": BROWSER_ACCEPT}
                ).text()
    assert 'data-path="%s"' % GREEK in page


BAD_NAMES = [  # (the db.json's resource name, what the one line says after the file's path)
    ("", '"": a resource name cannot be empty'),
    ("a/bs", '"a/bs": a resource name cannot hold "/"'),
    ("a?bs", '"a?bs": a resource name cannot hold "?"'),
    ("a#bs", '"a#bs": a resource name cannot hold "#"'),
    ("a\x01bs", '"a\\u0001bs": a resource name cannot hold a control character'),
    ("a\nbs", '"a\\nbs": a resource name cannot hold a control character'),
    ("__admins", '"__admins": a resource name cannot begin with __, as the server\'s own '
                 'paths do (/__admin/)'),
    ("x" * 100 + "s", '"%s": a resource name is at most 100 characters, not 101' % (
        "x" * 100 + "s")),
    ("openapi.json", '"openapi.json": /openapi.json is a path of the server\'s own'),
    ("db", '"db": /db is a path of the server\'s own'),
]


@pytest.mark.parametrize("name, said", BAD_NAMES)
def test_a_resource_name_the_server_cannot_serve_stops_the_start_with_one_line(
        tmp_path, capsys, name, said):
    path = write_db_json(tmp_path, {"posts": [], name: []})
    with pytest.raises(ValueError):  # before main(), which would serve the file
        rest_users.make_server(port=0, load=path)
    status, out, err = failed_start(capsys, "--port", "0", "--quiet", "--load", path)
    assert (status, out, err) == (2, "", "rest_users: cannot load %s: %s\n" % (path, said))


def test_two_resource_names_equal_but_for_case_stop_the_start_with_one_line(tmp_path, capsys):
    path = write_db_json(tmp_path, {"posts": [], "Posts": []})
    with pytest.raises(ValueError):  # before main(), which would serve the file
        rest_users.make_server(port=0, load=path)
    status, out, err = failed_start(capsys, "--port", "0", "--quiet", "--load", path)
    assert (status, out) == (2, "")
    assert err == ('rest_users: cannot load %s: "Posts": a resource name cannot equal '
                   'another\'s but for case, as "posts"\n' % path)


ORPHANS = Resource("orphans", [Field("title"), Field("userId", "integer", refers_to="usrs")])
TWICE = Resource("twices", [Field("title"), Field("done", "boolean"), Field("title", "integer")])


@pytest.mark.parametrize("resources, said", [
    ([USERS, ORPHANS], "orphans: the field userId refers to usrs, which is not served (users "
                       "and orphans are)"),
    ([ORPHANS], "orphans: the field userId refers to usrs, which is not served (orphans is)"),
    ([USERS, TWICE], "twices: the field title is declared twice"),
    ([USERS, Resource("db", [], item="record")], '"db": /db is a path of the server\'s own'),
    ([USERS, Resource("Users", [], item="account")],
     '"Users": a resource name cannot equal another\'s but for case, as "users"'),
])
def test_a_declaration_the_server_cannot_serve_is_refused_naming_it(resources, said, capsys,
                                                                     monkeypatch):
    with pytest.raises(ValueError) as refused:
        rest_users.make_server(port=0, resources=resources)
    assert str(refused.value) == said
    monkeypatch.setattr(rest_users, "make_server", functools.partial(
        rest_users.make_server, resources=resources))  # as a learner's list would be served
    status, out, err = failed_start(capsys, "--port", "0", "--quiet")
    assert (status, out, err) == (2, "", "rest_users: cannot load %s\n" % said)


MARKUP_NAMES = ['<meta http-equiv=refresh content="0;url=about:blank">',
                "<img src=x onerror=document.title='run'>", "{script}", "a&amp;b"]


@pytest.fixture(scope="module")
def marked_up(tmp_path_factory):
    """A db.json whose notes have fields named with markup, and a template's placeholder."""
    note = dict([("id", 1)] + [(name, "value %d" % n) for n, name in enumerate(MARKUP_NAMES)])
    path = write_db_json(tmp_path_factory.mktemp("markup"), {"notes": [note]})
    running = start_server(load=path)
    yield running
    stop_server(running)


def test_the_explorer_writes_every_field_name_as_text(marked_up):
    page = call(marked_up, "GET", "/?resource=notes", headers={"Accept": BROWSER_ACCEPT}).text()
    assert "<meta http-equiv=refresh" not in page and "<img" not in page
    assert page.count("<script") == 1 and "a&amp;amp;b" in page
    for name in MARKUP_NAMES:
        escaped = html.escape(name).replace("{", "&#123;")
        assert '<th scope="col">%s</th>' % escaped in page
        assert '<option value="%s">%s</option>' % (escaped, escaped) in page


def test_the_explorer_stays_and_shows_markup_names_as_text_in_a_browser(browser, marked_up):
    url = "http://127.0.0.1:%d/?resource=notes" % marked_up.server_address[1]
    browser.open(url)
    browser.wait_for("document.querySelector('#rows td') !== null")
    assert browser.run("[...document.querySelectorAll('thead th')].map(th => th.textContent)"
                       ) == ["id"] + MARKUP_NAMES + ["action"]
    assert browser.run("[...document.querySelectorAll('#rows td')].map(td => td.textContent)"
                       )[:5] == ["1", "value 0", "value 1", "value 2", "value 3"]
    assert browser.run("document.querySelectorAll('meta[http-equiv], img').length") == 0
    assert browser.run("location.href") == url and browser.run("document.title") != "run"


WORDY_NOTES = [  # fields named as list parameters, with values that would filter if read so
    {"id": 1, "title": "one", "limit": 5, "offset": 1, "sort": "b", "q": "x", "_sort": "z",
     "_page": 2, "_embed": "e", "filter": "f"},
    {"id": 2, "title": "two", "limit": 1, "offset": 0, "sort": "-title", "q": "two",
     "_sort": "-title", "_page": 1, "_embed": "d", "filter": "g"},
]


@pytest.fixture(scope="module", params=["memory", "sqlite"])
def wordy(request, tmp_path_factory):
    """A db.json whose notes have fields named as list parameters."""
    path = write_db_json(tmp_path_factory.mktemp("wordy"), {"notes": WORDY_NOTES})
    options = options_for(request.param, tmp_path_factory)
    running = start_server(load=path, **options)
    running.load = path
    yield running
    stop_server(running)


@pytest.mark.parametrize("query, expected", [
    ("limit=1", [1]), ("offset=1", [2]), ("sort=-title", [2, 1]), ("q=two", [2]),
    ("_sort=-title", [2, 1]), ("_page=1&_limit=1", [1]), ("_page=2&_limit=1", [2]),
    ("_embed=nothing", None),
    ('filter={"limit":1}', [2]), ('filter={"q":"x"}', [1]), ('filter={"sort":"b"}', [1]),
    ("limit:eq=5", [1]), ("_sort:eq=z", [1]), ("limit=1&sort=-title", [2]),
])
def test_a_field_named_as_a_list_parameter_leaves_the_word_its_meaning(wordy, query, expected):
    reply = call(wordy, "GET", "/notes?" + query)
    if expected is None:  # _embed still names what to embed, and notes have no relations
        assert assert_problem(reply, 400)["detail"].startswith(
            "Unknown query parameter _embed; the list takes limit, offset, sort, title, ")
    else:
        assert item_ids(reply) == expected


def test_the_start_line_names_the_fields_named_as_list_parameters_once(wordy):
    options = rest_users.parse_arguments(["--port", "0", "--load", wordy.load])
    told = rest_users.startup_note(options, wordy, {})
    assert told.endswith(
        " Fields named as list parameters, which keep their meaning: limit, offset, sort, q, "
        "_sort, _page, _embed and filter of notes. Filter by such a field as react-admin's "
        'simple-rest does, with filter={"q": "..."}, or as FIELD:eq=VALUE (json-server 1.0\'s).')
    assert told.count("limit") == 1


def test_the_start_line_names_no_list_parameter_when_no_field_is_named_so(server):
    options = rest_users.parse_arguments(["--port", "0"])
    assert "list parameters" not in rest_users.startup_note(options, server, {})


def test_the_api_description_lists_each_list_parameter_once(wordy):
    parameters = openapi(wordy)["paths"]["/notes"]["get"]["parameters"]
    names = [parameter["name"] for parameter in parameters if parameter.get("in") == "query"]
    assert len(names) == len(set(names))
    assert [name for name in names if name.startswith("_") or name == "filter"] == []


def test_a_400_lists_each_list_parameter_once_with_its_meaning(wordy):
    detail = assert_problem(call(wordy, "GET", "/notes?nothing=1"), 400)["detail"]
    assert detail.startswith("Unknown query parameter nothing; the list takes limit, offset, "
                             "sort, title, q, id, FIELD_ne, ")
    assert detail.count("_sort") == 2  # the dialect's word, and a field to filter


def test_a_file_nested_too_deep_exits_2_with_one_line_in_a_process_of_its_own(tmp_path):
    path = write_db_json(tmp_path, b'{"posts": [{"id": 1, "meta": ' + b"[" * 5000 + b"]" * 5000
                         + b"}]}")
    result = run_to_exit("--port", "0", "--load", path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "rest_users: cannot load %s: %s\n" % (path, TOO_DEEP)


def test_a_resource_path_is_reached_with_its_escapes_in_either_case(greek):
    lower = GREEK.lower()  # as curl writes /ποστs: /%cf%80...
    assert lower != GREEK
    assert call(greek, "GET", lower + "/1").json() == {"id": 1, "title": "a"}
    assert item_ids(call(greek, "GET", lower + "?limit=1")) == [1]


def test_the_key_guards_a_resource_path_with_its_escapes_in_either_case(tmp_path):
    path = write_db_json(tmp_path, {"ποστs": [{"id": 1, "title": "a"}]})
    running = start_server(load=path, api_key=KEY)
    try:
        for target in (GREEK, GREEK.lower(), GREEK.lower() + "/1"):
            assert call(running, "GET", target).status == 401
        assert call(running, "GET", GREEK.lower() + "/1", headers=BEARER_HEADERS).status == 200
    finally:
        stop_server(running)


# -- s-file: the db.json named on the command line is the store --------------------------

TYPICODE = {  # a db.json as a front-end developer keeps it, with non-ASCII text
    "posts": [{"id": 1, "title": "json-server", "author": "typicode"},
              {"id": 2, "title": "Ünïcödé stays as itself", "author": "zoë"}],
    "comments": [{"id": 1, "body": "some comment", "postId": 1}],
    "profile": {"name": "typicode"},
}


def as_json_server_writes(document):
    """The bytes json-server writes for a document: JSON.stringify(db, null, 2)."""
    return json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8")


def file_server(folder, content=TYPICODE, variant="default", **options):
    """A server whose store is a db.json in the folder, and the file's path."""
    path = write_db_json(folder, content)
    return start_server(variant, file=path, **options), path


def read_back(path):
    with open(path, "rb") as file:
        return file.read()


def test_the_file_may_be_named_before_or_after_the_options():
    assert rest_users.parse_arguments(["db.json", "--port", "0"]).file == "db.json"
    assert rest_users.parse_arguments(["--port", "0", "db.json"]).file == "db.json"


def test_a_file_serves_exactly_its_keys_and_its_users_have_no_built_in_checks(tmp_path, variant):
    running, path = file_server(tmp_path, {"users": [{"id": 1, "name": "Ada"}]}, variant)
    try:
        assert call(running, "GET", "/").json() == {"users": "/users"}
        assert_problem(call(running, "GET", "/posts"), 404)
        reply = call(running, "POST", "/users", {"name": "  "})  # no email, a blank name
        assert (reply.status, reply.json()) == (201, {"id": 2, "name": "  "})
    finally:
        stop_server(running)


@pytest.mark.parametrize("content", [None, b"[]", b'{"posts": [1]', b"\xff"])
def test_a_missing_or_broken_file_stops_the_start_saying_how_to_make_one(
        tmp_path, capsys, content):
    path = str(tmp_path / "db.json")
    if content is not None:
        write_db_json(tmp_path, content)
    status, out, err = failed_start(capsys, path)
    assert (status, out, err.count("\n")) == (2, "", 1)
    assert err.startswith("rest_users: cannot load %s: " % path)
    assert err.endswith("make one with: echo '{\"posts\": []}' > %s\n" % path)


def test_a_file_and_db_together_are_exit_2(tmp_path, capsys):
    path = write_db_json(tmp_path, TYPICODE)
    status, out, err = failed_start(capsys, path, "--db", str(tmp_path / "users.db"))
    assert (status, out) == (2, "")
    assert err == ("rest_users: cannot load %s with --db: the file is the store; serve one "
                   "or the other\n" % path)


def test_every_write_is_in_the_file_as_json_server_writes_it(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    expected = json.loads(json.dumps(TYPICODE))
    try:
        assert read_back(path) == json.dumps(TYPICODE).encode()  # not written until a write
        post(running, "/posts", {"title": "Grüße", "author": "ö"})
        expected["posts"].append({"id": 3, "title": "Grüße", "author": "ö"})
        assert read_back(path) == as_json_server_writes(expected)
        call(running, "PUT", "/posts/1", {"title": "replaced", "author": "me"})
        expected["posts"][0] = {"id": 1, "title": "replaced", "author": "me"}
        assert read_back(path) == as_json_server_writes(expected)
        call(running, "PATCH", "/posts/2", {"title": "patched"})
        expected["posts"][1]["title"] = "patched"
        assert read_back(path) == as_json_server_writes(expected)
        call(running, "PATCH", "/profile", {"name": "Zoë"})
        expected["profile"]["name"] = "Zoë"
        assert read_back(path) == as_json_server_writes(expected)
        assert call(running, "DELETE", "/posts/3").status == 200
        del expected["posts"][2]
        assert read_back(path) == as_json_server_writes(expected)
        for number in (4, 5):  # one POST after another: each adds to the file's end
            post(running, "/posts", {"title": "#%d" % number, "author": "a"})
            expected["posts"].append({"id": number, "title": "#%d" % number, "author": "a"})
            assert read_back(path) == as_json_server_writes(expected)
        assert call(running, "GET", "/db").json() == expected
    finally:
        stop_server(running)
    assert sorted(os.listdir(str(tmp_path))) == ["db.json"]  # no temporary file left behind


def test_the_file_keeps_its_mode(tmp_path):
    path = write_db_json(tmp_path, TYPICODE)
    os.chmod(path, 0o640)
    running = start_server(file=path)
    try:
        post(running, "/posts", {"title": "t", "author": "a"})
    finally:
        stop_server(running)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o640)


def test_get_db_is_the_whole_api_as_the_file_holds_it(tmp_path):
    running, path = file_server(tmp_path)
    try:
        reply = call(running, "GET", "/db")
        assert (reply.status, reply.headers["Content-Type"]) == (200, JSON_TYPE)
        assert reply.json() == TYPICODE
        problem = assert_problem(call(running, "GET", "/db", headers={"Accept": XML_TYPE}), 406,
                                 "xml")
        assert problem["detail"] == ("GET /db answers in JSON only, as json-server's db.json "
                                     "is; ask each resource for XML.")
    finally:
        stop_server(running)


def unsaveable_by_a_read_only_file(path):
    os.chmod(path, 0o444)


def unsaveable_by_a_folder_gone(path):
    folder = os.path.dirname(path)
    os.rename(folder, folder + "-moved")
    with open(folder, "w") as file:  # the folder's path is now a file: nothing can go in it
        file.write("not a folder")
    return folder + "-moved/db.json"


def unsaveable_by_an_immutable_folder(path):
    """chattr +i: a folder that even root cannot add a file to (undone by the test)."""
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", os.path.dirname(path)], stderr=subprocess.DEVNULL).returncode:
        pytest.skip("chattr +i is not available here")


@pytest.mark.parametrize("make_unsaveable", [unsaveable_by_a_read_only_file,
                                             unsaveable_by_a_folder_gone,
                                             unsaveable_by_an_immutable_folder])
def test_a_write_that_cannot_be_saved_is_507_and_nothing_changes(tmp_path, make_unsaveable):
    os.mkdir(str(tmp_path / "folder"))
    running, path = file_server(tmp_path / "folder")
    try:
        before = call(running, "GET", "/posts").json()
        path = make_unsaveable(path) or path
        for method, target, body in [("POST", "/posts", {"title": "t", "author": "a"}),
                                     ("PATCH", "/posts/1", {"title": "t"}),
                                     ("DELETE", "/posts/2", None)]:
            problem = assert_problem(call(running, method, target, body), 507)
            assert problem["detail"].startswith("The change could not be saved in db.json (")
            assert problem["detail"].endswith("): nothing was changed.")
        assert call(running, "GET", "/posts").json() == before
        assert read_back(path) == json.dumps(TYPICODE).encode()
    finally:
        stop_server(running)
        if make_unsaveable is unsaveable_by_an_immutable_folder:
            subprocess.run(["chattr", "-i", str(tmp_path / "folder")])


def test_reset_brings_back_the_file_as_at_start_and_writes_it(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    try:
        post(running, "/posts", {"title": "t", "author": "a"})
        call(running, "DELETE", "/comments/1")
        assert call(running, "POST", "/__admin/reset").status == 204
        assert call(running, "GET", "/db").json() == TYPICODE
        assert read_back(path) == as_json_server_writes(TYPICODE)
        assert post(running, "/posts", {"title": "t", "author": "a"})["id"] == 3
    finally:
        stop_server(running)


def test_concurrent_writes_each_land_in_the_file_while_readers_read(tmp_path):
    running, path = file_server(tmp_path)
    written, errors = [], []

    def write(number):
        for round_ in range(10):
            reply = call(running, "POST", "/posts", {"title": "%d.%d" % (number, round_),
                                                     "author": "a"})
            written.append(reply.json()) if reply.status == 201 else errors.append(reply.body)

    def read():
        for _ in range(20):
            reply = call(running, "GET", "/db")
            errors.extend([] if reply.status == 200 else [reply.body])

    threads = [threading.Thread(target=write, args=(number,)) for number in range(4)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        stop_server(running)
    assert errors == []
    saved = json.loads(read_back(path).decode("utf-8"))["posts"]
    assert sorted(saved[2:], key=lambda post: post["id"]) == sorted(
        written, key=lambda post: post["id"])
    assert len(written) == 40


def kill_during_writes(path, writers=4):
    """Start rest_users.py on the file, write from threads, kill -9 it while they write;
    return the posts it answered."""
    process, banner = run_service(path, "--port", "0", "--quiet")
    served, answered, enough = Port(port_of(banner)), [], threading.Event()
    assert call(served, "GET", "/").json() == {  # python rest_users.py db.json serves it
        "posts": "/posts", "comments": "/comments", "profile": "/profile"}

    def write():
        with contextlib.suppress(OSError, http.client.HTTPException):
            while True:
                reply = call(served, "POST", "/posts", {"title": "t", "author": "a"})
                answered.append(reply.json())
                if len(answered) >= 10:
                    enough.set()

    threads = [threading.Thread(target=write, daemon=True) for _ in range(writers)]
    for thread in threads:
        thread.start()
    enough.wait(10)
    process.kill()
    process.communicate(timeout=10)
    for thread in threads:
        thread.join(10)
    return list(answered)


def test_a_kill_9_during_concurrent_writes_loses_no_answered_write(tmp_path):
    path = write_db_json(tmp_path, TYPICODE)
    for round_ in range(2):
        answered = kill_during_writes(path)
        saved = json.loads(read_back(path).decode("utf-8"))["posts"]  # parses: never torn
        assert [post for post in answered if post not in saved] == []
        assert len(answered) >= 10


def test_read_only_answers_writes_with_405(tmp_path):
    running, path = file_server(tmp_path, read_only=True)
    try:
        reply = call(running, "POST", "/posts", {"title": "t", "author": "a"})
        problem = assert_problem(reply, 405)
        assert reply.headers["Allow"] == "GET, HEAD, OPTIONS"
        assert problem["detail"] == "/posts does not take POST; it takes GET, HEAD, OPTIONS."
        assert_problem(call(running, "PATCH", "/profile", {"name": "x"}), 405)
        assert call(running, "GET", "/posts/1").json() == TYPICODE["posts"][0]
        assert call(running, "POST", "/__admin/reset").status == 204  # which writes nothing
    finally:
        stop_server(running)
    assert read_back(path) == json.dumps(TYPICODE).encode()


def test_read_only_and_watch_are_on_the_command_line():
    options = rest_users.parse_arguments(["db.json", "--ro", "-w"])
    assert (options.read_only, options.watch) == (True, True)
    assert rest_users.parse_arguments(["db.json", "--read-only"]).read_only


def replace_by_hand(path, content):
    """Write a file as an editor does: in place, whole."""
    with open(path, "wb") as file:
        file.write(content if isinstance(content, bytes) else json.dumps(content).encode())


def served_within(running, target, expected, seconds=1.0):
    """Poll GET target until it answers expected, or the time is up; whether it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if call(running, "GET", target).json() == expected:
            return True
        time.sleep(0.02)  # polling under a deadline, not synchronisation by sleeping
    return False


def test_an_edit_by_hand_is_served_within_a_second(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    try:
        edited = dict(TYPICODE, posts=TYPICODE["posts"] + [{"id": 3, "title": "by hand",
                                                            "author": "me"}])
        replace_by_hand(path, edited)
        assert served_within(running, "/posts/3", {"id": 3, "title": "by hand", "author": "me"})
        assert call(running, "GET", "/db").json() == edited
        edited["todos"] = [{"id": 1, "title": "a new collection"}]  # new resources too
        replace_by_hand(path, edited)
        assert served_within(running, "/todos", edited["todos"])
        assert post(running, "/todos", {"title": "kept"})["id"] == 2
        assert json.loads(read_back(path).decode())["todos"][1] == {"id": 2, "title": "kept"}
    finally:
        stop_server(running)


def test_a_broken_edit_is_not_taken_until_the_file_is_valid(tmp_path, capsys):
    running, path = file_server(tmp_path)
    try:
        replace_by_hand(path, b'{"posts": [{"id": 1, "title": "half')
        deadline, told = time.monotonic() + 2, ""
        while "not taken" not in told and time.monotonic() < deadline:
            told += capsys.readouterr().err
            time.sleep(0.02)
        assert told == ("rest_users: not taken: %s: is not a JSON object of resources: "
                        "Unterminated string starting at: line 1 column 31 (char 30)\n" % path)
        # no hint to make a file: following it would replace the one being edited
        assert call(running, "GET", "/db").json() == TYPICODE  # what it had
        replace_by_hand(path, {"posts": []})
        assert served_within(running, "/db", {"posts": []})
    finally:
        stop_server(running)


# A db.json written by json-server 0.17.4: DELETE /users/1 deleted the user's posts and
# albums, and left the comments of post 1 and the photos of album 1 (orphans); a POST
# /comments put its id last.
JSON_SERVER_017_FILE = """{
  "users": [
    {
      "id": 2,
      "name": "Ervin Howell",
      "address": {
        "city": "Wisokyburgh"
      }
    }
  ],
  "posts": [
    {
      "id": 2,
      "userId": 2,
      "title": "qui est esse"
    }
  ],
  "comments": [
    {
      "id": 1,
      "postId": 1,
      "name": "id labore",
      "email": "Eliseo@gardner.biz"
    },
    {
      "id": 2,
      "postId": 2,
      "name": "quo vero",
      "email": "Jayne_Kuhic@sydney.com"
    },
    {
      "postId": 2,
      "name": "né",
      "email": "a@b.c",
      "id": 3
    }
  ],
  "albums": [
    {
      "id": 2,
      "userId": 2,
      "title": "sunt qui excepturi"
    }
  ],
  "photos": [
    {
      "id": 1,
      "albumId": 1,
      "title": "accusamus beatae"
    },
    {
      "id": 2,
      "albumId": 1,
      "title": "reprehenderit est"
    },
    {
      "id": 3,
      "albumId": 2,
      "title": "officia porro"
    }
  ],
  "profile": {
    "name": "typicode"
  }
}"""


def test_json_server_017s_file_with_orphans_loads_warns_and_is_written_back(tmp_path, capsys):
    path = write_db_json(tmp_path, JSON_SERVER_017_FILE.encode())
    running = start_server(file=path)
    try:
        assert capsys.readouterr().err == (
            "%s: comments: postId names posts missing from the file: 1; served and saved as "
            "they are\n%s: photos: albumId names albums missing from the file: 1; served and "
            "saved as they are\n" % (path, path))
        expected = json.loads(JSON_SERVER_017_FILE)
        assert call(running, "GET", "/comments/1").json() == expected["comments"][0]
        assert call(running, "GET", "/db").json() == expected
        problem = assert_problem(call(running, "PATCH", "/photos/3", {"albumId": 1}), 422)
        assert problem["errors"] == [{"field": "albumId", "message": "there is no album with id 1"}]
        post(running, "/photos", {"albumId": 2, "title": "new"})
        expected["photos"].append({"id": 4, "albumId": 2, "title": "new"})
        assert json.loads(read_back(path).decode("utf-8")) == expected
    finally:
        stop_server(running)


def test_an_orphan_may_be_changed_while_its_reference_stays_as_it_is(tmp_path, capsys):
    path = write_db_json(tmp_path, JSON_SERVER_017_FILE.encode())
    running = start_server(file=path)
    try:
        reply = call(running, "PATCH", "/comments/1", {"name": "still about post 1"})
        assert (reply.status, reply.json()) == (200, {
            "id": 1, "postId": 1, "name": "still about post 1", "email": "Eliseo@gardner.biz"})
        problem = assert_problem(call(running, "PATCH", "/comments/2", {"postId": 1}), 422)
        assert problem["errors"] == [{"field": "postId", "message": "there is no post with id 1"}]
    finally:
        stop_server(running)


NESTED = {"posts": [{"id": 1, "meta": {"tags": [1, {"ü": "ö\n"}], "none": {}, "no": []}}],
          "drafts": [], "settings": {"theme": {"dark": True}, "sizes": [1, 2.5]}}


def test_nested_values_and_empty_resources_are_written_as_json_server_writes_them(
        tmp_path, variant):
    running, path = file_server(tmp_path, NESTED, variant)
    try:
        post(running, "/posts", {"meta": {"a": [[]], "b": None}})
        expected = dict(NESTED, posts=NESTED["posts"] + [{"id": 2, "meta": {"a": [[]],
                                                                           "b": None}}])
        assert read_back(path) == as_json_server_writes(expected)
    finally:
        stop_server(running)


# A db.json written by json-server 1.0.0-beta.3: its ids are strings, "c002" and "08a3" made
# by its POSTs, and its DELETE /posts/1 set the comments' postId to null.
JSON_SERVER_1_FILE = """{
  "posts": [
    {
      "id": "2",
      "title": "another title",
      "views": 200
    },
    {
      "id": "c002",
      "title": "Grüße",
      "views": 0
    }
  ],
  "comments": [
    {
      "id": "1",
      "text": "a comment about post 1",
      "postId": null
    },
    {
      "id": "2",
      "text": "another comment about post 1",
      "postId": null
    },
    {
      "id": "08a3",
      "text": "on the new post",
      "postId": "2"
    }
  ],
  "profile": {
    "name": "typicode"
  }
}"""


def test_json_server_1s_file_is_served_with_its_string_ids_and_written_back(tmp_path, variant):
    path = write_db_json(tmp_path, JSON_SERVER_1_FILE.encode())
    running = start_server(variant, file=path)
    expected = json.loads(JSON_SERVER_1_FILE)
    try:
        assert call(running, "GET", "/posts/c002").json() == expected["posts"][1]
        assert [post["id"] for post in call(running, "GET", "/comments").json()] == [
            "08a3", "1", "2"]  # sorted as text
        problem = assert_problem(call(running, "GET", "/posts/0002"), 404)
        assert problem["detail"] == "There is no post with id 0002."
        created = post(running, "/posts", {"title": "new", "views": 1})
        assert re.fullmatch("[0-9a-f]{4}", created["id"]) and created["id"] not in ("2", "c002")
        reply = call(running, "GET", "/posts/" + created["id"])
        assert (reply.status, reply.json()) == (200, created)
        assert call(running, "PATCH", "/posts/2", {"views": 201}).json()["views"] == 201
        reply = call(running, "PUT", "/posts/c002", {"id": "c002", "title": "Grüße", "views": 0})
        assert (reply.status, reply.json()) == (200, expected["posts"][1])
        reply = call(running, "PUT", "/posts/2", {"id": "2", "title": "another title",
                                                  "views": 201})
        assert (reply.status, reply.json()["id"]) == (200, "2")
        assert call(running, "DELETE", "/comments/1").status == 200
        expected["posts"][0]["views"] = 201
        expected["posts"].append(created)
        del expected["comments"][0]
        saved = json.loads(read_back(path).decode("utf-8"))
        assert sorted(saved["posts"], key=lambda post: post["id"]) == sorted(
            expected["posts"], key=lambda post: post["id"])
        assert saved["comments"] == expected["comments"]  # as the file lists them
        assert saved["profile"] == expected["profile"]
    finally:
        stop_server(running)


def test_a_post_may_give_an_unused_id_of_the_collections_kind(tmp_path, variant):
    path = write_db_json(tmp_path, JSON_SERVER_1_FILE.encode())
    running = start_server(variant, file=path)
    try:
        assert post(running, "/comments", {"id": "mine", "text": "t"})["id"] == "mine"
        reply = call(running, "POST", "/comments", {"id": "mine", "text": "again"})
        assert assert_problem(reply, 409)["detail"] == "Another comment already has the id mine."
    finally:
        stop_server(running)
    running, path = file_server(tmp_path, variant=variant)
    try:
        assert post(running, "/posts", {"id": 10, "title": "t", "author": "a"})["id"] == 10
        assert post(running, "/posts", {"title": "t", "author": "a"})["id"] == 11
        assert post(running, "/posts", {"id": 5, "title": "t", "author": "a"})["id"] == 5
        assert post(running, "/posts", {"title": "t", "author": "a"})["id"] == 12
        problem = assert_problem(call(running, "POST", "/posts", {"id": "abc", "title": "t"}), 422)
        assert problem["errors"] == [{"field": "id", "message": "must be a whole number from 1 "
                                      "to 9223372036854775807, as the posts' ids are"}]
        assert_problem(call(running, "POST", "/posts", {"id": 5, "title": "t", "author": "a"}), 409)
        assert [post["id"] for post in json.loads(read_back(path).decode())["posts"]] == [
            1, 2, 5, 10, 11, 12]
    finally:
        stop_server(running)


def test_id_names_the_key_that_is_the_id(tmp_path, variant):
    path = write_db_json(tmp_path, {"posts": [{"_id": "5f1a", "title": "from mongo"}],
                                    "profile": {"name": "typicode"}})
    running = start_server(variant, file=path, id="_id")
    try:
        reply = call(running, "GET", "/posts/5f1a")
        assert (reply.status, reply.json()) == (200, {"_id": "5f1a", "title": "from mongo"})
        created = post(running, "/posts", {"title": "new"})
        assert sorted(created) == ["_id", "title"]
        reply = call(running, "PUT", "/posts/5f1a", {"_id": "5f1a", "title": "replaced"})
        assert (reply.status, reply.json()) == (200, {"_id": "5f1a", "title": "replaced"})
        assert json.loads(read_back(path).decode()) == {  # as the file lists them, new last
            "posts": [{"_id": "5f1a", "title": "replaced"}, created],
            "profile": {"name": "typicode"}}
    finally:
        stop_server(running)


def test_foreign_key_suffix_names_the_keys_that_refer(tmp_path):
    path = write_db_json(tmp_path, {"posts": [{"id": 1, "title": "t"}],
                                    "comments": [{"id": 1, "body": "b", "post_id": 1}]})
    running = start_server(file=path, foreign_key_suffix="_id")
    try:
        assert call(running, "GET", "/posts/1/comments").json() == [
            {"id": 1, "body": "b", "post_id": 1}]
        problem = assert_problem(call(running, "POST", "/comments", {"body": "b", "post_id": 9}),
                                 422)
        assert problem["errors"] == [{"field": "post_id", "message": "there is no post with id 9"}]
    finally:
        stop_server(running)


def test_id_and_foreign_key_suffix_are_on_the_command_line():
    options = rest_users.parse_arguments(["db.json", "-i", "_id", "--foreignKeySuffix", "_id"])
    assert (options.id, options.foreign_key_suffix) == ("_id", "_id")
    options = rest_users.parse_arguments(["--id", "uuid", "--foreign-key-suffix", "Uuid"])
    assert (options.id, options.foreign_key_suffix) == ("uuid", "Uuid")
    assert (rest_users.parse_arguments([]).id, rest_users.parse_arguments([]).foreign_key_suffix
            ) == ("id", "Id")


def test_a_file_with_load_or_fake_users_is_exit_2(tmp_path, capsys):
    path = write_db_json(tmp_path, TYPICODE)
    for option in (["--load", path], ["--fake-users", "3"]):
        status, out, err = failed_start(capsys, path, *option)
        assert (status, out) == (2, "")
        assert err == ("rest_users: cannot load %s with %s: the file is what is served; "
                       "edit it instead\n" % (path, option[0]))


def test_a_reset_that_cannot_be_saved_is_507_and_nothing_changes(tmp_path):
    running, path = file_server(tmp_path)
    try:
        created = post(running, "/posts", {"title": "t", "author": "a"})
        os.chmod(path, 0o444)
        problem = assert_problem(call(running, "POST", "/__admin/reset"), 507)
        assert problem["detail"] == ("The change could not be saved in db.json (the file is "
                                     "read-only): nothing was changed.")
        assert call(running, "GET", "/posts/3").json() == created
    finally:
        stop_server(running)


def test_a_write_that_waited_while_the_file_was_edited_is_503_and_changes_nothing(tmp_path):
    running, path = file_server(tmp_path)
    try:
        waited = running.stores["posts"]  # as a request that found its store, then waited
        replace_by_hand(path, dict(TYPICODE, posts=[]))
        assert served_within(running, "/posts", [])
        with pytest.raises(rest_users.ApiError) as refused:
            waited.create({"title": "t", "author": "a"})
        assert (refused.value.status, refused.value.detail) == (
            503, "db.json changed on disk while this request waited: nothing was changed. "
                 "Try again.")
        assert json.loads(read_back(path).decode()) == dict(TYPICODE, posts=[])
    finally:
        stop_server(running)


def test_a_file_reached_by_a_symbolic_link_is_written_where_the_link_points(tmp_path):
    target = write_db_json(tmp_path, TYPICODE)
    os.mkdir(str(tmp_path / "project"))
    link = str(tmp_path / "project" / "db.json")
    os.symlink(target, link)
    running = start_server(file=link)
    try:
        post(running, "/posts", {"title": "t", "author": "a"})
    finally:
        stop_server(running)
    assert os.path.islink(link)
    assert len(json.loads(read_back(target).decode())["posts"]) == 3


def test_a_write_to_a_full_disk_is_507_and_nothing_changes(tmp_path):
    """A tmpfs of 8 KiB, mounted where only the server sees it (unshare -m, as root)."""
    folder = tmp_path / "small"
    os.mkdir(str(folder))
    script = ("mount -t tmpfs -o size=8k tmpfs %s && printf '%%s' '%s' > %s/db.json && exec "
              "%s rest_users.py %s/db.json --port 0 --quiet" % (
                  folder, json.dumps({"posts": [{"id": 1, "title": "t"}]}), folder,
                  sys.executable, folder))
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-m", "mount", "-t", "tmpfs", "tmpfs", str(folder)],
            stderr=subprocess.DEVNULL).returncode:
        pytest.skip("no private mount of a small tmpfs here")
    process = subprocess.Popen(["unshare", "-m", "sh", "-c", script], cwd=HERE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
    try:
        served = Port(port_of(process.stdout.readline()))
        statuses = [call(served, "POST", "/posts", {"title": "x" * 500}).status
                    for _ in range(20)]
        assert 201 in statuses and statuses[statuses.index(507):] == [507] * (
            20 - statuses.index(507))
        before = call(served, "GET", "/db").json()
        problem = assert_problem(call(served, "POST", "/posts", {"title": "x" * 500}), 507)
        assert problem["detail"] == ("The change could not be saved in db.json (No space "
                                     "left on device): nothing was changed.")
        assert call(served, "GET", "/db").json() == before
        assert len(before["posts"]) == 1 + statuses.count(201)
    finally:
        process.kill()
        process.communicate(timeout=10)


def test_the_startup_note_says_the_file_keeps_every_resource(tmp_path, capsys):
    path = write_db_json(tmp_path, TYPICODE)
    running = start_server(file=path)
    try:
        note = rest_users.startup_note(rest_users.parse_arguments([path]), running, {})
        assert "The posts, comments and profile are kept in %s, written at every change. " % (
            path) in note
        assert {store.kept_in for store in running.stores.values()} == {
            "%s, written at every change" % path}
    finally:
        stop_server(running)


# -- s-jsreads: json-server's reads, _dependent, CORS for your own front end, its options --

PLACEHOLDER = {  # a JSONPlaceholder-style db.json, small
    "users": [
        {"id": 1, "name": "Leanne Graham", "email": "Sincere@april.biz",
         "address": {"city": "Gwenborough", "geo": {"lat": "-37.3159", "lng": "81.1496"}},
         "company": {"name": "Romaguera-Crona", "catchPhrase": "Multi-layered client-server"}},
        {"id": 2, "name": "Ervin Howell", "email": "Shanna@melissa.tv",
         "address": {"city": "Wisokyburgh", "geo": {"lat": "-43.9509", "lng": "-34.4618"}},
         "company": {"name": "Deckow-Crist", "catchPhrase": "Proactive didactic contingency"}}],
    "posts": [
        {"id": 1, "userId": 1, "title": "sunt aut facere", "meta": {"tags": ["rest", "json"]},
         "category": "javascript"},
        {"id": 2, "userId": 1, "title": "Qui est esse", "meta": {"tags": ["xml"]},
         "category": "python"},
        {"id": 3, "userId": 2, "title": "ea molestias quasi", "meta": {"likes": 7},
         "category": "javascript"}],
    "comments": [{"id": n, "postId": 1 + n % 2, "body": "comment %d" % n}
                 for n in range(1, 121)],
    "todos": [{"id": 1, "userId": 2, "title": "delectus aut autem", "completed": False}],
}


@pytest.fixture(scope="module", params=["memory", "sqlite", "plain"])
def placeholder(request, tmp_path_factory):
    """A JSONPlaceholder-style db.json, loaded, on each kind of server."""
    path = write_db_json(tmp_path_factory.mktemp("placeholder"), PLACEHOLDER)
    running = start_server(load=path, **options_for(request.param, tmp_path_factory))
    yield running
    stop_server(running)


def test_a_files_list_is_every_item_when_no_page_is_asked_for(placeholder):
    reply = call(placeholder, "GET", "/comments")
    assert (reply.status, len(reply.json()), reply.headers["X-Total-Count"]) == (200, 120, "120")
    assert "Link" not in reply.headers
    assert item_ids(call(placeholder, "GET", "/comments?_sort=id&_order=desc"))[:2] == [120, 119]


@pytest.mark.parametrize("query, expected", [
    ("_start=100", list(range(1, 121))),  # json-server reads it only with _end or _limit
    ("_start=10&_end=13", [11, 12, 13]),
    ("_start=10&_limit=2", [11, 12]),
    ("_limit=3", [1, 2, 3]),
    ("_page=3", list(range(21, 31))),
    ("_page=2&_limit=4", [5, 6, 7, 8]),
    ("offset=118", [119, 120]),
])
def test_a_files_list_pages_as_json_server_does(placeholder, query, expected):
    assert item_ids(call(placeholder, "GET", "/comments?" + query)) == expected


def test_a_files_page_links_are_absolute_urls_on_the_requests_host(placeholder):
    host = "localhost:%d" % placeholder.server_address[1]
    reply = call(placeholder, "GET", "/comments?_page=2&_limit=50&postId=1",
                 headers={"Host": host})
    assert (reply.headers["X-Total-Count"], len(reply.json())) == ("60", 10)
    url = "<http://%s/comments?postId=1&limit=50&offset=%%d>; rel=\"%%s\"" % host
    assert reply.headers["Link"] == ", ".join(
        url % pair for pair in [(0, "first"), (50, "last"), (0, "prev")])
    following = call(placeholder, "GET", "/comments?postId=1&limit=50&offset=50")
    assert item_ids(following) == list(range(102, 121, 2))


@pytest.mark.parametrize("query, expected", [
    ("address.city=Gwenborough", [1]),
    ("address.city=Gwenborough&address.city=Wisokyburgh", [1, 2]),
    ("address.city_ne=Gwenborough", [2]),
    ("address.geo.lat_gte=-40", [1]),
    ("address.geo.lat_lte=-40", [2]),
    ("address.city:eq=Wisokyburgh", [2]),
    ("address.geo.lng:gt=0", [1]),
    ("address.city:startsWith=wiso", [2]),
    ("address.city_like=^gw", [1]),  # a regular expression, ignoring case, as json-server's
    ("company.name_like=crona$", [1]),
    ("company.name:in=Deckow-Crist,Nobody", [2]),
    ("filter=" + quote('{"address.city": "Gwenborough"}'), [1]),
    ("address.zip=12345", []),
    ("address.city.name=Gwenborough", []),
])
def test_a_filter_on_a_nested_key_looks_inside_the_object(placeholder, query, expected):
    assert item_ids(call(placeholder, "GET", "/users?" + query)) == expected


def test_a_nested_key_under_no_object_field_is_a_400_naming_it(placeholder):
    problem = assert_problem(call(placeholder, "GET", "/users?street.city=x"), 400)
    assert problem["detail"].startswith("Unknown query parameter street.city; ")


@pytest.mark.parametrize("query, expected", [
    ("title_like=^qui", [2]),
    ("title_like=SUNT|quasi", [1, 3]),
    ("title_like=es%2Be", [2]),
    ("title_like=es+e", []),  # + is a space, as forms send it
    ("meta.tags_like=^rest,js", [1]),  # an array as JavaScript writes it, as json-server tests it
    ("meta.tags=xml", [2]),
    ("meta.likes_gte=7", [3]),
    ("userId_like=^2$", [3]),  # any field, as JavaScript writes its value
    ("id_like=1|3", [1, 3]),
])
def test_like_is_a_regular_expression_ignoring_case_as_json_server_0_17s(
        placeholder, query, expected):
    assert item_ids(call(placeholder, "GET", "/posts?" + query)) == expected


@pytest.mark.parametrize("pattern, detail", [
    ("(a+)+$", "title_like is a regular expression with a quantified group inside a quantified "
               "group, which can take minutes to match; write it without one."),
    ("(x*y?)*z", "title_like is a regular expression with a quantified group inside a quantified "
                 "group, which can take minutes to match; write it without one."),
    ("((ab){2,})+", "title_like is a regular expression with a quantified group inside a "
                    "quantified group, which can take minutes to match; write it without one."),
    ("a" * 201, "title_like is a regular expression of 201 characters; at most 200 are taken."),
    ("(unclosed", "title_like is not a regular expression: missing ), unterminated subpattern "
                  "at position 0."),
])
def test_a_like_pattern_that_could_run_for_minutes_is_a_400_at_once(placeholder, pattern, detail):
    started = time.monotonic()
    reply = call(placeholder, "GET", "/posts?title_like=" + quote(pattern))
    assert time.monotonic() - started < 1
    problem = assert_problem(reply, 400)
    assert problem["detail"] == detail + " See GET /openapi.json for the parameters of GET /posts."


@pytest.mark.parametrize("pattern, expected", [("(ab)+c", []), ("(?:s)un[t]", [1]),
                                              (r"\(x+\)+", []), ("[(a+)+]", [1, 3]),
                                              ("(a+)?b", [])])
def test_a_like_pattern_with_groups_not_nested_in_quantifiers_is_taken(placeholder, pattern,
                                                                      expected):
    assert item_ids(call(placeholder, "GET", "/posts?title_like=" + quote(pattern))) == expected


@pytest.mark.parametrize("query, expected", [
    ("/posts?q=JSON", [1]), ("/posts?q=xml", [2]), ("/users?q=gwenborough", [1]),
    ("/users?q=didactic", [2]), ("/users?q=-43.95", [2]), ("/posts?q=tags", []),
])
def test_q_looks_through_nested_objects_and_arrays(placeholder, query, expected):
    assert item_ids(call(placeholder, "GET", query)) == expected


@pytest.fixture(params=["memory", "sqlite"])
def placeholder_to_change(request, tmp_path_factory):
    """The JSONPlaceholder-style db.json on a server of its own, for a test that deletes."""
    path = write_db_json(tmp_path_factory.mktemp("placeholder"), PLACEHOLDER)
    running = start_server(load=path, **options_for(request.param, tmp_path_factory))
    yield running
    stop_server(running)


def test_a_409_on_delete_says_how_to_delete_the_items_that_refer_too(placeholder_to_change):
    problem = assert_problem(call(placeholder_to_change, "DELETE", "/users/2"), 409)
    assert problem["detail"] == (
        "The user with id 2 is referred to by 1 post and 1 todo; change or delete them first, "
        "or delete them too with DELETE /users/2?_dependent=posts,todos: nothing was deleted.")
    assert call(placeholder_to_change, "GET", "/users/2").status == 200


def test_dependent_deletes_the_item_and_the_items_that_refer_to_it(placeholder_to_change):
    reply = call(placeholder_to_change, "DELETE", "/posts/2?_dependent=comments")
    assert (reply.status, reply.json()) == (200, PLACEHOLDER["posts"][1])
    assert call(placeholder_to_change, "GET", "/posts/2").status == 404
    assert item_ids(call(placeholder_to_change, "GET", "/comments?postId=2")) == []
    assert item_ids(call(placeholder_to_change, "GET", "/comments?_limit=3")) == [2, 4, 6]
    assert call(placeholder_to_change, "GET", "/comments").headers["X-Total-Count"] == "60"


def test_dependent_takes_several_resources_comma_separated(placeholder_to_change):
    reply = call(placeholder_to_change, "DELETE", "/users/2?_dependent=posts,todos")
    assert (reply.status, reply.json()["id"]) == (200, 2)
    assert item_ids(call(placeholder_to_change, "GET", "/posts")) == [1, 2]
    assert item_ids(call(placeholder_to_change, "GET", "/todos")) == []


def test_dependent_deletes_all_or_nothing(placeholder_to_change):
    problem = assert_problem(call(placeholder_to_change, "DELETE", "/users/2?_dependent=posts"),
                             409)
    assert problem["detail"] == (
        "The user with id 2 is referred to by 1 post and 1 todo; change or delete them first, "
        "or delete them too with DELETE /users/2?_dependent=posts,todos: nothing was deleted.")
    problem = assert_problem(call(placeholder_to_change, "DELETE", "/users/1?_dependent=posts"),
                             409)
    assert problem["detail"] == (
        "The post with id 1 is referred to by 60 comments; change or delete them first, or "
        "delete them too with DELETE /posts/1?_dependent=comments: nothing was deleted.")
    assert item_ids(call(placeholder_to_change, "GET", "/posts")) == [1, 2, 3]
    assert item_ids(call(placeholder_to_change, "GET", "/users")) == [1, 2]


@pytest.mark.parametrize("query, detail", [
    ("_dependent=albums", "_dependent takes posts or todos, the resources that refer to a "
                          "user, not albums."),
    ("_dependent=posts,,todos", "_dependent takes posts or todos, the resources that refer to "
                                "a user, not an empty name."),
])
def test_dependent_naming_no_resource_that_refers_is_a_400(placeholder, query, detail):
    problem = assert_problem(call(placeholder, "DELETE", "/users/2?" + query), 400)
    assert problem["detail"] == detail + " See GET /users in the README."
    assert call(placeholder, "GET", "/users/2").status == 200


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1:3000",
                                    "http://[::1]:8080", "http://localhost", "https://localhost:1",
                                    "http://app.localhost:5173", "http://127.0.0.2:8000"])
def test_a_page_from_a_loopback_origin_may_call_the_api_by_default(static, origin):
    reply = call(static, "GET", "/posts", headers={"Origin": origin})
    assert reply.headers["Access-Control-Allow-Origin"] == origin
    assert reply.headers["Vary"] == "Accept, Origin"
    preflight = call(static, "OPTIONS", "/posts/1", headers={
        "Origin": origin, "Access-Control-Request-Method": "DELETE"})
    assert (preflight.status, preflight.headers["Access-Control-Allow-Origin"]) == (204, origin)
    assert preflight.headers["Access-Control-Allow-Methods"] == (
        "GET, PUT, PATCH, DELETE, HEAD, OPTIONS")


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost.evil.example:5173",
                                    "http://127.0.0.1.evil.example", "null",
                                    "http://localhost:5173/path", "file://", "http://[::2]:80",
                                    "http://[::1", "http://localhost:x", "http://u@localhost"])
def test_a_page_from_another_origin_gets_no_cors_headers_by_default(static, origin):
    reply = call(static, "GET", "/posts", headers={"Origin": origin})
    assert "Access-Control-Allow-Origin" not in reply.headers
    assert reply.headers["Vary"] == "Accept, Origin"


def test_cors_names_more_origins_and_loopback_ones_stay_allowed(variant):
    running = start_server(variant, cors="https://app.example")
    try:
        for origin, allowed in (("https://app.example", True), ("http://localhost:5173", True),
                                ("https://evil.example", False)):
            reply = call(running, "GET", "/users", headers={"Origin": origin})
            assert reply.headers.get("Access-Control-Allow-Origin") == (origin if allowed
                                                                        else None)
    finally:
        stop_server(running)


def test_no_cors_allows_no_origin(variant):
    running = start_server(variant, no_cors=True)
    try:
        reply = call(running, "GET", "/users", headers={"Origin": "http://localhost:5173"})
        assert "Access-Control-Allow-Origin" not in reply.headers
        assert reply.headers["Vary"] == "Accept"
    finally:
        stop_server(running)


def test_no_cors_and_cors_together_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        rest_users.parse_arguments(["--no-cors", "--cors", "https://app.example"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: argument --cors: not allowed with argument --no-cors\n")


def test_admin_answers_carry_no_cors_for_a_loopback_origin_either(static):
    reply = call(static, "GET", "/__admin/requests",
                 headers={"Origin": "http://localhost:%d" % static.server_address[1]})
    assert "Access-Control-Allow-Origin" not in reply.headers
    preflight = call(static, "OPTIONS", "/__admin/reset", headers={
        "Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in preflight.headers


class PageServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Serves one blank page, from whatever origin a browser names it by."""

    daemon_threads = True

    class handler_class(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            page = b"<!doctype html><title>front end</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass


def fetched_in(browser, page_url, api_url):
    """What a page at page_url gets from fetch(api_url): the list's length, or "refused"."""
    browser.open(page_url)
    browser.run("window.answer = null; fetch(%s).then(reply => reply.json()).then("
                "list => { window.answer = list.length; }, () => { window.answer = 'refused'; })"
                % json.dumps(api_url))
    browser.wait_for("window.answer !== null")
    return browser.run("window.answer")


def test_a_browser_lets_a_loopback_page_call_the_api_and_refuses_another_origin(
        browser, static):
    pages = PageServer(("127.0.0.1", 0), PageServer.handler_class)
    threading.Thread(target=pages.serve_forever, args=(0.05,), daemon=True).start()
    try:
        api = "http://127.0.0.1:%d/posts" % static.server_address[1]
        port = pages.server_address[1]
        assert fetched_in(browser, "http://localhost:%d/" % port, api) == 3
        assert fetched_in(browser, "http://evil.example:%d/" % port, api) == "refused"
    finally:
        pages.shutdown()
        pages.server_close()


def test_json_servers_short_options_are_taken():
    options = rest_users.parse_arguments(["-p", "0", "-H", "127.0.0.2", "-d", "100-200", "-q"])
    assert (options.port, options.host, options.delay, options.quiet) == (
        0, "127.0.0.2", (100, 200), True)


@pytest.mark.parametrize("args, named", [
    (["--middlewares", "log.js"], "--middlewares/-m"), (["-m", "log.js"], "--middlewares/-m"),
    (["--config", "json-server.json"], "--config/-c"),
    (["--snapshots", "snaps"], "--snapshots/-S"),
])
def test_a_json_server_option_not_done_is_a_usage_error_naming_it(args, named, capsys):
    with pytest.raises(SystemExit) as exited:
        rest_users.parse_arguments(args)
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert ": error: argument %s: json-server's option, not done here: " % named in error


def test_no_gzip_is_taken_as_answers_are_never_compressed():
    assert rest_users.parse_arguments(["--no-gzip"]).port == 8000


README_ROUTES = {  # json-server 0.17's README, "Add custom routes"
    "/api/*": "/$1",
    "/:resource/:id/show": "/:resource/:id",
    "/posts/:category": "/posts?category=:category",
    "/articles\\?id=:id": "/posts/:id",
}


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory):
    """The JSONPlaceholder-style file served with json-server's README routes."""
    folder = tmp_path_factory.mktemp("routes")
    routes = folder / "routes.json"
    routes.write_text(json.dumps(README_ROUTES))
    running = start_server(load=write_db_json(folder, PLACEHOLDER), routes=str(routes))
    yield running
    stop_server(running)


@pytest.mark.parametrize("target, expected", [  # each as json-server 0.17.4 answers it
    ("/api/posts", [1, 2, 3]),
    ("/API/posts/", [1, 2, 3]),  # ignoring case, and a final slash
    ("/api/posts?title_like=^qui", [2]),
    ("/posts/javascript", [1, 3]),
    ("/api/posts/1", []),  # /posts/1, which the next rule makes /posts?category=1
    ("/posts/1/show", []),  # the same, as json-server applies every rule in turn
    ("/api/comments/1/show", PLACEHOLDER["comments"][0]),
    ("/articles?id=2", PLACEHOLDER["posts"][1]),
    ("/users/1", PLACEHOLDER["users"][0]),
])
def test_routes_rewrite_as_json_servers_readme_shows(rewritten, target, expected):
    reply = call(rewritten, "GET", target)
    assert reply.status == 200, reply.body
    assert (item_ids(reply) if isinstance(expected, list) else reply.json()) == expected


def test_routes_chain_in_the_files_order(tmp_path):
    routes = tmp_path / "routes.json"
    routes.write_text(json.dumps({"/api/*": "/$1", "/blog/:id": "/posts/:id"}))
    running = start_server(load=write_db_json(tmp_path, PLACEHOLDER), routes=str(routes))
    try:
        assert call(running, "GET", "/api/blog/2").json() == PLACEHOLDER["posts"][1]
        assert call(running, "GET", "/blog/3?_expand=user").json()["user"]["id"] == 2
        reply = call(running, "PATCH", "/api/blog/2", {"title": "Qui est"})
        assert (reply.status, reply.json()["title"]) == (200, "Qui est")
    finally:
        stop_server(running)


@pytest.mark.parametrize("content, problem", [
    ('["/api/*"]', "is not a JSON object of rules, as {\"/api/*\": \"/$1\"}"),
    ('{"/api/*": 1}', "the rule /api/* must rewrite to a string, not a number"),
    ("{", "is not JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
          "(char 1)"),
])
def test_a_bad_routes_file_stops_the_start_naming_the_problem(tmp_path, content, problem):
    routes = tmp_path / "routes.json"
    routes.write_text(content)
    with pytest.raises(ValueError) as refused:
        rest_users.make_server(port=0, routes=str(routes))
    assert str(refused.value) == "%s: %s" % (routes, problem)


@pytest.fixture(scope="module")
def static(tmp_path_factory):
    """A server of the JSONPlaceholder-style file with a --static folder: a front end's files,
    and beside the folder a secret that must never be served, and links to it."""
    base = tmp_path_factory.mktemp("static")
    folder = base / "public"
    (folder / "css").mkdir(parents=True)
    (folder / "index.html").write_text("<!doctype html><title>my front end</title>")
    (folder / "css" / "site.css").write_text("body { color: #333 }")
    (folder / ".env").write_text("TOKEN=1")
    (base / "secret.txt").write_text("the secret")
    os.symlink(str(base / "secret.txt"), str(folder / "secret.txt"))
    os.symlink(str(base), str(folder / "outside"))
    running = start_server(load=write_db_json(base, PLACEHOLDER), static=str(folder))
    yield running
    stop_server(running)


def test_static_serves_the_folders_index_at_the_root_and_its_files(static):
    for accept in (BROWSER_ACCEPT, "application/json"):
        reply = call(static, "GET", "/", headers={"Accept": accept})
        assert (reply.status, reply.headers["Content-Type"], reply.text()) == (
            200, "text/html; charset=utf-8", "<!doctype html><title>my front end</title>")
    reply = call(static, "GET", "/css/site.css")
    assert (reply.status, reply.headers["Content-Type"], reply.text()) == (
        200, "text/css; charset=utf-8", "body { color: #333 }")
    head = call(static, "HEAD", "/css/site.css")
    assert (head.status, head.headers["Content-Length"], head.body) == (200, "20", b"")


def test_static_leaves_the_routes_to_the_api_and_the_explorer_moves(static):
    assert item_ids(call(static, "GET", "/posts")) == [1, 2, 3]
    explorer = call(static, "GET", "/__explorer", headers={"Accept": BROWSER_ACCEPT})
    assert (explorer.status, explorer.text()[:15]) == (200, "<!doctype html>")
    assert "my front end" not in explorer.text()


@pytest.mark.parametrize("target", [
    "/../secret.txt", "/css/../../secret.txt", "/%2e%2e/secret.txt",
    "/css/%2E%2E/%2e%2e/secret.txt",
    "/css%2f..%2f..%2fsecret.txt", "/css/..%2F..%2Fsecret.txt", "/css%5c..%5c..%5csecret.txt",
    "/secret.txt", "/outside/secret.txt", "/.env", "/nothing.html", "/css/", "/%ff",
])
def test_static_never_serves_a_file_outside_its_folder(static, target):
    reply = call(static, "GET", target)
    problem = assert_problem(reply, 404)
    assert "the secret" not in reply.text()
    assert problem["detail"].startswith("There is nothing at ")


def test_the_explorer_moved_by_static_still_opens_each_resource(browser, static):
    base = "http://127.0.0.1:%d" % static.server_address[1]
    browser.open(base + "/__explorer")
    choose_resource(browser, "posts")
    browser.wait_for("[...document.querySelectorAll('#rows td')].some("
                     "td => td.textContent === 'Qui est esse')")
    assert browser.run("location.href") == base + "/__explorer?resource=posts"


def test_the_api_description_offers_dependent_on_deleting_an_item_others_refer_to(
        placeholder_to_change):
    document = call(placeholder_to_change, "GET", "/openapi.json").json()
    deleting = document["paths"]["/users/{id}"]["delete"]
    assert [(each["name"], each.get("example")) for each in deleting["parameters"]
            if each["in"] == "query"] == [("_dependent", "posts,todos")]
    assert "_dependent" not in json.dumps(document["paths"]["/comments/{id}"]["delete"])
    for target, status in (("/users/2?_dependent=albums", 400), ("/users/2", 409),
                           ("/users/2?_dependent=posts,todos", 200)):
        check_reply_against_openapi(document, "/users/{id}", "DELETE",
                                    call(placeholder_to_change, "DELETE", target), status)


def test_a_problem_only_client_deleting_with_dependent_gets_406_and_nothing_is_deleted(
        placeholder_to_change):
    reply = call(placeholder_to_change, "DELETE", "/users/2?_dependent=posts,todos",
                 headers={"Accept": "application/problem+json"})
    assert_problem(reply, 406)
    assert item_ids(call(placeholder_to_change, "GET", "/posts")) == [1, 2, 3]
    assert item_ids(call(placeholder_to_change, "GET", "/todos")) == [1]


@pytest.mark.parametrize("query, expected", [
    ("completed_like=^fal", [1]), ("completed_like=1", []), ("completed_like=true", [])])
def test_like_reads_a_boolean_as_json_server_writes_it_on_both_stores(placeholder, query,
                                                                     expected):
    assert item_ids(call(placeholder, "GET", "/todos?" + query)) == expected


@pytest.mark.parametrize("query, expected", [
    ("/users?_sort=address.city&_order=desc", [2, 1]),
    ("/users?_sort=-address.geo.lat", [2, 1]),  # json-server 1.0's; strings sort as text
    ("/users?sort=" + quote('["address.city","DESC"]'), [2, 1]),
    ("/posts?_sort=meta.likes", [1, 2, 3]),  # a none first, ties by id
    ("/posts?_sort=meta.likes&_order=desc", [3, 1, 2]),
    ("/posts?_sort=meta.tags", [3, 1, 2]),  # arrays by their JSON
    ("/posts?_sort=category,meta.likes&_order=asc,desc", [3, 1, 2]),
    ("/posts?_sort=meta.likes,-id", [2, 1, 3]),
])
def test_a_list_sorts_by_a_key_inside_an_object_on_both_stores(placeholder, query, expected):
    assert item_ids(call(placeholder, "GET", query)) == expected


def test_the_startup_line_names_json_servers_options_in_force(tmp_path):
    routes = tmp_path / "routes.json"
    routes.write_text('{"/api/*": "/$1"}')
    options = rest_users.parse_arguments(["-p", "0", "--routes", str(routes), "-s",
                                          str(tmp_path), "--no-cors"])
    assert rest_users.options_in_force(options) == " In force: --no-cors, --routes %s, " \
        "--static %s." % (routes, tmp_path)


def test_a_files_page_links_follow_an_absolute_form_targets_authority(placeholder):
    port = placeholder.server_address[1]
    answer = raw(placeholder, ("GET http://localhost:%d/todos?_limit=1 HTTP/1.1\r\nHost: "
                               "127.0.0.1:%d\r\nConnection: close\r\n\r\n" % (port, port)
                               ).encode())
    assert ('\r\nLink: <http://localhost:%d/todos?limit=1&offset=0>; rel="first", '
            '<http://localhost:%d/todos?limit=1&offset=0>; rel="last"\r\n' % (port, port)
            ).encode() in answer


def test_a_files_users_list_and_like_as_json_servers_too(placeholder):
    reply = call(placeholder, "GET", "/users?name_like=^e")
    assert (item_ids(reply), "Link" in reply.headers) == ([2], False)


def test_version_says_which_release_as_json_servers_does(capsys):
    for option in ("--version", "-v"):
        with pytest.raises(SystemExit) as exited:
            rest_users.parse_arguments([option])
        assert (exited.value.code, capsys.readouterr().out) == (0, "rest_users 1.0\n")


# -- s-open: a file's resources take any key a write brings, and each item keeps its own --

def test_a_files_post_needs_no_key_that_all_items_share(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    try:
        reply = call(running, "POST", "/comments", {"postId": 1})
        assert (reply.status, reply.json()) == (201, {"id": 2, "postId": 1})
        reply = call(running, "GET", "/comments/2", headers={"Accept": "application/xml"})
        assert reply.body == b"<comment><id>2</id><postId>1</postId></comment>"
        reply = call(running, "POST", "/posts", {"title": None})  # a null given is kept
        assert (reply.status, reply.json()) == (201, {"id": 3, "title": None})
        assert json.loads(read_back(path).decode())["comments"][1] == {"id": 2, "postId": 1}
        assert json.loads(read_back(path).decode())["posts"][2] == {"id": 3, "title": None}
    finally:
        stop_server(running)


def test_a_files_new_key_becomes_a_field_typed_by_its_value(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    try:
        reply = call(running, "PATCH", "/posts/1", {"likes": 3})
        assert (reply.status, reply.json()) == (200, {"id": 1, "title": "json-server",
                                                      "author": "typicode", "likes": 3})
        assert call(running, "GET", "/posts/2").json() == TYPICODE["posts"][1]  # no likes
        assert item_ids(call(running, "GET", "/posts?likes=3")) == [1]
        assert item_ids(call(running, "GET", "/posts?_sort=likes&_order=desc")) == [1, 2]
        assert_problem(call(running, "GET", "/posts?likes=many"), 400)  # an integer's filter
        expected = json.loads(json.dumps(TYPICODE))
        expected["posts"][0]["likes"] = 3
        assert read_back(path) == as_json_server_writes(expected)
    finally:
        stop_server(running)


def test_a_files_value_of_another_type_widens_its_field(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    try:
        assert call(running, "PATCH", "/posts/1", {"likes": 3}).status == 200
        reply = call(running, "PATCH", "/posts/2", {"likes": 2.5})  # integer to number
        assert (reply.status, reply.json()["likes"]) == (200, 2.5)
        assert item_ids(call(running, "GET", "/posts?likes_gte=2.6")) == [1]
        reply = call(running, "POST", "/posts", {"title": 7, "likes": {"by": ["ann"]}})
        assert (reply.status, reply.json()) == (201, {"id": 3, "title": 7,
                                                      "likes": {"by": ["ann"]}})
        reply = call(running, "GET", "/posts/3", headers={"Accept": "application/xml"})
        assert reply.body == (b'<post><id>3</id><title type="number">7</title><likes type='
                              b'"object"><by type="array"><item>ann</item></by></likes></post>')
        assert json.loads(read_back(path).decode())["posts"][2] == reply_json(running, 3)
    finally:
        stop_server(running)


def reply_json(running, post_id):
    return call(running, "GET", "/posts/%d" % post_id).json()


def test_a_files_put_replaces_the_keys_and_a_patchs_null_removes_one(tmp_path, variant):
    running, path = file_server(tmp_path, variant=variant)
    try:
        reply = call(running, "PUT", "/posts/1", {"title": "only"})
        assert (reply.status, reply.json()) == (200, {"id": 1, "title": "only"})
        reply = call(running, "PATCH", "/posts/2", {"author": None, "tags": ["a"]})
        assert (reply.status, reply.json()) == (200, {"id": 2, "title": TYPICODE["posts"][1][
            "title"], "tags": ["a"]})
        reply = call(running, "PUT", "/profile", {"bio": "hi"})  # without the file's name
        assert (reply.status, reply.json()) == (200, {"bio": "hi"})
        written = json.loads(read_back(path).decode())
        assert (written["posts"][:2], written["profile"]) == (
            [{"id": 1, "title": "only"}, {"id": 2, "title": TYPICODE["posts"][1]["title"],
                                          "tags": ["a"]}], {"bio": "hi"})
    finally:
        stop_server(running)


def test_the_declared_users_keep_their_checks_beside_a_files_open_fields(tmp_path):
    running = start_server()
    try:
        assert_problem(call(running, "POST", "/users", {"name": "Ada"}), 422)
        user_id = create(running)["id"]
        assert_problem(call(running, "PATCH", "/users/%d" % user_id, {"likes": 3}), 422)
    finally:
        stop_server(running)


def test_readers_see_each_item_whole_while_writers_add_fields(tmp_path):
    running, path = file_server(tmp_path)
    torn, done = [], threading.Event()

    def add_fields(post_id):  # version v of the post has the keys k1 .. k(v-1)
        for number in range(1, 16):
            reply = call(running, "PATCH", "/posts/%d" % post_id, {"k%d_%d" % (post_id, number):
                                                                   number})
            assert reply.status == 200, reply.body

    def expected(post_id, version):
        item = dict(TYPICODE["posts"][post_id - 1])
        item.update(("k%d_%d" % (post_id, number), number) for number in range(1, version))
        return item

    def read():
        while not done.is_set():
            for post_id in (1, 2):
                reply = call(running, "GET", "/posts/%d" % post_id)
                version = int(reply.headers["ETag"].strip('"').split("-")[0])
                if reply.json() != expected(post_id, version):
                    torn.append(reply.json())
            for item in call(running, "GET", "/posts").json():
                if set(item) - set(expected(item["id"], 16)):
                    torn.append(item)

    writers = [threading.Thread(target=add_fields, args=(post_id,)) for post_id in (1, 2)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    try:
        for thread in writers + readers:
            thread.start()
        for thread in writers:
            thread.join()
        done.set()
        for thread in readers:
            thread.join()
        assert torn == []
        assert [reply_json(running, post_id) for post_id in (1, 2)] == [
            expected(1, 16), expected(2, 16)]
        assert json.loads(read_back(path).decode())["posts"] == [expected(1, 16),
                                                                 expected(2, 16)]
    finally:
        stop_server(running)


def test_a_files_xml_write_adds_a_key_as_text_and_xsi_nil_removes_one(tmp_path):
    running, path = file_server(tmp_path)
    xml = {"Content-Type": "application/xml", "Accept": "application/xml"}
    try:
        reply = call(running, "POST", "/posts", "<post><title>x</title><likes>3</likes></post>",
                     xml)
        assert (reply.status, reply.body) == (
            201, b"<post><id>3</id><title>x</title><likes>3</likes></post>")
        reply = call(running, "PATCH", "/posts/1", '<post xmlns:xsi="http://www.w3.org/2001/'
                     'XMLSchema-instance"><author xsi:nil="true"/></post>', xml)
        assert (reply.status, reply.body) == (
            200, b"<post><id>1</id><title>json-server</title></post>")
        assert json.loads(read_back(path).decode())["posts"][::2] == [
            {"id": 1, "title": "json-server"}, {"id": 3, "title": "x", "likes": "3"}]
    finally:
        stop_server(running)


def test_a_problem_only_clients_write_of_a_new_key_to_a_file_is_406_and_changes_nothing(
        tmp_path):
    running, path = file_server(tmp_path)
    try:
        reply = call(running, "POST", "/posts", {"likes": 3},
                     {"Accept": "application/problem+json"})
        assert_problem(reply, 406)
        assert read_back(path) == json.dumps(TYPICODE).encode()
        assert item_ids(call(running, "GET", "/posts")) == [1, 2]
    finally:
        stop_server(running)


def test_a_files_new_key_nested_too_deep_is_the_422_that_says_so(tmp_path):
    running, path = file_server(tmp_path)
    try:
        reply = call(running, "POST", "/posts", {"title": "t", "deep": json.loads(
            "[" * 102 + "]" * 102)})
        assert assert_problem(reply, 422)["errors"] == [{"field": "deep",
                                                          "message": rest_users.TOO_DEEP}]
        assert read_back(path) == json.dumps(TYPICODE).encode()
    finally:
        stop_server(running)


def test_the_api_description_shows_a_files_added_field_and_takes_any_other(tmp_path):
    running, path = file_server(tmp_path)
    try:
        assert call(running, "PATCH", "/posts/1", {"likes": 3}).status == 200
        post = call(running, "GET", "/openapi.json").json()["components"]["schemas"]["Post"]
        assert (post["properties"]["likes"], post["additionalProperties"]) == (
            {"type": ["integer", "null"], "examples": [3]}, True)
        assert post["required"] == ["id"]
    finally:
        stop_server(running)


def test_a_refused_write_leaves_a_files_fields_as_they_were(tmp_path):
    running, path = file_server(tmp_path)
    try:
        assert call(running, "PUT", "/posts/9", {"title": 7, "likes": 1}).status == 404
        assert_problem(call(running, "POST", "/comments", {"postId": 9, "likes": 1}), 422)
        assert item_ids(call(running, "GET", "/posts?title=json-server")) == [1]  # a string
        assert_problem(call(running, "GET", "/comments?likes=1"), 400)  # no such field
        post = call(running, "GET", "/openapi.json").json()["components"]["schemas"]["Post"]
        assert list(post["properties"]) == ["id", "title", "author"]
        reply = call(running, "PATCH", "/posts/1", {"likes": 1})  # the next write adds it
        assert (reply.status, reply.json()["likes"]) == (200, 1)
    finally:
        stop_server(running)


# -- fix-like: a _like matcher whose time is linear in the value's length --

def counted_like(pattern):
    """A _like's compiled program whose character tests count how often they run."""
    steps = [0]

    def counting(test):
        def counted(character):
            steps[0] += 1
            return test(character)
        return counted
    return rest_users.LikeProgram([("one", counting(step[1])) if step[0] == "one" else step
                                   for step in rest_users.compile_like(pattern).steps]), steps


@pytest.mark.parametrize("pattern, text", [
    (".*.*.*.*x", "a" * 20000), ("a*a*a*a*a*x", "a" * 20000), ("(a|aa)*b", "a" * 20000),
    (".*x", "a" * 50000), ("(a+)+$", "a" * 5000 + "!"), ("(x+x+)+y", "x" * 5000)],
    ids=lambda value: value if len(value) < 20 else "%d characters" % len(value))
def test_a_like_pattern_takes_steps_linear_in_the_values_length(pattern, text):
    program, steps = counted_like(pattern)
    assert program.matches(text) is False
    assert steps[0] <= len(text) * len(program.steps)


LIKE_CASES = [  # pattern, texts: each must match as re.search(pattern, text, re.IGNORECASE)
    ("^qui", ["Qui est", "a qui", ""]), ("SUNT|quasi", ["sunt", "QUASI x", "su"]),
    ("es+e", ["esse", "ese", "ee"]), ("^2$", ["2", "2\n", "12", "2\n\n"]),
    ("a{2,3}b", ["aab", "ab", "aaaab"]), ("a{2}", ["a", "xaa"]), ("a{,2}c", ["c", "aac"]),
    ("x{2,}", ["x", "xxx"]), ("[a-c]+$", ["ABC", "abd", "a-"]), ("[^a-c]", ["abc", "abd"]),
    (r"\d\d", ["a1", "12", "١٢"]), (r"\w+@\w+", ["ada@x", "@x"]), (r"\s", ["a b", "ab"]),
    (r"\bcat\b", ["a cat!", "concat"]), (r"\Bcat", ["concat", "cat"]), (r"\Aab\Z", ["ab", "xab"]),
    ("(?:ab)+c", ["ababc", "acb"]), ("(?P<x>ab)?c", ["c", "abc"]), ("a.c", ["abc", "a\nc"]),
    ("stra(ss|ß)e", ["STRASSE", "Straße"]), ("ǅ", ["ǆ", "Ǆ"]), (r"\.\x41\u00e9", [".aÉ", "xaé"]),
    ("a*?b", ["b", "aab", "a"]), ("(a|)+b", ["ab", "a"]), ("(a*)*$", ["aaa", ""]),
    ("[(a+)+]", ["+", "x"]), (r"a\|b", ["a|b", "ab"]), ("{x", ["{x", "x"]), ("a{,", ["a{,"]),
]


@pytest.mark.parametrize("pattern, texts", LIKE_CASES)
def test_a_like_pattern_matches_as_pythons_re_ignoring_case(pattern, texts):
    program = rest_users.compile_like(pattern)
    for text in texts:
        assert program.matches(text) is bool(
            re.search(pattern, text, re.IGNORECASE)), (pattern, text)


@pytest.mark.parametrize("pattern, named", [
    ("(?=a)b", "(?="), ("(?!a)b", "(?!"), ("(?<=a)b", "(?<="), ("(?<!a)b", "(?<!"),
    (r"(a)\1", r"\1"), ("(?P<x>a)(?P=x)", "(?P="), ("(?i)a", "(?i"), ("(?#note)a", "(?#"),
    ("a{1001}", "{1001}"), ("a{2,5000}", "{2,5000}")])
def test_a_like_pattern_in_syntax_the_matcher_does_not_take_is_a_400_naming_it(
        placeholder, pattern, named):
    problem = assert_problem(call(placeholder, "GET", "/posts?title_like=" + quote(pattern)), 400)
    assert problem["detail"].startswith("title_like uses %s, which a _like does not take" % named)


def test_a_like_pattern_that_expands_to_many_states_is_a_400(placeholder):
    problem = assert_problem(call(placeholder, "GET", "/posts?title_like=" + quote(
        "a{999}b{999}c{999}")), 400)
    assert problem["detail"] == (
        "title_like is a regular expression of more than 2000 steps once its repeats are "
        "written out; write it with fewer. "
        "See GET /openapi.json for the parameters of GET /posts.")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_like_that_froze_the_server_answers_while_others_are_answered(
        tmp_path_factory, kind):
    path = write_db_json(tmp_path_factory.mktemp("like"), {"posts": [
        {"id": 1, "body": "a" * 10000}, {"id": 2, "body": "a" * 100 + "x"}]})
    running = start_server(load=path, **options_for(kind, tmp_path_factory))
    try:
        for pattern in [".*.*.*.*x", "a*a*a*a*a*x", "(a|aa)*b", ".*x"]:
            answers = []
            heavy = threading.Thread(target=lambda: answers.append(call(
                running, "GET", "/posts?body_like=" + quote(pattern))))
            heavy.start()
            assert call(running, "GET", "/posts/2").status == 200
            heavy.join(10)
            assert item_ids(answers[0]) == ([] if pattern == "(a|aa)*b" else [2])
    finally:
        stop_server(running)


# -- fix-file: a db.json's hand edits, key order and ids kept --------------------------------

def wait_for_line(capsys, words, seconds=2.0):
    """Read stderr until a line holds words, or the time is up; what was read."""
    deadline, told = time.monotonic() + seconds, ""
    while words not in told and time.monotonic() < deadline:
        told += capsys.readouterr().err
        time.sleep(0.02)  # polling under a deadline, not synchronisation by sleeping
    return told


def test_a_write_while_the_file_on_disk_is_broken_is_a_503_and_keeps_the_edit(tmp_path, capsys):
    running, path = file_server(tmp_path)
    try:
        replace_by_hand(path, b'{"posts": [')
        reply = call(running, "PATCH", "/posts/2", {"title": "lost?"})  # before the watcher
        assert (reply.status, reply.headers["Retry-After"]) == (503, "1")
        assert "not taken" in wait_for_line(capsys, "not taken")
        reply = call(running, "PATCH", "/posts/2", {"title": "lost?"})
        assert (reply.status, reply.headers["Retry-After"]) == (503, "1")
        assert assert_problem(reply, 503)["detail"] == (
            "db.json on disk is not valid (is not a JSON object of resources: Expecting "
            "value: line 1 column 12 (char 11)): nothing was changed, so as not to replace "
            "it; writes resume once the file is valid.")
        assert read_back(path) == b'{"posts": ['
        assert call(running, "GET", "/posts/2").json()["title"] == "Ünïcödé stays as itself"
        replace_by_hand(path, {"posts": [{"id": 2, "title": "by hand"}]})
        assert served_within(running, "/posts/2", {"id": 2, "title": "by hand"})
        assert call(running, "PATCH", "/posts/2", {"title": "kept"}).status == 200
        assert json.loads(read_back(path).decode()) == {"posts": [{"id": 2, "title": "kept"}]}
    finally:
        stop_server(running)


USER_ID_FIRST = {  # JSONPlaceholder's order: the reference before the id
    "posts": [{"userId": 1, "id": 1, "title": "a", "body": "x"},
              {"userId": 1, "id": 2, "title": "b", "body": "y"}],
    "users": [{"id": 1, "name": "Ada"}],
    "profile": {"name": "typicode"},
}


def test_a_write_keeps_the_files_key_order_so_git_diff_shows_just_the_change(tmp_path, variant):
    path = write_db_json(tmp_path, as_json_server_writes(USER_ID_FIRST))
    running = start_server(variant, file=path)
    try:
        assert call(running, "PATCH", "/posts/2", {"title": "c"}).status == 200
        expected = json.loads(json.dumps(USER_ID_FIRST))
        expected["posts"][1]["title"] = "c"
        assert read_back(path) == as_json_server_writes(expected)
        assert call(running, "POST", "/posts", {"title": "d", "userId": 1}).status == 201
        expected["posts"].append({"userId": 1, "id": 3, "title": "d"})
        assert read_back(path) == as_json_server_writes(expected)
    finally:
        stop_server(running)


def test_one_text_id_leaves_a_collections_number_ids_numbers_in_the_file(tmp_path, variant):
    albums = [{"id": 2, "title": "a"}, {"id": 10, "title": "b"}, {"id": "abc", "title": "c"}]
    running, path = file_server(tmp_path, {"albums": albums}, variant)
    try:
        assert call(running, "PATCH", "/albums/abc", {"title": "d"}).status == 200
        albums[2]["title"] = "d"
        assert read_back(path) == as_json_server_writes({"albums": albums})  # not 10, 2
        for given in ("b", "a"):
            assert call(running, "POST", "/albums", {"id": given}).status == 201
        albums += [{"id": "b"}, {"id": "a"}]  # last, as json-server adds them
        assert read_back(path) == as_json_server_writes({"albums": albums})
        assert item_ids(call(running, "GET", "/albums")) == ["10", "2", "a", "abc", "b"]
    finally:
        stop_server(running)


def test_the_start_line_names_the_files_first_resource_where_it_is_served(tmp_path):
    process, banner = run_service("--port", "0", write_db_json(tmp_path, {"posts": []}))
    try:
        assert banner == ("Serving posts API on http://127.0.0.1:%d/posts (press Ctrl-C to "
                          "stop)\n" % port_of(banner))
        assert call(Port(port_of(banner)), "GET", "/posts").status == 200  # serving: SIGTERM
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert process.returncode == 0


def test_a_key_an_item_lacks_stays_absent_and_a_patchs_null_removes_one(tmp_path, variant):
    posts = [{"id": 1, "title": "a", "body": "x"}, {"id": 2, "title": "b"}]
    running, path = file_server(tmp_path, {"posts": posts}, variant)
    try:
        replace_by_hand(path, {"posts": posts + [{"id": 3, "body": "by hand"}]})
        assert served_within(running, "/posts/3", {"id": 3, "body": "by hand"})
        assert call(running, "GET", "/posts/2").json() == {"id": 2, "title": "b"}
        reply = call(running, "PATCH", "/posts/1", {"body": None, "title": "c"})
        assert (reply.status, reply.json()) == (200, {"id": 1, "title": "c"})
        assert call(running, "PUT", "/posts/2", {"title": None}).json() == {"id": 2, "title": None}
        assert read_back(path) == as_json_server_writes({"posts": [
            {"id": 1, "title": "c"}, {"id": 2, "title": None}, {"id": 3, "body": "by hand"}]})
    finally:
        stop_server(running)


# -- fix-perf: the journal's bounds, as it weighs a request with fewer calls --

def test_journal_cuts_header_fields_past_their_budget():
    journal = rest_users.Journal()
    journal.MAX_FIELDS = 10
    journal.add("GET", "/users", [("Host", "a"), ("X-Long", "abcdefghij"), ("After", "x")],
                b"", 200)
    [entry] = journal.entries()
    assert entry["headers"] == {"Host": "a", "X-Lon": "..."}


def test_journal_keeps_header_fields_within_their_budget_whole():
    journal = rest_users.Journal()
    fields = [("Host", "a"), ("Accept", "application/json")]
    journal.add("GET", "/users", fields, b"", 200)
    fields.append(("Later", "x"))  # the journal keeps its own copy
    assert journal.entries()[0]["headers"] == {"Host": "a", "Accept": "application/json"}


def test_journal_drops_the_oldest_requests_past_its_bytes():
    journal = rest_users.Journal()
    journal.MAX_BYTES = 40
    journal.add("GET", "/users/1", [("Host", "a")], b"", 200)  # 8 + 5 characters
    journal.add("POST", "/users", [("Host", "a")], b"0123456789" * 2, 201)  # 6 + 20 + 5
    assert [entry["method"] for entry in journal.entries()] == ["POST"]
    journal.clear()
    assert (journal.entries(), journal.size) == ([], 0)


# -- srv-speed: the default server keeps the core's route for each path --

def test_a_path_asked_before_an_edit_by_hand_finds_the_routes_of_the_edit(tmp_path, variant):
    running, path = file_server(tmp_path, {"posts": [{"id": 1, "title": "a"}]}, variant)
    try:
        assert assert_problem(call(running, "GET", "/todos/1"), 404)["detail"] == (
            "There is nothing at /todos/1; the posts are at /posts.")
        assert call(running, "GET", "/posts/1").json() == {"id": 1, "title": "a"}
        replace_by_hand(path, {"todos": [{"id": 1, "title": "t"}]})
        assert served_within(running, "/todos/1", {"id": 1, "title": "t"})
        assert assert_problem(call(running, "GET", "/posts/1"), 404)["detail"] == (
            "There is nothing at /posts/1; the todos are at /todos.")
    finally:
        stop_server(running)


def test_the_default_server_finds_a_paths_route_once_the_plain_one_each_time(monkeypatch,
                                                                             variant):
    found, core_find_route = [], rest_users.UsersHandler.find_route

    def counted(handler, path):
        found.append(path)
        return core_find_route(handler, path)
    monkeypatch.setattr(rest_users.UsersHandler, "find_route", counted)
    running = start_server(variant, users=[{"name": "Ada", "email": "ada@example.com"}])
    try:
        for _ in range(3):
            reply = call(running, "GET", "/users/1")
            assert (reply.status, reply.json()) == (200, {
                "id": 1, "name": "Ada", "email": "ada@example.com"})
        assert found == ["/users/1"] * (1 if variant == "default" else 3)
    finally:
        stop_server(running)


# -- lead: what a newcomer tripped on ---------------------------------------------------------

@pytest.mark.parametrize("given, option", [(["--id", "_id"], "--id"),
                                           (["--foreign-key-suffix", "_id"],
                                            "--foreign-key-suffix")])
def test_an_option_of_a_served_file_with_load_is_a_usage_error(capsys, given, option):
    with pytest.raises(SystemExit) as exited:
        rest_users.parse_arguments(["--load", "db.json"] + given)
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: argument %s: applies to a db.json served and kept (rest_users.py db.json), "
        "not to --load\n" % option)
    assert rest_users.parse_arguments(["db.json"] + given).file == "db.json"


def test_items_without_an_id_are_given_one_with_a_warning_that_names_a_likely_key(
        tmp_path, capsys):
    path = write_db_json(tmp_path, {"messages": [{"_id": "5f1a", "from": "ada"},
                                                 {"_id": "5f1b", "from": "alan"}],
                                    "notes": [{"id": 1, "text": "x"}, {"text": "y"}]})
    running = start_server(file=path)
    try:
        assert capsys.readouterr().err == (
            '%s: messages: 2 of 2 items have no "id", and are given one, saved in the file at '
            'its first write; is "_id" their id? then start with --id _id\n'
            '%s: notes: 1 of 2 items have no "id", and are given one, saved in the file at '
            'its first write\n' % (path, path))
    finally:
        stop_server(running)
    path = write_db_json(tmp_path, {"messages": [{"_id": "5f1a", "from": "ada"}]})
    running = start_server(file=path, id="_id")
    try:
        assert capsys.readouterr().err == ""
        assert call(running, "GET", "/messages/5f1a").json() == {"_id": "5f1a", "from": "ada"}
    finally:
        stop_server(running)


# -- nothing after the core's banner takes users for the only resource ---------------------

TASKS = Resource("tasks", [Field("title", required=True), Field("done", "boolean")])


def test_a_posts_only_document_says_reset_puts_every_resource_back(tmp_path):
    running = start_server(load=write_db_json(tmp_path, {"posts": [{"id": 1, "title": "Hi"}]}))
    try:
        paths = call(running, "GET", "/openapi.json").json()["paths"]
    finally:
        stop_server(running)
    reset = paths["/__admin/reset"]["post"]
    assert (reset["operationId"], reset["summary"]) == ("resetUsers", "Back to the starting items")
    assert reset["description"].startswith(
        "Puts every resource back to the items the server started with (--fake-users, --load)")
    assert paths["/"]["get"]["description"].startswith(
        'Where things are: each resource\'s path by its name, such as {"users": "/users"}')


def test_a_route_a_learner_adds_is_tagged_with_the_first_resource_served():
    added = rest_users.route("/ping", r"/ping", {"GET": "ping"})
    assert rest_users.described_action(added, "ping", [TASKS]).tag == "tasks"
    assert rest_users.described_action(added, "ping", [USERS, TASKS]).tag == "users"


def test_a_patch_example_is_made_from_the_resources_own_fields(tmp_path):
    running = start_server(file=write_db_json(tmp_path, {"users": [{"id": 1, "username": "bob"}]}))
    try:
        schemas = call(running, "GET", "/openapi.json").json()["components"]["schemas"]
    finally:
        stop_server(running)
    assert schemas["UserPatch"]["examples"] == [{"username": "bob"}]


def test_users_given_as_a_list_go_to_the_first_resource_served(tmp_path):
    running = start_server(resources=[TASKS], users=[{"title": "milk"}])
    try:
        assert call(running, "GET", "/tasks/1").json() == {"id": 1, "title": "milk", "done": None}
    finally:
        stop_server(running)
    (tmp_path / "tasks.json").write_text('[{"title": "bread", "done": true}]')
    running = start_server(resources=[TASKS], load=str(tmp_path / "tasks.json"))
    try:
        assert call(running, "GET", "/tasks/1").json() == {"id": 1, "title": "bread", "done": True}
    finally:
        stop_server(running)


def test_user_names_the_values_of_the_users_declaration_a_learner_changed(tmp_path):
    with open(os.path.join(HERE, "rest_users.py"), encoding="utf-8") as file:
        source = file.read().replace('example="ada@example.com"),\n])',
                                     'example="ada@example.com"),\n    Field("phone"),\n])')
    assert 'Field("phone")' in source
    module = module_from_source(tmp_path, "users_with_phone", source)
    item = module.new_item(module.USERS, 1, {"name": "Ada", "email": "a@b.c", "phone": "1"})
    assert module.User(*item) == item and module.User(*item).phone == "1"


def test_the_tour_is_offered_only_where_name_and_email_are_all_an_item_needs(tmp_path):
    strict = Resource("members", [Field("name", required=True), Field("email", required=True),
                                 Field("phone", required=True)])
    for resources, offered in (([AUTHORS], True), ([strict], False), ([TASKS], False)):
        running = start_server(resources=resources)
        try:
            page = call(running, "GET", "/", headers={"Accept": "text/html"}).text()
        finally:
            stop_server(running)
        assert ('id="tour-button"' in page) == offered, resources[0].collection


def test_the_explorer_sends_a_field_whose_input_would_share_the_id_notes_name(browser, tmp_path):
    running = start_server(file=write_db_json(tmp_path, {"notes": [
        {"id": 1, "title": "first", "id-note": "a"}]}))
    try:
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        browser.wait_for("document.getElementById('total').textContent !== ''")
        browser.run("document.getElementById('user-title').value = 'second';"
                    "document.querySelector('input[data-field=\"id-note\"]').value = 'b';"
                    "document.getElementById('send-POST').click()")
        browser.wait_for("document.querySelectorAll('#rows tr').length === 2")
        assert call(running, "GET", "/notes/2").json() == {"id": 2, "title": "second",
                                                             "id-note": "b"}
    finally:
        stop_server(running)


def test_a_collection_whose_name_does_not_end_in_s_is_served_under_its_own_name(tmp_path):
    path = write_db_json(tmp_path, {"people": [{"id": 1, "name": "Ann"}],
                                    "σχόλια": [{"id": 1, "text": "γεια"}]})
    running = start_server(file=path)
    try:
        assert call(running, "GET", "/people/1").json() == {"id": 1, "name": "Ann"}
        assert post(running, "/people", {"name": "Bob"}) == {"id": 2, "name": "Bob"}
        reply = call(running, "GET", "/people/2", headers={"Accept": "application/xml"})
        assert reply.body == b"<people><id>2</id><name>Bob</name></people>"
        assert assert_problem(call(running, "GET", "/people/9"), 404)["detail"] == (
            "There is no people with id 9.")
        assert call(running, "GET", "/%CF%83%CF%87%CF%8C%CE%BB%CE%B9%CE%B1/1").json() == {
            "id": 1, "text": "γεια"}
    finally:
        stop_server(running)
    assert json.loads(read_back(path).decode())["people"][1] == {"id": 2, "name": "Bob"}
    running = start_server(load=path)  # --load reads it too
    try:
        assert call(running, "GET", "/people/2").json() == {"id": 2, "name": "Bob"}
    finally:
        stop_server(running)


def test_resources_named_in_other_scripts_get_schema_names_of_their_own(tmp_path):
    running = start_server(file=write_db_json(tmp_path, {"ποστs": [{"id": 1, "title": "a"}],
                                                         "αβγs": [{"id": 1, "b": 2}]}))
    try:
        document = call(running, "GET", "/openapi.json").json()
    finally:
        stop_server(running)
    schemas = document["components"]["schemas"]
    assert all(re.fullmatch(r"[a-zA-Z0-9.\-_]+", name) for name in schemas), sorted(schemas)
    refs = re.findall(r'"#/components/schemas/([^"]*)"', json.dumps(document))
    assert set(refs) <= set(schemas)
    titles = {name: schema for name, schema in schemas.items()
              if schema.get("type") == "object" and "title" in schema.get("properties", {})}
    bees = {name: schema for name, schema in schemas.items()
            if schema.get("type") == "object" and "b" in schema.get("properties", {})}
    assert titles and bees and not set(titles) & set(bees)


def test_fake_users_with_no_resource_that_can_be_faked_is_refused():
    with pytest.raises(ValueError) as raised:
        rest_users.make_server(port=0, resources=[TASKS], fake_users=5)
    assert str(raised.value) == ("fake_users makes up items of a resource whose fields say how "
                                 "(users'), and none served does: tasks")


def test_a_singular_resource_ending_in_s_keeps_its_key_as_its_item(tmp_path):
    running = start_server(file=write_db_json(tmp_path, {"settings": {"theme": "dark"}}))
    try:
        reply = call(running, "GET", "/settings", headers={"Accept": "application/xml"})
    finally:
        stop_server(running)
    assert (reply.status, reply.body) == (200, b"<settings><theme>dark</theme></settings>")


def test_a_load_file_that_is_not_json_names_the_first_resource_served(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text("[{")
    with pytest.raises(ValueError) as raised:
        rest_users.make_server(port=0, resources=[TASKS], load=str(path))
    assert str(raised.value).startswith(
        "%s: is not a JSON array of tasks or object of resources: " % path)
