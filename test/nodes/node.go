package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/localcloud"
)

// privateMounts are host paths the node components write to that their
// configuration cannot move: each node mounts its own tmpfs over them in
// its mount namespace (containerd's shim sockets, kubelet's container log
// links, libcni's result cache).
var privateMounts = []string{"/run/containerd", "/var/log/containers", "/var/lib/cni"}

// frrMounts are the host paths a node with its own FRR (Options.FRR)
// mounts a tmpfs over too, owned by the frr user as Debian's package
// leaves them: FRR's run directory (its daemons' vty sockets, zebra's API
// socket, pid files: what the chart's node agent mounts with hostPath)
// and its configuration directory.
var frrMounts = []string{"/var/run/frr", "/etc/frr"}

// Node is one running node: its mount namespace holder and the containerd,
// kubelet and kube-proxy processes in it.
type Node struct {
	Name    string
	Netns   string
	Address string
	Dir     string
	cfg     nodeConfig
	detach  bool
	holder  *exec.Cmd
	procs   []*exec.Cmd // containerd, kubelet, kube-proxy in start order
}

// component is a node process's name (its log is <Dir>/<name>.log).
var components = []string{"containerd", "kubelet", "kube-proxy"}

// startNode starts the node described by cfg in network namespace netns and
// waits until its containerd serves and the images are imported; kubelet
// and kube-proxy are started, not awaited.
func startNode(ctx context.Context, cfg nodeConfig, netns string, images []string, detach bool) (n *Node, err error) {
	n = &Node{Name: cfg.Name, Netns: netns, Address: cfg.Address, Dir: cfg.Dir, cfg: cfg, detach: detach}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return n, fmt.Errorf("node %s: %w", cfg.Name, err)
		}
	}
	files := map[string]string{
		"containerd/config.toml": cfg.containerdConfig(),
		"kubelet.yaml":           cfg.kubeletConfig(),
		"kube-proxy.yaml":        cfg.proxyConfig(),
		// Pods take their search path from here and their nameserver
		// from clusterDNS.
		"resolv.conf": "",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(cfg.Dir, name), []byte(body), 0o644); err != nil {
			return n, fmt.Errorf("node %s: %w", cfg.Name, err)
		}
	}
	if err := nodeSysctls(netns, cfg.AddressV6 != ""); err != nil {
		return n, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	if err := makeCgroupRoot(cfg.CgroupRoot); err != nil {
		return n, fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	if err := n.startHolder(); err != nil {
		return n, err
	}
	if cfg.FRR {
		if err := n.startFRR(ctx); err != nil {
			return n, err
		}
	}
	ctrd, err := n.start("containerd", filepath.Join(cfg.Bin, "containerd"), "--config", filepath.Join(cfg.Dir, "containerd/config.toml"))
	if err != nil {
		return n, err
	}
	if err := waitFor(ctx, 60*time.Second, func() error {
		if ctrd.ProcessState != nil || !devcluster.Alive(ctrd.Process.Pid) {
			return errExited
		}
		_, err := os.Stat(cfg.socket())
		return err
	}); err != nil {
		log := filepath.Join(cfg.Dir, "containerd.log")
		return n, fmt.Errorf("node %s: containerd not serving (%v); %s ends:\n%s", cfg.Name, err, log, logTail(log, 15))
	}
	for _, img := range images {
		if err := n.importImage(ctx, img); err != nil {
			return n, err
		}
	}
	if _, err := n.start("kubelet", filepath.Join(cfg.Bin, "kubelet"), cfg.kubeletArgs()...); err != nil {
		return n, err
	}
	if _, err := n.start("kube-proxy", filepath.Join(cfg.Bin, "kube-proxy"),
		"--config="+filepath.Join(cfg.Dir, "kube-proxy.yaml"), "--v=1"); err != nil {
		return n, err
	}
	return n, nil
}

var errExited = errors.New("process exited")

// kubeletArgs are the node's kubelet's flags.
func (cfg nodeConfig) kubeletArgs() []string {
	return []string{
		"--config=" + filepath.Join(cfg.Dir, "kubelet.yaml"),
		"--kubeconfig=" + cfg.Kubelet,
		"--root-dir=" + filepath.Join(cfg.Dir, "kubelet"),
		"--hostname-override=" + cfg.Name,
		"--node-ip=" + cfg.nodeIPs(),
		"--cloud-provider=external",
		"--v=1",
	}
}

// StopKubelet stops the node's kubelet (SIGTERM, as systemctl stop does);
// its pods keep running. StartKubelet starts it again.
func (n *Node) StopKubelet() error {
	for i, p := range n.procs {
		if p.Path != "" && strings.Contains(strings.Join(p.Args, " "), "/kubelet ") {
			n.procs = slices.Delete(n.procs, i, i+1)
			return devcluster.StopPID(p.Process.Pid, 10*time.Second)
		}
	}
	return fmt.Errorf("node %s: no kubelet running", n.Name)
}

// StartKubelet starts the node's kubelet after StopKubelet.
func (n *Node) StartKubelet() error {
	_, err := n.start("kubelet", filepath.Join(n.cfg.Bin, "kubelet"), n.cfg.kubeletArgs()...)
	return err
}

// KillProcesses sends SIGKILL to the node's processes (those in its
// cgroups: its pods' too) whose command line contains all of words, and
// returns how many it killed.
func (n *Node) KillProcesses(words ...string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil || !strings.Contains(string(cg), n.cfg.CgroupRoot+"/") {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(b), "\x00", " ")
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			}
		}
	}
	return killed, nil
}

