#!/usr/bin/env bash
# nginx, the proxy in front of each API replica of a local cluster (scripts/cluster.sh) as in
# the chart: from Debian's packages (nginx-light) when there is none. The package's own
# service is not wanted: if its installation started one, it is stopped again.
set -euo pipefail

if command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]]; then
  exit 0
fi
echo "==> installing nginx from Debian's packages (nginx-light: the local cluster's proxies)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
if [[ -s /run/nginx.pid ]]; then
  /usr/sbin/nginx -s quit 2>/dev/null || true
fi
