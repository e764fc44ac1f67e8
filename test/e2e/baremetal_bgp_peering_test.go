package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
)

// TestBaremetalBGPPeeringByCCM: the BGP peering is the CCM's own
// workspace. With load_balancer.settings.bgp in the cloud config (and no
// hand-applied bgp module) the CCM applies the peering: the top-of-rack
// router's sessions with both LB hosts come up, and a Service of the bgp
// variant becomes reachable from the router's clients over ECMP. bgp
// removed from the settings while the Service is there, in a new CCM
// with an empty work dir (the chart's pod after a cloud config change):
// the peering is found in the state backend's catalog and kept (a
// BGPPeeringKept Warning on the Service, the sessions stay up); the
// Service deleted, the peering is destroyed (the sessions go).
func TestBaremetalBGPPeeringByCCM(t *testing.T) {
	b := newBaremetal(t, "3s")
	ctx := context.Background()
	tor, err := b.hosts.StartBGP(hosttest.BGPOptions{Router: filepath.Join(repoRoot(t), "bin", "lbhost-router")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tor.Stop)
	withBGP := tor.BGPSettings(false)
	withBGP["vip_pool"], withBGP["vip_pool6"] = hosttest.BGPPool, hosttest.BGPPool6
	// State in the cluster (as the chart keeps it): the catalog is what a
	// new pod, whose work dir is empty, finds the applied peering in.
	b.backend = fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n}\n", b.cluster.Kubeconfig())
	writeBGPConfig(t, b, withBGP)
	serveNodes(t, b.cloud, 30080)
	createNode(t, b.client, b.cloud, "node-a")
	createNode(t, b.client, b.cloud, "node-b")
	start := time.Now()
	b.startCCM(t)

	// The CCM applies the peering on its own: both hosts peer with the ToR.
	if err := tor.WaitUp(ctx, false, 3*time.Minute); err != nil {
		t.Fatalf("the CCM did not bring the peering up: %v\n%s\nCCM log:\n%s", err, tor.Logs(), b.ccm.LogTail(60))
	}
	t.Logf("FIGURE peering up %s after the CCM started", time.Since(start).Round(time.Millisecond))

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"tfccm.io/template": "bgp"}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := b.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip := waitVIP(t, b.client, "web")
	hosts := []string{}
	for _, h := range b.hosts.Hosts {
		hosts = append(hosts, h.Address)
	}
	eventually(t, 2*time.Minute, fmt.Sprintf("the ToR routes %s over both hosts", vip), func(context.Context) error {
		if got := tor.Nexthops(vip); len(got) != len(hosts) {
			return fmt.Errorf("next hops %v, want %v", got, hosts)
		}
		return nil
	})
	eventually(t, time.Minute, fmt.Sprintf("http://%s/ through the ToR", vip), func(context.Context) error {
		resp, err := tor.Client(0, false, 5*time.Second).Get("http://" + vip + "/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "node-") {
			return fmt.Errorf("status %d, body %q", resp.StatusCode, body)
		}
		return nil
	})
	if n, err := harness.EventCount(ctx, b.client, "default", "web", lbcontroller.ReasonPeeringFailed); err != nil || n != 0 {
		t.Errorf("web has %d BGPPeeringFailed Events (%v), want none", n, err)
	}

	// bgp removed while web announces over the peering: kept, and said.
	t.Run("kept while used", func(st *testing.T) {
		without := tor.BGPSettings(false)
		without["vip_pool"], without["vip_pool6"] = hosttest.BGPPool, hosttest.BGPPool6
		delete(without, "bgp")
		b.ccm.Stop()
		// A new pod, as the chart's restart on a cloud config change
		// makes: its work dir (an emptyDir) holds nothing.
		if err := os.RemoveAll(b.workDir); err != nil {
			st.Fatal(err)
		}
		writeBGPConfig(st, b, without)
		b.startCCM(t)
		eventually(st, 2*time.Minute, "a BGPPeeringKept Warning on web", func(ctx context.Context) error {
			if n, err := harness.EventCount(ctx, b.client, "default", "web", lbcontroller.ReasonPeeringKept); err != nil || n == 0 {
				return fmt.Errorf("%d Events (%v)", n, err)
			}
			return nil
		})
		if s, err := tor.Sessions(); err != nil || len(s) == 0 {
			st.Errorf("sessions after the refused destroy: %v (%v)", s, err)
		}
		for peer, state := range mustSessions(st, tor) {
			if state != "Established" {
				st.Errorf("session %s is %s after the refused destroy, want Established", peer, state)
			}
		}
	})

	// web gone: nothing announces over the peering, so it is destroyed,
	// as the catalog kept it (this CCM never applied it).
	t.Run("destroyed when unused", func(st *testing.T) {
		if err := b.client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			st.Fatal(err)
		}
		waitServiceDeleted(st, b.client, "web", 2*time.Minute)
		eventually(st, 3*time.Minute, "the peering destroyed (no session Established)", func(context.Context) error {
			for peer, state := range mustSessions(st, tor) {
				if state == "Established" {
					return fmt.Errorf("session %s still Established", peer)
				}
			}
			return nil
		})
	})
}

