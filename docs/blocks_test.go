package docs

import (
	"slices"
	"strings"
	"testing"
)

// TestBlocksRunBy: the blocks a test runs of a page, in order, its
// variant's alternatives only.
func TestBlocksRunBy(t *testing.T) {
	src := "<!-- docs-test: skip: run by TestQ -->\n```sh\none\n```\n" +
		"<!-- docs-test: skip: needs a cluster -->\n```sh\nnot mine\n```\n" +
		"<!-- docs-test: skip: run by TestQ/root (a root login) -->\n```sh\nroot only\n```\n" +
		"<!-- docs-test: skip: run by TestQ/sudo -->\n```sh\nsudo only\n```\n" +
		"<!-- docs-test: skip: run by TestQ -->\n```yaml\nnot a shell block\n```\n" +
		"<!-- docs-test: skip: run by TestQuick -->\n```sh\nanother test's\n```\n" +
		"<!-- docs-test: skip: run by TestQ (in test/x) -->\n```sh\nlast\n```\n"
	for _, tc := range []struct {
		variant string
		want    []string
	}{
		{"root", []string{"one\n", "root only\n", "last\n"}},
		{"sudo", []string{"one\n", "sudo only\n", "last\n"}},
	} {
		got, err := BlocksRunBy("p.md", src, "TestQ", tc.variant)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.variant, got, err, tc.want)
		}
	}
	if _, err := BlocksRunBy("p.md", src, "TestOther", ""); err == nil || !strings.Contains(err.Error(), "run by TestOther") {
		t.Errorf("a page without the test's blocks: %v", err)
	}
}
