package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Where tofu runs (terraform.runner) and the settings of the job runner
// (terraform { job { ... } }, docs/scale.md).

// Runners: terraform.runner's values.
const (
	RunnerProcess = "process"
	RunnerJob     = "job"
)

// Job configures the job runner: each tofu command of a workspace runs in
// a Kubernetes Job from tfccm's image.
type Job struct {
	Namespace      string            `hcl:"namespace,optional" doc:"Where the runner Jobs, their input and result Secrets run and live: a namespace of their own, owned by the cluster admin, keeps the runner's right to create Secrets away from everything else. Never kube-system nor the kubernetes backend's namespace (runner pods read every state Secret); the Helm chart's is <release>-runners."`
	Image          string            `hcl:"image,optional" doc:"The runner image: tfccm's own (it carries tofu, the provider mirror and tfccm run). Required with runner = \"job\"; the Helm chart sets it to the CCM's image."`
	ServiceAccount string            `hcl:"service_account,optional" doc:"The runner pods' ServiceAccount (runner pods are untrusted code): it may create Secrets (its results) in the job namespace and use the state backend's Secrets and Leases, nothing else (the Helm chart ships it)."`
	NodeSelector   map[string]string `hcl:"node_selector,optional" doc:"Node labels a runner pod must match."`
	Tolerations    []string          `hcl:"tolerations,optional" doc:"Taints runner pods tolerate, as key[=value][:effect] (no effect: every effect)."`
	CPU            string            `hcl:"cpu,optional" doc:"CPU request of a runner pod."`
	Memory         string            `hcl:"memory,optional" doc:"Memory request of a runner pod."`
	MemoryLimit    string            `hcl:"memory_limit,optional" doc:"Memory limit of a runner pod (tofu killed above it: the run fails and is retried)."`
	HostNetwork    bool              `hcl:"host_network,optional" doc:"Runner pods on their node's network, like the CCM where tfccm routes the pod network itself (the routes workspace must run before pods can reach the apiserver); they then tolerate the route controller's node.kubernetes.io/network-unavailable taint. Admin: such pods need a runner namespace at Pod Security's privileged level (baseline refuses the host network)."`
	SecretMounts   map[string]string `hcl:"secret_mounts,optional" doc:"Secrets of the job namespace mounted read-only in runner pods, by path: files a provider reads by path (ssh_private_key_file) must be where the rendered workspace names them, e.g. { \"/etc/tfccm/ssh\" = \"tfccm-ssh\" }. Credentials in the CCM's environment reach runner pods through their input Secret."`
	Pool           int               `hcl:"pool,optional" doc:"Admin: N > 0 keeps a pool of N warm runner pods (a Deployment tfccm-runners-<owner> in the job namespace, spread over the nodes) and sends each tofu command to a free one through pods/exec, instead of a Job, its Secrets and a pod per command (docs/scale.md#runner-pool); 0 (the default) runs a Job per command. At most 64. The CCM then needs pods/exec get and create, pods get, list, delete and deployments get, create, update, delete in the job namespace (the Helm chart's runner.pool)."`
	PluginCache    string            `hcl:"plugin_cache,optional" doc:"Admin: a node directory (hostPath) every runner pod on a node shares as TF_PLUGIN_CACHE_DIR, so providers are copied from the image's mirror once per node (OpenTofu >= 1.10 makes the cache safe for concurrent runs). Unset (the default), each runner pod has a cache of its own and meets Pod Security's restricted level; a hostPath cache needs a runner namespace at the privileged level (hostPath volumes and a root init container that makes the directory the runner user's)."`
}

