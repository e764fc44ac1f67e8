package jobrunner

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EnvConfig names the variable that carries the stand-in's Config (JSON):
// its presence makes the CCM's binary the stand-in (IsClient).
const EnvConfig = "TFCCM_JOB_RUNNER"

// Config is the job runner's configuration, from terraform { job { ... } }
// and the engine's settings.
type Config struct {
	Namespace      string                      `json:"namespace"`
	Image          string                      `json:"image"`
	ServiceAccount string                      `json:"serviceAccount"`
	NodeSelector   map[string]string           `json:"nodeSelector,omitempty"`
	Tolerations    []corev1.Toleration         `json:"tolerations,omitempty"`
	Resources      corev1.ResourceRequirements `json:"resources"`
	// HostNetwork runs runner pods on their node's network: where tfccm
	// routes the pod network itself (its routes workspace runs before
	// pods can reach the apiserver).
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// SecretMounts are Secrets mounted read-only (0440, the runner's
	// group) in runner pods, by path.
	SecretMounts map[string]string `json:"secretMounts,omitempty"`
	// PluginCache, when set, is the node directory (hostPath) runner
	// pods share as TF_PLUGIN_CACHE_DIR; "" is a cache of the pod's own
	// (emptyDir), which keeps runner pods within Pod Security's
	// restricted level.
	PluginCache string `json:"pluginCache,omitempty"`
	// StateToken: the state backend reads the pod's ServiceAccount token
	// (backend "kubernetes", in_cluster_config), so tofu's container gets
	// a short-lived one. Otherwise only the container that writes the
	// result Secrets has a token, and it starts after tofu's has ended.
	StateToken bool `json:"stateToken,omitempty"`
	// WorkDir is the engine's work_dir: a command's workspace is its
	// directory's path under it ("lb-...", or ".probes/lb-.../health" for a
	// probe's copy), which names its Jobs; "" names it by the directory's
	// base name.
	WorkDir string `json:"workDir,omitempty"`
	// Identity is the controller's identity (workspace.Options.Identity):
	// Jobs carry its hash, so that controllers never adopt, wait for or
	// unlock each other's runs.
	Identity string `json:"identity"`
	// Tofu is the local tofu, which answers `version` (terraform-exec
	// asks it before some commands) without a Job.
	Tofu string `json:"tofu"`
	// Deadline bounds a Job (the engine's timeout plus its grace period);
	// Grace is the pod's termination grace period.
	Deadline time.Duration `json:"deadline"`
	Grace    time.Duration `json:"grace"`
	// Pool > 0 runs commands in a pool of that many warm runner pods
	// (pool.go) instead of a Job per command.
	Pool int `json:"pool,omitempty"`
	// Poll is how often the stand-in reads its Job's status (default 1s;
	// every 10 polls while a watch of the Job tells it of changes).
	Poll time.Duration `json:"poll,omitempty"`
	// Kubeconfig, when set, is how the stand-in reaches the apiserver;
	// else in-cluster (KubeHost, KubePort: the CCM's
	// KUBERNETES_SERVICE_HOST and _PORT, which terraform-exec's explicit
	// environment does not pass on).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	KubeHost   string `json:"kubeHost,omitempty"`
	KubePort   string `json:"kubePort,omitempty"`
}

// Labels and annotations on runner Jobs, pods and Secrets.
const (
	LabelRunner    = "tfccm.io/runner"    // "job"
	LabelOwner     = "tfccm.io/owner"     // hash of Config.Identity
	LabelWorkspace = "tfccm.io/workspace" // hash of the workspace name
	LabelCommand   = "tfccm.io/command"   // tofu's subcommand
	LabelJob       = "tfccm.io/job"       // on Secrets: the Job they belong to
	AnnoWorkspace  = "tfccm.io/workspace-name"
	AnnoParts      = "tfccm.io/parts"
)

// namePrefix starts every runner Job's name: tfccm-run-<owner>-<workspace>-<random>,
// 10+6+1+10+1+6 = 34 characters (a pod name, the Job's plus "-xxxxx",
// stays a valid host name). The runner runs tofu as a user without a
// passwd entry and USER set to the Job's name, so the "Who" of every state
// lock its tofu takes is "<job name>@<host>" (Locks.Gone), whatever the
// host name (a host-network pod has its node's).
const namePrefix = "tfccm-run-"

