#!/bin/bash
# Entrypoint of the federator-spark image: the container side of Spark's Kubernetes contract.
#
# Spark's Kubernetes scheduler backend (used by both Spark operators) starts this image's ENTRYPOINT
# with these arguments and the SPARK_* environment described in docs/install.md:
#
#   driver ARGS...   the driver pod: `spark-submit --deploy-mode client ARGS...`, where ARGS come from
#                    Spark's submission client (--properties-file, --class, the app file, its arguments)
#                    and the driver binds to SPARK_DRIVER_BIND_ADDRESS (the pod IP)
#   executor         an executor pod: a KubernetesExecutorBackend JVM configured from SPARK_* variables
#   anything else    run as given, e.g. `python -m federator_spark --task-config ... --master local[2]`
#
# FEDERATOR_ENTRYPOINT_DRY_RUN=1 prints what would run instead of running it: `env NAME=VALUE` lines
# for the variables this script sets, then `arg VALUE` lines, one per argument of the command.
set -euo pipefail

TINI=/usr/bin/tini

die() {
  echo "entrypoint: $*" >&2
  exit 64
}

require() {
  local name
  for name in "$@"; do
    [ -n "${!name:-}" ] || die "$name is not set (the Spark scheduler backend sets it for a ${MODE} pod)"
  done
}

# A uid without a passwd entry (platforms that pick a random uid): Java and Hadoop's login need a user
# name, and the root filesystem may be read-only, so libnss_wrapper answers from files under /tmp.
user_name_for_any_uid() {
  getent passwd "$(id -u)" >/dev/null && return 0
  local wrapper
  wrapper=$(compgen -G '/usr/lib/*/libnss_wrapper.so' | head -n 1) || return 0
  NSS_WRAPPER_PASSWD=$(mktemp) && NSS_WRAPPER_GROUP=$(mktemp)
  printf 'spark:x:%s:%s:%s:%s:/usr/sbin/nologin\n' "$(id -u)" "$(id -g)" "${SPARK_USER_NAME:-spark}" \
    "${HOME:-/tmp}" >"$NSS_WRAPPER_PASSWD"
  printf 'spark:x:%s:\n' "$(id -g)" >"$NSS_WRAPPER_GROUP"
  export_env LD_PRELOAD "$wrapper"
  export_env NSS_WRAPPER_PASSWD "$NSS_WRAPPER_PASSWD"
  export_env NSS_WRAPPER_GROUP "$NSS_WRAPPER_GROUP"
}

SET_ENV=()
export_env() {
  export "$1=$2"
  SET_ENV+=("$1=$2")
}

# SPARK_JAVA_OPT_0, _1, ... _10 in the order of their numbers (a plain name sort puts 10 before 2, and
# later options must keep overriding earlier ones).
executor_java_options() {
  local name
  local -a numbers=()
  for name in "${!SPARK_JAVA_OPT_@}"; do
    [[ "${name#SPARK_JAVA_OPT_}" =~ ^[0-9]+$ ]] || die "$name: expected SPARK_JAVA_OPT_<number>"
    numbers+=("${name#SPARK_JAVA_OPT_}")
  done
  [ "${#numbers[@]}" -gt 0 ] || return 0
  local number
  while read -r number; do
    name="SPARK_JAVA_OPT_$number"
    JAVA_OPTIONS+=("${!name}")
  done < <(printf '%s\n' "${numbers[@]}" | sort -n)
}

# The executor's classpath: Spark's configuration directory (spark.properties and any log4j2 file the
# pod mounts there), Hadoop's configuration, spark.executor.extraClassPath (SPARK_CLASSPATH), Spark's
# jars, then SPARK_DIST_CLASSPATH; no empty entries (Java reads an empty entry as the working directory).
executor_classpath() {
  local -a entries=()
  local entry
  for entry in "${SPARK_CONF_DIR:-$SPARK_HOME/conf}" "${HADOOP_CONF_DIR:-}" "${SPARK_CLASSPATH:-}" \
    "$SPARK_HOME/jars/*" "${SPARK_DIST_CLASSPATH:-}"; do
    [ -n "$entry" ] && entries+=("$entry")
  done
  local IFS=:
  echo "${entries[*]}"
}

MODE=${1:-}
case "$MODE" in
  driver)
    shift
    require SPARK_DRIVER_BIND_ADDRESS SPARK_HOME
    COMMAND=(
      "$SPARK_HOME/bin/spark-submit"
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS"
      # Executors that reach the driver by its pod IP (spark.kubernetes.executor.useDriverPodIP) read it here.
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS"
      --deploy-mode client
      "$@"
    )
    ;;
  executor)
    shift
    [ "$#" -eq 0 ] || die "executor takes no arguments (got: $*); its settings come from SPARK_* variables"
    require SPARK_HOME JAVA_HOME SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES \
      SPARK_EXECUTOR_MEMORY SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP SPARK_RESOURCE_PROFILE_ID \
      SPARK_EXECUTOR_POD_NAME
    # spark.executor.extraLibraryPath
    if [ -n "${SPARK_EXECUTOR_LIBRARY_PATH:-}" ]; then
      export_env LD_LIBRARY_PATH "$SPARK_EXECUTOR_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    JAVA_OPTIONS=()
    executor_java_options
    COMMAND=(
      "$JAVA_HOME/bin/java"
      "${JAVA_OPTIONS[@]}"
      "-Xms$SPARK_EXECUTOR_MEMORY"
      "-Xmx$SPARK_EXECUTOR_MEMORY"
      -cp "$(executor_classpath)"
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
      --driver-url "$SPARK_DRIVER_URL"
      --executor-id "$SPARK_EXECUTOR_ID"
      --cores "$SPARK_EXECUTOR_CORES"
      --app-id "$SPARK_APPLICATION_ID"
      --hostname "$SPARK_EXECUTOR_POD_IP"
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID"
      --podName "$SPARK_EXECUTOR_POD_NAME"
    )
    ;;
  "")
    die "no command: expected driver ARGS..., executor, or a command to run"
    ;;
  *)
    COMMAND=("$@")
    ;;
esac

user_name_for_any_uid

if [ -n "${FEDERATOR_ENTRYPOINT_DRY_RUN:-}" ]; then
  [ "${#SET_ENV[@]}" -eq 0 ] || printf 'env %s\n' "${SET_ENV[@]}"
  printf 'arg %s\n' "$TINI" -s -- "${COMMAND[@]}"
  exit 0
fi
# tini as PID 1: signals reach the JVM (or the command), and orphaned Python workers are reaped.
exec "$TINI" -s -- "${COMMAND[@]}"
