"""curl's own command lines, run by curl and by the client side by side.

Each line of the table runs twice at once: as `curl LINE` (Debian's curl 7.88, a system
program as Chromium is for the explorer's tests) and as `python rest_client.py LINE`, each
in a fresh folder holding the same input files, each against local recording servers of
its own. Both must give the same exit status, the same bytes on stdout, the same files, and
the same requests on the wire. Then the cases where the client must not damage anything, and its
memory on large transfers. The tests skip when curl is not installed.
"""

import base64
import collections
import concurrent.futures
import gzip
import hashlib
import io
import os
import queue
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urlsplit

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = [sys.executable, os.path.join(HERE, "rest_client.py")]
CURL = shutil.which("curl", path="/usr/bin") or shutil.which("curl")
MIB = 1 << 20

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

class RecordingHandler(BaseHTTPRequestHandler):
    """Answers by the path's first segment; every request goes into server.received."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

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
        """The request's body, chunked or by length; a sink's is counted and hashed, not kept."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            pieces = iter(self.read_chunk, b"")
        else:
            pieces = self.read_length(int(self.headers.get("Content-Length") or 0))
        self.digest, self.length, kept = hashlib.sha256(), 0, []
        for piece in pieces:
            self.digest.update(piece)
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
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

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
        self.reply(200, b"%d %s\n" % (self.length, self.digest.hexdigest().encode()))


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


def stop_servers(servers):
    """Stop what start_servers started."""
    for server in (servers.here, servers.other):
        server.shutdown()
        server.server_close()
    servers.unheard.close()


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
ENVIRONMENT = dict({name: value for name, value in os.environ.items()
                    if "proxy" not in name.lower() and name != "API_KEY"},
                   HOME=os.path.join(tempfile.gettempdir(), "no-such-home"))


def environment(**added):
    """ENVIRONMENT with added."""
    return dict(ENVIRONMENT, **added)


def run_line(program, line, servers, folder, stdin=b"", env=None):
    """Run program with the line's arguments in a folder holding INPUTS; what it did."""
    return finish_line(start_line(program, line, servers, folder, env), line, servers,
                       folder, stdin)


def start_line(program, line, servers, folder, env=None):
    """Start program with the line's arguments in a folder holding INPUTS."""
    os.makedirs(folder, exist_ok=True)
    for name, data in INPUTS.items():
        with open(os.path.join(folder, name), "wb") as file:
            file.write(data)
    reset(servers)
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


WORKERS = 4  # lines run at once: most of a line's time is Python starting up


@pytest.fixture(scope="module")
def ran(curl, request, tmp_path_factory):
    """For each table line this session runs, a future of what curl and the client did:
    WORKERS lines at a time, each on two sets of servers of its own."""
    chosen = [(item.callspec.params["line"], item.callspec.params["stdin"])
              for item in request.session.items  # in the order the tests will ask
              if getattr(item, "originalname", None) == "test_a_curl_line_does_what_curl_does"]
    free = queue.Queue()
    for _ in range(WORKERS):
        free.put((start_servers(), start_servers()))
    folder = tmp_path_factory.mktemp("lines")  # made here: mktemp is not safe in threads
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        yield {line: pool.submit(run_beside_curl, curl, line, free, folder / str(number))
               for number, line in enumerate(chosen)}
    while not free.empty():
        for servers in free.get():
            stop_servers(servers)


def run_beside_curl(curl, line, free, folder):
    """Run the line (line, stdin) with curl and with the client at once, in two folders
    under folder; what each did."""
    (line, stdin), servers = line, free.get()
    try:
        folders = str(folder / "curl"), str(folder / "client")
        started = [start_line(program, line, where, place)
                   for program, where, place in zip((curl, CLIENT), servers, folders)]
        return [finish_line(process, line, where, place, stdin)
                for process, where, place in zip(started, servers, folders)]
    finally:
        free.put(servers)


@pytest.mark.parametrize("line, stdin", CURL_LINES)
def test_a_curl_line_does_what_curl_does(ran, line, stdin):
    """The same exit status, stdout bytes, files and requests on the wire as curl's."""
    by_curl, by_client = ran[line, stdin].result()
    assert by_client.status == by_curl.status
    assert by_client.stdout == by_curl.stdout
    assert by_client.files == by_curl.files
    assert by_client.wire == by_curl.wire


def test_the_table_has_sixty_lines_or_more():
    assert len(CURL_LINES) >= 60


def test_an_option_outside_the_set_is_a_usage_error_naming_it_and_nothing_is_sent(
        servers, tmp_path):
    """curl knows hundreds of options the client does not; any it does not know is exit 2,
    before anything is sent."""
    done = run_line(CLIENT, "-s --limit-rate 1M $URL/echo", servers, str(tmp_path / "run"))
    assert (done.status, done.stdout, done.wire) == (2, b"", [])
    assert b"--limit-rate" in done.stderr


# -- nothing damaged ---------------------------------------------------------------------------
# Never /dev/null itself: a client that writes beside its target and renames would replace
# the machine's /dev/null with a file when run as root. Each test makes its own special file.

