package parentwatch

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestExitWithParent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start, now int
		want       bool
	}{
		{"parent alive", 42, 42, false},
		{"re-parented", 42, 1, true},
		{"re-parented to a subreaper", 42, 7, true},
		{"started orphaned", 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ppid atomic.Int64
			ppid.Store(int64(tc.now))
			exited := make(chan struct{})
			go exitWithParent("test", tc.start, time.Millisecond, func() int { return int(ppid.Load()) }, func() { close(exited) })
			select {
			case <-exited:
				if !tc.want {
					t.Fatal("exited while its parent lives")
				}
			case <-time.After(100 * time.Millisecond):
				if tc.want {
					t.Fatal("did not exit")
				}
			}
		})
	}
}
