{{/* Full name: the release name, or release-chart when it lacks "tfccm". */}}
{{- define "tfccm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tfccm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tfccm.labels" -}}
{{ include "tfccm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tfccm.serviceAccountName" -}}
{{- default (include "tfccm.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "tfccm.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "tfccm.stateNamespace" -}}
{{- default .Release.Namespace .Values.stateBackend.kubernetes.namespace -}}
{{- end -}}

{{- define "tfccm.cloudConfigName" -}}
{{- default (printf "%s-cloud-config" (include "tfccm.fullname" .)) .Values.cloudConfig.existingConfigMap -}}
{{- end -}}

{{/* ConfigMap key of a template file: a hash of its path (keys cannot hold "/") and its base name. */}}
{{- define "tfccm.templateKey" -}}
{{- printf "%s-%s" (sha256sum . | trunc 10) (base .) -}}
{{- end -}}

{{- define "tfccm.validate" -}}
{{- if not (has .Values.mode (list "deployment" "daemonset")) -}}
{{- fail (printf "mode must be deployment or daemonset, not %q" .Values.mode) -}}
{{- end -}}
{{- if not (has .Values.stateBackend.type (list "kubernetes" "none")) -}}
{{- fail (printf "stateBackend.type must be kubernetes or none, not %q" .Values.stateBackend.type) -}}
{{- end -}}
{{- if and (not .Values.cloudConfig.existingConfigMap) (not .Values.cloudConfig.inline) -}}
{{- fail "set cloudConfig.inline or cloudConfig.existingConfigMap" -}}
{{- end -}}
{{- if and (not .Values.cloudConfig.existingConfigMap) (eq .Values.stateBackend.type "kubernetes") (regexMatch "(?m)^\\s*backend\\s" .Values.cloudConfig.inline) -}}
{{- fail "cloudConfig.inline has a backend block: with stateBackend.type=kubernetes the chart adds it; set stateBackend.type=none to keep your own" -}}
{{- end -}}
{{- if and .Values.templates.files .Values.templates.existingConfigMap -}}
{{- fail "set templates.files or templates.existingConfigMap, not both" -}}
{{- end -}}
{{- range $path, $_ := .Values.templates.files -}}
{{- if or (isAbs $path) (has ".." (splitList "/" $path)) (hasPrefix "." (base $path)) (hasSuffix "/" $path) -}}
{{- fail (printf "templates.files: %q must be a relative file path without \"..\" and not a dot file" $path) -}}
{{- end -}}
{{- end -}}
{{- end -}}
