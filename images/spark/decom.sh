#!/bin/bash
# Executor pods' preStop hook when spark.decommission.enabled is set (Spark's default
# spark.kubernetes.decommission.script is /opt/decom.sh): asks the executor JVM to decommission itself
# (SIGPWR, which Spark's executor handles by migrating its blocks and shuffle files and then exiting)
# and waits until it has exited, so the pod's grace period covers the migration.
set -uo pipefail

executor_pid() {
  local cmdline pid
  for cmdline in /proc/[0-9]*/cmdline; do
    pid=${cmdline#/proc/}
    pid=${pid%/cmdline}
    # Arguments are NUL-separated; the executor's main class is one of them.
    if tr '\0' '\n' <"$cmdline" 2>/dev/null \
      | grep -qx 'org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend'; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

if ! pid=$(executor_pid); then
  echo "decom: no executor JVM is running" >&2
  exit 0
fi
echo "decom: asking executor $pid to decommission" >&2
kill -PWR "$pid" || exit 0
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
done
echo "decom: executor $pid has exited" >&2
