package host

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// hostAnswering is a Host on a new directory (short: the socket path must
// fit in sun_path) whose master.sock answers every command with answer
// and closes, as HAProxy's master CLI does.
func hostAnswering(t *testing.T, answer string) *Host {
	t.Helper()
	dir, err := os.MkdirTemp("", "lbh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "master.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.ReadAll(c) // the client half-closes after its command
			_, _ = io.WriteString(c, answer)
			c.Close()
		}
	}()
	return &Host{T: &transport.Netns{Name: "test"}, Dir: dir}
}

// TestShowProc: an empty answer to show proc is an error, not "no
// workers" (which made every worker after the reload look new); the
// master's line gives its reloads and the failed ones (a refused
// configuration).
func TestShowProc(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         []string // nil: an error
	}{
		{"answer", "#<PID>          <type>          <reloads>       <uptime>        <version>\n" +
			"2277            master          0 [failed: 0]   0d00h00m04s     2.6.12\n# workers\n" +
			"2278            worker          0               0d00h00m04s     2.6.12\n# programs\n\n", []string{"2278"}},
		{"after a refused reload", "#<PID>          <type>          <reloads>       <uptime>        <version>\n" +
			"2277            master          3 [failed: 1]   0d00h00m04s     2.6.12\n# workers\n" +
			"2278            worker          1               0d00h00m04s     2.6.12\n# programs\n\n", []string{"2278"}},
		{"no answer (reloading)", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hostAnswering(t, tc.answer)
			p, err := h.showProc(context.Background())
			got := p.workers
			if tc.want == nil {
				if err == nil {
					t.Fatalf("workers = %v, want an error", got)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) || !got[tc.want[0]] {
				t.Fatalf("workers = %v, %v; want %v", got, err, tc.want)
			}
			if refused := strings.Contains(tc.answer, "[failed: 1]"); refused != (p.failed == 1) || p.reloads == 0 && refused {
				t.Errorf("show proc %+v: reloads and failed reloads misread", p)
			}
		})
	}
}
