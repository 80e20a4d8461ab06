{{/* The controller Pod template, shared by the Deployment and the DaemonSet. */}}
{{- define "ingress-ts.podTemplate" -}}
{{- $c := .Values.controller -}}
{{- $statusPort := include "ingress-ts.statusPort" . | int -}}
{{- $preStop := 0 -}}
{{- if and $c.lifecycle $c.lifecycle.preStop $c.lifecycle.preStop.sleep -}}
{{- $preStop = int $c.lifecycle.preStop.sleep.seconds -}}
{{- end -}}
{{- /* ports below 1024 for the non-root container: the network namespace's unprivileged port start */ -}}
{{- $sysctls := deepCopy (default (dict) $c.sysctls) -}}
{{- if or (lt (int $c.containerPort.http) 1024) (lt (int $c.containerPort.https) 1024) -}}
{{- if $c.hostNetwork -}}
{{- fail (printf "controller.containerPort.http (%v) and .https (%v) must be 1024 or above with controller.hostNetwork: the non-root container cannot bind the node's low ports (e.g. 8080 and 8443)" $c.containerPort.http $c.containerPort.https) -}}
{{- end -}}
{{- if not (hasKey $sysctls "net.ipv4.ip_unprivileged_port_start") -}}
{{- $_ := set $sysctls "net.ipv4.ip_unprivileged_port_start" "0" -}}
{{- end -}}
{{- end -}}
{{- /* TCP/UDP service ports below 1024 (DNS on 53) need it too */ -}}
{{- range $port, $_ := merge (deepCopy (default (dict) .Values.tcp)) (default (dict) .Values.udp) -}}
{{- if and (lt (int $port) 1024) (not $c.hostNetwork) (not (hasKey $sysctls "net.ipv4.ip_unprivileged_port_start")) -}}
{{- $_ := set $sysctls "net.ipv4.ip_unprivileged_port_start" "0" -}}
{{- end -}}
{{- end -}}
{{- if and $c.admissionWebhooks.enabled (has (int $c.admissionWebhooks.port) (list (int $c.containerPort.http) (int $c.containerPort.https) $statusPort)) -}}
{{- fail (printf "controller.admissionWebhooks.port (%v) is already a port of the controller (http, https or status): choose another" $c.admissionWebhooks.port) -}}
{{- end -}}
{{- if le (int $c.terminationGracePeriodSeconds) (add $preStop (ceil $c.shutdownGracePeriod | int)) -}}
{{- fail (printf "controller.terminationGracePeriodSeconds (%v) must exceed the preStop sleep (%d) plus controller.shutdownGracePeriod (%v): the kubelet would kill the Pod before it drained" $c.terminationGracePeriodSeconds $preStop $c.shutdownGracePeriod) -}}
{{- end -}}
metadata:
  labels:
    {{- include "ingress-ts.controller.selectorLabels" . | nindent 4 }}
    {{- with $c.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- /* No checksum of the ConfigMap here: ingress-ts watches it and applies a change without a restart. */}}
  {{- with $c.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "ingress-ts.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  hostNetwork: {{ $c.hostNetwork }}
  dnsPolicy: {{ ternary "ClusterFirstWithHostNet" $c.dnsPolicy (and $c.hostNetwork (eq $c.dnsPolicy "ClusterFirst")) }}
  terminationGracePeriodSeconds: {{ $c.terminationGracePeriodSeconds }}
  securityContext:
    {{- with $c.podSecurityContext }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- if $sysctls }}
    sysctls:
      {{- range $name, $value := $sysctls }}
      - name: {{ $name | quote }}
        value: {{ $value | quote }}
      {{- end }}
    {{- end }}
  containers:
    - name: {{ $c.containerName }}
      image: {{ include "ingress-ts.image" . | quote }}
      imagePullPolicy: {{ $c.image.pullPolicy }}
      args:
        {{- include "ingress-ts.params" . | nindent 8 }}
      env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: NODE_ENV
          value: production
        {{- with $c.extraEnvs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: http
          containerPort: {{ $c.containerPort.http }}
          protocol: TCP
          {{- if $c.hostPort.enabled }}
          hostPort: {{ $c.hostPort.ports.http }}
          {{- end }}
        - name: https
          containerPort: {{ $c.containerPort.https }}
          protocol: TCP
          {{- if $c.hostPort.enabled }}
          hostPort: {{ $c.hostPort.ports.https }}
          {{- end }}
        - name: {{ $c.metrics.portName }}
          containerPort: {{ $statusPort }}
          protocol: TCP
        {{- if $c.admissionWebhooks.enabled }}
        - name: webhook
          containerPort: {{ $c.admissionWebhooks.port }}
          protocol: TCP
        {{- end }}
        {{- range $protocol := list "tcp" "udp" }}
        {{- range $port, $_ := index $.Values $protocol }}
        - name: {{ include "ingress-ts.streamPortName" (list $ $port $protocol) }}
          containerPort: {{ $port }}
          protocol: {{ upper $protocol }}
          {{- if $c.hostPort.enabled }}
          hostPort: {{ $port }}
          {{- end }}
        {{- end }}
        {{- end }}
      {{- with $c.lifecycle }}
      lifecycle:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      livenessProbe:
        {{- toYaml (merge (deepCopy $c.livenessProbe) (dict "httpGet" (dict "port" $statusPort))) | nindent 8 }}
      readinessProbe:
        {{- toYaml (merge (deepCopy $c.readinessProbe) (dict "httpGet" (dict "port" $statusPort "path" $c.healthCheckPath))) | nindent 8 }}
      securityContext:
        {{- $security := dict
          "runAsNonRoot" true
          "runAsUser" $c.image.runAsUser
          "runAsGroup" $c.image.runAsGroup
          "allowPrivilegeEscalation" $c.image.allowPrivilegeEscalation
          "readOnlyRootFilesystem" $c.image.readOnlyRootFilesystem
          "capabilities" (dict "drop" (list "ALL"))
          "seccompProfile" (dict "type" "RuntimeDefault") }}
        {{- toYaml (mergeOverwrite $security $c.containerSecurityContext) | nindent 8 }}
      {{- with $c.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
  {{- with $c.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- tpl (toYaml .) $ | nindent 4 }}
  {{- end }}
{{- end -}}
