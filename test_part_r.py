"""Every resource, declared once: a learner's todos, references, db.json and the rest.

A second resource, declared in a few lines as the README shows, gets all that users get:
the routes, both formats, validation, the list and its dialects, both stores, references,
the fake API's controls, the API description and the explorer. Servers are shared per
module, as in test_rest_users.py, whose helpers these tests use.
"""

import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from urllib.parse import quote
from xml.etree import ElementTree

import pytest

import rest_users
from rest_users import Field, Resource, USERS
from test_rest_users import (HERE, JSON_TYPE, KEY, XML_TYPE, assert_problem,
                             browser, call, failed_start, fast_thread_switching, options_for,
                             port_of, resolve, run_service, start_server, stop_server)

assert browser and fast_thread_switching  # fixtures, imported for the tests that use them

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
BEARER = {"Authorization": "Bearer " + KEY}


class Port:
    """What call() needs of a server: its address."""

    def __init__(self, port):
        self.server_address = ("127.0.0.1", port)


def serve(kind, tmp_path_factory, **options):
    """A server of this kind (memory, sqlite, plain) serving users and todos."""
    options.update(options_for(kind, tmp_path_factory))
    return start_server(options.pop("variant", "default"), resources=BOTH, **options)


def ids(reply):
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
def server(request, tmp_path_factory):
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


ADA = {"id": 1, "name": "Ada", "email": "ada@example.com"}
GRACE = {"id": 2, "name": "Grace", "email": "grace@example.com"}
ADA_XML = "<user><id>1</id><name>Ada</name><email>ada@example.com</email></user>"


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

def test_post_creates_a_todo_with_its_default_and_a_location(server):
    reply = call(server, "POST", "/todos", {"title": "Buy milk"})
    created = reply.json()
    assert reply.status == 201
    assert created == todo(created["id"], "Buy milk")
    assert list(created) == ["id", "title", "done", "userId"]
    assert reply.headers["Location"] == "/todos/%d" % created["id"]
    assert reply.headers["ETag"] == '"1-json"'
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert reply.headers["Vary"] == "Accept"


def test_get_reads_a_todo_with_its_etag(server):
    made = post(server, "/todos", {"title": "Walk", "done": True, "userId": 1})
    reply = call(server, "GET", "/todos/%d" % made["id"])
    assert reply.status == 200
    assert reply.json() == todo(made["id"], "Walk", True, 1)
    assert reply.headers["ETag"] == '"1-json"'
    assert reply.headers["Content-Type"] == JSON_TYPE


