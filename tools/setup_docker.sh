#!/usr/bin/env bash
# Makes a Docker engine answer on this machine and installs mmdebstrap (for the base image).
#
# Idempotent: when `docker info` answers and mmdebstrap is there, it does nothing. On
# Debian as root it installs what is missing (docker.io, mmdebstrap), starts dockerd in
# the background (systemd's docker.service where systemd runs, else dockerd itself,
# logging to $HDFS_CHAOS_DOCKERD_LOG) and waits until the engine answers. Anywhere else
# it prints one line saying what is missing and how to fix it, and exits 1.
#
# Environment: HDFS_CHAOS_DOCKERD_LOG (default /var/log/hdfs-chaos-dockerd.log),
# HDFS_CHAOS_DOCKERD_TIMEOUT (seconds to wait for the engine, default 60).
set -euo pipefail

LOG=${HDFS_CHAOS_DOCKERD_LOG:-/var/log/hdfs-chaos-dockerd.log}
TIMEOUT=${HDFS_CHAOS_DOCKERD_TIMEOUT:-60}

say() { echo "setup_docker: $*"; }
fail() { echo "setup_docker: $*" >&2; exit 1; }

engine_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
is_debian() { [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; }

missing=()
engine_answers || missing+=("a Docker engine")
command -v mmdebstrap >/dev/null 2>&1 || missing+=("mmdebstrap")

if [ "${#missing[@]}" -eq 0 ]; then
    say "Docker engine $(docker info --format '{{.ServerVersion}}' 2>/dev/null) answers and mmdebstrap is installed: nothing to do"
    exit 0
fi

if ! is_root || ! is_debian; then
    what=$(IFS=,; echo "${missing[*]}" | sed 's/,/ and /g')
    if is_debian; then
        fail "missing ${what}: rerun as root (sudo $0) to install docker.io and mmdebstrap and start dockerd"
    fi
    fail "missing ${what}: this is not Debian; install Docker Engine and mmdebstrap with your system's packages, start dockerd, then rerun"
fi

packages=()
command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
command -v docker >/dev/null 2>&1 || packages+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || packages+=(mmdebstrap)
if [ "${#packages[@]}" -gt 0 ]; then
    # sort -u: docker.io may be listed twice (no dockerd and no client).
    mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
    say "installing ${packages[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l
    mkdir -p "$(dirname "$LOG")"
    apt_log="$(dirname "$LOG")/hdfs-chaos-apt.log"
    apt-get update -q >"$apt_log" 2>&1 \
        || fail "apt-get update failed: check the machine's apt sources (see $apt_log)"
    apt-get install -y -q "${packages[@]}" >>"$apt_log" 2>&1 \
        || fail "apt-get install ${packages[*]} failed: see $apt_log"
fi

if ! engine_answers; then
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        say "starting docker.service"
        systemctl start docker || fail "systemctl start docker failed: see journalctl -u docker"
    elif pgrep -x dockerd >/dev/null 2>&1; then
        say "dockerd is running but does not answer yet; waiting"
    else
        say "starting dockerd in the background (log: $LOG)"
        mkdir -p "$(dirname "$LOG")"
        # setsid + nohup: the engine outlives this script and the shell that ran it.
        # It must not keep the caller's other descriptors (a CI runner's pipe or lock
        # would stay open as long as the engine runs): close every fd above 2 first.
        (
            for fd in /proc/$BASHPID/fd/*; do
                fd=${fd##*/}
                if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
            done
            exec setsid nohup dockerd >>"$LOG" 2>&1 </dev/null
        ) &
        started_pid=$!
    fi
    waited=0
    until engine_answers; do
        if [ -n "${started_pid:-}" ] && ! kill -0 "$started_pid" 2>/dev/null; then
            tail -n 3 "$LOG" 2>/dev/null | sed 's/^/  dockerd: /' >&2 || true
            fail "dockerd exited at once: see $LOG (it needs root, iptables and cgroups; inside a container it needs --privileged)"
        fi
        if [ "$waited" -ge "$TIMEOUT" ]; then
            tail -n 5 "$LOG" 2>/dev/null | sed 's/^/  dockerd: /' >&2 || true
            fail "no Docker engine answers after ${TIMEOUT}s: see $LOG"
        fi
        sleep 1
        waited=$((waited + 1))
    done
fi

say "Docker engine $(docker info --format '{{.ServerVersion}}') answers; mmdebstrap $(mmdebstrap --version | awk '{print $2}') is installed"
