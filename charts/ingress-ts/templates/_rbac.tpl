{{/* Least privilege (docs/helm.md, "RBAC, least privilege"): reads of what the model is built from, the status
subresource (read back before it is replaced), and Events. In the ClusterRole when every namespace is
served, else in a Role in the one namespace served. */}}
{{- define "ingress-ts.rbac.servedRules" -}}
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["services", "secrets", "configmaps"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
{{- if eq (include "ingress-ts.updateStatus" .) "true" }}
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses/status"]
  verbs: ["get", "update"]
{{- end }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- include "ingress-ts.rbac.gatewayServedRules" . }}
{{- end -}}

{{/* The Gateway API's namespaced kinds (controller.gatewayAPI.enabled), beside the Ingress reads: read,
and their status written by the leader (read back, then replaced: get and update, as Ingress status). */}}
{{- define "ingress-ts.rbac.gatewayServedRules" -}}
{{- if .Values.controller.gatewayAPI.enabled }}
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways", "httproutes", "referencegrants"]
  verbs: ["get", "list", "watch"]
{{- if include "ingress-ts.gatewayAPI.writesStatus" . }}
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways/status", "httproutes/status"]
  verbs: ["get", "update"]
{{- end }}
{{- end }}
{{- end -}}

{{/* The Gateway API status is written unless --update-status=false is given (extraArgs): without a
published address it is still written (the conditions), only its addresses are left out. */}}
{{- define "ingress-ts.gatewayAPI.writesStatus" -}}
{{- if ne (toString (index .Values.controller.extraArgs "update-status")) "false" -}}
true
{{- end -}}
{{- end -}}
