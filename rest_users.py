#!/usr/bin/env python3
"""A users REST service in one file, built on nothing but the Python standard library.

Run it with Python 3.6 or newer, or PyPy 3, and nothing to install: `python rest_users.py`
serves http://127.0.0.1:8000/users, kept in memory; `--help` lists the options.

The resource (the README walks through it with curl):

    GET    /users        the list: ?limit=&offset=&sort=&q=, and a filter per field
    POST   /users        create a user: 201 Created with a Location header
    GET    /users/{id}   one user, with an ETag (If-None-Match gives 304 Not Modified)
    PUT    /users/{id}   replace it (If-Match gives 412 when someone changed it meanwhile)
    PATCH  /users/{id}   change some fields (JSON merge patch, RFC 7396, or partial XML)
    DELETE /users/{id}   delete it: 200 with the user as it was

Up to the banner "Appendices: you can stop reading here" this file is the whole service
in plain Python, and runs on its own: UsersServer(("127.0.0.1", 8000)).serve_forever() serves
the RESOURCES, in memory. A request travels through it so:

 1. UsersServer, an http.server with a thread per connection, gives each connection a
    UsersHandler. http.server reads the request line and header fields, then calls do_GET,
    do_POST, ... which are all handle_api_request.
 2. route_request finds the route (find_route, in the table route_table derives from the
    resources), then checks who asks (check_caller: the API key), the method, and the
    format asked for (negotiate).
 3. The route's action does the work, named as Django REST Framework names them: list,
    create, retrieve, update, partial_update, destroy. create, for one, reads the body in
    JSON or XML (read_item_body), checks it (validate, by the resource's fields) and has the
    resource's store add the item.
 4. respond sends the answer, in JSON or XML (render_item), with write_response. What goes
    wrong on the way raises ApiError, which handle_api_request answers as an RFC 9457 problem.

Every decision is made once, here: a resource's fields in its declaration (USERS; another
resource is declared the same way, Resource("todos", [Field("title"), ...]), and appended to
RESOURCES gets every route, format, store and check), the routes in resource_routes, each
rule and message in one
function: to add a field to users, add its Field (and its check) to USERS. Each appendix adds
to the core by subclassing it and overriding hooks it leaves; none restates a decision:
 A. EdgeHandler: strict framing and the Host check (parse_request, read_head), the 413 and
    100-continue (before_reading_body), drained bodies (leave_unread_body), problems for
    http.server's own errors (send_error), the 408 (handle_one_request); the graceful stop.
 B. TeachingHandler: the 412's likely mistake (check_if_match), PUT's hint to PATCH
    (update), problem-only clients (negotiate, respond); the json type (TYPES).
 C. SQLiteStore; ReferenceHandler: references (check_write, check_delete), nested routes
    (route_table, list, create) and _embed and _expand (retrieve), a request's References
    (relate); CorsHandler (response_fields, answer_options); FakeApiHandler: --fail-rate
    (check_caller), --delay and the journal (write_response), /__admin/; --fake-users;
    --load of json-server's db.json, whose objects are SingularResources; DialectHandler:
    the list dialects of front-end libraries (read_list_query, render_page, page_headers);
    FileHandler, FileServer, FileKeptStore: `rest_users.py db.json` (read_item_body, next_id).
 D, E. ExplorerHandler (route_request) and OpenApiHandler add / and /openapi.json, derived
    from the routes and the resources' fields.
 F. FastHandler keeps the core's answers (find_route, format_for, render, page) and moves
    bytes with fewer calls (read_head, write_bytes); FastMemoryStore indexes unique values
    (owner) and references (candidates), and reads an unfiltered page while passes takes
    every item; FastDbFile keeps each item's text in the file (encode).
 G. PlainHandler composes Appendices A to E; DefaultHandler puts F before them.

Use it to learn, to test and as a fake API. http.server is not a hardened server: put a
real web server in front of it before the internet.
"""

import hmac
import json
import math
import operator
import re
import socket
import string
import threading
import traceback
import xml.etree.ElementTree as ElementTree
from collections import namedtuple
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from urllib.parse import parse_qsl, quote, urlencode
from xml.parsers import expat

MAX_NAME_LENGTH = 200
MAX_EMAIL_LENGTH = 254  # the longest address SMTP can carry (RFC 5321 §4.5.3.1.3)
MAX_ID = 2 ** 63 - 1  # SQLite's largest integer: a larger id can name no item

MEDIA_TYPES = JSON_TYPE, XML_TYPE, TEXT_XML_TYPE = (  # the formats: named here alone
    "application/json", "application/xml", "text/xml")
MERGE_PATCH = "application/merge-patch+json"  # a PATCH's JSON body (RFC 7396)
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
GIVEN_TWICE = "The query parameter %s is given more than once."  # a list's, a dialect's too
LIST_WORDS = ("limit", "offset", "sort", "q")  # a field of one of these names is no filter
DIGITS = re.compile("[0-9]+")  # ASCII digits only: str.isdigit() also takes "²"
ESCAPE = re.compile("%[0-9A-Fa-f]{2}")  # a percent-encoded byte (RFC 3986 §2.1)
WITHOUT_BODY = (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED)  # no content, no length
CHALLENGE = 'Bearer realm="users"'  # what a 401 asks for (RFC 6750 §3)


# -- Errors: raised where they are found, answered in one place (handle_api_request) -------
class ApiError(Exception):
    """An HTTP error: `errors` lists (field, message) pairs for a 422, `headers` go with it."""

    def __init__(self, status, detail, *, errors=(), headers=()):
        super().__init__(detail)
        self.status, self.detail = status, detail  # an HTTPStatus
        self.errors, self.headers = list(errors), list(headers)


class NotFound(ApiError):
    """404: no item of the resource has this id."""

    def __init__(self, resource, item_id):
        super().__init__(HTTPStatus.NOT_FOUND,
                         "There is no %s with id %s." % (resource.item, item_id))


class Taken(ApiError):
    """409: another item already has this value of a unique field."""

    def __init__(self, resource, field, value):
        caseless = " (compared ignoring case)" if field.ignores_case else ""
        super().__init__(HTTPStatus.CONFLICT, "Another %s already has the %s %s%s." % (
            resource.item, field.name, value, caseless))


class Invalid(ApiError):
    """422: fields of an item are not valid; `errors` says what is wrong with each."""

    def __init__(self, resource, errors):
        names = ", ".join(dict.fromkeys(field for field, _ in errors))
        super().__init__(HTTPStatus.UNPROCESSABLE_ENTITY, "The %s is not valid; see the errors "
                         "for %s." % (resource.item, names), errors=errors)


class NoIdLeft(ApiError):
    """507: the resource has given its last id, and ids are never given twice."""

    def __init__(self, resource):
        super().__init__(HTTPStatus.INSUFFICIENT_STORAGE, "The %s have no id left: ids end at %d,"
                         " and the last has been given. Nothing was stored." % (
                             resource.collection, MAX_ID))


# -- The routes: which action of UsersHandler answers which verb on which path -------------
ITEM_ID = re.compile(r"[1-9][0-9]{0,18}")  # decimal, no leading zero, at most 19 digits

# A route serves its resource (None for the others); `cors`: whether a page on another origin
# may read its answers (--cors); a nested route's parent: (the parent Resource, the field)
Route = namedtuple("Route", "path pattern actions allow resource cors parent")


def route(path, pattern, actions, resource=None, cors=True, parent=None):
    """A Route: its OpenAPI path, pattern, action per verb, Allow (HEAD with GET)."""
    verbs = list(actions) + (["HEAD"] if "GET" in actions else []) + ["OPTIONS"]
    return Route(path, re.compile(pattern), actions, ", ".join(verbs), resource, cors, parent)


# The actions on a resource, named as Django REST Framework's router names them
COLLECTION_ACTIONS = {"GET": "list", "POST": "create"}
ITEM_ACTIONS = {"GET": "retrieve", "PUT": "update", "PATCH": "partial_update", "DELETE": "destroy"}


def resource_routes(resource):
    """A resource's routes: its collection (/users) and its items (/users/{id})."""
    path = re.escape(resource.path)
    return [route(resource.path, path + "/?", COLLECTION_ACTIONS, resource),
            route(resource.path + "/{id}", r"%s/(%s)/?" % (path, ITEM_ID.pattern),
                  ITEM_ACTIONS, resource)]


def is_under(path, prefix):
    """Whether a path is the prefix or under it: /users/1 is under /users, /usersX is not."""
    return path == prefix or path.startswith(prefix + "/")


def nothing_at(path, resources):
    """The 404 for a path no route takes, saying where the resources are."""
    where = in_words(["the %s %s at %s" % (resource.collection, "is" if resource.singular
                                            else "are", resource.path) for resource in resources])
    return ApiError(HTTPStatus.NOT_FOUND, "There is nothing at %s; %s." % (printable(path), where))


# -- The handler: one request after another on one connection ------------------------------
class UsersHandler(BaseHTTPRequestHandler):
    """Answers one connection's requests, one after another; settings are on self.server."""

    protocol_version = "HTTP/1.1"  # persistent connections
    wbufsize = -1  # a response gathers in a buffer, flushed after each request: one write
    server_version = "rest_users/1.0"
    body_types = MEDIA_TYPES  # what a body may be, besides a PATCH's merge patch
    headers = None  # the request's header fields, once http.server has read them
    route = resource = store = None  # the request's Route, once found, its Resource and store
    body_read = False  # whether this request's body has been read

    def handle_api_request(self):
        """Answer the request; any error becomes a problem response here."""
        self.body_read, self.route, self.resource, self.store = False, None, None, None
        self.related = NOTHING_RELATED  # until relate() reads what the request relates to
        try:
            self.route_request()
        except ApiError as error:
            if isinstance(error, BadQuery):  # raised where the resource is not known: add it
                error.detail += query_help(self.resource)
            self.send_problem(error)
        except (socket.timeout, ConnectionError):
            raise  # the client is gone or stalled: there is nobody to answer
        except Exception:
            self.log_error("unexpected error:\n%s", traceback.format_exc())
            self.send_problem(ApiError(HTTPStatus.INTERNAL_SERVER_ERROR,
                                       "The server met an unexpected error; it has been logged."))

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_api_request

    def route_request(self):
        """Check who asks, the path, the method and the format, in that order; then act."""
        path, _, self.query = self.path.partition("?")
        if "%" in path:  # %cf is %CF (RFC 3986 §6.2.2.1), as curl writes /ποστs: one path
            path = ESCAPE.sub(lambda escape: escape.group().upper(), path)
            self.path = path + self.path[len(path):]  # for the key, the journal, all after
        self.route, arguments = self.find_route(path)  # so the 401 knows it
        self.check_caller()
        if self.route is None:
            raise nothing_at(path, self.server.resources)
        self.resource = self.route.resource
        if self.resource is not None:
            self.store = self.server.stores[self.resource.collection]
            self.resource = self.store.resource  # a file's gains fields as writes bring keys
        if self.command == "OPTIONS":
            return self.answer_options(self.route)
        action = self.route.actions.get("GET" if self.command == "HEAD" else self.command)
        if action is None:
            raise ApiError(HTTPStatus.METHOD_NOT_ALLOWED, "%s does not take %s; it takes %s." % (
                path, self.command, self.route.allow), headers=[("Allow", self.route.allow)])
        self.format = self.negotiate()
        getattr(self, action)(*arguments)

    def find_route(self, path):
        """Return the route for a path and the arguments it captures (ids), or (None, None)."""
        for candidate in self.server.routes:
            match = candidate.pattern.fullmatch(path)
            ids = map(int, filter(ITEM_ID.fullmatch, match.groups())) if match else ()
            if match and max(ids, default=0) <= MAX_ID:
                return candidate, [int(group) if ITEM_ID.fullmatch(group) else group
                                   for group in match.groups()]  # or text: Appendix C's ids
        return None, None

    def check_caller(self):
        """A 401 (RFC 6750), before any other check, for a keyed path asked without the key."""
        key, path = self.server.api_key, self.path.partition("?")[0]
        if key is None or self.command == "OPTIONS" or not any(
                is_under(path, keyed) for keyed in self.server.keyed_paths):
            return
        scheme, _, token = (self.headers.get("Authorization") or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip() or " " in token.strip():
            raise ApiError(HTTPStatus.UNAUTHORIZED,
                           "This request needs the header Authorization: Bearer <API key>.",
                           headers=[("WWW-Authenticate", CHALLENGE)])
        # compare_digest takes as long for a near miss as for a far one: no timing hints
        if not hmac.compare_digest(token.strip().encode("latin-1"), key.encode("utf-8")):
            raise ApiError(HTTPStatus.UNAUTHORIZED, "The Bearer token is not the key.", headers=[
                ("WWW-Authenticate", CHALLENGE + ', error="invalid_token"')])

    added_routes = []  # the routes an appendix adds (/, /openapi.json): Appendix G lists them

    @classmethod
    def route_table(cls, resources=None):
        """Its routes: each resource's (RESOURCES' if none is named), then the appendices'."""
        return [found for resource in resources or RESOURCES
                for found in resource.routes] + cls.added_routes

    @classmethod
    def keyed_paths(cls, resources):
        """The paths that, with the paths under them, need the key when there is one."""
        return tuple(resource.path for resource in resources)

    # -- the actions: what each verb does to a resource -----------------------------------

    def list(self):
        """GET /users: a page of items, with X-Total-Count and Link (RFC 8288)."""
        body, headers = self.page(self.query)
        self.respond(HTTPStatus.OK, body, self.format.content_type, headers)

    def page(self, query_string):
        """The body and headers of the page of items a query string asks for."""
        query, kept = self.read_list_query(self.relate(query_string))
        kept += self.related.pairs
        query = query._replace(filters=query.filters + tuple(  # the path's: /users/1/todos
            Filter(name, "eq", (value,)) for name, value in self.related.given.items()))
        total, items = self.store.list(query)
        return self.render_page(query, total, items), self.page_headers(query, total, items, kept)

    def relate(self, query_string=""):
        """Set self.related, what the path and query add to items; return the query they leave."""
        return query_string

    def read_list_query(self, query_string):
        """The ListQuery a query string asks for, and the pairs its page links keep."""
        pairs = query_pairs(query_string)
        kept = [(name, value) for name, value in pairs if name not in ("limit", "offset")]
        return parse_list_query(self.resource, pairs), kept

    def render_page(self, query, total, items):
        """A page of items as bytes in the negotiated format."""
        return render_items(self.store.resource, items, self.format, self.related.document,
                            self.related.element)  # the store's, as new as the items

    def page_headers(self, query, total, items, kept):
        """X-Total-Count, and the Link header (RFC 8288) to the first, last, next... pages."""
        path = self.related.path or self.resource.path  # a nested route's own: /users/1/todos
        return [("X-Total-Count", str(total)), ("Link", page_links(path, query, total, kept))]

    def create(self):
        """POST /users: 201 with the new item and its Location."""
        self.relate()
        pairs = self.read_item_body()  # first: it may give the resource a field (a file's)
        fields = validate(self.resource, pairs, given=self.related.given)
        item = self.store.create(fields, check=self.check_write)
        self.send_item(HTTPStatus.CREATED, item,
                       [("Location", "%s/%s" % (self.resource.path, item.id))])

    def retrieve(self, item_id):
        """GET /users/{id}: the item, or 304 when the client's copy is current."""
        item = self.store.get(item_id)
        if item is None:
            raise NotFound(self.resource, item_id)
        tag, if_none_match = entity_tag(item, self.format), self.headers.get("If-None-Match")
        if if_none_match is not None and etag_matches(if_none_match, tag, weak=True):
            return self.respond(HTTPStatus.NOT_MODIFIED, headers=[("ETag", tag)])
        self.send_item(HTTPStatus.OK, item)

    def update(self, item_id, partial=False):
        """PUT /users/{id}: replace every field (no create: 404 when missing); PATCH's too."""
        pairs = self.read_item_body(merge_patch=partial)

        def changed_fields(current):  # If-Match, the fields, the rest: one step in the store
            self.check_if_match(current)
            fields = validate(self.resource, pairs, partial=partial,
                              path_id=None if self.resource.singular else item_id)
            mergers, position = self.resource.mergers, self.resource.position
            for name in mergers.keys() & set(fields) if partial else ():
                fields[name] = mergers[name](current[position[name]], fields[name])
            self.check_write(new_version(self.resource, current, fields))
            return fields
        self.send_item(HTTPStatus.OK, self.store.update(item_id, changed_fields))

    def partial_update(self, item_id):
        """PATCH /users/{id}: change the fields given (a JSON merge patch, or partial XML)."""
        self.update(item_id, partial=True)

    def destroy(self, item_id):
        """DELETE /users/{id}: 200 with the item as it was, and no ETag (RFC 9110 §9.3.5); a
        client that sends Prefer: return=minimal gets 204 without it (RFC 7240 §4.2)."""
        item = self.store.delete(item_id, self.check_delete)
        if preferences(self.headers.get_all("Prefer", [])).get("return", "").lower() == "minimal":
            return self.respond(HTTPStatus.NO_CONTENT,
                                headers=[("Preference-Applied", "return=minimal")])
        self.respond(HTTPStatus.OK, self.render(item), self.format.content_type)

    def check_write(self, item):
        """A write's checks beyond its fields': an answer in XML must carry its json fields."""
        beyond = self.format is not JSON and beyond_xml(self.resource, item)
        if beyond:
            raise Invalid(self.resource, [(name, BEYOND_XML) for name in beyond])

    def check_delete(self, item):
        """A delete's checks: If-Match (Appendix C adds that no item refers to it)."""
        self.check_if_match(item)

    def answer_options(self, found):
        """OPTIONS: 204 with Allow, whether or not an item exists: it describes the route."""
        self.respond(HTTPStatus.NO_CONTENT, headers=[("Allow", found.allow)])

    # -- checks ----------------------------------------------------------------------------

    def negotiate(self):
        """The response format the Accept header asks for; 406 when it takes neither."""
        fmt = self.format_for(self.headers.get("Accept", ""))
        if fmt is None:
            raise ApiError(HTTPStatus.NOT_ACCEPTABLE, "This service answers in %s, %s or %s, and "
                           "Accept takes none of them." % MEDIA_TYPES)
        return fmt

    def format_for(self, accept):
        """The Format an Accept header's value asks for, or None."""
        return choose_format(accept)

    def read_body(self):
        """Read the body, as long as its Content-Length says."""
        length = self.content_length()
        self.before_reading_body(length)
        self.body_read = True
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            raise ApiError(HTTPStatus.BAD_REQUEST, "The body ended before Content-Length bytes.")
        return body

    def content_length(self):
        """The Content-Length (0 when absent); a 400 unless one value of digits (RFC 9112 §6.3)."""
        values = {value.strip(" \t") for value in self.headers.get_all("Content-Length", ["0"])}
        if len(values) != 1 or not DIGITS.fullmatch(next(iter(values))):
            self.close_connection = True  # the framing cannot be trusted
            raise ApiError(HTTPStatus.BAD_REQUEST,
                           "Content-Length must be one whole number of bytes.")
        return int(values.pop())

    def before_reading_body(self, length):
        """Nothing to do here (the edge refuses a large body, and sends 100 Continue)."""

    def read_item_body(self, merge_patch=False):
        """Read the body and parse it as its Content-Type says into (field, value) pairs."""
        body = self.read_body()
        if not body:
            raise ApiError(HTTPStatus.BAD_REQUEST,
                           "This request needs %s in its body." % a_or_an(self.resource.item))
        media_type, charset = parse_content_type(self.headers.get("Content-Type", ""))
        taken = self.body_types + ((MERGE_PATCH,) if merge_patch else ())
        if media_type not in taken or charset not in (None, "utf-8"):
            raise ApiError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "The body must be %s (and for "
                           "PATCH %s), in UTF-8, not %s." % (
                               in_words(self.body_types, "or"), MERGE_PATCH,
                               printable(self.headers.get("Content-Type", "untyped"))))
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(HTTPStatus.BAD_REQUEST, "The body is not valid UTF-8.") from None
        return self.read_fields(media_type, text)

    def read_fields(self, media_type, text):
        """A body's text as (field, value) pairs, each of XML typed as its field reads text."""
        if media_type in (XML_TYPE, TEXT_XML_TYPE):
            return read_xml_fields(text, self.resource)
        return read_json_fields(text, self.resource)

    def check_if_match(self, item):
        """A 412 unless If-Match names the current tag: no change overwritten unseen."""
        header = self.headers.get("If-Match")
        if header is not None and not etag_matches(header, entity_tag(item, self.format),
                                                   weak=False):
            raise ApiError(HTTPStatus.PRECONDITION_FAILED, "The %s has changed since you read "
                           "it (If-Match does not name its current ETag); GET it again and "
                           "retry." % self.resource.item)

    # -- writing responses -----------------------------------------------------------------

    def render(self, item):
        """One item in the negotiated format."""
        return render_item(self.store.resource, item, self.format, self.related.document,
                           self.related.element)  # the store's, as new as the item

    def send_item(self, status, item, headers=()):
        """Send one item with its ETag."""
        self.respond(status, self.render(item), self.format.content_type,
                     [("ETag", entity_tag(item, self.format))] + list(headers))

    def send_problem(self, error):
        """Send an ApiError as problem details, in XML when the client prefers XML."""
        fmt = self.problem_format()
        self.respond(error.status, render_problem(error, fmt), fmt.problem_type, error.headers)

    def problem_format(self):
        """The format of an error: the one the client prefers, else JSON."""
        return choose_format(self.headers.get("Accept", "") if self.headers else "") or JSON

    def respond(self, status, body=b"", content_type=None, headers=()):
        """Send a whole response: status line, header fields and body (none for HEAD)."""
        self.write_response(status, self.response_fields(status, body, content_type, headers),
                            body)

    def response_fields(self, status, body, content_type, headers):
        """The header fields of a response, besides the Server and Date that every one has."""
        if not self.body_read and not self.close_connection:
            self.leave_unread_body()
        fields = [("Vary", self.server.vary), *headers]
        if content_type:
            fields.append(("Content-Type", content_type))
        if status not in WITHOUT_BODY:
            fields.append(("Content-Length", str(len(body))))  # none on 204 (RFC 9110 §8.6)
        if self.close_connection:
            fields.append(("Connection", "close"))
        return fields

    def leave_unread_body(self):
        """Close after this answer: an unread body would be read as a request (RFC 9112 §9.3)."""
        if self.headers is not None and ("Transfer-Encoding" in self.headers or
                                         self.headers.get("Content-Length", "0").strip() != "0"):
            self.close_connection = True

    def write_response(self, status, fields, body):
        """Log the response, then send its status line, header fields and body in one write."""
        self.log_request(status)
        head = ["HTTP/1.1 %d %s" % (status, status.phrase), "Server: " + self.version_string(),
                "Date: " + self.date_time_string()]
        head += ["%s: %s" % field for field in fields]
        head.append("\r\n")  # a blank line ends the head (RFC 9112 §2.1)
        self.write_bytes("\r\n".join(head).encode("latin-1")
                         + (b"" if self.command == "HEAD" else body))

    def write_bytes(self, data):
        """Write bytes to the client (wfile gathers them until the request is answered)."""
        self.wfile.write(data)

    def setup(self):
        """Send each write at once: Nagle's algorithm would hold a second one 40 ms for an ACK."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


# -- Users: their fields, declared once, and the checks of each ------------------------
# What XML 1.0 cannot carry (C0 controls, surrogates, U+FFFE, U+FFFF), and tab, CR, LF, DEL
FORBIDDEN_CHARACTERS = re.compile("[\x00-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
ASCII_LOWERCASE = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
WHITE_SPACE = re.compile(r"\s")  # the characters str.isspace() takes


def caseless_key(text):
    """Text as a caseless field (an email) compares it: ASCII letters in lower case, as NOCASE."""
    return text if text.lower() == text else text.translate(ASCII_LOWERCASE)  # no second copy


def printable(text):
    """Text safe to quote in an error message: repr() shows control characters as escapes."""
    return text if text.isprintable() else repr(text)


def describe(value):
    """Name the kind of a value a client sent; a body reader's own kind names itself."""
    kinds = {type(None): "null", bool: "true or false", int: "a number", float: "a number",
             ObjectPairs: "an object", dict: "an object", list: "an array", str: "a string"}
    return kinds.get(type(value)) or str(value)


def check_text(value):
    """Say what is wrong with a string field's value in general, or return None."""
    if not isinstance(value, str):
        return "must be a string, not " + describe(value)
    if FORBIDDEN_CHARACTERS.search(value):
        return "must not contain control characters (tab, newline, ...) or non-characters"
    return None


def check_name(value):
    """Say what is wrong with a name besides its type and length, or return None."""
    if not value or value.isspace():
        return "must not be empty or only white space"
    return None


def check_email(value):
    """Say what is wrong with an email address besides its type and length, or return None."""
    if WHITE_SPACE.search(value):
        return "must not contain white space"
    local, _, domain = value.partition("@")
    if not local or not domain or "@" in domain:
        return "must have one @ with text on both sides, like ada@example.com"
    return None


def check_integer(value):
    """Say what is wrong with an integer field's value in general, or return None."""
    if type(value) is float:  # 36.5, 1.0 and 1e3 alike: JSON's integers have neither
        return "must be a whole number, written without a fraction or an exponent"
    if type(value) is not int:  # bool is an int too, but not an integer here
        return "must be a whole number, not " + describe(value)
    if not -MAX_ID - 1 <= value <= MAX_ID:
        return "must be a whole number from %d to %d" % (-MAX_ID - 1, MAX_ID)
    return None


def check_number(value):
    """Say what is wrong with a number field's value in general, or return None."""
    if type(value) not in (int, float):
        return "must be a number, not " + describe(value)
    if not math.isfinite(value):  # 1e400: JSON allows it, a 64-bit float holds no such number
        return "is too large: a number must be finite, from about -1.8e308 to 1.8e308"
    if type(value) is int and not -MAX_ID - 1 <= value <= MAX_ID:  # SQLite's integers
        return "must be written with a fraction or an exponent when so large"
    return None


def check_boolean(value):
    """Say what is wrong with a boolean field's value in general, or return None."""
    return None if type(value) is bool else "must be true or false, not " + describe(value)


JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
BOOLEANS = {"true": True, "false": False}  # as XML text and a filter spell them


def integer_from_text(text):
    """An integer as XML text and a filter spell it, 42, or None (JSON's syntax, no fraction)."""
    number = JSON_NUMBER.fullmatch(text)
    return int(text) if number and not number.group(1) and not number.group(2) else None


def integer_from_query(text):
    """A filter's integer: one an integer field can hold, or None."""
    value = integer_from_text(text)
    return None if value is None or check_integer(value) else value


def number_from_text(text):
    """A number as XML text and a filter spell it, as JSON writes it (2.5, 1e3), or None."""
    return json.loads(text) if JSON_NUMBER.fullmatch(text) else None


def number_from_query(text):
    """A filter's number: an integer too large for one is compared as a float, in either store."""
    value = number_from_text(text)
    return float(value) if type(value) is int and check_number(value) else value


Type = namedtuple("Type", "check from_text from_query query_words sorts to_xml in_xml "
                         "from_xml from_json merge")
"""A field's type: check(value) says what is wrong with a value, or None; from_text(text) is
the value XML text spells, from_query(text) a filter's (?done=true), None if none (the 400 says
query_words); a type that sorts is sorted and filtered by. Appendix B's json type alone has
to_xml, in_xml, from_xml, from_json and merge: the core writes and reads a value as text."""
Type.__new__.__defaults__ = (None,) * 5  # to_xml, in_xml, from_xml, from_json, merge

TYPES = {
    "string": Type(check_text, str, str, "text", True),
    "integer": Type(check_integer, integer_from_text, integer_from_query,
                    "whole numbers from %d to %d" % (-MAX_ID - 1, MAX_ID), True),
    "number": Type(check_number, number_from_text, number_from_query,
                   "numbers as JSON writes them", True),
    "boolean": Type(check_boolean, BOOLEANS.get, BOOLEANS.get, "true or false", True),
}

# The same rules as JSON Schema patterns, for the API description (U+0085 is white space to
# Python's str.isspace(), not to ECMAScript's \s).
PATTERN_CHARACTER = "[^\\u0000-\\u001f\\u007f\\ufffe\\uffff]"
PATTERN_VISIBLE = "[^\\s\\u0000-\\u001f\\u007f\\u0085\\ufffe\\uffff]"
PATTERN_EMAIL_PART = "[^@\\s\\u0000-\\u001f\\u007f\\u0085\\ufffe\\uffff]+"

XML_NAME = re.compile(r"(?!xml)[^\W\d][\w.-]*", re.IGNORECASE)  # what an element may be named


ABSENT = object()  # the value of a key an item lacks: a file's items keep their own keys


def is_none(value):
    """Whether a value is a none (no element): all XML can carry of a field named "a b"."""
    return value is None or value is ABSENT


class Field:
    """A field: its name and type; `required`, with a `default`, or optional (its none: JSON
    null, no XML element, SQL NULL); `unique`, `ignores_case` (ASCII, as NOCASE), `searched` by
    q, `refers_to` a collection; `check`: what else is wrong; `fake(id)`: a made-up value."""

    def __init__(self, name, type="string", *, required=False, default=None,
                 unique=False, ignores_case=False, searched=None, refers_to=None,
                 max_length=None, check=None, example=None, fake=None, schema=None):
        if type not in TYPES:
            raise ValueError("a field's type is one of %s, not %r" % (", ".join(TYPES), type))
        self.name, self.type, self.required, self.default = name, type, required, default
        self.unique, self.ignores_case, self.refers_to = unique, ignores_case, refers_to
        self.searched = type == "string" if searched is None else searched
        self.max_length, self.check, self.example, self.fake = max_length, check, example, fake
        self.schema = schema or {}  # the API description's, besides the type and length


class Resource:
    """A resource: its collection (the path /users, the list's XML element <users>), its
    item (<user>, "There is no user with id 9.") and its fields, which all else reads."""

    singular = False  # one item, with no id shown and no list (Appendix C's SingularResource)
    open_fields = False  # whether an item keeps its own keys, absent ones left out (a file's)

    def __init__(self, collection, fields, *, item=None):
        if item is None and not collection.endswith("s"):
            raise ValueError("the collection %s does not end in s: name its item, as "
                             "Resource(%r, fields, item=...)" % (collection, collection))
        self.collection, self.item = collection, item or collection[:-1]
        self.path, self.fields = "/" + quote(collection, safe=""), tuple(fields)  # UTF-8
        self.routes = resource_routes(self)
        self.field_names = tuple(field.name for field in self.fields)
        self.fields_by_name = {field.name: field for field in self.fields}
        self.stored = ("id",) + self.field_names  # an item's values, in order
        self.columns, self.shown = self.stored, 0  # what a client sees: every value, id first
        self.position = {name: index for index, name in enumerate(self.stored)}
        self.caseless = frozenset(field.name for field in self.fields if field.ignores_case)
        self.searched = tuple(field.name for field in self.fields if field.searched)
        self.unique = tuple(field for field in self.fields if field.unique)
        self.references = tuple(field for field in self.fields if field.refers_to)
        kinds = {field.name: TYPES[field.type] for field in self.fields}
        self.xml_writers = {name: kind.to_xml for name, kind in kinds.items() if kind.to_xml}
        self.in_xml = {name: kind.in_xml for name, kind in kinds.items() if kind.in_xml}
        self.xml_readers = {name: kind.from_xml for name, kind in kinds.items() if kind.from_xml}
        self.in_xml.update((name, is_none) for name in self.field_names  # "a b": no element
                           if not XML_NAME.fullmatch(name))
        self.from_json = {name: kind.from_json for name, kind in kinds.items() if kind.from_json}
        self.mergers = {name: kind.merge for name, kind in kinds.items() if kind.merge}
        self.sorted_by = ("id",) + tuple(field.name for field in self.fields
                                         if TYPES[field.type].sorts)
        self.sort_keys = tuple(sign + name for name in self.sorted_by for sign in ("", "-"))
        self.filtered_by = tuple(name for name in self.sorted_by[1:] if name not in LIST_WORDS)
        self.list_parameters = LIST_WORDS[:3] + self.filtered_by + LIST_WORDS[3:]


USERS = Resource("users", [
    Field("name", required=True, max_length=MAX_NAME_LENGTH, check=check_name,
          schema={"minLength": 1, "pattern": "^{0}*{1}{0}*$".format(PATTERN_CHARACTER,
                                                                    PATTERN_VISIBLE)},
          example="Ada Lovelace"),
    Field("email", required=True, unique=True, ignores_case=True, max_length=MAX_EMAIL_LENGTH,
          check=check_email, schema={"minLength": 3, "pattern": "^%s@%s$" % (
              PATTERN_EMAIL_PART, PATTERN_EMAIL_PART)},
          example="ada@example.com"),
])

RESOURCES = [USERS]  # the resources served: append a declaration here, and it is served


class Item(tuple):
    """One version of an item: (id, its fields' values by resource.position, the server's
    version, for ETags), never changed. Read by position, any JSON key can name a field."""

    __slots__ = ()  # a tuple's size, no __dict__
    id = property(operator.itemgetter(0))
    version = property(operator.itemgetter(-1))

    def with_id(self, item_id):
        """This item under the id a store gives it."""
        return Item((item_id,) + self[1:])


def new_item(resource, item_id, values, version=1):
    """An item with these {field: value}s; an optional field not among them is None."""
    return Item((item_id, *[values.get(name) for name in resource.field_names], version))


def new_version(resource, item, changes):
    """The item's next version, with these {field: value}s changed; the item stays as it was."""
    values = list(item)
    for name, value in changes.items():
        values[resource.position[name]] = value
    values[-1] += 1
    return Item(values)


def a_or_an(word):
    """A word with its indefinite article: "a user", "an order"."""
    return ("an " if word[:1].lower() in "aeio" else "a ") + word  # "a user": u sounds as "you"


def in_words(names, conjunction="and"):
    """Names as a sentence lists them: "name and email", "name, email and phone"."""
    return (" %s " % conjunction).join(filter(None, [", ".join(names[:-1])] + list(names[-1:])))


def check_id(value, path_id):
    """Say what is wrong with an id in a body, or return None: only a PUT or PATCH may repeat it."""
    if path_id is None:
        return "is assigned by the server; leave it out"
    if type(value) is not type(path_id) or value != path_id:  # a bool is an int, not an id
        return "must be %s, the id in the path, or be left out" % json.dumps(path_id)
    return None


def check_field(resource, name, value, path_id, given):
    """Say what is wrong with one (field, value) of a body: type, length, then its own check."""
    if name == "id":
        return check_id(value, path_id)
    if name in given:  # the path says it: /users/1/todos gives userId 1
        return check_id(value, given[name])
    field = resource.fields_by_name.get(name)
    if field is None:
        return "is not a field of %s; %s" % (a_or_an(resource.item), "the fields are " + in_words(
            resource.field_names) if resource.fields else "it has none")
    if not field.required and is_none(value) and is_none(field.default):
        return None  # an optional field's none: left out, or removed by a merge patch
    problem = TYPES[field.type].check(value)
    if problem is None and field.max_length is not None and len(value) > field.max_length:
        problem = "must be at most %d characters long" % field.max_length
    if problem is None and field.check is not None:
        problem = field.check(value)
    return problem


def validate(resource, pairs, *, path_id=None, partial=False, given=None):
    """Check a body's (field, value) pairs and return the item's fields; one 422 lists every
    bad field. PATCH's is `partial`; `given`, what a nested POST's path gives, may be left out."""
    fields, errors, seen, given = {}, [], set(), given or {}
    for name, value in pairs:
        problem = ("is given more than once" if name in seen
                   else check_field(resource, name, value, path_id, given))
        if problem:
            errors.append((printable(name), problem))
        elif name != "id":
            fields[name] = resource.from_json[name](value) if name in resource.from_json else value
        seen.add(name)
    if given:  # the path's fields, if the body left them out
        fields.update((name, given[name]) for name in given.keys() - seen)
        seen.update(given)
    if not partial:
        errors += [(field.name, "is required") for field in resource.fields
                   if field.required and field.name not in seen]
        fields = {field.name: fields.get(field.name) if field.name in seen else field.default
                  for field in resource.fields}
    if errors:
        raise Invalid(resource, errors)
    return fields


# -- Storage -----------------------------------------------------------------------------
# Every store has the same few methods, so the handler need not know which it has (SQLite's
# is in Appendix C). update() and delete() take a function the store calls on the current
# item while it holds its lock: so a precondition (If-Match) and its write are one step.

ListQuery = namedtuple("ListQuery", "limit offset sort filters q")
"""What GET /users asks for: a page, sort keys ("-id": descending), Filters, and q or None."""
Filter = namedtuple("Filter", "field test values")
"""One condition: Filter("name", "eq", ("Ada", "Alan")) passes the users named Ada or Alan."""


def unique_key(field, value):
    """A unique field's value as uniqueness sees it: ignoring ASCII case if the field does."""
    return caseless_key(value) if field.ignores_case and value is not None else value