func hashOf(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func ownerHash(identity string) string { return hashOf(identity, 6) }

// workspaceHash is the label value naming a workspace (names can be
// longer than a label value).
func workspaceHash(name string) string { return hashOf(name, 32) }

// jobName is a new Job's name for workspace ws.
func (c *Config) jobName(ws string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return namePrefix + ownerHash(c.Identity) + "-" + hashOf(ws, 10) + "-" + hex.EncodeToString(b[:])
}

// workspaceOf is the workspace a command in dir runs for: dir's path
// under WorkDir, so that directories of the same base name (every probe's
// copy is "health") are different workspaces.
func (c *Config) workspaceOf(dir string) string {
	if c.WorkDir != "" {
		if rel, err := filepath.Rel(c.WorkDir, dir); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(dir)
}

// selector selects this controller's Jobs of workspace ws.
func (c *Config) selector(ws string) string {
	return LabelOwner + "=" + ownerHash(c.Identity) + "," + LabelWorkspace + "=" + workspaceHash(ws)
}

func (c *Config) labels(ws, cmd string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":       "tfccm-runner",
		"app.kubernetes.io/managed-by": "tfccm",
		LabelRunner:                    "job",
		LabelOwner:                     ownerHash(c.Identity),
		LabelWorkspace:                 workspaceHash(ws),
	}
	if cmd != "" && len(cmd) <= 63 {
		l[LabelCommand] = cmd
	}
	return l
}

// Paths inside a runner pod.
const (
	podInputs = "/inputs"
	podWork   = "/work"
	podResult = "/work/result.tar.gz"
	podCache  = "/plugin-cache"
	podCLI    = "/usr/local/bin/tfccm"
	// podToken is where client-go (rest.InClusterConfig) and the
	// kubernetes backend look for the pod's ServiceAccount token.
	podToken = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenExpiry is the projected token's lifetime (the API's minimum;
	// the kubelet renews it while the pod runs).
	tokenExpiry = 600
	// envJobUID carries the Job's UID into the pod (for its result
	// Secrets' owner reference); envNamespace the pod's namespace.
	envJobUID    = "TFCCM_JOB_UID"
	envNamespace = "TFCCM_NAMESPACE"
)

// jobSpec is the Job that runs one command of workspace ws, whose inputs
// are in the Secrets inputs (in order).
//
// Its pod runs tofu in the init container "tofu", which writes the result
// archive into the pod's work volume, then the container "result", which
// writes it into the result Secrets. The pod mounts no ServiceAccount
// token of its own accord: "result" gets a short-lived projected one (it
// may create Secrets), and "tofu" (where providers, untrusted code, run)
// gets it only when its state backend needs it (StateToken). Every
// container runs as the non-root runner user, without privilege
// escalation or capabilities, read-only, with the runtime's seccomp
// profile: Pod Security's restricted level, unless the admin asked for a
// hostPath plugin cache or the host network (docs/scale.md).
func (c *Config) jobSpec(name, ws, cmd string, inputs []string) *batchv1.Job {
	labels := c.labels(ws, cmd)
	zero := int32(0)
	ttl := int32(600)
	deadline := int64(c.Deadline.Seconds())
	volumes, tofuMounts := c.podVolumes(inputs)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.Namespace, Labels: labels,
			Annotations: map[string]string{AnnoWorkspace: ws},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &zero,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnoWorkspace: ws}},
				Spec:       c.podSpec(name, len(inputs), volumes, tofuMounts),
			},
		},
	}
	if deadline > 0 {
		job.Spec.ActiveDeadlineSeconds = &deadline
	}
	if c.HostNetwork {
		job.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	return job
}

// tokenMount mounts the pod's projected ServiceAccount token (tokenVolume)
// where client-go and the kubernetes backend look for it.
var tokenMount = corev1.VolumeMount{Name: "token", MountPath: podToken, ReadOnly: true}

// podVolumes are a runner pod's volumes (its inputs projected from the
// Secrets inputs, the work volume, the plugin cache, the token and the
// SecretMounts, by path) and the mounts of its container "tofu": all of
// them but the token, which it gets only with StateToken.
func (c *Config) podVolumes(inputs []string) ([]corev1.Volume, []corev1.VolumeMount) {
	var sources []corev1.VolumeProjection
	for i, s := range inputs {
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: s},
			Items:                []corev1.KeyToPath{{Key: partKey, Path: partFile(i)}},
		}})
	}
	tofuMounts := []corev1.VolumeMount{
		{Name: "inputs", MountPath: podInputs, ReadOnly: true},
		{Name: "work", MountPath: podWork},
		{Name: "plugin-cache", MountPath: podCache},
	}
	volumes := []corev1.Volume{
		{Name: "inputs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}},
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		c.cacheVolume(),
		tokenVolume(),
	}
	paths := make([]string, 0, len(c.SecretMounts))
	for p := range c.SecretMounts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	mode := int32(0o440)
	for i, p := range paths {
		v := fmt.Sprintf("secret-%d", i)
		volumes = append(volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: c.SecretMounts[p], DefaultMode: &mode}}})
		tofuMounts = append(tofuMounts, corev1.VolumeMount{Name: v, MountPath: p, ReadOnly: true})
	}
	if c.StateToken {
		tofuMounts = append(tofuMounts, tokenMount)
	}
	return volumes, tofuMounts
}

