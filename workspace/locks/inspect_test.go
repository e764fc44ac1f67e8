package locks

import (
	"os"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	self := SelfClaim("tfccm-a", "apply")
	li := LockInfo{ID: "id-1", Who: self.Who, Operation: "OperationTypeApply", Created: "2026-01-02T03:04:05Z"}
	gone := self
	gone.PID, gone.PIDStart = 1<<22+7, 1 // no such process
	elsewhere := self
	elsewhere.Host, elsewhere.BootID = "other-host", "other-boot"
	otherIdentity := self
	otherIdentity.Identity = "tfccm-b"
	for _, tc := range []struct {
		name        string
		claim       *Claim
		ours, stale bool
		why         string
	}{
		{"no claim", nil, false, false, "someone else"},
		{"another deployment's claim", &otherIdentity, false, false, "someone else"},
		{"this process", &self, true, false, "still running"},
		{"an exited process on this host", &gone, true, true, "has exited"},
		{"another host", &elsewhere, true, false, "cannot check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(dir+"/.tfccm", 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.claim != nil {
				if err := WriteClaim(dir, *tc.claim); err != nil {
					t.Fatal(err)
				}
			}
			l := Judge(li, dir, "tfccm-a")
			if !l.Held || l.ID != li.ID || l.Holder != li.Holder() || l.Ours != tc.ours || l.Stale != tc.stale || !strings.Contains(l.Why, tc.why) {
				t.Errorf("Judge = %+v; want ours %v, stale %v, why containing %q", l, tc.ours, tc.stale, tc.why)
			}
		})
	}
}
