package tofu

import (
	"bytes"
	"regexp"
	"strconv"

	"github.com/tfccm/tfccm/workspace/plans"
)

// The counts of a plan, read from the "Plan: N to add, N to change, N to
// destroy." line `tofu plan` prints, so that the Event saying an apply
// starts costs no `tofu show` (a process that loads every provider's
// schema). tofu counts a replacement as one add and one destroy, as
// PendingPlan.Count does.

// planLineRe matches tofu's plan summary line, with or without the
// import and forget counts OpenTofu adds around it.
var planLineRe = regexp.MustCompile(`^Plan: (?:(\d+) to import, )?(\d+) to add, (\d+) to change, (\d+) to destroy(?:, (\d+) to forget)?\.$`)

// maxPlanLine bounds the partial line PlanLineWriter keeps: the summary
// line is short, a longer line is not it.
const maxPlanLine = 256

// planProblem is in the line that heads a plan tofu printed although
// planning then failed ("OpenTofu planned the following actions, but then
// encountered a problem:"): its summary line follows, and nothing is
// applied.
const planProblem = "planned the following actions, but then encountered a problem"

// noChangesPrefix starts the line tofu prints for a plan without changes
// ("No changes. Your infrastructure matches the configuration.").
const noChangesPrefix = "No changes."

// PlanLineWriter is the stdout of `tofu plan` (or of an apply that plans
// itself): it keeps only the counts of the summary line, never the plan's
// text (which holds values).
type PlanLineWriter struct {
	line  []byte // the current line so far, up to maxPlanLine bytes
	long  bool   // the current line is longer than maxPlanLine
	found bool
	none  bool // the plan had no changes
	// problem: planning failed after printing the plan (planProblem); its
	// summary line is not the summary of a plan.
	problem bool
	plan    plans.PendingPlan // Add, Change, Remove when found
	// OnSummary, when set, is called with the summary once the line is
	// seen: an apply without a saved plan starts its changes right after.
	OnSummary func(summary string)
}

func (w *PlanLineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.long && len(w.line)+len(chunk) <= maxPlanLine {
			w.line = append(w.line, chunk...)
		} else {
			w.long, w.line = true, w.line[:0]
		}
		if i < 0 {
			break
		}
		w.endLine()
		p = p[i+1:]
	}
	return n, nil
}

func (w *PlanLineWriter) endLine() {
	if !w.long {
		if m := planLineRe.FindSubmatch(bytes.TrimRight(w.line, "\r")); m != nil && !w.problem {
			n := func(i int) int { v, _ := strconv.Atoi(string(m[i])); return v } // "" (absent) is 0
			w.found, w.plan = true, plans.PendingPlan{Import: n(1), Add: n(2), Change: n(3), Remove: n(4), Forget: n(5)}
			if w.OnSummary != nil {
				w.OnSummary(w.plan.Summary())
			}
		} else if bytes.HasPrefix(w.line, []byte(noChangesPrefix)) {
			w.none = true
		} else if bytes.Contains(w.line, []byte(planProblem)) {
			w.problem = true
		}
	}
	w.line, w.long = w.line[:0], false
}

// Summary is the plan's summary, if its line was seen.
func (w *PlanLineWriter) Summary() (string, bool) {
	if w == nil || !w.found {
		return "", false
	}
	return w.plan.Summary(), true
}

// Planning reports whether the command has not yet printed its plan's
// summary (nor said it has no changes): an apply without a saved plan that
// fails then failed while planning.
func (w *PlanLineWriter) Planning() bool { return w != nil && !w.found && !w.none }

// NoChanges reports whether the command said its plan has no changes.
func (w *PlanLineWriter) NoChanges() bool { return w.none }
