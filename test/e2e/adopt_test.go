package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/standin"
)

// existingLoadBalancers are two Hetzner load balancers made before tfccm
// (as the hcloud CCM leaves one: a service per port, a server target per
// node): the team's, serving port 80 on node-a and node-b, and the
// platform's.
const existingLoadBalancers = `terraform {
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = "~> 1.60"
    }
  }
}

variable "servers" {
  type = map(number)
}

resource "hcloud_load_balancer" "team" {
  name               = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5"
  load_balancer_type = "lb11"
  location           = "fsn1"
}

resource "hcloud_load_balancer_service" "http" {
  load_balancer_id = hcloud_load_balancer.team.id
  protocol         = "tcp"
  listen_port      = 80
  destination_port = 30080
}

resource "hcloud_load_balancer_target" "node" {
  for_each = var.servers

  type             = "server"
  load_balancer_id = tonumber(hcloud_load_balancer.team.id)
  server_id        = each.value
}

resource "hcloud_load_balancer" "platform" {
  name               = "platform-ingress"
  load_balancer_type = "lb11"
  location           = "fsn1"
}
`

// TestAdoptThroughStandIn: with the hcloud set against the real control
// plane and the stand-in's cloud, a namespace tenant (its own
// ServiceAccount token) asking to adopt the platform's load balancer is
// refused with a Warning Event and Accepted=False and nothing is planned;
// adopting the load balancer the admin allows for the namespace imports
// it: no new load balancer, the Service gets its address; the tenant
// asking to keep it at delete is refused (retain is not allowed in its
// namespace), and deleting the Service destroys it while the platform's
// stays. In a namespace the admin allows retain-on-delete, deleting a
// Service forgets its load balancer: the plan says "to forget", the cloud
// keeps it.
func TestAdoptThroughStandIn(t *testing.T) {
	env := standin.Setup(t, "hcloud")
	env.SetFixture(t, map[string]map[string]any{
		"hcloud_server":        {"datacenter": "fsn1-dc14", "status": "running"},
		"hcloud_load_balancer": {"network_zone": "eu-central"},
	})
	infra, servers := applyStandInInfra(t, env, "hcloud", "hcloud_server")
	old := t.TempDir()
	writeFile(t, old, "main.tf", existingLoadBalancers)
	writeFile(t, old, "terraform.tfvars", fmt.Sprintf("servers = { node-a = %s, node-b = %s }\n", servers["node-a"], servers["node-b"]))
	env.Tofu(t, old, "init", "-input=false", "-no-color")
	env.Tofu(t, old, "apply", "-auto-approve", "-input=false", "-no-color")
	lbs := map[string]standin.Call{}
	for _, c := range env.Calls(t) {
		if c.Type == "hcloud_load_balancer" {
			lbs[fmt.Sprint(c.Values["name"])] = c
		}
	}
	team, platform := lbs["a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5"], lbs["platform-ingress"]
	if team.ID == "" || platform.ID == "" {
		t.Fatalf("existing load balancers %+v", lbs)
	}
	// Only the cloud knows them now.
	if err := os.Remove(filepath.Join(old, "terraform.tfstate")); err != nil {
		t.Fatal(err)
	}

	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeStandInCloudConfig(t, env, fmt.Sprintf(`template_set = "hcloud"
load_balancer {
  settings = { location = "fsn1" }
  adopt "shop" {
    ids = [%q]
  }
  adopt "keep" {
    retain = true
  }
}
instances {
  ttl = "2s"
  source "infra" {
    dir = %q
  }
}
`, team.ID, infra), `HCLOUD_TOKEN = "not-used-by-the-stand-in"`)
	registerNode(t, client, harness.Node{Name: "node-a", Uninitialized: true})
	registerNode(t, client, harness.Node{Name: "node-b", Uninitialized: true})
	startCCM(t, cluster, cfg)
	for _, name := range []string{"node-a", "node-b"} {
		eventually(t, 60*time.Second, name+" initialized", func(ctx context.Context) error {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n.Spec.ProviderID != "hcloud://"+servers[name] {
				return fmt.Errorf("providerID %q", n.Spec.ProviderID)
			}
			return nil
		})
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenant := tenantClient(t, cluster, "shop", "team")
	adopting := func(name, id string, nodePort int32) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Annotations: map[string]string{"tfccm.io/adopt": id}},
			Spec: corev1.ServiceSpec{
				Type:  corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: nodePort, Protocol: corev1.ProtocolTCP}},
			},
		}
	}

	// The platform's load balancer is not the tenant's to adopt.
	if _, err := tenant.CoreV1().Services("shop").Create(ctx, adopting("steal", platform.ID, 30081), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`annotation tfccm.io/adopt: namespace shop may not adopt %q`, platform.ID)
	waitRefused(t, client, "shop", "steal", want)
	if s, err := client.CoreV1().Services("shop").Get(ctx, "steal", metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
		t.Errorf("a refused adoption got an address: %v", err)
	}
	if ws, _ := filepath.Glob(filepath.Join(workDir, "lb-*")); len(ws) != 0 {
		t.Errorf("a refused adoption has workspaces %v", ws)
	}
	if err := tenant.CoreV1().Services("shop").Delete(ctx, "steal", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The team's load balancer is adopted: imported, not created.
	if _, err := tenant.CoreV1().Services("shop").Create(ctx, adopting("web", team.ID, 30080), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ip, err := harness.WaitForIngress(ctx, client, "shop", "web", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ip != team.Values["ipv4"] {
		t.Errorf("status IP %s, want the adopted load balancer's %v", ip, team.Values["ipv4"])
	}
	for _, c := range env.Calls(t) {
		if c.Op != "update" || c.ID == platform.ID {
			t.Errorf("adoption made a %s call on %s %s (want updates of the adopted load balancer only)", c.Op, c.Type, c.ID)
		}
	}

	// A later change applies to the adopted load balancer: the new port is
	// created on it (not imported: the adoption applied).
	eventually(t, 2*time.Minute, "a port added to the adopted load balancer", func(ctx context.Context) error {
		s, err := tenant.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP})
		_, err = tenant.CoreV1().Services("shop").Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	waitStandInCalls(t, env, "port 443 created on the adopted load balancer", func(cs []standin.Call) bool {
		for _, c := range cs {
			if c.Op == "create" && c.Type == "hcloud_load_balancer_service" && fmt.Sprint(c.Values["listen_port"]) == "443" && fmt.Sprint(c.Values["load_balancer_id"]) == team.ID {
				return true
			}
		}
		return false
	})

	// Keeping it at delete is not the shop tenant's to ask for: refused,
	// nothing planned, and the delete below destroys it as usual.
	eventually(t, time.Minute, "retain-on-delete asked for", func(ctx context.Context) error {
		s, err := tenant.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Annotations["tfccm.io/retain-on-delete"] = "true"
		_, err = tenant.CoreV1().Services("shop").Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	wantRetain := `annotation tfccm.io/retain-on-delete: namespace shop may not keep its load balancers`
	waitRefused(t, client, "shop", "web", wantRetain)

	// Deleting the Service destroys the adopted load balancer, not the platform's.
	if err := tenant.CoreV1().Services("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "Service deleted (finalizer released)", func(ctx context.Context) error {
		if _, err := client.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	deleted := map[string]bool{}
	for _, c := range env.Calls(t) {
		if c.Op == "delete" {
			deleted[c.Type+" "+c.ID] = true
		}
	}
	if !deleted["hcloud_load_balancer "+team.ID] || deleted["hcloud_load_balancer "+platform.ID] || len(deleted) != 5 {
		t.Errorf("deletes %v, want the adopted load balancer, its two services and two targets", deleted)
	}
	if left, _ := filepath.Glob(filepath.Join(env.Store, "hcloud_load_balancer", "*")); len(left) != 1 {
		t.Errorf("load balancers left %v, want the platform's", left)
	}

	// In namespace keep the admin allows retain-on-delete: deleting the
	// Service forgets its load balancer (the Event's plan says so) and the
	// cloud keeps it; the workspace goes.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "keep"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept := adopting("kept", "", 30082)
	kept.Namespace, kept.Annotations = "keep", map[string]string{"tfccm.io/retain-on-delete": "true"}
	if _, err := client.CoreV1().Services("keep").Create(ctx, kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := harness.WaitForIngress(ctx, client, "keep", "kept", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	env.Calls(t)
	if err := client.CoreV1().Services("keep").Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "kept: Service deleted, its load balancer forgotten", func(ctx context.Context) error {
		if _, err := client.CoreV1().Services("keep").Get(ctx, "kept", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		// The load balancer, its service and two server targets.
		if ev := harness.Events(ctx, client, "keep", "kept"); !strings.Contains(ev, "applying the plan: 0 to add, 0 to change, 0 to destroy, 4 to forget") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	if calls := env.Calls(t); len(calls) != 0 {
		t.Errorf("a kept load balancer's delete asked the cloud: %+v", calls)
	}
	if left, _ := filepath.Glob(filepath.Join(env.Store, "hcloud_load_balancer", "*")); len(left) != 2 {
		t.Errorf("load balancers left %v, want the platform's and the kept one", left)
	}
	if ws, _ := filepath.Glob(filepath.Join(workDir, "lb-*")); len(ws) != 0 {
		t.Errorf("workspaces left after the delete: %v", ws)
	}
}

// waitRefused waits for the Service's Warning Event and Accepted=False
// (invalid input) carrying want.
func waitRefused(t *testing.T, client kubernetes.Interface, namespace, name, want string) {
	t.Helper()
	eventually(t, time.Minute, name+": Warning Event and Accepted=False: "+want, func(ctx context.Context) error {
		s, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, lbcontroller.ConditionAccepted)
		condOK := c != nil && c.Status == metav1.ConditionFalse && c.Reason == lbcontroller.CondReasonInvalidInput && strings.Contains(c.Message, want)
		ev := harness.Events(ctx, client, namespace, name)
		if evOK := strings.Contains(ev, "Warning "+lbcontroller.ReasonRenderFailed+": "+want); !evOK || !condOK {
			// Both, whichever is missing: a condition a late result
			// overwrote is told apart from an Event not yet listed.
			return fmt.Errorf("Event found %v, condition as wanted %v: condition %+v; events: %s", evOK, condOK, c, ev)
		}
		return nil
	})
}
