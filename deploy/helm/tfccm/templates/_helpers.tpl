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

{{/* The state's namespace: a value, else <fullname>-state. */}}
{{- define "tfccm.stateNamespace" -}}
{{- default (printf "%s-state" (include "tfccm.fullname" . | trunc 57 | trimSuffix "-")) .Values.stateBackend.kubernetes.namespace -}}
{{- end -}}

{{/* The runner Jobs' namespace: a value, else <fullname>-runners. */}}
{{- define "tfccm.runnerNamespace" -}}
{{- default (printf "%s-runners" (include "tfccm.fullname" . | trunc 55 | trimSuffix "-")) .Values.runner.namespace -}}
{{- end -}}

{{/* "true" when tfccm publishes plans for approval: review.enabled, or a
cloud config the chart writes with policy or change_windows blocks. */}}
{{- define "tfccm.publishesPlans" -}}
{{- if or .Values.review.enabled (regexMatch "(?m)^\\s*(policy|change_windows)[\\s{\"]" .Values.cloudConfig.inline) -}}
true
{{- end -}}
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
{{- if not .Values.cloudConfig.existingConfigMap -}}
{{- $c := .Values.cloudConfig -}}
{{- if not $c.templateSet -}}
{{- fail "cloudConfig.templateSet is required: the template set of your cloud (baremetal, hcloud, digitalocean, oci, openstack, google, exoscale, proxmox, vsphere); deploy/helm/tfccm/examples/ has a values file per set (or set cloudConfig.existingConfigMap)" -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9][a-z0-9_-]{0,62}$" $c.templateSet) -}}
{{- fail (printf "cloudConfig.templateSet %q is not a template set name" $c.templateSet) -}}
{{- end -}}
{{- if not $c.clusterName -}}
{{- fail "cloudConfig.clusterName is required: the cluster's name in every workspace and resource tfccm creates (1-63 of a-z, 0-9 and -, starting with a letter)" -}}
{{- end -}}
{{- if not (regexMatch "^[a-z][a-z0-9-]{0,62}$" $c.clusterName) -}}
{{- fail (printf "cloudConfig.clusterName %q must be 1-63 of a-z, 0-9 and -, starting with a letter" $c.clusterName) -}}
{{- end -}}
{{- if .Values.baremetal.hosts -}}
{{- if ne $c.templateSet "baremetal" -}}
{{- fail (printf "baremetal.hosts is set but cloudConfig.templateSet is %q: the typed baremetal values are the baremetal set's (set templateSet: baremetal)" $c.templateSet) -}}
{{- end -}}
{{- if not $.Values.sshKey.existingSecret -}}
{{- fail "sshKey.existingSecret is required with baremetal.hosts: the Secret (in the release namespace) holding tfccm's SSH private key for the LB hosts, under sshKey.key" -}}
{{- end -}}
{{- if regexMatch "(?m)^\\s*baremetal_values_file\\s*=" $c.inline -}}
{{- fail "cloudConfig.inline sets baremetal_values_file: the chart writes it from baremetal.hosts" -}}
{{- end -}}
{{- end -}}
{{- if regexMatch "(?m)^namespace\\s*=" $c.inline -}}
{{- fail "cloudConfig.inline sets namespace: the chart writes it (tfccm's own namespace is the release namespace)" -}}
{{- end -}}
{{- range $name := list "cluster_name" "template_set" "work_dir" "override_dir" "load_balancer_class" "serve_classless" -}}
{{- if regexMatch (printf "(?m)^\\s*%s\\s*=" $name) $c.inline -}}
{{- fail (printf "cloudConfig.inline sets %s: the chart writes it (from cloudConfig.clusterName, templateSet, loadBalancerClass, serveClassless, the image's work dir and the templates value)" $name) -}}
{{- end -}}
{{- end -}}
{{- if regexMatch "(?m)^\\s*terraform\\s*\\{" $c.inline -}}
{{- fail "cloudConfig.inline has a terraform block: the chart writes it; put its attributes in cloudConfig.terraform" -}}
{{- end -}}
{{- if regexMatch "(?m)^\\s*review\\s*=" $c.terraform -}}
{{- fail "cloudConfig.terraform sets review: set review.enabled instead (the chart then writes it and grants review mode's rights in the release namespace)" -}}
{{- end -}}
{{- if and (eq .Values.stateBackend.type "kubernetes") (regexMatch "(?m)^\\s*backend\\s" $c.inline) -}}
{{- fail "cloudConfig.inline has a backend block: with stateBackend.type=kubernetes the chart adds it; set stateBackend.type=none to keep your own" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.credentials.existingSecret (not .Values.credentials.keys) -}}
{{- fail "credentials.keys is required with credentials.existingSecret: list the Secret's keys (each becomes an environment variable of that name and is passed to tofu)" -}}
{{- end -}}
{{- if and .Values.credentials.keys (not .Values.credentials.existingSecret) -}}
{{- fail "credentials.keys needs credentials.existingSecret" -}}
{{- end -}}
{{- range .Values.credentials.keys -}}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" .) -}}
{{- fail (printf "credentials.keys: %q is not an environment variable name" .) -}}
{{- end -}}
{{- end -}}
{{- $state := include "tfccm.stateNamespace" . -}}
{{- $runners := include "tfccm.runnerNamespace" . -}}
{{- if and (eq .Values.stateBackend.type "kubernetes") (eq $state "kube-system") -}}
{{- fail "stateBackend.kubernetes.namespace kube-system: whoever reads the state Secrets (tfccm, runner pods) could read the cluster's own Secrets beside them; leave it empty for <release>-state or name a namespace of its own" -}}
{{- end -}}
{{- if and (eq .Values.stateBackend.type "kubernetes") (ne $state .Release.Namespace) -}}
{{- /* helm install/upgrade only (lookup finds nothing in helm template):
state a chart from before the state's own namespace left in the release
namespace, which a CCM looking in $state would not find. */ -}}
{{- range (get (lookup "v1" "Secret" .Release.Namespace "") "items" | default list) -}}
{{- if eq (dig "metadata" "labels" "tfstate" "" .) "true" -}}
{{- fail (printf "the release namespace %s holds Terraform state (Secret %s, label tfstate=true) of an earlier chart, which kept the state there; the state now lives in %s: move the tfstate=true Secrets there first (docs/install.md#namespaces-and-rbac), or tfccm would find no state and create every load balancer anew" $.Release.Namespace .metadata.name $state) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if .Values.runner.enabled -}}
{{- if eq $runners "kube-system" -}}
{{- fail "runner.namespace kube-system: tfccm starts Jobs and reads Secrets there and runner pods create Secrets there, which in kube-system reaches the cluster's own ServiceAccounts and Secrets; leave it empty for <release>-runners or name a namespace of its own" -}}
{{- end -}}
{{- if or (eq $runners $state) (eq $runners .Release.Namespace) -}}
{{- fail (printf "runner.namespace %s is the state's or the release's namespace: runner pods would read every Secret of the state's namespace, and create Secrets beside tfccm's own; give the runners a namespace of their own" $runners) -}}
{{- end -}}
{{- if and (eq .Values.stateBackend.type "kubernetes") (eq $state .Release.Namespace) -}}
{{- fail (printf "stateBackend.kubernetes.namespace %s is the release namespace: with runner.enabled, runner pods (untrusted code) would read every Secret there, the plan key and credentials included; give the state a namespace of its own" $state) -}}
{{- end -}}
{{- end -}}
{{- if eq .Release.Namespace "kube-system" -}}
{{- if include "tfccm.publishesPlans" . -}}
{{- fail "review.enabled (or policy/change_windows blocks) in the release namespace kube-system: publishing plans needs Secret create and get in the release namespace, which in kube-system would reach every control-plane Secret (tokens of any ServiceAccount there); install tfccm into a namespace of its own, e.g. helm install -n tfccm-system --create-namespace" -}}
{{- end -}}
{{- if .Values.review.approvers -}}
{{- fail "review.approvers in the release namespace kube-system: approvers patch ConfigMaps of the release namespace, which in kube-system would reach the control plane's own; install tfccm into a namespace of its own, e.g. helm install -n tfccm-system --create-namespace" -}}
{{- end -}}
{{- end -}}
{{- range .Values.review.approvers -}}
{{- if not (has .kind (list "Group" "User" "ServiceAccount")) -}}
{{- fail (printf "review.approvers: kind %v must be Group, User or ServiceAccount" .kind) -}}
{{- end -}}
{{- if not .name -}}
{{- fail "review.approvers: every subject needs a name" -}}
{{- end -}}
{{- if and (eq .kind "ServiceAccount") (not .namespace) -}}
{{- fail (printf "review.approvers: ServiceAccount %s needs a namespace" .name) -}}
{{- end -}}
{{- end -}}
{{- if not (has .Values.uninstall.loadBalancers (list "refuse" "delete" "none")) -}}
{{- fail (printf "uninstall.loadBalancers must be refuse, delete or none, not %q" .Values.uninstall.loadBalancers) -}}
{{- end -}}
{{- if not (regexMatch "^([0-9]|10)$" (toString .Values.logLevel)) -}}
{{- fail (printf "logLevel must be a number from 0 to 10, not %v" .Values.logLevel) -}}
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

{{/* The cloud config the chart writes (cloudConfig.existingConfigMap unset). */}}
{{- define "tfccm.cloudConfig" -}}
{{- $c := .Values.cloudConfig -}}
# Written by the tfccm chart from cloudConfig.clusterName, templateSet,
# terraform and inline, credentials.keys and stateBackend.
cluster_name = {{ $c.clusterName | quote }}
# tfccm's own namespace: the release's.
namespace    = {{ .Release.Namespace | quote }}
template_set = {{ $c.templateSet | quote }}
work_dir     = "/var/lib/tfccm"
{{- with $c.loadBalancerClass }}
load_balancer_class = {{ . | quote }}
{{- end }}
{{- if eq (toString $c.serveClassless) "false" }}
serve_classless = false
{{- end }}
{{- if or .Values.templates.files .Values.templates.existingConfigMap }}
override_dir = "/etc/tfccm/templates"
{{- end }}
{{- if .Values.baremetal.hosts }}
# baremetal: the hosts, VIP pools and VRRP from the typed values.
baremetal_values_file = "baremetal.json"
{{- end }}

terraform {
  # The image's OpenTofu CLI config: providers from its mirror, held to the
  # checksums written when the image was built.
  cli_config_file = "/etc/tfccm/tofurc"
  provider_lock_file = "/usr/local/share/tfccm/providers.lock.hcl"
  {{- with .Values.credentials.keys }}
  # credentials.keys
  pass_env = [{{ range $i, $k := . }}{{ if $i }}, {{ end }}{{ $k | quote }}{{ end }}]
  {{- end }}
  {{- with $c.terraform }}
  {{- . | trimSuffix "\n" | nindent 2 }}
  {{- end }}
  {{- if .Values.review.enabled }}
  # review.enabled
  review = true
  {{- end }}
  {{- if .Values.runner.enabled }}
  # runner.enabled
  runner = "job"
  job {
    namespace       = {{ include "tfccm.runnerNamespace" . | quote }}
    image           = {{ include "tfccm.image" . | quote }}
    service_account = {{ .Values.runner.serviceAccount | quote }}
    cpu             = {{ .Values.runner.cpu | quote }}
    memory          = {{ .Values.runner.memory | quote }}
    memory_limit    = {{ .Values.runner.memoryLimit | quote }}
    {{- if gt (int .Values.runner.pool) 0 }}
    pool            = {{ int .Values.runner.pool }}
    {{- end }}
    {{- if .Values.runner.hostNetwork }}
    host_network    = true
    {{- end }}
    {{- if or .Values.sshKey.existingSecret (include "tfccm.bgpSecret" .) }}
    # sshKey: where the rendered workspaces name the key
    secret_mounts   = { {{ with .Values.sshKey.existingSecret }}"/etc/tfccm/ssh" = {{ . | quote }}{{ end }}{{ if and .Values.sshKey.existingSecret (include "tfccm.bgpSecret" .) }}, {{ end }}{{ with include "tfccm.bgpSecret" . }}"/etc/tfccm/bgp" = {{ . | quote }}{{ end }} }
    {{- end }}
    {{- with .Values.runner.nodeSelector }}
    node_selector   = { {{ range $k, $v := . }}{{ $k | quote }} = {{ $v | quote }}, {{ end }}}
    {{- end }}
    {{- with .Values.runner.tolerations }}
    tolerations     = [{{ range $i, $t := . }}{{ if $i }}, {{ end }}{{ $t | quote }}{{ end }}]
    {{- end }}
  }
  {{- end }}
}
{{- with $c.inline }}

{{ . | trimSuffix "\n" }}
{{- end }}
{{- if eq .Values.stateBackend.type "kubernetes" }}

# stateBackend.type=kubernetes
backend "kubernetes" {
  namespace         = {{ include "tfccm.stateNamespace" . | quote }}
  in_cluster_config = true
}
{{- end }}
{{- end -}}

{{/* The Secret holding the BGP sessions' password (baremetal.bgp.passwordSecret), mounted at /etc/tfccm/bgp; "" without. */}}
{{- define "tfccm.bgpSecret" -}}
{{- if .Values.baremetal.hosts -}}{{- with .Values.baremetal.bgp -}}{{- .passwordSecret | default "" -}}{{- end -}}{{- end -}}
{{- end -}}

{{/* baremetal.json: the baremetal value as given and where sshKey is
mounted, as JSON (config.BaremetalValues converts it). */}}
{{- define "tfccm.baremetalValues" -}}
{{- $b := deepCopy .Values.baremetal -}}
{{- $_ := set $b "sshPrivateKeyFile" (printf "/etc/tfccm/ssh/%s" .Values.sshKey.key) -}}
{{- if not $b.bgp -}}
{{- $_ := unset $b "bgp" -}}
{{- else if $b.bgp.passwordSecret -}}
{{- $_ := set $b.bgp "passwordFile" "/etc/tfccm/bgp/password" -}}
{{- end -}}
{{- toPrettyJson $b -}}
{{- end -}}

{{/* The pods' tolerations: the chart's own, then the tolerations value. */}}
{{- define "tfccm.tolerations" -}}
- key: node.cloudprovider.kubernetes.io/uninitialized
  value: "true"
  effect: NoSchedule
- key: node-role.kubernetes.io/control-plane
  effect: NoSchedule
{{- if and (ne .Values.mode "daemonset") .Values.hostNetwork }}
# What the DaemonSet controller gives host-network pods: tfccm's route
# controller marks nodes network-unavailable until their routes exist,
# and only tfccm creates them.
- key: node.kubernetes.io/network-unavailable
  operator: Exists
  effect: NoSchedule
{{- end }}
{{- with .Values.tolerations }}
{{ toYaml . }}
{{- end }}
{{- end -}}
