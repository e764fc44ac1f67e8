package podexec

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilexec "k8s.io/client-go/util/exec"
)

func TestExitCodeAndForbidden(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, "p", errors.New("no"))
	for _, tc := range []struct {
		name      string
		err       error
		code      int
		exited    bool
		forbidden bool
	}{
		{"nil", nil, 0, false, false},
		{"exit 3", utilexec.CodeExitError{Err: errors.New("command terminated with exit code 3"), Code: 3}, 3, true, false},
		{"wrapped exit", fmt.Errorf("run: %w", utilexec.CodeExitError{Err: errors.New("x"), Code: 75}), 75, true, false},
		{"status forbidden", forbidden, 0, false, true},
		{"upgrade text forbidden", errors.New(`pods "p" is forbidden: User "x" cannot create resource "pods/exec"`), 0, false, true},
		{"other", errors.New("connection reset"), 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ok := ExitCode(tc.err)
			if code != tc.code || ok != tc.exited {
				t.Errorf("ExitCode = %d, %v; want %d, %v", code, ok, tc.code, tc.exited)
			}
			if got := Forbidden(tc.err); got != tc.forbidden {
				t.Errorf("Forbidden = %v, want %v", got, tc.forbidden)
			}
		})
	}
}
