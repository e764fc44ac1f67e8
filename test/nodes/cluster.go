package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/localcloud"
)

// Options configure Up. Zero values get defaults.
type Options struct {
	// Dir holds the control plane (certificates, logs, the kubeconfig),
	// cloud/ (the local cloud's workspace), coredns/ and nodes/<name>/.
	// Required.
	Dir string
	// Nodes is the number of nodes: node-a, node-b, ... Default 2.
	Nodes int
	// Prefix of the local cloud's names (see localcloud.Options). Default
	// "tfccmdc"; ForTest picks one from the test process's ID (as
	// localcloud.ForTest does, so hack/leftovers.sh knows whose it is).
	Prefix string
	// ClusterCIDR is the pod network; nodes get /24s of it. Default
	// 10.244.0.0/16 (DualStack: DualStackClusterCIDR).
	ClusterCIDR string
	// DualStack makes a dual-stack cluster: every node has an IPv6
	// address (fd00:250::N/64) beside its IPv4 one on the same segment
	// and both as kubelet node IPs, the Service range and the pod network
	// are of both families (DualStackServiceCIDRs, DualStackClusterCIDR;
	// every node a /24 and a /64), the CNI gives pods an address of each,
	// kube-proxy serves both. IPv4 comes first. The host route (HostRoute)
	// and the NAT to the host stay IPv4.
	DualStack bool
	// Detach starts every process in its own session, to outlive the caller
	// (`devcluster up --nodes`); Down(dir) stops them.
	Detach bool
	// HostRoute routes the cloud's node network from the host (through the
	// cloud's router), so the apiserver reaches kubelets (kubectl logs,
	// exec). One cluster at a time can have it: Up fails if the host
	// already routes the node network.
	HostRoute bool
	// FRR gives every node its own FRR, as a machine with Debian's frr
	// has: a tmpfs over /var/run/frr and /etc/frr in the node's mount
	// namespace (owned by frr, an empty frr.conf) and zebra, bgpd, bfdd
	// and staticd from /usr/lib/frr running in its mount and network
	// namespaces with the default pathspace, so a pod's hostPath
	// /var/run/frr (the chart's node agent with nodeAgent.bgp) reaches its
	// own node's FRR. Node.Vtysh talks to it.
	FRR bool
	// ReadyTimeout bounds the wait for every node to register with a pod
	// CIDR. Default 3m.
	ReadyTimeout time.Duration
}

// Cluster is a control plane with real nodes in a local cloud.
type Cluster struct {
	*devcluster.Cluster
	Cloud *localcloud.Cloud
	Nodes []*Node
	dir   string
	// clusterCIDR is the pod network (Options.ClusterCIDR).
	clusterCIDR string
}

// state is what Down needs of a cluster, kept in <Dir>/nodes.json.
type state struct {
	Tofu     string      `json:"tofu"`
	CloudDir string      `json:"cloud_dir"`
	Nodes    []nodeState `json:"nodes"`
}

type nodeState struct {
	Dir        string `json:"dir"`
	CgroupRoot string `json:"cgroup_root"`
}

const stateFile = "nodes.json"

// NodeNetwork is the local cloud's node network (examples/local/infra);
// NodeNetwork6 its IPv6 one (Options.DualStack).
const (
	NodeNetwork  = "10.250.0.0/24"
	NodeNetwork6 = "fd00:250::/64"
)

// The ranges of a dual-stack cluster (Options.DualStack): Services' and
// pods', IPv4 first.
const (
	DualStackServiceCIDRs = "10.0.0.0/24,fd00:10:96::/112"
	DualStackClusterCIDR  = "10.244.0.0/16,fd00:10:244::/56"
)

// IsNodesDir reports whether dir holds a cluster Up made (with nodes).
func IsNodesDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, stateFile))
	return err == nil
}

// binaries every node needs, in the repository's bin/.
var binaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
	"containerd", "containerd-shim-runc-v2", "ctr", "coredns", "cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap",
	"images/pause.tar", "images/agnhost.tar"}