class MemoryStore:
    """A resource's items in a dict from id to item under one lock, gone when the process
    ends. A write puts in a new item, never changes one: a reader gets a whole version."""

    kept_in = "memory, lost when the server stops"  # where the items are, for people
    changes = 0  # writes made so far: a page read between the same two writes is the same

    def __init__(self, items=(), resource=USERS, shared=None):  # items: checked, with ids
        # one lock for the stores of a server (shared: another's), so that a reference is
        # checked and written in one step; reentrant, as such a check reads another store
        self.lock, self.resource = shared.lock if shared else threading.RLock(), resource
        self.start(items)

    def start(self, items):
        """Hold these items and none else; the caller holds the lock, or is __init__."""
        self.items = {item.id: item for item in sorted(items)}  # in id order, as ids only grow
        self.last_id = max(self.items, default=0)  # never reused, not even after a delete

    def get(self, item_id):
        """Return the item with this id, or None."""
        with self.lock:
            return self.items.get(item_id)

    def list(self, query):
        """Return (how many items match the query, the page of them)."""
        with self.lock:
            matches = list(self.candidates(query))
        matches = [item for item in matches if self.passes(item, query)]
        # sort() keeps equal keys' order, even reversed: ties follow later keys, then id
        for key in reversed(query.sort):
            matches.sort(key=sort_value(self.resource, key.lstrip("-")), reverse=key[0] == "-")
        return len(matches), matches[query.offset:query.offset + query.limit]

    def candidates(self, query):
        """The items among which a query's matches are, in id order: all (the caller locks)."""
        return self.items.values()

    def passes(self, item, query):
        """Whether an item passes every Filter, and has q in a searched field."""
        position = self.resource.position
        return all(self.passes_filter(item[position[field]], field, test, values)
                   for field, test, values in query.filters) and (
            query.q is None or has_text(self.resource, item, query.q))

    def passes_filter(self, value, field, test, values):
        """Whether a field passes a Filter: here eq, one of the values (email: any ASCII case)."""
        if field in self.resource.caseless and value is not None:
            return caseless_key(value) in [caseless_key(each) for each in values]
        return value in values

    def next_id(self):
        """The id of the next item created: the one after the last given (the caller locks)."""
        if self.last_id == MAX_ID:
            raise NoIdLeft(self.resource)
        return self.last_id + 1

    def create(self, fields, write=True, check=None):
        """Add an item with these {field: value}s, after check(item) has passed, and return
        it; write=False, as update and delete take it, only checks (returning None)."""
        with self.lock:
            item = new_item(self.resource, self.next_id(), fields)
            if check is not None:
                check(item)
            self.check_unique(item)
            if not write:
                return None
            self.last_id = item.id
            self.items[item.id] = item
            self.changes += 1
            return item

    def update(self, item_id, change, write=True):
        """Apply change(current item) -> {field: value} and return the updated item."""
        with self.lock:
            current = self.items.get(item_id)
            if current is None:
                raise NotFound(self.resource, item_id)
            item = new_version(self.resource, current, change(current))
            self.check_unique(item)
            if write:
                self.items[item_id] = item
                self.changes += 1
            return item

    def delete(self, item_id, check, write=True):
        """Delete the item after check(current item) has passed, and return it."""
        with self.lock:
            current = self.items.get(item_id)
            if current is None:
                raise NotFound(self.resource, item_id)
            check(current)
            if write:
                del self.items[item_id]
                self.changes += 1
            return current

    def check_unique(self, item):
        """Raise the 409 if another item has a unique value of this one; the caller locks."""
        for field in self.resource.unique:
            value = item[self.resource.position[field.name]]
            if value is not None and self.owner(field, value) not in (None, item.id):
                raise Taken(self.resource, field, value)

    def owner(self, field, value):
        """The id of the item with this value of a unique field, or None; the caller locks."""
        key, position = unique_key(field, value), self.resource.position[field.name]
        return next((other.id for other in self.items.values()
                     if unique_key(field, other[position]) == key), None)

    def close(self):
        """Nothing to close: the items go with the process."""


def memory_stores(resources):
    """A MemoryStore for each resource, all under the first one's lock."""
    first = MemoryStore((), resources[0])
    return [first] + [MemoryStore((), resource, first) for resource in resources[1:]]


def has_text(resource, item, text):
    """Whether a searched field has the text, casefolded on both sides: "LOVE" in "Ada Lovelace"."""
    values = [item[resource.position[name]] for name in resource.searched]
    return any(text.casefold() in value.casefold() for value in values if isinstance(value, str))


def sort_value(resource, name):
    """The sort key of a field: its value, an optional field's none first, as NULL in SQLite."""
    position, field = resource.position[name], resource.fields_by_name.get(name)
    if field is None or field.required:  # the id, or a field every item has
        return operator.itemgetter(position)
    return lambda item: (True, item[position]) if not is_none(item[position]) else (False, 0)


# -- Representations: items, lists and problem details, in JSON and in XML ----------------
Format = namedtuple("Format", "name content_type problem_type")
JSON = Format("json", JSON_TYPE + "; charset=utf-8", "application/problem+json")
XML = Format("xml", XML_TYPE + "; charset=utf-8", "application/problem+xml")
TEXT_XML = Format("xml", TEXT_XML_TYPE + "; charset=utf-8", "application/problem+xml")


JSON_ENCODER = json.JSONEncoder(ensure_ascii=False)  # non-ASCII characters as themselves


def json_bytes(document):
    """Encode a document as UTF-8 JSON."""
    return JSON_ENCODER.encode(document).encode("utf-8")


def xml_bytes(element):
    """Encode an element as UTF-8 XML, without a declaration."""
    return ElementTree.tostring(element, encoding="unicode").encode("utf-8")


def xml_element(tag, fields, children=(), writers={}):
    """An element with a child per field that is not None (by its `writers`, if named there)."""
    element = ElementTree.Element(tag)
    for name, value in fields.items():
        if value is not None and name in writers:
            writers[name](element, name, value)
        elif value is not None:
            add_xml_value(element, name, value)
    element.extend(children)
    return element


def add_xml_value(parent, name, value):
    """Add a value as a child element: text, as JSON writes it unless a string."""
    child = ElementTree.SubElement(parent, name)
    child.text = value if isinstance(value, str) else JSON_ENCODER.encode(value)  # true, 2.5
    return child


def item_document(resource, item):
    """One item as the JSON object a client sees: id and fields, not the version (the ETag's)."""
    pairs = zip(resource.columns, item[resource.shown:-1])  # a singular one has no id
    if resource.open_fields:  # the keys the item has; an older item lacks the newer fields
        pairs = [(name, value) for name, value in pairs if value is not ABSENT]
    return dict(pairs)


BEYOND_XML = "has a key that is not an XML name, or a character XML cannot carry; ask for JSON"


def beyond_xml(resource, item):
    """The names of an item's fields that XML cannot carry (a json field's, as its type says)."""
    return [name for name, carries in resource.in_xml.items()
            if not carries(item[resource.position[name]])]


def item_element(resource, item):
    """One item as an XML element, <user><id>1</id>...</user>, or a 406 if XML cannot carry it."""
    beyond = resource.in_xml and beyond_xml(resource, item)  # no call where no field is json
    if beyond:
        raise ApiError(HTTPStatus.NOT_ACCEPTABLE, "The %s's %s %s." % (
            resource.item, beyond[0], BEYOND_XML))
    return xml_element(resource.item, item_document(resource, item), (), resource.xml_writers)


def render_item(resource, item, fmt, document=item_document, element=item_element):
    """One item as bytes in the format, made by document() (JSON) or element() (XML)."""
    if fmt is JSON:
        return json_bytes(document(resource, item))
    return xml_bytes(element(resource, item))


def render_items(resource, items, fmt, document=item_document, element=item_element):
    """A list of items as bytes in the format."""
    if fmt is JSON:
        return json_bytes([document(resource, item) for item in items])
    return xml_bytes(xml_element(resource.collection, {},
                                 [element(resource, item) for item in items]))


class Related:
    """What a request's route and query add to its items: nothing, in the core. Appendix C's
    References add a nested route's fields and path (/users/1/todos), and _embed and _expand."""

    given, path, pairs = {}, None, ()  # no path: the resource's own, /users
    document, element = staticmethod(item_document), staticmethod(item_element)


NOTHING_RELATED = Related()


# Characters XML 1.0 cannot carry; a problem may quote client text that has them.
XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def render_problem(error, fmt):
    """An ApiError as RFC 9457 problem details: JSON, or XML (its Appendix B) for XML."""
    problem = {"type": "about:blank", "title": error.status.phrase,
               "status": error.status.value, "detail": error.detail}
    if fmt is JSON:
        if error.errors:
            problem["errors"] = [{"field": field, "message": message}
                                 for field, message in error.errors]
        # ASCII, with escapes: the detail may quote any text, even a lone surrogate
        return json.dumps(problem).encode("ascii")
    safe = {name: XML_INVALID.sub("\ufffd", str(value)) for name, value in problem.items()}
    items = [xml_element("i", {"field": XML_INVALID.sub("\ufffd", field), "message": message})
             for field, message in error.errors]
    element = xml_element("problem", safe, [xml_element("errors", {}, items)] if items else [])
    element.set("xmlns", "urn:ietf:rfc:7807")  # RFC 9457 Appendix B's namespace
    return xml_bytes(element)


def entity_tag(item, fmt):
    """The strong ETag of an item's version in a format: JSON and XML differ (RFC 9110 §8.8.3)."""
    return '"%d-%s"' % (item.version, fmt.name)


# -- Reading request bodies: a list of (field, value) pairs, so a field sent twice is seen --
class ObjectPairs(list):
    """A JSON object read as the list of its (key, value) pairs, so a repeated key is kept."""


def refuse_constant(name):
    """json calls this for NaN and Infinity, which are not JSON."""
    raise ValueError("%s is not a JSON value" % name)


def read_json_fields(text, resource):
    """Parse a JSON object into (field, value) pairs; anything else is a 400."""
    try:
        document = json.loads(text, object_pairs_hook=ObjectPairs, parse_constant=refuse_constant)
    except RecursionError:
        raise ApiError(HTTPStatus.BAD_REQUEST, "The JSON body is nested too deeply.") from None
    except ValueError as error:
        raise ApiError(HTTPStatus.BAD_REQUEST, "The body is not valid JSON: %s." % error) from None
    if not isinstance(document, ObjectPairs):
        raise ApiError(HTTPStatus.BAD_REQUEST, "The body must be a JSON object, like {%s}." % (
            ", ".join('"%s": ...' % name for name in resource.field_names[:2])))
    return document


class XmlValue:
    """What an XML field element holds that its field's type cannot read: never valid."""

    def __init__(self, description):
        self.description = description

    def __str__(self):
        return self.description


NESTED = XmlValue("an element with child elements")


class ItemXmlReader:
    """Collects (field, value) pairs from <user><name>..</name><email>..</email></user> as
    expat parses. A DOCTYPE is refused the moment it starts, before any entity can be
    declared or expanded (billion laughs, external entities)."""

    def __init__(self, resource):
        self.resource, self.pairs, self.depth, self.text = resource, [], 0, []
        self.nested, self.nil, self.tree = False, False, None

    def start(self, tag, attributes):
        """An element opens: the root must be the item's; its children are the fields."""
        self.depth += 1
        if self.depth == 1 and tag != self.resource.item:
            raise ApiError(HTTPStatus.BAD_REQUEST, "The XML root element must be <%s>, not "
                           "<%s>." % (self.resource.item, tag))
        if self.depth == 2:
            self.text, self.nested = [], False
            self.nil = any(name.rpartition(":")[2] == "nil" and value == "true"
                           for name, value in attributes.items())  # XML Schema's xsi:nil
            if tag in self.resource.xml_readers:  # a json field: its elements are its value
                self.tree = ElementTree.TreeBuilder()
        elif self.depth > 2:
            self.nested = True
        if self.tree is not None:
            self.tree.start(tag, attributes)

    def end(self, tag):
        """An element closes: a field's text becomes its value."""
        if self.tree is not None:
            self.tree.end(tag)
        if self.depth == 2:
            self.pairs.append((tag, self.field_value(tag)))
            self.tree = None
        self.depth -= 1

    def field_value(self, tag):
        """The value of the field element that just closed."""
        if self.nil:
            return None
        if self.tree is not None:
            try:
                return self.resource.xml_readers[tag](self.tree.close())
            except ValueError as error:  # a leaf its type attribute cannot read
                return XmlValue(str(error))
        if self.nested:
            return NESTED
        text = "".join(self.text)
        if tag == "id":
            return int(text) if ITEM_ID.fullmatch(text) else text  # <id>7</id>: the integer 7
        field = self.resource.fields_by_name.get(tag)
        value = TYPES[field.type].from_text(text) if field else text
        if value is None:
            return XmlValue("the text %s" % json.dumps(text, ensure_ascii=False))
        return value

    def characters(self, data):
        """Text inside a field (expat may hand it over in several pieces)."""
        if self.depth == 2:
            self.text.append(data)
        if self.tree is not None:
            self.tree.data(data)

    def refuse_doctype(self, *args):
        """A DOCTYPE or entity declaration: refused before the parser reads on."""
        raise ApiError(HTTPStatus.BAD_REQUEST,
                       "XML with a DOCTYPE or entity declarations is not accepted.")


def read_xml_fields(text, resource):
    """Parse an item's document into (field, value) pairs; malformed XML is a 400."""
    # expat, not xml.etree: on PyPy, xml.etree reads a DOCTYPE's entities before it says so
    reader = ItemXmlReader(resource)  # it collects the fields and refuses a DOCTYPE
    parser = expat.ParserCreate(encoding="utf-8")
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.characters
    parser.StartDoctypeDeclHandler = reader.refuse_doctype
    parser.EntityDeclHandler = reader.refuse_doctype
    try:
        parser.Parse(text, True)
    except expat.ExpatError as error:
        raise ApiError(HTTPStatus.BAD_REQUEST,
                       "The body is not well-formed XML: %s." % error) from None
    return reader.pairs


def parse_content_type(value):
    """A Content-Type's media type and charset (or None), lower case (RFC 9110 §8.3.1)."""
    media_type, _, parameters = value.lower().partition(";")
    charset = re.search(r'(?:^|;)\s*charset\s*=\s*"?([^";\s]*)', parameters)
    return media_type.strip(), charset.group(1) if charset else None


# -- Content negotiation, conditional requests, Prefer and the query string of GET /users --
def parse_accept(header):
    """An Accept header as {(type, subtype): q}, each range's first q; a malformed one skipped."""
    ranges = {}
    for media_range in header.lower().split(","):
        media_type, *parameters = media_range.split(";")
        main, _, sub = media_type.strip().partition("/")
        q = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = -1.0
        if main and sub and 0.0 <= q <= 1.0:
            ranges.setdefault((main, sub), q)
    return ranges


def quality(media_type, ranges):
    """The q the ranges give a media type: that of the most specific match (RFC 9110 §12.5.1)."""
    main, sub = media_type.split("/")
    return ranges.get((main, sub), ranges.get((main, "*"), ranges.get(("*", "*"), 0.0)))


def choose_format(accept):
    """The Format Accept prefers (JSON on a tie; text/xml if ranked above application/xml)."""
    if not accept or not accept.strip():
        return JSON
    ranges = parse_accept(accept)
    json_q, application_xml_q, text_xml_q = [quality(each, ranges) for each in MEDIA_TYPES]
    xml = TEXT_XML if text_xml_q > application_xml_q else XML
    xml_q = max(application_xml_q, text_xml_q)
    # A browser's address bar ranks text/html first and XML above */*: it gets JSON, which
    # browsers show readably, rather than an unstyled XML tree
    browser = quality("text/html", ranges) > max(json_q, xml_q)
    if json_q > 0 and (json_q >= xml_q or browser):
        return JSON
    return xml if xml_q > 0 else None


ENTITY_TAG = re.compile(r'(W/)?("[^"]*")')


def etag_matches(header, tag, *, weak):
    """Whether If-Match (strong: no W/) or If-None-Match names the tag (RFC 9110 §13.1.1-2)."""
    if header.strip() == "*":
        return True
    return any(opaque == tag and (weak or not weak_prefix)
               for weak_prefix, opaque in ENTITY_TAG.findall(header))


def preferences(fields):
    """The preferences of Prefer header fields as {name in lower case: value}, the first of
    each name winning, a quoted value unquoted, parameters after ";" left out (RFC 7240 §2)."""
    found = {}
    for field in fields:
        for preference in field.split(","):
            name, _, value = preference.partition(";")[0].partition("=")
            value = value.strip()
            if len(value) > 1 and value[0] == value[-1] == '"':
                value = value[1:-1]  # a quoted-string (RFC 9110 §5.6.4): the same preference
            found.setdefault(name.strip().lower(), value)
    return found


class BadQuery(ApiError):
    """400: a list's query string is wrong; the handler adds where to read of it (query_help)."""

    def __init__(self, detail):
        super().__init__(HTTPStatus.BAD_REQUEST, detail)


def query_help(resource):
    """Where a 400 about a list's query sends the reader: the README teaches GET /users."""
    if resource is None or resource.collection == USERS.collection:
        return " See GET /users in the README."
    return " See GET /openapi.json for the parameters of GET %s." % resource.path


def integer_parameter(parameters, name, default, low, high):
    """Read an integer query parameter: ASCII digits only, between low and high."""
    value = parameters.get(name)
    if value is None:
        return default
    if not DIGITS.fullmatch(value) or len(value) > 19 or not low <= int(value) <= high:
        raise BadQuery("The query parameter %s must be a whole number from %d to %d, in "
                       "digits." % (name, low, high))
    return int(value)


def query_pairs(query):
    """A query string's (name, value) pairs, decoded as HTML forms are; not UTF-8, empty: 400."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise BadQuery("The query string is not valid UTF-8 once percent-decoded.") from None
    empty = dict.fromkeys(printable(name) for name, value in pairs if value == "")
    if empty:
        raise BadQuery("The query parameter %s is empty." % ", ".join(empty))
    return pairs


def refuse_unknown(unknown, known):
    """A 400 naming every unknown parameter, if there is one, and those the list takes."""
    unknown = dict.fromkeys(printable(name) for name in unknown)
    if unknown:
        raise BadQuery("Unknown query parameter%s %s; the list takes %s." % (
            "s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(known)))


def parse_list_query(resource, pairs):
    """Read the query pairs of GET /users into a ListQuery; every mistake is a 400."""
    known = resource.list_parameters
    refuse_unknown([name for name, _ in pairs if name not in known], known)
    parameters = {}
    for name, value in pairs:
        if name in parameters:
            raise BadQuery(GIVEN_TWICE % name)
        parameters[name] = value
    limit = integer_parameter(parameters, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    offset = integer_parameter(parameters, "offset", 0, 0, MAX_ID)
    sort = sort_keys(resource, "sort", parameters.get("sort", "id"))
    filters = tuple(Filter(name, "eq", (query_value(resource, name, name, parameters[name]),))
                    for name in resource.filtered_by if name in parameters)
    return ListQuery(limit, offset, sort, filters, parameters.get("q"))


def sort_keys(resource, name, value):
    """The keys of a sort parameter, comma-separated: name,-id sorts by name, then id down."""
    keys = tuple(value.split(","))
    for key in keys:
        if key not in resource.sort_keys:
            raise BadQuery("%s takes keys from %s, comma-separated; %s is not one." % (
                name, ", ".join(resource.sort_keys), printable(key) or "an empty key"))
    return keys


def query_value(resource, name, field_name, text):
    """A filter's value (?done=true) as its field holds it; a 400 for a value of another type."""
    kind = TYPES[resource.fields_by_name[field_name].type]
    value = kind.from_query(text)
    if value is None:
        raise BadQuery("%s compares %s values: %s, not %s." % (
            printable(name), field_name, kind.query_words, printable(text)))
    return value


