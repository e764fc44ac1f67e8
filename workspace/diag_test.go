package workspace

import (
	"os"
	"strings"
	"testing"
	"time"
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

func TestParseLockError(t *testing.T) {
	stderr := "Error: Error acquiring the state lock\n\nError message: resource temporarily unavailable\nLock Info:\n  ID:        d04522e8-fefa\n  Path:      terraform.tfstate\n  Operation: OperationTypeApply\n  Who:       root@vm\n  Version:   1.12.6\n  Created:   2026-11-21 14:25:05.717885233 +0000 UTC\n  Info:      \n"
	li, ok := parseLockError(stderr)
	if !ok || li.ID != "d04522e8-fefa" || li.Who != "root@vm" || li.Operation != "OperationTypeApply" {
		t.Fatalf("parseLockError = %+v, %v", li, ok)
	}
	if _, err := parseLockTime(li.Created); err != nil {
		t.Fatalf("lock time: %v", err)
	}
	if h := li.holder(); !strings.Contains(h, "root@vm (Apply) since 2026-11-21") || !strings.Contains(h, "d04522e8-fefa") {
		t.Fatalf("holder = %q", h)
	}
	// tofu init reports a held lock differently (kubernetes backend).
	initErr := "Error: Error loading state\n\nthe state is already locked by another tofu client\nLock Info:\n  ID:        11111111-2222\n  Path:      \n  Operation: OperationTypeInit\n  Who:       root@vm\n  Version:   1.12.6\n  Created:   2026-11-23 09:50:00 +0000 UTC\n  Info:      \n"
	if li, ok := parseLockError(initErr); !ok || li.ID != "11111111-2222" || li.Operation != "OperationTypeInit" || !strings.Contains(li.holder(), "(Init)") || !strings.Contains(li.holder(), " ago)") {
		t.Fatalf("init lock: %+v, %v, holder %q", li, ok, li.holder())
	}
	if _, ok := parseLockError("Error: Something else\n  ID: x\n"); ok {
		t.Fatal("non-lock error parsed as a lock")
	}
}

func TestStaleOwnLock(t *testing.T) {
	self := selfClaim("ctrl", "apply")
	started := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	lockAt := "2026-01-01 10:00:01.5 +0000 UTC"
	dead := claim{Identity: "ctrl", Host: self.Host, Who: self.Who, PID: 1 << 22, BootID: self.BootID, Started: started}
	for _, tc := range []struct {
		name  string
		lock  lockInfo
		claim claim
		want  bool
	}{
		{"our dead process", lockInfo{ID: "1", Who: self.Who, Created: lockAt}, dead, true},
		{"this process", lockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() claim { c := self; c.Started = started; return c }(), true},
		{"earlier boot", lockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() claim { c := dead; c.PID = 1; c.BootID = "other"; return c }(), true},
		{"live other process", lockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() claim { c := dead; c.PID = 1; c.PIDStart = procStart(1); return c }(), false},
		{"other identity", lockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() claim { c := dead; c.Identity = "someone"; return c }(), false},
		{"lock by someone else", lockInfo{ID: "1", Who: "alice@laptop", Created: lockAt}, dead, false},
		{"lock older than claim", lockInfo{ID: "1", Who: self.Who, Created: "2026-01-01 09:00:00 +0000 UTC"}, dead, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleOwnLock(tc.lock, tc.claim, self); got != tc.want {
				t.Fatalf("staleOwnLock = %v, want %v", got, tc.want)
			}
		})
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
