"""Runs the tests on every core the machine gives: pytest's own run, shared between workers.

The suite is a few thousand tests, most of them a request to a server in a thread, and on one
core it takes about 45 seconds. After pytest has collected the tests and put them in its
order, this process forks two workers a core (at most four). The tests are cut into chunks, each
ending where a test function ends, and the workers take them from one queue, so a worker that
draws slow tests takes fewer. A worker runs each test with pytest's own runner, in pytest's
order, and sends its reports back as a line of JSON. This process reports them as if it had run
them, so the dots, -v, -x, --durations, --lf, the summary and the exit status are pytest's own.

TEST_WORKERS=1 runs every test in this one process, as plain pytest does; so does a run of
fewer than 100 tests, --pdb, or a machine without fork.
"""
import builtins
import json
import os
import queue
import signal
import struct
import sys
import threading
import traceback
import warnings

import pytest

MOST_WORKERS = 4  # each starts its own servers and browsers: more cost more than they save
FEWEST_TESTS = 100


def worker_count(session):
    """How many workers to fork for this session: 1 means none."""
    if os.environ.get("TEST_WORKERS"):
        return int(os.environ["TEST_WORKERS"])
    option = session.config.option
    if (not hasattr(os, "fork") or option.collectonly or option.usepdb
            or len(session.items) < FEWEST_TESTS or session.testsfailed):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(2 * (cores or 1), MOST_WORKERS)  # two a core: many tests wait on a socket


def function_of(item):
    return item.nodeid.split("[")[0]


