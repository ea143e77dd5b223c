#!/usr/bin/env bash
# Run the kopf peer by hand, from its own virtualenv (created on first use by venv.py):
#
#   KUBECONFIG=... bench/peers/kopf/run.sh                      # all namespaces
#   KUBECONFIG=... bench/peers/kopf/run.sh --namespace demo     # one namespace
#
# Any arguments replace --all-namespaces and go to `kopf run` (e.g. --verbose, --quiet).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$(python3 "$here/venv.py")"
if [[ $# -eq 0 ]]; then
  set -- --all-namespaces
fi
exec "$python" -m kopf run --standalone "$@" "$here/operator.py"
