package tofu

import (
	"strings"
	"testing"
)

// TestParseCredentials: the declaration's names, and the names and
// shapes refused.
func TestParseCredentials(t *testing.T) {
	for _, tc := range []struct {
		src, want, err string
	}{
		{src: "", want: ""},
		{src: `env = ["HCLOUD_TOKEN", "HCLOUD_ENDPOINT"]`, want: "HCLOUD_ENDPOINT,HCLOUD_TOKEN"},
		{src: `env = ["TF_VAR_x"]`, err: "TF_VAR_x may not be set"},
		{src: `env = ["TF_CLI_CONFIG_FILE"]`, err: "managed by tfccm"},
		{src: `env = ["A", "A"]`, err: "names A twice"},
		{src: `env = "A"`, err: "Unsuitable value type"},
		{src: `other = ["A"]`, err: "Unsupported argument"},
		{src: `env = [`, err: "Missing expression"},
	} {
		got, diags := ParseCredentials([]byte(tc.src), CredentialsFile)
		if tc.err != "" {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.err) {
				t.Errorf("%q: diagnostics %v, want %q", tc.src, diags, tc.err)
			}
			continue
		}
		if diags.HasErrors() || strings.Join(got, ",") != tc.want {
			t.Errorf("%q: %v %v, want %s", tc.src, got, diags, tc.want)
		}
	}
}
