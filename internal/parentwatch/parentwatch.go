// Package parentwatch ends a provider plugin when the tofu process that
// started it is gone. go-plugin's server keeps serving when its client
// disappears and ignores SIGINT, so a provider whose tofu was killed (with
// the controller that ran it) would otherwise live on, holding its
// sessions and the workspace open. Used by tfccm's lbhost provider and by
// the test stand-in.
package parentwatch

import (
	"log"
	"os"
	"time"
)

// exitWithParent calls exit once the process's parent is gone: a killed
// parent re-parents the process (getppid changes), which is checked every
// interval. The
// parent-death signal (PR_SET_PDEATHSIG) is not used: Linux sends it when
// the parent's forking thread exits, which in a Go parent is not the
// parent's death.
func exitWithParent(name string, ppid int, interval time.Duration, getppid func() int, exit func()) {
	for {
		if getppid() != ppid || ppid == 1 {
			log.Printf("[WARN] %s: its parent process %d is gone; exiting", name, ppid)
			exit()
			return
		}
		time.Sleep(interval)
	}
}

// Watch ends this process (exit status 1) in the background once its
// parent is gone; name is the program named in the log line.
func Watch(name string) {
	go exitWithParent(name, os.Getppid(), 200*time.Millisecond, os.Getppid, func() { os.Exit(1) })
}
