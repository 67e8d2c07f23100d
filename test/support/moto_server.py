"""moto server (5.2.1) for the tests and the benches: `python3 moto_server.py -H HOST -p PORT`.

Two things over `python3 -m moto.server`, both in this process only (the installed moto
package is untouched):

- It exits when its stdin closes. The test worker or bench holds the pipe, so a process
  that dies without stopping the server (killed, crashed) does not leave one behind.
- It looks up which service a request is for once per host, not once per request.

Why the second: moto's server picks the service of every request in
`DomainDispatcherApplication.get_application`, under one lock that all its request
threads share. For a host such as `dynamodb.us-east-1.amazonaws.com` that lookup first
asks whether the host names a moto module, by listing moto's package directory and
`stat`ing each of its 180 entries (`moto.backends.list_of_moto_modules`), and then
tries the URL patterns of every service in turn. In a profile of a 200-run burst
(test/integration/launch-budget-burst.test.ts) the listings and their `stat`s were a fifth
of the server's time, spent holding that lock. The answer for a host cannot change while
the server runs (the package directory and the URL patterns are fixed), so it is looked up
once per host and kept; requests are otherwise routed exactly as moto routes them.
Measured here: a sequential GetItem 7.8 → 6.6 ms; the five moto-heaviest test files
(contract/aws, exactly-once-ecs, aws-redelivery, deployed-stack, ecs-call-count) 115 →
107 s on two workers.
"""

import os
import sys
import threading

from moto import backends
from moto.moto_server import werkzeug_app


def cache_service_lookup() -> None:
    """Answer `list_of_moto_modules` from one listing, and each host's service from its first lookup.

    A moto without these two (another 5.x than the 5.2.1 this was written for) is left as it is.
    """
    dispatcher = getattr(werkzeug_app, "DomainDispatcherApplication", None)
    lookup = getattr(dispatcher, "get_backend_for_host", None)
    if lookup is None or not callable(getattr(backends, "list_of_moto_modules", None)):
        return
    modules = frozenset(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    known: dict = {}

    def get_backend_for_host(self, host):
        # Called under the dispatcher's lock, so the dict needs no lock of its own.
        if host not in known:
            known[host] = lookup(self, host)
        return known[host]

    dispatcher.get_backend_for_host = get_backend_for_host


def exit_with_parent() -> None:
    """The caller holds our stdin: when it goes (a stop, or a hard kill), so do we."""

    def watch() -> None:
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    exit_with_parent()
    cache_service_lookup()
    from moto.server import main

    main(sys.argv[1:])
