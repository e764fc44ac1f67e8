package jobrunner

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The pool's Deployment: the runner Jobs' image, ServiceAccount,
// placement, limits and security; no input volume; spread over nodes;
// the pod's name as its tofu's USER; a spec change changes its hash.
func TestPoolDeployment(t *testing.T) {
	c := testConfig()
	c.Pool = 3
	c.StateToken = true
	d := c.poolDeployment()
	if d.Name != "tfccm-runners-"+ownerHash(c.Identity) || d.Namespace != c.Namespace || *d.Spec.Replicas != 3 {
		t.Fatalf("deployment %s/%s replicas %d", d.Namespace, d.Name, *d.Spec.Replicas)
	}
	p := d.Spec.Template.Spec
	job := c.jobSpec("j", "lb-a", "apply", []string{"in-0"}).Spec.Template.Spec
	if p.ServiceAccountName != job.ServiceAccountName || *p.AutomountServiceAccountToken || p.NodeSelector["pool"] != "tofu" || len(p.Tolerations) != len(job.Tolerations) {
		t.Errorf("placement or ServiceAccount differ from the Jobs': %+v", p)
	}
	if *p.SecurityContext.RunAsNonRoot != true || *p.SecurityContext.RunAsUser != runnerUID {
		t.Errorf("pod security %+v", p.SecurityContext)
	}
	ctr := p.Containers[0]
	if ctr.Image != c.Image || *ctr.SecurityContext.AllowPrivilegeEscalation || !*ctr.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container %+v", ctr)
	}
	if !ctr.Resources.Limits.Memory().Equal(*job.InitContainers[len(job.InitContainers)-1].Resources.Limits.Memory()) {
		t.Errorf("limits %v differ from the Jobs'", ctr.Resources.Limits)
	}
	if strings.Join(ctr.Command, " ") != podCLI+" run --serve --work "+podWork {
		t.Errorf("command %v", ctr.Command)
	}
	user := false
	for _, e := range ctr.Env {
		user = user || e.Name == "USER" && e.ValueFrom != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}
	if !user {
		t.Error("USER is not the pod's name (Locks.Gone)")
	}
	mounts := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.Name] = true
	}
	if mounts["inputs"] || !mounts["work"] || !mounts["token"] {
		t.Errorf("mounts %v: want work and the state token, no inputs", mounts)
	}
	for _, v := range p.Volumes {
		if v.Name == "inputs" {
			t.Error("an inputs volume in a pooled pod")
		}
	}
	if len(p.TopologySpreadConstraints) != 1 || p.TopologySpreadConstraints[0].TopologyKey != corev1.LabelHostname || p.TopologySpreadConstraints[0].MaxSkew != 1 {
		t.Errorf("spread %+v", p.TopologySpreadConstraints)
	}
	c.Image = "tfccm:next"
	if c.poolDeployment().Annotations[annoPoolSpec] == d.Annotations[annoPoolSpec] {
		t.Error("a new image keeps the spec hash: the Deployment would not be updated")
	}
}

