{{- define "airlock.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "airlock.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "airlock.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ include "airlock.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "airlock.selector" -}}
app.kubernetes.io/name: {{ include "airlock.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* One of the three images (`name`: api, node or proxy): <registry>/airlock-<name>, or its
own repository; pulled by digest when one is given, else by tag (its own, image.tag, or the
chart's appVersion). */}}
{{- define "airlock.image" -}}
{{- $images := .root.Values.image -}}
{{- $own := index $images .name -}}
{{- $registry := $images.registry | trimSuffix "/" -}}
{{- $repository := $own.repository | default (ternary (printf "%s/airlock-%s" $registry .name) (printf "airlock-%s" .name) (ne $registry "")) -}}
{{- if $own.digest -}}
{{ $repository }}@{{ $own.digest }}
{{- else -}}
{{ $repository }}:{{ $own.tag | default $images.tag | default .root.Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "airlock.keysSecret" -}}
{{- .Values.keys.existingSecret | default (printf "%s-keys" (include "airlock.fullname" .)) -}}
{{- end -}}

{{/* The Secret holding the database URL, and its key: the chart's own when database.url is
set, else database.existingSecret (CloudNativePG's app Secret by default). */}}
{{- define "airlock.databaseSecret" -}}
{{- if .Values.database.url -}}
{{- printf "%s-database" (include "airlock.fullname" .) -}}
{{- else -}}
{{- required "database.url or database.existingSecret is required" .Values.database.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "airlock.databaseSecretKey" -}}
{{- ternary "url" .Values.database.existingSecretKey (ne .Values.database.url "") -}}
{{- end -}}

{{- define "airlock.databaseEnv" -}}
- name: AIRLOCK_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "airlock.databaseSecret" . }}
      key: {{ include "airlock.databaseSecretKey" . }}
{{- end -}}

{{/* The settings every process shares; `role` is api or node. */}}
{{- define "airlock.env" -}}
- name: AIRLOCK_ROLE
  value: {{ .role }}
- name: AIRLOCK_ENV
  value: {{ .root.Values.config.env | quote }}
- name: AIRLOCK_LOG_LEVEL
  value: {{ .root.Values.config.logLevel | quote }}
- name: AIRLOCK_HOST
  value: "0.0.0.0"
{{ include "airlock.databaseEnv" .root }}
{{- if eq .role "api" }}
- name: AIRLOCK_OPERATOR_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "airlock.keysSecret" .root }}
      key: operator-key
{{- end }}
# /metrics answers this token alone, on the API replicas and on the nodes.
- name: AIRLOCK_METRICS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "airlock.keysSecret" .root }}
      key: metrics-token
- name: AIRLOCK_JWT_KEYS_DIR
  value: /etc/airlock/jwt
- name: AIRLOCK_AUDIT_KEY_FILE
  value: /etc/airlock/keys/audit.key
- name: AIRLOCK_SECRETS_KEY_FILE
  value: /etc/airlock/keys/secrets.key
- name: AIRLOCK_NODE_LEASE_S
  value: {{ .root.Values.config.nodeLeaseSeconds | quote }}
- name: AIRLOCK_NODE_HEARTBEAT_S
  value: {{ .root.Values.config.nodeHeartbeatSeconds | quote }}
- name: AIRLOCK_CPU_OVERCOMMIT
  value: {{ .root.Values.config.cpuOvercommit | quote }}
- name: AIRLOCK_MEMORY_OVERCOMMIT
  value: {{ .root.Values.config.memoryOvercommit | quote }}
{{- with .root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "airlock.keyVolumes" -}}
- name: jwt
  secret:
    secretName: {{ include "airlock.keysSecret" . }}
    defaultMode: 0400
    items:
      - key: signing-key.pem
        path: signing-key.pem
- name: keys
  secret:
    secretName: {{ include "airlock.keysSecret" . }}
    defaultMode: 0400
    items:
      - key: audit.key
        path: audit.key
      - key: secrets.key
        path: secrets.key
{{- end -}}

{{- define "airlock.keyMounts" -}}
- name: jwt
  mountPath: /etc/airlock/jwt
  readOnly: true
- name: keys
  mountPath: /etc/airlock/keys
  readOnly: true
{{- end -}}

{{/* The probes of a container serving Airlock on the named port. */}}
{{- define "airlock.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 2
  failureThreshold: 90
livenessProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 10
  timeoutSeconds: 3
readinessProbe:
  httpGet: {path: /readyz, port: {{ . }}}
  periodSeconds: 5
  timeoutSeconds: 3
{{- end -}}

{{- define "airlock.restrictedSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