// Up brings up the local cloud with opts.Nodes nodes, the control plane
// (reachable from the nodes at the host's end of the cloud link) with
// kube-controller-manager and kube-scheduler, CoreDNS, and on every node
// containerd, kubelet and kube-proxy; it returns once every node has
// registered (tainted uninitialized, until a CCM initializes it) and has
// its CNI network. On error it takes down what it started.
func Up(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("nodes: Options.Dir is required")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.Nodes < 1 || opts.Nodes > 26 {
		return nil, fmt.Errorf("nodes: %d nodes: want 1 to 26", opts.Nodes)
	}
	var serviceCIDRs string // devcluster's default
	switch {
	case opts.ClusterCIDR != "":
	case opts.DualStack:
		opts.ClusterCIDR = DualStackClusterCIDR
	default:
		opts.ClusterCIDR = "10.244.0.0/16"
	}
	if opts.DualStack {
		serviceCIDRs = DualStackServiceCIDRs
	}
	if opts.Prefix == "" {
		opts.Prefix = "tfccmdc"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 3 * time.Minute
	}
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin")
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("nodes: %s missing (run `make tools-nodes`)", filepath.Join(bin, b))
		}
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, errors.New("nodes: runc not found (make tools installs Debian's runc)")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var specs []localcloud.NodeSpec
	for i := 0; i < opts.Nodes; i++ {
		specs = append(specs, localcloud.NodeSpec{Name: "node-" + string(rune('a'+i)), Zone: "local-a", Region: "local", InstanceType: "local.small", IPv6: opts.DualStack})
	}
	st := state{CloudDir: filepath.Join(dir, "cloud")}
	cloud, err := localcloud.Up(ctx, localcloud.Options{Prefix: opts.Prefix, Nodes: specs, WorkDir: st.CloudDir})
	if err != nil {
		return nil, err
	}
	st.Tofu = cloud.Tofu
	c = &Cluster{Cloud: cloud, dir: dir, clusterCIDR: opts.ClusterCIDR}
	defer func() {
		if err != nil {
			err = errors.Join(err, Down(context.WithoutCancel(ctx), dir))
		}
	}()
	if err := writeState(dir, st); err != nil {
		return c, err
	}
	if err := natToHost(cloud); err != nil {
		return c, err
	}
	if opts.HostRoute {
		// The route goes with the host's link to the cloud when the cloud is destroyed.
		if out, err := exec.Command("ip", "route", "add", NodeNetwork, "via", cloud.CloudAddress, "dev", cloud.Prefix+"-h").CombinedOutput(); err != nil {
			return c, fmt.Errorf("nodes: route %s from the host (another cluster with HostRoute running?): %v: %s", NodeNetwork, err, out)
		}
	}
	c.Cluster, err = devcluster.Start(ctx, devcluster.Options{Dir: dir, Detach: opts.Detach, Address: cloud.HostAddress,
		ClusterCIDR: opts.ClusterCIDR, ServiceCIDRs: serviceCIDRs})
	if err != nil {
		return c, err
	}
	client := c.Client()
	if err := startCoreDNS(ctx, c.Cluster, client, filepath.Join(dir, "coredns"), bin, cloud.HostAddress, opts.Detach); err != nil {
		return c, err
	}
	proxy, err := c.UserKubeconfig("kube-proxy", cloud.HostAddress, "system:kube-proxy")
	if err != nil {
		return c, err
	}
	images := []string{filepath.Join(bin, "images", "pause.tar"), filepath.Join(bin, "images", "agnhost.tar")}
	for _, name := range cloud.Nodes() {
		info := cloud.Node(name)
		kubelet, err := c.UserKubeconfig("kubelet-"+name, cloud.HostAddress, "system:node:"+name, "system:nodes")
		if err != nil {
			return c, err
		}
		cfg := nodeConfig{
			Name: name, Address: info.Address, AddressV6: info.AddressV6, Dir: filepath.Join(dir, "nodes", name), Bin: bin, Runc: runc,
			CgroupRoot: "/" + cgroupPrefix + info.Netns, ClusterDNS: ClusterDNS, CACert: c.CACert(),
			Kubelet: kubelet, Proxy: proxy, ClusterCIDR: opts.ClusterCIDR, FRR: opts.FRR,
		}
		st.Nodes = append(st.Nodes, nodeState{Dir: cfg.Dir, CgroupRoot: cfg.CgroupRoot})
		if err := writeState(dir, st); err != nil {
			return c, err
		}
		n, err := startNode(ctx, cfg, info.Netns, images, opts.Detach)
		if n != nil && n.holder != nil {
			c.Nodes = append(c.Nodes, n)
		}
		if err != nil {
			return c, err
		}
	}
	for _, n := range c.Nodes {
		if err := n.writeCNIConfig(ctx, client, opts.ReadyTimeout); err != nil {
			return c, err
		}
	}
	return c, nil
}

func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, stateFile), b, 0o600)
}