func readyNode(name string, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func podOn(name, node string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
}

func TestPoolRebalance(t *testing.T) {
	c := testConfig()
	sel := map[string]string{"pool": "tofu"}
	a, b, cc := readyNode("a", sel), readyNode("b", sel), readyNode("c", sel)
	other := readyNode("d", nil)
	tainted := readyNode("e", sel, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule})
	tolerated := readyNode("f", sel, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})
	for _, tc := range []struct {
		name  string
		pods  []corev1.Pod
		nodes []corev1.Node
		want  string
	}{
		{"spread", []corev1.Pod{podOn("p1", "a"), podOn("p2", "b")}, []corev1.Node{a, b, cc}, ""},
		{"off by one", []corev1.Pod{podOn("p1", "a"), podOn("p2", "a"), podOn("p3", "b"), podOn("p4", "c")}, []corev1.Node{a, b, cc}, ""},
		{"a node joined", []corev1.Pod{podOn("p2", "a"), podOn("p1", "a"), podOn("p3", "b")}, []corev1.Node{a, b, cc}, "p1"},
		{"all on one", []corev1.Pod{podOn("p1", "a"), podOn("p2", "a")}, []corev1.Node{a, b}, "p1"},
		{"ineligible nodes do not count", []corev1.Pod{podOn("p1", "a"), podOn("p2", "a")}, []corev1.Node{a, other, tainted}, ""},
		{"a tolerated taint counts", []corev1.Pod{podOn("p1", "a"), podOn("p2", "a")}, []corev1.Node{a, tolerated}, "p1"},
		{"pending pods do not count", []corev1.Pod{podOn("p1", "a"), podOn("p2", "")}, []corev1.Node{a, b}, ""},
		{"one node", []corev1.Pod{podOn("p1", "a"), podOn("p2", "a")}, []corev1.Node{a}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&Pool{cfg: c}).rebalance(tc.pods, tc.nodes); got != tc.want {
				t.Errorf("rebalance = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPendingPods(t *testing.T) {
	now := time.Now()
	old := metav1.NewTime(now.Add(-2 * time.Minute))
	young := metav1.NewTime(now.Add(-10 * time.Second))
	unsched := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", CreationTimestamp: old},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available: 3 Insufficient memory."}}}}
	youngPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p2", CreationTimestamp: young}}
	placed := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p3", CreationTimestamp: old}, Spec: corev1.PodSpec{NodeName: "a"}}
	if got := pendingPods([]corev1.Pod{youngPod, placed}, now); got != "" {
		t.Errorf("no pod pending long: %q", got)
	}
	if got := pendingPods([]corev1.Pod{unsched, youngPod, placed}, now); got != "p1: 0/3 nodes are available: 3 Insufficient memory." {
		t.Errorf("pending = %q", got)
	}
}

// A pooled pod's lock: released once the pod is gone, not while it runs;
// another controller's pool pod is never this controller's.
func TestLocksGonePooled(t *testing.T) {
	c := testConfig()
	client := fake.NewClientset()
	l := NewLocks(c)
	l.SetClient(client)
	pod := c.PoolName() + "-5d8f9c7b4-x7k2p"
	other := *c
	other.Identity = "tfccm/other"
	if l.pooledPodOf(other.PoolName()+"-5d8f9c7b4-x7k2p@node-a") != "" || l.pooledPodOf("tfccm-run-abc@node") != "" {
		t.Error("a foreign holder taken for this pool's pod")
	}
	if l.Gone(other.PoolName() + "-5d8f9c7b4-x7k2p@node-a") {
		t.Error("another controller's pooled pod: gone")
	}
	who := pod + "@node-a"
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: c.Namespace}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := client.CoreV1().Pods(c.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l.Gone(who) {
		t.Error("running pooled pod: gone")
	}
	if err := client.CoreV1().Pods(c.Namespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !l.Gone(who) {
		t.Error("deleted pooled pod: not gone")
	}
}

// Leases: one holder per pod; released, it can be taken again.
func TestLeases(t *testing.T) {
	c := testConfig()
	c.WorkDir = t.TempDir()
	release, ok := tryLease(c, "p1")
	if !ok {
		t.Fatal("first lease refused")
	}
	if _, ok := tryLease(c, "p1"); ok {
		t.Error("a leased pod leased twice")
	}
	r2, ok := tryLease(c, "p2")
	if !ok {
		t.Error("another pod refused")
	}
	r2()
	release()
	if r, ok := tryLease(c, "p1"); !ok {
		t.Error("a released pod refused")
	} else {
		r()
	}
}

// lease skips pods that are not ready or leased, gives up with ctx
// naming why, and tries skipped pods again once no other is left.
func TestLeaseWaitsForAFreePod(t *testing.T) {
	c := testConfig()
	c.WorkDir = t.TempDir()
	client := fake.NewClientset()
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "p1", Labels: c.poolLabels()}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}},
		{ObjectMeta: metav1.ObjectMeta{Name: "p2", Labels: c.poolLabels()}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	} {
		if _, err := client.CoreV1().Pods(c.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod, release, err := lease(context.Background(), client, c, map[string]bool{})
	if err != nil || pod.Name != "p1" {
		t.Fatalf("lease: %v, %v", pod, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, _, err := lease(ctx, client, c, map[string]bool{}); err == nil || !strings.Contains(err.Error(), "all busy") {
		t.Errorf("second lease: %v, want all busy", err)
	}
	release()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	// Every ready pod skipped (busy a moment ago): they are tried again.
	if pod, r, err := lease(ctx2, client, c, map[string]bool{"p1": true}); err != nil || pod.Name != "p1" {
		t.Errorf("lease with every ready pod skipped: %v, %v; want p1 again", pod, err)
	} else {
		r()
	}
}
