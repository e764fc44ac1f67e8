package devcluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// startControllers runs kube-controller-manager (node pod CIDRs from
// opts.ClusterCIDR) and kube-scheduler, each as its own bootstrap RBAC
// user, without serving ports or leader election.
func (c *Cluster) startControllers(opts Options) error {
	if err := c.startControllerManager(opts, append([]string{
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + opts.ClusterCIDR,
	}, nodeCIDRMaskFlags(opts.ClusterCIDR)...)...); err != nil {
		return err
	}
	bin := filepath.Dir(c.binAPIServer)
	sched, err := c.UserKubeconfig("kube-scheduler", "127.0.0.1", "system:kube-scheduler")
	if err != nil {
		return err
	}
	cmd, err := StartProcess(c.dir, "kube-scheduler", opts.Detach, filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+sched,
		"--authentication-kubeconfig="+sched,
		"--authorization-kubeconfig="+sched,
		"--secure-port=0",
		"--leader-elect=false",
		"--v=1",
	)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	c.controllers = append(c.controllers, cmd)
	return nil
}

// nodeCIDRMaskFlags are the node pod CIDR sizes of clusterCIDR (one CIDR,
// or an IPv4 and an IPv6 one, comma-separated): a /24 of IPv4, a /64 of
// IPv6.
func nodeCIDRMaskFlags(clusterCIDR string) []string {
	v4, v6 := false, false
	for _, cidr := range strings.Split(clusterCIDR, ",") {
		if strings.Contains(cidr, ":") {
			v6 = true
		} else {
			v4 = true
		}
	}
	switch {
	case v4 && v6:
		return []string{"--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"}
	case v6:
		return []string{"--node-cidr-mask-size=64"}
	default:
		return []string{"--node-cidr-mask-size=24"}
	}
}

// startControllerManager runs kube-controller-manager as its bootstrap RBAC
// user (each controller with its own ServiceAccount's credentials), with
// extra flags.
func (c *Cluster) startControllerManager(opts Options, extra ...string) error {
	bin := filepath.Dir(c.binAPIServer)
	kcm, err := c.UserKubeconfig("kube-controller-manager", "127.0.0.1", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	args := append([]string{
		"--kubeconfig=" + kcm,
		"--authentication-kubeconfig=" + kcm,
		"--authorization-kubeconfig=" + kcm,
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.pki.SAKey,
		"--root-ca-file=" + c.pki.CACert,
		"--service-cluster-ip-range=" + opts.ServiceCIDRs,
		"--v=1",
	}, extra...)
	cmd, err := StartProcess(c.dir, "kube-controller-manager", opts.Detach, filepath.Join(bin, "kube-controller-manager"), args...)
	if err != nil {
		return err
	}
	c.controllers = append(c.controllers, cmd)
	return nil
}
