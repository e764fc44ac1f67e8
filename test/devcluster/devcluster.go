package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tfccm/tfccm/internal/repo"
)

// Options configures Start. Zero values pick defaults.
type Options struct {
	// Dir holds certificates, etcd data, logs and the kubeconfig. Required.
	Dir string
	// APIServer is the kube-apiserver binary; default <repo>/bin/kube-apiserver.
	APIServer string
	// Etcd is the etcd binary; default <repo>/bin/etcd, then etcd on PATH, then /usr/bin/etcd.
	Etcd string
	// Detach starts the processes in their own session so they outlive the
	// caller (for `devcluster up`); otherwise they die with the caller.
	Detach bool
	// ReadyTimeout bounds the wait for /readyz; default 90s.
	ReadyTimeout time.Duration
	// Address, when set, is an address of this host that real nodes reach
	// the apiserver at: it listens on every address, advertises this one
	// (the `kubernetes` Service's endpoint) and has it in its certificate.
	Address string
	// ServiceCIDRs is kube-apiserver's --service-cluster-ip-range: one
	// CIDR, or an IPv4 and an IPv6 one (comma-separated) for a dual-stack
	// cluster; default 10.0.0.0/24.
	ServiceCIDRs string
	// NodePortRange is kube-apiserver's --service-node-port-range;
	// default its own 30000-32767, 2,768 ports: fewer than 5,000
	// LoadBalancer Services need.
	NodePortRange string
	// ClusterCIDR, when set, also starts kube-controller-manager (node pod
	// CIDRs allocated from it: an IPv4 /24, an IPv6 /64, or one of each
	// when it is an IPv4 and an IPv6 CIDR, comma-separated, for a
	// dual-stack cluster) and kube-scheduler, for real nodes.
	ClusterCIDR string
	// Controllers, when set and ClusterCIDR is not, starts
	// kube-controller-manager with these controllers alone (e.g.
	// "job-controller", "garbage-collector-controller") and no
	// kube-scheduler: pods are created (and admitted) but never scheduled,
	// which needs no real nodes.
	Controllers []string
}

// Cluster is a running control plane.
type Cluster struct {
	dir        string
	kubeconfig string
	server     string
	pki        *pki
	etcd       *exec.Cmd
	apiserver  *exec.Cmd
	// controllers are kube-controller-manager and kube-scheduler, when started.
	controllers  []*exec.Cmd
	rest         *rest.Config
	port         int
	binAPIServer string
}

