#!/usr/bin/env bash
# Make sure Prometheus's `promtool` and `prometheus` are installed (Debian's
# `prometheus` package, which has both), and print the folder that holds
# them. The metrics tests (`tests/all/metrics.rs`) check `GET /metrics`
# with `promtool check metrics` and have a real Prometheus scrape it.
#
#   scripts/prometheus.sh           -> prints e.g. /usr/bin
#
# Installs with apt-get when they are missing and this runs as root;
# otherwise says what is missing. The tests find the folder through
# AGENTBUS_PROMETHEUS_BIN, else run this script (once per test process).
set -euo pipefail

have() { command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; }

if ! have; then
  if [ "$(id -u)" != 0 ]; then
    echo "prometheus: promtool and prometheus are missing; reason: not root, cannot apt-get install -y prometheus (install Debian's prometheus package, or set AGENTBUS_PROMETHEUS_BIN to a folder with both)" >&2
    exit 1
  fi
  exec 9>/tmp/agentbus-prometheus-install.lock
  flock 9 # two test processes at once install once
  if ! have; then
    echo "prometheus: installing Debian's prometheus package" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends prometheus >&2 \
      || { apt-get update >&2 && apt-get install -y --no-install-recommends prometheus >&2; }
  fi
fi
have || { echo "prometheus: reason: apt-get installed no promtool or prometheus" >&2; exit 1; }
dirname "$(command -v promtool)"
