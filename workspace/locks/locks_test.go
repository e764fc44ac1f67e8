package locks

import (
	"strings"
	"testing"
	"time"
)

func TestParseLockError(t *testing.T) {
	stderr := "Error: Error acquiring the state lock\n\nError message: resource temporarily unavailable\nLock Info:\n  ID:        d04522e8-fefa\n  Path:      terraform.tfstate\n  Operation: OperationTypeApply\n  Who:       root@vm\n  Version:   1.12.6\n  Created:   2026-11-21 14:25:05.717885233 +0000 UTC\n  Info:      \n"
	li, ok := ParseLockError(stderr)
	if !ok || li.ID != "d04522e8-fefa" || li.Who != "root@vm" || li.Operation != "OperationTypeApply" {
		t.Fatalf("ParseLockError = %+v, %v", li, ok)
	}
	if _, err := parseLockTime(li.Created); err != nil {
		t.Fatalf("lock time: %v", err)
	}
	if h := li.Holder(); !strings.Contains(h, "root@vm (Apply) since 2026-11-21") || !strings.Contains(h, "d04522e8-fefa") {
		t.Fatalf("Holder = %q", h)
	}
	// tofu init reports a held lock differently (kubernetes backend).
	initErr := "Error: Error loading state\n\nthe state is already locked by another tofu client\nLock Info:\n  ID:        11111111-2222\n  Path:      \n  Operation: OperationTypeInit\n  Who:       root@vm\n  Version:   1.12.6\n  Created:   2026-11-23 09:50:00 +0000 UTC\n  Info:      \n"
	if li, ok := ParseLockError(initErr); !ok || li.ID != "11111111-2222" || li.Operation != "OperationTypeInit" || !strings.Contains(li.Holder(), "(Init)") || !strings.Contains(li.Holder(), " ago)") {
		t.Fatalf("init lock: %+v, %v, Holder %q", li, ok, li.Holder())
	}
	if _, ok := ParseLockError("Error: Something else\n  ID: x\n"); ok {
		t.Fatal("non-lock error parsed as a lock")
	}
}

func TestStaleOwnLock(t *testing.T) {
	self := SelfClaim("ctrl", "apply")
	started := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	lockAt := "2026-01-01 10:00:01.5 +0000 UTC"
	dead := Claim{Identity: "ctrl", Host: self.Host, Who: self.Who, PID: 1 << 22, BootID: self.BootID, Started: started}
	for _, tc := range []struct {
		name  string
		lock  LockInfo
		Claim Claim
		want  bool
	}{
		{"our dead process", LockInfo{ID: "1", Who: self.Who, Created: lockAt}, dead, true},
		{"this process", LockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() Claim { c := self; c.Started = started; return c }(), true},
		{"earlier boot", LockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() Claim { c := dead; c.PID = 1; c.BootID = "other"; return c }(), true},
		{"live other process", LockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() Claim { c := dead; c.PID = 1; c.PIDStart = ProcStart(1); return c }(), false},
		{"other identity", LockInfo{ID: "1", Who: self.Who, Created: lockAt}, func() Claim { c := dead; c.Identity = "someone"; return c }(), false},
		{"lock by someone else", LockInfo{ID: "1", Who: "alice@laptop", Created: lockAt}, dead, false},
		{"lock older than claim", LockInfo{ID: "1", Who: self.Who, Created: "2026-01-01 09:00:00 +0000 UTC"}, dead, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StaleOwnLock(tc.lock, tc.Claim, self); got != tc.want {
				t.Fatalf("StaleOwnLock = %v, want %v", got, tc.want)
			}
		})
	}
}
