package main

import (
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

// TestInTreeVersionsAgree: the chart, the kustomize base, the lbhost
// provider and CHANGELOG.md name one release — the one `make release`
// of this tree must be given.
func TestInTreeVersionsAgree(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := readInTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.check("v" + mirror.Version); err != nil {
		t.Error(err)
	}
}

func TestInTreeCheck(t *testing.T) {
	good := inTree{chartVersion: "1.2.3", appVersion: "v1.2.3", baseImageTag: "v1.2.3", provider: "1.2.3", changelog: true}
	for _, tc := range []struct {
		name    string
		tree    inTree
		version string
		err     string // "" = passes
	}{
		{"agree", good, "v1.2.3", ""},
		{"not a release", good, "v1.2.3-4-gabc", "vMAJOR.MINOR.PATCH"},
		{"no v", good, "1.2.3", "vMAJOR.MINOR.PATCH"},
		{"other release", good, "v1.2.4", `Chart.yaml version is "1.2.3", want "1.2.4"`},
		{"stale appVersion", inTree{"1.2.3", "v1.2.2", "v1.2.3", "1.2.3", true}, "v1.2.3", "appVersion"},
		{"stale base", inTree{"1.2.3", "v1.2.3", "latest", "1.2.3", true}, "v1.2.3", "deploy/base/deployment.yaml image tag"},
		{"stale provider", inTree{"1.2.3", "v1.2.3", "v1.2.3", "1.2.2", true}, "v1.2.3", "lbhost/mirror/version.go"},
		{"no changelog", inTree{"1.2.3", "v1.2.3", "v1.2.3", "1.2.3", false}, "v1.2.3", "CHANGELOG.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tree.check(tc.version)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one containing %q", err, tc.err)
			}
		})
	}
}
