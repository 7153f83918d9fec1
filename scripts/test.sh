#!/usr/bin/env bash
# The project's test command (README and .ci/run call exactly this).
# Installs what the suite needs on a fresh machine, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v soffice >/dev/null 2>&1 || ! command -v pdftoppm >/dev/null 2>&1 || ! command -v ssconvert >/dev/null 2>&1; then
    echo "test.sh: installing LibreOffice Calc (headless), Gnumeric (a second engine) and poppler-utils with apt-get" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "test.sh: run as root or install sudo to install LibreOffice" >&2; exit 1; }
        sudo="sudo"
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libreoffice-calc-nogui gnumeric poppler-utils >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'
# every property test at its full example count (the fast loop, plain pytest, tries fewer: tests/examples.py)
IL_EXAMPLES=all exec python3 -m pytest "$@"
