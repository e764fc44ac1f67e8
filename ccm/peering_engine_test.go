package ccm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// fakePeeringEngine answers enginePeering.applied's reads: the work
// dir's status and files, and the state backend's catalog.
type fakePeeringEngine struct {
	peeringEngine // the calls applied does not make panic
	st            workspace.Status
	written       workspace.Spec
	writtenErr    error
	catalog       []string
	catalogErr    error
	entry         workspace.CatalogEntry
	entryErr      error
	lists         int // CatalogLookup calls
}

func (f *fakePeeringEngine) Status(string) workspace.Status { return f.st }
func (f *fakePeeringEngine) Written(string) (workspace.Spec, error) {
	return f.written, f.writtenErr
}

// CatalogLookup answers as workspace.Engine's does: no catalog is no
// entry, a listed name its entry.
func (f *fakePeeringEngine) CatalogLookup(_ context.Context, name string) (workspace.CatalogEntry, bool, error) {
	f.lists++
	switch {
	case errors.Is(f.catalogErr, workspace.ErrNoCatalog):
		return workspace.CatalogEntry{}, false, nil
	case f.catalogErr != nil:
		return workspace.CatalogEntry{}, false, f.catalogErr
	case !slices.Contains(f.catalog, name):
		return workspace.CatalogEntry{}, false, nil
	case f.entryErr != nil:
		return workspace.CatalogEntry{}, false, f.entryErr
	}
	return f.entry, true, nil
}

// TestEnginePeeringApplied: where the facet finds the peering it is to
// destroy: the work dir that applied it, else the state backend's
// catalog (a new pod), else nowhere; a catalog without it is read once.
func TestEnginePeeringApplied(t *testing.T) {
	const name = templates.PeeringWorkspaceName
	inWorkDir := workspace.Spec{Name: name, Files: map[string][]byte{"main.tf": []byte("# work dir")}}
	entry := workspace.CatalogEntry{Name: name, Owner: templates.ClusterOwner, Hash: "h0", Files: map[string][]byte{"main.tf": []byte("# catalog")}}
	for _, tc := range []struct {
		name      string
		eng       fakePeeringEngine
		wantOK    bool
		wantFile  string // main.tf of the spec returned
		wantErr   string
		wantLists int // catalog listings over two calls
	}{
		{name: "applied by this work dir", eng: fakePeeringEngine{st: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h0"}, written: inWorkDir},
			wantOK: true, wantFile: "# work dir"},
		{name: "applied, files unreadable", eng: fakePeeringEngine{st: workspace.Status{Phase: workspace.PhaseApplied, AppliedHash: "h0"}, writtenErr: errors.New("manifest: no such file")},
			wantErr: "read the applied workspace: manifest"},
		{name: "destroyed", eng: fakePeeringEngine{st: workspace.Status{Phase: workspace.PhaseDestroyed, AppliedHash: "h0"}, catalog: []string{name}, entry: entry}},
		{name: "new pod, no catalog (local backend)", eng: fakePeeringEngine{catalogErr: workspace.ErrNoCatalog}, wantLists: 1},
		{name: "new pod, the catalog holds none", eng: fakePeeringEngine{catalog: []string{"lb-default-web-1"}}, wantLists: 1},
		{name: "new pod, an earlier CCM's peering in the catalog", eng: fakePeeringEngine{catalog: []string{"lb-default-web-1", name}, entry: entry},
			wantOK: true, wantFile: "# catalog", wantLists: 2},
		{name: "new pod, the catalog unreachable", eng: fakePeeringEngine{catalogErr: errors.New("connection refused")},
			wantErr: "read the state backend's catalog for a peering applied by an earlier CCM: connection refused", wantLists: 2},
		{name: "new pod, the entry unreadable", eng: fakePeeringEngine{catalog: []string{name}, entryErr: errors.New("decode entry")},
			wantErr: "read the state backend's catalog for a peering applied by an earlier CCM: decode entry", wantLists: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := tc.eng
			e := &enginePeering{engine: &eng}
			for range 2 {
				spec, ok, err := e.applied(context.Background())
				if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("applied: %v, want error %q", err, tc.wantErr)
				}
				if ok != tc.wantOK || (ok && string(spec.Files["main.tf"]) != tc.wantFile) {
					t.Fatalf("applied = %v, %v, want ok %v with main.tf %q", spec, ok, tc.wantOK, tc.wantFile)
				}
			}
			if eng.lists != tc.wantLists {
				t.Errorf("the catalog listed %d times over two calls, want %d", eng.lists, tc.wantLists)
			}
		})
	}
}