// natToHost makes the cloud's router masquerade what it sends to the host
// (nodes' and pods' connections to the apiserver and CoreDNS): the host has
// no route back into a cloud's node network (several clouds use the same
// one). Connections from the host (to VIPs) are unaffected. The rule goes
// with the cloud's namespace.
func natToHost(cloud *localcloud.Cloud) error {
	out, err := exec.Command("nsenter", "--net="+filepath.Join("/run/netns", cloud.CloudNetns), "--",
		"iptables", "-w", "-t", "nat", "-A", "POSTROUTING", "-o", cloud.Prefix+"-c", "-j", "MASQUERADE").CombinedOutput()
	if err != nil {
		return fmt.Errorf("nodes: NAT in the cloud router: %v: %s", err, out)
	}
	return nil
}

// CCMFlags are CCMFlags with this cluster's pod network as --cluster-cidr.
func (c *Cluster) CCMFlags() []string {
	out := slices.Clone(CCMFlags)
	for i, f := range out {
		if strings.HasPrefix(f, "--cluster-cidr=") {
			out[i] = "--cluster-cidr=" + c.clusterCIDR
		}
	}
	return out
}

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// Down takes down the cluster Up made in dir, whether this process started
// it or an earlier `devcluster up --nodes` did: nodes (pods, shims,
// cgroups, mounts), CoreDNS, the control plane, the local cloud; then
// removes dir.
func Down(ctx context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("nodes: %s: %w", stateFile, err)
	}
	var errs []error
	for _, n := range st.Nodes {
		for i := len(components) - 1; i >= 0; i-- {
			if pid, ok := devcluster.ReadPID(n.Dir, components[i]); ok {
				errs = append(errs, devcluster.StopPID(pid, 10*time.Second))
			}
		}
		holder, _ := devcluster.ReadPID(n.Dir, "mountns")
		errs = append(errs, stopNodeRest(n.CgroupRoot, holder))
	}
	if pid, ok := devcluster.ReadPID(filepath.Join(dir, "coredns"), "coredns"); ok {
		errs = append(errs, devcluster.StopPID(pid, 10*time.Second))
	}
	errs = append(errs, devcluster.StopDir(dir))
	if _, err := os.Stat(filepath.Join(st.CloudDir, "infra")); err == nil {
		if _, err := localcloud.RunTofu(ctx, st.Tofu, filepath.Join(st.CloudDir, "infra"), "destroy", "-auto-approve", "-input=false", "-no-color"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

var testSeq int

// ForTest brings up a cluster with real nodes in a temporary directory and
// takes it down when the test ends.
func ForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Prefix == "" {
		testSeq++
		opts.Prefix = fmt.Sprintf("t%05x%x", os.Getpid()&0xfffff, 8+testSeq%8)
	}
	start := time.Now()
	if opts.HostRoute {
		// One host route to the nodes' network fits the machine: tests in
		// other processes (parallel packages, other worktrees) that want
		// one wait here rather than fail on the route.
		unlock, err := LockHostRoute()
		if err != nil {
			t.Fatalf("real nodes up: %v", err)
		}
		t.Cleanup(unlock)
		if waited := time.Since(start); waited > time.Second {
			t.Logf("waited %s for another test's host route to the nodes' network", waited.Round(time.Second))
		}
	}
	c, err := Up(context.Background(), opts)
	if err != nil {
		t.Fatalf("real nodes up: %v", err)
	}
	t.Logf("%d real nodes up in %s", len(c.Nodes), time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				for _, comp := range components {
					t.Logf("%s %s log tail:\n%s", n.Name, comp, logTail(filepath.Join(n.Dir, comp+".log"), 15))
				}
			}
		}
		if err := Down(context.Background(), c.dir); err != nil {
			t.Errorf("real nodes down: %v", err)
		}
	})
	return c
}

// Client is an admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.Cluster.Client() }

// hostRouteLock is the file whose lock a test holds while its cluster has
// the host route to NodeNetwork (HostRoute).
const hostRouteLock = "/run/tfccm-nodes-hostroute.lock"

// LockHostRoute waits for and takes the host route's lock; unlock
// releases it (ForTest registers it before the cluster's Down, so it runs
// after). Other programs that Up a cluster with HostRoute (hack/conformance)
// take it too, and hold it until their cluster is down.
func LockHostRoute() (unlock func(), err error) {
	f, err := os.OpenFile(hostRouteLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("nodes: host route lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("nodes: host route lock %s: %w", hostRouteLock, err)
	}
	return func() { _ = f.Close() }, nil
}
