export const DEFAULT_URL = 'http://127.0.0.1:8080';

export const HELP = `remote-worker — command line for the Remote Worker API

Usage: remote-worker <group> <command> [arguments] [options]

Targets
  targets put <id> --file <target.json>     create or replace a registry row
  targets list                               every row (untargetable ones with the reason)

Runs
  runs submit --kind <kind> --target <id> --asset <path> [run options] [--follow]
                                             [--idempotency-key <key>]
  runs get <id>                              one run, with its timings
  runs list [--batch <id>] [--state <s>] [--limit <n>] [--cursor <c>]
  runs logs <id> [--follow]                  redacted output; --follow until the run ends
  runs cancel <id>

Batches (one asset, 1–50 targets, one kind)
  batches submit --targets <a,b,c> --kind <kind> --asset <path> [run options] [--follow]
  batches get <id> [--follow]                counts per state; --follow until every run ends
  batches retry <id> [--follow]              re-submit the targets that did not succeed

Assets
  assets upload <local-file> [--path <p>] [--overwrite]
                                             --path defaults to the file's name
  assets list                                with the type: playbook, script, powershell, rpm, deb

Run options
  --kind <kind>                vm | cluster_play | database_play | k8s_op | portainer
  --asset <path>               playbook, script or package on the storage backend
  --extra-vars <JSON|@file>    a JSON object of play variables
  --secret <var>=<secret>      bind a play variable to a named secret (repeatable)
  --timeout <seconds>          the run's timeout
  --ssh-user <user>  --managed-account <name>  --operation <JSON|@file> (k8s_op)

Global options
  --json          print the API's JSON answer (with --follow: log lines go to stderr,
                  the final run or batch rollup to stdout)
  --url <url>     API address (default: $REMOTE_WORKER_URL, else ${DEFAULT_URL})
  -h, --help      this help

Environment
  REMOTE_WORKER_URL     API address
  REMOTE_WORKER_TOKEN   bearer token (local mode prints it at first start)

Exit codes
  0   success (with --follow: the run succeeded / every run of the batch succeeded)
  1   the followed run failed (a batch: some run did not succeed)
  2   the run was refused        3   cancelled        4   timed_out
  64  usage error                65  the API refused the request (4xx)
  69  the API is unreachable or failed (5xx)          77  missing or wrong token
`;
