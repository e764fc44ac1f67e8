package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/workspace/backends"
)

// TestNewWorkDirPlansAnAppliedWorkspace: a controller with an empty work
// dir (a new pod's emptyDir) applies a workspace it has no record of in one
// command only when its state is empty; a workspace an earlier incarnation
// applied is planned first, and its unchanged state is not written again
// (a no-op apply bumps the serial and takes the lock, on every workspace at
// every leader change).
func TestNewWorkDirPlansAnAppliedWorkspace(t *testing.T) {
	bin, calls := countingBinary(t)
	statePath := filepath.Join(t.TempDir(), "lb-kept.tfstate")
	spec := testSpec("lb-kept", 1, 0)
	spec.Files["backend.tf"] = []byte("terraform {\n  backend \"local\" {\n    path = \"" + statePath + "\"\n  }\n}\n")
	spec.Backend = backends.Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal(statePath)}}
	serial := func() int {
		t.Helper()
		b, err := os.ReadFile(statePath)
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ Serial int }
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return st.Serial
	}

	first := newTestEngine(t, Options{Binary: bin})
	if _, err := first.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, first, spec)
	ran := calls()
	if count(ran, "plan") != 0 || count(ran, "apply") != 1 {
		t.Fatalf("the first apply of a new workspace ran %v, want one apply that plans itself", ran)
	}
	before := serial()

	next := newTestEngine(t, Options{Binary: bin})
	if _, err := next.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, next, spec)
	more := calls()[len(ran):]
	if count(more, "plan") != 1 || count(more, "apply") != 0 {
		t.Errorf("a new work dir over applied state ran %v, want a plan and no apply", more)
	}
	if after := serial(); after != before {
		t.Errorf("state serial %d -> %d: an unchanged workspace's state was written again", before, after)
	}
	if string(st.Outputs["value"]) != "1" {
		t.Errorf("outputs after the plan = %v, want value 1", st.Outputs)
	}
}