def page_links(path, query, total, kept):
    """The RFC 8288 Link header of a page, each link with the request's other parameters."""
    links = [("first", 0), ("last", max(0, (total - 1) // query.limit * query.limit))]
    if query.offset > 0:
        links.append(("prev", max(0, query.offset - query.limit)))
    if query.offset + query.limit < total:
        links.append(("next", query.offset + query.limit))
    kept = urlencode(kept) + "&" if kept else ""  # the same in every link: encoded once
    return ", ".join('<%s?%slimit=%d&offset=%d>; rel="%s"' % (path, kept, query.limit, offset, rel)
                     for rel, offset in links)


# -- The server --------------------------------------------------------------------------
class UsersServer(ThreadingMixIn, HTTPServer):
    """A thread per connection (Python 3.6 lacks ThreadingHTTPServer), a store per resource."""

    daemon_threads = True  # a stalled client never keeps the process from stopping
    request_queue_size = 128  # the default 5 overflows when a few dozen clients connect
    handler_class = UsersHandler
    vary = "Accept"  # what a response depends on, besides the path: the format asked for

    def __init__(self, address, stores=None, *, api_key=None):
        if stores is None:  # the declared RESOURCES, in memory
            stores = memory_stores(RESOURCES)
        stores = list(stores) if isinstance(stores, (list, tuple)) else [stores]  # or one
        self.stores = {store.resource.collection: store for store in stores}  # by collection
        self.store, self.api_key = stores[0], api_key  # the first resource's: users', often
        self.resources = [store.resource for store in stores]
        self.routes = self.handler_class.route_table(self.resources)
        self.keyed_paths = self.handler_class.keyed_paths(self.resources)
        super().__init__(address, self.handler_class)

    def server_close(self):
        """Stop listening, then close the stores."""
        super().server_close()
        for store in self.stores.values():
            store.close()


# =======================================================================================
# Appendices: you can stop reading here
#
# The service above is complete. Each appendix builds only on what comes before it, by
# subclassing it or by overriding a hook the core leaves for it; Appendix G composes the
# server that runs by default out of all of them. Each opens with the modules it alone
# imports, so the imports at the top are the plain service's. Delete the appendices from the
# bottom up, and what remains still runs.
# =======================================================================================


# ---------------------------------------------------------------------------------------
# Appendix A: the edge, where http.server leaves the rules to us
#
# http.server reads what a client sends as kindly as it can. A server that may sit behind
# a proxy, or be reached from a browser, must be strict instead (RFC 9112): a request that
# two programs could read in two ways is refused. Here too are 100-continue, the Host check
# against DNS rebinding, the 408 for a request that stops arriving, and the graceful stop.
# ---------------------------------------------------------------------------------------

import contextlib
import ipaddress
import sys
import time
from urllib.parse import urlsplit

DEFAULT_MAX_BODY = 1024 * 1024  # bytes
DEFAULT_IDLE_TIMEOUT = 30  # seconds before an idle connection is dropped


class EdgeHandler(UsersHandler):
    """UsersHandler, strict about framing, with 100-continue, the Host check, the 408 and
    what the graceful stop needs to know: whether a request is under way."""

    default_request_version = "HTTP/1.0"  # an error before the version is read still gets
    # a status line: HTTP/0.9, whose answers have none, is refused here
    idle = True  # no request under way: a graceful stop may close the connection
    answering = False  # the answer has begun to leave: a timeout now is the client's reading
    expects_continue = False  # the client waits for 100 Continue before it sends the body
    authority = None  # the host an absolute-form target names (RFC 9112 §3.2.2)

    def handle_one_request(self):
        """Wait for the next request and answer it. This replaces http.server's version so
        that an idle connection is closed without a word when the timeout comes, while a
        request that stops arriving midway gets a 408 (RFC 9110 §15.5.9)."""
        # nothing of the last request is reused
        self.headers, self.command, self.requestline = None, None, ""
        self.request_version = self.default_request_version
        self.expects_continue, self.authority, self.body_read = False, None, False
        self.close_connection, self.idle, self.answering = True, True, False
        try:
            if not self.rfile.peek(1):
                return  # the client closed the connection
        except socket.timeout:
            return  # idle: nobody waits for an answer
        self.idle = False  # a request has begun: a graceful stop lets it finish
        if self.server.stopping:
            return  # the stop began first: this request is not served, and nothing changes
        try:
            self.answer_request_line()
        except socket.timeout:
            if self.answering:
                raise  # the client reads nothing: nobody to answer, the connection is lost
            self.close_connection = True
            self.send_problem(ApiError(HTTPStatus.REQUEST_TIMEOUT, "The request stopped arriving:"
                                       " nothing came for %s seconds." % self.timeout))
        self.wfile.flush()  # the answer leaves now, as http.server's own version sends it

    def answer_request_line(self):
        """Read the request line and, unless it is too long, the rest, then answer it."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
        elif self.parse_request():
            getattr(self, "do_" + self.command, self.refuse_method)()

    def refuse_method(self):
        """501 for a method this service does not implement at all, naming those it does,
        unless check_caller refuses the request first: a stranger learns nothing before
        the 401."""
        self.close_connection = True
        try:
            self.check_caller()
        except ApiError as refused:
            return self.send_problem(refused)
        self.send_problem(ApiError(HTTPStatus.NOT_IMPLEMENTED, "This service does not "
                                   "implement %s; it implements %s."
                                   % (printable(self.command), ", ".join(METHODS))))

    def send_error(self, code, message=None, explain=None):
        """Answer the errors http.server finds itself (414, 431) as problems."""
        self.close_connection = True  # the request may not have been read to its end
        status = HTTPStatus(code)
        detail = HEAD_TOO_LARGE.get(message) or (explain or message or status.description) + "."
        self.send_problem(ApiError(status, detail))

    def version_string(self):
        """The Server field: this service, without the Python version behind it."""
        return self.server_version

    def log_request(self, code="-", size="-"):
        """One line per request on stderr, unless --quiet, as its answer begins to leave."""
        self.answering = True
        if not self.server.quiet:
            super().log_request(code, size)

    def parse_request(self):
        """Refuse the request lines http.server would take (HTTP/0.9, odd versions), read
        the header fields, then check them (RFC 9112 §3)."""
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if not words:
            return False  # nothing but a line end: the client is done
        error = request_line_error(words)
        if error is not None:
            return self.refuse_head(error)
        return self.read_head(words) and self.check_head()

    def read_head(self, words):
        """Let http.server read the request line's words and the header fields, then refuse
        malformed or folded header lines (RFC 9112 §5). True, or False when refused."""
        if not super().parse_request():
            return False  # http.server has answered
        self.path = words[1]  # as sent: http.server makes //users /users
        error = header_error(self.headers)
        return self.refuse_head(error) if error else True

    def refuse_head(self, error):
        """Answer an error in a request's head and close the connection, as what follows
        cannot be trusted; False, as parse_request returns for a request not to serve."""
        self.close_connection = True
        self.send_problem(error)
        return False

    def check_head(self):
        """Check a head whose fields are read: one Host (RFC 9112 §3.2), then the name it or an
        absolute-form target gives, which must be one this server answers for (421); an
        absolute-form target, http://host/users, is routed as its path and query (RFC 9112
        §3.2.2). True, or False once the refusal is sent."""
        error = host_error(self.request_version, self.headers)
        if error is None:
            self.authority, self.path = split_target(self.path)
            host = self.authority or self.headers.get("Host")
            if host is not None and not self.serves_host(host):
                error = misdirected(host)
        return self.refuse_head(error) if error else True

    def serves_host(self, host):
        """Whether this server answers for a Host value."""
        return answers_for(self.server.allowed_hosts, host)

    def handle_expect_100(self):
        """Wait with the 100 Continue until the body is wanted (read_body): an error found
        before then is the answer, and the body is never sent (RFC 9110 §10.1.1)."""
        self.expects_continue = True
        return True

    def before_reading_body(self, length):
        """A body over --max-body is a 413, refused unread; a client that waits for leave to
        send the body gets it now (100 Continue), as no error can come first."""
        if length > self.server.max_body:
            raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                           "The body is %d bytes; this service takes at most %d."
                           % (length, self.server.max_body))
        if self.expects_continue:
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()

    def content_length(self):
        """Also a 400 for Content-Length beside Transfer-Encoding (RFC 9112 §6.1), and a
        411 for a chunked body, which http.server cannot read."""
        if "Transfer-Encoding" in self.headers:
            self.close_connection = True  # the chunks would be read as the next request
            if "Content-Length" in self.headers:
                raise ApiError(HTTPStatus.BAD_REQUEST, "A request must not have both "
                               "Content-Length and Transfer-Encoding (RFC 9112 §6.1).")
            raise ApiError(HTTPStatus.LENGTH_REQUIRED, "Chunked bodies are not accepted; "
                           "send the body with a Content-Length.")
        return super().content_length()

    def leave_unread_body(self):
        """Read and drop a body nobody read, when its length is known and allowed, so the
        connection can serve the next request; else close it, as the core does."""
        if self.headers is None or "Content-Length" not in self.headers:
            return super().leave_unread_body()  # no body, or one whose end is unknown
        if self.expects_continue or "Transfer-Encoding" in self.headers:
            return super().leave_unread_body()  # a body that may never come, or not end
        try:
            length = self.content_length()
        except ApiError:
            length = -1
        if 0 <= length <= self.server.max_body:
            self.rfile.read(length)
        else:
            super().leave_unread_body()

    def setup(self):
        """Set the idle timeout, and let the server see the connection for the graceful
        stop."""
        self.timeout = self.server.idle_timeout
        super().setup()
        self.server.connections.add(self)

    def finish(self):
        """The connection is done with."""
        self.server.connections.discard(self)
        super().finish()


class EdgeServer(UsersServer):
    """UsersServer that takes bodies up to max_body bytes, drops a connection idle for
    timeout seconds, answers only for its own host names, stops gracefully, and with
    quiet logs no line about ordinary client behaviour."""

    handler_class = EdgeHandler

    def __init__(self, *args, allow_host=(), quiet=False, max_body=DEFAULT_MAX_BODY,
                 timeout=DEFAULT_IDLE_TIMEOUT, **options):
        self.allowed_hosts, self.quiet = allowed_hosts(allow_host), quiet
        self.max_body, self.idle_timeout = max_body, timeout
        self.connections, self.stopping = set(), False  # the handlers of open connections
        super().__init__(*args, **options)

    def server_close(self):
        """Stop listening, let the requests in flight finish and close every connection,
        then close the store as the core does (closing the socket twice does no harm)."""
        self.socket.close()
        stop_gracefully(self)
        super().server_close()

    def handle_error(self, request, client_address):
        """Log a client that went away in one line (unless --quiet); anything else in full."""
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, socket.timeout)):
            super().handle_error(request, client_address)
        elif not self.quiet:
            print("%s: connection lost: %s" % (client_address[0], error), file=sys.stderr)


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")  # all the service has
MAX_HEADER_LINE = 65536  # bytes in one header line, as http.client takes
MAX_HEADERS = 99  # header fields in one request, as http.client takes (it counts 100 lines)
HEAD_TOO_LARGE = {  # what http.server's 431s say here
    "Line too long": "A header line is longer than %d bytes." % MAX_HEADER_LINE,
    "Too many headers": "A request may have at most %d header fields." % MAX_HEADERS}
HTTP_VERSION = re.compile(r"HTTP/[0-9]\.[0-9]")  # RFC 9112 §2.3
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a token (RFC 9110 §5.1)
FORBIDDEN_IN_VALUES = re.compile("[\0\r\n]")  # RFC 9110 §5.5: a proxy might split a line there


def request_line_error(words):
    """The error in a request line's words, or None (RFC 9112 §3): http.server takes two
    words as HTTP/0.9 and HTTP/1.10 as a version, and both are 400s here."""
    if len(words) != 3 or not HTTP_VERSION.fullmatch(words[2]):
        return ApiError(HTTPStatus.BAD_REQUEST, "The request line must be METHOD PATH HTTP/1.1.")
    if not words[2].startswith("HTTP/1."):
        return ApiError(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED,
                        "This server speaks HTTP/1.1 and HTTP/1.0, not %s." % words[2])
    return None


def host_error(version, headers):
    """The 400 for an HTTP/1.1 request without a Host header, or for any with two (RFC 9112
    §3.2), or None."""
    hosts = len(headers.get_all("Host", []))
    if hosts > 1 or (hosts == 0 and version == "HTTP/1.1"):
        return ApiError(HTTPStatus.BAD_REQUEST,
                        "An HTTP/1.1 request needs one Host header (RFC 9112 §3.2).")
    return None


def split_target(target):
    """A request target as (the authority it names or None, its path and query): a client
    talking to a proxy sends the whole URL, http://host/users (RFC 9112 §3.2.2)."""
    if target.startswith("/"):
        return None, target  # the origin-form nearly every client sends: no authority
    scheme, authority, path, query, _ = urlsplit(target)
    if scheme.lower() not in ("http", "https") or not authority:
        return None, target
    return authority, (path or "/") + ("?" + query if query else "")


def header_error(headers):
    """The error in header fields http.server accepted, or None. Its parser takes a line with
    no colon as a body's start, a folded one as part of a value; RFC 9112 §5 says 400."""
    # the parser notes a line it could not read as a field; a bare CR ends its header block
    if headers.defects or headers.get_payload():
        return malformed_header()
    for name, value in headers.raw_items():
        error = field_error(name, value)
        if error:
            return error
    return None


def malformed_header():
    """The 400 for a header line that is not Name: value (RFC 9112 §5)."""
    return ApiError(HTTPStatus.BAD_REQUEST, "A header line is malformed: each must be "
                                            "Name: value.")


def field_error(name, value):
    """The 400 for a header field whose name is not a token (RFC 9110 §5.1), or whose value
    holds NUL, CR or LF, as a folded line's does (RFC 9110 §5.5, RFC 9112 §5.2); or None."""
    if not HEADER_NAME.fullmatch(name):
        return malformed_header()
    if FORBIDDEN_IN_VALUES.search(value):
        return ApiError(HTTPStatus.BAD_REQUEST, "The header %s is malformed or folded." % name)
    return None


# -- The Host check, against DNS rebinding -------------------------------------------------
class MisdirectedRequest(int):
    """421 Misdirected Request (RFC 9110 §15.5.20), which Python 3.6's HTTPStatus lacks: an
    int with the phrase and value that an HTTPStatus has."""

    phrase, description = "Misdirected Request", "Server is not able to produce a response"

    @property
    def value(self):
        return int(self)


def misdirected(host):
    """The 421 for a Host this server does not answer for, naming the option that would."""
    name = host_name(host)
    shown, suggested = (name, name) if HOST_NAME.fullmatch(name) else (repr(name), "NAME")
    return ApiError(MisdirectedRequest(421),
                    "This server answers for localhost and IP addresses only, not for %s; start "
                    "it with --allow-host %s to answer for that name (a guard against DNS "
                    "rebinding)." % (shown, suggested))


HOST_PORT = re.compile(r":[0-9]*$")
HOST_NAME = re.compile(r"[a-z0-9.-]+")


def allowed_hosts(names):
    """The host names --allow-host adds to the local ones, in lower case; None for '*'."""
    return None if "*" in names else frozenset(name.lower() for name in names)


def answers_for(allowed, host):
    """Whether this server answers for a Host header's value: an IP address, localhost, a
    name under .localhost, or one given with --allow-host (None: any). Else a page whose name
    a hostile DNS made resolve to 127.0.0.1 could read and change the users from a browser
    (DNS rebinding)."""
    name = host_name(host)
    return (allowed is None or name == "localhost" or name.endswith(".localhost")
            or name in allowed or is_ip(name))


def host_name(host):
    """The name in a Host header's value, in lower case, without port or IPv6 brackets."""
    name = host.rpartition(":")[0] if HOST_PORT.search(host) else host
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]  # an IPv6 literal: [::1]
    return name.lower()


def is_ip(name):
    """Whether a name is an IPv4 or IPv6 address."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


STOP_GRACE = 5  # seconds that the requests in flight get to finish when the server stops


def stop_gracefully(server):
    """Close each connection once it is idle, waiting at most STOP_GRACE seconds for those
    with a request in flight, so that no write is left without its answer (RFC 9112 §9.6)."""
    server.stopping = True
    deadline = time.monotonic() + STOP_GRACE
    while server.connections and time.monotonic() < deadline:
        for handler in list(server.connections):
            if handler.idle:
                with contextlib.suppress(OSError):  # it may have closed meanwhile
                    handler.connection.shutdown(socket.SHUT_RDWR)
        time.sleep(0.01)


# ---------------------------------------------------------------------------------------
# Appendix B: answers that teach, answers as the client prefers, and bodies in XML
#
# A 412 that names the likely mistake in If-Match, a PUT's hint to PATCH, and errors for
# the clients of RFC 9457 that ask for nothing but problem details.
# ---------------------------------------------------------------------------------------


class TeachingHandler(UsersHandler):
    """UsersHandler whose 412 and 422 name the likely mistake, and which answers a client
    that takes only problem details (Accept: application/problem+json) in that type."""

    def update(self, item_id, partial=False):
        """A PUT that leaves out a field is told that PUT replaces the whole item, and what
        to send instead: a library's "update" may send only what changed."""
        try:
            super().update(item_id, partial)
        except ApiError as error:
            if any(message == "is required" for _, message in error.errors):
                error.detail += (" PUT replaces the whole %s, so it needs every field; PATCH "
                                 "changes only the fields it sends." % self.resource.item)
            raise

    def check_if_match(self, item):
        """The 412 names the likely mistake in If-Match, if one can be seen."""
        try:
            super().check_if_match(item)
        except ApiError as error:
            mistake = if_match_mistake(self.headers.get("If-Match"), self.format)
            error.detail = mistake or error.detail
            raise

    def negotiate(self):
        """A client that takes no JSON or XML but problem details is served its errors in
        them (RFC 9457 §3); whatever would succeed is then a 406."""
        try:
            return super().negotiate()
        except ApiError:
            fmt = problem_only_format(self.headers.get("Accept", ""))
            if fmt is None:
                raise
            self.store = ProblemOnlyStore(self.store)
            return fmt

    def problem_format(self):
        """Problem details in the problem type the client takes, if that is all it takes."""
        accept = self.headers.get("Accept", "") if self.headers else ""
        return choose_format(accept) or problem_only_format(accept) or JSON

    def respond(self, status, body=b"", content_type=None, headers=()):
        """A read that would succeed for a problem-only client is a 406 instead."""
        if isinstance(self.store, ProblemOnlyStore) and status < 400:  # a problem-only client
            raise refused_success()
        super().respond(status, body, content_type, headers)


def refused_success():
    """The 406 for a problem-only client whose request would succeed."""
    return ApiError(HTTPStatus.NOT_ACCEPTABLE, "This client takes only problem details "
                    "(application/problem+json or application/problem+xml), and the request "
                    "would have succeeded; nothing was changed. This service answers in "
                    "%s, %s or %s." % MEDIA_TYPES)


class ProblemOnlyStore:
    """A store's reads, and its writes checked as the store checks them but never made: a
    write that would succeed is the 406 (refused_success)."""

    def __init__(self, store):
        self.store = store

    @property
    def resource(self):
        """The store's resource, by which its items are read."""
        return self.store.resource

    def get(self, item_id):
        """The item with this id, or None."""
        return self.store.get(item_id)

    def list(self, query):
        """(How many items match the query, the page of them.)"""
        return self.store.list(query)

    def create(self, fields, check=None):
        """check()'s errors, the store's 409, else the 406."""
        self.store.create(fields, write=False, check=check)
        raise refused_success()

    def update(self, item_id, change):
        """The store's 404, change()'s errors, the store's 409, else the 406."""
        self.store.update(item_id, change, write=False)
        raise refused_success()

    def delete(self, item_id, check):
        """The store's 404, then check()'s errors, else the 406."""
        self.store.delete(item_id, check, write=False)
        raise refused_success()


def problem_only_format(accept):
    """The Format of the problem type a client takes when it takes only problem details."""
    ranges = parse_accept(accept)
    json_q, xml_q = (quality("application/problem+" + name, ranges) for name in ("json", "xml"))
    return None if max(json_q, xml_q) <= 0 else JSON if json_q >= xml_q else XML


def if_match_mistake(header, fmt):
    """The likely mistake in an If-Match that names no current tag, or None when it looks
    right: then the user has changed since the client read it."""
    if not header.strip():
        return ("If-Match is empty: send the ETag a GET gave, with its quotes, or leave the "
                "header out.")
    tags = [opaque for _, opaque in ENTITY_TAG.findall(header)]
    if not tags:  # RFC 9110 §8.8.3: an entity tag is a quoted string
        return ('ETags are quoted: send If-Match: "%s", with the quotes, as the ETag header '
                'gave it.' % printable(header.strip()))
    other = XML if fmt is JSON else JSON
    stray = [tag for tag in tags if tag.endswith('-%s"' % other.name)]
    if stray:  # JSON and XML have different tags (RFC 9110 §8.8.3)
        return ("If-Match names %s, a tag of the %s representation, and this request asks "
                "for %s: each format has its own ETag, so send the one a GET in %s gave."
                % (printable(stray[0]), other.name.upper(), fmt.name.upper(), fmt.name.upper()))
    return None


# -- The json type: any JSON value, in a field --load (Appendix C) makes -----------------
# XML carries a json value as elements that say their types (type="number", "object", ...),
# so that it reads back the same (json_from_xml): an object's keys must be element names.
# A JSON body's objects become dicts (plain_json), into which a PATCH merges (RFC 7396).


def has_xml_names(value):
    """Whether XML can carry a json field's value: every key (at any depth) can name an
    element, and no string holds a character XML 1.0 cannot carry."""
    if isinstance(value, dict):
        return all(XML_NAME.fullmatch(key) and has_xml_names(member)
                   for key, member in value.items())
    if isinstance(value, str):
        return not XML_INVALID.search(value)
    return all(map(has_xml_names, value)) if isinstance(value, list) else True


def add_json_xml(parent, name, value):
    """Add a json field's value as a child element that says its type unless a string, an
    object's or array's members as elements (an array's each an <item>), so that it reads
    back the same."""
    if isinstance(value, (list, dict)):
        child = ElementTree.SubElement(parent, name)
        child.set("type", "array" if isinstance(value, list) else "object")
        members = value.items() if isinstance(value, dict) else (("item", each) for each in value)
        for key, member in members:
            add_json_xml(child, key, member)
    elif value is None:
        ElementTree.SubElement(parent, name).set("type", "null")
    elif not isinstance(value, str):
        add_xml_value(parent, name, value).set(
            "type", "boolean" if isinstance(value, bool) else "number")
    else:
        add_xml_value(parent, name, value)


def json_from_xml(element):
    """A json field's element as the JSON value it carries: as its type attribute says,
    a string when it has none."""
    kind, text = element.get("type"), element.text or ""
    if kind == "null":
        return None
    if kind == "array":
        return [json_from_xml(child) for child in element]
    if kind == "object":
        return {child.tag: json_from_xml(child) for child in element}
    value = TYPES[kind].from_text(text) if kind in ("number", "boolean") else text
    if kind not in (None, "number", "boolean") or value is None or len(element):
        raise ValueError("an element of type %s holding %s" % (
            kind or "string", "elements" if len(element) else json.dumps(text)))
    return value


def plain_json(value):
    """A value read with ObjectPairs as plain JSON, its objects as dicts (a json field's)."""
    if isinstance(value, ObjectPairs):
        return {key: plain_json(member) for key, member in value}
    if isinstance(value, list):
        return [plain_json(member) for member in value]
    return value


def merge_patch(target, patch):
    """A json field's value with a patch merged in, as RFC 7396 §2 merges: recursively, a
    null removing its key."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


MAX_DEPTH = 100  # levels of arrays and objects in a json field's value
TOO_DEEP = "is nested deeper than %d levels of arrays and objects" % MAX_DEPTH


def check_json(value):
    """Say what is wrong with a json field's value, or return None: any JSON value is right
    (an XmlValue, from an XML body, is not) unless nested so deep that writing it (XML,
    json.dumps) would exhaust Python's recursion for every reader of a list."""
    if not isinstance(value, (type(None), bool, int, float, str, list, dict)):
        return "must be JSON, not " + describe(value)
    return TOO_DEEP if nesting(value) > MAX_DEPTH else None


def nesting(value):
    """How many levels of arrays and objects a value has (a body's objects are ObjectPairs,
    a list of pairs), counted a level at a time, so that no depth is too deep to count."""
    levels, layer = 0, [value]
    while layer:
        layer = [member for each in layer for member in (
            each.values() if isinstance(each, dict) else
            (pair[1] for pair in each) if isinstance(each, ObjectPairs) else
            each if isinstance(each, list) else ())]
        levels += 1
    return levels - 1


TYPES["json"] = Type(check_json, str, None, None, False, add_json_xml, has_xml_names,
                     json_from_xml, plain_json, merge_patch)


# ---------------------------------------------------------------------------------------
# Appendix C: the options: a SQLite store (--db), CORS (--cors) and a fake API, which
# reads the list dialects of front-end libraries too
# ---------------------------------------------------------------------------------------

import collections
import errno
import functools
import itertools
import mimetypes
import os
import random
import sqlite3
import stat
import tempfile
from urllib.parse import unquote

SQL_TYPES = {"string": "TEXT", "integer": "INTEGER", "boolean": "INTEGER", "number": "REAL",
             "json": "TEXT"}  # a json field is kept as its JSON text


def sql_name(name):
    """A table's or column's name quoted for SQL, whatever characters it has."""
    return '"%s"' % name.replace('"', '""')


def column_of(name):
    """The column of the id or a field. A table keeps id and version for itself, and SQLite
    reads names ignoring ASCII case, so a field named so (a client's "version") gets "field:"
    before its name, as does one whose name begins so: no two fields share a column."""
    key = caseless_key(name)
    if name != "id" and (key in ("id", "version") or key.startswith("field:")):
        return "field:" + name
    return name


def column_name(name):
    """The column of the id or a field, quoted for SQL."""
    return sql_name(column_of(name))


def check_columns(resource):
    """Refuse fields whose columns would be one: "tag" and "Tag" are two JSON keys, but one
    name to SQLite, which ignores ASCII case in names."""
    seen = {}
    for field in resource.fields:
        other = seen.setdefault(caseless_key(column_of(field.name)), field.name)
        if other != field.name:
            raise sqlite3.OperationalError(
                "the %s' fields %s and %s differ only in case, and SQLite's column names "
                "ignore case: rename one, or serve them without --db" % (
                    resource.collection, other, field.name))


def sql_column(field, added=False):
    """A field's column: its type; NOT NULL if required, unless added to a table that has
    rows already (their value is the field's none)."""
    required = " NOT NULL" if field.required and not added else ""
    return "%s %s%s" % (column_name(field.name), SQL_TYPES[field.type], required)


def sql_schema(resource):
    """The table of a resource, and the unique indexes its fields ask for."""
    table = resource.collection
    return ["CREATE TABLE IF NOT EXISTS %s (id INTEGER PRIMARY KEY AUTOINCREMENT, %s"
            "version INTEGER NOT NULL DEFAULT 1)" % (sql_name(table), "".join(
                sql_column(field) + ", " for field in resource.fields))] + [
        "CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s%s)" % (
            sql_name("%s_%s_key" % (table, field.name)), sql_name(table),
            column_name(field.name),
            " COLLATE NOCASE" if field.ignores_case else "") for field in resource.unique]


def sql_value(field, value):
    """A field's value as its column keeps it: a json field's as JSON text."""
    return value if field.type != "json" or value is None else json_bytes(value).decode()


def from_sql(field, value):
    """A column's value as the field holds it: a boolean from 0 or 1, JSON from its text."""
    if value is None or field.type not in ("boolean", "json"):
        return value
    return bool(value) if field.type == "boolean" else json.loads(value)


class SQLiteStore:
    """A resource's items in a table of a SQLite file, through one connection guarded by a
    lock, both shared by the stores of the file's other tables.

    The database keeps ids unique and never reused (AUTOINCREMENT) and unique fields unique
    (an index, with NOCASE where case is ignored); every change is committed before the
    store returns, so a response is only sent for a write that is on disk. While it serves,
    the file is this process's alone: SQLite's own exclusive lock, which works the same on
    Linux, macOS and Windows, keeps a second rest_users.py (or any other program) out.
    """

    changes = 0  # writes made so far, as MemoryStore counts them

    PRAGMAS = """
        PRAGMA locking_mode = EXCLUSIVE; -- the file's lock is held until the store closes
        PRAGMA journal_mode = WAL;      -- readers never wait for a writer
        PRAGMA synchronous = NORMAL;    -- in WAL mode a commit survives a killed process
        PRAGMA user_version = 1;        -- a write: a file it cannot write fails now, at start
        CREATE TABLE IF NOT EXISTS rest_users_resources (  -- what --load files declared
            collection TEXT PRIMARY KEY, declaration TEXT NOT NULL);
    """

    def __init__(self, path, resource=USERS, shared=None):  # shared: another table's store
        self.path, self.kept_in, self.resource = path, "the SQLite file %s" % path, resource
        self.table, self.converted = sql_name(resource.collection), any(
            field.type in ("boolean", "json") for field in resource.fields)
        names = [column_name(name) for name in resource.stored] + ["version"]  # the server's
        self.columns, self.assignments = ", ".join(names), ", ".join(n + " = ?" for n in names)
        if shared is not None:
            self.db, self.lock = shared.db, shared.lock
        else:
            self.lock = threading.RLock()  # reentrant: a reference is checked in a write
            # timeout: how long to wait for another program's lock; the file is ours
            self.db = sqlite3.connect(path, check_same_thread=False, timeout=0.2)
            # SQLite's lower() and NOCASE fold ASCII letters only, so q would miss "STRAẞE"
            # for "Straße": Python's casefold() does the folding, as in the memory store
            add_function(self.db, "casefold", lambda text: text and text.casefold())
            self.db.create_function("has_text_in_json", 2, lambda text, wanted: text is not None
                                    and any(wanted in found.casefold()
                                            for found in strings_in(json.loads(text))))
            self.db.create_function("passes_as_json_server", 3, sql_passes_as_json_server)
            self.db.create_function("json_sort_value", 2, lambda text, path: None if (
                text is None) else sql_sort_value(value_at(json.loads(text), json.loads(path))))
        try:
            check_columns(resource)
            self.db.executescript(self.PRAGMAS + ";".join(sql_schema(resource)))
            self.add_missing_columns()
            # SQLite counts rows by reading them all; the store keeps the total itself
            self.count = self.db.execute("SELECT COUNT(*) FROM " + self.table).fetchone()[0]
        except sqlite3.Error as error:
            self.db.close()
            if "locked" in str(error):
                raise sqlite3.OperationalError("another process is using it; one rest_users.py "
                                               "serves a file at a time") from None
            raise

    def add_missing_columns(self):
        """Give a file from a release with fewer fields a column for each new one (its items
        have that field's none, NULL), and every field its two sort indexes."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(%s)" % self.table)}
        with self.db:
            for field in self.resource.fields:
                if column_of(field.name) not in columns:
                    self.db.execute("ALTER TABLE %s ADD COLUMN %s" % (
                        self.table, sql_column(field, True)))
                # one index per sort order, so a sorted page reads only its own rows
                for suffix, order in (("", ""), ("_desc", " DESC")):
                    self.db.execute("CREATE INDEX IF NOT EXISTS %s ON %s (%s%s)" % (sql_name(
                        "%s_by_%s%s" % (self.resource.collection, field.name, suffix)),
                        self.table, column_name(field.name), order))

    @contextlib.contextmanager
    def failures_answered(self):
        """Turn a failing database into an answer a client can act on, and one log line:
        507 when the disk is full, 503 and Retry-After when it is locked or failing. The
        transaction has been rolled back, so nothing changed."""
        try:
            yield
        except sqlite3.Error as error:  # an IntegrityError is a 409, found where it happens
            print("rest_users: %s: %s" % (self.path, error), file=sys.stderr)
            if "full" in str(error):  # SQLITE_FULL: "database or disk is full"
                raise ApiError(HTTPStatus.INSUFFICIENT_STORAGE, "The server's disk is full: "
                               "nothing was changed. Try again once there is space.") from None
            raise ApiError(HTTPStatus.SERVICE_UNAVAILABLE, "The database is locked or failing "
                           "just now: nothing was changed. Try again.",
                           headers=[("Retry-After", "1")]) from None

    def item(self, row):
        """An item from its row: the values of booleans and json fields as they were."""
        if not self.converted:
            return Item(row)
        return Item((row[0], *[from_sql(field, value) for field, value in zip(
            self.resource.fields, row[1:])], row[-1]))

    def row(self, item):
        """An item's row: its values as the columns keep them."""
        if not self.converted:
            return tuple(item)
        return (item[0],) + tuple(sql_value(field, value) for field, value in zip(
            self.resource.fields, item[1:])) + (item[-1],)

    def get(self, item_id):
        """Return the item with this id, or None."""
        with self.lock, self.failures_answered():
            return self.select(item_id)

    def select(self, item_id):
        """Read one item; the caller holds the lock."""
        row = self.db.execute("SELECT %s FROM %s WHERE id = ?" % (self.columns, self.table),
                              (item_id,)).fetchone()
        return self.item(row) if row else None

    def list(self, query):
        """Return (how many items match the query, the page of them): SQL does the work."""
        conditions, arguments = [], []
        for field, test, values in query.filters:  # field and test are names, never client text
            conditions.append(sql_condition(self.resource, field, test, len(values)))
            arguments += sql_arguments(self.resource, field, test, values)
        searched = self.resource.searched
        if query.q is not None:  # instr(), not LIKE: % and _ are plain text in q
            conditions.append("(%s)" % " OR ".join([sql_search(self.resource, name)
                                                    for name in searched] or ["0"]))
            arguments += [query.q.casefold()] * len(searched)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        order = ", ".join(sql_order(self.resource, key) + (" DESC" if key[0] == "-" else "")
                          for key in query.sort + ("id",))  # keys from the sort keys only
        with self.lock, self.failures_answered():
            total = self.count if not conditions else self.db.execute(
                "SELECT COUNT(*) FROM %s%s" % (self.table, where), arguments).fetchone()[0]
            rows = self.db.execute("SELECT %s FROM %s%s ORDER BY %s LIMIT ? OFFSET ?" % (
                self.columns, self.table, where, order), arguments + sql_order_arguments(
                    self.resource, query.sort) + [query.limit, query.offset]).fetchall()
        return total, [self.item(row) for row in rows]

    def write(self, sql, item, *more):
        """Insert or update an item's row; a unique value taken is the 409 naming it."""
        try:
            return self.db.execute(sql, self.row(item) + more)
        except sqlite3.IntegrityError as error:
            for field in self.resource.unique:  # "UNIQUE constraint failed: users.email"
                if str(error).endswith(".%s" % column_of(field.name)):
                    raise Taken(self.resource, field,
                                item[self.resource.position[field.name]]) from None
            raise

    def create(self, fields, write=True, check=None):
        """Insert an item with these {field: value}s, after check(item) has passed, and return
        it; 409 if a unique value is taken. write=False checks the write, and rolls it back
        (as update and delete take it)."""
        item = new_item(self.resource, None, fields)
        with self.lock, self.failures_answered():
            if check is not None:
                check(item)
            with self.db:  # commits, or rolls back on an exception
                try:
                    cursor = self.write("INSERT INTO %s (%s) VALUES (%s)" % (
                        self.table, self.columns, ", ".join("?" * len(item))), item)
                except sqlite3.OperationalError:  # "full" says no id is left too
                    self.check_ids_left()
                    raise
                if not write:
                    return self.db.rollback()
            self.count += 1
            self.changes += 1
            return item.with_id(cursor.lastrowid)

    def check_ids_left(self):
        """The 507 that says so when the table has given its last id: SQLite says then that
        the disk is full, which it may not be."""
        given = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = ?",
                                (self.resource.collection,)).fetchone()
        if given and given[0] == MAX_ID:
            raise NoIdLeft(self.resource)

    def update(self, item_id, change, write=True):
        """Apply change(current item) -> {field: value} and return the updated item."""
        with self.lock, self.failures_answered():
            with self.db:
                current = self.select(item_id)
                if current is None:
                    raise NotFound(self.resource, item_id)
                item = new_version(self.resource, current, change(current))
                self.write("UPDATE %s SET %s WHERE id = ?" % (self.table, self.assignments),
                           item, item_id)
                if not write:
                    self.db.rollback()
                    return item
            self.changes += 1
            return item

    def delete(self, item_id, check, write=True):
        """Delete the item after check(current item) has passed, and return it."""
        with self.lock, self.failures_answered():
            with self.db if not self.db.in_transaction else contextlib.suppress():
                current = self.select(item_id)  # in a delete's transaction: deleted with it
                if current is None:
                    raise NotFound(self.resource, item_id)
                if write:  # first, in the transaction that check's refusal rolls back, so
                    self.db.execute(  # that the items check deletes with it go with it
                        "DELETE FROM %s WHERE id = ?" % self.table, (item_id,))
                check(current)
                if not write:
                    return current
            self.count -= 1
            self.changes += 1
            return current

    def load(self, items):
        """Add checked items that have ids and differ in unique values (--load), in one
        transaction."""
        with self.lock, self.failures_answered():
            with self.db:
                self.db.executemany("INSERT INTO %s (%s) VALUES (%s)" % (
                    self.table, self.columns, ", ".join("?" * (len(self.resource.stored) + 1))),
                    [self.row(item) for item in items])
            self.count += len(items)
            self.changes += 1

    def never_held(self):
        """Whether the table has never held an item (AUTOINCREMENT notes the last id given)."""
        with self.lock, self.failures_answered():
            return not self.count and not self.db.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = ?",
                (self.resource.collection,)).fetchall()

    def keep_declaration(self):
        """Keep what a --load file told of this resource: its item, and the fields read off it."""
        fields = [{"name": field.name, "type": field.type, "required": field.required,
                   "refers_to": field.refers_to, "max_length": field.max_length,
                   "searched": field.searched}
                  for field in self.resource.fields if getattr(field, "inferred", False)]
        if fields or getattr(self.resource, "inferred", False):
            with self.lock, self.failures_answered(), self.db:
                self.db.execute("INSERT OR REPLACE INTO rest_users_resources VALUES (?, ?)", (
                    self.resource.collection, json.dumps({
                        "item": self.resource.item, "singular": self.resource.singular,
                        "fields": fields})))

    def reset(self, items):
        """A file is not reset over HTTP (POST /__admin/reset): 409, nothing changed."""
        raise ApiError(HTTPStatus.CONFLICT, "This server keeps its %s in %s, and a database "
                       "file is not reset over HTTP: nothing was changed." % (
                           self.resource.collection, self.kept_in))

    def close(self):
        """Close the database (waiting for a request that is using it); again does nothing."""
        with self.lock:
            self.db.close()


SQL_TESTS = {"eq": "%s IN (%s)", "ne": "%s NOT IN (%s)", "lt": "%s < ?", "lte": "%s <= ?",
             "gt": "%s > ?", "gte": "%s >= ?", "contains": "instr(casefold(%s), ?) > 0",
             "startsWith": "instr(casefold(%s), ?) = 1",  # found first at the start
             "endsWith": "substr(casefold(%s), ?) = ?"}  # the last len(value) characters


def sql_condition(resource, field, test, count):
    """The SQL of a Filter, with count values; caseless fields are equal ignoring ASCII case
    (NOCASE), as emails are. json-server's tests (a key inside a json field, _like) are
    Python's, as the memory store makes them."""
    if field not in resource.position or test == "like":
        return "passes_as_json_server(%s, ?, ?)" % column_name(field.partition(".")[0])
    column = column_name(field) + (" COLLATE NOCASE" if field in resource.caseless
                                and test in ("eq", "ne") else "")
    return SQL_TESTS[test] % ((column, ", ".join("?" * count)) if test in ("eq", "ne")
                              else column)


def sql_arguments(resource, field, test, values):
    """The arguments sql_condition's SQL takes for these values."""
    if field not in resource.position or test == "like":  # the path in the JSON, the test
        kind = "json" if field not in resource.fields_by_name else resource.fields_by_name[
            field].type  # a boolean column holds 0 or 1
        return [json.dumps([field.split(".")[1:], test, kind]), json.dumps(values)]
    if test in ("eq", "ne", "lt", "lte", "gt", "gte"):
        return list(values)
    text = values[0].casefold()
    return [-len(text), text] if test == "endsWith" else [text]


def sql_search(resource, name):
    """The SQL that finds q, casefolded, in a searched field: in a json field's strings."""
    if name in resource.from_json:
        return "has_text_in_json(%s, ?)" % column_name(name)
    return "instr(casefold(%s), ?)" % column_name(name)


def sql_order(resource, key):
    """The SQL a sort key orders by: its column, or the value at a key inside a json field
    (_sort=address.city), whose path is an argument (sql_order_arguments)."""
    name = key.lstrip("-")
    if name in resource.position:
        return column_name(name)
    return "json_sort_value(%s, ?)" % column_name(name.partition(".")[0])


def sql_order_arguments(resource, keys):
    """The paths, in JSON, of the sort keys inside a json field, in order."""
    return [json.dumps(key.lstrip("-").split(".")[1:]) for key in keys
            if key.lstrip("-") not in resource.position]


def sql_sort_value(value):
    """A value inside a json field as SQL orders it, as json_sort_value does in memory:
    NULL, then numbers (booleans as 0 and 1), text, and objects and arrays as their JSON."""
    return json_bytes(value) if isinstance(value, (dict, list)) else value


def sql_passes_as_json_server(value, path_and_test, values):
    """passes_as_json_server for SQL: a value, or a json field's JSON text and the path
    inside it, with the test, and the values as JSON."""
    (path, test, kind), values = json.loads(path_and_test), json.loads(values)
    if path and value is not None:
        value = value_at(json.loads(value), path)
    elif kind == "boolean" and value is not None:
        value = bool(value)
    return passes_as_json_server(value, test, values)


def add_function(db, name, function):
    """Let SQL call a one-argument Python function. deterministic=True (Python 3.8 and SQLite
    3.8.3 on) only lets SQLite plan better, so it is used where it is there."""
    try:
        db.create_function(name, 1, function, deterministic=True)
    except (TypeError, sqlite3.NotSupportedError):
        db.create_function(name, 1, function)


# -- References between resources: checked, nested, embedded ------------------------------
# A field that refers to another resource (todos.userId to users) makes a write's reference
# a 422 when it names no item, a delete of an item referred to a 409, and, as json-server
# does, nests the referring collection under the item (/users/1/todos) and lets a read add
# related items: _embed=todos on a user, _expand=user on a todo.

class ReferenceHandler(UsersHandler):
    """UsersHandler whose resources refer to each other."""

    parent_id = None  # the id in a nested route's path: /users/1/todos

    @classmethod
    def route_table(cls, resources=None):
        """The nested routes, besides the others."""
        resources = resources or RESOURCES
        return super().route_table(resources) + [
            found for parent in resources for found in nested_routes(parent, resources)]

    def list(self, parent_id=None):
        """Under a parent (/users/1/todos), the items that refer to it; 404 if it is none."""
        if parent_id is not None:  # a nested route's: the others have no parent to check
            self.check_parent(parent_id)
        super().list()

    def create(self, parent_id=None):
        """Under a parent (/users/1/todos), an item that refers to it; 404 if it is none."""
        if parent_id is not None:
            self.check_parent(parent_id)
        super().create()

    def check_parent(self, parent_id):
        """The 404 for a nested route under an item that does not exist."""
        self.parent_id, parent = parent_id, self.route.parent[0]
        if self.server.stores[parent.collection].get(parent_id) is None:
            raise NotFound(parent, parent_id)

    def relate(self, query_string=""):
        """A nested route, and _embed and _expand read apart from the list's own parameters."""
        added, pairs = (), ()
        if "_e" in query_string or "embed" in query_string:
            parts = query_string.split("&")
            is_related = [part.partition("=")[0] in RELATED for part in parts]
            if any(is_related) and relations(self.resource, self.server.resources):
                pairs = query_pairs("&".join(
                    part for part, related in zip(parts, is_related) if related))
                added = read_related(self.resource, self.server.resources, pairs)[1]
                query_string = "&".join(part for part, related in zip(parts, is_related)
                                        if not related)
        if pairs or self.route.parent is not None:
            self.related = References(self, added, pairs)
        return query_string

    def retrieve(self, item_id):
        """_embed and _expand, if the query has them (the rest of it is no matter here)."""
        added = ()
        if self.query and relations(self.resource, self.server.resources):  # none: no _embed
            added = read_related(self.resource, self.server.resources, parse_qsl(
                self.query, keep_blank_values=True))[1]
        if not added:
            return super().retrieve(item_id)
        self.related = References(self, added)
        item = self.store.get(item_id)
        if item is None:
            raise NotFound(self.resource, item_id)
        # no ETag: the item's version does not change with the items added to it, and a
        # strong validator must change with the representation (RFC 9110 §8.8.3)
        self.respond(HTTPStatus.OK, self.render(item), self.format.content_type)

    def check_write(self, item):
        """A 422 for each field whose reference names no item (the store holds its lock)."""
        super().check_write(item)
        if not self.resource.references:  # the declaration says it refers to nothing
            return
        # a reference the item already makes is not checked again, so that an orphan a
        # json-server file holds can be changed otherwise, as json-server lets it be
        current = self.store.get(item.id)
        kept = set(references_of(self.resource, current, self.server.resources)
                   if current else ())
        errors = [(field.name, "there is no %s with id %s" % (referred.item, value))
                  for field, referred, value in references_of(self.resource, item,
                                                              self.server.resources)
                  if (field, referred, value) not in kept
                  and self.server.stores[referred.collection].get(value) is None]
        if errors:
            raise Invalid(self.resource, errors)

    def check_delete(self, item):
        """A 409 when items refer to this one, naming each resource and how many: nothing
        is lost without being asked (json-server would delete them too). Asked with
        ?_dependent=comments (json-server 1.0's), the comments that refer to it go with it:
        each is checked first, so that all go or none does."""
        super().check_delete(item)
        referring = [(self.server.stores[child.collection], ids)
                     for child, ids in referring_ids(self.server, self.resource, item.id)]
        asked = dependents_asked(self.query, self.resource, self.server.resources)
        if any(store.resource.collection not in asked for store, _ in referring):
            raise ApiError(HTTPStatus.CONFLICT, referred_to(self.resource, item.id, [
                (store.resource, len(ids)) for store, ids in referring]))
        only_checked = isinstance(self.store, ProblemOnlyStore)  # the delete too: a 406
        for write in (False,) if only_checked else (False, True):  # checked, then deleted
            for store, ids in referring:
                for child_id in ids:
                    store.delete(child_id, lambda child: self.check_unreferred(
                        store.resource, child), write)

    def check_unreferred(self, resource, item):
        """The 409 for an item that others refer to (an item _dependent would delete)."""
        counts = [(child, len(ids))
                  for child, ids in referring_ids(self.server, resource, item.id)]
        if counts:
            raise ApiError(HTTPStatus.CONFLICT, referred_to(resource, item.id, counts))


def referred_to(resource, item_id, counts):
    """The 409's detail for an item others refer to, from (resource, count) pairs: "... by
    1 todo; change or delete it first", "... by 1 todo and 1 note; ... delete them first",
    and how to delete them with it."""
    named = in_words(["%d %s" % (count, child.item if count == 1 else child.collection)
                      for child, count in counts])
    them = "it" if sum(count for _, count in counts) == 1 else "them"
    return ("The %s with id %s is referred to by %s; change or delete %s first, or delete %s "
            "too with DELETE %s/%s?_dependent=%s: nothing was deleted." % (
                resource.item, item_id, named, them, them, resource.path, item_id,
                ",".join(child.collection for child, _ in counts)))


def referring_ids(server, resource, item_id):
    """(resource, the ids of its items) for each served resource whose items refer to
    this item, if any do."""
    found = [(child, [each.id for each in server.stores[child.collection].list(ListQuery(
        MAX_ID, 0, ("id",), (Filter(field, "eq", (item_id,)),), None))[1]])
        for child, field in referrers(resource, server.resources)]
    return [(child, ids) for child, ids in found if ids]


def dependents_asked(query, resource, resources):
    """The resources a DELETE's ?_dependent=comments,likes asks to delete with the item;
    a 400 for a name that is not a resource referring to it."""
    names = [name for parameter, value in parse_qsl(query, keep_blank_values=True)
             if parameter == "_dependent" for name in value.split(",")]
    referring = [child.collection for child, _ in referrers(resource, resources)]
    for name in names:
        if name not in referring:
            raise BadQuery("_dependent takes %s, the resources that refer to %s, not %s." % (
                in_words(referring, "or") or "nothing here", a_or_an(resource.item),
                printable(name) if name else "an empty name"))
    return names


def nested_routes(parent, resources):
    """The collections under an item that other resources' fields refer to, as json-server
    nests them: /users/{id}/todos lists and creates the todos of a user."""
    return [route("%s/{id}%s" % (parent.path, child.path), r"%s/(%s)%s/?" % (
        re.escape(parent.path), ITEM_ID.pattern, re.escape(child.path)), COLLECTION_ACTIONS,
        child, parent=(parent, field.name))
        for child in resources for field in child.fields
        if field.refers_to == parent.collection]


def references_of(resource, item, resources):
    """(field, referred resource, id) for each reference an item makes to a served resource."""
    if not resource.references:
        return []  # most resources refer to none: no dict to build
    served = {other.collection: other for other in resources}
    return [(field, served[field.refers_to], item[resource.position[field.name]])
            for field in resource.references if field.refers_to in served
            and not is_none(item[resource.position[field.name]])]


def referrers(resource, resources):
    """(resource, field) for each field of a served resource that refers to this one."""
    return [(other, field.name) for other in resources for field in other.fields
            if field.refers_to == resource.collection]


RELATED = ("_embed", "_expand", "embed")  # json-server's, and react-admin simple-rest's


def json_names(text):
    """react-admin simple-rest's embed=["todos"]: a JSON array of names; else a 400."""
    try:
        names = json.loads(text)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise BadQuery('embed must be a JSON array of names, like ["todos"], not %s.'
                       % printable(text))
    return names


def relations(resource, resources):
    """Whether a resource refers to a served one, or a served one to it."""
    return bool(referrers(resource, resources) or parents(resource, resources))


def parents(resource, resources):
    """{item name: (resource, field)} of the served resources this one refers to."""
    return {other.item: (other, field.name) for other in resources for field in resource.fields
            if field.refers_to == other.collection}


class References(Related):
    """What a nested route gives a request (/users/1/todos: userId 1, and its links' path),
    and the items _embed and _expand add to each item it answers with."""

    def __init__(self, handler, added=(), pairs=()):
        self.handler, self.added, self.pairs = handler, added, pairs
        parent = handler.route.parent
        if parent is not None:
            self.given = {parent[1]: handler.parent_id}
            self.path = "%s/%s%s" % (parent[0].path, handler.parent_id, handler.resource.path)

    def document(self, resource, item):
        """A read's item with the items _embed and _expand add to it, in JSON."""
        document = item_document(resource, item)
        for name, (other, added) in self.related_to(item).items() if self.added else ():
            document[name] = ([item_document(other, each) for each in added]
                              if isinstance(added, list) else
                              None if added is None else item_document(other, added))
        return document

    def element(self, resource, item):
        """A read's item with the items _embed and _expand add to it, in XML: <todos> of
        <todo>s, a <user>."""
        element = item_element(resource, item)
        for name, (other, added) in self.related_to(item).items() if self.added else ():
            if isinstance(added, list):
                element.append(xml_element(name, {}, [item_element(other, each)
                                                      for each in added]))
            elif added is not None:
                element.append(item_element(other, added))
        return element

    def related_to(self, item):
        """The items _embed and _expand add to an item a read answers with, by the name they
        go under, each with its resource."""
        added = {}
        handler = self.handler
        for _, name, other, field, embedded in (
                self.added if handler.command in ("GET", "HEAD") else ()):
            store = handler.server.stores[other.collection]
            if embedded:  # the items of another resource that refer to this one
                found = store.list(ListQuery(MAX_ID, 0, ("id",), (
                    Filter(field, "eq", (item.id,)),), None))[1]
            else:  # the item this one refers to, or None
                value = item[handler.resource.position[field]]
                found = store.get(value) if not is_none(value) else None
            added[name] = store.resource, found  # the store's, as new as its items
        return added


def read_related(resource, resources, pairs):
    """The query pairs but _embed, _expand and embed, and what those add to each item:
    (parameter, name, resource, field, embedded): the items of a resource that refer to
    this one (_embed=todos), or the item this one refers to (_expand=user; _embed=user
    in json-server 1.0). An unknown name is a 400."""
    children = {child.collection: (child, field)
                for child, field in referrers(resource, resources)}
    referred = parents(resource, resources)
    related, rest = [], []
    for parameter, value in pairs:
        names = [value] if parameter != "embed" else json_names(value)
        for name in names if parameter in RELATED else ():
            found = children.get(name) if parameter != "_expand" else None
            if found is None and name not in referred:
                raise BadQuery("%s takes %s, not %s." % (parameter, in_words(
                    list(children if parameter != "_expand" else ()) + list(referred), "or")
                    or "nothing here", printable(str(name))))
            other, field = found or referred[name]
            related.append((parameter, name, other, field, found is not None))
        if parameter not in RELATED:
            rest.append((parameter, value))
    return rest, related


# -- CORS: letting a page from another origin call the API (--cors) ------------------------
class CorsHandler(UsersHandler):
    """UsersHandler that lets pages from the --cors origins read its answers (the Fetch
    standard's CORS protocol), and says in the log why a page elsewhere cannot."""

    def response_fields(self, status, body, content_type, headers):
        """The CORS headers after a response's own, on every answer to an allowed origin,
        unless the route says it carries none."""
        origin = None if self.headers is None else self.headers.get("Origin")
        if origin is not None and (self.route is None or self.route.cors):  # else no CORS
            cors = cors_headers(self.server.cors, self.headers)  # request (Fetch's Origin)
            if not cors:
                self.note_refused_origin(origin)
            headers = list(headers) + cors
        return super().response_fields(status, body, content_type, headers)

    def answer_options(self, found):
        """An OPTIONS from an allowed origin that asks for a method is a preflight: 204 with
        what the browser may send; none for a route that carries no CORS."""
        preflight = cors_preflight_headers(self.server.cors, self.headers, found.allow) if (
            found.cors) else []
        self.respond(HTTPStatus.NO_CONTENT, headers=[("Allow", found.allow)] + preflight)

    def note_refused_origin(self, origin):
        """Log, the first time, an origin that gets no CORS headers: its page sees only
        "Failed to fetch", and this line tells its developer why. The page's own origin
        needs no CORS, and is not logged."""
        if origin.partition("://")[2].lower() == (self.headers.get("Host") or "").lower():
            return
        with self.server.cors_lock:
            if origin in self.server.refused_origins or len(self.server.refused_origins) >= 1000:
                return  # logged already, or too many to remember: no flood of lines
            self.server.refused_origins.add(origin)
        if not self.server.quiet:
            self.log_message("A page at %s may not read the answers (CORS): start the server "
                             "with --cors %s to allow it.", printable(origin), printable(origin))


class CorsServer(UsersServer):
    """UsersServer with the CORS origins its handlers allow: "*" for any, a set of them
    (LOOPBACK among them unless no_cors), or None for none; and the origins refused so far."""

    handler_class = CorsHandler
    quiet = False  # EdgeServer's --quiet silences the line about a refused origin too

    def __init__(self, *args, cors=None, no_cors=False, **options):
        self.cors = allowed_origins(cors, loopback=not no_cors)
        self.refused_origins, self.cors_lock = set(), threading.Lock()
        if self.cors not in (None, "*"):
            self.vary = "Accept, Origin"  # only those origins get the CORS headers
        super().__init__(*args, **options)


