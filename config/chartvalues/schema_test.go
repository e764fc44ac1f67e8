package chartvalues

import (
	"os"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestSchemaIsTheChartsUpToDate: the embedded schema is the chart's
// (`go test -run TestSchemaIsTheChartsUpToDate -update` copies it).
func TestSchemaIsTheChartsUpToDate(t *testing.T) {
	chart, err := os.ReadFile("../../deploy/helm/tfccm/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "values.schema.json", chart)
}

// TestLoadChecksTheSchema: Load refuses what helm refuses, naming the key.
func TestLoadChecksTheSchema(t *testing.T) {
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, values, want string }{
		{"top level", string(b) + "baremetall: {}\n", "'baremetall' not allowed"},
		{"in sshKey", strings.Replace(string(b), "existingSecret: tfccm-ssh", "existingSecrett: tfccm-ssh", 1), "'existingSecrett' not allowed"},
		{"a port", strings.Replace(string(b), "address: 192.168.10.3,", "address: 192.168.10.3, port: 70000,", 1), "/baremetal/hosts/1/port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v does not say %q", err, tc.want)
			}
		})
	}
}