def test_the_list_holds_the_todos_and_counts_them(server):
    made = post(server, "/todos", {"title": "Listed"})
    reply = call(server, "GET", "/todos")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert made in reply.json()
    assert reply.headers["X-Total-Count"] == str(len(reply.json()))
    total = len(reply.json())
    assert reply.headers["Link"] == (
        '</todos?limit=100&offset=0>; rel="first", </todos?limit=100&offset=%d>; rel="last"'
        % ((total - 1) // 100 * 100))


def test_put_replaces_a_todo_and_fills_the_default(server):
    made = post(server, "/todos", {"title": "Old", "done": True, "userId": 1})
    reply = call(server, "PUT", "/todos/%d" % made["id"], {"title": "New"})
    assert reply.status == 200
    assert reply.json() == todo(made["id"], "New")
    assert reply.headers["ETag"] == '"2-json"'


def test_patch_changes_only_the_fields_it_sends(server):
    made = post(server, "/todos", {"title": "Patch me", "userId": 1})
    reply = call(server, "PATCH", "/todos/%d" % made["id"], {"done": True})
    assert reply.status == 200
    assert reply.json() == todo(made["id"], "Patch me", True, 1)
    assert reply.headers["ETag"] == '"2-json"'


def test_patch_with_null_removes_an_optional_value(server):
    made = post(server, "/todos", {"title": "Mine", "userId": 1})
    reply = call(server, "PATCH", "/todos/%d" % made["id"], {"userId": None},
                 {"Content-Type": "application/merge-patch+json"})
    assert (reply.status, reply.json()) == (200, todo(made["id"], "Mine"))


def test_delete_answers_the_todo_as_it_was_and_it_is_gone(server):
    made = post(server, "/todos", {"title": "Gone soon"})
    path = "/todos/%d" % made["id"]
    reply = call(server, "DELETE", path)
    assert (reply.status, reply.json()) == (200, made)
    assert "ETag" not in reply.headers
    problem = assert_problem(call(server, "GET", path), 404)
    assert problem["detail"] == "There is no todo with id %d." % made["id"]


def test_delete_with_return_minimal_is_204(server):
    made = post(server, "/todos", {"title": "Quietly"})
    reply = call(server, "DELETE", "/todos/%d" % made["id"], headers={"Prefer": "return=minimal"})
    assert (reply.status, reply.body) == (204, b"")
    assert reply.headers["Preference-Applied"] == "return=minimal"


def test_concurrent_posts_give_distinct_todos(server):
    made, threads = [], []
    for worker in range(4):
        thread = threading.Thread(target=lambda worker=worker: made.extend(
            post(server, "/todos", {"title": "racer %d.%d" % (worker, n)})["id"]
            for n in range(10)))
        threads.append(thread)
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(made) == len(set(made)) == 40


def test_ids_of_todos_are_never_reused(server):
    first = post(server, "/todos", {"title": "First"})
    call(server, "DELETE", "/todos/%d" % first["id"])
    assert post(server, "/todos", {"title": "Next"})["id"] == first["id"] + 1


@pytest.mark.parametrize("path", ["/todos/1", "/todos"])
def test_head_answers_as_get_without_a_body(server, path):
    post(server, "/todos", {"title": "Head"})
    get, head = call(server, "GET", path), call(server, "HEAD", path)
    assert (head.status, head.body) == (200, b"")
    for name in ("Content-Type", "Content-Length", "ETag", "X-Total-Count", "Link", "Vary"):
        assert head.headers[name] == get.headers[name]


@pytest.mark.parametrize("path, allow", [
    ("/todos", "GET, POST, HEAD, OPTIONS"), ("/todos/", "GET, POST, HEAD, OPTIONS"),
    ("/todos/98765", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("/users/1/todos", "GET, POST, HEAD, OPTIONS")])
def test_options_answers_204_with_allow(server, path, allow):
    reply = call(server, "OPTIONS", path)
    assert (reply.status, reply.body) == (204, b"")
    assert reply.headers["Allow"] == allow


@pytest.mark.parametrize("method, path, allow", [
    ("DELETE", "/todos", "GET, POST, HEAD, OPTIONS"),
    ("PUT", "/todos", "GET, POST, HEAD, OPTIONS"),
    ("POST", "/todos/1", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"),
    ("DELETE", "/users/1/todos", "GET, POST, HEAD, OPTIONS")])
def test_another_method_is_405_with_allow(server, method, path, allow):
    reply = call(server, method, path, {"title": "x"} if method in ("PUT", "POST") else None)
    problem = assert_problem(reply, 405)
    assert reply.headers["Allow"] == allow
    assert problem["detail"] == "%s does not take %s; it takes %s." % (path, method, allow)


def test_a_method_the_service_does_not_implement_is_501(server):
    problem = assert_problem(call(server, "BREW", "/todos"), 501)
    assert problem["detail"] == ("This service does not implement BREW; it implements GET, HEAD, "
                                 "POST, PUT, PATCH, DELETE, OPTIONS.")


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_a_missing_todo_is_404_naming_the_todo(server, method):
    reply = call(server, method, "/todos/98765", {"title": "x"} if method in ("PUT", "PATCH")
                 else None)
    problem = assert_problem(reply, 404)
    assert problem["detail"] == "There is no todo with id 98765."


def test_a_missing_todo_in_xml_is_an_xml_problem_naming_the_todo(server):
    reply = call(server, "GET", "/todos/98765", headers=XML_HEADERS)
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
def test_a_path_that_names_no_route_is_404_naming_every_resource(server, path):
    problem = assert_problem(call(server, "GET", path), 404)
    assert problem["detail"] == ("There is nothing at %s; the users are at /users and the "
                                 "todos are at /todos." % path)


# -- both formats ------------------------------------------------------------------------

def todo_xml(todo_id, title, done="false", user_id=None):
    """A todo as XML renders it: a none is no element."""
    owner = "" if user_id is None else "<userId>%d</userId>" % user_id
    return ("<todo><id>%d</id><title>%s</title><done>%s</done>%s</todo>"
            % (todo_id, title, done, owner)).encode()


def test_xml_in_and_out_types_each_value(server):
    body = "<todo><title>Buy milk</title><done>true</done><userId>1</userId></todo>"
    reply = call(server, "POST", "/todos", body, dict(XML_BODY, **XML_HEADERS))
    assert reply.status == 201
    todo_id = int(reply.headers["Location"].rsplit("/", 1)[1])
    assert reply.body == todo_xml(todo_id, "Buy milk", "true", 1)
    assert reply.headers["Content-Type"] == XML_TYPE
    assert reply.headers["ETag"] == '"1-xml"'
    assert call(server, "GET", "/todos/%d" % todo_id).json() == todo(todo_id, "Buy milk", True, 1)


def test_an_empty_xml_element_is_an_empty_string(server):
    reply = call(server, "POST", "/todos", "<todo><title></title></todo>", XML_BODY)
    created = reply.json()
    assert (reply.status, created) == (201, todo(created["id"], ""))


def test_xml_writes_the_default_and_leaves_out_a_none(server):
    made = post(server, "/todos", {"title": "Plain"})
    reply = call(server, "GET", "/todos/%d" % made["id"], headers=XML_HEADERS)
    assert reply.body == todo_xml(made["id"], "Plain")
    assert reply.headers["ETag"] == '"1-xml"'


def test_the_xml_list_is_todos_of_todo(listed):
    reply = call(listed, "GET", "/todos?done=true", headers=XML_HEADERS)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == XML_TYPE
    assert reply.body == (b"<todos>" + todo_xml(2, "Write code", "true", 2)
                          + todo_xml(4, "Read a book", "true", 1) + b"</todos>")


def test_an_xml_patch_with_xsi_nil_removes_an_optional_value(server):
    made = post(server, "/todos", {"title": "Owned", "userId": 1})
    body = ('<todo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
            '<userId xsi:nil="true"/></todo>')
    reply = call(server, "PATCH", "/todos/%d" % made["id"], body, XML_BODY)
    assert (reply.status, reply.json()) == (200, todo(made["id"], "Owned"))


def test_an_xml_body_with_another_root_is_400(server):
    reply = call(server, "POST", "/todos", "<user><title>x</title></user>", XML_BODY)
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


def test_a_todos_body_is_read_with_the_same_rules_as_a_users(server):
    found, expected = [], []
    for body, headers, status, detail, errors in BODY_PROBLEMS:
        problem = call(server, "POST", "/todos", body, headers).json()
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
    ({"title": "x", "userId": 1.0}, "userId", WHOLE + ", not a number"),
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
def test_a_value_of_the_wrong_type_is_422_for_its_field(server, body, field, message):
    problem = assert_problem(call(server, "POST", "/todos", body), 422)
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
def test_an_xml_value_of_the_wrong_type_is_422_for_its_field(server, body, field, message):
    reply = call(server, "POST", "/todos", body, dict(XML_BODY, **XML_HEADERS))
    problem = assert_problem(reply, 422, "xml")
    assert problem["detail"] == "The todo is not valid; see the errors for %s." % field
    assert problem["errors"] == [{"field": field, "message": message}]


def test_a_missing_title_is_required(server):
    problem = assert_problem(call(server, "POST", "/todos", {"done": True}), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for title."
    assert problem["errors"] == [{"field": "title", "message": "is required"}]


def test_an_id_in_a_post_is_422(server):
    problem = assert_problem(call(server, "POST", "/todos", {"id": 5, "title": "x"}), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for id."
    assert problem["errors"] == [{"field": "id", "message": "is assigned by the server; leave "
                                                           "it out"}]


def test_a_422_lists_every_bad_field(server):
    problem = assert_problem(call(server, "POST", "/todos", {"done": "no", "userId": True}), 422)
    assert sorted(error["field"] for error in problem["errors"]) == ["done", "title", "userId"]


def test_a_put_without_the_title_says_put_replaces_the_whole_todo(server):
    made = post(server, "/todos", {"title": "Whole"})
    problem = assert_problem(call(server, "PUT", "/todos/%d" % made["id"], {"done": True}), 422)
    assert problem["detail"] == (
        "The todo is not valid; see the errors for title. PUT replaces the whole todo, so it "
        "needs every field; PATCH changes only the fields it sends.")


def test_a_put_may_repeat_the_paths_id_only(server):
    made = post(server, "/todos", {"title": "Mine"})
    path = "/todos/%d" % made["id"]
    assert call(server, "PUT", path, {"id": made["id"], "title": "Same"}).status == 200
    problem = assert_problem(call(server, "PUT", path, {"id": made["id"] + 1, "title": "x"}), 422)
    assert [error["field"] for error in problem["errors"]] == ["id"]


# -- versions ----------------------------------------------------------------------------

def test_if_none_match_gives_304(server):
    made = post(server, "/todos", {"title": "Cached"})
    reply = call(server, "GET", "/todos/%d" % made["id"], headers={"If-None-Match": '"1-json"'})
    assert (reply.status, reply.body) == (304, b"")
    assert reply.headers["ETag"] == '"1-json"'


def test_a_stale_if_match_is_412_naming_the_todo(server):
    made = post(server, "/todos", {"title": "Raced"})
    path = "/todos/%d" % made["id"]
    assert call(server, "PATCH", path, {"done": True}, {"If-Match": '"1-json"'}).status == 200
    reply = call(server, "PATCH", path, {"title": "Lost"}, {"If-Match": '"1-json"'})
    problem = assert_problem(reply, 412)
    assert problem["detail"] == ("The todo has changed since you read it (If-Match does not name "
                                 "its current ETag); GET it again and retry.")
    assert call(server, "GET", path).json() == todo(made["id"], "Raced", True)


def test_a_stale_if_match_on_delete_deletes_nothing(server):
    made = post(server, "/todos", {"title": "Kept"})
    path = "/todos/%d" % made["id"]
    assert_problem(call(server, "DELETE", path, headers={"If-Match": '"2-json"'}), 412)
    assert call(server, "GET", path).json() == made
    assert call(server, "DELETE", path, headers={"If-Match": '"1-json"'}).status == 200


def test_a_write_is_checked_for_existence_then_version_then_fields(server):
    made = post(server, "/todos", {"title": "Checked"})
    path, bad = "/todos/%d" % made["id"], {"done": "no"}
    stale = {"If-Match": '"9-json"'}
    assert_problem(call(server, "PATCH", "/todos/98765", bad, stale), 404)
    assert_problem(call(server, "PATCH", path, bad, stale), 412)
    problem = assert_problem(call(server, "PATCH", path, bad), 422)
    assert [error["field"] for error in problem["errors"]] == ["done"]


# -- the list: filters by type and every dialect -----------------------------------------

def answers(server, path, table):
    """Each query of a table against a list path: the ids it gives, or the status if not 200,
    so that one comparison shows every query that is wrong."""
    found = {}
    for query in table:
        reply = call(server, "GET", path + "?" + query)
        found[query] = ids(reply) if reply.status == 200 else reply.status
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
        assert call(running, "GET", "/users").json() == [ADA, GRACE]
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
        assert call(running, "GET", "/users").json() == [dict(ADA, phone=None),
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

def test_a_reference_to_no_user_is_422(server):
    problem = assert_problem(call(server, "POST", "/todos", {"title": "x", "userId": 9}), 422)
    assert problem["detail"] == "The todo is not valid; see the errors for userId."
    assert problem["errors"] == [{"field": "userId", "message": "there is no user with id 9"}]


def test_a_patch_to_no_user_is_422_and_changes_nothing(server):
    made = post(server, "/todos", {"title": "Mine", "userId": 1})
    reply = call(server, "PATCH", "/todos/%d" % made["id"], {"userId": 9})
    problem = assert_problem(reply, 422)
    assert problem["errors"] == [{"field": "userId", "message": "there is no user with id 9"}]
    assert call(server, "GET", "/todos/%d" % made["id"]).json() == made


def test_a_users_todos_are_a_nested_list(listed):
    reply = call(listed, "GET", "/users/1/todos")
    assert reply.json() == [listed_todo(1), listed_todo(4)]
    assert reply.headers["X-Total-Count"] == "2"


def test_a_nested_list_takes_every_list_parameter_and_dialect(listed):
    assert ids(call(listed, "GET", "/users/1/todos?_sort=-title")) == [4, 1]
    assert ids(call(listed, "GET", "/users/1/todos?done=true")) == [4]
    assert ids(call(listed, "GET", "/users/1/todos?title:contains=MILK")) == [1]


def test_a_post_under_a_user_creates_a_todo_of_that_user(server):
    reply = call(server, "POST", "/users/1/todos", {"title": "Nested"})
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


def test_a_nested_post_of_another_user_is_422_when_the_reference_is_optional(server):
    problem = assert_problem(call(server, "POST", "/users/1/todos", {"title": "x", "userId": 2}),
                             422)
    assert problem["errors"] == [
        {"field": "userId", "message": "must be 1, the id in the path, or be left out"}]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_nested_route_under_a_missing_user_is_404(server, method):
    reply = call(server, method, "/users/98765/todos",
                 {"title": "x"} if method == "POST" else None)
    problem = assert_problem(reply, 404)
    assert problem["detail"] == "There is no user with id 98765."


def test_embed_adds_a_users_todos(listed):
    reply = call(listed, "GET", "/users/1?_embed=todos")
    assert reply.status == 200
    assert reply.json() == dict(ADA, todos=[listed_todo(1), listed_todo(4)])


def test_embed_adds_each_users_todos_to_a_list(listed):
    reply = call(listed, "GET", "/users?_embed=todos")
    assert reply.json() == [dict(ADA, todos=[listed_todo(1), listed_todo(4)]),
                            dict(GRACE, todos=[listed_todo(2)])]


def test_embed_in_xml_is_a_todos_child(listed):
    reply = call(listed, "GET", "/users/1?_embed=todos", headers=XML_HEADERS)
    assert reply.body == (ADA_XML[:-len("</user>")].encode() + b"<todos>"
                          + todo_xml(1, "Buy milk", "false", 1)
                          + todo_xml(4, "Read a book", "true", 1) + b"</todos></user>")


def test_simple_rest_embed_means_embed(listed):
    reply = call(listed, "GET", "/users/1?embed=" + quote('["todos"]'))
    assert reply.json() == dict(ADA, todos=[listed_todo(1), listed_todo(4)])


def test_expand_adds_a_todos_user(listed):
    reply = call(listed, "GET", "/todos/2?_expand=user")
    assert reply.status == 200
    assert reply.json() == dict(listed_todo(2), user=GRACE)


@pytest.mark.parametrize("query", ["_expand=user", "_embed=user"])
def test_expand_adds_each_todos_user_to_a_list(listed, query):
    reply = call(listed, "GET", "/todos?userId=1&" + query)
    assert reply.json() == [dict(listed_todo(1), user=ADA), dict(listed_todo(4), user=ADA)]


def test_expand_in_xml_is_a_user_child(listed):
    reply = call(listed, "GET", "/todos/1?_expand=user", headers=XML_HEADERS)
    assert reply.body == (b"<todo><id>1</id><title>Buy milk</title><done>false</done>"
                          b"<userId>1</userId>" + ADA_XML.encode() + b"</todo>")


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
                            "items": 2, "data": [dict(ADA, todos=[listed_todo(1),
                                                                  listed_todo(4)])]}


def test_expand_keeps_json_server_1s_page_object_in_xml(listed):
    reply = call(listed, "GET", "/todos?_page=2&_per_page=3&_expand=user", headers=XML_HEADERS)
    page = ElementTree.fromstring(reply.body)
    assert [(child.tag, child.text) for child in page if child.tag != "data"] == [
        ("first", "1"), ("prev", "1"), ("next", None), ("last", "2"), ("pages", "2"),
        ("items", "4")]
    assert ElementTree.tostring(page.find("data")) == (
        b"<data><todo><id>4</id><title>Read a book</title><done>true</done><userId>1</userId>"
        + ADA_XML.encode() + b"</todo></data>")


@pytest.mark.parametrize("path, name", [
    ("/users/1?_embed=posts", "posts"), ("/users?_embed=todo", "todo"),
    ("/todos/1?_expand=owner", "owner"), ("/todos?_expand=users", "users"),
    ("/todos?_embed=todos", "todos")])
def test_an_unknown_embed_or_expand_is_400_naming_it(listed, path, name):
    problem = assert_problem(call(listed, "GET", path), 400)
    assert names(problem["detail"], name), problem["detail"]


def test_deleting_a_referenced_user_is_409_naming_todos_and_the_count(server):
    user = post(server, "/users", {"name": "Owner", "email": "owner@example.com"})
    owned = [post(server, "/users/%d/todos" % user["id"], {"title": title})
             for title in ("One", "Two")]
    problem = assert_problem(call(server, "DELETE", "/users/%d" % user["id"]), 409)
    assert problem["detail"] == ("The user with id %d is referred to by 2 todos; change or "
                                 "delete them first: nothing was deleted." % user["id"])
    assert call(server, "GET", "/users/%d" % user["id"]).json() == user
    assert call(server, "GET", "/users/%d/todos" % user["id"]).json() == owned
    for item in owned:
        call(server, "DELETE", "/todos/%d" % item["id"])
    assert call(server, "DELETE", "/users/%d" % user["id"]).status == 200


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


def test_a_conditional_get_with_embed_sees_a_change_to_the_embedded_todos(server):
    # RFC 9110 §8.8.3: a strong validator changes whenever the representation does, so a
    # user's own version cannot stand for a representation that holds its todos too
    user = post(server, "/users", {"name": "Cached", "email": "cached@example.com"})
    path = "/users/%d?_embed=todos" % user["id"]
    first = call(server, "GET", path)
    added = post(server, "/users/%d/todos" % user["id"], {"title": "New"})
    tag = first.headers["ETag"]  # none at all would be right too
    reply = call(server, "GET", path, headers={"If-None-Match": tag} if tag else {})
    assert reply.status == 200  # a 304 would keep the client's list without the new todo
    assert reply.json() == dict(user, todos=[added])
    call(server, "DELETE", "/todos/%d" % added["id"])


def test_a_conditional_get_with_expand_sees_a_change_to_the_expanded_user(server):
    user = post(server, "/users", {"name": "Before", "email": "renamed@example.com"})
    owned = post(server, "/users/%d/todos" % user["id"], {"title": "Owned"})
    path = "/todos/%d?_expand=user" % owned["id"]
    tag = call(server, "GET", path).headers["ETag"]
    renamed = call(server, "PATCH", "/users/%d" % user["id"], {"name": "After"}).json()
    reply = call(server, "GET", path, headers={"If-None-Match": tag} if tag else {})
    assert reply.status == 200  # a 304 would keep the client's copy of the old name
    assert reply.json() == dict(owned, user=renamed)
    call(server, "DELETE", "/todos/%d" % owned["id"])


def test_a_stale_if_match_on_deleting_a_referred_to_user_is_412_before_the_409(server):
    user = post(server, "/users", {"name": "Stale", "email": "stale@example.com"})
    owned = post(server, "/users/%d/todos" % user["id"], {"title": "Held"})
    reply = call(server, "DELETE", "/users/%d" % user["id"], headers={"If-Match": '"9-json"'})
    assert_problem(reply, 412)
    assert_problem(call(server, "DELETE", "/users/%d" % user["id"]), 409)
    call(server, "DELETE", "/todos/%d" % owned["id"])


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
                                     "change or delete them first: nothing was deleted.")
        assert call(running, "GET", "/users/1").status == 200
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
    assert call(loaded, "GET", "/users/1").json() == dict(ADA, phone="+44 20 7946 0958")
    assert ids(call(loaded, "GET", "/users?q=7946")) == [1]  # q looks in the gained field too
    problem = assert_problem(call(loaded, "POST", "/users", {"name": "", "email": "x"}), 422)
    assert [error["field"] for error in problem["errors"]] == ["name", "email"]  # checks kept


def test_a_db_json_infers_types_for_filters_and_sorts(loaded):
    assert ids(call(loaded, "GET", "/posts?views_gte=150")) == [2]
    assert ids(call(loaded, "GET", "/posts?_sort=-views")) == [2, 1]
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
        assert ids(call(running, "GET", "/items?price_gte=5")) == [1, 3]
        assert ids(call(running, "GET", "/items?_sort=price")) == [2, 3, 1]
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
                                 "delete them first: nothing was deleted.")
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
    ({"people": [{"id": 1, "name": "a"}]}, ["people"]),
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
    result = subprocess.Popen([sys.executable, os.path.join(HERE, "rest_users.py"), "--port", "0",
                               "--load", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, cwd=HERE)
    out, err = result.communicate(timeout=10)
    assert (result.returncode, out) == (2, "")
    assert len(err.splitlines()) == 1 and "posts" in err


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
        assert call(running, "GET", "/users/1").json() == dict(ADA, phone="+44 20 7946 0958")
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


JSON_KINDS = {"object": dict, "array": list, "string": str, "integer": int,
              "number": (int, float), "boolean": bool, "null": type(None)}


def schema_errors(document, schema, value, where="body"):
    """What in value breaks the JSON Schema types, required keys and properties of the
    document (test_rest_users.py's checks of users go further: lengths and patterns)."""
    schema = resolve(document, schema)
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or list(JSON_KINDS)  # none: any
    if not any(isinstance(value, JSON_KINDS[kind]) and (kind == "boolean") == isinstance(
            value, bool) for kind in kinds):
        return ["%s: %r is not %s" % (where, value, " or ".join(kinds))]
    errors = []
    if isinstance(value, dict) and "object" in kinds:
        errors += ["%s: %s missing" % (where, key) for key in schema.get("required", [])
                   if key not in value]
        for key, item in value.items():
            if key in schema.get("properties", {}):
                errors += schema_errors(document, schema["properties"][key], item,
                                        where + "." + key)
            elif schema.get("additionalProperties") is False:
                errors.append("%s: %s not allowed" % (where, key))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += schema_errors(document, schema["items"], item, "%s[%d]" % (where, index))
    return errors


def check_against_openapi(document, path, method, reply, status):
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


def test_every_todo_response_matches_the_api_description(server):
    document = call(server, "GET", "/openapi.json").json()
    item = "/todos/%d" % post(server, "/todos", {"title": "Described", "userId": 1})["id"]
    owner = post(server, "/users", {"name": "Owner", "email": "described@example.com"})
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
        check_against_openapi(document, path, method, call(server, method, target, body, headers),
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
            check_against_openapi(document, path, method,
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
                reply = call(running, method, path, headers=origin)
                assert reply.status == status, (order, path)  # the route is there
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

def test_the_explorer_offers_todos(browser):
    running = start_server(resources=BOTH)
    try:
        post(running, "/todos", {"title": "Buy milk"})
        browser.open("http://127.0.0.1:%d/" % running.server_address[1])
        # whatever offers the choice of resource (a link, a button, a select's option)
        browser.run(
            "(() => { const choice = [...document.querySelectorAll('a, button, option')].find("
            "c => ['todos', '/todos'].includes((c.value || c.textContent).trim().toLowerCase()));"
            " if (choice.tagName === 'OPTION') { choice.selected = true; choice.parentElement"
            ".dispatchEvent(new Event('change', {bubbles: true})); } else { choice.click(); }"
            " })()")
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


def test_a_409_on_delete_counts_one_referring_item_in_the_singular(server):
    user = post(server, "/users", {"name": "Once", "email": "once@example.com"})
    post(server, "/users/%d/todos" % user["id"], {"title": "Only one"})
    problem = assert_problem(call(server, "DELETE", "/users/%d" % user["id"]), 409)
    assert problem["detail"] == ("The user with id %d is referred to by 1 todo; change or "
                                 "delete them first: nothing was deleted." % user["id"])


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
