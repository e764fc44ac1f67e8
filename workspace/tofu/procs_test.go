package tofu

import (
	"fmt"
	"testing"

	"github.com/tfccm/tfccm/workspace/locks"
)

func TestRunOwnerAlive(t *testing.T) {
	self := locks.SelfClaim("", "")
	for _, tc := range []struct {
		run  string
		want bool
	}{
		{fmt.Sprintf("%d:%d:7", self.PID, self.PIDStart), true},
		{fmt.Sprintf("%d:%d:7", self.PID, self.PIDStart+1), false}, // pid reused
		{"999999999:1:1", false},
		{"garbage", false},
	} {
		if got := runOwnerAlive(tc.run); got != tc.want {
			t.Errorf("runOwnerAlive(%q) = %v, want %v", tc.run, got, tc.want)
		}
	}
}
