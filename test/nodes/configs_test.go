package nodes

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var testNode = nodeConfig{
	Name: "node-a", Address: "10.250.0.11", Dir: "/tmp/x/nodes/node-a", Bin: "/repo/bin", Runc: "/usr/sbin/runc",
	CgroupRoot: "/tfccm-t1-n-node-a", ClusterDNS: ClusterDNS, CACert: "/tmp/x/ca.crt",
	Kubelet: "/tmp/x/kubelet-node-a.kubeconfig", Proxy: "/tmp/x/kube-proxy.kubeconfig", ClusterCIDR: "10.244.0.0/16",
}

// The settings this VM needs, by name: a change that drops one breaks the
// nodes in ways that take long to trace (see the package doc).
func TestKubeletAndProxyConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want map[string]any
	}{
		{"kubelet", testNode.kubeletConfig(), map[string]any{
			"kind": "KubeletConfiguration", "failCgroupV1": false, "cgroupDriver": "cgroupfs", "cgroupRoot": "/tfccm-t1-n-node-a",
			"failSwapOn": false, "oomScoreAdj": float64(0), "address": "10.250.0.11",
			"containerRuntimeEndpoint":    "unix:///tmp/x/nodes/node-a/containerd/containerd.sock",
			"imageGCHighThresholdPercent": float64(100), "clusterDomain": "cluster.local",
		}},
		{"kube-proxy", testNode.proxyConfig(), map[string]any{
			"kind": "KubeProxyConfiguration", "mode": "iptables", "hostnameOverride": "node-a",
			"healthzBindAddress": "0.0.0.0:10256", "clusterCIDR": "10.244.0.0/16", "oomScoreAdj": float64(0),
		}},
	} {
		var got map[string]any
		if err := yaml.UnmarshalStrict([]byte(tc.yaml), &got); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, tc.yaml)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %#v, want %#v", tc.name, k, got[k], v)
			}
		}
	}
}

func TestContainerdConfig(t *testing.T) {
	conf := testNode.containerdConfig()
	for _, want := range []string{
		"version = 3",
		`root = "/tmp/x/nodes/node-a/containerd/root"`,
		`address = "/tmp/x/nodes/node-a/containerd/containerd.sock"`,
		"restrict_oom_score_adj = true",
		"netns_mounts_under_state_dir = true",
		`sandbox = "` + PauseImage + `"`,
		`BinaryName = "/usr/sbin/runc"`,
		`bin_dirs = ["/repo/bin/cni"]`,
		`conf_dir = "/tmp/x/nodes/node-a/cni/net.d"`,
	} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("containerd config lacks %q:\n%s", want, conf)
		}
	}
}

func TestCNIConfig(t *testing.T) {
	for _, tc := range []struct {
		name            string
		podCIDRs        []string
		subnets, routes []string
	}{
		{"IPv4", []string{"10.244.1.0/24"}, []string{"10.244.1.0/24"}, []string{"0.0.0.0/0"}},
		{"dual-stack", []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, []string{"0.0.0.0/0", "::/0"}},
	} {
		conf, err := testNode.cniConfig(tc.podCIDRs)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Plugins []struct {
				Type   string `json:"type"`
				IPMasq *bool  `json:"ipMasq"`
				IPAM   struct {
					Ranges  [][]map[string]string `json:"ranges"`
					Routes  []map[string]string   `json:"routes"`
					DataDir string                `json:"dataDir"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(conf), &got); err != nil {
			t.Fatal(err)
		}
		br := got.Plugins[0]
		if br.Type != "bridge" || br.IPMasq == nil || *br.IPMasq {
			t.Errorf("%s: first plugin %+v: want a bridge with ipMasq false (pod ranges are routed)", tc.name, br)
		}
		var subnets, routes []string
		for _, r := range br.IPAM.Ranges {
			subnets = append(subnets, r[0]["subnet"])
		}
		for _, r := range br.IPAM.Routes {
			routes = append(routes, r["dst"])
		}
		if !slices.Equal(subnets, tc.subnets) || !slices.Equal(routes, tc.routes) || br.IPAM.DataDir != "/tmp/x/nodes/node-a/cni/ipam" {
			t.Errorf("%s: IPAM %+v, want ranges %v and routes %v", tc.name, br.IPAM, tc.subnets, tc.routes)
		}
	}
}

// A dual-stack node gives kubelet both addresses, IPv4 first.
func TestNodeIPs(t *testing.T) {
	dual := testNode
	dual.AddressV6 = "fd00:250::11"
	for _, tc := range []struct {
		cfg  nodeConfig
		want string
	}{
		{testNode, "--node-ip=10.250.0.11"},
		{dual, "--node-ip=10.250.0.11,fd00:250::11"},
	} {
		if args := tc.cfg.kubeletArgs(); !slices.Contains(args, tc.want) {
			t.Errorf("kubelet args %v lack %s", args, tc.want)
		}
	}
}

// A dual-stack cluster's CCM routes both pod networks.
func TestClusterCCMFlags(t *testing.T) {
	c := &Cluster{clusterCIDR: DualStackClusterCIDR}
	if flags := c.CCMFlags(); !slices.Contains(flags, "--cluster-cidr="+DualStackClusterCIDR) || len(flags) != len(CCMFlags) {
		t.Errorf("CCMFlags() = %v", flags)
	}
	if !slices.Contains(CCMFlags, "--cluster-cidr=10.244.0.0/16") {
		t.Errorf("CCMFlags %v changed", CCMFlags)
	}
}

// A flag with a comma stays one item of the chart's extraArgs.
func TestFlowList(t *testing.T) {
	var got []string
	if err := yaml.UnmarshalStrict([]byte("extraArgs: "+flowList([]string{"--cluster-cidr=10.244.0.0/16,fd00:10:244::/56", "--v=2"})), &struct {
		ExtraArgs *[]string `json:"extraArgs"`
	}{&got}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"--cluster-cidr=10.244.0.0/16,fd00:10:244::/56", "--v=2"}; !slices.Equal(got, want) {
		t.Errorf("extraArgs %q, want %q", got, want)
	}
}
