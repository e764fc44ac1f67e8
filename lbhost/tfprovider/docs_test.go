package tfprovider

import (
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestDocs fails when docs/lbhost.md is not what the schemas generate
// (go test ./lbhost/tfprovider -run TestDocs -update rewrites it).
func TestDocs(t *testing.T) {
	testkit.Golden(t, filepath.Join("..", "..", "docs", "lbhost.md"), []byte(Docs()))
}
