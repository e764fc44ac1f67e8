package host

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/lbhost/keepalived"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// marker is the content of a file lbhost must never quote.
const marker = "root:$6$TFCCM-SECRET-MARKER-7f3a:19000:0:99999:7:::"

// localRun is the local machine without a network namespace: files as the
// netns transport reads them, commands (the real keepalived and haproxy)
// run directly.
type localRun struct{ *transport.Netns }

func (localRun) String() string { return "local" }

func (localRun) Run(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &transport.RunError{Host: "local", Argv: argv, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// TestNoFileContentInErrors: every error lbhost makes of a file it reads
// (a pid file, a configuration, a fragment, a claim, each named by a
// setting an admin, or before the allow-list a tenant, chose) names the
// file and what is wrong with it, never what it holds: the marker planted
// in it appears in no error.
func TestNoFileContentInErrors(t *testing.T) {
	ctx := context.Background()
	planted := func(t *testing.T, h *Host, rel, header string) string {
		p := filepath.Join(h.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(header+marker+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	needs := func(t *testing.T, bin string) {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed", bin)
		}
	}
	instance := keepalived.Instance{Owner: "c1_web", Interface: "eth1", VirtualRouterID: 42, Priority: 100, AdvertInt: 1, Address: "10.0.0.5", AddressInterface: "eth1"}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *Host) error
		want string // what the error says instead
	}{
		{"keepalived pid file", func(t *testing.T, h *Host) error {
			h.Keepalived.PIDFile = planted(t, h, "shadow", "")
			return h.reloadKeepalived(ctx)
		}, "does not hold a process id (its content is not shown)"},
		{"keepalived main configuration checked by keepalived -t", func(t *testing.T, h *Host) error {
			needs(t, "keepalived")
			h.Keepalived.Config = planted(t, h, "shadow", "")
			return h.applyVRRP(ctx, instance)
		}, "keepalived rejected the configuration"},
		{"HAProxy base configuration checked by haproxy -c", func(t *testing.T, h *Host) error {
			needs(t, "haproxy")
			planted(t, h, "base.cfg", "")
			return h.check(ctx)
		}, "HAProxy rejected the configuration"},
		{"keepalived fragment", func(t *testing.T, h *Host) error {
			planted(t, h, "keepalived/c1_web.conf", "# managed by terraform-provider-lbhost: vip c1_web\n")
			_, err := h.ReadVRRP(ctx, "c1_web")
			return err
		}, "keepalived/c1_web.conf changed outside lbhost: it is not what lbhost writes (its content is not shown)"},
		{"HAProxy fragment", func(t *testing.T, h *Host) error {
			planted(t, h, "fragments/c1_web.cfg", "# managed by terraform-provider-lbhost: load balancer c1_web\n")
			_, err := h.ReadFrontend(ctx, "c1_web")
			return err
		}, "fragments/c1_web.cfg changed outside lbhost: it is not what lbhost writes"},
		{"layer-4 config", func(t *testing.T, h *Host) error {
			p := filepath.Join(h.Dir, "l4", "c1_web.json")
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			_ = os.WriteFile(p, []byte(`{"name": "`+marker+`"}`), 0o600)
			_, err := h.ReadL4(ctx, "c1_web")
			return err
		}, "l4/c1_web.json changed outside lbhost: it is not what lbhost writes"},
		{"layer-4 config not JSON", func(t *testing.T, h *Host) error {
			planted(t, h, "l4/c1_web.json", "")
			_, err := h.ReadL4(ctx, "c1_web")
			return err
		}, "l4/c1_web.json changed outside lbhost"},
		{"routed VIP config", func(t *testing.T, h *Host) error {
			p := filepath.Join(h.Dir, "routed", "c1_web.json")
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			_ = os.WriteFile(p, []byte(`{"owner": "`+marker+`", "address": "10.0.0.5", "nexthops": ["10.1.0.1"], "check": {"protocol": "TCP", "port": 30080, "interval_ms": 1000, "rise": 2, "fall": 2}}`), 0o600)
			_, err := h.ReadRoutedVIP(ctx, "c1_web", "")
			return err
		}, "routed/c1_web.json changed outside lbhost: it is not what lbhost writes"},
		{"claim file", func(t *testing.T, h *Host) error {
			return usedBy("10.0.0.5", "c1_web", parseClaimants([]byte(marker+"\n")), h.T)
		}, "10.0.0.5 is already used by load balancer (a claim lbhost did not write)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fileHost(t, nil)
			h.T = localRun{h.T.(*transport.Netns)}
			h.HAProxy = "haproxy"
			h.Keepalived = Keepalived{Binary: "keepalived", Config: filepath.Join(h.Dir, "none.conf"), PIDFile: filepath.Join(h.Dir, "none.pid")}
			err := tc.run(t, h)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "TFCCM-SECRET-MARKER") {
				t.Fatalf("the error quotes the file: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestOwnOutput: of a failed command's output only the lines about
// lbhost's own files are kept; the others are counted, not shown.
func TestOwnOutput(t *testing.T) {
	run := &transport.RunError{Host: "local", Argv: []string{"keepalived", "-t"}, Err: exec.ErrNotFound, Stderr: "(/etc/shadow: Line 1) Unknown keyword 'root:x'\n(Line 1) Unknown keyword 'root:x'\n(/etc/tfccm/lbhost/keepalived/c1_web.conf: Line 3) Unknown keyword 'bogus'\n"}
	got := ownOutput(run, "/etc/tfccm/lbhost/keepalived/c1_web.conf").Error()
	if strings.Contains(got, "root:x") || !strings.Contains(got, "c1_web.conf: Line 3) Unknown keyword 'bogus'") || !strings.Contains(got, "(2 more lines of output about files lbhost did not write are not shown)") {
		t.Errorf("ownOutput = %q", got)
	}
	if plain := os.ErrNotExist; ownOutput(plain, "/x") != plain {
		t.Error("an error without output was changed")
	}
}