// TestBaremetalBGPPeeringReviewed: in review mode the peering's plan
// waits for approval like the routes plan: published as ConfigMap
// tfccm-plan-bgp-peering in tfccm's namespace (kind bgp-peering), no
// session comes up until an approver approves it there, then the
// sessions come up.
func TestBaremetalBGPPeeringReviewed(t *testing.T) {
	b := newBaremetal(t, "")
	ctx := context.Background()
	tor, err := b.hosts.StartBGP(hosttest.BGPOptions{Router: filepath.Join(repoRoot(t), "bin", "lbhost-router")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tor.Stop)
	withBGP := tor.BGPSettings(false)
	withBGP["vip_pool"], withBGP["vip_pool6"] = hosttest.BGPPool, hosttest.BGPPool6
	writeBGPConfig(t, b, withBGP, "review = true")
	b.startCCM(t)

	name := annotations.PlanConfigMapName("bgp-peering")
	var hash string
	eventually(t, 3*time.Minute, "the peering's plan published", func(ctx context.Context) error {
		cm, err := b.client.CoreV1().ConfigMaps(tfccmNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		hash = cm.Annotations[annotations.PlanHash]
		if len(hash) != 64 || !strings.Contains(cm.Data["summary"], "to add") || cm.Labels[annotations.PlanKind] != annotations.PlanOfPeering {
			return fmt.Errorf("ConfigMap %s: hash %q summary %q labels %v", name, hash, cm.Data["summary"], cm.Labels)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	for peer, state := range mustSessions(t, tor) {
		if state == "Established" {
			t.Fatalf("session %s Established before the peering's plan was approved", peer)
		}
	}
	cm, err := b.client.CoreV1().ConfigMaps(tfccmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations[annotations.ApprovedPlan.Name] = hash
	if _, err := b.client.CoreV1().ConfigMaps(tfccmNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	approved := time.Now()
	if err := tor.WaitUp(ctx, false, 3*time.Minute); err != nil {
		t.Fatalf("the approved peering did not come up: %v\n%s", err, tor.Logs())
	}
	t.Logf("FIGURE approved peering up after %s", time.Since(approved).Round(time.Millisecond))
}

// writeBGPConfig writes the cloud config as b.writeConfig does, with the
// load_balancer settings as JSON (an HCL expression): the bgp block's
// lists of objects, which harness.HCLObject writes as strings; and
// b.backend.
func writeBGPConfig(t testing.TB, b *baremetal, lb map[string]any, terraformLines ...string) {
	t.Helper()
	js, err := json.Marshal(lb)
	if err != nil || strings.Contains(string(js), "${") {
		t.Fatalf("settings as HCL: %v (%s)", err, js)
	}
	tf := slices.Clone(terraformLines)
	if b.drift != "" {
		tf = append(tf, fmt.Sprintf("drift_interval = %q", b.drift))
	}
	b.cfg, b.workDir = writeCloudConfig(t, b.dir, fmt.Sprintf("template_set = \"baremetal\"\nload_balancer {\n  health_interval = \"2s\"\n  settings = %s\n}\nroutes {\n  batch_window = \"1s\"\n  settings     = %s\n}\n",
		js, harness.HCLObject(b.hosts.RoutesSettings()))+b.backend, tf...)
}

func mustSessions(t testing.TB, tor *hosttest.ToR) map[string]string {
	t.Helper()
	s, err := tor.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
