{{/*
The operator's permissions in a watched namespace, derived from what its handlers do; nothing else.
*/}}
{{- define "federator.namespacedRules" -}}
# Reconciled kinds: read and watch, patch metadata (kopf finalizers and annotations).
- apiGroups: [federator.io]
  resources: [replicationtasks, servicebusmirrors, failovergroups, replicationapplications]
  verbs: [get, list, watch, patch]
# ServiceBusMirrors own the ReplicationTasks they generate, and the ReplicationApplication those run in
# unless the mirror's task template names one.
- apiGroups: [federator.io]
  resources: [replicationtasks, replicationapplications]
  verbs: [create, delete]
- apiGroups: [federator.io]
  resources:
    - replicationtasks/status
    - servicebusmirrors/status
    - failovergroups/status
    - replicationapplications/status
  verbs: [get, patch]
{{- if .Values.rbac.ownerReferencesPermissionEnforcement }}
- apiGroups: [federator.io]
  resources:
    - replicationtasks/finalizers
    - servicebusmirrors/finalizers
    - failovergroups/finalizers
    - replicationapplications/finalizers
  verbs: [update]
{{- end }}
# Task configuration and FailoverGroup endpoint ConfigMaps.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, patch, delete]
# The Spark applications of ReplicationTasks, for either launcher.
- apiGroups: [sparkoperator.k8s.io, spark.apache.org]
  resources: [sparkapplications]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
# A Running task's driver pod, found by its labels, whose status endpoint the operator reads for lag.
- apiGroups: [""]
  resources: [pods]
  verbs: [list]
# Connection strings referenced by specs: read one by name, never list or watch.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
# What Spark pods need, checked before they start: the service account workload identity signs them in
# as (its client-id annotation), and whether the checkpoint claim is ReadWriteMany. Read by name only.
- apiGroups: [""]
  resources: [serviceaccounts, persistentvolumeclaims]
  verbs: [get]
# An ARM credential of kind serviceAccount (a mirror member's, a DNS zone's): a token of that account, for
# Microsoft Entra's token exchange only (TokenRequest). Never the accounts themselves, nor their Secrets.
- apiGroups: [""]
  resources: [serviceaccounts/token]
  verbs: [create]
{{- end -}}

{{/* What the Spark driver needs in its namespace to run executors. */}}
{{- define "federator.sparkRules" -}}
- apiGroups: [""]
  resources: [pods, services, configmaps, persistentvolumeclaims]
  verbs: [create, get, list, watch, delete, patch]
{{- end -}}
