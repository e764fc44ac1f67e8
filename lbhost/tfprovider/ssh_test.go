package tfprovider_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/lbhost/hosttest"
)

// startSSHD runs Debian's sshd inside the cloud namespace with a host key
// and a client key generated here; it returns the provider's ssh block.
func startSSHD(t *testing.T, c *cloud, hostKeyOverride string) (sshBlock, clientKey string) {
	t.Helper()
	dir := filepath.Join(c.dir, "ssh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "host_key"))
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "client_key"))
	pub := mustRead(t, filepath.Join(dir, "client_key.pub"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	const port = 2222
	cfg := hosttest.SSHDConfig(c.gateway, port, dir)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", c.netns, "/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "sshd.pid")); err == nil {
			break
		}
		if i > 50 {
			t.Fatal("sshd did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	hostKey := strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "host_key.pub"))))
	if hostKeyOverride != "" {
		hostKey = hostKeyOverride
	}
	clientKey = filepath.Join(dir, "client_key")
	return fmt.Sprintf(`ssh = {
    host             = %q
    port             = %d
    user             = "root"
    host_key         = %q
    private_key_file = %q
  }`, c.gateway, port, hostKey, clientKey), clientKey
}

// useSSH rewrites the workspace's provider block to the ssh transport.
func useSSH(t *testing.T, w *workspace, sshBlock string) {
	t.Helper()
	file := filepath.Join(w.dir, "main.tf")
	b := string(mustRead(t, file))
	i := strings.Index(b, "  netns      = ")
	j := strings.Index(b[i:], "\n")
	b = b[:i] + "  " + sshBlock + b[i+j:]
	if err := os.WriteFile(file, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSSHTransport(t *testing.T) {
	c := newCloud(t)
	serve(t, c.nodeA+":30080", "node-a")
	serve(t, c.nodeB+":30080", "node-b")
	sshBlock, clientKey := startSSHD(t, c, "")

	// A wrong pinned host key: a clear error, nothing changes on the host.
	other := filepath.Join(t.TempDir(), "other")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other)
	wrong := strings.TrimSpace(string(mustRead(t, other+".pub")))
	bad := newWorkspace(t, c, lbConfig(c, []string{backend("node-a", c.nodeA)}, ""))
	good := strings.Split(strings.Split(sshBlock, "host_key         = ")[1], "\n")[0]
	useSSH(t, bad, strings.Replace(sshBlock, good, fmt.Sprintf("%q", wrong), 1))
	out, code := bad.cmd("apply", "-auto-approve", "-input=false", "-no-color")
	if code == 0 || !strings.Contains(out, "host key mismatch") {
		t.Fatalf("apply with a wrong host key: exit %d, want a host key mismatch\n%s", code, out)
	}
	if names, _ := os.ReadDir(filepath.Join(c.dir, "claims")); len(names) != 0 {
		t.Fatalf("claims written despite the host key mismatch: %v", names)
	}

	w := newWorkspace(t, c, lbConfig(c, []string{backend("node-a", c.nodeA)}, ""))
	useSSH(t, w, sshBlock)
	t0 := time.Now()
	w.apply()
	t.Logf("first apply over ssh: %s", time.Since(t0))
	vip := w.output("vip")
	url := "http://" + vip + "/"
	waitFor(t, url, "node-a")

	w.write(c, lbConfig(c, []string{backend("node-a", c.nodeA), backend("node-b", c.nodeB)}, ""))
	useSSH(t, w, sshBlock)
	if acts := w.planActions(); strings.Join(acts["lbhost_frontend.web"], ",") != "update" {
		t.Fatalf("node join over ssh: actions %v, want update", acts)
	}
	w.ok("apply", "-auto-approve", "-input=false", "-no-color", "plan.bin")
	waitFor(t, url, "node-a", "node-b")

	if err := os.Remove(filepath.Join(c.dir, "fragments", "c1_web.cfg")); err != nil {
		t.Fatal(err)
	}
	if _, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 2 {
		t.Fatalf("plan over ssh after removing the fragment: exit %d, want 2", code)
	}
	w.apply()
	waitFor(t, url, "node-a", "node-b")

	// The key never reaches state or plans.
	key := mustRead(t, clientKey)
	for _, f := range []string{"terraform.tfstate", "plan.bin"} {
		b, err := os.ReadFile(filepath.Join(w.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), strings.Split(string(key), "\n")[1]) {
			t.Errorf("%s contains the private key", f)
		}
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(filepath.Join(c.dir, "fragments", "c1_web.cfg")); !os.IsNotExist(err) {
		t.Fatalf("fragment left after destroy over ssh: %v", err)
	}
}

// TestSSHKnownHostsAgentAndConcurrency: the host key from a known_hosts
// file, the private key from an ssh-agent (no key path in the
// configuration), and 12 VIPs applied at once over one connection
// (OpenTofu's parallelism 10 against OpenSSH's 10 sessions per connection).
func TestSSHKnownHostsAgentAndConcurrency(t *testing.T) {
	c := newCloud(t)
	_, clientKey := startSSHD(t, c, "")
	dir := filepath.Dir(clientKey)
	hostPub := strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "host_key.pub"))))
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(fmt.Sprintf("[%s]:2222 %s\n", c.gateway, hostPub)), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	out := run(t, "ssh-agent", "-a", sock)
	var agentPID int
	if i := strings.Index(out, "SSH_AGENT_PID="); i >= 0 {
		fmt.Sscanf(out[i+len("SSH_AGENT_PID="):], "%d", &agentPID)
	}
	if agentPID <= 1 {
		t.Fatalf("ssh-agent pid not found in %q", out)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(agentPID); err == nil {
			_ = p.Kill()
		}
	})
	add := exec.Command("ssh-add", clientKey)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if b, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, b)
	}
	block := fmt.Sprintf(`ssh = {
    host             = %q
    port             = 2222
    user             = "root"
    known_hosts_file = %q
    agent_socket     = %q
  }`, c.gateway, knownHosts, sock)
	w := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_vip" "v" {
  for_each = toset([for i in range(12) : tostring(i)])
  owner    = "c1_lb${each.key}"
  pool     = %q
}
output "vips" { value = sort([for v in lbhost_vip.v : v.address]) }
`, c.pool))
	useSSH(t, w, block)
	start := time.Now()
	w.apply()
	t.Logf("12 VIPs over one ssh connection: %s", time.Since(start).Round(time.Millisecond))
	claims, _ := os.ReadDir(filepath.Join(c.dir, "claims"))
	if len(claims) != 12 {
		t.Fatalf("%d claims, want 12", len(claims))
	}
	if strings.Contains(string(mustRead(t, filepath.Join(w.dir, "terraform.tfstate"))), "PRIVATE KEY") {
		t.Error("state holds a private key")
	}

	// known_hosts naming another key for the host: refused.
	if err := os.WriteFile(knownHosts, []byte(fmt.Sprintf("[%s]:2222 %s\n", c.gateway, strings.TrimSpace(string(mustRead(t, clientKey+".pub"))))), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := w.cmd("plan", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "key mismatch") {
		t.Fatalf("plan with a known_hosts naming another key: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(knownHosts, []byte(fmt.Sprintf("[%s]:2222 %s\n", c.gateway, hostPub)), 0o600); err != nil {
		t.Fatal(err)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if claims, _ := os.ReadDir(filepath.Join(c.dir, "claims")); len(claims) != 0 {
		t.Fatalf("%d claims left after destroy", len(claims))
	}
}
