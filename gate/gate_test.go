package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/config"
)

// judgeConfig denies any plan of a routes workspace, asks approval for a
// destroy, and allows changes only in a nightly window.
const judgeConfig = `cluster_name = "prod"
policy "no-routes" {
  action = "deny"
  validation {
    expression = "workspace.kind != 'routes'"
    message    = "routes are frozen"
  }
}
policy "destroy-needs-approval" {
  action = "require-approval"
  validation {
    expression = "!workspace.destroy"
    message    = "a destroy"
  }
}
change_windows {
  window "nights" {
    kind     = "allow"
    schedule = "0 22 * * *"
    duration = "4h"
  }
}
`

// TestJudge: policy rules first (a denial ends the judgement, the window
// is not read), then the change windows; the kind reaches the rules; no
// rules at all is no gate, which passes everything.
func TestJudge(t *testing.T) {
	cfg, err := config.Parse([]byte(judgeConfig), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg)
	if err != nil || g == nil {
		t.Fatalf("New = %v, %v", g, err)
	}
	day, night := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name                   string
		in                     Input
		now                    time.Time
		denied, approval, hold string // substrings, "" = none
	}{
		{"routes denied, window not read", Input{Workspace: "routes", Kind: "routes"}, day, "routes are frozen", "", ""},
		{"a load balancer by day is held", Input{Workspace: "lb-1", Kind: "loadbalancer"}, day, "", "", "not applied: "},
		{"a load balancer by night passes", Input{Workspace: "lb-1", Kind: "loadbalancer"}, night, "", "", ""},
		{"a destroy needs approval and is held", Input{Workspace: "lb-1", Kind: "loadbalancer", Destroy: true}, day, "", "destroy-needs-approval", "not applied: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g.Now = func() time.Time { return tt.now }
			v := g.Judge(tt.in)
			for _, c := range []struct{ got, want string }{{v.Denied, tt.denied}, {v.Approval, tt.approval}, {v.Hold, tt.hold}} {
				if (c.want == "") != (c.got == "") || !strings.Contains(c.got, c.want) {
					t.Errorf("verdict %+v: want denied %q, approval %q, hold %q", v, tt.denied, tt.approval, tt.hold)
					break
				}
			}
		})
	}
	none, err := New(&config.Config{})
	if err != nil || none != nil {
		t.Fatalf("no rules: New = %v, %v; want no gate", none, err)
	}
	if v := none.Judge(Input{Workspace: "lb-1", Kind: "loadbalancer"}); v.Denied != "" || v.Approval != "" || v.Hold != "" || len(v.Findings) != 0 {
		t.Errorf("no gate judged %+v", v)
	}
}
