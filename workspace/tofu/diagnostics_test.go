package tofu

import (
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name, stderr, want string
	}{
		{
			name:   "provisioner error with location",
			stderr: "\nError: local-exec provisioner error\n\n  with terraform_data.a,\n  on main.tf line 4, in resource \"terraform_data\" \"a\":\n   4:   provisioner \"local-exec\" {\n\nError running command 'x': exit status 3. Output:\nboom\n",
			want:   "local-exec provisioner error: Error running command 'x': exit status 3. Output: boom (on main.tf line 4)",
		},
		{
			name:   "two errors",
			stderr: "Error: First\n\nDetail one.\n\nError: Second\n\nDetail two.\n",
			want:   "First: Detail one.; Second: Detail two.",
		},
		{
			name:   "boxed diagnostics",
			stderr: "╷\n│ Error: Boxed\n│ \n│ Box detail.\n╵\n",
			want:   "Boxed: Box detail.",
		},
		{
			name:   "no diagnostic",
			stderr: "exit status 2\nsomething odd\npanic: oops\n",
			want:   "exit status 2 something odd panic: oops",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.stderr); got != tc.want {
				t.Fatalf("summarize = %q\nwant        %q", got, tc.want)
			}
		})
	}
	long := "Error: Long\n\n" + strings.Repeat("é", 2000) + "\n"
	if got := Summarize(long); len(got) > MaxMessage || !strings.HasSuffix(got, "...") {
		t.Fatalf("long diagnostic not shortened: %d bytes", len(got))
	}
}
