package frrvty

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/frrtest"
)

// TestRunAgainstBgpd drives a real bgpd through its vty socket: output,
// node changes, configuration that vtysh then shows, and a refused
// command's code.
func TestRunAgainstBgpd(t *testing.T) {
	frrtest.Skip(t)
	ns := frrtest.Name()
	frrtest.Netns(t, ns)
	f := frrtest.Start(t, ns, "")
	c, err := Dial(context.Background(), f.RunDir, "bgpd")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, err := c.Run("show version")
	if err != nil || !strings.Contains(out, "FRRouting") {
		t.Fatalf("show version: %q, %v", out, err)
	}
	if err := c.RunAll("enable", "configure", "ip prefix-list tfccm-probe seq 5 permit 192.0.2.0/24 ge 32", "router bgp 64513", "bgp router-id 192.0.2.9", "end"); err != nil {
		t.Fatal(err)
	}
	shown := f.Vtysh(t, "show running-config")
	for _, want := range []string{"ip prefix-list tfccm-probe seq 5 permit 192.0.2.0/24 ge 32", "router bgp 64513", "bgp router-id 192.0.2.9"} {
		if !strings.Contains(shown, want) {
			t.Errorf("running-config lacks %q:\n%s", want, shown)
		}
	}
	_, err = c.Run("no-such-command here")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != CodeNoMatch {
		t.Fatalf("unknown command: %v, want code %d", err, CodeNoMatch)
	}
	if _, err := c.Run("bad\ncommand"); err == nil {
		t.Fatal("a command with a line break was sent")
	}
	// The connection still works after a refused command.
	if out, err := c.Run("show running-config"); err != nil || !strings.Contains(out, "tfccm-probe") {
		t.Fatalf("show running-config after an error: %q, %v", out, err)
	}
}
