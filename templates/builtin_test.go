package templates

import (
	"bytes"
	"io/fs"
	"path"
	"testing"
)

// TestBorrowedModules checks each borrowed module: the borrowing set keeps
// no copy of its own, the lending set has it, and the loaded set serves
// the lender's files byte for byte.
func TestBorrowedModules(t *testing.T) {
	if len(borrowed) == 0 {
		t.Fatal("no borrowed modules: drop this test with the map")
	}
	for set, mods := range borrowed {
		for mod, from := range mods {
			t.Run(set+"/"+mod, func(t *testing.T) {
				if _, err := fs.Stat(builtinFS, path.Join(set, mod)); err == nil {
					t.Fatalf("%s/%s is borrowed from %s but the set keeps a copy too", set, mod, from)
				}
				lender, err := LoadBuiltin(from)
				if err != nil {
					t.Fatal(err)
				}
				borrower, err := LoadBuiltin(set)
				if err != nil {
					t.Fatal(err)
				}
				want, ok := lender.Module(mod)
				if !ok {
					t.Fatalf("%s has no module %s to lend", from, mod)
				}
				got, ok := borrower.Module(mod)
				if !ok {
					t.Fatalf("%s has no module %s after loading", set, mod)
				}
				if len(got.Files) != len(want.Files) || len(got.Files) == 0 {
					t.Fatalf("%s/%s: %d files, %s/%s: %d", set, mod, len(got.Files), from, mod, len(want.Files))
				}
				for i := range got.Files {
					if got.Files[i].Path != want.Files[i].Path || !bytes.Equal(got.Files[i].Data, want.Files[i].Data) {
						t.Errorf("%s/%s file %s differs from %s's %s", set, mod, got.Files[i].Path, from, want.Files[i].Path)
					}
				}
				if len(got.Variables) == 0 {
					t.Errorf("%s/%s: no variables parsed", set, mod)
				}
			})
		}
	}
}
