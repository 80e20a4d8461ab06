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
{{- end -}}