// importImage imports an image archive (docker-archive or OCI tar) into
// the node's containerd, in the namespace kubelet's CRI uses.
func (n *Node) importImage(ctx context.Context, archive string) error {
	if _, err := n.ctr(ctx, "images", "import", "--local", archive); err != nil {
		return fmt.Errorf("node %s: import %s: %w", n.Name, filepath.Base(archive), err)
	}
	return nil
}

// ctr runs containerd's ctr against the node's containerd in the k8s.io
// namespace and returns its output.
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(n.cfg.Bin, "ctr"), append([]string{"--address", n.cfg.socket(), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// startHolder starts the process that holds the node's mount namespace:
// unshare(1) with slave propagation (host mounts still show up, the node's
// never leave), tmpfs over privateMounts, then sleep.
func (n *Node) startHolder() error {
	script := "set -e\n"
	for _, m := range privateMounts {
		script += fmt.Sprintf("mkdir -p %[1]s && mount -t tmpfs -o mode=0755 tmpfs %[1]s\n", m)
	}
	if n.cfg.FRR {
		for _, m := range frrMounts {
			script += fmt.Sprintf("mkdir -p %[1]s && mount -t tmpfs -o mode=0755 tmpfs %[1]s && chown frr:frr %[1]s\n", m)
		}
		// An empty configuration: tfccm's agent and the test write the rest
		// through the vty sockets.
		script += "install -o frr -g frr -m 0640 /dev/null /etc/frr/frr.conf\n"
	}
	script += "exec sleep infinity\n"
	cmd, err := devcluster.StartProcess(n.Dir, "mountns", n.detach, "unshare", "--mount", "--propagation", "slave", "--", "sh", "-c", script)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.holder = cmd
	// Ready once sleep runs (its mounts are made by then).
	return waitFor(context.Background(), 10*time.Second, func() error {
		if !devcluster.Alive(cmd.Process.Pid) {
			return fmt.Errorf("node %s: mount namespace holder exited; see %s", n.Name, filepath.Join(n.Dir, "mountns.log"))
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		if err != nil || strings.TrimSpace(string(b)) != "sleep" {
			return errors.New("holder not ready")
		}
		return nil
	})
}

// start runs bin in the node's mount and network namespaces.
func (n *Node) start(name, bin string, args ...string) (*exec.Cmd, error) {
	cmd, err := devcluster.StartProcess(n.Dir, name, n.detach, "nsenter",
		append([]string{"--target", strconv.Itoa(n.holder.Process.Pid), "--mount", "--net=" + filepath.Join("/run/netns", n.Netns), "--", bin}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.procs = append(n.procs, cmd)
	return cmd, nil
}

// nodeSysctls: bridged pod traffic goes through iptables (kube-proxy's
// Service rules for pods on the same bridge), and the node forwards (IPv6
// too on a dual-stack node).
func nodeSysctls(netns string, v6 bool) error {
	sysctls := map[string]string{
		"net/ipv4/ip_forward":                 "1",
		"net/bridge/bridge-nf-call-iptables":  "1",
		"net/bridge/bridge-nf-call-ip6tables": "1",
	}
	if v6 {
		sysctls["net/ipv6/conf/all/forwarding"] = "1"
	}
	return localcloud.InNetns(netns, func() error {
		for k, v := range sysctls {
			if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
				return fmt.Errorf("sysctl %s: %w", k, err)
			}
		}
		return nil
	})
}

// writeCNIConfig waits until the node has its pod CIDRs (one per family of
// the cluster) and writes its CNI network; containerd picks it up and
// kubelet reports the node Ready.
func (n *Node) writeCNIConfig(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	want := len(strings.Split(n.cfg.ClusterCIDR, ","))
	var cidrs []string
	if err := waitFor(ctx, timeout, func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(node.Spec.PodCIDRs) < want {
			return fmt.Errorf("pod CIDRs %v, want %d", node.Spec.PodCIDRs, want)
		}
		cidrs = node.Spec.PodCIDRs
		return nil
	}); err != nil {
		return fmt.Errorf("node %s: registered with a pod CIDR: %w; see %s", n.Name, err, filepath.Join(n.Dir, "kubelet.log"))
	}
	conf, err := n.cfg.cniConfig(cidrs)
	if err != nil {
		return err
	}
	// Written in place, not renamed into the directory: containerd reloads
	// its CNI config on a write event and ignores file creation.
	return os.WriteFile(filepath.Join(n.Dir, "cni", "net.d", "10-tfccm.conflist"), []byte(conf), 0o644)
}

// Stop stops kube-proxy and kubelet, kills the pods' processes, stops
// containerd, kills the shims (every process left in the node's mount
// namespace) and the holder, and removes the node's cgroups. Its mounts go
// with the namespace.
func (n *Node) Stop() error {
	var errs []error
	for i := len(n.procs) - 1; i >= 0; i-- {
		if p := n.procs[i]; p.Process != nil {
			errs = append(errs, devcluster.StopPID(p.Process.Pid, 10*time.Second))
		}
	}
	n.procs = nil
	errs = append(errs, stopNodeRest(n.cfg.CgroupRoot, holderPID(n.holder)))
	n.holder = nil
	return errors.Join(errs...)
}

func holderPID(cmd *exec.Cmd) int {
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	return cmd.Process.Pid
}

// stopNodeRest kills what a node leaves after its components stopped: the
// processes in its cgroups, then those in its mount namespace (containerd
// shims), then the holder; then removes its cgroups.
func stopNodeRest(cgroupRoot string, holder int) error {
	var errs []error
	if err := removeCgroupRoot(cgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if holder > 0 && devcluster.Alive(holder) {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder)); err == nil {
			for _, pid := range pidsInMountNS(ns) {
				if pid != holder {
					errs = append(errs, devcluster.StopPID(pid, 5*time.Second))
				}
			}
		}
		errs = append(errs, devcluster.StopPID(holder, 5*time.Second))
	}
	return errors.Join(errs...)
}

// pidsInMountNS lists the processes whose mount namespace is ns.
func pidsInMountNS(ns string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && l == ns {
			out = append(out, pid)
		}
	}
	return out
}

// waitFor polls cond every 200 ms until it returns nil or errExited, or
// timeout passes (testkit.Poll).
func waitFor(ctx context.Context, timeout time.Duration, cond func() error) error {
	return testkit.Poll(ctx, 200*time.Millisecond, timeout, "waiting", func(context.Context) error {
		err := cond()
		if errors.Is(err, errExited) {
			return testkit.Stop(err)
		}
		return err
	})
}

// logTail returns the last n lines of a log file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// frrDaemons are the FRR daemons a node with Options.FRR runs, in start
// order: Debian's frr with bgpd and bfdd enabled (zebra and staticd always
// run).
var frrDaemons = []string{"zebra", "bgpd", "bfdd", "staticd"}

// startFRR starts the node's FRR daemons (/usr/lib/frr, Debian's frr) in
// its mount and network namespaces with the default pathspace, as the
// frr service does on a machine: their sockets in the node's own
// /var/run/frr, their logs in <Dir>/frr/. It waits for every vty socket.
func (n *Node) startFRR(ctx context.Context) error {
	logs := filepath.Join(n.Dir, "frr")
	if err := os.MkdirAll(logs, 0o770); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	g, err := user.LookupGroup("frr")
	if err != nil {
		return fmt.Errorf("node %s: FRR: %w (Debian's frr: make tools installs it)", n.Name, err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	if err := os.Chown(logs, 0, gid); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	if err := os.Chmod(logs, 0o770); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	for _, d := range frrDaemons {
		if err := n.StartFRRDaemon(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// StartFRRDaemon (re)starts one of the node's FRR daemons and waits for its
// vty socket.
func (n *Node) StartFRRDaemon(ctx context.Context, d string) error {
	// Through the holder's root, with /var/run resolved first: an absolute
	// symlink (/var/run -> /run) would resolve in the host's mounts.
	run, err := filepath.EvalSymlinks("/var/run/frr")
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	sock := fmt.Sprintf("/proc/%d/root%s/%s.vty", n.holder.Process.Pid, run, d)
	_ = os.Remove(sock)
	cmd, err := n.start("frr-"+d, "/usr/lib/frr/"+d, "-f", "/etc/frr/frr.conf", "--log", "file:"+filepath.Join(n.Dir, "frr", d+".log"))
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, func() error {
		if !devcluster.Alive(cmd.Process.Pid) {
			return errExited
		}
		_, err := os.Stat(sock)
		return err
	}); err != nil {
		log := filepath.Join(n.Dir, "frr-"+d+".log")
		return fmt.Errorf("node %s: FRR's %s has no vty socket (%v); %s ends:\n%s", n.Name, d, err, log, logTail(log, 15))
	}
	return nil
}

// KillFRRDaemon kills one of the node's FRR daemons with SIGKILL (a crash).
func (n *Node) KillFRRDaemon(d string) error {
	for i, p := range n.procs {
		if p.Process != nil && slices.Contains(p.Args, "/usr/lib/frr/"+d) {
			n.procs = slices.Delete(n.procs, i, i+1)
			_ = p.Process.Kill()
			return nil
		}
	}
	return fmt.Errorf("node %s: no FRR %s running", n.Name, d)
}

// Vtysh runs FRR's vtysh with the commands cmds (-c each) in the node's
// mount and network namespaces, so it talks to the node's own FRR.
func (n *Node) Vtysh(ctx context.Context, cmds ...string) (string, error) {
	args := []string{"--target", strconv.Itoa(n.holder.Process.Pid), "--mount", "--net=" + filepath.Join("/run/netns", n.Netns), "--", "vtysh"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out, err := exec.CommandContext(ctx, "nsenter", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("node %s: vtysh %s: %v: %s", n.Name, strings.Join(cmds, "; "), err, out)
	}
	return string(out), nil
}
