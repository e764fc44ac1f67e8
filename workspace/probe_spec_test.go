package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProbeSpec: a module rendered whole (a set's hosts health module) is
// refreshed in a copy of its own under the probes, with its inputs; new
// inputs are read by the next probe, a file the spec drops is removed,
// nothing is applied and no state is left behind.
func TestProbeSpec(t *testing.T) {
	e := newTestEngine(t, Options{})
	spec := &Spec{Name: "hosthealth", Files: map[string][]byte{
		"main.tf":           []byte(probeModule),
		"extra.tf":          []byte("# dropped below\n"),
		"tfccm.auto.tfvars": []byte("n = 21\n"),
	}}
	for _, tc := range []struct{ n, want string }{{"21", "42"}, {"5", "10"}} {
		spec.Files["tfccm.auto.tfvars"] = []byte("n = " + tc.n + "\n")
		out, err := e.ProbeSpec(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if string(out["twice"]) != tc.want {
			t.Errorf("n = %s: outputs %v, want twice = %s", tc.n, out, tc.want)
		}
		delete(spec.Files, "extra.tf")
	}
	dir := filepath.Join(e.opts.WorkDir, probesDir, "hosthealth", "module")
	if got, want := listTree(t, dir), []string{"main.tf", "tfccm.auto.tfvars"}; !slices.Equal(got, want) {
		t.Errorf("the probe's copy holds %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "applied-by-probe")); err == nil {
		t.Error("the probe applied the module's resource")
	}
	if _, err := e.ProbeSpec(context.Background(), &Spec{Name: "../x"}); err == nil {
		t.Error("a probe named ../x accepted")
	}
}