// podSpec is the pod of Job name: the init containers (the plugin cache's
// owner, then "tofu" reading parts input parts), the container "result",
// placement, and the non-root, token-less pod security.
func (c *Config) podSpec(name string, parts int, volumes []corev1.Volume, tofuMounts []corev1.VolumeMount) corev1.PodSpec {
	grace := int64(c.Grace.Seconds())
	uid, gid := int64(runnerUID), int64(runnerGID)
	yes, no := true, false
	var initContainers []corev1.Container
	if c.PluginCache != "" {
		initContainers = append(initContainers, c.cacheOwner())
	}
	initContainers = append(initContainers, c.tofuContainer(name, parts, tofuMounts))
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		HostNetwork:                   c.HostNetwork,
		ServiceAccountName:            c.ServiceAccount,
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		TerminationGracePeriodSeconds: &grace,
		NodeSelector:                  c.NodeSelector,
		Tolerations:                   c.tolerations(),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &gid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: initContainers,
		Containers:     []corev1.Container{c.resultContainer(name)},
		Volumes:        volumes,
	}
}

// tofuContainer is the init container "tofu" of Job name: tfccm run over
// the parts input parts, writing the result archive into the work volume.
func (c *Config) tofuContainer(name string, parts int, mounts []corev1.VolumeMount) corev1.Container {
	return corev1.Container{
		Name:    "tofu",
		Image:   c.Image,
		Command: []string{podCLI, "run", "--inputs", podInputs, "--parts", strconv.Itoa(parts), "--work", podWork, "--plugin-cache", podCache, "--result-file", podResult},
		Env: []corev1.EnvVar{
			{Name: "USER", Value: name},
			{Name: envMemoryLimit, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "tofu", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		},
		Resources:       c.Resources,
		SecurityContext: restricted(),
		VolumeMounts:    mounts,
	}
}

// resultContainer is the container "result" of Job name: it reads the
// result archive (work volume, read-only) and writes the result Secrets
// with the pod's projected token.
func (c *Config) resultContainer(name string) corev1.Container {
	return corev1.Container{
		Name:    "result",
		Image:   c.Image,
		Command: []string{podCLI, "run", "--send-result", podResult, "--result", name},
		Env: []corev1.EnvVar{
			{Name: envNamespace, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: envJobUID, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['batch.kubernetes.io/controller-uid']"}}},
		},
		Resources:       c.Resources,
		SecurityContext: restricted(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "work", MountPath: podWork, ReadOnly: true}, tokenMount},
	}
}

// restricted is a runner container's security context (Pod Security's
// restricted level with the pod's).
func restricted() *corev1.SecurityContext {
	yes, no := true, false
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   &yes,
	}
}

// cacheVolume is the plugin cache: the node directory PluginCache (the
// admin's choice: hostPath, outside Pod Security's baseline level), else
// one of the pod's own.
func (c *Config) cacheVolume() corev1.Volume {
	if c.PluginCache == "" {
		return corev1.Volume{Name: "plugin-cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	t := corev1.HostPathDirectoryOrCreate
	return corev1.Volume{Name: "plugin-cache", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: c.PluginCache, Type: &t}}}
}

// cacheOwner is the init container that makes the node's plugin cache
// directory (created by the kubelet as root) the runner user's: root,
// with CHOWN alone. Only with a hostPath cache.
func (c *Config) cacheOwner() corev1.Container {
	root := int64(0)
	yes, no := true, false
	return corev1.Container{
		Name:    "plugin-cache",
		Image:   c.Image,
		Command: []string{podCLI, "run", "--prepare-cache", podCache},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: &root, RunAsNonRoot: &no, AllowPrivilegeEscalation: &no,
			Capabilities:           &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN"}},
			ReadOnlyRootFilesystem: &yes,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "plugin-cache", MountPath: podCache}},
	}
}

// tokenVolume is the pod's ServiceAccount token as the automatic mount
// would have it (token, ca.crt, namespace), but short-lived and mounted
// only where needed.
func tokenVolume() corev1.Volume {
	expiry := int64(tokenExpiry)
	return corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}}}}
}

// tolerations are the runner pods' tolerations: the configured ones, and
// on the host network the route controller's network-unavailable taint.
// A host-network pod needs no pod network, and where tfccm routes the pod
// network the routes workspace's own runs are what lifts that taint: a
// failed routes apply left every node tainted, and no runner could be
// scheduled to repair it.
func (c *Config) tolerations() []corev1.Toleration {
	if !c.HostNetwork {
		return c.Tolerations
	}
	return append(slices.Clone(c.Tolerations), corev1.Toleration{
		Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	})
}

// Secrets that carry inputs and results: data key partKey; inputs are
// <job>-in-<i>, results <job>-out-<i>.
const partKey = "part"

func partFile(i int) string { return fmt.Sprintf("part-%d", i) }

func inName(job string, i int) string  { return fmt.Sprintf("%s-in-%d", job, i) }
func outName(job string, i int) string { return fmt.Sprintf("%s-out-%d", job, i) }

// partSecret is one part of an input or result.
func partSecret(ns, name, job string, labels map[string]string, data []byte, parts int, owner *metav1.OwnerReference) *corev1.Secret {
	l := map[string]string{LabelJob: job}
	for k, v := range labels {
		l[k] = v
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{partKey: data},
	}
	if parts > 0 {
		s.Annotations = map[string]string{AnnoParts: strconv.Itoa(parts)}
	}
	if owner != nil {
		s.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return s
}

func jobOwner(name string, uid string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID(uid)}
}
