package jobrunner

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func testConfig() *Config {
	return &Config{
		Namespace: "tfccm-runners", Image: "tfccm:dev", ServiceAccount: "tfccm-runner",
		NodeSelector: map[string]string{"pool": "tofu"},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		PluginCache:  "/var/cache/tfccm/plugins", Identity: "tfccm/test",
		Deadline: 11 * time.Minute, Grace: time.Minute,
	}
}

func TestJobSpec(t *testing.T) {
	c := testConfig()
	ws := "lb-" + strings.Repeat("x", 200)
	name := c.jobName(ws)
	// The pod's name is the Job's plus "-xxxxx"; it is the pod's host
	// name, which tofu puts in its locks.
	if len(name)+6 > 63 || len(validation.IsDNS1123Label(name+"-abcde")) > 0 {
		t.Errorf("job name %q: a pod name from it is not a valid host name", name)
	}
	if c.jobName(ws) == name {
		t.Error("two Jobs of one workspace got the same name")
	}
	job := c.jobSpec(name, ws, "apply", []string{inName(name, 0), inName(name, 1)})
	p := job.Spec.Template.Spec
	if *job.Spec.BackoffLimit != 0 || p.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("a failed runner must not be retried by the Job: the engine retries")
	}
	if *job.Spec.ActiveDeadlineSeconds != 660 || *p.TerminationGracePeriodSeconds != 60 {
		t.Errorf("deadline %d, grace %d", *job.Spec.ActiveDeadlineSeconds, *p.TerminationGracePeriodSeconds)
	}
	if p.ServiceAccountName != "tfccm-runner" || p.NodeSelector["pool"] != "tofu" || len(p.Tolerations) != 1 {
		t.Errorf("pod placement %+v", p)
	}
	for k, v := range job.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			t.Errorf("label %s=%s: %v", k, v, errs)
		}
	}
	if job.Annotations[AnnoWorkspace] != ws || job.Labels[LabelCommand] != "apply" {
		t.Errorf("labels %v annotations %v", job.Labels, job.Annotations)
	}
	var inputs bool
	for _, v := range p.Volumes {
		if v.ConfigMap != nil {
			t.Errorf("volume %s is a ConfigMap: inputs may hold credentials", v.Name)
		}
		if v.Name == "inputs" {
			inputs = len(v.Projected.Sources) == 2 && v.Projected.Sources[1].Secret.Name == inName(name, 1) && v.Projected.Sources[1].Secret.Items[0].Path == "part-1"
		}
	}
	if !inputs {
		t.Errorf("volumes %+v: want both input Secrets", p.Volumes)
	}
	tofu := container(t, p, "tofu")
	if got := strings.Join(tofu.Command, " "); !strings.Contains(got, "run --inputs /inputs --parts 2") || !strings.Contains(got, "--result-file "+podResult) {
		t.Errorf("tofu's command %q", got)
	}
	if got := strings.Join(container(t, p, "result").Command, " "); !strings.Contains(got, "--send-result "+podResult+" --result "+name) {
		t.Errorf("result's command %q", got)
	}
}

// container is the container or init container name of p.
func container(t *testing.T, p corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range append(slices.Clone(p.InitContainers), p.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("pod has no container %s", name)
	return corev1.Container{}
}

// TestJobSpecTokens: runner pods mount no ServiceAccount token they do not
// need. None is mounted automatically; the container "result", which
// writes the result Secrets after tofu's container ended, gets a
// short-lived projected one; tofu's container, where the providers run,
// gets it only when its state backend needs it (backend "kubernetes").
func TestJobSpecTokens(t *testing.T) {
	for _, stateToken := range []bool{false, true} {
		c := testConfig()
		c.StateToken = stateToken
		name := c.jobName("lb-a")
		p := c.jobSpec(name, "lb-a", "apply", []string{inName(name, 0)}).Spec.Template.Spec
		if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
			t.Errorf("state token %v: automountServiceAccountToken %v, want false", stateToken, p.AutomountServiceAccountToken)
		}
		var expiry int64
		for _, v := range p.Volumes {
			if v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds != nil {
					expiry = *src.ServiceAccountToken.ExpirationSeconds
				}
			}
		}
		if expiry == 0 || expiry > 3600 {
			t.Errorf("state token %v: projected token expiry %ds, want a short one", stateToken, expiry)
		}
		mounted := map[string]bool{}
		for _, ctr := range append(slices.Clone(p.InitContainers), p.Containers...) {
			for _, m := range ctr.VolumeMounts {
				if m.Name == "token" {
					mounted[ctr.Name] = m.MountPath == podToken && m.ReadOnly
				}
			}
		}
		if !mounted["result"] || mounted["tofu"] != stateToken || len(mounted) != map[bool]int{false: 1, true: 2}[stateToken] {
			t.Errorf("state token %v: the token is mounted in %v; want result's container, and tofu's only with a state token", stateToken, mounted)
		}
		if p.InitContainers[len(p.InitContainers)-1].Name != "tofu" || len(p.Containers) != 1 {
			t.Errorf("state token %v: tofu must run (and end) before the container that holds the token starts", stateToken)
		}
	}
}

func TestLocksJobOf(t *testing.T) {
	c := testConfig()
	l := NewLocks(c)
	job := c.jobName("lb-a")
	other := *c
	other.Identity = "tfccm/other"
	for who, want := range map[string]string{
		job + "@" + job + "-x7k2p":        job,
		job + "@node-a":                   job, // a host-network runner
		other.jobName("lb-a") + "@node-a": "",  // another controller's runner
		"tfccm@tfccm-7f9c-abcde":          "",
		"root@node-a":                     "",
		job:                               "",
	} {
		if got := l.jobOf(who); got != want {
			t.Errorf("jobOf(%q) = %q, want %q", who, got, want)
		}
	}
	if l.Gone(job + "@node-a") {
		t.Error("Gone without a client must answer false")
	}
}

