package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeCCM is a stand-in binary that logs its arguments, starts a child in
// its process group and ignores SIGTERM, so that only Stop's kill of the
// whole group ends both.
const fakeCCM = `#!/bin/sh
echo "args: $*"
trap '' TERM
sleep 60 &
echo "child: $!"
wait
`

func TestCCMProcess(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ccm")
	if err := os.WriteFile(bin, []byte(fakeCCM), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := StartCCM(CCMOptions{Binary: bin, Kubeconfig: "/k", CloudConfig: "/c.hcl", Dir: dir, Flags: []string{"--v=4"}, StopGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if err := Eventually(context.Background(), 10*time.Second, "child started", func(context.Context) error {
		m := regexp.MustCompile(`child: (\d+)`).FindStringSubmatch(c.Log())
		if m == nil {
			return fmt.Errorf("log: %q", c.Log())
		}
		child, _ = strconv.Atoi(m[1])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(strings.TrimPrefix(strings.SplitN(c.Log(), "\n", 2)[0], "args: "))
	want := append(Flags("/k", "/c.hcl"), "--leader-elect=true", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.Port),
		"--cert-dir="+filepath.Join(dir, "ccm-certs"), "--use-service-account-credentials=false", "--v=2", "--v=4")
	if strings.Join(args, " ") != strings.Join(want, " ") {
		t.Errorf("args\n%v\nwant\n%v", args, want)
	}
	if c.Exited() {
		t.Fatal("exited early")
	}
	start := time.Now()
	c.Stop()
	if !c.Exited() || time.Since(start) < 300*time.Millisecond {
		t.Errorf("Stop returned after %s, exited %v", time.Since(start), c.Exited())
	}
	// The child in the CCM's process group is killed with it (it may stay
	// a zombie of init for a moment).
	if err := Eventually(context.Background(), 5*time.Second, "child gone", func(context.Context) error {
		if err := syscall.Kill(child, 0); err == nil {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); !strings.Contains(string(b), ") Z") {
				return fmt.Errorf("child %d still running", child)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	c.Stop() // a second Stop returns at once
	if got := c.LogTail(1); !strings.HasPrefix(got, "child: ") {
		t.Errorf("LogTail(1) = %q", got)
	}
}
