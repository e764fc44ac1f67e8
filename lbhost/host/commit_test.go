package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// TestTake: a change's record is taken once its commit wrote a result;
// another token's record says a later change replaced it; no record says
// the host lost its state under it (wiped, reinstalled), not that it was
// replaced.
func TestTake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		record  *pendingChange // nil: none
		wantErr string         // "" : no error
		want    bool           // a result comes back
	}{
		{name: "committed", record: &pendingChange{Token: "t1", Result: &commitResult{}}, want: true},
		{name: "not committed yet", record: &pendingChange{Token: "t1"}},
		{name: "replaced", record: &pendingChange{Token: "t2"}, wantErr: "was replaced by another"},
		{name: "record gone", wantErr: "is gone (the host's state directory was removed or reinstalled meanwhile)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := &Host{T: &transport.Netns{Name: "test"}, Dir: dir}
			if tc.record != nil {
				b, err := json.Marshal(tc.record)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(dir, "pending"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(h.pendingFile("web"), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			res, err := h.take(context.Background(), "web", "t1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (res != nil) != tc.want {
				t.Fatalf("result %v, want one: %v", res, tc.want)
			}
			_, statErr := os.Stat(h.pendingFile("web"))
			if tc.want != os.IsNotExist(statErr) {
				t.Errorf("record removed: %v, want %v", os.IsNotExist(statErr), tc.want)
			}
		})
	}
}