class BaseUrl(str):
    """The base URL running() yields, http://127.0.0.1:PORT, usable as any str; test code
    also resets the server and reads its journal through it, without an HTTP call."""

    def __new__(cls, url, server):
        base_url = super().__new__(cls, url)
        base_url.server = server
        return base_url

    def reset(self):
        """As POST /__admin/reset: back to the starting users, the journal emptied."""
        self.server.reset()

    def requests(self):
        """As GET /__admin/requests: the requests to /users, oldest first."""
        return self.server.journal.entries()


# Headers a browser may send and read across origins when --cors is on: those this service
# reads, and what front-end libraries send (Range, X-Requested-With); and those it answers.
CORS_ALLOWED_HEADERS = ("Authorization", "Content-Type", "If-Match", "If-None-Match", "Prefer",
                        "Range", "X-Requested-With")
CORS_EXPOSED_HEADERS = ("Location, ETag, Link, X-Total-Count, Content-Range, Retry-After, "
                        "Preference-Applied")


# A page of the user's own may call the API, as json-server lets every page do: one served
# from this machine (http://localhost:5173, Vite's; http://127.0.0.1:3000), on any port. A
# page on the web may not, unless --cors names it: it could rewrite the user's data.
LOOPBACK = "a loopback origin"


def allowed_origins(cors, loopback=True):
    """The origins --cors names (one, or a list: the option repeats), and LOOPBACK unless
    --no-cors, as "*", a set, or None."""
    origins = [cors] if isinstance(cors, str) else list(cors or [])
    if "*" in origins:
        return "*"
    return set(origins) | ({LOOPBACK} if loopback else set()) or None


def is_loopback_origin(origin):
    """Whether an origin is a page's on this machine: localhost, a name under .localhost
    (RFC 6761 §6.3) or a loopback address, over HTTP or HTTPS, on any port."""
    try:
        parts = urlsplit(origin)
        parts.port  # a ValueError if the port is not a number
    except ValueError:  # or if a [ is not closed
        return False
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host or parts.username is not None or (
            parts.path or parts.query or parts.fragment):  # an origin has none of them
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost" or host.endswith(".localhost")


def cors_origin(allowed, headers):
    """The Access-Control-Allow-Origin for a request, or None when CORS does not apply."""
    if allowed is None or headers is None or "Origin" not in headers:
        return None
    if allowed == "*":
        return "*"
    origin = headers.get("Origin")
    return origin if origin in allowed or (LOOPBACK in allowed and is_loopback_origin(
        origin)) else None


def cors_headers(allowed, headers):
    """The CORS headers every response to an allowed origin carries."""
    origin = cors_origin(allowed, headers)
    if origin is None:
        return []
    return [("Access-Control-Allow-Origin", origin),
            ("Access-Control-Expose-Headers", CORS_EXPOSED_HEADERS)]


def cors_preflight_headers(allowed, headers, methods):
    """The answer to a CORS preflight (an OPTIONS asking for a method), or [] for others."""
    if cors_origin(allowed, headers) is None or "Access-Control-Request-Method" not in headers:
        return []
    asked = headers.get("Access-Control-Request-Headers", "")
    return [("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers", ", ".join(headers_to_allow(asked))),
            ("Access-Control-Max-Age", "600")]


def headers_to_allow(asked):
    """The headers a preflight's page may send: ours, then those it asked for that are field
    names. Any other is harmless here, as the service reads only the headers it knows."""
    allowed = list(CORS_ALLOWED_HEADERS)
    for name in (part.strip() for part in asked.split(",")):
        if HEADER_NAME.fullmatch(name) and name.lower() not in map(str.lower, allowed):
            allowed.append(name)
    return allowed


# -- A fake API: what front ends and test suites ask of one ------------------------------
# The test controls carry no CORS headers, whatever --cors says: a page on another origin
# must neither reset the API nor read what was sent to it
ADMIN_ROUTES = [route("/__admin/reset", r"/__admin/reset", {"POST": "reset"}, cors=False),
                route("/__admin/requests", r"/__admin/requests",
                      {"GET": "list_requests", "DELETE": "clear_requests"}, cors=False)]
ADMIN_REFUSED = ("A request to /__admin/ from a web page on another origin is refused: the "
                 "test controls are for test runners, never for pages a browser visits.")


class FakeApiHandler(UsersHandler):
    """UsersHandler whose answers for the resources can come late (--delay) or fail
    (--fail-rate), with test controls under /__admin/: a reset, and the journal of the
    requests for the resources."""

    added_routes = ADMIN_ROUTES  # the test controls' routes

    def handle_api_request(self):
        """json-server's --routes rewrite the target first; then a GET of a path that no
        route takes is a file of --static's folder, if the folder has it."""
        if self.server.fake_api.rewrites:
            self.path = rewritten(self.server.fake_api.rewrites, self.path)
        if self.server.fake_api.static is None or not self.sent_static_file():
            super().handle_api_request()

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_api_request

    def sent_static_file(self):
        """Send the file of --static's folder a GET asks for, if any: its index.html at /,
        and the explorer at /__explorer instead. Whether it was sent."""
        path, mark, query = self.path.partition("?")
        if path == "/__explorer":
            self.path = "/" + mark + query
        if self.command not in ("GET", "HEAD") or path != "/" and self.find_route(
                path)[0] is not None:
            return False
        found = static_file(self.server.fake_api.static, path)
        try:
            with open(found or "", "rb") as file:
                body = file.read()
        except OSError:  # none, or none that can be read: the 404 of a path with nothing
            return False
        self.respond(HTTPStatus.OK, body, static_type(found))
        return True

    @classmethod
    def keyed_paths(cls, resources):
        """The test controls need the key too, and GET /db, which holds every resource."""
        return super().keyed_paths(resources) + ("/__admin", "/db")
    body_received = b""  # this request's body, once read

    def check_caller(self):
        """After the checks of who asks: a test control is refused to a page on another
        origin, and --fail-rate may fail a request for a resource."""
        super().check_caller()
        if is_admin_target(self.path) and self.from_another_origin():
            raise ApiError(HTTPStatus.FORBIDDEN, ADMIN_REFUSED)
        if self.server.fake_api.fail_rate and self.for_resource():  # without it, no match
            fail_on_demand(self.server.fake_api.fail_rate, self.command)

    def from_another_origin(self):
        """Whether a browser sent this from a page on another origin, as its Origin (RFC 6454
        §7) or Sec-Fetch-Site (W3C Fetch Metadata) says. CORS keeps such a page from reading
        an answer, not from sending a form or a no-cors fetch that resets the store."""
        origin, host = self.headers.get("Origin"), self.headers.get("Host", "").lower()
        return (origin is not None and origin.lower() not in ("http://" + host, "https://" + host)
                or self.headers.get("Sec-Fetch-Site") in ("cross-site", "same-site"))

    def read_body(self):
        """Keep the body for the journal."""
        self.body_received = super().read_body()
        return self.body_received

    def write_response(self, status, fields, body):
        """As its answer leaves, a request for a resource goes into the journal; with
        --delay, the answer waits here (a write it reports is already done). Every response
        leaves through write_response, so none is left out of the journal."""
        if self.headers is not None and self.for_resource():
            self.server.journal.add(self.command, self.path, self.headers.items(),
                                    self.body_received, status)
            self.body_received = b""
            if self.command != "OPTIONS":
                wait_for_delay(self.server.fake_api.delay)
        super().write_response(status, fields, body)

    def for_resource(self):
        """Whether this request's target is a resource's, or under one: /users, /users/1?x."""
        return self.server.resource_targets.match(self.path) is not None

    def reset(self):
        """POST /__admin/reset: back to the items the server started with; 409 with --db."""
        self.server.reset()
        self.respond(HTTPStatus.NO_CONTENT)

    def list_requests(self):
        """GET /__admin/requests: the journal, oldest first, in JSON."""
        self.respond(HTTPStatus.OK, json_bytes({"requests": self.server.journal.entries()}),
                     JSON_TYPE)

    def clear_requests(self):
        """DELETE /__admin/requests: empty the journal."""
        self.server.journal.clear()
        self.respond(HTTPStatus.NO_CONTENT)

    def retrieve_one(self):
        """GET /profile: a singular resource's item (--load's "profile": {...})."""
        self.retrieve(ONLY_ID)

    def update_one(self):
        """PUT /profile: replace a singular resource's item."""
        self.update(ONLY_ID)

    def partial_update_one(self):
        """PATCH /profile: change some of a singular resource's fields."""
        self.partial_update(ONLY_ID)


class FakeApiServer(UsersServer):
    """UsersServer with the fake API's options (a FakeApi) and its journal."""

    handler_class = FakeApiHandler

    def __init__(self, *args, fake_api=None, **options):
        self.fake_api, self.journal = fake_api or FakeApi(), Journal()
        super().__init__(*args, **options)
        self.resource_targets = resource_targets(self.resources)

    def reset(self):
        """Back to the items the server started with, new ids after them, and the journal
        emptied: a test's known state. A database file is not reset over HTTP (409)."""
        for store in self.stores.values():
            store.reset(self.fake_api.starting_items(store.resource))
        self.journal.clear()


def is_admin_target(target):
    """Whether a target is /__admin or under it: /__admin/reset, /__admin?x, not /__adminx."""
    return target.startswith("/__admin") and target[8:9] in ("", "/", "?")


def resource_targets(resources):
    """What the targets of requests for the resources match: /users, /users/1?x."""
    return re.compile(r"(?:%s)(?:[/?]|$)" % "|".join(
        re.escape(resource.path) for resource in resources))


class ResettableMemoryStore(MemoryStore):
    """MemoryStore that can go back to a list of items (POST /__admin/reset)."""

    def reset(self, items):
        """Hold these items and none else, as a new store given them would."""
        with self.lock:
            self.start(items)
            self.changes += 1


class Journal:
    """The last requests to the resources, kept as they came, bounded in count and in bytes
    whatever the traffic (each request's header fields cut), and written out only when asked
    for, so that keeping them costs a request almost nothing. A lock keeps the count of
    bytes true between threads."""

    LIMIT = 1000  # requests kept
    MAX_BYTES = 16 * 2 ** 20  # in all, the oldest going first: a bound on memory
    MAX_BODY = 64 * 1024  # bytes of each body kept
    MAX_FIELDS = 8 * 1024  # characters of each request's header fields, names and values

    def __init__(self):
        self.kept, self.size = collections.deque(maxlen=self.LIMIT), 0
        self.lock = threading.Lock()

    def add(self, method, target, fields, body, status):
        """Keep one request, as it is answered: its method, target, header fields as (name,
        value) pairs, body, status and the time (within a millisecond of when it came)."""
        fields, characters = list(fields), 0  # a copy: the caller's list is its own
        for name, value in fields:  # for a few fields, quicker than sum() and map()
            characters += len(name) + len(value)
        if characters > self.MAX_FIELDS:
            fields, characters = cut_fields(fields, self.MAX_FIELDS), self.MAX_FIELDS
        body = body[:self.MAX_BODY]
        size = len(target) + len(body) + characters  # roughly its bytes
        self.lock.acquire()  # not `with`, which costs twice as much
        try:
            if len(self.kept) == self.kept.maxlen:  # the oldest leaves as this one comes
                self.size -= self.kept[0][-1]
            self.kept.append((method, target, fields, body, status, time.time(), size))
            self.size += size
            while self.size > self.MAX_BYTES:  # after requests with large bodies
                self.size -= self.kept.popleft()[-1]
        finally:
            self.lock.release()

    def entries(self):
        """The requests kept, oldest first, as JSON objects."""
        with self.lock:
            kept = list(self.kept)
        return [journal_entry(*request[:-1]) for request in kept]

    def clear(self):
        """Forget every request."""
        with self.lock:
            self.kept.clear()
            self.size = 0


def cut_fields(pairs, budget):
    """Header fields as (name, value) pairs, up to a budget of characters in all: the value
    that crosses it is cut and ends in "...", and the fields after it are left out."""
    kept = []
    for name, value in pairs:
        if len(name) + len(value) > budget:
            kept.append((name[:budget], value[:max(0, budget - len(name))] + "..."))
            break
        kept.append((name, value))
        budget -= len(name) + len(value)
    return kept


# Credentials are shown as *** (a browser sends localhost's cookies of other apps too)
MASKED_FIELDS = {"authorization": "scheme", "proxy-authorization": "scheme", "cookie": "all",
                 "x-api-key": "all"}
KEY_IN_QUERY = re.compile(r"([?&](?:api_key|api-key|apikey|access_token|token|key)=)[^&#]*",
                          re.IGNORECASE)


def journal_entry(method, target, pairs, body, status, received_at):
    """A kept request as the journal shows it, credentials and cookies masked."""
    fields = {}
    for name, value in pairs:
        fields[name] = fields[name] + ", " + value if name in fields else value
    for name in list(fields):
        masked = MASKED_FIELDS.get(name.lower())
        if masked:
            fields[name] = fields[name].split(" ")[0] + " ***" if masked == "scheme" else "***"
    return {"method": method, "target": KEY_IN_QUERY.sub(r"\1***", target), "headers": fields,
            "body": body.decode("utf-8", errors="replace"), "status": int(status),
            "received": rfc3339(received_at)}


def rfc3339(seconds):
    """A time as RFC 3339 in UTC, to the millisecond: 2026-11-24T05:32:17.123Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%03dZ" % (
        seconds % 1 * 1000)


MAX_DELAY = 60000  # milliseconds
MAX_FAKE_USERS = 1000000


def can_fake(resource):
    """Whether a resource's fields say how to make up its items (users' do: --fake-users)."""
    return any(field.fake for field in resource.fields)


class FakeApi:
    """The options that make the service a fake API: answers that take time (--delay) or
    fail (--fail-rate), and items to start with (--fake-users; --load, or running()'s
    users=), of the resources it serves."""

    def __init__(self, delay=0, fail_rate=0.0, fake_users=0, load=None, users=None,
                 resources=None, routes=None, static=None):
        low, high = (delay, delay) if isinstance(delay, int) else delay
        if not 0 <= low <= high <= MAX_DELAY:
            raise ValueError("delay is milliseconds from 0 to %d, or a (min, max) pair of "
                             "them, not %r" % (MAX_DELAY, delay))
        if not 0 <= fail_rate <= 1:
            raise ValueError("fail_rate is a share of requests, from 0 to 1, not %r" % fail_rate)
        if not 0 <= fake_users <= MAX_FAKE_USERS:
            raise ValueError("fake_users is from 0 to %d, not %r" % (MAX_FAKE_USERS, fake_users))
        if load is not None and users is not None:
            raise ValueError("load reads users from a file, users takes them: give one")
        self.delay, self.fail_rate, self.fake_users = (low, high), fail_rate, fake_users
        self.rewrites = read_rewrite_rules(routes) if routes else []  # json-server's --routes
        self.static = static_folder(static) if static else None  # and its --static
        self.resources = list(resources or RESOURCES)
        if fake_users and not any(map(can_fake, self.resources)):
            raise ValueError("fake_users makes up items of a resource whose fields say how "
                             "(users'), and none served does: %s" % ", ".join(
                                 resource.collection for resource in self.resources))
        if load is not None:
            expected = "a JSON array of %s or object of resources" % self.resources[0].collection
            self.items = self.read(read_load_file(load, expected), load)
        else:
            entries = [list(user.items()) if isinstance(user, dict) else user
                       for user in users or []]
            first = self.resources[0]  # users, unless a learner serves others
            self.items = {first.collection: items_from_entries(first, entries, "users=")
                          } if entries else {}

    def read(self, document, source):
        """The items of a --load file, by collection: an array is the first resource's (users',
        unless a learner serves others), an object holds the collections of json-server's
        db.json."""
        if not isinstance(document, ObjectPairs):
            first = self.resources[0]
            return {first.collection: items_from_entries(first, document, source)}
        self.resources, entries = resources_from_file(document, self.resources, source)
        items = {resource.collection: items_from_entries(
            resource, entries[resource.collection], source, "%s: " % resource.collection)
            for resource in self.resources if resource.collection in entries}
        check_file_references(self.resources, items, source)
        return items

    def starting_items(self, resource):
        """The loaded items, then, for a resource whose fields say how to fake them (users'),
        the fake ones after them (ValueError if they share a unique value)."""
        loaded = self.items.get(resource.collection, [])
        if not self.fake_users or not can_fake(resource):
            return loaded
        first_id = max([item.id for item in loaded], default=0) + 1
        fakes = [fake_item(resource, item_id)
                 for item_id in range(first_id, first_id + self.fake_users)]
        for field in resource.unique:
            position = resource.position[field.name]
            taken = {unique_key(field, item[position]) for item in loaded}
            for fake in (fake for fake in fakes if unique_key(field, fake[position]) in taken):
                raise ValueError("the loaded %s %s is fake %s %d's too" % (
                    field.name, fake[position], resource.item, fake.id))
        return loaded + fakes

    def add_items_to(self, store):
        """Start a SQLite table that never held an item with its starting items. One that
        did is left as it is, even emptied: its ids are never given again."""
        if store.never_held():
            items = self.starting_items(store.resource)
            if items:
                store.load(items)

    def add_stored(self, declarations):
        """Serve what a database file stored of the resources a --load file gave it, so
        that a start without the file serves the same resources and fields."""
        for collection, declaration in declarations:
            known = next((each for each in self.resources if each.collection == collection),
                         None)
            fields = [Field(**field) for field in declaration["fields"]
                      if known is None or field["name"] not in known.fields_by_name]
            kind = SingularResource if declaration["singular"] else Resource
            resource = kind(collection, (known.fields if known else ()) + tuple(fields),
                            item=declaration["item"])
            resource.json_server = True  # a db.json's, as when the file was loaded
            self.resources = [resource if each is known else each for each in self.resources]
            if known is None:
                self.resources.append(resource)


EVERYONE_BY_ID = ListQuery(limit=1, offset=0, sort=("id",), filters=(), q=None)


def fail_on_demand(rate, method):
    """With --fail-rate, answer that share of requests for the resources, chosen at random,
    with a 503 before anything changes, so that a client's retries can be tried (RFC 9110
    §15.6.4)."""
    if not rate or method == "OPTIONS":
        return
    if random.random() < rate:
        raise ApiError(HTTPStatus.SERVICE_UNAVAILABLE, "This failure was asked for: the server "
                       "runs with --fail-rate %s. Try again." % rate, headers=[("Retry-After", "1")])


def wait_for_delay(delay):
    """With --delay, hold back the answer to a /users request, so that a front end can be
    seen loading. Only this request's thread waits; its write, if any, is already done."""
    low, high = delay
    if high:
        time.sleep(random.randint(low, high) / 1000)


# json-server 0.17's --routes, as express-urlrewrite reads them (with path-to-regexp 1): :name
# is one segment, * anything, \\? a literal ?; a rule matches the path and query, in any case
REWRITE_PARTS = re.compile(r"\\(.)|:(\w+)|(\*)|(.)", re.DOTALL)


def read_rewrite_rules(path):
    """The rules of a --routes file, {"/api/*": "/$1", "/blog/:id": "/posts/:id"}, in its
    order, each as (pattern, names of its groups, target); a ValueError names a mistake."""
    try:
        with open(path, "rb") as file:
            document = json.loads(file.read().decode("utf-8"), object_pairs_hook=ObjectPairs)
    except OSError as error:
        raise ValueError("%s: cannot be read: %s" % (path, error.strerror)) from None
    except ValueError as error:  # UnicodeDecodeError too
        raise ValueError("%s: is not JSON: %s" % (path, error)) from None
    if not isinstance(document, ObjectPairs):
        raise ValueError('%s: is not a JSON object of rules, as {"/api/*": "/$1"}' % path)
    for source, target in document:
        if not isinstance(target, str):
            raise ValueError("%s: the rule %s must rewrite to a string, not %s" % (
                path, source, describe(target)))
    return [rewrite_rule(source, target) for source, target in document]


def rewrite_rule(source, target):
    """One rule: the pattern of its source, the names of its groups (None for a *), and
    its target."""
    pattern, names = "", []
    for escaped, name, star, other in REWRITE_PARTS.findall(source):
        if name or star:
            names.append(name or None)
            pattern += "([^/]+?)" if name else "(.*)"
        else:
            pattern += re.escape(escaped or other)
    return re.compile(pattern + "(?:/(?=$))?$", re.IGNORECASE), names, target


def rewritten(rules, target):
    """A request target once each rule that matches it has rewritten it, in turn, as
    json-server does: in the rule's target, $1 is the first group, :name a named one."""
    for pattern, names, rewrite_to in rules:
        match = pattern.match(target)
        if match:
            target = re.sub(r"\$([0-9]+)|:(\w+)", lambda part: rewritten_part(
                match, names, *part.groups()) or "", rewrite_to)
    return target


def rewritten_part(match, names, number, name):
    """What $1 or :name in a rule's target stands for, or None."""
    if number is not None:
        return match.group(int(number)) if int(number) <= len(names) else None
    return match.group(names.index(name) + 1) if name in names else ":" + name


def static_folder(path):
    """--static's folder, with every link resolved; a ValueError if it is no folder."""
    if not os.path.isdir(path):
        raise ValueError("%s: is not a folder, for --static" % path)
    return os.path.realpath(path)


def static_file(folder, path):
    """The file in the folder a path names, or None: never one outside it, by .., by an
    encoded slash (%2F, %5C) or by a link, and never a hidden one (.env)."""
    lowered = path.lower()
    if "%2f" in lowered or "%5c" in lowered or "\\" in path:
        return None
    try:
        names = unquote(path, errors="strict").split("/")
    except UnicodeDecodeError:
        return None
    if any(name.startswith(".") or "\0" in name for name in names):
        return None
    found = os.path.realpath(os.path.join(folder, *names))  # every link resolved
    if os.path.isdir(found):
        found = os.path.realpath(os.path.join(found, "index.html"))
    inside = os.path.commonpath([folder, found]) == folder
    return found if inside and os.path.isfile(found) else None


def static_type(path):
    """A file's Content-Type, as its name says; text in UTF-8."""
    media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
    textual = media_type.startswith("text/") or media_type in ("application/javascript",
                                                                "application/json")
    return media_type + ("; charset=utf-8" if textual else "")


# A singular resource: json-server serves "profile": {...} as one item at /profile
SINGULAR_ACTIONS = {"GET": "retrieve_one", "PUT": "update_one", "PATCH": "partial_update_one"}
ONLY_ID = 1  # a singular resource's one item is kept with this id


class SingularResource(Resource):
    """A resource of one item, read, replaced and changed, never made or deleted: it has no
    list, and shows no id."""

    singular = True

    def __init__(self, collection, fields, *, item=None):
        super().__init__(collection, fields, item=item or collection)
        self.columns, self.shown = self.stored[1:], 1  # what a client sees: no id
        self.routes = [Route(self.path, re.compile(re.escape(self.path) + "/?"),
                             SINGULAR_ACTIONS, "GET, HEAD, PUT, PATCH, OPTIONS", self, True, None)]


def read_load_file(path, expected):
    """The document of a --load file, an array of items or json-server's db.json object, or a
    ValueError saying it is not what was expected."""
    try:
        with open(path, "rb") as file:
            text = file.read().decode("utf-8")
    except OSError as error:
        raise ValueError("%s: cannot be read: %s" % (path, error.strerror)) from None
    except UnicodeDecodeError:
        raise ValueError("%s: is not UTF-8 text" % path) from None
    try:
        document = json.loads(text, object_pairs_hook=ObjectPairs, parse_constant=refuse_constant)
    except RecursionError:  # deeper than Python's recursion: deeper than any value may be
        raise ValueError("%s: %s" % (path, TOO_DEEP)) from None
    except ValueError as error:
        raise ValueError("%s: is not %s: %s" % (path, expected, error)) from None
    if not isinstance(document, list):
        raise ValueError("%s: is not %s" % (path, expected))
    return document


def items_from_entries(resource, entries, source, within=""):
    """Check each entry as POST checks a body, and its id if it has one; give the items
    without an id the ids after the largest given. A mistake is a ValueError naming it."""
    items, ids, taken = [], {}, {field.name: {} for field in resource.unique}
    for number, entry in enumerate(entries, 1):
        where = "%s: %s%s %d of %d: " % (source, within, resource.item, number, len(entries))
        if not isinstance(entry, ObjectPairs) and not (isinstance(entry, list) and all(
                isinstance(pair, tuple) for pair in entry)):
            raise ValueError(where + "must be an object with %s and optionally id"
                             % ", ".join(resource.field_names))
        item = item_from_entry(resource, entry, where, digit_ids=bool(within))
        if item.id in ids:
            raise ValueError(where + "the id %s is %s %d's too" % (item.id, resource.item,
                                                                   ids[item.id]))
        for field in resource.unique:
            key = unique_key(field, item[resource.position[field.name]])
            if key is not None and key in taken[field.name]:
                raise ValueError(where + "the %s %s is %s %d's too%s" % (
                    field.name, item[resource.position[field.name]], resource.item,
                    taken[field.name][key], " (compared ignoring case)" if field.ignores_case
                    else ""))
            taken[field.name][key] = number
        if item.id is not None:
            ids[item.id] = number
        items.append(item)
    if isinstance(resource, TextIdResource):  # as json-server 1.0 gives them: random
        return [item if item.id else item._replace(id=new_text_id(ids)) for item in items]
    new_ids = itertools.count(max(ids, default=0) + 1)
    items = [item if item.id else item.with_id(next(new_ids)) for item in items]
    if items and max(item.id for item in items) > MAX_ID:
        raise ValueError("%s: the %s have no id left for the items without one: ids end at %d"
                         % (source, resource.collection, MAX_ID))
    return items


def item_from_entry(resource, pairs, where, digit_ids=False):
    """One checked entry as an item, its id None when it has none; with digit_ids, an id
    may be a string of digits, as json-server 1.0 writes them."""
    given_ids = [value for field, value in pairs if field == "id"]
    try:
        fields = validate(resource, [(field, value) for field, value in pairs if field != "id"])
    except ApiError as error:
        raise ValueError(where + "; ".join("%s %s" % pair for pair in error.errors)) from None
    if len(given_ids) > 1:
        raise ValueError(where + "id is given more than once")
    if given_ids and isinstance(resource, TextIdResource):
        return new_item(resource, text_id(resource, given_ids[0], where), fields)
    if digit_ids and given_ids and isinstance(given_ids[0], str) and DIGITS.fullmatch(
            given_ids[0]):
        given_ids[0] = int(given_ids[0])
    if given_ids and not (type(given_ids[0]) is int and 1 <= given_ids[0] <= MAX_ID):
        raise ValueError(where + "id must be a whole number from 1 to %d" % MAX_ID)
    return new_item(resource, given_ids[0] if given_ids else None, fields)


MAX_LOADED_LENGTH = 10000  # characters in a string of a resource read off a file
MAX_RESOURCE_NAME = 100  # characters
OWN_PATHS = ("openapi.json", "db")  # the server's own, beside / and /__admin/
CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_resources(resources):
    """Refuse, with a ValueError of one line naming it, what the server cannot serve as
    declared: a name it cannot take, a reference to a resource not served, a field twice."""
    served = [resource.collection for resource in resources]
    check_names(served)
    for resource in resources:
        names = [field.name for field in resource.fields]
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise ValueError("%s: the field %s is declared twice" % (resource.collection, twice))
        for field in resource.fields:
            if field.refers_to is not None and field.refers_to not in served:
                raise ValueError("%s: the field %s refers to %s, which is not served (%s %s)" % (
                    resource.collection, field.name, field.refers_to, in_words(served),
                    "are" if len(served) > 1 else "is"))


def check_names(names, source=None):
    """Refuse a resource name that is no path of its own, or that equals another's but for
    case (SQLite's table names ignore case), with a ValueError naming it."""
    seen = {}
    for name in names:
        problem, other = name_problem(name), seen.setdefault(name.casefold(), name)
        if problem is None and other != name:
            problem = "a resource name cannot equal another's but for case, as " + quoted(other)
        if problem:
            raise ValueError("%s%s: %s" % (source + ": " if source else "", quoted(name), problem))


def quoted(name):
    """A name in double quotes, its control characters escaped as JSON escapes them."""
    return json.dumps(name, ensure_ascii=False)


def name_problem(name):
    """What keeps a name from being a resource's, whose path is its name percent-encoded
    (RFC 3986 §2.1), or None."""
    if not name:
        return "a resource name cannot be empty"
    held = next((character for character in "/?#" if character in name), None)
    if held:  # a path's own separators: the name would be another path, a query, a fragment
        return 'a resource name cannot hold "%s"' % held
    if CONTROL_CHARACTER.search(name):
        return "a resource name cannot hold a control character"
    if name.startswith("__"):
        return "a resource name cannot begin with __, as the server's own paths do (/__admin/)"
    if len(name) > MAX_RESOURCE_NAME:
        return "a resource name is at most %d characters, not %d" % (MAX_RESOURCE_NAME, len(name))
    if name in OWN_PATHS:
        return "/%s is a path of the server's own" % name
    return None


def resources_from_file(document, declared, source, text_ids=False, suffix="Id"):
    """The resources a db.json object holds, and each one's entries: a declared resource
    (users) keeps its fields and gains any other key of its items as an optional field;
    another one gets the fields its items show. An array is a collection; with text_ids,
    one with an id of text that is not digits is a TextIdResource."""
    resources, entries = list(declared), {}
    check_names([name for name, _ in document], source)
    texts = {name for name, value in document if text_ids and has_text_ids(value)}
    names = [name for name, _ in document if name not in texts]  # what a key may refer to
    for name, value in document:
        singular = isinstance(value, ObjectPairs)  # an object: one item, as /profile
        if singular:
            value = ObjectPairs([ObjectPairs([("id", ONLY_ID)] + value)])
        if not isinstance(value, list):
            raise ValueError("%s: %s: is %s, not an array of items or an object" % (
                source, name, describe(value)))
        if not all(isinstance(entry, ObjectPairs) for entry in value):
            number = next(number for number, entry in enumerate(value, 1)
                          if not isinstance(entry, ObjectPairs))
            raise ValueError("%s: %s: item %d of %d: is %s, not an object" % (
                source, name, number, len(value), describe(value[number - 1])))
        known = next((resource for resource in declared if resource.collection == name), None)
        fields = inferred_fields(value, names, known.field_names if known else None, suffix)
        try:
            kind = (SingularResource if singular else TextIdResource if name in texts
                    else Resource)
            item = known.item if known else None  # None: its name less its s, a singular's key
            if item is None and not singular and not name.endswith("s"):
                item = name  # people: json-server takes any name, and so its items are people
            resource = kind(name, (known.fields if known else ()) + fields, item=item)
        except ValueError as error:
            raise ValueError("%s: %s: %s" % (source, name, error)) from None
        resources = [resource if each is known else each for each in resources]
        resource.json_server = True  # a db.json's: listed as json-server lists (Appendix C)
        if known is None:
            resource.inferred = True  # read off a file: the database keeps it (--db)
            resources.append(resource)
        entries[name] = [[(key, digits_as_integer(resource, key, member))
                          for key, member in entry] for entry in value]
    return resources, entries


def inferred_fields(entries, collections, declared=None, suffix="Id"):
    """The fields json-server would see in a collection's items: each key's type is the
    JSON type its values share, required when every item has a value (for a resource not
    declared); a key xxxId of integers refers to the collection xxxs when the file has it
    (xxx_id with json-server's --foreignKeySuffix _id)."""
    keys = [key for key in dict.fromkeys(key for entry in entries for key, _ in entry)
            if key != "id" and key not in (declared or ())]
    fields = []
    for key in keys:
        values = [dict(entry).get(key) for entry in entries]
        given = [value for value in values if value is not None]
        kind, refers_to = json_type(given), None
        if key.endswith(suffix) and key[:-len(suffix)] + "s" in collections and all(
                type(value) is int or isinstance(value, str) and DIGITS.fullmatch(value)
                for value in given):  # json-server 1.0 writes ids as strings of digits
            kind, refers_to = "integer", key[:-len(suffix)] + "s"
        fields.append(Field(key, kind,
                            required=declared is None and len(given) == len(values) > 0,
                            refers_to=refers_to, searched=kind in ("string", "json"),
                            example=given[0] if given and kind != "json"
                            else None,
                            max_length=MAX_LOADED_LENGTH if kind == "string" else None))
        fields[-1].inferred = True  # read off a file: the database keeps it (--db)
    return tuple(fields)


def json_type(values):
    """The type a key's values share: integers and numbers together are numbers; values of
    several types, or objects and arrays, are json."""
    kinds = {"boolean" if isinstance(value, bool) else "integer" if isinstance(value, int)
             else "number" if isinstance(value, float) else "string" if isinstance(value, str)
             else "json" for value in values}
    if kinds <= {"integer", "number"} and kinds:
        return "number" if "number" in kinds else "integer"
    return kinds.pop() if len(kinds) == 1 else "json" if kinds else "string"


def digits_as_integer(resource, key, value):
    """A reference written as a string of digits, as json-server 1.0 writes ids, as the
    integer it stands for."""
    field = resource.fields_by_name.get(key)
    if field is not None and field.refers_to and isinstance(value, str) and (
            DIGITS.fullmatch(value)):
        return int(value)
    return value


def check_file_references(resources, items, source):
    """Every reference a file's items make names an item of the file; a ValueError if not."""
    for resource, field, item, value in broken_references(resources, items):
        raise ValueError("%s: %s: %s %d: %s %s names no item of %s" % (
            source, resource.collection, resource.item, item.id, field.name, value,
            field.refers_to))


def broken_references(resources, items):
    """(resource, field, item, value) for each reference of a file's items to no item."""
    ids = {collection: {item.id for item in loaded} for collection, loaded in items.items()}
    for resource in resources:
        for field in (field for field in resource.fields if field.refers_to):
            position = resource.position[field.name]
            for item in items.get(resource.collection, []):
                if not is_none(item[position]) and item[position] not in ids.get(
                        field.refers_to, ()):
                    yield resource, field, item, item[position]


# -- The file as the store: `python rest_users.py db.json`, as json-server serves it --------
# A json-server user keeps db.json in git and edits it by hand: here the file is the API.
# Every change is in the file before it is answered, the file replaced whole and atomically
# (POSIX rename(2)), written as json-server writes it, so that `git diff db.json` shows just
# the change; and an edit by anyone else is served once the file is valid JSON again.
MAKE_ONE = "make one with: echo '{\"posts\": []}' > %s"
WATCH_EVERY = 0.1  # seconds between looks at the file for an edit by hand: a stat(2)
EVERYTHING = ListQuery(limit=MAX_ID, offset=0, sort=("id",), filters=(), q=None)


class DbFile:
    """The db.json a server serves and keeps: its document at start (what a reset brings
    back), and how it looked on disk when last read or written (an edit changes that)."""

    def __init__(self, path, id_key="id", suffix="Id"):
        self.path, self.name, self.stores = path, os.path.basename(path), []
        self.id_key, self.suffix = id_key, suffix  # json-server's --id and --foreignKeySuffix
        self.started = read_db_file(path)
        self.seen = file_signature(path)
        self.refused = None  # why the file on disk was not taken, while it is not

    def contents(self, document, warn=True):
        """The resources and items of a document; a reference to a missing item (json-server's
        deletes leave them) is kept as it is, with a line per resource when warn."""
        resources, entries = resources_from_file(renamed_ids(document, self.id_key, "id"), [],
                                                 self.path, True, self.suffix)
        resources = [self.opened(resource, file_layout(entries[resource.collection]))
                     for resource in resources]
        items = {resource.collection: items_from_entries(
            resource, entries[resource.collection], self.path, "%s: " % resource.collection)
            for resource in resources}
        lines = idless_lines(entries, self.id_key, self.path) + orphan_lines(resources, items,
                                                                             self.path)
        for line in lines if warn else ():
            print(line, file=sys.stderr, flush=True)
        return resources, items

    def opened(self, resource, layout):
        """A resource as the file keeps it: each item with its own keys, none required (open
        fields, as json-server takes any), its id named as --id names it, and written as
        the file's layout says."""
        resource.open_fields = resource.json_server = True
        resource.layout = layout
        for field in resource.fields:
            field.required, field.default = False, ABSENT
        if self.id_key != "id" and not resource.singular:  # what a client sees: "_id" first
            resource.columns = (self.id_key,) + resource.stored[1:]
        return resource

    def save(self, stores):
        """Write the stores' items over the file, as json-server does; the caller locks.
        One that cannot be written (read-only, disk full) is a 507."""
        try:
            replace_file(os.path.realpath(self.path), self.encode(stores))  # a link stays
            self.seen = file_signature(self.path)
        except OSError as error:
            print("rest_users: %s: %s" % (self.path, error), file=sys.stderr)
            raise ApiError(HTTPStatus.INSUFFICIENT_STORAGE, "The change could not be saved in "
                           "%s (%s): nothing was changed." % (self.name, error.strerror or
                                                               error)) from None

    def encode(self, stores):
        """The file that holds these stores' items, as a list of bytes to write."""
        return [file_bytes(stores)]

    def prepare(self):
        """Make ahead what saving the file will need: nothing here (Appendix F makes the
        items' texts)."""

    def check_replaceable(self):
        """A 503 if a write would replace an edit by hand not taken: one not yet seen, or
        one not valid (an editor's half-saved file), which the user would lose."""
        if self.refused is None and not self.edited():
            return
        reason = ("is not valid (%s): nothing was changed, so as not to replace it; writes "
                  "resume once the file is valid." % self.refused if self.refused else
                  "changed on disk and is not served yet: nothing was changed. Try again.")
        raise ApiError(HTTPStatus.SERVICE_UNAVAILABLE, "%s on disk %s" % (self.name, reason),
                       headers=[("Retry-After", "1")])

    def edited(self):
        """Whether the file has changed on disk since it was last read or written."""
        try:
            return file_signature(self.path) != self.seen
        except OSError:  # gone for a moment, as an editor saves: not an edit yet
            return False