// Gone: a lock of a Job whose pod still runs is not released; once the pod
// ended, or is gone, it is.
func TestLocksGone(t *testing.T) {
	c := testConfig()
	client := fake.NewClientset()
	l := NewLocks(c)
	l.SetClient(client)
	job := c.jobName("lb-a")
	who := job + "@node-a"
	if !l.Gone(who) {
		t.Error("no pod: not gone")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job + "-abcde", Namespace: c.Namespace, Labels: map[string]string{"batch.kubernetes.io/job-name": job}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(c.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l.Gone(who) {
		t.Error("running pod: gone")
	}
	pod.Status.Phase = corev1.PodFailed
	if _, err := client.CoreV1().Pods(c.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !l.Gone(who) {
		t.Error("failed pod: not gone")
	}
}

// A command's workspace is its directory under the work dir: the probe
// copies of two load balancers (both "health") are two workspaces, whose
// Jobs neither wait for nor delete each other.
func TestWorkspaceOf(t *testing.T) {
	c := &Config{WorkDir: "/var/lib/tfccm"}
	for _, tc := range []struct{ workDir, dir, want string }{
		{"/var/lib/tfccm", "/var/lib/tfccm/lb-a", "lb-a"},
		{"/var/lib/tfccm", "/var/lib/tfccm/.probes/lb-a/health", ".probes/lb-a/health"},
		{"/var/lib/tfccm", "/elsewhere/lb-a", "lb-a"},
		{"", "/var/lib/tfccm/.probes/lb-a/health", "health"},
	} {
		c.WorkDir = tc.workDir
		if got := c.workspaceOf(tc.dir); got != tc.want {
			t.Errorf("work dir %q, dir %q: workspace %q, want %q", tc.workDir, tc.dir, got, tc.want)
		}
	}
	c.WorkDir = "/var/lib/tfccm"
	a, b := c.workspaceOf("/var/lib/tfccm/.probes/lb-a/health"), c.workspaceOf("/var/lib/tfccm/.probes/lb-b/health")
	if c.selector(a) == c.selector(b) {
		t.Errorf("the probes of two load balancers select the same Jobs: %s", c.selector(a))
	}
}

// TestJobTolerations: runner pods on the host network tolerate the route
// controller's network-unavailable taint (a failed routes apply taints every
// node, and only a runner can repair it); on the pod network they do not
// (they could not reach the apiserver); the configured ones stay.
func TestJobTolerations(t *testing.T) {
	for _, host := range []bool{false, true} {
		c := testConfig()
		c.HostNetwork = host
		name := c.jobName("routes")
		p := c.jobSpec(name, "routes", "apply", []string{inName(name, 0)}).Spec.Template.Spec
		taint := &corev1.Taint{Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule}
		tolerated, dedicated := false, false
		for _, tol := range p.Tolerations {
			tolerated = tolerated || tol.ToleratesTaint(klog.Background(), taint, false)
			dedicated = dedicated || tol.Key == "dedicated"
		}
		if tolerated != host || !dedicated {
			t.Errorf("host network %v: tolerations %+v; want network-unavailable tolerated %v and the configured one", host, p.Tolerations, host)
		}
	}
	if c := testConfig(); len(c.Tolerations) != 1 {
		t.Errorf("the configuration's tolerations were changed: %+v", c.Tolerations)
	}
}

// TestPodVolumes: the pod's volumes and tofu's mounts, step by step: the
// Secrets of SecretMounts in path order, the token mounted in "tofu" only
// with StateToken, every input Secret projected as its part.
func TestPodVolumes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		c          Config
		inputs     []string
		wantVols   []string
		wantMounts []string
	}{
		{"no secrets, no token", Config{}, []string{"in-0"},
			[]string{"inputs", "work", "plugin-cache", "token"},
			[]string{podInputs, podWork, podCache}},
		{"state token", Config{StateToken: true}, []string{"in-0", "in-1"},
			[]string{"inputs", "work", "plugin-cache", "token"},
			[]string{podInputs, podWork, podCache, podToken}},
		{"secret mounts by path", Config{SecretMounts: map[string]string{"/z": "sz", "/a": "sa"}}, nil,
			[]string{"inputs", "work", "plugin-cache", "token", "secret-0", "secret-1"},
			[]string{podInputs, podWork, podCache, "/a", "/z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vols, mounts := tc.c.podVolumes(tc.inputs)
			var gotVols, gotMounts []string
			for _, v := range vols {
				gotVols = append(gotVols, v.Name)
			}
			for _, m := range mounts {
				gotMounts = append(gotMounts, m.MountPath)
			}
			if !slices.Equal(gotVols, tc.wantVols) || !slices.Equal(gotMounts, tc.wantMounts) {
				t.Errorf("volumes %v, tofu mounts %v; want %v, %v", gotVols, gotMounts, tc.wantVols, tc.wantMounts)
			}
			if got := len(vols[0].Projected.Sources); got != len(tc.inputs) {
				t.Errorf("%d input parts projected, want %d", got, len(tc.inputs))
			}
			for i, v := range vols[4:] {
				if path := tc.wantMounts[3+i]; v.Secret.SecretName != tc.c.SecretMounts[path] {
					t.Errorf("%s mounts Secret %s at %s, want %s", v.Name, v.Secret.SecretName, path, tc.c.SecretMounts[path])
				}
			}
		})
	}
}
