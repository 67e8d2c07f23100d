#!/usr/bin/env bash
# Run kind: vm (a Linux target over SSH)
# Variables: none — extra vars are not forwarded to scripts. The runner wraps a .sh asset in a
#   generated playbook (ansible.builtin.script with /bin/bash) that copies it to the host, runs it
#   as the connecting user and prints its output; a non-zero exit fails the run.
# Reports the host's identity, uptime and disk usage. Read-only: safe to run anywhere.
set -euo pipefail

echo "host: $(hostname)"
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  . /etc/os-release
  echo "os: ${PRETTY_NAME:-unknown}"
fi
echo "kernel: $(uname -sr)"
echo "uptime: $(uptime)"
echo "disk usage (local file systems):"
df -hP -x tmpfs -x devtmpfs 2>/dev/null || df -hP

# Fail the run when a file system is nearly full, so a batch shows which hosts need attention.
limit=95
full=$(df -P -x tmpfs -x devtmpfs 2>/dev/null | awk -v limit="$limit" 'NR > 1 { gsub("%", "", $5); if ($5 + 0 >= limit) print $6 " (" $5 "%)" }')
if [ -n "$full" ]; then
  echo "file systems at or above ${limit}%: $full" >&2
  exit 1
fi
