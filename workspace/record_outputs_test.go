package workspace

import (
	"errors"
	"strings"
	"testing"
)

func TestStateOutputs(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      int
		err       error
		errText   string
	}{
		{"plain", `{"version":4,"outputs":{"n":{"value":1,"type":"number"}}}`, 1, nil, ""},
		{"no outputs", `{"version":4}`, 0, nil, ""},
		{"encrypted", `{"serial":3,"lineage":"x","meta":{"key_provider.external.main":"e30="},"encrypted_data":"AAAA","encryption_version":"v0"}`, 0, errEncryptedState, ""},
		{"old format", `{"version":3}`, 0, nil, "state format version 3"},
		{"not json", `{`, 0, nil, "decode state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stateOutputs([]byte(tc.doc))
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v, want %q", err, tc.errText)
				}
			case err != nil || len(got) != tc.want:
				t.Fatalf("outputs %v, %v; want %d", got, err, tc.want)
			}
		})
	}
}