func (c *Config) finishRunner(k *checker) {
	t := c.Terraform
	switch t.Runner {
	case "":
		t.Runner = DefaultRunner
	case RunnerProcess, RunnerJob:
	default:
		k.errAt(at("terraform", "runner"), "Invalid runner", fmt.Sprintf("terraform.runner must be %q or %q, got %q.", RunnerProcess, RunnerJob, t.Runner))
		return
	}
	if t.Job == nil {
		t.Job = &Job{}
	}
	j := t.Job
	j.Namespace = orDefault(j.Namespace, DefaultJobNamespace)
	j.ServiceAccount = orDefault(j.ServiceAccount, DefaultJobServiceAccount)
	j.CPU = orDefault(j.CPU, DefaultJobCPU)
	j.Memory = orDefault(j.Memory, DefaultJobMemory)
	j.MemoryLimit = orDefault(j.MemoryLimit, DefaultJobMemoryLimit)
	if t.Runner != RunnerJob {
		return
	}
	if c.Backend == nil || c.Backend.Type == "" || c.Backend.Type == "local" {
		k.errAt(at("terraform", "runner"), "Runner needs remote state",
			`terraform.runner = "job" needs a remote state backend: a runner pod's files are gone when it ends, and the local backend keeps state there. Set a backend block (e.g. backend "kubernetes") or runner = "process".`)
	}
	if j.Image == "" {
		k.errAt(at("terraform", "job"), "Missing job image", `terraform.runner = "job" needs terraform { job { image = "..." } }: tfccm's own image.`)
	}
	for _, e := range validation.IsDNS1123Label(j.Namespace) {
		k.errAt(at("terraform", "job"), "Invalid job namespace", "terraform.job.namespace: "+e+".")
	}
	for _, e := range validation.IsDNS1123Subdomain(j.ServiceAccount) {
		k.errAt(at("terraform", "job"), "Invalid job service_account", "terraform.job.service_account: "+e+".")
	}
	for key, v := range j.NodeSelector {
		errs := append(validation.IsQualifiedName(key), validation.IsValidLabelValue(v)...)
		if len(errs) > 0 {
			k.errAt(at("terraform", "job"), "Invalid job node_selector", fmt.Sprintf("terraform.job.node_selector %q: %s.", key, strings.Join(errs, "; ")))
		}
	}
	for _, s := range j.Tolerations {
		if _, err := ParseToleration(s); err != nil {
			k.errAt(at("terraform", "job"), "Invalid job toleration", "terraform.job.tolerations: "+err.Error()+".")
		}
	}
	for name, q := range map[string]string{"cpu": j.CPU, "memory": j.Memory, "memory_limit": j.MemoryLimit} {
		if _, err := resource.ParseQuantity(q); err != nil {
			k.errAt(at("terraform", "job"), "Invalid job "+name, fmt.Sprintf("terraform.job.%s %q is not a quantity (e.g. 250m, 512Mi).", name, q))
		}
	}
	if req, err := resource.ParseQuantity(j.Memory); err == nil {
		if limit, err := resource.ParseQuantity(j.MemoryLimit); err == nil && req.Cmp(limit) > 0 {
			k.errAt(at("terraform", "job"), "Invalid job memory_limit", fmt.Sprintf("terraform.job.memory_limit %q is below terraform.job.memory %q (the request): Kubernetes refuses such a pod. Raise memory_limit or lower memory.", j.MemoryLimit, j.Memory))
		}
	}
	for p, name := range j.SecretMounts {
		if !strings.HasPrefix(p, "/") || len(validation.IsDNS1123Subdomain(name)) > 0 {
			k.errAt(at("terraform", "job"), "Invalid job secret_mounts", fmt.Sprintf("terraform.job.secret_mounts: %q = %q: an absolute path and a Secret's name.", p, name))
		}
	}
	if j.Pool < 0 || j.Pool > MaxJobPool {
		k.errAt(at("terraform", "job", "pool"), "Invalid job pool", fmt.Sprintf("terraform.job.pool = %d: want 0 (a Job per command) to %d warm runner pods.", j.Pool, MaxJobPool))
	}
	if j.PluginCache != "" && !strings.HasPrefix(j.PluginCache, "/") {
		k.errAt(at("terraform", "job"), "Invalid job plugin_cache", "terraform.job.plugin_cache must be an absolute path on the nodes.")
	}
}

// MaxJobPool is the most warm runner pods terraform.job.pool asks for.
const MaxJobPool = 64

// Toleration is one parsed terraform.job.tolerations entry.
type Toleration struct {
	Key, Value, Effect string
}

// ParseToleration parses key[=value][:effect]; effect is NoSchedule,
// PreferNoSchedule or NoExecute.
func ParseToleration(s string) (Toleration, error) {
	rest, effect, _ := strings.Cut(s, ":")
	key, value, _ := strings.Cut(rest, "=")
	t := Toleration{Key: key, Value: value, Effect: effect}
	switch effect {
	case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		return t, fmt.Errorf("%q: effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return t, fmt.Errorf("%q: key: %s", s, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return t, fmt.Errorf("%q: value: %s", s, strings.Join(errs, "; "))
	}
	return t, nil
}
