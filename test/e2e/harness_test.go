package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
)

var (
	buildOnce sync.Once
	ccmPath   string
	buildErr  error
)

// repoRoot is the repository root (tests run in test/e2e).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// ccmBinary builds the CCM binary once per test run into a temp dir, so the
// tests always exercise the code under test rather than a stale bin/.
func ccmBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tfccm-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		ccmPath = filepath.Join(dir, "terraform-cloud-controller-manager")
		cmd := exec.Command("go", "build", "-o", ccmPath, "./cmd/terraform-cloud-controller-manager")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build CCM: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return ccmPath
}

// CCM is a running terraform-cloud-controller-manager process.
type CCM struct {
	cmd     *exec.Cmd
	Port    int
	LogPath string
	done    chan struct{}
	exitErr error
}

// startCCM runs the CCM binary against cluster with the given cloud config
// and extra flags, and stops it when the test ends.
func startCCM(t *testing.T, cluster *devcluster.Cluster, cloudConfig string, extra ...string) *CCM {
	t.Helper()
	return startCCMWithKubeconfig(t, cluster.Kubeconfig(), cloudConfig, extra...)
}

// startCCMWithKubeconfig runs the CCM with the given credentials (for all
// of its clients, including delegated authn/authz).
func startCCMWithKubeconfig(t *testing.T, kubeconfig, cloudConfig string, extra ...string) *CCM {
	t.Helper()
	port := freePort(t)
	dir := t.TempDir()
	c := &CCM{Port: port, LogPath: filepath.Join(dir, "ccm.log"), done: make(chan struct{})}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--cloud-provider=terraform",
		"--cloud-config=" + cloudConfig,
		"--leader-elect=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--use-service-account-credentials=false",
		"--v=2",
	}, extra...)
	logf, err := os.Create(c.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(ccmBinary(t), args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Env = append(os.Environ(), "PATH="+filepath.Join(repoRoot(t), "bin")+":"+os.Getenv("PATH"))
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.exitErr = c.cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.Stop(t)
		if t.Failed() {
			t.Logf("CCM log (%s), last 60 lines:\n%s", c.LogPath, tail(c.LogPath, 60))
		}
	})
	return c
}

// Stop sends SIGTERM and waits for the process (SIGKILL after 20s).
func (c *CCM) Stop(t testing.TB) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// Kill sends SIGKILL to the CCM's process group (a crash).
func (c *CCM) Kill() {
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

// Exited reports whether the process has exited.
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

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// eventually polls cond every interval until it returns nil or timeout
// passes, then fails the test with the last error.
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if last = cond(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not true after %s: %v", what, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// writeCloudConfig writes a cloud config for cluster "e2e" with work_dir
// under dir, the pinned OpenTofu and the lbhost provider's CLI config plus
// terraformLines in the terraform block,
// and the given extra blocks. It returns the config's path and the work dir.
func writeCloudConfig(t testing.TB, dir, blocks string, terraformLines ...string) (cfg, workDir string) {
	t.Helper()
	workDir = filepath.Join(dir, "work")
	var tf strings.Builder
	for _, l := range terraformLines {
		tf.WriteString("  " + l + "\n")
	}
	// The local set uses tfccm's lbhost provider from the repository's mirror.
	src := fmt.Sprintf("cluster_name = \"e2e\"\nwork_dir     = %q\nterraform {\n  binary = %q\n  cli_config_file = %q\n%s}\n%s",
		workDir, repo.Tofu(t), repo.LBHost(t), tf.String(), blocks)
	return writeFile(t, dir, "cloud.hcl", src), workDir
}

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
