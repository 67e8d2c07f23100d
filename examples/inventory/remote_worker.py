#!/usr/bin/env python3
"""Ansible dynamic inventory script: Remote Worker's GET /inventory.

Ansible runs an executable file given with -i as an inventory script and
reads its --list output; this one fetches the control plane's inventory
(registered targets, configured hypervisor groups, discovered cloud VMs) with
the API token and prints it. Python 3 standard library only.

Environment:
  REMOTE_WORKER_URL          base URL of the API (default http://127.0.0.1:8080)
  REMOTE_WORKER_TOKEN        the bearer token (local mode: cat .remote-worker/token)
  REMOTE_WORKER_TOKEN_FILE   or a file holding it (used when REMOTE_WORKER_TOKEN is unset)
  REMOTE_WORKER_TIMEOUT      seconds to wait for the API (default 30)

Usage:
  ansible-inventory -i examples/inventory/remote_worker.py --list
  ansible-playbook  -i examples/inventory/remote_worker.py site.yml --limit cloud_local

The token is sent in a header, never put on a command line, and never printed.
Hosts' connection secrets (passwords, SSH keys) are not in the inventory: a run
submitted through the API gets them from the secret store.
"""

import json
import os
import sys
import urllib.error
import urllib.request


def fail(message):
    sys.stderr.write("remote_worker inventory: %s\n" % message)
    sys.exit(1)


def token():
    value = os.environ.get("REMOTE_WORKER_TOKEN", "").strip()
    if value:
        return value
    path = os.environ.get("REMOTE_WORKER_TOKEN_FILE", "").strip()
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError as error:
            fail("cannot read REMOTE_WORKER_TOKEN_FILE %s: %s" % (path, error.strerror))
        if value:
            return value
        fail("REMOTE_WORKER_TOKEN_FILE %s is empty" % path)
    fail("set REMOTE_WORKER_TOKEN (local mode: export REMOTE_WORKER_TOKEN=$(cat .remote-worker/token))")


def problem_detail(body):
    """The `detail` of an application/problem+json answer, else the start of the body."""
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and parsed.get("detail"):
            return str(parsed["detail"])
    except ValueError:
        pass
    return body[:200]


def fetch_inventory():
    base = os.environ.get("REMOTE_WORKER_URL", "").strip() or "http://127.0.0.1:8080"
    url = base.rstrip("/") + "/inventory"
    try:
        timeout = float(os.environ.get("REMOTE_WORKER_TIMEOUT", "") or "30")
    except ValueError:
        fail("REMOTE_WORKER_TIMEOUT must be a number of seconds")
    request = urllib.request.Request(
        url, headers={"Authorization": "Bearer " + token(), "Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        detail = problem_detail(error.read().decode("utf-8", "replace"))
        fail("GET %s answered %d: %s" % (url, error.code, detail))
    except (urllib.error.URLError, OSError) as error:
        fail("cannot reach %s: %s" % (url, getattr(error, "reason", error)))
    try:
        inventory = json.loads(body)
    except ValueError:
        fail("GET %s did not answer JSON" % url)
    if not isinstance(inventory, dict) or not isinstance(inventory.get("_meta"), dict):
        fail("GET %s did not answer an Ansible inventory (no _meta)" % url)
    return inventory


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        print(json.dumps(fetch_inventory(), indent=2, sort_keys=True))
        return 0
    if len(argv) == 3 and argv[1] == "--host":
        # Ansible does not call this (the --list answer carries _meta.hostvars); kept for other tools.
        hostvars = fetch_inventory()["_meta"].get("hostvars", {})
        print(json.dumps(hostvars.get(argv[2], {}), indent=2, sort_keys=True))
        return 0
    sys.stderr.write("usage: %s --list | --host HOST\n" % os.path.basename(argv[0]))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
