package jobrunner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"golang.org/x/sys/unix"
)

// The runner pool (terraform { job { pool = N } }): a Deployment
// tfccm-runners-<owner> of N warm runner pods, spread over the nodes,
// each taking one tofu command at a time through pods/exec (exec.go,
// serve.go) instead of a Job, its Secrets and a pod per command. The CCM
// keeps the Deployment (Pool.Run); a stand-in leases a free pod for each
// command (lease).

// MaxPool is the most pods terraform.job.pool asks for.
const MaxPool = 64

// poolPrefix starts the pool's Deployment name and so its pods' names,
// which are the USER of their tofu: a state lock's holder is
// "<pod name>@<host>" (Locks.Gone).
const poolPrefix = "tfccm-runners-"

// runnerPool is LabelRunner's value on pooled pods ("job" on Jobs).
const runnerPool = "pool"

// poolContainer is a pooled pod's container.
const poolContainer = "runner"

// annoPoolSpec carries the hash of the Deployment's spec as the CCM
// wants it: a change (image, limits, N) updates it.
const annoPoolSpec = "tfccm.io/pool-spec"

// PoolInterval is how often the CCM checks the pool: its Deployment, the
// spread of its pods and pods left pending.
const PoolInterval = 30 * time.Second

// poolPendingAfter is how long a pooled pod may stay unscheduled before
// the CCM records an Event about it.
const poolPendingAfter = time.Minute

// PoolName is the pool's Deployment name for cfg's controller.
func (c *Config) PoolName() string { return poolPrefix + ownerHash(c.Identity) }

// poolSelector selects the pool's pods.
func (c *Config) poolSelector() string {
	return LabelRunner + "=" + runnerPool + "," + LabelOwner + "=" + ownerHash(c.Identity)
}

func (c *Config) poolLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "tfccm-runner",
		"app.kubernetes.io/managed-by": "tfccm",
		LabelRunner:                    runnerPool,
		LabelOwner:                     ownerHash(c.Identity),
	}
}

// poolDeployment is the pool's Deployment: N pods of the runner Jobs'
// image, ServiceAccount, placement, limits and security, whose container
// runs `tfccm run --serve` and gets each command through pods/exec. Its
// pods spread over the nodes (maxSkew 1 by host name; Pool.Run moves a
// pod when nodes joined since).
func (c *Config) poolDeployment() *appsv1.Deployment {
	labels := c.poolLabels()
	volumes, mounts := c.podVolumes(nil)
	volumes = slicesDeleteVolume(volumes, "inputs")
	mounts = slicesDeleteMount(mounts, "inputs")
	grace := int64(c.Grace.Seconds())
	if grace < 1 {
		grace = 30
	}
	uid, gid := int64(runnerUID), int64(runnerGID)
	yes, no := true, false
	n := int32(c.Pool)
	var initContainers []corev1.Container
	if c.PluginCache != "" {
		initContainers = append(initContainers, c.cacheOwner())
	}
	honor := corev1.NodeInclusionPolicyHonor
	spec := corev1.PodSpec{
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
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, NodeTaintsPolicy: &honor,
		}},
		InitContainers: initContainers,
		Containers: []corev1.Container{{
			Name:    poolContainer,
			Image:   c.Image,
			Command: []string{podCLI, "run", "--serve", "--work", podWork},
			Env: []corev1.EnvVar{
				// The holder of its tofu's state locks (Locks.Gone).
				{Name: "USER", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: envMemoryLimit, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: poolContainer, Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			},
			Resources:       c.Resources,
			SecurityContext: restricted(),
			VolumeMounts:    mounts,
		}},
		Volumes: volumes,
	}
	if c.HostNetwork {
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.PoolName(), Namespace: c.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	b, _ := json.Marshal(d.Spec)
	sum := sha256.Sum256(b)
	d.Annotations = map[string]string{annoPoolSpec: hex.EncodeToString(sum[:8])}
	return d
}

func slicesDeleteVolume(vs []corev1.Volume, name string) []corev1.Volume {
	out := vs[:0]
	for _, v := range vs {
		if v.Name != name {
			out = append(out, v)
		}
	}
	return out
}

