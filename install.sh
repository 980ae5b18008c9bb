#!/bin/sh
# The one install command. It makes a virtual environment (.venv, or $VENV) with the `python3`
# on PATH (or $PYTHON: 3.11, 3.12 or 3.13; a system, pyenv or conda Python), installs the
# hash-checked lock of that Python into it (locks/), then this workflow's own package, editable,
# without resolving anything again. Nothing is installed outside the environment.
#
#   bash install.sh && . .venv/bin/activate            # everything (README quickstart)
#   bash install.sh --light && . .venv/bin/activate    # replay, analysis, plots, report only
#   PYTHON=python3.12 VENV=.venv312 bash install.sh
#
# Sources: PyPI, and for Python 3.11's CPU build of torch PyTorch's CPU wheel index (named in
# the lock itself). Every file is checked against the lock's sha256.
set -eu
cd "$(dirname "$0")"
py=${PYTHON:-python3}
venv=${VENV:-.venv}
light=no
for arg in "$@"; do
  case "$arg" in
    --light) light=yes ;;
    *) echo "install.sh: unknown argument '$arg' (use --light or nothing)" >&2; exit 2 ;;
  esac
done

if ! command -v "$py" >/dev/null 2>&1; then
  echo "install.sh: no Python '$py' on PATH; set PYTHON to a Python 3.11, 3.12 or 3.13" >&2
  exit 2
fi
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$light:$version" in
  no:3.11) lock=locks/py311.txt ;;
  no:3.12 | no:3.13) lock=locks/py312-py313.txt ;;
  yes:3.11 | yes:3.12 | yes:3.13) lock=locks/light.txt ;;
  *) echo "install.sh: Python $version ($py) is not supported: use 3.11, 3.12 or 3.13 (PYTHON=...)" >&2
     exit 2 ;;
esac

if [ -x "$venv/bin/python" ]; then
  have=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$have" != "$version" ]; then
    echo "install.sh: $venv holds Python $have, not $version ($py): remove it or set VENV" >&2
    exit 2
  fi
else
  if ! "$py" -m venv "$venv"; then
    echo "install.sh: '$py -m venv $venv' failed; on Debian or Ubuntu install the venv module" \
      "first: apt-get install python3-venv (or python$version-venv)" >&2
    exit 2
  fi
fi
vpy="$venv/bin/python"
echo "install.sh: Python $version in $venv, $lock"
"$vpy" -m pip install -q --require-hashes --no-deps -r locks/bootstrap.txt
# Packages that live on another index than PyPI (locks/<lock>-<index>.txt) go first, alone:
# the main lock then finds them installed and asks PyPI for the rest.
for extra in "${lock%.txt}"-*.txt; do
  [ -f "$extra" ] || continue
  "$vpy" -m pip install --require-hashes --no-deps -r "$extra"
done
"$vpy" -m pip install --require-hashes --no-build-isolation -r "$lock"
"$vpy" -m pip install --no-deps --no-build-isolation --use-pep517 -e .
"$vpy" -m pip check  # the lock is complete: every requirement of every package is in it
echo "install.sh: done. Use it in this shell with: . $venv/bin/activate"
