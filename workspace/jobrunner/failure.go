package jobrunner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// Why a run failed, told as tofu diagnostics (the engine puts them in the
// Service's Event) that name what to change: a runner out of memory, a
// runner pod evicted (its node drained), a runner gone without a result.

// memorySetting is the setting that bounds a runner pod's memory.
const memorySetting = "terraform.job.memory_limit (Helm value runner.memoryLimit)"

// envMemoryLimit carries the runner container's memory limit in MiB into
// the pod (0: none), for the out-of-memory diagnostic.
const envMemoryLimit = "TFCCM_MEMORY_LIMIT_MIB"

// outOfMemory is the diagnostic of tofu cmd killed by the kernel's OOM
// killer at the runner pod's memory limit (e.g. "64Mi"; "" unknown).
func outOfMemory(cmd, limit, where string) string {
	at := "its memory limit"
	if limit != "" {
		at += " of " + limit
	}
	return fmt.Sprintf("Error: Runner out of memory\n\nThe runner of tofu %s was killed by the kernel's OOM killer at %s: raise %s. tfccm retries the run, which succeeds once the limit fits.%s\n", cmd, at, memorySetting, where)
}

// limitOf is cfg's memory limit as written ("1Gi"), "" when none.
func limitOf(cfg *Config) string {
	if q, ok := cfg.Resources.Limits[corev1.ResourceMemory]; ok && !q.IsZero() {
		return q.String()
	}
	return ""
}

// failure is the diagnostic of a Job that ended without a result, from
// its pods as last seen: out of memory when its container was OOMKilled,
// else its condition and its pod's last state (deleted, evicted, killed).
func failure(ctx context.Context, client kubernetes.Interface, cfg *Config, job *batchv1.Job, pods []corev1.Pod, cmd string) string {
	why := "Job " + job.Name
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			why += " failed (" + c.Reason + ": " + c.Message + ")"
		}
	}
	if len(pods) == 0 {
		if list, err := jobPods(ctx, client, cfg, job.Name); err == nil {
			pods = list.Items
		}
	}
	for _, p := range pods {
		why += "; pod " + p.Name + " " + string(p.Status.Phase)
		if p.Status.Reason != "" {
			why += " (" + p.Status.Reason + ")"
		}
		for _, st := range containers(&p) {
			if t := st.State.Terminated; t != nil {
				why += fmt.Sprintf(", container %s: %s, exit %d", st.Name, t.Reason, t.ExitCode)
			}
		}
	}
	if oomKilled(pods) {
		return outOfMemory(cmd, limitOf(cfg), " ("+why+")")
	}
	return "Error: the runner of this command ended without a result: " + why + "\n" + evictedPods(pods)
}

// oomKilled reports whether a container of pods was OOMKilled (the
// kubelet's word: the OOM killer struck in it, whether or not its main
// process died).
func oomKilled(pods []corev1.Pod) bool {
	for _, p := range pods {
		for _, st := range containers(&p) {
			if t := st.State.Terminated; t != nil && t.Reason == "OOMKilled" {
				return true
			}
		}
	}
	return false
}

// containers are the statuses of p's containers, init containers (tofu's)
// first.
func containers(p *corev1.Pod) []corev1.ContainerStatus {
	return append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
}

// evictedPods is the diagnostic of a failed command whose runner pod was
// evicted (a node drained, node pressure) or deleted while tofu ran, ""
// when none of pods was.
func evictedPods(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
				continue
			}
			fmt.Fprintf(&b, "\nError: Runner pod evicted\n\nRunner pod %s on node %s was stopped while tofu ran (%s: %s): tofu got SIGINT to save its state and release its lock; tfccm retries the run (on another node while this one is cordoned).\n", p.Name, p.Spec.NodeName, c.Reason, c.Message)
		}
	}
	return b.String()
}

// The pod's side: whether the kernel's OOM killer struck in the runner's
// memory cgroup (cgroup v2 memory.events, v1 memory.oom_control: both
// count oom_kill).
var oomCounters = []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}

// oomKills is the number of processes the OOM killer killed in this
// container's memory cgroup, -1 when unknown.
func oomKills() int {
	for _, f := range oomCounters {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, ok := oomKillCount(string(b)); ok {
			return n
		}
	}
	return -1
}

// oomKillCount reads the oom_kill line of a memory.events or
// memory.oom_control file.
func oomKillCount(s string) (int, bool) {
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// podMemoryLimit is the runner container's memory limit as the pod knows
// it ("64Mi"), "" when none or unknown.
func podMemoryLimit() string {
	v := os.Getenv(envMemoryLimit)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n < 1<<40 {
		return v + "Mi"
	}
	return ""
}

// TofuRunning reports whether runner pod p's tofu container runs (an init
// container: the pod is Pending meanwhile) and p is not being deleted.
func TofuRunning(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, st := range p.Status.InitContainerStatuses {
		if st.Name == "tofu" {
			return st.State.Running != nil
		}
	}
	return false
}

// ContainerStatuses are the statuses of runner pod p's containers, tofu's
// (an init container) first.
func ContainerStatuses(p *corev1.Pod) []corev1.ContainerStatus { return containers(p) }
