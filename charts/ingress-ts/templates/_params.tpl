{{/* The controller's command-line flags; every one of them exists in `ingress-ts --help` (a test checks). */}}
{{- define "ingress-ts.params" -}}
- --http-port={{ .Values.controller.containerPort.http }}
- --https-port={{ .Values.controller.containerPort.https }}
- --healthz-port={{ include "ingress-ts.statusPort" . }}
- --enable-metrics={{ .Values.controller.metrics.enabled }}
{{- if not .Values.controller.debugPages.enabled }}
- --enable-debug-pages=false
{{- end }}
- --controller-class={{ .Values.controller.ingressClassResource.controllerValue }}
- --ingress-class={{ .Values.controller.ingressClass }}
{{- if .Values.controller.ingressClassByName }}
- --ingress-class-by-name=true
{{- end }}
{{- if .Values.controller.watchIngressWithoutClass }}
- --watch-ingress-without-class=true
{{- end }}
- --configmap=$(POD_NAMESPACE)/{{ include "ingress-ts.controller.fullname" . }}
{{- if .Values.tcp }}
- --tcp-services-configmap={{ default "$(POD_NAMESPACE)" .Values.controller.tcp.configMapNamespace }}/{{ include "ingress-ts.fullname" . }}-tcp
{{- end }}
{{- if .Values.udp }}
- --udp-services-configmap={{ default "$(POD_NAMESPACE)" .Values.controller.udp.configMapNamespace }}/{{ include "ingress-ts.fullname" . }}-udp
{{- end }}
{{- if .Values.controller.disableLeaderElection }}
- --disable-leader-election=true
{{- else }}
- --election-id={{ include "ingress-ts.electionID" . }}
{{- with .Values.controller.electionTTL }}
- --election-ttl={{ . }}
{{- end }}
{{- end }}
{{- with include "ingress-ts.publishService" . }}
- --publish-service={{ . }}
{{- end }}
{{- if and (eq (include "ingress-ts.updateStatus" .) "true") (not (hasKey .Values.controller.extraArgs "update-status")) }}
- --update-status=true
{{- end }}
{{- if .Values.controller.scope.enabled }}
{{- with .Values.controller.scope.namespaceSelector }}
- {{ printf "--watch-namespace-selector=%s" . | quote }}
{{- else }}
- --watch-namespace={{ include "ingress-ts.watchNamespace" . }}
{{- end }}
{{- end }}
- --shutdown-grace-period={{ .Values.controller.shutdownGracePeriod }}
{{- if .Values.controller.gatewayAPI.enabled }}
- --gateway-controller-name={{ .Values.controller.gatewayAPI.controllerName }}
{{- else }}
- --enable-gateway-api=false
{{- end }}
{{- with .Values.controller.admissionWebhooks }}
{{- if .enabled }}
- --validating-webhook=:{{ .port }}
- --validating-webhook-secret={{ include "ingress-ts.namespace" $ }}/{{ include "ingress-ts.admissionWebhooks.fullname" $ }}
{{- if not .certManager.enabled }}
- --validating-webhook-service={{ include "ingress-ts.namespace" $ }}/{{ include "ingress-ts.admissionWebhooks.serviceName" $ }}
- --validating-webhook-configuration={{ include "ingress-ts.admissionWebhooks.fullname" $ }}
{{- end }}
{{- end }}
{{- end }}
{{- range $key, $value := .Values.controller.extraArgs }}
{{- if or (kindIs "invalid" $value) (eq (toString $value) "") (eq (toString $value) "true") }}
- --{{ $key }}
{{- else }}
- {{ printf "--%s=%s" $key (tpl (toString $value) $) | quote }}
{{- end }}
{{- end }}
{{- end -}}
