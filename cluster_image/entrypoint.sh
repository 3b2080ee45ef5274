#!/bin/sh
# entrypoint.sh ROLE ARGS... -- one mini-HDFS process per container.
#
# ROLE is namenode, datanode or client; the rest are that node's flags, passed to
# `python3 -m minihdfs.node ROLE ...` unchanged. `exec` replaces this shell, so the
# signals tini forwards (docker stop's SIGTERM, a fault's SIGSTOP) reach python itself.
# Any other first word is run as it is (`sh`, `python3 -c ...`) for debugging and smoke tests.
set -eu

usage() {
    echo "usage: entrypoint.sh namenode|datanode|client ARGS...  (or any command to run as is)" >&2
}

if [ "$#" -eq 0 ]; then
    usage
    exit 2
fi

case "$1" in
    namenode|datanode|client)
        exec python3 -m minihdfs.node "$@"
        ;;
    -h|--help|help)
        usage
        exit 0
        ;;
    *)
        exec "$@"
        ;;
esac
