package nodes

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// uninstallLayout: one replica with host networking on node-a.
const uninstallLayout = "mode: deployment\nreplicas: 1\nhostNetwork: true\nnodeSelector:\n  kubernetes.io/hostname: node-a\n"

// TestUninstallGuardOnRealNodes: `helm uninstall` while tfccm serves a
// LoadBalancer Service is refused by the chart's pre-delete hook (a Job
// running `tfccm services --uninstall=refuse` from the image, whose log
// names the Service); the Service stays served. With
// uninstall.loadBalancers=delete the uninstall deletes the Service, waits
// for tfccm to destroy its load balancer, and leaves nothing on the LB
// hosts and no Service Terminating.
func TestUninstallGuardOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	ic := installInCluster(t, imageArchive(t), uninstallLayout)
	client := ic.client
	ccmLog := func() string { return ccmPodLogs(client, 40) }
	waitCCMPod(t, client)
	checkNodesInitialized(t, ic.c, ccmLog)
	vip := createLBService(t, client, "web", ccmLog)

	out, err := ic.rel.Helm("uninstall", ic.rel.Name, "--wait", "--timeout", "3m")
	if err == nil {
		t.Fatalf("helm uninstall with a served Service succeeded:\n%s", out)
	}
	t.Logf("helm uninstall refused: %s", strings.TrimSpace(string(out)))
	if !strings.Contains(string(out), "tfccm-uninstall") {
		t.Errorf("helm uninstall's error does not name the hook Job:\n%s", out)
	}
	hookLog := podLogs(client, "app.kubernetes.io/name=tfccm-uninstall", 0)
	if !strings.Contains(hookLog, "default/web") || !strings.Contains(hookLog, "tfccm serves 1 LoadBalancer Service") {
		t.Errorf("the hook's log does not name the Service:\n%s", hookLog)
	}
	svc, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || svc.DeletionTimestamp != nil {
		t.Fatalf("after the refused uninstall the Service is %v (%v)", svc, err)
	}
	if ic.hosts.Master(vip) == nil {
		t.Errorf("after the refused uninstall no LB host holds %s", vip)
	}
	waitCCMPod(t, client) // still running

	if err := ic.rel.Upgrade(3*time.Minute, "uninstall.loadBalancers=delete"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ic.rel.Uninstall(5 * time.Minute); err != nil {
		t.Fatalf("%v\nhook log:\n%s\nCCM log:\n%s", err, podLogs(client, "app.kubernetes.io/name=tfccm-uninstall", 40), ccmLog())
	}
	t.Logf("helm uninstall with uninstall.loadBalancers=delete took %s", time.Since(start).Round(time.Second))
	if _, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the Service is still there after the uninstall")
	}
	for _, h := range ic.hosts.Hosts {
		if o := h.Objects(); len(o) != 0 || h.HasAddress(vip) {
			t.Errorf("LB host %s after the uninstall: objects %v, holds the VIP %v", h.Name, o, h.HasAddress(vip))
		}
	}
}
