{{/* Name of the chart, for labels. */}}
{{- define "federator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name of the release's objects: the release name, suffixed with the chart name unless it has it. */}}
{{- define "federator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "federator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "federator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Labels shared by every object of the release; add app.kubernetes.io/component. */}}
{{- define "federator.baseLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "federator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: federator
{{- end -}}

{{- define "federator.labels" -}}
{{ include "federator.baseLabels" . }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "federator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "federator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The namespaces the operator reconciles when not watching all: the list, or the release namespace. */}}
{{- define "federator.watchNamespaces" -}}
{{- $namespaces := .Values.watchNamespaces | default (list .Release.Namespace) -}}
{{- $namespaces | uniq | toJson -}}
{{- end -}}

{{/* Namespaces that get the Spark driver service account. */}}
{{- define "federator.sparkNamespaces" -}}
{{- if .Values.watchAllNamespaces -}}
{{- .Values.spark.namespaces | default (list .Release.Namespace) | uniq | toJson -}}
{{- else -}}
{{- include "federator.watchNamespaces" . -}}
{{- end -}}
{{- end -}}

{{/* repository:tag or repository@digest */}}
{{- define "federator.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* Peering (leader election) is on when more than one replica runs. */}}
{{- define "federator.peeringName" -}}
{{- if gt (int .Values.replicas) 1 -}}
{{- include "federator.fullname" . -}}
{{- end -}}
{{- end -}}
