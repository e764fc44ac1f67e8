package nodes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/localcloud"
)

// PodNetns returns the network namespace file of a running pod
// (/proc/PID/ns/net of a process in the pod's cgroup on its node), so a
// test can connect from inside the pod as its containers do.
func (c *Cluster) PodNetns(pod *corev1.Pod) (string, error) {
	var node *Node
	for _, n := range c.Nodes {
		if n.Name == pod.Spec.NodeName {
			node = n
		}
	}
	if node == nil {
		return "", fmt.Errorf("pod %s/%s is on %q, not one of this cluster's nodes", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	hs, err := hierarchies()
	if err != nil {
		return "", err
	}
	uid := "pod" + string(pod.UID)
	for _, h := range hs {
		var found string
		_ = filepath.WalkDir(filepath.Join(h, node.cfg.CgroupRoot), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && filepath.Base(p) == uid {
				found = p
				return filepath.SkipAll
			}
			return nil
		})
		if found == "" {
			continue
		}
		pids, err := cgroupPIDs(strings.TrimPrefix(found, h))
		if err != nil || len(pids) == 0 {
			continue
		}
		return fmt.Sprintf("/proc/%d/ns/net", pids[0]), nil
	}
	return "", fmt.Errorf("pod %s/%s: no process found in its cgroups on %s", pod.Namespace, pod.Name, node.Name)
}

// HTTPGetFrom fetches url with a connection made inside the network
// namespace file netns (see PodNetns) and returns the body.
func HTTPGetFrom(ctx context.Context, netns, url string) (string, error) {
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var conn net.Conn
				err := localcloud.InNetnsPath(netns, func() error {
					var err error
					conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
					return err
				})
				return conn, err
			},
		},
	}
	return testkit.GetOK(ctx, client, url)
}

// NetexecDeployment is a Deployment called name (pods labelled app=name)
// of replicas agnhost netexec pods serving HTTP on 8080, spread over the
// nodes by hostname (when: DoNotSchedule for exactly one per node).
func NetexecDeployment(name string, replicas int32, when corev1.UnsatisfiableConstraintAction) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: when, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
					Containers: []corev1.Container{{Name: "netexec", Image: AgnhostImage, Args: []string{"netexec", "--http-port=8080"},
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
				},
			},
		},
	}
}