func slicesDeleteMount(ms []corev1.VolumeMount, name string) []corev1.VolumeMount {
	out := ms[:0]
	for _, m := range ms {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}

// Pool keeps the runner pool's Deployment in the CCM (the leader).
type Pool struct {
	cfg    *Config
	client kubernetes.Interface
	// Recorder and PendingReason: the Event recorded on the Deployment
	// when pods stay pending (nil: logged only).
	Recorder      record.EventRecorder
	PendingReason string
}

// NewPool returns the pool of cfg (cfg.Pool pods; 0 removes it).
func NewPool(cfg *Config, client kubernetes.Interface) *Pool {
	return &Pool{cfg: cfg, client: client}
}

// Run keeps the pool until ctx ends: the Deployment as configured, then
// every PoolInterval its pods spread over the nodes and an Event for pods
// left pending. With no pool configured it deletes a Deployment an earlier
// configuration left, and returns.
func (p *Pool) Run(ctx context.Context) {
	if p.cfg.Pool <= 0 {
		p.remove(ctx)
		return
	}
	t := time.NewTicker(PoolInterval)
	defer t.Stop()
	for {
		if err := p.ensure(ctx); err != nil {
			klog.ErrorS(err, "Runner pool", "deployment", p.cfg.Namespace+"/"+p.cfg.PoolName())
		} else {
			p.check(ctx, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// remove deletes the pool's Deployment (pool = 0 now).
func (p *Pool) remove(ctx context.Context) {
	err := p.client.AppsV1().Deployments(p.cfg.Namespace).Delete(ctx, p.cfg.PoolName(), metav1.DeleteOptions{})
	switch {
	case err == nil:
		klog.InfoS("Deleted the runner pool (terraform.job.pool = 0)", "deployment", p.cfg.Namespace+"/"+p.cfg.PoolName())
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
	default:
		klog.ErrorS(err, "Delete the runner pool", "deployment", p.cfg.Namespace+"/"+p.cfg.PoolName())
	}
}

// ensure creates or updates the Deployment.
func (p *Pool) ensure(ctx context.Context) error {
	want := p.cfg.poolDeployment()
	deps := p.client.AppsV1().Deployments(p.cfg.Namespace)
	have, err := deps.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := deps.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return permission(err, "create", "deployments")
		}
		klog.InfoS("Created the runner pool", "deployment", want.Namespace+"/"+want.Name, "pods", p.cfg.Pool)
		return nil
	case err != nil:
		return permission(err, "get", "deployments")
	case have.Annotations[annoPoolSpec] == want.Annotations[annoPoolSpec]:
		return nil
	}
	have.Labels, have.Annotations, have.Spec = want.Labels, want.Annotations, want.Spec
	if _, err := deps.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return permission(err, "update", "deployments")
	}
	klog.InfoS("Updated the runner pool", "deployment", want.Namespace+"/"+want.Name, "pods", p.cfg.Pool)
	return nil
}

// permission names the missing RBAC rule when the apiserver refused err.
func permission(err error, verb, resource string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("the CCM may not %s %s in the runners' namespace (Role <release>:runner-control, runner.pool in the chart): %w", verb, resource, err)
	}
	return err
}

// check records pods left pending and moves one pod off the most loaded
// node when the spread is off by more than one (nodes joined after the
// pods were placed).
func (p *Pool) check(ctx context.Context, now time.Time) {
	pods, err := p.client.CoreV1().Pods(p.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.cfg.poolSelector()})
	if err != nil {
		klog.ErrorS(permission(err, "list", "pods"), "Runner pool")
		return
	}
	if msg := pendingPods(pods.Items, now); msg != "" {
		p.pending(ctx, msg)
	}
	nodes, err := p.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	victim := p.rebalance(pods.Items, nodes.Items)
	if victim == "" {
		return
	}
	release, ok := tryLease(p.cfg, victim)
	if !ok {
		return // running a command: next time
	}
	defer release()
	if err := p.client.CoreV1().Pods(p.cfg.Namespace).Delete(ctx, victim, metav1.DeleteOptions{}); err == nil {
		klog.InfoS("Moved a runner pool pod to spread the pool over the nodes", "pod", victim)
	}
}

func (p *Pool) pending(ctx context.Context, msg string) {
	klog.InfoS("Runner pool pods pending", "deployment", p.cfg.Namespace+"/"+p.cfg.PoolName(), "pods", msg)
	if p.Recorder == nil {
		return
	}
	d, err := p.client.AppsV1().Deployments(p.cfg.Namespace).Get(ctx, p.cfg.PoolName(), metav1.GetOptions{})
	if err == nil {
		p.Recorder.Event(d, corev1.EventTypeWarning, p.PendingReason, "Runner pool pods pending: "+msg)
	}
}

