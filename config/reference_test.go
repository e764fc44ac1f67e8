package config

import (
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestReferenceUpToDate fails when docs/configuration.md is not what the
// declarations generate; go generate ./config (-update) rewrites it.
func TestReferenceUpToDate(t *testing.T) {
	testkit.Golden(t, filepath.Join("..", "docs", "configuration.md"), []byte(Reference()))
}
