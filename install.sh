#!/bin/sh
# The one install command: the hash-checked lock of the full dependency set for this Python
# (locks/), then this workflow's own package, editable, without resolving anything again.
#   bash install.sh                 # with the `python3` on PATH (3.11, 3.12 or 3.13)
#   PYTHON=python3.12 bash install.sh
set -eu
cd "$(dirname "$0")"
py=${PYTHON:-python3}
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$version" in
  3.11) lock=locks/py311.txt ;;
  3.12 | 3.13) lock=locks/py312-py313.txt ;;
  *) echo "install.sh: Python $version is not supported (3.11, 3.12, 3.13)" >&2; exit 2 ;;
esac
echo "install.sh: Python $version, $lock"
"$py" -m pip install --require-hashes -r "$lock"
"$py" -m pip install --no-deps --no-build-isolation -e .
