package nodes

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Images the nodes run. The tags are those kubelet 1.36 and the upstream
// e2e framework expect; make tools-nodes builds them into bin/images.
const (
	PauseImage   = "registry.k8s.io/pause:3.10.1"
	AgnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"
)

// nodeConfig is everything one node's configuration files are made of.
type nodeConfig struct {
	Name        string
	Address     string // the node's InternalIP in the cloud network
	AddressV6   string // its IPv6 InternalIP in a dual-stack cluster, else ""
	Dir         string // per-node directory (absolute)
	Bin         string // directory of the node binaries
	Runc        string // OCI runtime binary
	CgroupRoot  string // kubelet's cgroup root, e.g. /tfccm-t1234-node-a
	ClusterDNS  string
	CACert      string
	Kubelet     string // kubelet's kubeconfig
	Proxy       string // kube-proxy's kubeconfig
	ClusterCIDR string // one CIDR, or an IPv4 and an IPv6 one (dual-stack)
	FRR         bool   // the node runs its own FRR (Options.FRR)
}

// nodeIPs are kubelet's --node-ip: the IPv4 address, and the IPv6 one of a
// dual-stack node after it.
func (c nodeConfig) nodeIPs() string {
	if c.AddressV6 == "" {
		return c.Address
	}
	return c.Address + "," + c.AddressV6
}

func (c nodeConfig) socket() string { return c.Dir + "/containerd/containerd.sock" }

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string { return strconv.Quote(s) }

// containerdConfig is containerd's config (version 3): everything under
// the node's directory, runc as the runtime, restricted oom_score_adj (the
// VM lacks CAP_SYS_RESOURCE), network namespaces under its state dir, no
// NRI, the locally built pause image pinned.
func (c nodeConfig) containerdConfig() string {
	d := c.Dir + "/containerd"
	q := tomlString
	return strings.Join([]string{
		"version = 3",
		"root = " + q(d+"/root"),
		"state = " + q(d+"/state"),
		`disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]`,
		"",
		"[grpc]",
		"  address = " + q(c.socket()),
		"[ttrpc]",
		"  address = " + q(d+"/containerd.sock.ttrpc"),
		"[debug]",
		`  address = ""`,
		"[metrics]",
		`  address = ""`,
		"",
		"[plugins.'io.containerd.internal.v1.opt']",
		"  path = " + q(d+"/opt"),
		"[plugins.'io.containerd.cri.v1.images']",
		"  snapshotter = 'overlayfs'",
		"[plugins.'io.containerd.cri.v1.images'.pinned_images]",
		"  sandbox = " + q(PauseImage),
		"[plugins.'io.containerd.cri.v1.runtime']",
		"  restrict_oom_score_adj = true",
		"  netns_mounts_under_state_dir = true",
		"  enable_cdi = false",
		"[plugins.'io.containerd.cri.v1.runtime'.containerd]",
		"  default_runtime_name = 'runc'",
		"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]",
		"  runtime_type = 'io.containerd.runc.v2'",
		"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
		"  BinaryName = " + q(c.Runc),
		"  Root = " + q(d+"/runc"),
		"  SystemdCgroup = false",
		"[plugins.'io.containerd.cri.v1.runtime'.cni]",
		"  bin_dirs = [" + q(c.Bin+"/cni") + "]",
		"  conf_dir = " + q(c.Dir+"/cni/net.d"),
		"[plugins.'io.containerd.grpc.v1.cri']",
		"  stream_server_address = '127.0.0.1'",
		"",
	}, "\n")
}

// jsonString quotes s as a JSON (and so YAML) string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// kubeletConfig is kubelet's KubeletConfiguration for this VM: cgroup v1
// with the cgroupfs driver under the node's own cgroup root, swap allowed,
// no oom_score_adj changes, every path under the node's directory, image
// garbage collection off (images cannot be pulled again) and no eviction
// on a busy disk.
func (c nodeConfig) kubeletConfig() string {
	q := jsonString
	return strings.Join([]string{
		"apiVersion: kubelet.config.k8s.io/v1beta1",
		"kind: KubeletConfiguration",
		"failCgroupV1: false",
		"cgroupDriver: cgroupfs",
		"cgroupRoot: " + q(c.CgroupRoot),
		"cgroupsPerQOS: true",
		"enforceNodeAllocatable: [pods]",
		"failSwapOn: false",
		"oomScoreAdj: 0",
		"containerRuntimeEndpoint: " + q("unix://"+c.socket()),
		"address: " + q(c.Address),
		"port: 10250",
		"readOnlyPort: 0",
		"healthzBindAddress: 127.0.0.1",
		"healthzPort: 10248",
		"authentication:",
		"  anonymous: {enabled: false}",
		"  webhook: {enabled: true}",
		"  x509: {clientCAFile: " + q(c.CACert) + "}",
		"authorization: {mode: Webhook}",
		"clusterDNS: [" + q(c.ClusterDNS) + "]",
		"clusterDomain: cluster.local",
		"resolvConf: " + q(c.Dir+"/resolv.conf"),
		"podLogsDir: " + q(c.Dir+"/pod-logs"),
		"volumePluginDir: " + q(c.Dir+"/volume-plugins"),
		"imageGCHighThresholdPercent: 100",
		"imageGCLowThresholdPercent: 99",
		"evictionHard: {memory.available: 1Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}",
		"serializeImagePulls: false",
		"registerNode: true",
		"localStorageCapacityIsolation: false",
		"nodeStatusReportFrequency: 10s",
		"",
	}, "\n")
}

// proxyConfig is kube-proxy's configuration: iptables mode, health checks
// on :10256 of every node address (what load balancers probe), and no
// conntrack sysctls (they are not per network namespace).
func (c nodeConfig) proxyConfig() string {
	q := jsonString
	return strings.Join([]string{
		"apiVersion: kubeproxy.config.k8s.io/v1alpha1",
		"kind: KubeProxyConfiguration",
		"clientConnection: {kubeconfig: " + q(c.Proxy) + "}",
		"hostnameOverride: " + q(c.Name),
		"bindAddress: 0.0.0.0",
		"healthzBindAddress: 0.0.0.0:10256",
		"metricsBindAddress: 127.0.0.1:10249",
		"mode: iptables",
		"clusterCIDR: " + q(c.ClusterCIDR),
		"oomScoreAdj: 0",
		"conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}",
		"",
	}, "\n")
}

// cniConfig is the node's CNI network: a bridge with the pod CIDRs (one,
// or one of each family: pods get an address of each; no masquerade: the
// cloud routes pod ranges), host-local IPAM keeping its leases under the
// node's directory, portmap for hostPort.
func (c nodeConfig) cniConfig(podCIDRs []string) (string, error) {
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, cidr := range podCIDRs {
		ranges = append(ranges, []map[string]string{{"subnet": cidr}})
		dst := "0.0.0.0/0"
		if strings.Contains(cidr, ":") {
			dst = "::/0"
		}
		routes = append(routes, map[string]string{"dst": dst})
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "tfccm",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cni0",
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  ranges,
					"routes":  routes,
					"dataDir": c.Dir + "/cni/ipam",
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return "", fmt.Errorf("node %s: CNI config: %w", c.Name, err)
	}
	return string(b) + "\n", nil
}
