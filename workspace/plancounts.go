package workspace

import (
	"bytes"
	"regexp"
	"strconv"
)

// The counts of a plan, read from the "Plan: N to add, N to change, N to
// destroy." line `tofu plan` prints, so that the Event saying an apply
// starts costs no `tofu show` (a process that loads every provider's
// schema). tofu counts a replacement as one add and one destroy, as
// PendingPlan.count does.

// planLineRe matches tofu's plan summary line, with or without the
// import and forget counts OpenTofu adds around it.
var planLineRe = regexp.MustCompile(`^Plan: (?:\d+ to import, )?(\d+) to add, (\d+) to change, (\d+) to destroy(?:, \d+ to forget)?\.$`)

// maxPlanLine bounds the partial line planLineWriter keeps: the summary
// line is short, a longer line is not it.
const maxPlanLine = 256

// planLineWriter is the stdout of `tofu plan`: it keeps only the counts
// of the summary line, never the plan's text (which holds values).
type planLineWriter struct {
	line  []byte // the current line so far, up to maxPlanLine bytes
	long  bool   // the current line is longer than maxPlanLine
	found bool
	plan  PendingPlan // Add, Change, Remove when found
}

func (w *planLineWriter) Write(p []byte) (int, error) {
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

func (w *planLineWriter) endLine() {
	if !w.long {
		if m := planLineRe.FindSubmatch(bytes.TrimRight(w.line, "\r")); m != nil {
			add, _ := strconv.Atoi(string(m[1]))
			change, _ := strconv.Atoi(string(m[2]))
			remove, _ := strconv.Atoi(string(m[3]))
			w.found, w.plan = true, PendingPlan{Add: add, Change: change, Remove: remove}
		}
	}
	w.line, w.long = w.line[:0], false
}

// summary is the plan's summary, if its line was seen.
func (w *planLineWriter) summary() (string, bool) {
	if w == nil || !w.found {
		return "", false
	}
	return w.plan.Summary(), true
}
