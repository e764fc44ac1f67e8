package host

import (
	"context"
	"errors"
	"testing"

	"github.com/tfccm/tfccm/lbhost/haproxy"
)

// TestReadFrontendWhileHAProxyReloads: while HAProxy reloads, its master
// CLI may close a connection without an answer. That says nothing about
// the load balancer: ReadFrontend returns it as the fragment has it, not
// a *Drift (which read as "not loaded", and a destroy's refresh in the
// provider dropped the frontend from state, leaving its fragment).
func TestReadFrontendWhileHAProxyReloads(t *testing.T) {
	f := haproxy.Frontend{Name: "c1_web", Address: "10.0.0.5", Ports: []haproxy.Port{{Port: 80, NodePort: 30080}},
		Backends: []haproxy.Backend{{Name: "node-a", Address: "10.1.0.1"}}, SessionAffinity: "None"}
	data, err := haproxy.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, answer string
		drift        bool
	}{
		{"loaded", "# name\nbe_other_80\n" + haproxy.BackendName("c1_web", 80) + "\n", false},
		{"not loaded", "# name\nbe_other_80\n", true},
		{"no answer (reloading)", "", false},
		{"not a backend list", "Can't connect to the target CLI!\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hostAnswering(t, tc.answer)
			if err := h.T.WriteFile(context.Background(), h.fragment("c1_web"), data); err != nil {
				t.Fatal(err)
			}
			got, err := h.ReadFrontend(context.Background(), "c1_web")
			var drift *Drift
			switch {
			case tc.drift && !errors.As(err, &drift):
				t.Fatalf("ReadFrontend = %v, %v; want a *Drift", got, err)
			case !tc.drift && (err != nil || got == nil || got.Name != "c1_web"):
				t.Fatalf("ReadFrontend = %v, %v; want the load balancer", got, err)
			}
		})
	}
}
