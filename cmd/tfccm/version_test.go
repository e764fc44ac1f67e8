package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/version"
)

func TestVersionCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // prefix of stdout
	}{
		{[]string{"version"}, exitOK, "tfccm " + version.Version() + " (commit "},
		{[]string{"version", "-short"}, exitOK, version.Version() + "\n"},
		{[]string{"version", "extra"}, exitUsage, ""},
		{[]string{"version", "-bogus"}, exitUsage, ""},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.HasPrefix(out.String(), tc.out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q...", tc.args, code, out.String(), errOut.String(), tc.code, tc.out)
		}
	}
}