// Start launches etcd and kube-apiserver and waits until the apiserver is
// ready. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("devcluster: Options.Dir is required")
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 90 * time.Second
	}
	if opts.ServiceCIDRs == "" {
		opts.ServiceCIDRs = "10.0.0.0/24"
	}
	if opts.NodePortRange == "" {
		opts.NodePortRange = "30000-32767"
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	apiserverBin, etcdBin, err := binaries(opts)
	if err != nil {
		return nil, err
	}
	if kcm := filepath.Join(filepath.Dir(apiserverBin), "kube-controller-manager"); len(opts.Controllers) > 0 && !exists(kcm) {
		return nil, fmt.Errorf("devcluster: kube-controller-manager not found at %s (run `make tools`)", kcm)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	var extraIPs []net.IP
	bind, advertise := "127.0.0.1", "127.0.0.1"
	if opts.Address != "" {
		ip := net.ParseIP(opts.Address)
		if ip == nil {
			return nil, fmt.Errorf("devcluster: Options.Address %q is not an IP address", opts.Address)
		}
		extraIPs = append(extraIPs, ip)
		bind, advertise = "0.0.0.0", opts.Address
	}
	p, err := generatePKI(dir, extraIPs...)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	c = &Cluster{dir: dir, pki: p, server: fmt.Sprintf("https://127.0.0.1:%d", ports[2]), port: ports[2], binAPIServer: apiserverBin}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()

	c.etcd, err = StartProcess(dir, "etcd", opts.Detach, etcdBin,
		"--name=devcluster",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdClient,
		"--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer,
		"--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=devcluster="+etcdPeer,
		"--log-level=warn",
		"--quota-backend-bytes=4294967296",
		"--unsafe-no-fsync",
	)
	if err != nil {
		return nil, err
	}
	c.apiserver, err = StartProcess(dir, "kube-apiserver", opts.Detach, apiserverBin,
		"--etcd-servers="+etcdClient,
		"--bind-address="+bind,
		"--advertise-address="+advertise,
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+p.ServingCert,
		"--tls-private-key-file="+p.ServingKey,
		"--client-ca-file="+p.CACert,
		"--kubelet-client-certificate="+p.KubeletClientCert,
		"--kubelet-client-key="+p.KubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.SAPub,
		"--service-account-signing-key-file="+p.SAKey,
		"--service-cluster-ip-range="+opts.ServiceCIDRs,
		"--service-node-port-range="+opts.NodePortRange,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=0",
	)
	if err != nil {
		return nil, err
	}
	c.rest = &rest.Config{
		Host: c.server,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: p.CACert, CertFile: p.AdminCert, KeyFile: p.AdminKey,
		},
		QPS: 100, Burst: 200,
	}
	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := c.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, opts.ReadyTimeout); err != nil {
		return nil, err
	}
	switch {
	case opts.ClusterCIDR != "":
		if err := c.startControllers(opts); err != nil {
			return nil, err
		}
	case len(opts.Controllers) > 0:
		if err := c.startControllerManager(opts, "--controllers="+strings.Join(opts.Controllers, ",")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Kubeconfig is the path of an admin kubeconfig for the cluster.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// Server is the apiserver URL.
func (c *Cluster) Server() string { return c.server }

// AdminCert returns the admin client certificate and key files (group
// system:masters), e.g. to call a component's authorized endpoints.
func (c *Cluster) AdminCert() (certFile, keyFile string) { return c.pki.AdminCert, c.pki.AdminKey }

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// ControlPlanePIDs are the process IDs of etcd and kube-apiserver (for the
// CPU a benchmark's control plane used).
func (c *Cluster) ControlPlanePIDs() []int {
	return []int{c.etcd.Process.Pid, c.apiserver.Process.Pid}
}

// Client returns an admin clientset.
func (c *Cluster) Client() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(c.RESTConfig())
}

// Stop terminates kube-apiserver then etcd (SIGTERM, then SIGKILL after a
// grace period) and waits for both to exit.
func (c *Cluster) Stop() error {
	var errs []error
	for _, p := range append(c.controllers, c.apiserver, c.etcd) {
		if p == nil || p.Process == nil {
			continue
		}
		if err := stopProcess(p); err != nil {
			errs = append(errs, err)
		}
	}
	c.apiserver, c.etcd, c.controllers = nil, nil, nil
	return errors.Join(errs...)
}

// StopDir stops the processes of a control plane started in dir (by their
// pid files), e.g. a detached one from an earlier `devcluster up`.
func StopDir(dir string) error {
	var errs []error
	for _, name := range Processes {
		if pid, ok := ReadPID(dir, name); ok {
			errs = append(errs, StopPID(pid, 20*time.Second))
		}
	}
	return errors.Join(errs...)
}

// ReadPID reads <dir>/<name>.pid as StartProcess wrote it.
func ReadPID(dir, name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// Processes are the names of the processes Start runs, in stop order (their
// pid files are <Dir>/<name>.pid).
var Processes = []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}

func (c *Cluster) writeKubeconfig() error {
	return writeKubeconfig(c.kubeconfig, c.server, c.pki.CACert, c.pki.AdminCert, c.pki.AdminKey)
}

func writeKubeconfig(path, server, ca, cert, key string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts["devcluster"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: "user"}
	cfg.CurrentContext = "devcluster"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("devcluster: write kubeconfig: %w", err)
	}
	return nil
}

