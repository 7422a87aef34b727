#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install the Debian packages of scripts/packages.txt that are missing, and
# say which.  Does nothing when everything is there.  ORTMEM_NO_DEPS=1 skips
# the step (for machines managed otherwise).
set -e
cd "$(dirname "$0")/.."

[ "${ORTMEM_NO_DEPS:-0}" = 1 ] && exit 0
if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: not a Debian system; install the packages of scripts/packages.txt by hand"
	exit 0
fi
missing=
for pkg in $(sed -e 's/#.*//' scripts/packages.txt); do
	if ! dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $pkg"
	fi
done
[ -z "$missing" ] && exit 0

echo "deps: installing Debian packages:$missing"
sudo=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install:$missing" >&2; exit 1; }
	sudo=sudo
fi
# Several builds may share a machine: wait for another apt to finish.
lock="-o DPkg::Lock::Timeout=900"
$sudo apt-get $lock update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get $lock install -y -qq --no-install-recommends $missing