def chunks_of(items):
    """The items in runs of at least ten (more in a large session), each ending where a test
    function ends: a function's items run in one worker, which sets their fixtures up once."""
    least = max(10, len(items) // 1000)
    chunks = [[]]
    for item, next_item in zip(items, items[1:] + [None]):
        chunks[-1].append(item)
        if len(chunks[-1]) >= least and (next_item is None
                                         or function_of(next_item) != function_of(item)):
            chunks.append([])
    return [chunk for chunk in chunks if chunk]


# -- in a worker -----------------------------------------------------------------------------

class Forwarder:
    """Sends each test's reports, and each warning, to the parent: a line of JSON each."""

    def __init__(self, config, out):
        self.config, self.out = config, out
        self.reports = []

    def send(self, message):
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    def pytest_runtest_logreport(self, report):
        self.reports.append(self.config.hook.pytest_report_to_serializable(
            config=self.config, report=report))

    def pytest_runtest_logfinish(self, nodeid, location):
        self.send({"nodeid": nodeid, "location": location, "reports": self.reports})
        self.reports = []

    def pytest_warning_recorded(self, warning_message, when, nodeid):
        self.send({"warning": [type(warning_message.message).__name__,
                               str(warning_message.message), warning_message.filename,
                               warning_message.lineno], "when": when, "nodeid": nodeid})


def items_taken(chunks, queue_pipe, forwarder):
    """The items of each chunk this worker takes from the queue, taken as it comes to them."""
    while True:
        record = os.read(queue_pipe, 4)  # all written before the fork: a read takes one whole
        if not record:
            return
        number = struct.unpack("i", record)[0]
        forwarder.send({"took": number})
        for item in chunks[number]:
            yield item


def work(session, chunks, queue_pipe, out):
    """Run the chunks this worker takes as pytest's own loop would, then end the process."""
    status = 0
    try:
        config = session.config
        capture = config.pluginmanager.get_plugin("capturemanager")
        if capture is not None:  # the parent's capture files are shared; a worker needs its own
            capture.stop_global_capturing()
            capture.start_global_capturing()
            capture.suspend_global_capture()
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:  # the parent reports; a failure's text is still made here
            reporter._tw = type(reporter._tw)(open(os.devnull, "w"))
        forwarder = Forwarder(config, out)
        config.pluginmanager.register(forwarder, "forwarder")
        taken = items_taken(chunks, queue_pipe, forwarder)
        item = next(taken, None)
        while item is not None and not (session.shouldfail or session.shouldstop):
            next_item = next(taken, None)  # pytest tears down what the next test won't use
            config.hook.pytest_runtest_protocol(item=item, nextitem=next_item)
            item = next_item
    except BaseException:
        traceback.print_exc()  # pytest's own failure, not a test's: the parent fails the rest
        status = 3
    finally:
        for stream in (out, sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)


# -- in the parent ---------------------------------------------------------------------------

def read_lines(worker, pipe, results):
    """In a thread of its own: pass on each message a worker sends, then None at its end."""
    with os.fdopen(pipe) as lines:
        for line in lines:
            results.put((worker, json.loads(line)))
    results.put((worker, None))


def report(config, sent):
    """Report a test a worker ran, as pytest reports a test it runs itself."""
    location = tuple(sent["location"])
    config.hook.pytest_runtest_logstart(nodeid=sent["nodeid"], location=location)
    for data in sent["reports"]:
        config.hook.pytest_runtest_logreport(
            report=config.hook.pytest_report_from_serializable(config=config, data=data))
    config.hook.pytest_runtest_logfinish(nodeid=sent["nodeid"], location=location)


def report_warning(config, sent):
    """Record a warning a worker saw, as pytest records one it sees itself."""
    category, message, filename, lineno = sent["warning"]
    kind = getattr(builtins, category, None) or getattr(pytest, category, None)
    if not (isinstance(kind, type) and issubclass(kind, Warning)):
        kind = UserWarning
    config.hook.pytest_warning_recorded.call_historic(kwargs=dict(
        warning_message=warnings.WarningMessage(kind(message), kind, filename, lineno),
        when=sent["when"], nodeid=sent["nodeid"], location=None))


def ended(status):
    """How a process ended, from its wait status."""
    if os.WIFSIGNALED(status):
        return "signal %d" % os.WTERMSIG(status)
    return "exit status %d" % os.WEXITSTATUS(status)


def report_lost(config, item, why):
    """A test that no worker reported fails, saying why."""
    failed = pytest.TestReport(item.nodeid, item.location, {}, "failed", why, "call")
    report(config, {"nodeid": item.nodeid, "location": item.location,
                    "reports": [config.hook.pytest_report_to_serializable(config=config,
                                                                          report=failed)]})


def fork_workers(session, chunks, workers):
    """Fork the workers, the queue of chunk numbers filled before; their pids and pipes."""
    queue_pipe, queue_end = os.pipe()
    os.write(queue_end, b"".join(struct.pack("i", number) for number in range(len(chunks))))
    os.close(queue_end)  # a worker reading an empty queue then gets the end
    temporary = getattr(session.config, "_tmp_path_factory", None)
    if temporary is not None:
        temporary.getbasetemp()  # one folder for every worker's tmp_path, made once
    pids, pipes = [], []
    for _ in range(workers):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            work(session, chunks, queue_pipe, os.fdopen(write_end, "w"))
        os.close(write_end)
        pids.append(pid)
        pipes.append(read_end)
    os.close(queue_pipe)
    return pids, pipes


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    workers = worker_count(session)
    if workers < 2:
        return None  # pytest's own loop
    chunks = chunks_of(session.items)
    pids, pipes = fork_workers(session, chunks, workers)
    results = queue.Queue()
    for worker, pipe in enumerate(pipes):
        threading.Thread(target=read_lines, args=(worker, pipe, results), daemon=True).start()
    taken = [[] for _ in pids]  # each worker's items, in the order it runs them
    reported = set()
    running = len(pids)
    try:
        while running and not (session.shouldfail or session.shouldstop):
            worker, sent = results.get()
            if sent is None:
                running -= 1
            elif "took" in sent:
                taken[worker].extend(chunks[sent["took"]])
            elif "warning" in sent:
                report_warning(session.config, sent)
            else:
                report(session.config, sent)
                reported.add(sent["nodeid"])
    finally:
        if running:
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
        statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    if session.shouldfail:
        raise session.Failed(session.shouldfail)  # as pytest's loop does for -x or --maxfail
    if session.shouldstop:
        raise session.Interrupted(session.shouldstop)
    for items, status in zip(taken, statuses):
        lost = [item for item in items if item.nodeid not in reported]
        for number, item in enumerate(lost):
            report_lost(session.config, item, "not run: its worker had ended" if number else
                        "its worker ended (%s) before reporting it" % ended(status))
    taken_by_any = {item.nodeid for items in taken for item in items}
    for item in session.items:
        if item.nodeid not in reported and item.nodeid not in taken_by_any:
            report_lost(session.config, item, "not run: every worker had ended")
    return True
