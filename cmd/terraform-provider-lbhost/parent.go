package main

import (
	"log"
	"os"
	"time"
)

// exitWithParent ends the provider when the tofu process that started it
// is gone. go-plugin's server keeps serving when its client disappears
// and ignores SIGINT, so a provider whose tofu was killed (with the
// controller that ran it) would otherwise live on, holding an SSH session
// to an LB host and the workspace open. A killed parent re-parents the
// provider (getppid changes), which is checked every interval. The
// parent-death signal (PR_SET_PDEATHSIG) is not used: Linux sends it when
// the parent's forking thread exits, which in a Go parent is not the
// parent's death.
func exitWithParent(ppid int, interval time.Duration, getppid func() int, exit func()) {
	for {
		if getppid() != ppid || ppid == 1 {
			log.Printf("[WARN] terraform-provider-lbhost: its parent process %d is gone; exiting", ppid)
			exit()
			return
		}
		time.Sleep(interval)
	}
}

// watchParent runs exitWithParent for this process in the background.
func watchParent() {
	go exitWithParent(os.Getppid(), 200*time.Millisecond, os.Getppid, func() { os.Exit(1) })
}