def renamed_ids(document, old, new):
    """A db.json's document with its collections' items' key old named new (--id)."""
    if old == new:
        return document
    return ObjectPairs((name, collection if isinstance(collection, ObjectPairs) else [
        ObjectPairs((new if key == old else key, value) for key, value in entry)
        if isinstance(entry, ObjectPairs) else entry for entry in collection]
        if isinstance(collection, list) else collection) for name, collection in document)


def read_db_file(path):
    """A db.json's document, or a ValueError saying what is wrong and how to make one."""
    try:
        document = read_load_file(path, "a JSON object of resources")
        if not isinstance(document, ObjectPairs) or not document:
            raise ValueError("%s: is not a JSON object of resources" % path)
    except ValueError as error:
        raise ValueError("%s; %s" % (error, MAKE_ONE % path)) from None
    return document


def file_signature(path):
    """What changes when a file is written: its inode (a rename), size and time."""
    status = os.stat(path)
    return status.st_ino, status.st_size, status.st_mtime_ns


# How a collection's items look in the file, which a write keeps, so that the file's lines
# stay as they are: the keys before the id (JSONPlaceholder's posts have userId first), and
# in a collection of text ids (json-server 0.17 adds "abc" to 1..24), those that are numbers
# and the place of each (served sorted as text, written as the file lists them, new ones last)
FileLayout = collections.namedtuple("FileLayout", "before_id number_ids order")


def file_layout(entries):
    """The layout of a collection's entries in the file."""
    keys = list(dict.fromkeys(key for entry in entries for key, _ in entry))
    ids = [value for entry in entries for key, value in entry if key == "id"]
    texts = any(isinstance(value, str) for value in ids)  # integer ids stay integers anyway
    return FileLayout(frozenset(keys[:keys.index("id")] if "id" in keys else ()),
                      {str(value) for value in ids if texts and type(value) is int},
                      {str(value): place for place, value in enumerate(ids) if texts})


def in_file_order(resource, items):
    """Items as the file lists them: a text-id collection's in its places, new ones last."""
    layout = getattr(resource, "layout", None)  # a resource not of a file: id order
    if layout is None or not layout.order:
        return list(items)
    return sorted(items, key=lambda item: layout.order.get(item.id, len(layout.order)))


def file_document(resource, item):
    """An item as the file holds it: its id where, and as, the file has it."""
    document = item_document(resource, item)
    layout = getattr(resource, "layout", None)  # a resource not of a file: id first
    if resource.singular or layout is None:
        return document
    (name, value), *pairs = document.items()
    at = sum(key in layout.before_id for key, _ in pairs)
    return dict(pairs[:at] + [(name, int(value) if value in layout.number_ids else value)]
                + pairs[at:])


def database_document(stores):
    """The whole API as json-server's db.json holds it: each collection an array of its items,
    a singular resource its one object."""
    document = {}
    for store in stores:
        items = [file_document(store.resource, item)
                 for item in in_file_order(store.resource, store.list(EVERYTHING)[1])]
        document[store.resource.collection] = items[0] if store.resource.singular else items
    return document


def file_bytes(stores):
    """The file json-server writes: JSON.stringify(db, null, 2), non-ASCII as itself."""
    return json.dumps(database_document(stores), indent=2, ensure_ascii=False).encode("utf-8")


