#!/bin/sh
# Compiles the hdfs-chaos workload client for Hadoop against one release's jars.
#   harness/systems/hadoop/java/build.sh JAR_DIR OUT_DIR
# JAR_DIR: the release's lib/ (hadoop-common, hadoop-hdfs-client and their dependencies,
# as harness/systems/hadoop/fetch.py lays them out); OUT_DIR receives the classes.
# Idempotent: recompiles only when the source is newer than the classes.
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 JAR_DIR OUT_DIR" >&2
    exit 2
fi
jars=$1
out=$2
src=$(cd "$(dirname "$0")" && pwd)/HdfsChaosClient.java
if ! ls "$jars"/hadoop-common-*.jar >/dev/null 2>&1; then
    echo "$0: error: no hadoop-common jar in $jars: fetch the release first" \
         "(harness/systems/hadoop/fetch.py)" >&2
    exit 2
fi
if ! command -v javac >/dev/null 2>&1; then
    echo "$0: error: javac not found: install a JDK (Debian: openjdk-17-jdk-headless)" >&2
    exit 2
fi
mkdir -p "$out"
if [ -f "$out/HdfsChaosClient.class" ] && [ "$out/HdfsChaosClient.class" -nt "$src" ]; then
    exit 0
fi
# --release 8: the classes run on any JVM a Hadoop 3.x release supports
javac -nowarn --release 8 -cp "$jars/*" -d "$out" "$src"
