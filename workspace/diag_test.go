package workspace

import (
	"os"
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
			if got := summarize(tc.stderr); got != tc.want {
				t.Fatalf("summarize = %q\nwant        %q", got, tc.want)
			}
		})
	}
	long := "Error: Long\n\n" + strings.Repeat("é", 2000) + "\n"
	if got := summarize(long); len(got) > maxMessage || !strings.HasSuffix(got, "...") {
		t.Fatalf("long diagnostic not shortened: %d bytes", len(got))
	}
}

func TestSpecHashes(t *testing.T) {
	a := testSpec("h", 1, 0)
	b := testSpec("h", 2, 0)
	if a.ContentHash() == b.ContentHash() {
		t.Fatal("different inputs, same content hash")
	}
	if a.initHash() != b.initHash() {
		t.Fatal("an input change alone must not require init")
	}
	c := testSpec("h", 1, 0)
	c.Files["backend.tf"] = []byte(`terraform {}`)
	if a.initHash() == c.initHash() {
		t.Fatal("a backend file change must require init")
	}
	d := testSpec("h", 1, 0)
	d.Modes = map[string]os.FileMode{"main.tf": 0o755}
	if a.ContentHash() == d.ContentHash() {
		t.Fatal("a mode change must change the hash")
	}
}