def replace_file(path, pieces):
    """Put bytes in place of the file at path, whole or not at all: written to a temporary
    file in the same folder, synced to disk, then renamed over it (rename(2) is atomic),
    keeping the file's mode; a read-only file is an OSError, as it would be for json-server."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if not mode & 0o222 or not os.access(path, os.W_OK):  # root may write a read-only file
        raise PermissionError(errno.EACCES, "the file is read-only")
    descriptor, temporary = tempfile.mkstemp(prefix=".%s." % os.path.basename(path),
                                             dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.writelines(pieces)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def idless_lines(entries, id_key, source):
    """A line per collection whose items lack an id: each is given one, which its first
    write saves in the file, so a key that looks like the id (MongoDB's _id) is named."""
    lines = []
    for collection, items in entries.items():
        idless = [item for item in items if isinstance(item, list) and
                  not any(key == "id" for key, value in item)] if isinstance(items, list) else []
        if idless:
            likely = [key for key, value in idless[0] if key.lower() in ("_id", "uuid", "key")]
            lines.append('%s: %s: %d of %d items have no "%s", and are given one, saved in the '
                         'file at its first write%s' % (
                             source, collection, len(idless), len(items), id_key, "".join(
                                 '; is "%s" their id? then start with --id %s' % (key, key)
                                 for key in likely[:1])))
    return lines


def orphan_lines(resources, items, source):
    """A line per resource whose items refer to items the file lacks, naming them."""
    missing = collections.OrderedDict()
    for resource, field, item, value in broken_references(resources, items):
        missing.setdefault((resource.collection, field.name, field.refers_to), []).append(value)
    return ["%s: %s: %s names %s missing from the file: %s; served and saved as they are" % (
        source, collection, name, referred, ", ".join(map(str, sorted(set(values)))))
        for (collection, name, referred), values in missing.items()]


class TextIdResource(Resource):
    """A collection whose ids are text, as json-server 1.0's "042c" or MongoDB's: served as
    given, matched exactly in a path, sorted as text; new ones random hex (new_text_id)."""

    def __init__(self, collection, fields, *, item=None):
        super().__init__(collection, fields, item=item)
        self.routes[1] = route(self.path + "/{id}", r"%s/([^/]+)/?" % re.escape(self.path),
                               ITEM_ACTIONS, self)


def has_text_ids(entries):
    """Whether a collection's entries have an id of text other than digits."""
    return isinstance(entries, list) and any(
        isinstance(entry, ObjectPairs) and any(key == "id" and isinstance(value, str) and not
                                               DIGITS.fullmatch(value) for key, value in entry)
        for entry in entries)


def text_id(resource, value, where=""):
    """An id of a TextIdResource as its text: a path's digits came as a number."""
    if type(value) is int or isinstance(value, str) and value and "/" not in value:
        return str(value)
    raise ValueError(where + "id must be text without a slash, or a whole number")


def new_text_id(taken):
    """An id that none of taken has, made as json-server 1.0 makes one: random hex,
    four digits, longer when those are nearly all taken."""
    for attempt in itertools.count():
        candidate = os.urandom(2 + attempt // 8).hex()
        if candidate not in taken:
            return candidate


# The id a POST gives, as json-server takes it, from the handler that read it to the store
# that makes the item, in the thread that answers the request (FileHandler.read_item_body)
GIVEN_ID = threading.local()


class FileKeptStore(ResettableMemoryStore):
    """ResettableMemoryStore whose changes, when the server keeps a file, are in the file
    before they are answered; a change that cannot be saved is undone, and is a 507."""

    db_file = None  # the DbFile of the server, when it keeps one

    def __init__(self, *args, **kwargs):
        """A MemoryStore's start, knowing once whether its ids are text."""
        super().__init__(*args, **kwargs)
        # a resource served anew keeps its kind (serve_fields): decided once, not per request
        self.text_ids = isinstance(self.resource, TextIdResource)

    def create(self, fields, write=True, check=None):
        """The core's create, saved; items kept in id order, a given id among them."""
        with self.lock:
            before = self.before_change(write) if self.db_file else None  # none: none to save
            last_id = self.last_id
            item = super().create(fields, write, check)
            if item is not None and self.text_ids:  # written last, as json-server adds it
                self.resource.layout.order.setdefault(item.id, len(self.resource.layout.order))
            if item is not None and (self.text_ids or item.id < last_id):
                self.items = dict(sorted(self.items.items()))
                self.last_id = last_id if self.text_ids else max(last_id, item.id)
            return item if before is None else self.saved(before, item)

    def update(self, item_id, change, write=True):
        """The core's update, saved."""
        with self.lock:
            before = self.before_change(write) if self.db_file else None
            item_id = self.own_id(item_id) if self.text_ids else item_id
            item = super().update(item_id, change, write)
            return item if before is None else self.saved(before, item)

    def delete(self, item_id, check, write=True):
        """The core's delete, saved."""
        with self.lock:
            before = self.before_change(write) if self.db_file else None
            item = super().delete(self.own_id(item_id) if self.text_ids else item_id, check, write)
            return item if before is None else self.saved(before, item)

    def get(self, item_id):
        """The core's get, of an id as the store keeps it."""
        return super().get(self.own_id(item_id) if self.text_ids else item_id)

    def list(self, query):
        """The core's list, under the lock where a write may add a field: every item of the
        page is read by the positions of one resource."""
        if not self.resource.open_fields:
            return super().list(query)
        with self.lock:
            return super().list(query)

    def admit(self, pairs):
        """The resource whose fields take a body's (key, value) pairs: a file's gains a field
        for a key not seen before and widens a field for a value of another type, so that
        no write of JSON is refused for its keys or types (json-server takes any)."""
        with self.lock:
            fields = opened_fields(self.resource, pairs)
            if fields != self.resource.fields:
                self.serve_fields(fields)
            return self.resource

    def serve_fields(self, fields):
        """Serve a resource with these fields from now on, every item given ABSENT for the
        fields added (or cut to those kept), so that its values stay where the resource
        says (the caller locks)."""
        old, last_id, changes = self.resource, self.last_id, self.changes
        added, width = (ABSENT,) * max(0, len(fields) - len(old.fields)), len(fields) + 1
        items = [Item((item[:-1] + added)[:width] + item[-1:]) for item in self.items.values()]
        self.resource = self.db_file.opened(type(old)(old.collection, fields, item=old.item),
                                            old.layout)
        self.start(items)
        self.last_id, self.changes = last_id, changes + 1  # no page kept from before

    def own_id(self, item_id):
        """An id as the store keeps it: a text id that a path's digits made a number, text."""
        return str(item_id) if self.text_ids and type(item_id) is int else item_id

    def next_id(self):
        """The id a POST gave, if not in use (409 if it is); else a text id as json-server 1.0
        makes one, or a number after the last, as the core's."""
        given, GIVEN_ID.value = getattr(GIVEN_ID, "value", None), None
        if given is not None and self.own_id(given) in self.items:
            raise ApiError(HTTPStatus.CONFLICT, "Another %s already has the id %s." % (
                self.resource.item, given))
        if given is not None:
            return self.own_id(given)
        return new_text_id(self.items) if self.text_ids else super().next_id()

    def before_change(self, write):
        """What to go back to if a write cannot be saved: None if nothing is to be saved.
        A store the server no longer serves (the file was edited meanwhile) takes no write."""
        if write and self.db_file and self not in self.db_file.stores:
            raise ApiError(HTTPStatus.SERVICE_UNAVAILABLE, "%s changed on disk while this "
                           "request waited: nothing was changed. Try again." % (
                               self.db_file.name), headers=[("Retry-After", "1")])
        if write and self.db_file:
            self.db_file.check_replaceable()
        return (list(self.items.values()), self.last_id) if write and self.db_file else None

    def saved(self, before, result):
        """Save every store in the file and return result; if that fails, undo, and 507."""
        if before is not None:
            try:
                self.db_file.save(self.db_file.stores)
            except ApiError:
                self.start(before[0])
                self.last_id, self.changes = before[1], self.changes + 1
                raise
        return result


def opened_fields(resource, pairs):
    """A file's resource's fields, with a new one for each key not seen before, typed by
    its value (a null's as a string, as a file's), and each field whose value here is of
    another type widened to hold both; a reference stays an integer (its 422 says why)."""
    fields = collections.OrderedDict((field.name, field) for field in resource.fields)
    for name, value in pairs:
        if name == "id" or isinstance(value, XmlValue):  # not JSON: validate says why
            continue
        field, kind = fields.get(name), json_type([] if is_none(value) else [value])
        if field is None:
            fields[name] = inferred_fields([[(name, None if is_none(value) else value)]],
                                           (), ())[0]
        elif not (is_none(value) or field.refers_to) and widened(field.type, kind) != field.type:
            kind = widened(field.type, kind)
            fields[name] = Field(name, kind, searched=kind == "json")
    return tuple(fields.values())


def widened(kind, other):
    """The type that holds values of both types: integers and numbers are numbers; any
    other two, json."""
    if kind == other or kind == "json":
        return kind
    return "number" if {kind, other} <= {"integer", "number"} else "json"


class FileHandler(FakeApiHandler):
    """FakeApiHandler with json-server's GET /db: the whole API, as the file holds it; and
    with a file, the id a POST may give and the fields its keys need."""

    added_fields = None  # (store, its fields before, the resource after, its changes then)

    def read_item_body(self, merge_patch=False):
        """With a file, a POST's id of the collection's kind is the new item's, as
        json-server takes it (the store says 409 if it is in use); the rest, the item's."""
        pairs = super().read_item_body(merge_patch)
        if self.server.db_file is None:
            return pairs
        id_key = self.server.db_file.id_key  # json-server's --id _id: "_id" is the id
        pairs = [("id", self.path_like_id(value)) if name == id_key else (name, value)
                 for name, value in pairs]
        if self.resource.open_fields:
            if self.command == "PATCH":  # a merge patch's null removes the key (RFC 7396 §2)
                pairs = [(name, ABSENT if value is None else value) for name, value in pairs]
            self.resource = self.admit(pairs)
        if self.command != "POST":
            return pairs
        ids = [value for name, value in pairs if name == "id"]
        problem = len(ids) == 1 and id_problem(self.resource, ids[0])
        if problem:
            raise Invalid(self.resource, [("id", problem)])
        GIVEN_ID.value = ids[0] if len(ids) == 1 else None  # twice: validate's 422
        return [pair for pair in pairs if pair[0] != "id" or len(ids) > 1]

    def admit(self, pairs):
        """The file's resource, given the fields a body's keys and values need, which the
        API description then shows; the store's, not a problem-only client's (no item
        changes)."""
        store = self.server.stores[self.resource.collection]
        with store.lock:
            fields, resource = store.resource.fields, store.admit(pairs)
            if resource.fields != fields:  # its routes, which the description reads
                self.added_fields = store, fields, resource, store.changes
                self.server.serve(self.server.stores.values())
            return resource

    def send_problem(self, error):
        """The problem, once a write refused after its body gave its resource fields has
        taken them back: a 404 or 412 with a new key or type changes nothing."""
        added, self.added_fields = self.added_fields, None
        if added:
            self.take_back(*added)
        super().send_problem(error)

    def take_back(self, store, fields, resource, changes):
        """Serve the fields a refused write found again, unless a write was made since (as
        the one that gave them was, if it was answered)."""
        with store.lock:
            if store.resource is resource and store.changes == changes:
                store.serve_fields(fields)
                self.server.serve(self.server.stores.values())

    def get_db(self):
        """GET /db: every resource's items, in JSON, as json-server's db.json holds them."""
        if self.format is not JSON:
            raise ApiError(HTTPStatus.NOT_ACCEPTABLE, "GET /db answers in JSON only, as "
                           "json-server's db.json is; ask each resource for XML.")
        with self.server.store.lock:  # one moment's items of every resource
            document = database_document(self.server.stores.values())
        self.respond(HTTPStatus.OK, json_bytes(document), JSON.content_type)

    def path_like_id(self, value):
        """A body's text id as a path gives it: digits, as a number (find_route's)."""
        if isinstance(self.resource, TextIdResource) and isinstance(value, str) and (
                ITEM_ID.fullmatch(value)):
            return int(value)
        return value


DB_ROUTE = route("/db", r"/db", {"GET": "get_db"})


def id_problem(resource, value):
    """What is wrong with an id a POST gives for a file's collection, or None."""
    if isinstance(resource, TextIdResource) and isinstance(value, str) and value and (
            "/" not in value) or type(value) is int and 1 <= value <= MAX_ID:
        return None
    if isinstance(resource, TextIdResource):
        return "must be text without a slash, or a whole number, as the %s' ids are" % (
            resource.collection)
    return "must be a whole number from 1 to %d, as the %s' ids are" % (MAX_ID,
                                                                         resource.collection)


class FileServer(FakeApiServer):
    """FakeApiServer that may keep a db.json (a DbFile), serves its edits by hand, and
    with read_only takes no write (405)."""

    handler_class = FileHandler

    def __init__(self, *args, db_file=None, read_only=False, **options):
        self.db_file, self.read_only = db_file, read_only
        self.stop_watching = threading.Event()
        super().__init__(*args, **options)
        self.serve(self.stores.values())
        if db_file is not None:
            threading.Thread(target=self.watch, daemon=True).start()

    def serve(self, stores):
        """Serve these stores from now on: their routes, each saved in the file."""
        stores = list(stores)
        self.stores = {store.resource.collection: store for store in stores}
        self.store, self.resources = stores[0], [store.resource for store in stores]
        self.routes = self.handler_class.route_table(self.resources)
        self.keyed_paths = self.handler_class.keyed_paths(self.resources)
        self.resource_targets = resource_targets(self.resources)
        if self.read_only:
            self.routes = [reading_only(found) for found in self.routes]
        for store in stores if self.db_file else ():
            store.db_file = self.db_file
            store.kept_in = "%s, written at every change" % self.db_file.path
        if self.db_file:
            self.db_file.stores = stores  # what the file holds, and the stores that may write

    def reset(self):
        """Back to the file as it was at start, written."""
        if self.db_file is None:
            return super().reset()
        if self.read_only:  # no write changed the items: the file, and any edit, stays
            return self.journal.clear()
        with self.store.lock:
            kept = list(self.stores.values())
            self.take(self.db_file.started)
            try:
                self.db_file.save(self.stores.values())
            except ApiError:
                self.serve(kept)  # nothing changed
                raise
        self.journal.clear()

    def take(self, document, warn=False):
        """Serve a document's resources and items in new stores (the caller locks); a
        ValueError if it is not a valid db.json."""
        resources, items = self.db_file.contents(document, warn)
        changes = sum(store.changes for store in self.stores.values()) + 1  # no page kept
        stores = [type(self.store)(items[resource.collection], resource, self.store)
                  for resource in resources]  # one at least: read_db_file refuses {}
        stores[0].changes = changes
        self.serve(stores)

    def watch(self):
        """Serve the file's edits by hand within a second; a file not valid is not taken."""
        self.db_file.prepare()
        complained = None
        while not self.stop_watching.wait(WATCH_EVERY):
            if not self.db_file.edited():
                continue
            with self.store.lock:
                if not self.db_file.edited():  # the server's own write, just now
                    continue
                try:
                    self.db_file.seen = file_signature(self.db_file.path)
                    self.take(read_db_file(self.db_file.path), warn=True)
                    complained = self.db_file.refused = None
                except (ValueError, OSError) as error:
                    self.db_file.refused = refusal(error, self.db_file.path)
                    if str(error) != complained:  # no hint to make one: it is being edited
                        print("rest_users: not taken: %s: %s" % (
                            self.db_file.path, self.db_file.refused), file=sys.stderr, flush=True)
                    complained = str(error)

    def server_close(self):
        """Stop watching the file, then close as the others do."""
        self.stop_watching.set()
        super().server_close()


def refusal(error, path):
    """Why a file on disk is not taken, as a write's 503 says it: its error, without the
    path and the hint on how to make one."""
    text = str(error)
    text = text[len(path) + 2:] if text.startswith(path + ": ") else text
    return text.replace("; " + MAKE_ONE % path, "")


def reading_only(found):
    """A route that reads only (--read-only): its other verbs are 405s."""
    if found.resource is None:
        return found
    return route(found.path, found.pattern.pattern, {verb: action for verb, action in
                                                     found.actions.items() if verb == "GET"},
                 found.resource, found.cors, found.parent)


# --fake-users: 64 given names times 64 family names, then again with a middle initial
GIVEN_NAMES = """Ada Grace Alan Katherine Edsger Barbara Donald Margaret Dennis Frances Ken
    Radia Tim Hedy John Annie Linus Sophie Guido Karen Niklaus Jean Claude Mary Leslie Shafi
    Vint Adele Bjarne Lynn Dorothy Charles Evelyn Fernando Susan Martin Carol Robert Elizabeth
    Peter Anita James Joan Brian Ruth Richard Sally Whitfield Cynthia Yukihiro Betty Larry
    Marian Andrew Frieda Rasmus Kathleen Tony Ivan Lois Ward Hal Irma Alonzo""".split()
FAMILY_NAMES = """Lovelace Hopper Turing Johnson Dijkstra Liskov Knuth Hamilton Ritchie Allen
    Thompson Perlman Lamarr McCarthy Easley Torvalds Wilson Wirth Sammet Shannon Lamport
    Goldwasser Cerf Goldberg Stroustrup Conway Vaughan Babbage Boole Kernighan Pike Cox
    Stallman Diffie Dwork Matsumoto Holberton Wall Backus Tanenbaum Lerdorf Booth Hoare
    Sutherland Kay Engelbart Hellman Rivest Shamir Adleman Cunningham Abelson Sussman Church
    Gosling Bartik Estrin Clarke Hollerith Neumann Minsky Hamming Moore Keller""".split()


def fake_person(user_id):
    """The same made-up name and email for an id on every run, like Grace Hopper,
    grace.hopper.17@example.com."""
    pairs = len(GIVEN_NAMES) * len(FAMILY_NAMES)
    pair = (user_id - 1) * 1237 % pairs  # 1237 shares no factor with 4096: each pair once
    given, family = GIVEN_NAMES[pair % len(GIVEN_NAMES)], FAMILY_NAMES[pair // len(GIVEN_NAMES)]
    initial = (user_id - 1) // pairs % 27  # 0 for the first 4096 users: no initial
    middle = " %s. " % chr(ord("A") + initial - 1) if initial else " "
    return given + middle + family, "%s.%s.%d@example.com" % (given.lower(), family.lower(),
                                                              user_id)


# Users' own fake values: a person's name and email, as --fake-users makes them
USERS.fields_by_name["name"].fake = lambda user_id: fake_person(user_id)[0]
USERS.fields_by_name["email"].fake = lambda user_id: fake_person(user_id)[1]


def fake_item(resource, item_id):
    """The same made-up item for an id on every run, from its fields' fake values."""
    return new_item(resource, item_id, {field.name: field.fake(item_id)
                                        for field in resource.fields if field.fake})


def fake_user(user_id):
    """The same made-up user for an id on every run, as --fake-users makes them."""
    return fake_item(USERS, user_id)


# -- The list dialects of front-end libraries --------------------------------------------
# react-admin, refine and hand-written json-server clients ask for a page in json-server's
# query parameters (0.17's and 1.0's) or in react-admin's simple-rest ones, not in ours.
# Each is read here into the same ListQuery as ours, so the store does the same work and
# gives the same users in the same order; only the shape of two dialects' answers differs.

SUFFIX_TESTS = {"_ne": "ne", "_gte": "gte", "_lte": "lte", "_like": "contains"}  # 0.17's
COLON_TESTS = ("eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "startsWith",
               "endsWith")  # 1.0's FIELD:TEST; the last three are for text, not for id
# The ways of paging or of sorting that each parameter can be part of: a request uses one
WAYS = {"limit": {"ours"}, "offset": {"ours"}, "range": {"range"}, "_end": {"start-end"},
        "_start": {"start-end", "start-limit"}, "_limit": {"start-limit", "page"},
        "_page": {"page", "per-page"}, "_per_page": {"per-page"},
        "sort": {"sort"}, "_sort": {"_sort"}, "_order": {"_sort"}}
SORTING = ("sort", "_sort", "_order")
# The dialects' words, which a field of the same name leaves their meaning: "_" is jQuery's
DIALECT_WORDS = frozenset(WAYS).union(("filter", "_"), RELATED).difference(LIST_WORDS)
FILTER_BY_WORDS = (" Fields named as list parameters, which keep their meaning: %s. Filter by "
                   "such a field as react-admin's simple-rest does, with filter={\"q\": "
                   "\"...\"}, or as FIELD:eq=VALUE (json-server 1.0's).")


def list_words_note(resources):
    """The start line's sentence on the fields named as list parameters, or nothing."""
    named = [(resource.collection, [name for name in resource.field_names if name in LIST_WORDS
                                    or name in DIALECT_WORDS]) for resource in resources]
    named = ["%s of %s" % (in_words(names), collection) for collection, names in named if names]
    return FILTER_BY_WORDS % "; ".join(named) if named else ""


def dialect_parameters(resource):
    """What a 400 lists as the parameters a list in the dialects takes."""
    return our_parameters(resource) + (
        "id", "FIELD_ne", "FIELD_gte", "FIELD_lte", "FIELD_like", "FIELD:TEST", "_start",
        "_end", "_limit", "_page", "_per_page", "_sort", "_order", "range",
        "filter (FIELD: %s; TEST: %s)" % (in_words(resource.sorted_by, "or"),
                                         ", ".join(COLON_TESTS)))


class DialectHandler(UsersHandler):
    """UsersHandler that also reads the list dialects of front-end libraries."""

    dialect = None  # the DialectQuery of this request's list query, if it is in a dialect

    def read_list_query(self, query_string):
        """A query in our own parameters is the core's; one in a dialect is read here."""
        query_string = "&".join(  # less the cache-buster jQuery and others add: _=1700000000000
            part for part in query_string.split("&") if part.partition("=")[0] != "_")
        pairs = query_pairs(query_string)
        self.dialect = None if in_our_parameters(self.resource, pairs) else DialectQuery(
            self.resource, pairs)
        query, kept = super().read_list_query(query_string) if self.dialect is None else (
            self.dialect.list_query(), self.dialect.kept)
        names = [name for name, _ in pairs]
        if lists_as_json_server(self.resource) and not any(name in SIZED_BY for name in names):
            # json-server has no default page, and reads _start only with _end or _limit
            query = query._replace(limit=EVERY_ITEM, offset=query.offset if "offset" in names
                                   else 0)
        return query, kept

    def render_page(self, query, total, items):
        """A page in the shape the dialect's clients read: 1.0's per-page object."""
        if self.dialect is not None and self.dialect.paging == "per-page":
            return render_per_page(self.store.resource, query, total, items, self.format,
                                   self.related.document, self.related.element)
        return super().render_page(query, total, items)

    def page_headers(self, query, total, items, kept):
        """react-admin's simple-rest reads which items it got in Content-Range."""
        headers = super().page_headers(query, total, items, kept)
        if lists_as_json_server(self.resource):  # no page, no links; else whole URLs
            headers = [(name, value) for name, value in headers if name != "Link"] + ([(
                "Link", page_links(self.url_base() + (self.related.path or self.resource.path),
                                   query, total, kept))] if query.limit != EVERY_ITEM else [])
        if self.dialect is not None and self.dialect.content_range:
            headers.append(("Content-Range", content_range(
                self.resource.collection, query.offset, len(items), total)))
        return headers

    def url_base(self):
        """http://HOST of this request, for json-server's whole URLs: as an absolute-form
        target names it (Appendix A reads it, RFC 9112 §3.2.2), else as its Host does."""
        return "http://" + (getattr(self, "authority", None) or self.headers.get("Host")
                            or "%s:%d" % self.server.server_address[:2])


# json-server lists every item unless a page is asked for: a limit beyond any list, whose
# end still fits a slice (sys.maxsize); and the parameters that ask for a page's size
EVERY_ITEM = MAX_ID // 2
SIZED_BY = ("limit", "_limit", "_end", "_page", "_per_page", "range")


def lists_as_json_server(resource):
    """Whether a resource is a json-server db.json's (users too, when the file has them),
    so that its list, its links and its _like are json-server's."""
    return getattr(resource, "json_server", False)


def our_parameters(resource):
    """The core's list parameters but a field named as a dialect's word (_sort sorts)."""
    return tuple(name for name in resource.list_parameters if name not in DIALECT_WORDS)


def in_our_parameters(resource, pairs):
    """Whether the core reads this query: our parameters, each once, and no JSON sort."""
    names = [name for name, _ in pairs]
    return set(names) <= set(our_parameters(resource)) and len(set(names)) == len(names) and not (
        dict(pairs).get("sort", "").startswith("["))  # react-admin's sort=["id","ASC"]


# The tests a Filter makes besides eq: ne, none of the values; orders, text by code point;
# and text found ignoring case, as str.casefold() does, as q does
ORDER_TESTS = {"lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge}
TEXT_TESTS = {"contains": operator.contains, "startsWith": str.startswith, "endsWith": str.endswith}


class DialectMemoryStore(MemoryStore):
    """MemoryStore whose filters make every test the dialects ask for."""

    def list(self, query):
        """Also sorted by a key inside a json field (_sort=address.city), as json-server
        sorts: the core's list filters, and sorts in id order, the keys are sorted by here
        as the core sorts by them."""
        position = self.resource.position
        if all(key.lstrip("-") in position for key in query.sort):
            return super().list(query)
        total, matches = super().list(query._replace(sort=("id",), offset=0, limit=EVERY_ITEM))
        for key in reversed(query.sort):  # stable: ties follow the later keys, then the id
            name = key.lstrip("-")
            matches.sort(key=sort_value(self.resource, name) if name in position else (
                lambda item, root=name.partition(".")[0], path=name.split(".")[1:]:
                json_sort_value(value_at(item[position[root]], path))), reverse=key[0] == "-")
        return total, matches[query.offset:query.offset + query.limit]

    def passes(self, item, query):
        """Also the filters on a key inside a json field (address.city), and q through a
        json field's objects and arrays."""
        if not self.resource.from_json:  # no json field: nothing nested
            return super().passes(item, query)
        position = self.resource.position
        nested = [each for each in query.filters if each.field not in position]
        own = query._replace(filters=tuple(each for each in query.filters
                                           if each.field in position), q=None)
        return super().passes(item, own) and all(
            passes_as_json_server(value_at(item[position[field.partition(".")[0]]],
                                           field.split(".")[1:]), test, values)
            for field, test, values in nested) and (
            query.q is None or has_text_inside(self.resource, item, query.q))

    def passes_filter(self, value, field, test, values):
        """ne, the orders and the text tests, besides the core's eq; a none passes none of
        them, as NULL passes no comparison in SQL."""
        if is_none(value):
            return False
        if test == "like":
            return passes_as_json_server(value, test, values)
        if test in ("eq", "ne"):
            return super().passes_filter(value, field, "eq", values) == (test == "eq")
        if test in ORDER_TESTS:
            return ORDER_TESTS[test](value, values[0])
        return TEXT_TESTS[test](value.casefold(), values[0].casefold())


def json_sort_value(value):
    """A value inside a json field as a sort key: a none first, then numbers (booleans as 0
    and 1), strings, and objects and arrays by their JSON, as SQLite orders NULL, numbers,
    text and blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, (bool, int, float)):
        return (1, value)
    return (2, value) if isinstance(value, str) else (3, json_bytes(value))


def value_at(value, keys):
    """The value at these keys inside a JSON value (geo, lat), or None; as lodash's get,
    which json-server uses, a digit key is an array's index (tags.0)."""
    for key in keys:
        if isinstance(value, list) and DIGITS.fullmatch(key) and int(key) < len(value):
            value = value[int(key)]
        else:
            value = value.get(key) if isinstance(value, dict) else None
    return value


def as_javascript_text(value):
    """A JSON value as JavaScript's toString() writes it, which json-server compares: an
    array's members with commas between them."""
    if isinstance(value, list):
        return ",".join("" if member is None else as_javascript_text(member) for member in value)
    if isinstance(value, dict):
        return "[object Object]"
    if type(value) is float and value.is_integer():
        value = int(value)  # JavaScript writes 3.0 as 3
    return value if isinstance(value, str) else JSON_ENCODER.encode(value)


def passes_as_json_server(value, test, values):
    """Whether a value passes a test as json-server 0.17 tests it: as text; _like as a
    regular expression ignoring case; an order as numbers when both are numbers, as a
    string of digits may be ("-37.3159"), else as text. A none passes nothing."""
    if value is None:
        return False
    text = as_javascript_text(value)
    if test in ("eq", "in", "ne"):
        return (text in values) == (test != "ne")
    if test == "like":
        return compile_like(values[0]).matches(text)
    if test in TEXT_TESTS:
        return TEXT_TESTS[test](text.casefold(), values[0].casefold())
    number, wanted = number_from_text(text), number_from_text(values[0])
    if number is not None and wanted is not None:
        return ORDER_TESTS[test](number, wanted)
    return ORDER_TESTS[test](text, values[0])


def has_text_inside(resource, item, text):
    """Whether a searched field has the text, looking through a json field's objects and
    arrays, casefolded as q is."""
    wanted = text.casefold()
    return any(wanted in found.casefold() for name in resource.searched
               for found in strings_in(item[resource.position[name]]))


def strings_in(value):
    """The strings in a JSON value, its objects' and arrays' included."""
    if isinstance(value, str):
        return [value]
    members = value.values() if isinstance(value, dict) else value if isinstance(
        value, list) else ()
    return [found for member in members for found in strings_in(member)]


MAX_PATTERN = 200  # characters in a _like's regular expression
BRACES = re.compile(r"\{(?:[0-9]+,?[0-9]*|,[0-9]+)\}")  # a quantifier: {2}, {2,}, {2,5}, {,5}


def check_pattern(name, pattern):
    """A 400 for a _like that could hold a thread for minutes (ReDoS): a pattern longer
    than 200 characters, one that is not a regular expression, a quantified group inside a
    quantified group, as (a+)+, which a backtracking matcher tries in ways that double with
    each character, or one in syntax that compile_like does not take."""
    if len(pattern) > MAX_PATTERN:
        raise BadQuery("%s is a regular expression of %d characters; at most %d are taken."
                       % (printable(name), len(pattern), MAX_PATTERN))
    try:
        re.compile(pattern)
    except re.error as error:
        raise BadQuery("%s is not a regular expression: %s." % (printable(name), error)) from None
    if has_nested_quantifier(pattern):
        raise BadQuery("%s is a regular expression with a quantified group inside a quantified "
                       "group, which can take minutes to match; write it without one."
                       % printable(name))
    try:
        compile_like(pattern)
    except ValueError as error:
        raise BadQuery("%s %s" % (printable(name), error)) from None


def has_nested_quantifier(pattern):
    """Whether a pattern quantifies a group that holds a quantifier: (a+)+, ((ab){2})*."""
    inside = [False]  # for each group open: whether a quantifier is in it
    index, after_such_group = 0, False
    while index < len(pattern):
        char, quantifier = pattern[index], None
        if char == "\\":
            index += 1  # the escaped character is a literal
        elif char == "[":
            index = end_of_class(pattern, index)
        elif char == "(":
            inside.append(False)
            index += pattern.startswith("?", index + 1)  # (?:, (?P<...: no quantifier
        elif char == ")" and len(inside) > 1:
            held = inside.pop()
            inside[-1] = inside[-1] or held
            index += 1
            after_such_group = held
            continue
        elif char in "*+?" or (char == "{" and BRACES.match(pattern, index)):
            quantifier = True
        if quantifier and after_such_group and char != "?":  # (a+)? repeats nothing
            return True
        inside[-1] = inside[-1] or bool(quantifier)
        after_such_group = False
        index += 1
    return False


def end_of_class(pattern, start):
    """The index of the ] that ends a character class opened at start ([^]a] holds ])."""
    index = start + 1 + pattern.startswith("^", start + 1)
    index += pattern.startswith("]", index)
    while index < len(pattern) and pattern[index] != "]":
        index += 1 + (pattern[index] == "\\")
    return index


MAX_REPEAT = 1000  # the largest count a _like's {m,n} may name
MAX_STEPS = 2000  # a _like's program: its time is at most a value's length times this
MAX_KEPT = 1000  # the sets of states a _like's program keeps, a bound on its memory, as RE2's
ESCAPE_SOURCE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}"
                           r"|0[0-7]{0,2}|[0-7]{3}|[1-9][0-9]?|.)", re.DOTALL)
GROUP_NOT_TAKEN = re.compile(r"\(\?(P=|<=|<!|.)")  # lookarounds, references, flags, comments
WORD_CHARACTER = re.compile(r"\w").fullmatch
ASSERTIONS = {  # what holds at a position of a text, without reading a character
    "^": lambda text, at: at == 0, r"\A": lambda text, at: at == 0,
    "$": lambda text, at: at == len(text) or at == len(text) - 1 and text[at] == "\n",
    r"\Z": lambda text, at: at == len(text),
    r"\b": lambda text, at: is_after_word(text, at) != is_before_word(text, at),
    r"\B": lambda text, at: is_after_word(text, at) == is_before_word(text, at),
}


def is_after_word(text, at):
    """Whether the character before a position is a word character, as re's \\w."""
    return at > 0 and WORD_CHARACTER(text[at - 1]) is not None


def is_before_word(text, at):
    """Whether the character at a position is a word character, as re's \\w."""
    return at < len(text) and WORD_CHARACTER(text[at]) is not None


@functools.lru_cache(maxsize=256)
def compile_like(pattern):
    """A _like's regular expression, which re has read, as a LikeProgram: a ValueError for
    syntax that a matcher without backtracking cannot take."""
    reader = LikePattern(pattern)
    reader.alternatives()
    return LikeProgram(reader.program)


class LikeProgram:
    """A _like's program, run a set of states per character, each state reading a character
    once, so the time is the text's length times the program's, whatever the pattern
    (Thompson 1968; Russ Cox, "Regular Expression Matching Can Be Simple And Fast", 2007);
    a backtracking matcher such as re can take exponential time, holding the GIL."""

    def __init__(self, steps):
        self.steps, self.leads_to = tuple(steps), {}
        self.assertions = tuple(step[1] for step in steps if step[0] == "assert")

    def matches(self, text):
        """Whether the program matches somewhere in a text, ignoring case, a new thread
        starting at each character as in re.search. Where a set of states leads on a
        character is kept (Cox's DFA, built as it runs): a character costs a look-up."""
        steps, leads_to, assertions = self.steps, self.leads_to, self.assertions
        states = reached_from(steps, [], text, 0)
        for at, character in enumerate(text, 1):
            if len(steps) in states:
                return True
            key = (states, character, assertions and tuple(
                holds(text, at) for holds in assertions))
            following = leads_to.get(key)
            if following is None:
                if len(leads_to) > MAX_KEPT:
                    leads_to.clear()
                following = leads_to[key] = reached_from(steps, [
                    state + 1 for state in states if steps[state][1](character) is not None],
                    text, at)
            states = following
        return len(steps) in states


def reached_from(steps, states, text, at):
    """The states that read a character, or the match (the state past the steps), reached
    from these and the start through splits, jumps and the assertions that hold here."""
    seen, waiting = set(), states + [0]
    while waiting:
        state = waiting.pop()
        if state in seen or state == len(steps):
            seen.add(state)
            continue
        seen.add(state)
        kind, value = steps[state]
        if kind == "split":
            waiting.extend(value)
        elif kind == "jump":
            waiting.append(value)
        elif kind == "assert" and value(text, at):
            waiting.append(state + 1)
    return frozenset(state for state in seen if state == len(steps) or steps[state][0] == "one")


class LikePattern:
    """A reader of a regular expression into a program of steps (Thompson's construction):
    ("one", test of a character), ("split", states), ("jump", state), ("assert", test)."""

    def __init__(self, pattern):
        self.pattern, self.index, self.program = pattern, 0, []

    def not_taken(self, syntax):
        """The error for syntax that only a backtracking matcher can take."""
        return ValueError("uses %s, which a _like does not take: it takes literals, ., classes, "
                          "\\d \\w \\s \\b, anchors, groups, | and quantifiers counting to at "
                          "most %d." % (syntax, MAX_REPEAT))

    def emit(self, step):
        """Add a step (None: to be filled in), the program kept small; its index."""
        if len(self.program) == MAX_STEPS:
            raise ValueError("is a regular expression of more than %d steps once its repeats "
                             "are written out; write it with fewer." % MAX_STEPS)
        self.program.append(step)
        return len(self.program) - 1

    def alternatives(self):
        """Read branches separated by |: a split to each, each but the last jumping past."""
        split, starts, ends = self.emit(None), [], []
        while True:
            starts.append(len(self.program))
            while self.index < len(self.pattern) and self.pattern[self.index] not in "|)":
                self.piece()
            if not self.pattern.startswith("|", self.index):
                break
            ends.append(self.emit(None))
            self.index += 1
        for end in ends:
            self.program[end] = ("jump", len(self.program))
        self.program[split] = ("split", tuple(starts))

    def piece(self):
        """Read an atom and its quantifier: the atom written out as often as counted, then
        a loop for *, + and {m,}, or optional copies up to n."""
        atom_at, start = self.index, len(self.program)
        self.atom()
        low, high = self.quantifier()
        if (low, high) == (1, 1):
            return
        after = self.index
        del self.program[start:]
        for _ in range(low):
            self.index = atom_at
            self.atom()
        optional = []
        for _ in range(1 if high is None else high - low):
            optional.append(self.emit(None))
            self.index = atom_at
            self.atom()
        if high is None:
            self.emit(("jump", optional[0]))
        for split in optional:
            self.program[split] = ("split", (split + 1, len(self.program)))
        self.index = after

    def quantifier(self):
        """The counts of the quantifier at the index, (1, 1) if none; a lazy one matches the
        same texts, which is all a filter asks."""
        at, pattern = self.index, self.pattern
        braces = BRACES.match(pattern, at)
        if pattern[at:at + 1] in ("*", "+", "?"):
            counts = {"*": (0, None), "+": (1, None), "?": (0, 1)}[pattern[at]]
            self.index += 1
        elif braces:
            low, comma, high = braces.group()[1:-1].partition(",")
            counts = (int(low or 0), int(high) if high else None if comma else int(low))
            if max(counts[0], counts[1] or 0) > MAX_REPEAT:
                raise self.not_taken(braces.group())
            self.index = braces.end()
        else:
            return 1, 1
        self.index += pattern.startswith("?", self.index)
        if pattern.startswith("+", self.index):  # possessive (Python 3.11): backtracking's
            raise self.not_taken(pattern[at:self.index + 1])
        return counts

    def atom(self):
        """Read one atom: a group, a class, an escape, an anchor, . or a character."""
        pattern, at = self.pattern, self.index
        if pattern.startswith("(?:", at) or pattern.startswith("(?P<", at):
            self.index = pattern.index(">", at) + 1 if pattern[at + 2] == "P" else at + 3
        elif GROUP_NOT_TAKEN.match(pattern, at):
            raise self.not_taken(GROUP_NOT_TAKEN.match(pattern, at).group())
        elif pattern[at] == "(":
            self.index += 1
        if pattern[at] == "(":
            self.alternatives()
            self.index += 1  # the ), which re has found
            return
        if pattern[at] == "[":
            source = pattern[at:end_of_class(pattern, at) + 1]
        elif pattern[at] == "\\":
            source = ESCAPE_SOURCE.match(pattern, at).group()
            if re.fullmatch(r"\\[1-9][0-9]?", source):
                raise self.not_taken(source)
        else:
            source = pattern[at]
        self.index += len(source)
        if source in ASSERTIONS:
            self.emit(("assert", ASSERTIONS[source]))
        else:  # one character: re tests it as re.IGNORECASE folds case, without backtracking
            self.emit(("one", re.compile(source, re.IGNORECASE).fullmatch))


class DialectQuery:
    """The pairs of a list query in any mix of the dialects, read into a ListQuery. A 400
    names the parameter as it was sent."""

    def __init__(self, resource, pairs):
        self.resource, self.given, self.filters, self.any_of, self.q = resource, {}, [], {}, []
        kinds = [(name, value, parameter_kind(resource, name)) for name, value in pairs]
        for name in (name for name, _, kind in kinds if kind is None):
            field = name.partition(":")[0] if ":" in name else split_suffix(name)[0]
            if field in resource.from_json:
                raise BadQuery("%s is a json field, which the list neither filters nor sorts "
                               "by; %s is not taken." % (field, printable(name)))
        refuse_unknown([name for name, _, kind in kinds if kind is None],
                       dialect_parameters(resource))
        for name, value, kind in kinds:
            self.read(name, value, kind)
        self.paging = self.way("paging", [name for name in WAYS if name not in SORTING])
        self.sorting = self.way("sorting", SORTING)
        self.kept = [(name, value) for name, value in pairs  # for the links, which page
                     if name in SORTING or name not in WAYS]  # by limit and offset
        self.content_range = "range" in self.given or "filter" in self.given or (
            self.given.get("sort", "")[:1] == "[")  # react-admin's simple-rest

    def read(self, name, value, kind):
        """Keep one parameter: a way of paging or sorting, q, or a filter, which may repeat."""
        if name in self.given and isinstance(kind, str):
            raise BadQuery(GIVEN_TWICE % name)
        self.given.setdefault(name, value)
        if kind == "q":
            self.q.append(value)
        elif kind == "filter":
            self.read_json_filter(value)
        elif isinstance(kind, tuple):
            field, test = kind
            self.add_filter(name, field, test, value.split(",") if test == "in" else [value])

    def list_query(self):
        """The ListQuery these parameters ask for."""
        if len(self.q) > 1:
            raise BadQuery("q is given both as q and in filter; give it once.")
        offset, limit = self.page()
        return ListQuery(limit=limit, offset=offset, sort=self.sort_keys(),
                         q=self.q[0] if self.q else None,
                         filters=tuple(self.filters) + tuple(
                             Filter(field, "eq", tuple(values))
                             for (field, _), values in self.any_of.items()))

    def way(self, purpose, names):
        """The one way of paging, or of sorting, that the parameters given take part in."""
        given = [name for name in self.given if name in names]
        common = None
        for name in given:
            if common is not None and not common & WAYS[name]:
                other = next(other for other in given if not WAYS[other] & WAYS[name])
                raise BadQuery("%s and %s are two ways of %s; use one." % (other, name, purpose))
            common = WAYS[name] if common is None else common & WAYS[name]
        if "_order" in given and "_sort" not in given:
            raise BadQuery("_order needs _sort, the keys it orders.")
        return min(common) if common else None  # "page" for _page alone: 0.17's bare list

    def page(self):
        """The offset and limit of the page asked for."""
        given, paging = self.given, self.paging
        if paging == "range":
            return range_page(self.resource, given["range"])
        if paging in ("start-end", "start-limit"):
            return start_page(given)
        if paging in ("page", "per-page"):  # json-server's _limit is 10 unless given
            size = integer_parameter(given, "_per_page" if paging == "per-page" else "_limit",
                                     10, 1, MAX_LIMIT)
            return (integer_parameter(given, "_page", 1, 1, MAX_ID // size) - 1) * size, size
        return (integer_parameter(given, "offset", 0, 0, MAX_ID),
                integer_parameter(given, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT))

    def sort_keys(self):
        """The sort keys asked for, as the core writes them: "-name" is descending."""
        given = self.given
        if self.sorting == "sort" and given["sort"].startswith("["):
            return (json_sort_key(self.resource, given["sort"]),)
        if self.sorting != "_sort":
            return sort_keys(self.resource, "sort", given.get("sort", "id"))
        keys = dialect_sort_keys(self.resource, given["_sort"])  # 1.0's too: _sort=-name,id
        return ordered_keys(keys, given["_order"]) if "_order" in given else keys

    def read_json_filter(self, text):
        """react-admin's filter: {"q": "ada"}, {"id": [1, 3]}, {"name": "Ada"}, or several."""
        for field, wanted in json_parameter("filter", text, dict).items():
            values = wanted if isinstance(wanted, list) else [wanted]
            if field == "q" and "q" not in self.resource.sorted_by and isinstance(
                    wanted, str) and wanted:  # a field named q is filtered by, as any
                self.q.append(wanted)
            elif (field in self.resource.sorted_by or is_nested_key(self.resource, field)) and all(
                    type(value) in (str, int, bool) for value in values):
                self.add_filter("filter", field, "eq", [
                    value if isinstance(value, str) else JSON_ENCODER.encode(value)
                    for value in values])
            else:
                raise BadQuery('filter must be a JSON object of "q" or a field (%s), with a '
                               'value or a list of values; %s is not.' % (
                                    ", ".join(self.resource.sorted_by),
                                    printable(json.dumps(field))))

    def add_filter(self, name, field, test, values):
        """Keep a filter; the values of an equality named again are any of them."""
        if test == "like":
            check_pattern(name, values[0])
        position = self.resource.position  # a pattern's, a nested key's: compared as text
        values = [dialect_value(self.resource, name, field, value)
                  if field in position and test != "like" else value for value in values]
        if test in ("eq", "in"):
            self.any_of.setdefault((field, name), []).extend(values)
        else:
            self.filters.append(Filter(field, test, tuple(values)))


def dialect_value(resource, name, field_name, text):
    """A dialect's filter value: an id, which the dialects alone filter by, or a field's
    value as the core's list reads it; an empty one (in=1,,2) is a 400."""
    if text == "":
        raise BadQuery("%s has an empty value." % printable(name))
    if field_name != "id":
        return query_value(resource, name, field_name, text)
    if DIGITS.fullmatch(text) and len(text) <= 19 and int(text) <= MAX_ID:  # never negative
        return int(text)
    raise BadQuery("%s compares ids: whole numbers from 0 to %d, not %s."
                   % (printable(name), MAX_ID, printable(text)))


def range_page(resource, text):
    """react-admin's range=[first, last], both counted: as an offset and a limit."""
    first, last = json_parameter("range", text, list)
    if not (all(type(n) is int and 0 <= n <= MAX_ID for n in (first, last))
            and 1 <= last - first + 1 <= MAX_LIMIT):
        raise BadQuery("range must be [first, last]: whole numbers, first from 0, and 1 to "
                       "%d %s from first to last." % (MAX_LIMIT, resource.collection))
    return first, last - first + 1


def start_page(given):
    """json-server 0.17's _start with _end (not counted) or with _limit: offset and limit."""
    start = integer_parameter(given, "_start", 0, 0, MAX_ID)
    if "_end" not in given:
        return start, integer_parameter(given, "_limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    end = integer_parameter(given, "_end", None, 0, MAX_ID)
    if not 1 <= end - start <= MAX_LIMIT:
        raise BadQuery("_end must be 1 to %d more than _start." % MAX_LIMIT)
    return start, end - start


def dialect_sort_keys(resource, text):
    """_sort's keys, as sort_keys reads them, where a key may be inside a json field too
    (address.city), as json-server sorts by any path."""
    keys = tuple(text.split(","))
    plain = [key for key in keys if not is_nested_key(resource, key.lstrip("-"))]
    if plain:
        sort_keys(resource, "_sort", ",".join(plain))
    return keys


def json_sort_key(resource, text):
    """react-admin's sort=["name", "DESC"] as the core's sort key, "-name"."""
    field, order = json_parameter("sort", text, list)
    if not (field in resource.sorted_by or isinstance(field, str) and is_nested_key(
            resource, field)) or order not in ("ASC", "DESC", "asc", "desc"):
        raise BadQuery('sort must be ["FIELD", "ASC" or "DESC"], FIELD one of %s, not %s.'
                       % (", ".join(resource.sorted_by), printable(text)))
    return ("-" if order.upper() == "DESC" else "") + field


def ordered_keys(keys, text):
    """json-server 0.17's _order=desc,asc applied to _sort's keys; a key without one is asc."""
    orders = text.lower().split(",")
    if len(orders) > len(keys) or any(key[0] == "-" for key in keys) or any(
            order not in ("asc", "desc") for order in orders):
        raise BadQuery("_order must be asc or desc for each key of _sort, comma-separated (and "
                       "_sort's keys then have no -), not %s." % printable(text))
    orders += ["asc"] * (len(keys) - len(orders))
    return tuple(("-" if order == "desc" else "") + key for key, order in zip(keys, orders))


def parameter_kind(resource, name):
    """What a list parameter is: a way of paging or sorting, q, react-admin's filter, a
    (field, test) filter, or None when no dialect has it. The text tests are for strings."""
    if name in WAYS or name in ("q", "filter"):
        return name
    if name in DIALECT_WORDS:  # _embed where nothing relates: a word still, never a filter
        return None
    field, colon, test = name.partition(":")
    if not colon:
        field, test = split_suffix(name)
        if test == "contains" and (lists_as_json_server(resource)
                                   or is_nested_key(resource, field)):
            test = "like"  # json-server 0.17's _like: a regular expression
    elif test not in COLON_TESTS:
        return None
    if is_nested_key(resource, field):  # json-server's address.city
        return field, test
    if field in resource.sorted_by and not (test in TEXT_TESTS and (  # _like: any, as text
            field == "id" or resource.fields_by_name[field].type != "string")):
        return field, test
    return None


def is_nested_key(resource, name):
    """Whether a name is a key inside a json field, as address.city is inside address."""
    return "." in name and name.partition(".")[0] in resource.from_json


def split_suffix(name):
    """json-server 0.17's FIELD_ne and the like as (FIELD, test); a bare FIELD is eq."""
    for suffix, test in SUFFIX_TESTS.items():
        if name.endswith(suffix):
            return name[:-len(suffix)], test
    return name, "eq"


JSON_SHAPES = {"range": "[first, last]", "sort": '["FIELD", "ASC" or "DESC"]',
               "filter": '{"FIELD": value, ...}'}
# One decoder for them all: json.loads with an argument would make one for every call
JSON_VALUES = json.JSONDecoder(parse_constant=refuse_constant)


def json_parameter(name, text, kind):
    """A parameter that holds JSON (react-admin's range, sort and filter), as that kind."""
    try:
        value = JSON_VALUES.decode(text)
    except ValueError:
        value = None
    if not isinstance(value, kind) or (kind is list and len(value) != 2):
        raise BadQuery("%s must be JSON like %s, not %s." % (name, JSON_SHAPES[name],
                                                              printable(text)))
    return value


def content_range(collection, offset, sent, total):
    """react-admin's Content-Range: the first and last index of the items sent, and how
    many match ("users 0-9/25"), or "users */25" when none is sent."""
    if not sent:
        return "%s */%d" % (collection, total)
    return "%s %d-%d/%d" % (collection, offset, offset + sent - 1, total)


def render_per_page(resource, query, total, users, fmt, document=item_document,
                    element=item_element):
    """json-server 1.0's page object: where the pages are, how many users match, and the
    page's users as data; in XML a <page> whose null prev or next is empty."""
    size, page = query.limit, query.offset // query.limit + 1
    last = max(1, (total + size - 1) // size)  # total / size rounded up, and at least one
    fields = {"first": 1, "prev": page - 1 if page > 1 else None,
              "next": page + 1 if page < last else None, "last": last, "pages": last,
              "items": total}
    if fmt is JSON:
        return json_bytes(dict(fields, data=[document(resource, user) for user in users]))
    page_element = xml_element("page", {name: "" if value is None else value
                                        for name, value in fields.items()})
    ElementTree.SubElement(page_element, "data").extend(element(resource, user)
                                                        for user in users)
    return xml_bytes(page_element)


# ---------------------------------------------------------------------------------------
# Appendix D: the explorer, the page a browser gets at GET /
#
# One page, built in: no file, script, style, font or image from anywhere else, so it
# works offline and from a copied file. Its Content-Security-Policy lets only this script
# and this style run (by their SHA-256) and lets them talk only to this server. User data
# goes into the page through textContent, never as HTML.
# ---------------------------------------------------------------------------------------

import base64
import hashlib
import html

INDEX_ROUTE = route("/", r"/", {"GET": "get_index"})


class ExplorerHandler(UsersHandler):
    """UsersHandler with GET /: an index of the API, or for a browser the explorer page."""

    added_routes = [INDEX_ROUTE]

    def route_request(self):
        """A browser, which ranks text/html first, gets the explorer at GET /, a page that
        says where this server keeps its users, whatever else its Accept takes."""
        if (self.command in ("GET", "HEAD") and self.path.partition("?")[0] == "/"
                and prefers_html(self.headers.get("Accept"))):
            return self.respond(HTTPStatus.OK, explorer_page(
                self.explored(), self.server.resources, self.server.store.kept_in),
                "text/html; charset=utf-8", EXPLORER_HEADERS)
        super().route_request()

    def explored(self):
        """The resource the explorer is asked for (/?resource=profile), else the first
        collection."""
        resources = self.server.resources
        asked = dict(parse_qsl(self.path.partition("?")[2])).get("resource")
        return next((resource for resource in resources if resource.collection == asked),
                    next((resource for resource in resources if not resource.singular),
                         resources[0]))

    def get_index(self):
        """GET /: where to find things, for a client of the API."""
        self.respond(HTTPStatus.OK, render_index(self.server.resources, self.format),
                     self.format.content_type)


def render_index(resources, fmt):
    """The index at GET /, which points to each resource: {"users": "/users", ...}."""
    index = {resource.collection: resource.path for resource in resources}
    return json_bytes(index) if fmt is JSON else xml_bytes(xml_element("index", index))


def prefers_html(accept):
    """Whether the Accept header ranks text/html above every API type, as a browser's does."""
    ranges = parse_accept(accept or "")
    html_q = quality("text/html", ranges)
    return html_q > max(quality(media_type, ranges)
                        for media_type in MEDIA_TYPES)


EXPLORER_STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 0 1rem 3rem; color: #1b1b1b; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.2rem; margin: 1.6rem 0 0.6rem; border-bottom: 1px solid #ccc; }
label { display: block; font-weight: 600; margin-top: 0.5rem; }
input, select, button { font: inherit; padding: 0.35rem 0.5rem; max-width: 100%; box-sizing: border-box; }
input, select { width: 100%; }
fieldset { border: 1px solid #ccc; margin-top: 0.5rem; }
fieldset label { display: inline; font-weight: normal; margin-right: 1rem; }
fieldset input { width: auto; }
.whole-row { grid-column: 1 / -1; margin: 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: 0 1rem; }
.buttons { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 0.8rem; }
button { cursor: pointer; border: 1px solid #1d4f91; background: #e8f0fb; color: #0b2d5c; border-radius: 4px; }
button:focus, input:focus, select:focus { outline: 3px solid #f0a400; outline-offset: 1px; }
table { border-collapse: collapse; width: 100%; margin-top: 0.6rem; }
th, td { text-align: left; padding: 0.3rem; border-bottom: 1px solid #ddd; }
td { overflow-wrap: anywhere; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.6rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.3rem 0; }
#exchanges { padding-left: 1.2rem; }
.exchange { margin-bottom: 1.4rem; }
.note { margin: 0.2rem 0; }
.problem { border-left: 4px solid #b3261e; background: #fdecea; padding: 0.4rem 0.8rem; }
.status-2, .status-3 { border-left: 4px solid #2e7d32; }
.status-4, .status-5 { border-left: 4px solid #b3261e; }
"""

EXPLORER_SCRIPT = r"""
"use strict";
const byId = (id) => document.getElementById(id);
const settings = { apiKey: "", format: "json" };  // the key lives only in this variable
// An item's fields, in order, from the form's inputs: the page's HTML names them (from the
// resource's declaration), so this script, and so its hash in the policy, is the same for any.
// The resource the page is for is named by its HTML too: its path (/users), item (user) and
// an item's path (/users/{id}; a singular resource's, /profile, has no id: one item, no list).
let FIELD_NAMES, PATH, ITEM, ITEMS, ITEM_PATH, HAS_IDS;
function readResource() {
  FIELD_NAMES = Array.from(document.querySelectorAll("[data-field]"), (input) => input.dataset.field);
  PATH = document.querySelector("main").dataset.path;
  ITEM = document.querySelector("main").dataset.item;
  ITEMS = decodeURIComponent(PATH.slice(1));  // the path is the name percent-encoded
  ITEM_PATH = document.querySelector("main").dataset.itemPath;
  HAS_IDS = ITEM_PATH.includes("{id}");
}
readResource();

function named(id, capital) {  // "user 1", or a singular resource's "the profile"
  const name = HAS_IDS ? ITEM + " " + id : "the " + ITEM;
  return capital ? name.charAt(0).toUpperCase() + name.slice(1) : name;
}

const notes = () => ({
  POST: "POST asks the collection to create a member: 201 Created, and Location says where it is.",
  GET: "GET reads a resource and changes nothing; its ETag names the version you got.",
  PUT: "PUT replaces the whole " + ITEM + ". If-Match carries the ETag we read: a stale one gets 412.",
  PATCH: "PATCH changes only the fields sent (a merge patch); If-Match guards it too.",
  DELETE: "DELETE removes the " + ITEM + ": 200 OK, with the " + ITEM + " as it was. A GET after it would get 404.",
  OPEN: "GET reads the " + ITEM + " into the form; its ETag is kept, and " +
    (HAS_IDS ? "Replace, Change and Delete" : "Replace and Change") + " send it as If-Match.",
  GONE: "GET after the DELETE: 404 Not Found, as problem details. The " + ITEM + " is gone.",
  SUMMARY: "That was the life of a resource: POST created it at the address in Location (201), " +
    "GET read it with its ETag (200), PUT replaced it and PATCH changed part of it, each sending " +
    "the ETag it had read as If-Match (200), DELETE removed it (200, with the " + ITEM + " as it was), and a GET after that found " +
    "nothing (404). The list above was read again at the end.",
});
let opened = { id: "", tag: null, format: null };  // the user in the form, as the GET gave it

function accept() { return settings.format === "xml" ? "application/xml" : "application/json"; }

function userBody(fields, patch) {
  if (settings.format === "xml") {
    const doc = document.implementation.createDocument(null, ITEM, null);
    for (const [name, value] of Object.entries(fields)) {
      const element = doc.createElement(name);
      element.textContent = value;
      doc.documentElement.appendChild(element);
    }
    return { text: new XMLSerializer().serializeToString(doc), type: "application/xml" };
  }
  const typed = Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, typedValue(name, value)]));
  return { text: JSON.stringify(typed), type: patch ? "application/merge-patch+json" : "application/json" };
}

function typedValue(name, text) {  // JSON has types: the input's data-type says which (the page's HTML)
  const type = byId("user-" + name).dataset.type || "string";
  if (type === "string" || text === "") return text;
  try { return JSON.parse(text); } catch (error) { return text; }  // the server says what is wrong
}

function readUsers(text, contentType) {
  if (contentType.includes("json")) {
    const data = JSON.parse(text);
    return Array.isArray(data) ? data : [data];
  }
  const doc = new DOMParser().parseFromString(text, "application/xml");
  const field = (user, name) => (user.getElementsByTagName(name)[0] || {}).textContent;
  return Array.from(doc.getElementsByTagName(ITEM), (user) => Object.fromEntries(
    ["id", ...FIELD_NAMES].map((name) => [name, field(user, name)])));
}

function element(tag, text, className) {
  const made = document.createElement(tag);
  if (text !== undefined) made.textContent = text;
  if (className) made.className = className;
  return made;
}

function readProblem(text, contentType) {
  if (contentType.includes("problem+json")) return JSON.parse(text);
  const doc = new DOMParser().parseFromString(text, "application/xml");
  const field = (name) => (doc.getElementsByTagName(name)[0] || {}).textContent;
  const errors = Array.from(doc.getElementsByTagName("i"), (item) => ({
    field: item.getElementsByTagName("field")[0].textContent,
    message: item.getElementsByTagName("message")[0].textContent }));
  return { title: field("title"), status: field("status"), detail: field("detail"), errors };
}

function showProblem(item, text, contentType) {
  let problem;
  try { problem = readProblem(text, contentType); } catch (error) { return; }
  const box = element("div", undefined, "problem");
  box.append(element("strong", problem.status + " " + problem.title), element("p", problem.detail));
  if (problem.errors && problem.errors.length) {
    const list = element("ul");
    for (const error of problem.errors) list.append(element("li", error.field + ": " + error.message));
    box.append(list);
  }
  item.append(box);
}

function showExchange(request, response, text, options) {
  const item = element("li", undefined, "exchange status-" + String(response.status)[0]);
  item.dataset.status = response.status;
  if (options.tourStep) { item.classList.add("tour"); item.dataset.step = options.tourStep; }
  if (options.note) item.append(element("p", options.note, "note"));
  const requestLines = [request.method + " " + request.path + " HTTP/1.1"];
  for (const [name, value] of Object.entries(request.headers)) {
    requestLines.push(name + ": " + (name === "Authorization" ? "Bearer \u2022\u2022\u2022" : value));
  }
  item.append(element("pre", requestLines.join("\n") + "\n\n" + (request.body || "")));
  const responseLines = ["HTTP/1.1 " + response.status + " " + response.statusText];
  response.headers.forEach((value, name) => responseLines.push(name + ": " + value));
  item.append(element("pre", responseLines.join("\n") + "\n\n" + text));
  const contentType = response.headers.get("Content-Type") || "";
  if (contentType.includes("problem+")) showProblem(item, text, contentType);
  byId("exchanges").append(item);
  if (!options.quiet) item.scrollIntoView({ block: "nearest" });
  return item;
}

async function exchange(method, path, options = {}) {
  const headers = { Accept: accept() };
  if (settings.apiKey) headers.Authorization = "Bearer " + settings.apiKey;
  if (options.ifMatch) headers["If-Match"] = options.ifMatch;
  if (options.body) headers["Content-Type"] = options.body.type;
  const body = options.body ? options.body.text : undefined;
  let response;
  try {
    response = await fetch(path, { method, headers, body, cache: "no-store" });
  } catch (error) {  // no answer at all: the server is down, or a header cannot be sent
    byId("exchanges").append(element("li", method + " " + path + " got no answer: " + error.message, "problem"));
    throw error;
  }
  const text = await response.text();
  const item = showExchange({ method, path, headers, body }, response, text, options);
  return { response, text, item };
}

async function listUsers(path, quiet, tourStep) {
  const query = new URLSearchParams();
  const filters = Array.from(document.querySelectorAll("[id^=filter-]"), (input) => [input.id.slice(7), input.id]);
  for (const [name, id] of [["sort", "sort"], ...filters, ["q", "search"], ["limit", "limit"]]) {
    if (byId(id) && byId(id).value) query.set(name, byId(id).value);  // a singular resource's page has none
  }
  const note = HAS_IDS ? "GET " + PATH + " lists a page of " + ITEMS + "." : notes().GET;
  const { response, text } = await exchange("GET", path || PATH + (String(query) ? "?" + query : ""), { note, quiet, tourStep });
  const rows = byId("rows");
  rows.replaceChildren();
  byId("pages").replaceChildren();
  if (!response.ok) return;
  const total = response.headers.get("X-Total-Count");
  if (HAS_IDS) byId("total").textContent = total + (total === "1" ? " " + ITEM + " matches" : " " + ITEMS + " match") + " (X-Total-Count).";
  for (const user of readUsers(text, response.headers.get("Content-Type"))) {
    const row = element("tr");
    if (HAS_IDS) row.append(element("td", String(user.id)));
    row.append(...FIELD_NAMES.map((name) => element("td", shown(user[name]))));
    const actions = element("td");
    const edit = element("button", "Edit");
    edit.type = "button";
    edit.addEventListener("click", () => openUser(HAS_IDS ? String(user.id) : ""));
    actions.append(edit);
    row.append(actions);
    rows.append(row);
  }
  for (const link of (response.headers.get("Link") || "").split(",")) {
    const match = /<([^>]*)>;\s*rel="(\w+)"/.exec(link);
    if (!match) continue;
    const button = element("button", match[2]);
    button.type = "button";
    button.addEventListener("click", () => listUsers(match[1]));
    byId("pages").append(button);
  }
}

function shown(value) {  // a value as a cell shows it: text as it is, JSON's others as JSON writes them
  return typeof value === "string" || value == null ? value : JSON.stringify(value);
}

function formFields(onlyFilled) {  // an empty optional field is left out: none in POST and PUT, unchanged in PATCH
  const fields = {};
  for (const name of FIELD_NAMES) {
    const input = byId("user-" + name);
    if (input.value || (input.required && !onlyFilled)) fields[name] = input.value;
  }
  return fields;
}

function sayAtId(text) {
  byId("item-id-note").textContent = text;
}

async function openUser(id) {
  const { response, text } = await exchange("GET", ITEM_PATH.replace("{id}", id), { note: notes().OPEN });
  if (!response.ok) return;
  const [user] = readUsers(text, response.headers.get("Content-Type"));
  opened = { id: HAS_IDS ? String(user.id) : "", tag: response.headers.get("ETag"), format: settings.format };
  if (HAS_IDS) byId("item-id").value = user.id;
  for (const name of FIELD_NAMES) byId("user-" + name).value = shown(user[name]) ?? "";  // none: null, or no element
  sayAtId(named(opened.id, true) + " is open at ETag " + opened.tag + ".");
  byId("user-" + FIELD_NAMES[0]).focus();
}

function explainStale(item) {  // a 412: what happened, and a way on
  const box = item.querySelector(".problem") || item.appendChild(element("div", undefined, "problem"));
  box.append(element("p", opened.format === settings.format
    ? "Nothing was written: someone changed this " + ITEM + " after you opened it, so " + opened.tag +
      " is no longer its ETag. Reload it to see their change, then make yours again."
    : "Nothing was written: the " + ITEM + " was opened in " + opened.format.toUpperCase() + ", and a " +
      settings.format.toUpperCase() + " request needs the " + settings.format.toUpperCase() +
      " ETag. Reload it to get that one, then save again."));
  const reload = element("button", "Reload " + named(opened.id) + " (GET)");
  reload.type = "button";
  reload.id = "reload-user";
  reload.addEventListener("click", () => openUser(opened.id));
  box.append(reload);
}

async function write(method) {
  if (method === "POST") {
    const created = await exchange("POST", PATH, { body: userBody(formFields(false)), note: notes().POST });
    if (created.response.ok) await listUsers(undefined, true);
    return;  // an error stays in view: no list is read after it
  }
  if (!HAS_IDS && !opened.tag) {  // the one item has no id to enter, but is opened all the same
    sayAtId("Open " + named("") + " for editing first (GET): its ETag goes into If-Match.");
    byId("open-user").focus();
    return;
  }
  const id = HAS_IDS ? byId("item-id").value.trim() : "";
  if (HAS_IDS && (!id || id !== opened.id)) {  // a write sends the ETag its user was opened with
    sayAtId(id ? "Open " + ITEM + " " + id + " first: its ETag goes into If-Match."
               : "Enter the id of " + (/^[aeio]/.test(ITEM) ? "an " : "a ") + ITEM + ", or press Edit in the list, to open it first.");
    byId("item-id").focus();
    return;
  }
  const body = method === "DELETE" ? undefined : userBody(formFields(method === "PATCH"), method === "PATCH");
  const { response, item } = await exchange(method, ITEM_PATH.replace("{id}", id), { body, ifMatch: opened.tag, note: notes()[method] });
  if (response.status === 412) explainStale(item);
  if (!response.ok) return;
  opened.tag = response.headers.get("ETag");  // the new version's: the next write sends it
  sayAtId(named(id, true) + (method === "DELETE" ? " is deleted." : " is open at ETag " + opened.tag + "."));
  await listUsers(undefined, true);
}

async function tour() {
  const email = "tour-" + Date.now() + "@example.com";
  byId("exchanges").append(element("li", "The tour: one user, every verb.", "note"));
  const created = await exchange("POST", PATH, { body: userBody({ name: "Tour Guide", email }), note: notes().POST, tourStep: "POST" });
  const path = created.response.headers.get("Location");
  if (!created.response.ok || !path) return;
  const read = await exchange("GET", path, { note: notes().GET, tourStep: "GET" });
  const replaced = await exchange("PUT", path, { body: userBody({ name: "Tour Guide", email: "renamed-" + email }),
    ifMatch: read.response.headers.get("ETag"), note: notes().PUT, tourStep: "PUT" });
  const patched = await exchange("PATCH", path, { body: userBody({ name: "Tour Guide, patched" }, true),
    ifMatch: replaced.response.headers.get("ETag"), note: notes().PATCH, tourStep: "PATCH" });
  await exchange("DELETE", path, { ifMatch: patched.response.headers.get("ETag"), note: notes().DELETE, tourStep: "DELETE" });
  await exchange("GET", path, { note: notes().GONE, tourStep: "GET after DELETE" });
  await listUsers(undefined, true, "list");
  const summary = element("p", notes().SUMMARY, "note");
  summary.id = "tour-summary";
  const item = element("li", undefined, "summary");
  item.append(summary);
  byId("exchanges").append(item);
  item.scrollIntoView({ block: "nearest" });
  document.body.dataset.tour = "done";
}

byId("api-key").addEventListener("input", (event) => { settings.apiKey = event.target.value.trim(); });
for (const radio of document.querySelectorAll("input[name=format]")) {
  radio.addEventListener("change", (event) => { settings.format = event.target.value; });
}
function bind() {  // the list's and the form's controls: again when another resource's take their place
  byId("list-form").addEventListener("submit", (event) => { event.preventDefault(); listUsers(); });
  for (const button of document.querySelectorAll("[id^=send-]")) {  // the writes the resource takes
    button.addEventListener("click", () => write(button.id.slice(5)));
  }
  byId("open-user").addEventListener("click", () => {
    const id = HAS_IDS ? byId("item-id").value.trim() : "";
    if (id || !HAS_IDS) openUser(id); else { sayAtId("Enter the id of the " + ITEM + " to open."); byId("item-id").focus(); }
  });
}

async function explore(name) {  // another resource: its list and form, from its own page
  const response = await fetch(location.pathname + "?resource=" + encodeURIComponent(name), { headers: { Accept: "text/html" } });
  const page = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const id of ["list-title", "edit-title"]) {
    const part = "section[aria-labelledby=" + id + "]";
    document.querySelector(part).replaceWith(document.adoptNode(page.querySelector(part)));
  }
  Object.assign(document.querySelector("main").dataset, page.querySelector("main").dataset);
  for (const part of ["title", "h1", "#store"]) {
    document.querySelector(part).textContent = page.querySelector(part).textContent;
  }
  history.replaceState(null, "", location.pathname + "?resource=" + encodeURIComponent(name));
  readResource();
  opened = { id: "", tag: null, format: null };
  bind();
  await listUsers(undefined, true);
}

bind();
for (const choice of document.querySelectorAll("[data-resource]")) {
  choice.addEventListener("click", () => explore(choice.dataset.resource));
}
if (byId("tour-button")) byId("tour-button").addEventListener("click", tour);  // the tour is of users
if (location.hash === "#tour" && byId("tour-button")) tour(); else listUsers(undefined, true);
"""

EXPLORER_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{Items} API explorer</title>
<link rel="icon" href="data:,">
<style>{style}</style>
</head>
<body>
<header>
<h1>{Items} API explorer</h1>{resource_links}
<p>Every button sends a real HTTP request to this service, and the whole exchange appears under
<a href="#exchanges">Exchanges</a>: the request line, headers and body, then the status line,
headers and body of the answer. The API is described in <a href="/openapi.json">/openapi.json</a>.</p>
<p id="store">{are_kept} in {kept_in}.</p>
</header>
<main data-path="{path}" data-item="{item}" data-item-path="{item_path}">
<section aria-labelledby="settings-title">
<h2 id="settings-title">Settings</h2>
<label for="api-key">API key (sent as Authorization: Bearer; kept only in this page's memory)</label>
<input id="api-key" type="password" autocomplete="off">
<fieldset><legend>Format of requests and answers</legend>
<label><input type="radio" name="format" value="json" checked> JSON</label>
<label><input type="radio" name="format" value="xml"> XML</label>
</fieldset>
{tour_button}
</section>
<section aria-labelledby="list-title">
<h2 id="list-title">{Items}</h2>
{list_form}
<p id="total" aria-live="polite"></p>
<table><thead><tr>{columns}<th scope="col">action</th></tr></thead>
<tbody id="rows"></tbody></table>
<nav id="pages" class="buttons" aria-label="Pages (from the Link header)"></nav>
</section>
<section aria-labelledby="edit-title">
<h2 id="edit-title">{edit_title}</h2>
<div class="grid">
{id_input}
{user_inputs}
</div>
<div class="buttons">
<button id="open-user" type="button">Open for editing (GET)</button>
{write_buttons}
</div>
</section>
<section aria-labelledby="exchanges-title">
<h2 id="exchanges-title">Exchanges</h2>
<ol id="exchanges" aria-live="polite"></ol>
</section>
</main>
<script>{script}</script>
</body>
</html>
"""


def csp_source(text):
    """A CSP source that allows exactly this inline script or style: its SHA-256, in base64."""
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def as_text(text):
    """A name from a declaration or a file as HTML text, never markup, and never a
    placeholder of the page's template: a field named {script} stays those characters."""
    return html.escape(text).replace("{", "&#123;")


def sort_option(key):
    """The sort <select>'s option for one of the core's sort keys: "name", or "-name"."""
    words = key[1:] + ", descending" if key.startswith("-") else key
    return '<option value="%s">%s</option>' % (as_text(key), as_text(words))


def filter_input(field):
    """The list's labelled filter for a field, which says whether it compares letter case."""
    return ('<div><label for="filter-{0}">{1} is{2}</label><input id="filter-{0}"></div>'
            .format(as_text(field.name), as_text(field.name.capitalize()),
                    "" if field.ignores_case else " exactly"))


def user_input(field):
    """The form's labelled input for a field; the script finds the fields by data-field, and
    sends a value typed as data-type says (text when it says nothing)."""
    optional, required = ("", " required") if field.required else (" (optional)", "")
    typed = "" if field.type == "string" else ' data-type="%s"' % field.type
    return ('<div><label for="user-{0}">{0}{1}</label>'
            '<input id="user-{0}" data-field="{0}"{3}{2}></div>'.format(
                as_text(field.name), optional, required, typed))


TOUR_BUTTON = ('<div class="buttons"><button id="tour-button" type="button">Take the guided tour '
               '(POST, GET, PUT, PATCH, DELETE)</button></div>')


def offers_tour(resource):
    """Whether the tour can run on a resource: it writes a name and an email, so these must
    be its fields and all that an item needs."""
    required = {field.name for field in resource.fields if field.required}
    return not resource.singular and required <= {"name", "email"} <= set(resource.field_names)


LIST_FORM = """<form id="list-form" class="grid">
<div><label for="sort">Sort by</label><select id="sort">
{sort_options}</select></div>
{filters}
<div><label for="search">Search (q)</label><input id="search" type="search" placeholder="{search_hint}"></div>
<div><label for="limit">{Items} per page</label><input id="limit" type="number" min="1" max="{max_limit}" value="10"></div>
<div class="buttons"><button type="submit">List {items}</button></div>
</form>"""
READ_FORM = """<p>The {item} is one item at {path}, with no id and no list, as json-server
serves an object in db.json: it is read (GET), replaced (PUT) and changed (PATCH), never
created or deleted.</p>
<form id="list-form"><div class="buttons"><button type="submit">Read the {item} (GET)</button></div></form>"""
ID_INPUT = """<div><label for="item-id">id (for PUT, PATCH, DELETE)</label><input id="item-id" inputmode="numeric" aria-describedby="item-id-note">
<p id="item-id-note" class="hint" aria-live="polite"></p></div>"""
OPEN_NOTE = '<p id="item-id-note" class="hint whole-row" aria-live="polite"></p>'  # no id field
WRITE_BUTTONS = (("POST", "Create (POST)"), ("PUT", "Replace (PUT)"),
                 ("PATCH", "Change filled fields (PATCH)"), ("DELETE", "Delete (DELETE)"))


def write_buttons(resource):
    """A button for each write the resource's routes take: a singular one has no POST or
    DELETE."""
    verbs = {verb for found in resource.routes for verb in found.actions}
    return "\n".join('<button id="send-%s" type="button">%s</button>' % (verb, words)
                     for verb, words in WRITE_BUTTONS if verb in verbs)


def item_path(resource):
    """Where the resource's items are replaced, as its routes say: /users/{id}, /profile."""
    return next(found.path for found in resource.routes if "PUT" in found.actions)


def resource_parts(resource):
    """The page's parts that a collection and a singular resource have in their own ways:
    its list (or the read of its one item), its id, and what its store sentence says."""
    if resource.singular:
        return (("list_form", READ_FORM), ("id_input", OPEN_NOTE),
                ("edit_title", "Change the {item}"), ("are_kept", "The {item} is kept"))
    return (("list_form", LIST_FORM), ("id_input", ID_INPUT),
            ("edit_title", "Create, change or delete {an_item}"), ("are_kept", "{Items} are kept"))


def explorer_template(resource, resources):
    """The page for a resource, with the parts that name its fields built from its
    declaration, and the style and script; only {kept_in} is left. The tour is of users."""
    searched = as_text(" or ".join(resource.searched))
    links = "" if len(resources) < 2 else '\n<nav class="buttons" aria-label="Resources">%s</nav>' % (
        "".join('<button type="button" data-resource="{0}">{0}</button>'.format(
            as_text(other.collection)) for other in resources))
    parts = resource_parts(resource) + (  # first: they hold the parts below
        ("sort_options", "".join(map(sort_option, resource.sort_keys))),
        ("filters", "\n".join(filter_input(field) for field in resource.fields
                               if field.name in resource.sorted_by)),  # json: no filter
        ("search_hint", "text in a " + searched),
        ("columns", "".join('<th scope="col">%s</th>' % as_text(name)
                            for name in resource.columns)),  # a singular one: no id
        ("user_inputs", "\n".join(map(user_input, resource.fields))),
        ("write_buttons", write_buttons(resource)),
        ("item_path", html.escape(item_path(resource))),
        ("resource_links", links), ("tour_button", TOUR_BUTTON if offers_tour(resource) else ""),
        ("Items", as_text(resource.collection.capitalize())),
        ("items", as_text(resource.collection)), ("path", html.escape(resource.path)),
        ("an_item", as_text(a_or_an(resource.item))), ("item", as_text(resource.item)),
        ("max_limit", str(MAX_LIMIT)),
        ("style", EXPLORER_STYLE), ("script", EXPLORER_SCRIPT),  # last: their braces stay
    )
    page = EXPLORER_PAGE
    for name, text in parts:
        page = page.replace("{%s}" % name, text)
    return page


EXPLORER_PAGES = {}  # the page of each resource, as served with the others: made once


def explorer_page(resource, resources, kept_in):
    """The page, saying where this server keeps its items (only text: no script or style
    changes, so the policy's hashes hold)."""
    key = (resource, tuple(resources))
    if key not in EXPLORER_PAGES:
        EXPLORER_PAGES[key] = explorer_template(resource, resources)
    return EXPLORER_PAGES[key].replace("{kept_in}", html.escape(kept_in)).encode("utf-8")


EXPLORER_CSP = ("default-src 'none'; script-src %s; style-src %s; connect-src 'self'; "
                "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
                % (csp_source(EXPLORER_SCRIPT), csp_source(EXPLORER_STYLE)))
EXPLORER_HEADERS = [("Content-Security-Policy", EXPLORER_CSP), ("X-Content-Type-Options", "nosniff")]


# ---------------------------------------------------------------------------------------
# Appendix E: the API description, an OpenAPI 3.1 document built from plain dicts
#
# The document is built from what the handler serves: its routes, each verb in a route's
# Allow, each resource's fields and the list's parameters. Only what the code cannot say is
# written here: in RESOURCE_OPERATIONS (in a resource's Words) and OPERATIONS, keyed by the
# handler method that answers, each operation's name, summary, tag, body and the answers it
# can give. A route, a verb, a field or a resource added in the core shows in the document
# with no edit here.
# ---------------------------------------------------------------------------------------

OPENAPI_ROUTE = route("/openapi.json", r"/openapi\.json", {"GET": "get_openapi"})


class OpenApiHandler(UsersHandler):
    """UsersHandler with GET /openapi.json, the OpenAPI description of the service."""

    added_routes = [OPENAPI_ROUTE]

    def get_openapi(self):
        """GET /openapi.json: the document of the routes this handler serves, which says
        whether the API key is needed."""
        document = openapi_document(self.server.routes, auth=self.server.api_key is not None,
                                    keyed_paths=self.server.keyed_paths)
        self.respond(HTTPStatus.OK, json_bytes(document), JSON_TYPE)


TAGS = [{"name": "service", "description": "The index, the explorer and this document"},
        {"name": "testing", "description": "Test controls for end-to-end suites"}]


def resource_tag(resource):
    """A resource's tag: its collection's name, first among the tags."""
    what = "read, change" if resource.singular else "list, create, read, change"
    return {"name": resource.collection,
            "description": "The %s: %s" % (resource.collection, what)}


def openapi_document(routes, auth, keyed_paths=None):
    """The OpenAPI 3.1 description of these routes; `auth` when the service has an API key,
    which the paths under keyed_paths need (the handler's: its resources' by default)."""
    resources = list(dict.fromkeys(found.resource for found in routes if found.resource))
    if keyed_paths is None:
        keyed_paths = OpenApiHandler.keyed_paths(resources)
    paths = {found.path: path_item(found, auth and any(
        is_under(found.path.partition("{")[0].rstrip("/") or "/", keyed)
        for keyed in keyed_paths), resources) for found in routes}
    tags = {operation["tags"][0] for operation in operations_in(paths)}
    served = in_words([resource.collection for resource in resources])
    return {
        "openapi": "3.1.0",
        "info": {"title": "%s API" % (served[:1].upper() + served[1:]) if len(resources) == 1
                 else "REST API", "version": "1.0",
                 "description": "%s resource%s in JSON and XML, from rest_users.py." % (
                     "A" + a_or_an(resources[0].item)[1:] if len(resources) == 1
                     else "The " + served, "s" if len(resources) > 1 else ""),
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "servers": [{"url": "/"}],  # wherever this document was fetched from
        "tags": [tag for tag in list(map(resource_tag, resources)) + TAGS
                 if tag["name"] in tags],  # only the tags operations have
        "paths": paths,
        "components": openapi_components(paths, resources),
    }


def operations_in(paths):
    """Every operation of the paths (a path item holds its parameters beside them)."""
    return [operation for item in paths.values()
            for method, operation in item.items() if method != "parameters"]


def path_item(found, auth, resources):
    """A route's path item: an operation for each verb in its Allow, as route() lists them
    (HEAD where there is GET, OPTIONS everywhere), and its path parameters."""
    names = re.findall("{([^}]+)}", found.path)  # find_route reads each as an id
    item = {"parameters": [dict(ID_PARAMETER, name=name) for name in names]} if names else {}
    for verb in found.allow.split(", "):
        item[verb.lower()] = verb_operation(found, verb, auth, resources)
    return item


def verb_operation(found, verb, auth, resources):
    """The operation of one verb on a route; HEAD is its GET without the bodies, and
    OPTIONS takes the tag of the route's other operations."""
    if verb == "OPTIONS":
        return options_of(found, resources)
    entry = described_action(found, found.actions["GET" if verb == "HEAD" else verb],
                             resources)
    if verb == "HEAD":
        return head_operation(action_operation(entry, auth), *entry.head)
    return action_operation(entry, auth)


def options_of(found, resources):
    """OPTIONS on a route: a resource's collection or item, or one named in OPTIONS_IDS, or
    named after its path's words."""
    if found.resource is None:
        tag = next((described_action(found, name, resources).tag
                    for name in found.actions.values()), main_tag(resources))
        return options_operation(OPTIONS_IDS.get(found.path) or "options" + camel_case(
            name_words(found.path)), "What %s takes" % found.path, tag)
    words, listed = Words(found.resource, found.parent, resources), "POST" in found.actions
    return options_operation(
        "options" + (words.Items if listed else words.Item), "What %s takes" % found.path,
        words.tag, describe_action("optionsList" if listed else "optionsItem", words))


def action_operation(entry, keyed):
    """The operation an entry of OPERATIONS describes, behind the key (and its 401) when
    its path needs the key, as the handler decides (keyed_paths)."""
    problems = [code for code in entry.problems if keyed or code != "401"]
    problems += ["401"] if keyed and "401" not in problems else []
    return operation(entry.operation_id, entry.summary, responses(entry.answers, *problems),
                     auth=keyed, tag=entry.tag, parameters=entry.parameters, body=entry.body,
                     description=entry.description)


def name_words(name):
    """A name's words as OpenAPI may write them, in ASCII letters and digits: a name in another
    script is first spelled in Punycode (RFC 3492), as a domain name is, so each keeps its own."""
    try:
        name.encode("ascii")
    except UnicodeEncodeError:
        name = name.encode("punycode").decode("ascii")
    return re.findall("[A-Za-z0-9]+", name)


def camel_case(words):
    """Words run together, each capitalized: ["list", "users"] gives ListUsers."""
    return "".join(word.capitalize() for word in words)


def main_tag(resources):
    """The tag of what is under no resource of its own: the first resource served's."""
    return (resources[0] if resources else USERS).collection


def described_action(found, name, resources=()):
    """The entry for the method that answers on a route: its resource's action, or one of
    OPERATIONS; for one neither has (a route a learner added), an entry made from the
    method's name, under the first resource served, as most are."""
    if found.resource is not None and name in RESOURCE_OPERATIONS:
        return RESOURCE_OPERATIONS[name](Words(found.resource, found.parent, resources))
    if name in OPERATIONS:
        return OPERATIONS[name]
    words = name.split("_")
    return described(words[0] + camel_case(words[1:]), " ".join(words).capitalize(),
                     main_tag(resources),
                     {"200": {"description": "Done"}}, ("401", "503"),
                     head=("head" + camel_case(words), "Its headers"))


def json_schema_ref(name):
    """A reference to one of the document's schemas."""
    return {"$ref": "#/components/schemas/" + name}


def body_content(schema, xml_schema=None, json_types=(JSON_TYPE,)):
    """A content map: the schema in each JSON type, and in both XML types."""
    content = {media_type: {"schema": schema} for media_type in json_types}
    for media_type in (XML_TYPE, TEXT_XML_TYPE):
        content[media_type] = {"schema": xml_schema or schema}
    return content


def header_refs(*names):
    """References to the document's headers."""
    return {name: {"$ref": "#/components/headers/" + name} for name in names}


def problem_response(description, *headers):
    """A response whose body is problem details (RFC 9457)."""
    return {"description": description, "headers": header_refs("Vary", *headers),
            "content": {"application/problem+json": {"schema": json_schema_ref("Problem")},
                        "application/problem+xml": {"schema": json_schema_ref("Problem")}}}


PROBLEMS = {
    "400": "Malformed body or query, or bad framing",
    "401": "Missing or wrong Bearer token",
    "403": "Sent by a web page on another origin (Origin or Sec-Fetch-Site says so)",
    "408": "The request stopped arriving for the idle timeout",
    "404": "No such item",
    "406": "The Accept header takes none of JSON, XML",
    "409": "Another item has this unique value, or other items refer to this one",
    "411": "A chunked body: send Content-Length",
    "412": "If-Match does not name the current ETag",
    "413": "The body is larger than --max-body",
    "415": "The body is not JSON or XML in UTF-8",
    "421": "A Host this server does not answer for; start it with --allow-host NAME",
    "422": "Fields that break the rules; errors lists each one",
    "503": "Not now: asked for with --fail-rate, or the database is locked or failing; try "
           "again after Retry-After",
    "507": "The server's disk is full: nothing was changed",
}
EDGE = ("408", "421")  # any request can stall, or name a host this server does not serve


def responses(success, *problem_codes):
    """An operation's responses: its successes, then the problems it can give."""
    answers = dict(success)
    for code in problem_codes:
        headers = {"401": ["WWW-Authenticate"], "503": ["Retry-After"]}.get(code, [])
        answers[code] = problem_response(PROBLEMS[code], *headers)
    for code in EDGE:
        answers[code] = problem_response(PROBLEMS[code])
    answers["default"] = problem_response("Any other error, as problem details")
    return answers


def item_success(words, status, description, *extra_headers):
    """A response carrying one item and its ETag."""
    return {status: {"description": description,
                     "headers": header_refs("ETag", "Vary", *extra_headers),
                     "content": body_content(json_schema_ref(words.Schema))}}


def fields_in_words(resource):
    """A resource's fields as a sentence names them, the optional ones marked so."""
    return in_words([field.name + ("" if field.required else " (optional)")
                     for field in resource.fields]) or "fields (it has none)"


class Words:
    """The words a resource's operations are written in: users gives listUsers, getUser and
    the schema User; under a parent, /users/{id}/todos gives listUserTodos."""

    def __init__(self, resource, parent=None, resources=()):
        self.referring = [child.collection for child, _ in referrers(resource, resources)]
        self.referred = bool(self.referring)  # a delete may be a 409, and take _dependent
        self.nested = ("404",) if parent else ()  # the parent may not be there
        prefix = camel_case(name_words(parent[0].item)) if parent else ""
        self.resource, self.path, self.tag = resource, resource.path, resource.collection
        self.items, self.item, self.fields = resource.collection, resource.item, (
            fields_in_words(resource))
        self.Items = prefix + camel_case(name_words(resource.collection))
        self.Schema = camel_case(name_words(resource.item))
        self.Item = prefix + self.Schema
        if parent is not None:
            self.path = "%s/{id}%s" % (parent[0].path, resource.path)
        self.first = (resource.sorted_by[1:] or ("id",))[0]  # the list's examples sort by it
        self.any_of = " or ".join(resource.field_names)


RESOURCE_DESCRIPTIONS = {  # what a viewer shows under a resource's operations' summaries
    "list": "A page of %(items)s, in id order unless sort says otherwise (`sort=%(first)s,-id`: "
            "by %(first)s, then by id descending), with X-Total-Count (how many match, on all "
            "pages) and a Link header to the first, last, previous and next pages. A "
            "repeated %(any_of)s means any of them.\n\n"
            "The list also reads the query dialects of front-end libraries, each into "
            "the same query, so they give the same %(items)s in the same order:\n\n"
            "- json-server 0.17 (react-admin's ra-data-json-server, refine's simple-rest): "
            "`%(path)s?_start=0&_end=10&_sort=%(first)s&_order=desc%(like)s&id_gte=2`\n"
            "- json-server 1.0, answered as its page object (first, prev, next, last, "
            "pages, items, data): `%(path)s?_page=1&_per_page=10&_sort=-%(first)s&id:in=1,2,3`\n"
            "- react-admin's ra-data-simple-rest, answered with a Content-Range "
            "(`%(items)s 0-9/25`): `%(path)s?sort=[\"%(first)s\",\"ASC\"]&range=[0,9]&"
            "filter={\"q\":\"ada\"}`\n\n"
            "A request uses one way of paging and one of sorting.",
    "headList": "The headers GET %(path)s would send (X-Total-Count, Link), without the body.",
    "create": "Creates %(an_item)s from its %(fields)s; the server assigns the id. The answer "
              "is 201 with the %(item)s, its ETag, and its address in Location.",
    "optionsList": "The methods %(path)s takes, in Allow; also the answer to a CORS preflight.",
    "retrieve": "One %(item)s and its ETag. With If-None-Match naming that ETag the answer is "
                "304 without a body: your copy is current.",
    "headItem": "The headers GET %(path)s/{id} would send (its ETag), without the body.",
    "update": "Replaces the whole %(item)s, its %(fields)s; it never creates. Send the ETag you "
              "read as If-Match: if the %(item)s changed since, the answer is 412 and nothing "
              "is written.",
    "partial_update": "Changes only the fields sent: a JSON merge patch (RFC 7396) or partial "
                      "XML. If-Match guards it as it guards PUT.",
    "destroy": "Deletes the %(item)s: 200 with the %(item)s as it was (no ETag: that version is "
               "gone), or 204 with Prefer: return=minimal; a GET after it is 404. If-Match "
               "guards it as it guards PUT.",
    "optionsItem": "The methods %(path)s/{id} takes, in Allow, whether or not the %(item)s "
                   "exists; also the answer to a CORS preflight.",
}


def describe_action(name, words):
    """The description of a resource's action, in its words."""
    first = words.resource.fields_by_name.get(words.first)
    like = "&%s_like=ada" % words.first if first is not None and first.type == "string" else ""
    return RESOURCE_DESCRIPTIONS[name] % dict(vars(words), an_item=a_or_an(words.item),
                                              like=like)


DESCRIPTIONS = {  # what a viewer shows under each operation's summary
    "getIndex": 'Where things are: each resource\'s path by its name, such as {"users": '
                '"/users"}, in JSON or XML. A browser, which ranks text/html first, gets the '
                "explorer page instead.",
    "headIndex": "The headers GET / would send, without the body.",
    "optionsIndex": "The methods / takes, in Allow.",
    "getOpenApi": "This OpenAPI 3.1 document, open without the key.",
    "headOpenApi": "The headers GET /openapi.json would send, without the body.",
    "optionsOpenApi": "The methods /openapi.json takes, in Allow.",
    "getDb": "Every resource at once, in JSON: each collection an array of its items, each "
             "singular resource its object, as json-server's GET /db and its db.json.",
    "headDb": "The headers GET /db would send, without the body.",
    "optionsDb": "The methods /db takes, in Allow.",
    "resetUsers": "Puts every resource back to the items the server started with (--fake-users, "
                  "--load), new ids continuing after them, and empties the journal: a known "
                  "state for each end-to-end test. A database file is not reset (409).",
    "optionsReset": "The methods /__admin/reset takes, in Allow. No CORS: a page on another "
                    "origin cannot reset the API.",
    "listRequests": "The last {:,} requests to the resources, oldest first: method, target, "
                    "headers (credentials and cookies masked), body (its first {} KiB), "
                    "status and when it came.".format(Journal.LIMIT, Journal.MAX_BODY // 1024),
    "clearRequests": "Empties the journal of requests.",
    "headRequests": "The headers GET /__admin/requests would send, without the body.",
    "optionsRequests": "The methods /__admin/requests takes, in Allow.",
}


def operation(operation_id, summary, answers, *, auth, tag, parameters=(), body=None,
              description=None):
    """One operation; `auth` marks it as needing the Bearer token, and every other one says
    it is open with an empty security list, as OpenAPI tools expect."""
    built = {"operationId": operation_id, "summary": summary,
             "description": description or DESCRIPTIONS.get(operation_id, summary),
             "tags": [tag],
             "security": [{"bearerAuth": []}] if auth else [], "responses": answers}
    if parameters:
        built["parameters"] = list(parameters)
    if body:
        built["requestBody"] = {"required": True, "content": body}
    return built


def head_operation(get, operation_id, summary, description=None):
    """HEAD: GET's answers without their bodies (RFC 9110 §9.3.2), so that a generated
    client reads none."""
    answers = {code: {key: value for key, value in response.items() if key != "content"}
               for code, response in get["responses"].items()}
    return dict(get, operationId=operation_id, summary=summary, responses=answers,
                description=description or DESCRIPTIONS.get(operation_id, summary))


def options_operation(operation_id, summary, tag, description=None):
    """OPTIONS: 204 with Allow, never behind the key."""
    return operation(operation_id, summary, description=description, answers=dict(
        {"204": {"description": "The methods this path takes", "headers": header_refs("Allow")},
         "default": problem_response("No such path")},
        **{code: problem_response(PROBLEMS[code]) for code in EDGE}), auth=False, tag=tag)


TEXT = {"type": "string"}
ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
ID_PARAMETER = {"name": "id", "in": "path", "required": True, "example": 1,
                "schema": ID_SCHEMA}
IF_MATCH = {"name": "If-Match", "in": "header", "schema": TEXT,
            "description": "the ETag you read: the write fails with 412 if it is stale"}
IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "schema": TEXT}
PREFER = {"name": "Prefer", "in": "header", "schema": TEXT, "example": "return=minimal",
          "description": "return=minimal: answer 204 without the deleted item (RFC 7240)"}


def dependent_parameter(referring):
    """DELETE's _dependent, for a resource that others refer to."""
    return {"name": "_dependent", "in": "query", "schema": TEXT, "example": ",".join(referring),
            "description": "delete the items of these resources that refer to this one with "
                           "it, all or none (json-server 1.0's); without it, a 409 if any do"}


def list_parameters(resource):
    """The query parameters of a resource's list, in its list_parameters' order; one the
    list takes that nothing here describes is a plain string."""
    described = {field.name: filter_parameter(field) for field in resource.fields}
    described.update(
        limit={"name": "limit", "in": "query", "schema": {
            "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}},
        offset={"name": "offset", "in": "query", "schema": {
            "type": "integer", "minimum": 0, "maximum": MAX_ID, "default": 0}},
        sort=sort_parameter(resource),
        q={"name": "q", "in": "query", "schema": {"type": "string", "minLength": 1},
           "description": "text in the %s, ignoring case" % " or the ".join(resource.searched)})
    return [described.get(name) or {"name": name, "in": "query", "schema": TEXT}
            for name in our_parameters(resource)]


def sort_parameter(resource):
    """sort: a resource's sort keys, comma-separated; the example sorts by the first field."""
    key = "(%s)" % "|".join(resource.sort_keys)
    return {"name": "sort", "in": "query", "description": "sort keys, comma-separated "
            "(-: descending)", "schema": {"type": "string", "default": "id",
                                          "example": ",".join(resource.sorted_by[1:2] + ("-id",)),
                                          "pattern": "^%s(,%s)*$" % (key, key)}}


def filter_parameter(field):
    """A field's filter: the items whose field equals a value, or any of several."""
    equal = "%s, ignoring ASCII case" if field.ignores_case else "exact %s"
    value = {"type": "string", "minLength": 1} if field.type == "string" else {"type": field.type}
    return {"name": field.name, "in": "query",
            "description": equal % field.name + "; repeated: any of them",
            "schema": {"type": "array", "items": value}}


Described = namedtuple("Described", "operation_id summary tag answers problems parameters "
                                    "body head description")


def described(operation_id, summary, tag, answers, problems, *, parameters=(), body=None,
              head=None, description=None):
    """An entry of OPERATIONS: the problem codes the operation can answer ("401": behind
    the key when there is one), the body it reads, for a GET the operationId, summary and
    description of its HEAD, and its own description if DESCRIPTIONS has none."""
    return Described(operation_id, summary, tag, answers, problems, parameters, body, head,
                     description)


DONE = {"204": {"description": "Done", "headers": header_refs("Vary")}}
BODY_PROBLEMS = ("400", "401", "503", "406", "409", "411", "413", "415", "422", "507")
RESOURCE_OPERATIONS = {  # a resource's action -> what the document says of it, in its Words
    "list": lambda w: described(
        "list" + w.Items, "List %s, a page at a time" % w.items, w.tag, {"200": {
            "description": "A page of " + w.items, "content": body_content(json_schema_ref(
                w.Schema + "List")), "headers": header_refs(*list_headers(w.resource))}},
        ("400", "401", "503", "406") + w.nested, parameters=list_parameters(w.resource),
        head=("head" + w.Items, "The list's headers", describe_action("headList", w)),
        description=describe_action("list", w)),
    "create": lambda w: described(
        "create" + w.Item, "Create " + a_or_an(w.item), w.tag,
        item_success(w, "201", "Created", "Location"), BODY_PROBLEMS + w.nested,
        body=body_content(json_schema_ref("New" + w.Schema)),
        description=describe_action("create", w)),
    "retrieve": lambda w: described(
        "get" + w.Item, "Read " + a_or_an(w.item), w.tag, dict(
            item_success(w, "200", "The " + w.item), **{"304": {
                "description": "Not modified: the If-None-Match tag is current",
                "headers": header_refs("ETag", "Vary")}}),
        ("401", "503", "404", "406"), parameters=[IF_NONE_MATCH],
        head=("head" + w.Item, "%s's headers" % a_or_an(w.item).capitalize(),
              describe_action("headItem", w)), description=describe_action("retrieve", w)),
    "update": lambda w: described(
        "replace" + w.Item, "Replace %s (no create)" % a_or_an(w.item), w.tag,
        item_success(w, "200", "Replaced"), BODY_PROBLEMS + ("404", "412"),
        parameters=[IF_MATCH], body=body_content(json_schema_ref(w.Schema + "Replacement")),
        description=describe_action("update", w)),
    "partial_update": lambda w: described(
        "patch" + w.Item, "Change some fields", w.tag, item_success(w, "200", "Changed"),
        BODY_PROBLEMS + ("404", "412"), parameters=[IF_MATCH], body=body_content(
            json_schema_ref(w.Schema + "Patch"), json_types=(MERGE_PATCH, JSON_TYPE)),
        description=describe_action("partial_update", w)),
    "destroy": lambda w: described(
        "delete" + w.Item, "Delete " + a_or_an(w.item), w.tag, {
            "200": {"description": "Deleted: the %s as it was" % w.item, "headers": header_refs(
                "Vary"), "content": body_content(json_schema_ref(w.Schema))},
            "204": {"description": "Deleted, with Prefer: return=minimal",
                    "headers": header_refs("Preference-Applied")}},
        ("401", "503", "404", "406", "412", "507") + (("400", "409") if w.referred else ()),
        parameters=[IF_MATCH, PREFER] + ([dependent_parameter(w.referring)] if w.referred
                                         else []),
        description=describe_action("destroy", w)),
}
RESOURCE_OPERATIONS.update(  # a singular resource's one item: /profile
    retrieve_one=RESOURCE_OPERATIONS["retrieve"], update_one=RESOURCE_OPERATIONS["update"],
    partial_update_one=RESOURCE_OPERATIONS["partial_update"])
OPERATIONS = {  # the handler method that answers a verb -> what the document says of it
    "reset": described(
        "resetUsers", "Back to the starting items", "testing", dict(DONE, **{
            "409": problem_response("With --db: a database file is not reset over HTTP")}),
        ("401", "403")),
    "list_requests": described(
        "listRequests", "The requests sent to the resources", "testing", {"200": {
            "description": "The journal", "headers": header_refs("Vary"),
            "content": {JSON_TYPE: {"schema": json_schema_ref("Journal")}}}},
        ("401", "403"), head=("headRequests", "The journal's headers")),
    "clear_requests": described("clearRequests", "Empty the journal", "testing", DONE,
                                ("401", "403")),
    "get_index": described(
        "getIndex", "The index, or the explorer page for a browser", "service", {"200": {
            "description": "Where things are", "headers": header_refs("Vary"),
            "content": dict(body_content(json_schema_ref("Index")),
                            **{"text/html": {"schema": TEXT}})}},
        ("406",), head=("headIndex", "The index's headers")),
    "get_db": described(
        "getDb", "Every resource, as json-server's db.json holds them", "service", {"200": {
            "description": "Each collection's items, and each singular resource's object",
            "headers": header_refs("Vary"),
            "content": {JSON_TYPE: {"schema": {"type": "object"}}}}},
        ("401", "406"), head=("headDb", "The headers of every resource")),
    "get_openapi": described(
        "getOpenApi", "This document", "service", {"200": {
            "description": "The OpenAPI document",
            "content": {JSON_TYPE: {"schema": {"type": "object"}}}}},
        ("406",), head=("headOpenApi", "This document's headers")),
}
OPTIONS_IDS = {"/": "optionsIndex", "/openapi.json": "optionsOpenApi", "/db": "optionsDb",
               "/__admin/reset": "optionsReset", "/__admin/requests": "optionsRequests"}


def list_headers(resource):
    """The headers of every list: json-server's lists send Link only with a page asked for."""
    return ("X-Total-Count",) + (() if lists_as_json_server(resource) else ("Link",)) + ("Vary",)


def openapi_components(paths, resources):
    """The schemas and headers the paths refer to, and the security scheme if an operation
    needs the key: without one a viewer would offer to log in for nothing."""
    components = used_components(paths, {"schemas": openapi_schemas(resources),
                                         "headers": openapi_headers()})
    if any(operation["security"] for operation in operations_in(paths)):
        components["securitySchemes"] = {"bearerAuth": {"type": "http", "scheme": "bearer"}}
    return components


def openapi_headers():
    """Every response header the operations can name."""
    header = {"schema": {"type": "string"}}
    return {
        "ETag": dict(header, description="The version of this representation"),
        "Location": dict(header, description="Where the new item is"),
        "Link": dict(header, description="first, last, prev, next pages (RFC 8288)"),
        "X-Total-Count": {"schema": {"type": "integer", "minimum": 0},
                          "description": "How many items match, over all pages"},
        "Vary": dict(header, description="Accept: the format follows the Accept header"),
        "Allow": dict(header, description="The methods this path takes"),
        "Retry-After": dict(header, description="Seconds to wait before trying again"),
        "Preference-Applied": dict(header, description="return=minimal (RFC 7240)"),
        "WWW-Authenticate": dict(header, description=CHALLENGE),
    }


def references(node):
    """Every $ref in a part of the document."""
    found = {node["$ref"]} if isinstance(node, dict) and "$ref" in node else set()
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return found.union(*map(references, children))


def used_components(paths, components):
    """Only the components the paths refer to, directly or through another component."""
    used, new = set(), references(paths)
    while new:
        used |= new
        named = [ref.split("/")[2:] for ref in new]  # "#/components/schemas/User"
        new = references([components[kind][name] for kind, name in named]) - used
    return {kind: {name: value for name, value in declared.items()
                   if "#/components/%s/%s" % (kind, name) in used}
            for kind, declared in components.items()}


PATCH_EXAMPLES = {USERS.fields_by_name["name"]: "Ada King"}  # for Try it out, by the field
TYPE_EXAMPLES = {"string": "text", "integer": 1, "number": 1.5, "boolean": False, "json": {}}


def example_of(field):
    """A field's example: as declared, else its default, else one of its type."""
    if field.example is not None:
        return field.example
    return field.default if field.default is not None else TYPE_EXAMPLES[field.type]


def field_schema(field):
    """A field's JSON Schema as declared: its type, its bounds in their usual order, then
    the rest its declaration gives (a pattern)."""
    schema = {"type": field.type} if field.type != "json" else {}  # json: any value
    schema.update((key, value) for key, value in field.schema.items() if key == "minLength")
    schema.update({"maxLength": field.max_length} if field.max_length else {}, **field.schema)
    return schema


def described_field(field):
    """A field's JSON Schema, with its example; an optional field's none is null in JSON
    (a type list, JSON Schema 2020-12 as OpenAPI 3.1 reads it) and no element in XML."""
    schema = dict(field_schema(field), examples=[example_of(field)])
    if not field.required and is_none(field.default) and "type" in schema:  # json: any
        schema["type"] = [schema["type"], "null"]
    return schema


def item_schema(resource, properties, required, example, **more):
    """An item with these properties and no other (a file's: any other too), named in XML as
    the core names it."""
    tag = item_element(resource, new_item(resource, 1, {})).tag  # read off what it renders
    schema = dict({"type": "object", "properties": properties,
                   "additionalProperties": resource.open_fields,
                   "xml": {"name": tag}, "examples": [example]}, **more)
    if required:
        schema["required"] = required
    return schema


def resource_schemas(resource):
    """The JSON Schemas of a resource's item, list, new item, replacement and patch."""
    name = Words(resource).Schema
    fields = {field.name: described_field(field) for field in resource.fields}
    with_id = fields if resource.singular else dict({"id": ID_SCHEMA}, **fields)
    required = [field.name for field in resource.fields if field.required]
    new = {field.name: example_of(field) for field in resource.fields}
    example = new if resource.singular else dict([("id", 1)] + list(new.items()))
    patch = {field.name: PATCH_EXAMPLES[field] for field in resource.fields
             if field in PATCH_EXAMPLES} or dict(list(new.items())[:1])  # else a first field's
    collection = ElementTree.fromstring(render_items(resource, [], XML)).tag
    return {
        name: item_schema(resource, with_id, ([] if resource.singular else ["id"]) + required,
                          example),
        name + "List": {"type": "array", "items": json_schema_ref(name),
                        "xml": {"name": collection, "wrapped": True}, "examples": [[example]]},
        "New" + name: item_schema(resource, fields, required, new),
        name + "Replacement": item_schema(resource, with_id, required, new,
                                          description="id, if given, must be the id in the path"),
        name + "Patch": item_schema(resource, with_id, [], {
            key: value for key, value in patch.items() if key in fields},
            description="the fields to change (RFC 7396)"),
    }


def openapi_schemas(resources):
    """The JSON Schemas of each resource (from its fields), the index and problem details."""
    schemas = {}
    for resource in resources:
        schemas.update(resource_schemas(resource))
    return dict(schemas, **{
        "Index": {"type": "object", "properties": {resource.collection: {"type": "string"}
                                                   for resource in resources},
                  "xml": {"name": "index"}},
        "Problem": problem_schema(),
        "Journal": journal_schema(),
    })


def journal_schema():
    """The journal of GET /__admin/requests."""
    text = {"type": "string"}
    entry = {"type": "object", "required": ["method", "target", "headers", "body", "status",
                                            "received"],
             "properties": {"method": text, "target": text, "body": text,
                            "headers": {"type": "object", "additionalProperties": text},
                            "status": {"type": "integer"},
                            "received": {"type": "string", "format": "date-time"}}}
    return {"type": "object", "required": ["requests"],
            "properties": {"requests": {"type": "array", "items": entry}}}


def problem_schema():
    """RFC 9457's problem details; a 422's errors are i elements in XML (its Appendix B)."""
    text = {"type": "string"}
    error = {"type": "object", "required": ["field", "message"],
             "properties": {"field": text, "message": text}, "xml": {"name": "i"}}
    return {"type": "object", "required": ["type", "title", "status", "detail"],
            "properties": {"type": text, "title": text, "status": {"type": "integer"},
                           "detail": text,
                           "errors": {"type": "array", "items": error,
                                      "xml": {"name": "errors", "wrapped": True}}},
            "xml": {"name": "problem", "namespace": "urn:ietf:rfc:7807"}}


# ---------------------------------------------------------------------------------------
# Appendix F: the speed-ups
#
# Each override below names what it replaces and what it gained in the benchmarks. They
# change how the bytes of a request are read and sent, and keep the core's own answers under
# keys that cannot go stale (the Accept value; the user itself; the store's count of
# writes); no decision is made here. The tests run against the server with them and the one
# without them, and change decisions in the core to see both servers follow.
# ---------------------------------------------------------------------------------------

import email.utils
import functools
import struct


class FastHandler(EdgeHandler):
    """EdgeHandler with the speed-ups the measurements justify."""

    def read_head(self, words):
        """Replaces http.server's parse_request, which hands the header block to the email
        package's parser: that took over half the CPU of a whole GET. The edge's checks and
        http.server's limits, 64 KiB a line and 99 fields; 431 beyond them. Measured: GET
        /users/1 at 1.79 times the req/s without it."""
        self.command, self.path, self.request_version = words
        try:
            self.headers = read_header_fields(self.rfile, self.server.passed_lines)
        except ApiError as error:
            return self.refuse_head(error)
        self.keep_connection_as_asked()
        return True

    def keep_connection_as_asked(self):
        """Keep the connection open or not, as http.server would, and note 100-continue."""
        connection = self.headers.get("Connection", "").lower()
        self.close_connection = connection == "close" or (
            self.request_version == "HTTP/1.0" and connection != "keep-alive")
        if (self.request_version == "HTTP/1.1"
                and self.headers.get("Expect", "").lower() == "100-continue"):
            self.handle_expect_100()

    def serves_host(self, host):
        """Replaces the Host check's work with its answer kept per Host value: a client
        sends the same Host each time. 1.5 µs saved a request."""
        return remembered_host_answer(self.server.allowed_hosts, host)

    def format_for(self, accept):
        """Keeps the core's format for each Accept value rather than parse it again: 0.2 µs
        against 7.7 µs for `Accept: */*`. Measured: GET /users/1 at 1.19 times the req/s."""
        kept = self.server.formats
        return kept.get(accept) or kept.keep(accept, super().format_for(accept))

    def page(self, query_string):
        """Keeps the core's rendered pages under the resource and the count of writes to
        every store (a page may embed another resource's items): clients ask for the same
        page again and again, and rendering 100 users costs more than all the rest of the
        request. A write makes a new count, so no page outlives it. Measured: GET /users at
        3.58 times the req/s."""
        key = (self.path, self.authority or self.headers.get("Host"),  # the path holds the
               self.format, self.server.changes())  # query; json-server's links, the host
        kept = self.server.pages
        return kept.get(key) or kept.keep(key, super().page(query_string))

    def find_route(self, path):
        """Keeps the core's route for each path, with the route table it came from (a db.json
        edited by hand, or a write that brings a new key, makes a new one): clients ask for
        the same paths again and again. A path longer than MAX_KEPT_LINE is looked for each
        time: a bound on memory. Measured: GET /users/1 in 6,400 fewer instructions of
        174,000 (valgrind)."""
        routes, kept = self.server.routes, self.server.found_routes
        found = kept.get(path)
        if found is None or found[0] is not routes:
            route, arguments = super().find_route(path)
            found = (routes, route, arguments and tuple(arguments))  # shared: not a list
            if len(path) <= MAX_KEPT_LINE:
                kept.keep(path, found)
        return found[1], found[2]

    def render(self, item):
        """Keeps the core's rendering of each user a GET reads under the user itself (id,
        fields and version) and the format, so it can never go stale. ElementTree takes 21
        µs a user and the JSON encoder 1.3 µs; a kept one costs a dictionary look-up. The
        answer to a write renders a new version: keeping it cost a POST 4 µs of CPU."""
        if self.command not in ("GET", "HEAD") or self.related is not NOTHING_RELATED or (
                self.resource.from_json):  # a json field's value may be a dict: no key
            return super().render(item)  # a write's item, or one with related items
        key, kept = (self.resource.collection, item, self.format), self.server.renderings
        return kept.get(key) or kept.keep(key, super().render(item))

    def write_bytes(self, data):
        """Sends the response with one sendall on the socket itself rather than through
        wfile's buffer and the Python layer under it. Measured in one process: 30.8 µs of
        CPU against 32.5 µs for GET /users/1."""
        self.connection.sendall(data)

    def date_time_string(self, timestamp=None):
        """Replaces http.server's, which formats the Date header anew for every response:
        formatted once a second instead. Measured: GET /users/1 at 1.21 times the req/s."""
        return http_date(int(time.time() if timestamp is None else timestamp))

    def log_date_time_string(self):
        """Replaces http.server's: the time in a log line, formatted once a second."""
        return log_date(int(time.time()))


def selects_everyone(query):
    """Whether a query has no Filter and no q: it asks for every item the core's passes takes."""
    return not query.filters and query.q is None


class FastMemoryStore(ResettableMemoryStore):
    """MemoryStore with the speed-ups below."""

    def list(self, query):
        """Replaces MemoryStore.list for a page in id order without filters, the page most
        clients ask for, while the core's passes takes every item (asked as each is written:
        hidden holds those it refuses): the core copies every user to cut out a page, this
        reads just the page from the dict, which keeps users in id order. Measured: the mixed
        load (80 % reads, 10 % pages, 10 % POSTs) at 1.41 times the req/s."""
        if query.sort[0] not in ("id", "-id") or not selects_everyone(query) or self.hidden:
            return super().list(query)
        with self.lock:
            items = self.items.values()
            items = reversed(list(items)) if query.sort[0] == "-id" else iter(items)
            start = min(query.offset, len(self.items))  # islice takes no index past sys.maxsize
            return len(self.items), list(itertools.islice(items, start, start + query.limit))

    def start(self, items):
        """Also notes every unique value as taken, by whom (the index owner() reads), and
        the items that refer to each item (the index candidates() reads)."""
        super().start(items)
        self.taken = {field.name: {} for field in self.resource.unique}
        self.referring = {field.name: {} for field in self.resource.references}
        self.hidden = set()  # the ids of the items the core's passes refuses with no filter
        for item in self.items.values():
            self.index(item)

    def owner(self, field, value):
        """Replaces the core's look at every item with a look-up in the index of unique
        values. Measured: a create in a store of 1,000 users in 3 µs against 850 µs."""
        return self.taken[field.name].get(unique_key(field, value))

    def candidates(self, query):
        """Replaces the core's look at every item, for a list of the items that refer to
        some (a parent's _embed, /users/1/todos, the 409 of a delete), with the index of
        each reference's items, so the cost grows with the answer, not with parents times
        children. The core's passes still decides. Measured: GET /users?_embed=posts&_limit=
        100 over 50,000 posts of 1,000 users in 0.06 s against 23 s."""
        for field, test, values in query.filters:
            if test == "eq" and field in self.referring:
                found = {item_id: item for value in values
                         for item_id, item in self.referring[field].get(value, {}).items()}
                return [found[item_id] for item_id in sorted(found)]  # in id order
        return super().candidates(query)

    def create(self, fields, write=True, check=None):
        """The core's create, the new item's unique values noted as taken."""
        with self.lock:
            item = super().create(fields, write, check)
            if item is not None:
                self.index(item)
            return item

    def update(self, item_id, change, write=True):
        """The core's update, the old version's unique values freed and the new one's taken."""
        with self.lock:
            current = self.get(item_id)  # as the store finds it: a subclass may key ids anew
            item = super().update(item_id, change, write)
            if write:
                self.index(current, remove=True)
                self.index(item)
            return item

    def delete(self, item_id, check, write=True):
        """The core's delete, the item's unique values freed."""
        with self.lock:
            item = super().delete(item_id, check, write)
            if write:
                self.index(item, remove=True)
            return item

    def index(self, item, remove=False):
        """Note an item's unique values as taken, or as free again, and whether the core's
        passes hides it from an unfiltered list (the caller holds the lock)."""
        if remove:
            self.hidden.discard(item.id)
        elif not self.passes(item, EVERYONE_BY_ID):
            self.hidden.add(item.id)
        for field in self.resource.references:
            value, referring = item[self.resource.position[field.name]], self.referring[field.name]
            if remove and not is_none(value):
                referring[value].pop(item.id)
            elif not is_none(value):
                referring.setdefault(value, {})[item.id] = item
        for field in self.resource.unique:
            key = unique_key(field, item[self.resource.position[field.name]])
            if remove:
                self.taken[field.name].pop(key, None)
            elif key is not None:
                self.taken[field.name][key] = item.id


class FastDbFile(DbFile):
    """DbFile that keeps the text of each item as the file holds it, made once for each
    version of the item, and each collection's texts joined: with indent, the json module
    encodes in pure Python, 2.6 s for 50,000 posts at every save. A POST's save adds its
    item's text to the end of the last save's; another write joins the kept texts again.
    The bytes are file_bytes', as json.dumps lays them out (the tests compare the two).
    Measured beside json-server 0.17.4 on 50,000 posts (18 MB), on a busy machine: a POST,
    saved, in 52 ms against its 435 ms, where the plain save took 2,680 ms; most of the
    52 ms is writing and syncing the file."""

    def __init__(self, *args):
        super().__init__(*args)
        self.texts = {}  # collection -> {item id: (the item, its text in the file)}
        self.joined = {}  # collection -> (its items at the last save, their texts joined)

    def encode(self, stores):
        """file_bytes' bytes in pieces, from the items' kept texts, to write as they are."""
        pieces = [b"{\n"]
        for store in stores:
            name = json.dumps(store.resource.collection, ensure_ascii=False).encode("utf-8")
            items = in_file_order(store.resource, store.items.values())
            if store.resource.singular:  # "profile": {...}, its one item
                pieces += [b"  ", name, b": ", self.item_texts(store.resource, items)[0][2:]]
            elif items:
                pieces += [b"  ", name, b": [\n"] + self.joined_texts(store.resource, items)
                pieces.append(b"\n  ]")
            else:
                pieces += [b"  ", name, b": []"]
            pieces.append(b",\n")
        pieces[-1] = b"\n}"
        return pieces

    def joined_texts(self, resource, items):
        """A collection's items' texts joined by ",\n", in a few pieces: the last save's,
        then the texts of the items added after them, when only that changed (no copy of
        the rest: a POST's save writes the pieces kept, and its item's text)."""
        last_items, pieces = self.joined.get(resource.collection, ((), []))
        if last_items and len(pieces) < 64 and items[:len(last_items)] == last_items:
            added = self.item_texts(resource, items[len(last_items):])  # a list compares
            pieces = pieces + [b",\n" + b",\n".join(added)] if added else pieces  # ids first
        else:
            kept = self.texts.setdefault(resource.collection, {})
            if len(kept) > 2 * len(items) + 100:  # texts of deleted items: forget them
                kept.clear()
            pieces = [b",\n".join(self.item_texts(resource, items))]
        self.joined[resource.collection] = (items, pieces)
        return pieces

    def item_texts(self, resource, items):
        """The text of each item as the file holds it, in order; the caller locks. An item
        given ABSENT for a field a write added keeps its text: a new key in a PATCH to one
        of 50,000 posts took 1.7 s more than another PATCH, making every text anew."""
        kept, texts = self.texts.setdefault(resource.collection, {}), []
        for item in items:
            text = kept.get(item.id)
            if text is not None and text[0] is not item and same_values(text[0], item):
                text = kept[item.id] = (item, text[1])
            if text is None or text[0] is not item:  # the item itself: never a stale text
                text = kept[item.id] = (item, indented_json(file_document(resource, item),
                                                            4 - 2 * resource.singular))
            texts.append(text[1])
        return texts

    def prepare(self):
        """Make every item's text before the first write needs them, 500 items at a time
        under the stores' lock: the first POST to 50,000 posts took 1.5 s more than the
        next."""
        for store in list(self.stores):
            with store.lock:
                items = list(store.items.values())
            for start in range(0, len(items), 500):
                with store.lock:
                    self.item_texts(store.resource, items[start:start + 500])


def same_values(old, new):
    """Whether an item holds the very values of an older one, then ABSENT for the fields
    added since: its text in the file is the older one's."""
    added = len(new) - len(old)  # tuple.count compares ABSENT, an object(), by identity
    return added > 0 and new[-1 - added:-1].count(ABSENT) == added and all(
        map(operator.is_, old[:-1], new))


def indented_json(document, margin):
    """A document as json.dumps(indent=2) writes it `margin` spaces in, as UTF-8."""
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return (" " * margin + text.replace("\n", "\n" + " " * margin)).encode("utf-8")


class FastServer(EdgeServer):
    """EdgeServer with the answers its FastHandler keeps."""

    handler_class = FastHandler

    def __init__(self, *args, **options):
        self.formats, self.pages, self.renderings = Memo(64), Memo(64), Memo(4096)
        self.passed_lines = Memo(256)  # header lines that passed the edge's checks
        self.found_routes = Memo(256)  # path -> (the route table, find_route's answer)
        super().__init__(*args, **options)

    def changes(self):
        """The writes made to every store so far: a page kept under them cannot go stale."""
        if len(self.stores) == 1:
            return self.store.changes  # the one store's: no sum to make
        return sum(store.changes for store in self.stores.values())

    def get_request(self):
        """Replaces socketserver's: on Linux, each connection is a KernelTimedSocket."""
        connection, address = super().get_request()
        if sys.platform.startswith("linux"):  # the timeval that settimeout packs is Linux's
            connection = KernelTimedSocket(connection.family, connection.type,
                                           connection.proto, fileno=connection.detach())
        return connection, address


class KernelTimedSocket(socket.socket):
    """A connection whose timeout the kernel keeps (SO_RCVTIMEO, SO_SNDTIMEO), not Python,
    which polls a socket with a timeout before every recv and send: two system calls saved
    a request. A timeout still raises socket.timeout from recv_into, send and sendall, the
    calls rfile, wfile and write_response make, so the idle close, the 408 and the drop of a
    client that reads nothing are the edge's own. Measured: GET /users/1 at 1.08 times the
    req/s."""

    def settimeout(self, seconds):
        """Have the kernel end a recv or send that waits this long (None: never)."""
        microseconds = round((seconds or 0) * 1000000)  # a struct timeval: seconds, microseconds
        timeval = struct.pack("ll", microseconds // 1000000, microseconds % 1000000)
        for option in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
            self.setsockopt(socket.SOL_SOCKET, option, timeval)

    def recv_into(self, *args):
        """Python's recv_into; the kernel's timeout (EAGAIN) is socket.timeout."""
        try:
            return super().recv_into(*args)
        except BlockingIOError:
            raise socket.timeout("timed out") from None

    def send(self, *args):
        """Python's send; the kernel's timeout (EAGAIN) is socket.timeout."""
        try:
            return super().send(*args)
        except BlockingIOError:
            raise socket.timeout("timed out") from None

    def sendall(self, *args):
        """Python's sendall; the kernel's timeout (EAGAIN) is socket.timeout."""
        try:
            return super().sendall(*args)
        except BlockingIOError:
            raise socket.timeout("timed out") from None


class Memo(dict):
    """Answers kept by key (a dict: look one up with get), at most `size` of them, all
    dropped when it is full: a bound on memory, whatever keys clients invent. A dict's
    look-ups and stores are each atomic on CPython and PyPy, so threads need no lock here:
    at worst two of them work out the same answer."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    def keep(self, key, answer):
        """Keep an answer under key, and return it."""
        if len(self) >= self.size:
            self.clear()
        self[key] = answer
        return answer


class Headers:
    """A request's header fields, looked up by name in any case, as http.server's are."""

    def __init__(self):
        self.fields = {}  # lower-case name -> [values]
        self.received = []  # (name, value) as they came

    def add(self, name, value):
        """Add one field's value."""
        self.fields.setdefault(name.lower(), []).append(value)
        self.received.append((name, value))

    def items(self):
        """Every (name, value), in order, names spelled as received."""
        return self.received

    def get(self, name, default=None):
        """The first value of the field, or default."""
        values = self.fields.get(name.lower())
        return values[0] if values else default

    def get_all(self, name, default=None):
        """Every value of the field, in order, or default."""
        return self.fields.get(name.lower(), default)

    def __contains__(self, name):
        """Whether the request has this field: `"Content-Length" in headers`."""
        return name.lower() in self.fields


def read_header_fields(rfile, passed):
    """Read the header lines, then check them as the edge checks what http.server's parser
    reads: 431 past the limits, 400 for a malformed line, then for a malformed field. A
    line that passed both checks is kept in `passed` (a Memo) by its text, the only thing
    they read, so it passes again unchecked; a folded line after it is checked as ever.
    Clients send the same lines again and again. Measured: POST /users in 299,000
    instructions against 320,000 (valgrind), 1.07 times faster in CPU time."""
    fields = []  # [name, value, its line, "" once folded; None: a line that passed before]
    for text in header_lines(rfile):
        if text[:1] in (" ", "\t") and fields:  # a folded line, which field_error refuses
            fields[-1] = [fields[-1][0], fields[-1][1] + "\r\n" + text, ""]
            continue
        known = passed.get(text)
        fields.append([known[0], known[1], None] if known else read_field(text) + [text])
    headers = Headers()
    for name, value, text in fields:
        if text is not None:
            error = field_error(name, value)
            if error:
                raise error
            if text and len(text) <= MAX_KEPT_LINE:
                passed.keep(text, (name, value))
        headers.add(name, value)
    return headers


def read_field(text):
    """A header line as [name, value]; the 400 for a line http.server's parser would not
    read as a field."""
    name, colon, value = text.partition(":")
    if "\r" in text or not colon or not HEADER_NAME_READ.fullmatch(name):
        raise malformed_header()
    return [name, value.strip(" \t")]


MAX_KEPT_LINE = 1024  # a longer header line is checked each time: a bound on memory
HEADER_NAME_READ = re.compile("[\x21-\x39\x3b-\x7e]+")  # what the email package reads as a name


def header_lines(rfile):
    """A request's header lines up to the blank one, without their line ends, as text; 431
    past the limits."""
    lines = []
    for count in itertools.count():
        line = rfile.readline(MAX_HEADER_LINE + 1)
        if len(line) > MAX_HEADER_LINE:
            raise ApiError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                           HEAD_TOO_LARGE["Line too long"])
        if line in (b"\r\n", b"\n", b""):
            return lines
        if count == MAX_HEADERS:
            raise ApiError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                           HEAD_TOO_LARGE["Too many headers"])
        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]  # CRLF, or a bare LF
        lines.append(line.decode("iso-8859-1"))


@functools.lru_cache(maxsize=256)
def remembered_host_answer(allowed, host):
    """answers_for's answer, kept for each Host value."""
    return answers_for(allowed, host)


@functools.lru_cache(maxsize=2)
def http_date(second):
    """The Date header for a time in whole seconds (RFC 9110 §5.6.7)."""
    return email.utils.formatdate(second, usegmt=True)


@functools.lru_cache(maxsize=2)
def log_date(second):
    """The local time as http.server's log lines show it."""
    year, month, day, hour, minute, second = time.localtime(second)[:6]
    return "%02d/%s/%04d %02d:%02d:%02d" % (
        day, BaseHTTPRequestHandler.monthname[month], year, hour, minute, second)


# ---------------------------------------------------------------------------------------
# Appendix G: the server that runs by default, and the command line
#
# The default server is the core with every appendix: the classes below only list them.
# PlainServer is the same without the speed-ups of Appendix F; the tests run against both.
# ---------------------------------------------------------------------------------------

import argparse
import signal
from os import environ

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
STOP_SEEN_WITHIN = 0.1  # seconds: how often serving looks for a stop asked (Ctrl-C, SIGTERM)


class PlainHandler(TeachingHandler, ExplorerHandler, OpenApiHandler, FileHandler,
                   ReferenceHandler, DialectHandler, CorsHandler, EdgeHandler):
    """The core's handler with Appendices A to E. Each mix-in overrides hooks of its own,
    so their order changes no answer; what a route carries (CORS or not) the route says.
    The routes they add are listed here, in one place."""

    added_routes = ADMIN_ROUTES + [DB_ROUTE, OPENAPI_ROUTE, INDEX_ROUTE]


class DefaultHandler(FastHandler, PlainHandler):
    """PlainHandler with the speed-ups of Appendix F."""


class PlainMemoryStore(DialectMemoryStore, ResettableMemoryStore):
    """The core's store with Appendix C's additions."""


class DefaultMemoryStore(FastMemoryStore, PlainMemoryStore):
    """PlainMemoryStore with the speed-up of Appendix F."""


# Only a server that keeps a file has its stores keep it: the others do no file's work
class PlainFileStore(FileKeptStore, PlainMemoryStore):
    """PlainMemoryStore that keeps the file a server serves (`rest_users.py db.json`)."""


class DefaultFileStore(FastMemoryStore, PlainFileStore):
    """PlainFileStore with the speed-up of Appendix F."""


class PlainServer(FileServer, CorsServer, EdgeServer):
    """The core's server with the options of Appendices A and C."""

    handler_class = PlainHandler


class DefaultServer(FastServer, PlainServer):
    """The server `python rest_users.py` runs."""

    handler_class = DefaultHandler


# Names of the release before resources were declared, kept for code written against it
User = namedtuple("User", USERS.stored + ("version",))
"""A user's values with names, as that release had them: User(*item) names an Item of USERS,
and equals it."""


def validate_user(pairs, *, path_id=None, partial=False):
    """validate() for a user: the fields of a user's body as a dict, or the 422."""
    return validate(USERS, pairs, path_id=path_id, partial=partial)


def render_user(user, fmt):
    """One user as bytes in the format."""
    return render_item(USERS, user, fmt)


def make_server(host=DEFAULT_HOST, port=DEFAULT_PORT, *, db=None, api_key=None, cors=None,
                max_body=DEFAULT_MAX_BODY, quiet=False, timeout=DEFAULT_IDLE_TIMEOUT,
                allow_host=(), plain=False, delay=0, fail_rate=0.0, fake_users=0, load=None,
                users=None, resources=None, file=None, read_only=False, id="id",
                foreign_key_suffix="Id", no_cors=False, routes=None, static=None):
    """Return a bound DefaultServer, not yet serving: call serve_forever(). plain=True
    leaves out the speed-ups. cors is an origin, a list of them, or "*", besides the
    loopback origins that no_cors=True refuses. delay to users, routes and static are the
    fake API's options. resources: the Resources served, RESOURCES when None. file: a
    db.json to serve and keep, as json-server does; read_only: writes are 405s; id: the
    key of its items that is the id; foreign_key_suffix: what ends a key that refers."""
    fake_api = FakeApi(delay, fail_rate, fake_users, load, users, resources,  # ValueError
                       routes=routes, static=static)
    db_file = file and serve_file(fake_api, file, db, plain, id, foreign_key_suffix)
    server_class = PlainServer if plain else DefaultServer
    if db:
        fake_api.add_stored(stored_declarations(db))
    check_resources(fake_api.resources)  # a ValueError naming what cannot be served
    stores = []
    try:
        for resource in fake_api.resources:
            if db:
                stores.append(SQLiteStore(db, resource, stores[0] if stores else None))
                stores[-1].keep_declaration()
                fake_api.add_items_to(stores[-1])  # a table that never held an item
            else:
                stores.append(memory_store_class(plain, db_file)(
                    fake_api.starting_items(resource), resource, stores[0] if stores else None))
        return server_class((host, port), stores, api_key=api_key, cors=cors,
                            no_cors=no_cors, max_body=max_body, quiet=quiet, timeout=timeout,
                            allow_host=allow_host, fake_api=fake_api, db_file=db_file,
                            read_only=read_only)
    except BaseException:
        for store in stores:
            store.close()
        raise


def memory_store_class(plain, db_file):
    """The class of the stores in memory: with the speed-ups unless plain, keeping a file
    if there is one."""
    if db_file:
        return PlainFileStore if plain else DefaultFileStore
    return PlainMemoryStore if plain else DefaultMemoryStore


def serve_file(fake_api, path, db, plain=False, id_key="id", suffix="Id"):
    """The DbFile of a db.json to serve and keep, whose resources and items fake_api now
    starts with; a ValueError if the file cannot be (or --db is given too)."""
    if db:
        raise ValueError("%s with --db: the file is the store; serve one or the other" % path)
    if fake_api.items or fake_api.fake_users:
        raise ValueError("%s with %s: the file is what is served; edit it instead" % (
            path, "--fake-users" if fake_api.fake_users else "--load"))
    db_file = (DbFile if plain else FastDbFile)(path, id_key, suffix)
    fake_api.resources, fake_api.items = db_file.contents(db_file.started)
    return db_file


def stored_declarations(path):
    """The resources a database file keeps from --load files: (collection, declaration)."""
    if not os.path.exists(path):
        return []
    db = sqlite3.connect(path, timeout=0.2)
    try:
        return [(collection, json.loads(text)) for collection, text in db.execute(
            "SELECT collection, declaration FROM rest_users_resources ORDER BY rowid")]
    except sqlite3.OperationalError:  # no such table: a file from an earlier release
        return []
    finally:
        db.close()


@contextlib.contextmanager
def running(**options):
    """Serve on a free port in a thread for as long as the with block lasts, for other
    projects' test suites: `with running(fake_users=3) as base_url:`. It takes
    make_server's keywords, and users=, a list of user dicts as --load reads them. The
    base URL it yields is a str, with reset() and requests() for the test controls."""
    options.setdefault("port", 0)
    server = make_server(**options)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield BaseUrl("http://%s:%d" % server.server_address[:2], server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def port_number(text):
    """argparse type: a TCP port, 0 to 65535."""
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError("must be a number from 0 to 65535, not %r" % text)
    return int(text)


def share(text):
    """argparse type: a share of requests, from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:  # nan fails this too
        raise argparse.ArgumentTypeError("must be a number from 0 to 1, not %r" % text)
    return value


def milliseconds(text):
    """argparse type: a delay, MS or MIN-MAX, in milliseconds from 0 to 60000."""
    bounds = text.split("-")
    if not (1 <= len(bounds) <= 2 and all(bound.isdigit() and int(bound) <= MAX_DELAY
                                         for bound in bounds)
            and int(bounds[0]) <= int(bounds[-1])):
        raise argparse.ArgumentTypeError("must be milliseconds from 0 to %d, or MIN-MAX, not %r"
                                         % (MAX_DELAY, text))
    return int(bounds[0]), int(bounds[-1])


def user_count(text):
    """argparse type: how many fake users, 0 to a million."""
    if not text.isdigit() or int(text) > MAX_FAKE_USERS:
        raise argparse.ArgumentTypeError("must be a number from 0 to %d, not %r"
                                         % (MAX_FAKE_USERS, text))
    return int(text)


def byte_count(text):
    """argparse type: a number of bytes, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError("must be a whole number of bytes, not %r" % text)
    return int(text)


EXAMPLES = """examples:
  python rest_users.py                               users in memory, on port 8000
  python rest_users.py --port 0 --db users.db        any free port; users kept in a file
  API_KEY=s3cret python rest_users.py                every /users request needs the key
  python rest_users.py --cors http://localhost:5173  a front end on Vite's port may call it
  python rest_users.py --fake-users 1000 --delay 100-500 --fail-rate 0.1
                                                     a fake API: slow, failing at times
  python rest_users.py --load db.json                json-server's db.json: posts, comments...
"""


def parse_arguments(argv):
    """Read the command line."""
    parser = argparse.ArgumentParser(
        description="A users REST API (JSON and XML) on the Python standard library.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", "-H", default=DEFAULT_HOST,
                        help="address to listen on, as --host 0.0.0.0 (default: %(default)s)")
    parser.add_argument("--port", "-p", type=port_number, default=DEFAULT_PORT,
                        help="port to listen on, 0 for any free one (default: %(default)s)")
    parser.add_argument("--db", metavar="PATH",
                        help="keep the resources in this SQLite file, as --db users.db "
                             "(default: in memory, lost on exit)")
    parser.add_argument("--api-key", metavar="KEY",
                        help="require 'Authorization: Bearer KEY' on every resource "
                             "(default: the API_KEY environment variable, else no auth)")
    parser.add_argument("--cors", action="append", default=[], metavar="ORIGIN",
                        help="let browser pages from ORIGIN (or * for any) call the API, "
                             "as --cors http://localhost:5173 (repeatable)")
    parser.add_argument("--max-body", type=byte_count, default=DEFAULT_MAX_BODY, metavar="BYTES",
                        help="largest request body accepted (default: %(default)s)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="do not log a line per request on stderr")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="answer requests for this host name too, as --allow-host "
                             "api.example behind a proxy (repeatable; '*' for any). Without "
                             "it: localhost and IP addresses only, against DNS rebinding")
    add_fake_api_arguments(parser)
    add_file_arguments(parser)
    add_json_server_arguments(parser)
    return check_json_server_arguments(parser, parser.parse_args(argv))


def add_file_arguments(parser):
    """The command line's db.json, served and kept as json-server does, and its options."""
    parser.add_argument("file", nargs="?", metavar="db.json",
                        help="serve this JSON file's resources, as json-server does, and "
                             "keep every change in it (default: no file)")
    parser.add_argument("--watch", "-w", action="store_true",
                        help="serve the file's edits by hand (always on; json-server's option)")
    parser.add_argument("--read-only", "--ro", action="store_true",
                        help="take no write: POST, PUT, PATCH and DELETE are 405s")
    parser.add_argument("--id", "-i", default="id", metavar="NAME",
                        help="the key of the file's items that is their id, as --id _id "
                             "(default: %(default)s)")
    parser.add_argument("--foreign-key-suffix", "--foreignKeySuffix", default="Id",
                        metavar="SUFFIX", help="what ends a key that refers to another "
                        "resource, as --foreign-key-suffix _id for post_id (default: "
                        "%(default)s, postId)")


def add_fake_api_arguments(parser):
    """The command line's options for a fake API."""
    fake = parser.add_argument_group("a fake API, for front ends and test suites (on every "
                                     "resource)")
    fake.add_argument("--delay", "-d", type=milliseconds, default=(0, 0), metavar="MS[-MS]",
                      help="answer each request that many milliseconds late, or a random "
                           "time in a range: --delay 300, --delay 100-500")
    fake.add_argument("--fail-rate", type=share, default=0.0, metavar="P",
                      help="answer that share of requests, at random, with 503 and "
                           "Retry-After: 1, to try a client's retries; "
                           "--fail-rate 0.5 fails half (default: 0)")
    fake.add_argument("--fake-users", type=user_count, default=0, metavar="N",
                      help="start with N made-up users, as --fake-users 1000; the same "
                           "users on every run")
    fake.add_argument("--load", metavar="FILE",
                      help="start with the users in a JSON array, as --load users.json "
                           "([{\"name\": \"Ada\", \"email\": \"ada@example.com\"}], ids optional), "
                           "or with the resources of json-server's db.json ({\"posts\": [...], "
                           "\"profile\": {...}})")


class NotDone(argparse.Action):
    """A json-server option this service does not do: a usage error that names it."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error("argument %s: json-server's option, not done here: %s" % (
            "/".join(self.option_strings), self.help))


def add_json_server_arguments(parser):
    """The options json-server's users type, besides those above that share its names."""
    habits = parser.add_argument_group("json-server's options")
    habits.add_argument("--no-cors", "--nc", action="store_true",
                        help="let no browser page on another origin call the API (default: "
                             "pages from this machine, as http://localhost:5173, may)")
    habits.add_argument("--routes", "-r", metavar="FILE",
                        help="rewrite request paths by json-server's rules, as --routes "
                             "routes.json holding {\"/api/*\": \"/$1\", \"/blog/:id\": "
                             "\"/posts/:id\"}")
    habits.add_argument("--static", "-s", metavar="DIR",
                        help="serve the files of DIR at the paths the API does not take, "
                             "DIR/index.html at / (the explorer then at /__explorer)")
    habits.add_argument("--version", "-v", action="version",
                        version=UsersHandler.server_version.replace("/", " "))
    habits.add_argument("--no-gzip", "--ng", action="store_true",
                        help="taken, and changes nothing: answers are never compressed")
    for names, why in ((("--config", "-c"), "give the options on the command line"),
                       (("--middlewares", "-m"), "it runs JavaScript; this is one Python file"),
                       (("--snapshots", "-S"), "copy the db.json file yourself")):
        habits.add_argument(*names, action=NotDone, nargs="?", help=why)


def check_json_server_arguments(parser, options):
    """The options, once checked together: a usage error (exit 2) if they contradict."""
    if options.no_cors and options.cors:
        parser.error("argument --cors: not allowed with argument --no-cors")
    for option, given, default in (("--id", options.id, "id"),
                                   ("--foreign-key-suffix", options.foreign_key_suffix, "Id")):
        if options.load and given != default:  # --load reads the file once, by its own rules
            parser.error("argument %s: applies to a db.json served and kept (rest_users.py "
                         "db.json), not to --load" % option)
    return options


def json_server_given(options):
    """The options of add_json_server_arguments in force, as given, for the startup line."""
    return [("--no-cors", options.no_cors), ("--routes", options.routes),
            ("--static", options.static)]


def json_server_keywords(options):
    """make_server's keywords for the options of add_json_server_arguments."""
    return {"no_cors": options.no_cors, "routes": options.routes, "static": options.static}


def startup_note(options, server, environment):
    """The line for a newcomer, after the banner: the explorer, the resources and where they
    are kept, and whether a key is needed and where it came from (never the key itself)."""
    paths = in_words([resource.path for resource in server.resources])
    if options.api_key:
        key = "Requests to %s need Authorization: Bearer and the key given with --api-key." % paths
    elif options.api_key is None and environment.get("API_KEY"):
        key = ("Requests to %s need Authorization: Bearer and the key in the API_KEY "
               "environment variable (unset it to need none)." % paths)
    else:
        key = "No API key is needed."
    served = "The " + in_words([resource.collection for resource in server.resources])
    return ("Open http://%s:%d/ in a browser to explore the API. %s are kept in %s. %s%s "
            "Test controls: POST /__admin/reset, GET /__admin/requests." % (
                options.host, server.server_address[1],
                served if len(server.resources) > 1 else served[4:].capitalize(),
                server.store.kept_in, key, options_in_force(options))
            + list_words_note(server.resources))


def options_in_force(options):
    """The fake API's and CORS's options as given, for the startup line, or nothing."""
    low, high = options.delay
    given = [("--fake-users", options.fake_users and str(options.fake_users)),
             ("--load", options.load),
             ("--delay", high and ("%d-%d" % (low, high) if low != high else str(low))),
             ("--fail-rate", options.fail_rate and repr(options.fail_rate))]
    given += [("--cors", origin) for origin in options.cors] + json_server_given(options)
    shown = [name if value is True else "%s %s" % (name, value)  # a flag: its name
             for name, value in given if value]
    return " In force: %s." % ", ".join(shown) if shown else ""


def main(argv=None):
    """Run the service until Ctrl-C or SIGTERM; return the exit status."""
    options = parse_arguments(argv)
    api_key = options.api_key if options.api_key is not None else environ.get("API_KEY")
    try:
        server = make_server(options.host, options.port, db=options.db, api_key=api_key or None,
                             cors=options.cors, max_body=options.max_body, quiet=options.quiet,
                             allow_host=options.allow_host, delay=options.delay,
                             fail_rate=options.fail_rate, fake_users=options.fake_users,
                             load=options.load, file=options.file, read_only=options.read_only,
                             id=options.id, foreign_key_suffix=options.foreign_key_suffix,
                             **json_server_keywords(options))
    except ValueError as error:  # a --load file with a mistake; what it is, is in the message
        print("rest_users: cannot load %s" % error, file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as error:
        where = options.db if isinstance(error, sqlite3.Error) else "%s:%d" % (
            options.host, options.port)
        print("rest_users: cannot start on %s: %s" % (where, error), file=sys.stderr)
        return 1
    port, first = server.server_address[1], server.resources[0]  # users, unless a file's
    print("Serving %s API on http://%s:%d%s (press Ctrl-C to stop)" % (
        first.collection, options.host, port, first.path), flush=True)
    if not options.quiet:
        print(startup_note(options, server, environ), file=sys.stderr, flush=True)
    # Ctrl-C or SIGTERM asks for a stop, which the main thread makes once serve_forever has
    # returned: an exception raised inside it could close a connection under its handler
    stop_asked = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: stop_asked.set())
    threading.Thread(target=server.serve_forever, args=(STOP_SEEN_WITHIN,)).start()
    while not stop_asked.wait(1):
        pass  # in steps of a second: Windows runs a signal handler only between them
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
