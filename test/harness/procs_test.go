package harness

import (
	"os/exec"
	"slices"
	"testing"
)

func TestProcesses(t *testing.T) {
	cmd := exec.Command("sleep", "30.4242")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for _, tc := range []struct {
		name  string
		match func([]string) bool
		want  bool
	}{
		{"argv matches", func(a []string) bool { return len(a) == 2 && a[0] == "sleep" && a[1] == "30.4242" }, true},
		{"other argument", func(a []string) bool { return len(a) == 2 && a[0] == "sleep" && a[1] == "30.4243" }, false},
		{"trailing NUL is not an argument", func(a []string) bool { return a[len(a)-1] == "" && a[0] == "sleep" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slices.Contains(Processes(tc.match), cmd.Process.Pid); got != tc.want {
				t.Errorf("sleep's pid %d found: %v, want %v", cmd.Process.Pid, got, tc.want)
			}
		})
	}
}
