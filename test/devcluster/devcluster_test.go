package devcluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStartStop(t *testing.T) {
	start := time.Now()
	c, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ready in %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	client := c.Client()
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("get kube-system: %v", err)
	}
	// RBAC is on: the bootstrap cluster roles exist.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "devcluster-test"}}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cluster role: %v", err)
	}
	if _, err := client.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Fatalf("RBAC bootstrap role cluster-admin missing: %v", err)
	}
	host := strings.TrimPrefix(c.Server(), "https://")
	etcdPID, apiPID := c.etcd.Process.Pid, c.apiserver.Process.Pid
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{etcdPID, apiPID} {
		if Alive(pid) {
			t.Errorf("process %d still running after Stop", pid)
		}
	}
	if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		conn.Close()
		t.Errorf("apiserver port %s still open after Stop", host)
	}
}
