#!/bin/sh
# Prints a short status of the host the gateway runs on: time, load, memory and disk of the
# working directory. Read-only; takes no arguments.
set -eu
echo "time: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "load: $(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null || uptime)"
if command -v free >/dev/null 2>&1; then
	free -h | sed -n '1,2p'
fi
df -h . | tail -n 1
