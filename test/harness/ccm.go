package harness

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CCMOptions configure StartCCM.
type CCMOptions struct {
	// Binary is the terraform-cloud-controller-manager to run. Required.
	Binary string
	// Kubeconfig gives the CCM's credentials, for all of its clients
	// including delegated authentication and authorization. Required.
	Kubeconfig string
	// CloudConfig is the --cloud-config file. Required.
	CloudConfig string
	// Dir receives the log (ccm.log) and the serving certificates
	// (ccm-certs). Required.
	Dir string
	// Flags are added after the standard flags (a repeated flag wins).
	Flags []string
	// Env is added to the CCM's environment (a repeated variable wins).
	Env []string
	// StopGrace is how long Stop waits after SIGTERM before it kills the
	// process group; default 20s.
	StopGrace time.Duration
	// Hostname, when set, runs the CCM in its own UTS namespace with this
	// host name, as a pod has: its leader-election identity and the
	// user@host its tofu runs lock state as differ from other replicas'
	// on the same machine.
	Hostname string
}

// CCM is a running terraform-cloud-controller-manager process. It runs in
// its own process group and dies with its parent (Pdeathsig).
type CCM struct {
	// Port is the CCM's secure port on 127.0.0.1.
	Port int
	// LogPath is the file that receives the CCM's stdout and stderr.
	LogPath string

	cmd   *exec.Cmd
	grace time.Duration
	done  chan struct{}
}

// Flags are the flags every CCM start shares: the credentials for every
// client, the terraform cloud provider and its cloud config. StartCCM adds
// the serving and leader-election flags to these.
func Flags(kubeconfig, cloudConfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--cloud-provider=terraform",
		"--cloud-config=" + cloudConfig,
	}
}

// StartCCM starts the CCM with the standard flags (Flags, leader election
// on, a free secure port on 127.0.0.1, no per-controller service accounts,
// --v=2) and opts.Flags. The caller stops it with Stop or Kill.
func StartCCM(opts CCMOptions) (*CCM, error) {
	if opts.Binary == "" || opts.Kubeconfig == "" || opts.CloudConfig == "" || opts.Dir == "" {
		return nil, errors.New("harness: CCMOptions need Binary, Kubeconfig, CloudConfig and Dir")
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	c := &CCM{Port: port, LogPath: filepath.Join(opts.Dir, "ccm.log"), grace: opts.StopGrace, done: make(chan struct{})}
	if c.grace == 0 {
		c.grace = 20 * time.Second
	}
	args := append(Flags(opts.Kubeconfig, opts.CloudConfig),
		"--leader-elect=true",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(opts.Dir, "ccm-certs"),
		"--use-service-account-credentials=false",
		"--v=2",
	)
	args = append(args, opts.Flags...)
	logf, err := os.Create(c.LogPath)
	if err != nil {
		return nil, err
	}
	if opts.Hostname != "" {
		args = append([]string{"--uts", "sh", "-c", `hostname "$1" && shift && exec "$@"`, "sh", opts.Hostname, opts.Binary}, args...)
		c.cmd = exec.Command("unshare", args...)
	} else {
		c.cmd = exec.Command(opts.Binary, args...)
	}
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Env = append(os.Environ(), opts.Env...)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start CCM: %w", err)
	}
	go func() {
		_ = c.cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

// Stop sends SIGTERM and waits for the process; after StopGrace it kills
// the process group. It returns at once if the CCM has exited.
func (c *CCM) Stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(c.grace):
		c.Kill()
	}
}

// Kill sends SIGKILL to the CCM's process group (a crash) and waits.
func (c *CCM) Kill() {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

// Exited reports whether the process has exited.
// PID is the CCM's process ID (with a Hostname, unshare's, which execs it).
func (c *CCM) PID() int { return c.cmd.Process.Pid }

func (c *CCM) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Get fetches path from the CCM's secure port anonymously, or with the
// given client certificate when certKey is a (cert, key) pair of files.
func (c *CCM) Get(path string, certKey ...string) (int, string, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: true}
	if len(certKey) == 2 {
		pair, err := tls.LoadX509KeyPair(certKey[0], certKey[1])
		if err != nil {
			return 0, "", err
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", c.Port, path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// Log returns the CCM's log so far.
func (c *CCM) Log() string {
	b, _ := os.ReadFile(c.LogPath)
	return string(b)
}

// LogTail returns the last n lines of the CCM's log.
func (c *CCM) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(c.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort is a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