OUTPUT_FORMS = {"curl": "-s -o %s $URL/echo", "C4": "GET $URL/echo -o %s"}


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
        servers, tmp_path, form):
    """`-o /dev/null` as root, on a device of the test's own; a FIFO where mknod is not
    allowed."""
    node = str(tmp_path / "null")
    if not own_null_device(node):
        return check_output_to_a_fifo(servers, tmp_path, form)
    done = run_line(CLIENT, OUTPUT_FORMS[form] % "null", servers, str(tmp_path))
    assert (done.status, done.stdout) == (0, b"")
    mode = os.lstat(node)
    assert stat.S_ISCHR(mode.st_mode) and mode.st_rdev == os.makedev(1, 3)
    assert sorted(os.listdir(str(tmp_path))) == sorted(["null"] + list(INPUTS))


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(servers, tmp_path, form):
    check_output_to_a_fifo(servers, tmp_path, form)


def check_output_to_a_fifo(servers, tmp_path, form):
    """-o onto a FIFO: the reply goes through it, and it stays a FIFO."""
    reader = fifo_with_reader(str(tmp_path / "pipe"))
    done = run_line(CLIENT, OUTPUT_FORMS[form] % "pipe", servers, str(tmp_path))
    assert (done.status, done.stdout, drained(reader)) == (0, b"", b"GET /echo\n")
    assert stat.S_ISFIFO(os.lstat(str(tmp_path / "pipe")).st_mode)
    assert sorted(os.listdir(str(tmp_path))) == sorted(["pipe"] + list(INPUTS))


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_through_a_symbolic_link_replaces_the_file_it_names(servers, tmp_path, form):
    (tmp_path / "target.txt").write_bytes(b"old\n")
    os.symlink("target.txt", str(tmp_path / "link.txt"))
    done = run_line(CLIENT, OUTPUT_FORMS[form] % "link.txt", servers, str(tmp_path))
    assert (done.status, done.stdout) == (0, b"")
    assert os.readlink(str(tmp_path / "link.txt")) == "target.txt"
    assert (tmp_path / "target.txt").read_bytes() == b"GET /echo\n"
    assert sorted(os.listdir(str(tmp_path))) == sorted(["link.txt", "target.txt"] + list(INPUTS))


@pytest.mark.parametrize("form", sorted(OUTPUT_FORMS))
def test_output_through_a_link_to_a_fifo_writes_into_the_fifo(servers, tmp_path, form):
    """As `-o /dev/stdout` does: a link to what the shell gave as stdout, here a FIFO."""
    reader = fifo_with_reader(str(tmp_path / "pipe"))
    os.symlink("pipe", str(tmp_path / "stdout"))
    done = run_line(CLIENT, OUTPUT_FORMS[form] % "stdout", servers, str(tmp_path))
    assert (done.status, done.stdout, drained(reader)) == (0, b"", b"GET /echo\n")
    assert os.readlink(str(tmp_path / "stdout")) == "pipe"
    assert stat.S_ISFIFO(os.lstat(str(tmp_path / "pipe")).st_mode)


@pytest.mark.parametrize("line, status", [("-sf -o existing.json $URL/status/503", 22),
                                          ("GET $URL/status/503 --fail -o existing.json", 1)])
def test_fail_leaves_an_existing_file_untouched(servers, tmp_path, line, status):
    done = run_line(CLIENT, line, servers, str(tmp_path))
    assert (done.status, done.stdout) == (status, b"")
    assert done.files == INPUTS


# -- the environment: httpoxy and API_KEY ------------------------------------------------------

@pytest.mark.parametrize("line", ["-s $URL/echo", "GET $URL/echo"])
def test_an_upper_case_http_proxy_is_not_read_for_http(servers, tmp_path, line):
    """In CGI a request's `Proxy:` header becomes HTTP_PROXY (httpoxy, CVE-2016-5385), so
    only the lower-case http_proxy names a proxy for plain HTTP, as in curl."""
    env = environment(HTTP_PROXY=servers.other.url, REQUEST_METHOD="GET")
    done = run_line(CLIENT, line, servers, str(tmp_path), env=env)
    assert (done.status, done.stdout) == (0, b"GET /echo\n")
    assert [target for method, target, headers, body in done.wire] == ["/echo"]


@pytest.mark.parametrize("line", ["-s $URL/echo", "GET $URL/echo"])
def test_the_lower_case_http_proxy_is_used(servers, tmp_path, line):
    env = environment(http_proxy=servers.other.url)
    done = run_line(CLIENT, line, servers, str(tmp_path), env=env)
    absolute = "http://127.0.0.1:$PORT/echo"  # the absolute form a proxy gets (RFC 9112 §3.2.2)
    assert (done.status, done.stdout) == (0, b"GET %s\n" % absolute.encode())
    assert [target for method, target, headers, body in done.wire] == [absolute]


def authorization(request):
    """The Authorization a compared request carried, or None."""
    return dict(request[2]).get("authorization")


@pytest.mark.parametrize("line", ["GET $URL/echo -u ada:pw",
                                  "GET http://ada:pw@127.0.0.1:$PORT/echo"])
