// Namespaces, links and FRR daemons.

package frrtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Daemons are the FRR daemons Start runs, in start order.
// (staticd as Debian's frr always starts it).
var Daemons = []string{"zebra", "bgpd", "bfdd", "staticd"}

// Skip skips t unless it runs as root with Debian's FRR installed.
func Skip(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, FRR)")
	}
	if _, err := os.Stat("/usr/lib/frr/bgpd"); err != nil {
		t.Skip("needs Debian's frr (make tools installs it)")
	}
}

// Name is a short unique name prefix for a test's namespaces and links
// (interface names are at most 15 characters).
func Name() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "fv" + hex.EncodeToString(b)
}

// Netns creates namespace name with lo up; t's cleanup deletes it.
func Netns(t testing.TB, name string) {
	t.Helper()
	Must(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	Must(t, "ip", "-n", name, "link", "set", "lo", "up")
	Must(t, "ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0")
}

// Link connects namespaces a and b with a veth pair named ifname on both
// sides, with the given addresses (CIDR) on each side.
func Link(t testing.TB, a, b, ifname string, addrA, addrB []string) {
	t.Helper()
	tmp := ifname + "x"
	Must(t, "ip", "-n", a, "link", "add", ifname, "type", "veth", "peer", "name", tmp, "netns", b)
	Must(t, "ip", "-n", b, "link", "set", tmp, "name", ifname)
	for _, side := range []struct {
		ns    string
		addrs []string
	}{{a, addrA}, {b, addrB}} {
		for _, ad := range side.addrs {
			args := []string{"-n", side.ns, "addr", "add", ad, "dev", ifname}
			if strings.Contains(ad, ":") {
				args = append(args, "nodad")
			}
			Must(t, "ip", args...)
		}
		Must(t, "ip", "-n", side.ns, "link", "set", ifname, "up")
	}
}

// FRR is one namespace's running daemons.
type FRR struct {
	Netns string
	// Dir holds its configuration, logs and pid files; RunDir its vty
	// sockets (/var/run/frr/<Netns>: FRR's pathspace).
	Dir, RunDir string
	cmds        map[string]*exec.Cmd
}

// Start runs zebra, bgpd, bfdd and staticd in netns (pathspace netns) and loads
// conf (may be empty) through vtysh, as Debian's frrinit does; t's
// cleanup stops them.
func Start(t testing.TB, netns, conf string) *FRR {
	t.Helper()
	f := &FRR{Netns: netns, Dir: filepath.Join(os.TempDir(), "frrtest-"+netns), RunDir: filepath.Join("/var/run/frr", netns), cmds: map[string]*exec.Cmd{}}
	gid := gid(t, "frr")
	for _, d := range []string{f.Dir, f.RunDir} {
		if err := os.MkdirAll(d, 0o770); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 0, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o770); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		f.Stop()
		_ = os.RemoveAll(f.RunDir)
		if !t.Failed() {
			_ = os.RemoveAll(f.Dir)
		}
	})
	empty := filepath.Join(f.Dir, "empty.conf")
	writeFRR(t, empty, "")
	for _, d := range Daemons {
		f.StartDaemon(t, d, empty)
	}
	if conf != "" {
		file := filepath.Join(f.Dir, "frr.conf")
		writeFRR(t, file, conf)
		Must(t, "vtysh", "-N", netns, "-f", file)
	}
	return f
}

// StartDaemon (re)starts one daemon and waits for its vty socket.
func (f *FRR) StartDaemon(t testing.TB, d, conf string) {
	t.Helper()
	if conf == "" {
		conf = filepath.Join(f.Dir, "empty.conf")
	}
	argv := []string{"ip", "netns", "exec", f.Netns, "/usr/lib/frr/" + d, "-N", f.Netns, "-f", conf,
		"-i", filepath.Join(f.Dir, d+".pid"), "--log", "file:" + filepath.Join(f.Dir, d+".log")}
	if d == "bfdd" {
		argv = append(argv, "--bfdctl", filepath.Join(f.RunDir, "bfdd.sock"))
	}
	_ = os.Remove(filepath.Join(f.RunDir, d+".vty"))
	log, err := os.OpenFile(filepath.Join(f.Dir, d+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", d, err)
	}
	f.cmds[d] = cmd
	sock := filepath.Join(f.RunDir, d+".vty")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := os.Stat(sock)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s in %s: no vty socket after 30s: %v (log %s)", d, f.Netns, err, filepath.Join(f.Dir, d+".log"))
		}
	}
}

// Kill kills daemon d with SIGKILL (a crash: its sessions stop at once).
func (f *FRR) Kill(d string) {
	cmd := f.cmds[d]
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	delete(f.cmds, d)
}

// Stop stops every daemon.
func (f *FRR) Stop() {
	for i := len(Daemons) - 1; i >= 0; i-- {
		d := Daemons[i]
		if cmd := f.cmds[d]; cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			delete(f.cmds, d)
		}
	}
}

// Vtysh runs vtysh -c cmd in f's pathspace and returns its output.
func (f *FRR) Vtysh(t testing.TB, cmd ...string) string {
	t.Helper()
	args := []string{"-N", f.Netns}
	for _, c := range cmd {
		args = append(args, "-c", c)
	}
	out, err := Output("vtysh", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Output runs a command and returns its output.
func Output(name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Must runs a command, failing t if it fails.
func Must(t testing.TB, name string, args ...string) {
	t.Helper()
	if _, err := Output(name, args...); err != nil {
		t.Fatal(err)
	}
}

func writeFRR(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 0, gid(t, "frr")); err != nil {
		t.Fatal(err)
	}
}

func gid(t testing.TB, group string) int {
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatalf("group %s: %v (Debian's frr: make tools installs it)", group, err)
	}
	n, _ := strconv.Atoi(g.Gid)
	return n
}
