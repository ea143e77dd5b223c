{{/* The operator's name: <release>-operator unless overridden, at most 63 characters. */}}
{{- define "cliques.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (.Values.nameOverride | default "operator") | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cliques.selectorLabels" -}}
app.kubernetes.io/name: cliques-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cliques.labels" -}}
{{ include "cliques.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "cliques.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "cliques.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "cliques.image" -}}
{{- $repo := .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/* What values.schema.json cannot say about the values, refused at render time. */}}
{{- define "cliques.validate" -}}
{{- $l := .Values.leases -}}
{{- if and (not $l.enabled) (gt (int .Values.replicas) 1) -}}
{{- fail (printf "replicas: %v needs leases.enabled=true: without Leases every replica reconciles every CliqueSet, and nothing fences them from each other (set leases.enabled=true, or replicas: 1)" .Values.replicas) -}}
{{- end -}}
{{- if and $l.enabled (not (and (lt (float64 $l.retryPeriod) (float64 $l.renewDeadline)) (lt (float64 $l.renewDeadline) (float64 $l.leaseDuration)))) -}}
{{- fail "leases: need retryPeriod < renewDeadline < leaseDuration" -}}
{{- end -}}
{{- if and $l.enabled (le (float64 .Values.terminationGracePeriodSeconds) (addf $l.renewDeadline 5)) -}}
{{- fail "terminationGracePeriodSeconds must exceed leases.renewDeadline + 5 s (the shard drain), or the Leases expire instead of being handed back" -}}
{{- end -}}
{{- if and .Values.podDisruptionBudget.enabled (kindIs "invalid" .Values.podDisruptionBudget.maxUnavailable) (kindIs "invalid" .Values.podDisruptionBudget.minAvailable) -}}
{{- fail "podDisruptionBudget: set maxUnavailable or minAvailable" -}}
{{- end -}}
{{- end -}}
