{{/* Chart name, possibly overridden. */}}
{{- define "ingress-ts.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: release-chart, or the release name alone when it already contains the chart name. */}}
{{- define "ingress-ts.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of the controller workload and its Service. */}}
{{- define "ingress-ts.controller.fullname" -}}
{{- printf "%s-%s" (include "ingress-ts.fullname" .) .Values.controller.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ingress-ts.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ingress-ts.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "ingress-ts.labels" -}}
helm.sh/chart: {{ include "ingress-ts.chart" . }}
{{ include "ingress-ts.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: {{ include "ingress-ts.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ingress-ts.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ingress-ts.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector of the controller Pods (workload, Services, PDB, NetworkPolicy, ServiceMonitor). */}}
{{- define "ingress-ts.controller.selectorLabels" -}}
{{ include "ingress-ts.selectorLabels" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "ingress-ts.controller.labels" -}}
{{ include "ingress-ts.labels" . }}
app.kubernetes.io/component: controller
{{- with .Values.controller.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "ingress-ts.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ingress-ts.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ingress-ts.image" -}}
{{- $image := .Values.controller.image -}}
{{- $repository := ternary (printf "%s/%s" $image.registry $image.image) $image.image (ne $image.registry "") -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The status port: /healthz, /livez, /metrics (ingress-nginx's controller.metrics.port overrides it). */}}
{{- define "ingress-ts.statusPort" -}}
{{- default .Values.controller.healthzPort .Values.controller.metrics.port -}}
{{- end -}}

{{- define "ingress-ts.electionID" -}}
{{- default (printf "%s-leader" (include "ingress-ts.fullname" .)) .Values.controller.electionID -}}
{{- end -}}

{{/* The namespace served with scope.enabled and no namespaceSelector, else empty (all namespaces). */}}
{{- define "ingress-ts.watchNamespace" -}}
{{- if and .Values.controller.scope.enabled (not .Values.controller.scope.namespaceSelector) -}}
{{- default (include "ingress-ts.namespace" .) .Values.controller.scope.namespace -}}
{{- end -}}
{{- end -}}

{{/* The --publish-service value: pathOverride, else the controller Service when the chart renders it. */}}
{{- define "ingress-ts.publishService" -}}
{{- $publish := .Values.controller.publishService -}}
{{- $svc := .Values.controller.service -}}
{{- if and $publish.enabled $publish.pathOverride -}}
{{- $publish.pathOverride -}}
{{- else if and $publish.enabled $svc.enabled $svc.external.enabled -}}
{{- printf "$(POD_NAMESPACE)/%s" (include "ingress-ts.controller.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Whether the Ingress status is written (leader only): needs ingresses/status. */}}
{{- define "ingress-ts.updateStatus" -}}
{{- $explicit := index .Values.controller.extraArgs "update-status" -}}
{{- if or (eq (toString $explicit) "false") (and (not (include "ingress-ts.publishService" .)) (not (hasKey .Values.controller.extraArgs "publish-status-address"))) -}}
false
{{- else -}}
true
{{- end -}}
{{- end -}}

{{/* A TCP/UDP service port's name in the Pod and the Service: <port>-tcp, behind portNamePrefix if set. Args: (list $ port protocol) */}}
{{- define "ingress-ts.streamPortName" -}}
{{- $root := index . 0 -}}
{{- $name := printf "%v-%s" (index . 1) (index . 2) -}}
{{- if $root.Values.portNamePrefix }}{{ printf "%s-%s" $root.Values.portNamePrefix $name }}{{ else }}{{ $name }}{{ end -}}
{{- end -}}

{{/* The admission webhook's names: its Secret and ValidatingWebhookConfiguration (<fullname>-admission)
and its Service (<controller fullname>-admission), as ingress-nginx's chart names them. */}}
{{- define "ingress-ts.admissionWebhooks.fullname" -}}
{{- printf "%s-%s" (include "ingress-ts.fullname" .) .Values.controller.admissionWebhooks.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ingress-ts.admissionWebhooks.serviceName" -}}
{{- printf "%s-%s" (include "ingress-ts.controller.fullname" .) .Values.controller.admissionWebhooks.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* "true" when ingress-ts provisions the webhook's certificate itself (not cert-manager). */}}
{{- define "ingress-ts.admissionWebhooks.provisioned" -}}
{{- $w := .Values.controller.admissionWebhooks -}}
{{- if and $w.enabled (not $w.certManager.enabled) }}true{{ end -}}
{{- end -}}