// UserKubeconfig writes <Dir>/<name>.kubeconfig for user in groups, with a
// client certificate from the cluster's CA, reaching the apiserver at
// address (an address it listens on: 127.0.0.1 or Options.Address), and
// returns its path.
func (c *Cluster) UserKubeconfig(name, address, user string, groups ...string) (string, error) {
	cert, key := filepath.Join(c.dir, name+".crt"), filepath.Join(c.dir, name+".key")
	if err := c.pki.clientCert(user, groups, cert, key); err != nil {
		return "", fmt.Errorf("devcluster: %w", err)
	}
	path := filepath.Join(c.dir, name+".kubeconfig")
	server := "https://" + net.JoinHostPort(address, strconv.Itoa(c.port))
	return path, writeKubeconfig(path, server, c.pki.CACert, cert, key)
}

// CACert is the cluster CA's certificate file.
func (c *Cluster) CACert() string { return c.pki.CACert }

func (c *Cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		for name, p := range map[string]*exec.Cmd{"etcd": c.etcd, "kube-apiserver": c.apiserver} {
			if p.ProcessState != nil || exited(p) {
				return fmt.Errorf("devcluster: %s exited early; see %s", name, filepath.Join(c.dir, name+".log"))
			}
		}
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			// RBAC bootstrap roles are created by a post-start hook that
			// /readyz waits for; the default namespace appears just after.
			if _, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1GetOptions); err == nil {
				return nil
			}
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devcluster: apiserver not ready after %s: %v; see %s", timeout, last, filepath.Join(c.dir, "kube-apiserver.log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StartProcess runs bin with args, logging to <dir>/<name>.log and writing
// its pid to <dir>/<name>.pid. With detach it gets its own session and
// outlives the caller; otherwise it is killed when the caller dies.
func StartProcess(dir, name string, detach bool, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("devcluster: start %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	if !detach {
		go func() { _ = cmd.Wait() }()
	}
	return cmd, nil
}

// exited reports whether the process is gone (works for detached processes
// that nobody Waits for).
func exited(cmd *exec.Cmd) bool {
	if cmd == nil || cmd.Process == nil {
		return true
	}
	return cmd.Process.Signal(syscall.Signal(0)) != nil
}

func stopProcess(cmd *exec.Cmd) error {
	return StopPID(cmd.Process.Pid, 20*time.Second)
}

// StopPID sends SIGTERM to pid, waits up to grace for it to exit, then
// sends SIGKILL. It is used by Stop and by `devcluster down`.
func StopPID(pid int, grace time.Duration) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return nil // already gone
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.Signal(syscall.SIGKILL)
	for i := 0; i < 100 && Alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if Alive(pid) {
		return fmt.Errorf("devcluster: process %d did not exit", pid)
	}
	return nil
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3 is the state; it follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func binaries(opts Options) (apiserver, etcd string, err error) {
	root, rootErr := repo.Root()
	apiserver = opts.APIServer
	if apiserver == "" {
		if rootErr != nil {
			return "", "", rootErr
		}
		apiserver = filepath.Join(root, "bin", "kube-apiserver")
	}
	if _, err := os.Stat(apiserver); err != nil {
		return "", "", fmt.Errorf("devcluster: kube-apiserver not found at %s (run `make tools`)", apiserver)
	}
	etcd = opts.Etcd
	if etcd == "" {
		candidates := []string{}
		if rootErr == nil {
			candidates = append(candidates, filepath.Join(root, "bin", "etcd"))
		}
		if p, err := exec.LookPath("etcd"); err == nil {
			candidates = append(candidates, p)
		}
		candidates = append(candidates, "/usr/bin/etcd")
		for _, c := range candidates {
			if _, err := os.Stat(c); err == nil {
				etcd = c
				break
			}
		}
	}
	if etcd == "" {
		return "", "", errors.New("devcluster: etcd not found (run `make tools`, which installs Debian's etcd-server)")
	}
	return apiserver, etcd, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