def test_credentials_on_the_command_line_win_over_api_key(servers, tmp_path, line):
    done = run_line(CLIENT, line, servers, str(tmp_path), env=environment(API_KEY="secret"))
    assert done.status == 0
    assert [authorization(request) for request in done.wire] == [
        "Basic " + base64.b64encode(b"ada:pw").decode()]


def test_api_key_goes_to_the_host_given_and_not_after_a_redirect_to_another(
        servers, tmp_path):
    line = "GET '$URL/redirect/302?to=$OTHER/echo'"
    done = run_line(CLIENT, line, servers, str(tmp_path), env=environment(API_KEY="secret"))
    assert (done.status, done.stdout) == (0, b"GET /echo\n")
    assert [(dict(request[2])["host"], authorization(request)) for request in done.wire] == [
        ("127.0.0.1:$PORT", "Bearer secret"), ("127.0.0.2:$OTHER_PORT", None)]


@pytest.mark.parametrize("line", ["-s $URL/echo", "-sL '$URL/redirect/302?to=$OTHER/echo'"])
def test_the_curl_form_does_not_read_api_key(servers, tmp_path, line):
    """curl does not know API_KEY, and a line written for curl may name any host."""
    done = run_line(CLIENT, line, servers, str(tmp_path), env=environment(API_KEY="secret"))
    assert (done.status, done.stdout) == (0, b"GET /echo\n")
    assert [authorization(request) for request in done.wire] == [None] * len(done.wire)


# -- memory: large transfers stream through ----------------------------------------------------

BIG = 256  # MiB downloaded: 4 times the limit; 1 GiB takes 1.5 s a run here even with curl
UPLOAD = 200  # MiB uploaded
LIMIT = 64 * 1024  # KiB of resident memory, ru_maxrss's unit on Linux


# A process's peak memory starts at that of the process it was forked from (Linux keeps the
# high-water mark across fork and exec), and pytest's alone is above the limit: so a small
# Python starts the client and reports the client's peak (wait4) on its last stderr line.
PEAK_OF_CHILD = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
child.returncode = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255
sys.stderr.write("\\npeak %d\\n" % usage.ru_maxrss)
sys.exit(child.returncode)
"""


def measured(line, servers, folder):
    """Run the client's line; its exit status, the first bytes and the count of bytes it
    wrote to stdout (read as they come, never kept), and its peak resident memory in KiB."""
    with open(os.path.join(folder, "stderr"), "w+b") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", PEAK_OF_CHILD] + CLIENT + arguments(line, servers),
            cwd=folder, stdout=subprocess.PIPE, stderr=stderr, env=environment())
        first, count = b"", 0
        for piece in iter(lambda: os.read(process.stdout.fileno(), MIB), b""):
            first, count = (first + piece)[:4096], count + len(piece)
        process.stdout.close()
        status = process.wait()
        stderr.seek(0)
        return status, first, count, int(stderr.read().split()[-1])


def limit_for(servers, folder):
    """64 MB on CPython; elsewhere (PyPy starts larger) 64 MB more than a 1 MiB transfer."""
    if sys.implementation.name == "cpython":
        return LIMIT
    return measured("-s -o - $URL/bulk/1", servers, folder)[3] + LIMIT


@pytest.mark.parametrize("line, head", [
    ("-s -o - $URL/bulk/%d" % BIG, 0),
    ("-s -i $URL/bulk/%d" % BIG, len(b"HTTP/1.1 200 OK\r\nServer: recording-server\r\n"
                                      b"Date: Thu, 26 Nov 2026 10:00:00 GMT\r\n"
                                      b"Content-Type: application/octet-stream\r\n"
                                      b"Content-Length: %d\r\n\r\n" % (BIG * MIB))),
    ("-s --retry 2 $URL/bulk/%d" % BIG, 0)])
def test_a_large_download_streams_through_stdout(servers, tmp_path, line, head):
    """256 MiB through stdout, after a head (-i) or ready for a retry (--retry), never
    held whole: 1 GiB, as the issue measured, takes 1.2 s a run here for the same answer."""
    status, first, count, peak = measured(line, servers, str(tmp_path))
    assert (status, count) == (0, head + BIG * MIB)
    assert first[head:head + 256] == bytes(range(256))
    assert peak < limit_for(servers, str(tmp_path))


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """UPLOAD MiB of zeros, sparse, so making it costs nothing; its SHA-256."""
    path = tmp_path_factory.mktemp("upload") / "big.bin"
    with open(str(path), "wb") as file:
        file.truncate(UPLOAD * MIB)
    digest, zeros = hashlib.sha256(), bytes(MIB)
    for _ in range(UPLOAD):
        digest.update(zeros)
    return str(path), digest.hexdigest()


@pytest.mark.parametrize("line", ["-s --data-binary @%s $URL/sink", "-s -T %s $URL/sink/"])
def test_a_large_upload_streams_from_its_file(servers, tmp_path, big_file, line):
    path, digest = big_file
    status, first, count, peak = measured(line % path, servers, str(tmp_path))
    assert (status, first) == (0, b"%d %s\n" % (UPLOAD * MIB, digest.encode()))
    assert peak < limit_for(servers, str(tmp_path))
