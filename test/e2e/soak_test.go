package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestSoak drives the CCM the way a busy cluster does, with seeded random
// actions every 0.3-1 s for TFCCM_SOAK (default 2m; `make soak` runs it
// longer): Service creates and deletes, port changes, label toggles, ETP
// switches, nodes added and removed, and kill -9s of the CCM. Then it
// checks the invariants: every live Service is served from registered
// nodes, deleted Services left nothing (workspace, state, HAProxy fragment,
// VIP claim), no finalizer is stuck, nothing of a killed CCM is left
// running (tofu, providers), and the CCM's memory and goroutines stayed
// flat.
func TestSoak(t *testing.T) {
	duration := 2 * time.Minute
	if v := os.Getenv("TFCCM_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TFCCM_SOAK: %v", err)
		}
		duration = d
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("TFCCM_SOAK_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d (TFCCM_SOAK_SEED to replay), duration %s", seed, duration)
	rng := rand.New(rand.NewSource(seed))

	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	// The local cloud's infrastructure is the instances source; the soak
	// takes it away for a while (a state outage): no Node may be deleted.
	cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings())+
		fmt.Sprintf("instances {\n  ttl = \"5s\"\n  source \"infra\" {\n    dir = %q\n  }\n}\n", cloud.InfraDir()), `coalesce_quiet = "1s"`)
	infraState := filepath.Join(cloud.InfraDir(), "terraform.tfstate")
	ports := []int{30100, 30101, 30102, 30103}
	for _, n := range cloud.Nodes() {
		for _, p := range ports {
			stop, err := cloud.ServeHTTP(n, p, n)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
		}
		stop, err := cloud.ServeHealthz(n, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	registered := map[string]bool{}
	for _, n := range cloud.Nodes() {
		createNode(t, client, cloud, n)
		registered[n] = true
	}
	ccm := startCCM(t, cluster, cfg, "--concurrent-service-syncs=4")
	ccms := []*harness.CCM{ccm}

	live := map[string]bool{}
	deletedUIDs := map[string]string{} // name -> UID of a deleted Service
	seq := 0
	var rssMid int64
	counts := map[string]int{}
	deadline := time.Now().Add(duration)
	half := time.Now().Add(duration / 2)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(300+rng.Intn(700)) * time.Millisecond)
		if rssMid == 0 && time.Now().After(half) {
			rssMid = rssOf(t, ccm)
		}
		names := slices.Sorted(maps.Keys(live))
		switch a := rng.Intn(100); {
		case a < 25 && len(live) < 6: // create
			seq++
			name := fmt.Sprintf("s%03d", seq)
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: int32(ports[rng.Intn(len(ports))]), TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
			if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err == nil {
				live[name] = true
				counts["create"]++
			}
		case a < 40 && len(names) > 0: // delete
			name := names[rng.Intn(len(names))]
			s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}) == nil {
				delete(live, name)
				deletedUIDs[name] = string(s.UID)
				counts["delete"]++
			}
		case a < 55 && len(names) > 0: // port change (nodePort conflicts just fail)
			mutateService(ctx, client, names[rng.Intn(len(names))], func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort = int32(ports[rng.Intn(len(ports))])
			})
			counts["port"]++
		case a < 65 && len(names) > 0: // label toggle
			mutateService(ctx, client, names[rng.Intn(len(names))], func(s *corev1.Service) {
				if s.Labels["soak"] == "" {
					s.Labels = map[string]string{"soak": "x"}
				} else {
					s.Labels = nil
				}
			})
			counts["label"]++
		case a < 75 && len(names) > 0: // ETP switch
			mutateService(ctx, client, names[rng.Intn(len(names))], func(s *corev1.Service) {
				if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
					s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyCluster, 0
				} else {
					s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				}
			})
			counts["etp"]++
		case a < 90: // node removed or added back
			n := cloud.Nodes()[rng.Intn(len(cloud.Nodes()))]
			if registered[n] && len(registeredNames(registered)) > 1 {
				if client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}) == nil {
					registered[n] = false
					counts["node-"]++
				}
			} else if !registered[n] {
				if _, err := harness.RegisterNode(ctx, client, harness.Node{Name: n, InternalIPs: []string{cloud.Node(n).Address}}); err == nil {
					registered[n] = true
					counts["node+"]++
				}
			}
		case a < 95 && counts["outage"] == 0 && time.Now().After(half): // state outage
			hidden := infraState + ".away"
			if os.Rename(infraState, hidden) == nil {
				counts["outage"]++
				time.AfterFunc(15*time.Second, func() { _ = os.Rename(hidden, infraState) })
			}
		case a < 93: // kill -9 and restart
			ccm.Kill()
			noneLeft(t, workDir, "after a kill -9")
			ccm = startCCM(t, cluster, cfg, "--concurrent-service-syncs=4")
			ccms = append(ccms, ccm)
			counts["kill"]++
		}
	}
	t.Logf("actions: %v", counts)
	eventually(t, 30*time.Second, "the state is back", func(context.Context) error {
		_, err := os.Stat(infraState)
		return err
	})
	// No Node was deleted but by the soak itself.
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, n := range list.Items {
		have = append(have, n.Name)
	}
	slices.Sort(have)
	if want := registeredNames(registered); !slices.Equal(have, want) {
		t.Errorf("Nodes %v, want %v (a Node was deleted during the state outage?)", have, want)
	}

	// Converge, then check the invariants. Services left on ETP=Local
	// are health-checked on their healthCheckNodePort: serve it, as
	// kube-proxy would on nodes with endpoints.
	nodes := registeredNames(registered)
	for name := range live {
		s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || s.Spec.HealthCheckNodePort == 0 {
			continue
		}
		for _, n := range cloud.Nodes() {
			stop, err := cloud.ServeHealthz(n, int(s.Spec.HealthCheckNodePort))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
		}
	}
	for name := range live {
		eventually(t, 3*time.Minute, name+" served by the registered nodes", func(ctx context.Context) error {
			s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no ingress")
			}
			vip := s.Status.LoadBalancer.Ingress[0].IP
			body, err := get(vip, 80)
			if err != nil {
				return err
			}
			if !slices.Contains(nodes, body) {
				return fmt.Errorf("answered by %q, registered nodes %v", body, nodes)
			}
			return nil
		})
	}
	for name := range deletedUIDs {
		eventually(t, 3*time.Minute, name+" deleted (finalizer released)", func(ctx context.Context) error {
			_, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		})
	}
	eventually(t, 2*time.Minute, "one workspace, one state and one fragment and claim per live Service", func(context.Context) error {
		dirs, _ := filepath.Glob(filepath.Join(workDir, "lb-*"))
		states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate"))
		objects := cloud.LBObjects()
		if len(dirs) != len(live) || len(states) != len(live) || len(objects) != 2*len(live) {
			return fmt.Errorf("%d live Services: workspaces %v, states %v, cloud objects %v", len(live), dirs, states, objects)
		}
		return nil
	})
	applies := 0
	for _, c := range ccms {
		applies += strings.Count(c.Log(), `message="plan applied in`)
	}
	actions := counts["create"] + counts["delete"] + counts["port"] + counts["label"] + counts["etp"] + counts["node+"] + counts["node-"]
	if actions > 0 {
		t.Logf("%d tofu applies for %d Service and node actions: %.2f applies per action", applies, actions, float64(applies)/float64(actions))
	}
	if rssMid > 0 {
		if rss := rssOf(t, ccm); rss > 3*rssMid {
			t.Errorf("CCM RSS grew from %d kB (mid-soak) to %d kB", rssMid, rss)
		}
	}
	// Clean up through the CCM, as a user would.
	for name := range live {
		_ = client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{})
	}
	for name := range live {
		waitServiceDeleted(t, client, name, 2*time.Minute)
	}
	ccm.Stop()
	noneLeft(t, workDir, "after the CCM stopped")
}

// noneLeft waits up to 10 s until no process (tofu, a provider, anything
// they started) runs under workDir.
func noneLeft(t *testing.T, workDir, when string) {
	t.Helper()
	eventually(t, 10*time.Second, "nothing left running under the work dir "+when, func(context.Context) error {
		if left := harness.ProcessesUnder(workDir); len(left) > 0 {
			return fmt.Errorf("still running: %v", left)
		}
		return nil
	})
}

// mutateService applies f to the Service; a conflict or a refused change
// (a nodePort in use) is just a lost action.
func mutateService(ctx context.Context, client kubernetes.Interface, name string, f func(*corev1.Service)) {
	s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	f(s)
	_, _ = client.CoreV1().Services("default").Update(ctx, s, metav1.UpdateOptions{})
}

func registeredNames(registered map[string]bool) []string {
	var out []string
	for n, ok := range registered {
		if ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// rssOf is the CCM's resident memory in kB.
func rssOf(t *testing.T, ccm *harness.CCM) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ccm.PID()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}