// pendingPods describes the pods unscheduled for poolPendingAfter (why,
// from their PodScheduled condition); "" for none.
func pendingPods(pods []corev1.Pod, now time.Time) string {
	var out []string
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" || now.Sub(pod.CreationTimestamp.Time) < poolPendingAfter {
			continue
		}
		why := "not scheduled"
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				why = c.Message
			}
		}
		out = append(out, pod.Name+": "+why)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// rebalance is a pod to move (delete: its Deployment replaces it where
// the spread wants it), "" when the pool is spread: the running pods per
// eligible node differ by at most one.
func (p *Pool) rebalance(pods []corev1.Pod, nodes []corev1.Node) string {
	count := map[string][]string{}
	for _, n := range nodes {
		if eligible(&n, p.cfg) {
			count[n.Name] = nil
		}
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
			continue
		}
		if _, ok := count[pod.Spec.NodeName]; ok {
			count[pod.Spec.NodeName] = append(count[pod.Spec.NodeName], pod.Name)
		}
	}
	if len(count) < 2 {
		return ""
	}
	most, least := "", ""
	for n, ps := range count {
		if most == "" || len(ps) > len(count[most]) || len(ps) == len(count[most]) && n < most {
			most = n
		}
		if least == "" || len(ps) < len(count[least]) || len(ps) == len(count[least]) && n < least {
			least = n
		}
	}
	if len(count[most])-len(count[least]) <= 1 {
		return ""
	}
	ps := count[most]
	sort.Strings(ps)
	return ps[0]
}

// eligible reports whether a pooled pod may run on node n: ready,
// schedulable, matching the node selector, no taint it does not tolerate.
func eligible(n *corev1.Node, cfg *Config) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for k, v := range cfg.NodeSelector {
		if n.Labels[k] != v {
			return false
		}
	}
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	}
	if !ready {
		return false
	}
	tols := cfg.tolerations()
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for _, tol := range tols {
			ok = ok || tol.ToleratesTaint(klog.Background(), &t, false)
		}
		if !ok {
			return false
		}
	}
	return true
}

// Leases: a stand-in (a process per tofu command) takes a pod by a lock
// file of the pod's name in the CCM's own directory (leaseDir), which no
// apiserver write costs; the pod's own busy lock (serve.go) backs it up.

// leaseDir is where the pool's leases live: under the work dir, beside
// the workspaces.
func (c *Config) leaseDir() string {
	base := c.WorkDir
	if base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, ".runner-pool", ownerHash(c.Identity))
}

// tryLease takes pod's lease without waiting.
func tryLease(cfg *Config, pod string) (release func(), ok bool) {
	dir := cfg.leaseDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(dir, pod), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return func() { _ = f.Close() }, true
}

// errNoPod: no pooled pod is running (all pending, or the Deployment
// missing).
var errNoPod = errors.New("no runner pool pod is running")

// readyPods are the pool's pods that take requests, in random order.
func readyPods(ctx context.Context, client kubernetes.Interface, cfg *Config, skip map[string]bool) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: cfg.poolSelector()})
	if err != nil {
		return nil, fmt.Errorf("list the runner pool's pods: %w", permission(err, "list", "pods"))
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) && !skip[p.Name] {
			out = append(out, p)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lease waits for a free pooled pod and leases it. skip are pods that
// refused a request (busy, gone) in this run.
func lease(ctx context.Context, client kubernetes.Interface, cfg *Config, skip map[string]bool) (*corev1.Pod, func(), error) {
	wait := 200 * time.Millisecond
	since := time.Now()
	for {
		pods, err := readyPods(ctx, client, cfg, skip)
		if err != nil {
			return nil, nil, err
		}
		for i := range pods {
			if release, ok := tryLease(cfg, pods[i].Name); ok {
				return &pods[i], release, nil
			}
		}
		if len(pods) == 0 && len(skip) > 0 {
			clear(skip) // every pod tried: try them again
		}
		select {
		case <-ctx.Done():
			if len(pods) == 0 {
				return nil, nil, fmt.Errorf("%w in %s after %s (Deployment %s: see its Events)", errNoPod, cfg.Namespace, time.Since(since).Round(time.Second), cfg.PoolName())
			}
			return nil, nil, fmt.Errorf("no runner pool pod free after %s: %d pods, all busy", time.Since(since).Round(time.Second), len(pods))
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
