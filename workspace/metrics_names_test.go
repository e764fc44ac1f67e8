package workspace

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"
)

// TestWorkspacesGaugeNames: the workspaces by phase are tfccm_workspaces
// and, for one release, also the deprecated tfccm_workspace_workspaces,
// with the same values (alerts written against the old name still fire).
func TestWorkspacesGaugeNames(t *testing.T) {
	c := &engineCollector{engine: &Engine{ws: map[string]*entry{
		"a": {status: Status{Phase: PhaseApplied}},
		"b": {status: Status{Phase: PhaseFailed, Err: errors.New("boom")}},
		"c": {status: Status{Phase: PhaseFailed, Err: errors.New("boom")}},
	}}}
	want := `
# HELP tfccm_workspaces [ALPHA] Workspaces by phase: Pending, Running, Applied, Failed, Invalid (the template rejected the inputs; not retried), AwaitingApproval.
# TYPE tfccm_workspaces gauge
tfccm_workspaces{phase="Applied"} 1
tfccm_workspaces{phase="AwaitingApproval"} 0
tfccm_workspaces{phase="Failed"} 2
tfccm_workspaces{phase="Invalid"} 0
tfccm_workspaces{phase="Pending"} 0
tfccm_workspaces{phase="Running"} 0
# HELP tfccm_workspace_workspaces [ALPHA] Deprecated: use tfccm_workspaces (this name goes in the next release). Workspaces by phase.
# TYPE tfccm_workspace_workspaces gauge
tfccm_workspace_workspaces{phase="Applied"} 1
tfccm_workspace_workspaces{phase="AwaitingApproval"} 0
tfccm_workspace_workspaces{phase="Failed"} 2
tfccm_workspace_workspaces{phase="Invalid"} 0
tfccm_workspace_workspaces{phase="Pending"} 0
tfccm_workspace_workspaces{phase="Running"} 0
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want), "tfccm_workspaces", "tfccm_workspace_workspaces"); err != nil {
		t.Error(err)
	}
}
