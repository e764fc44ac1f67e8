// Package window owns when plans may be applied, the second half of
// package gate: the cloud config's change windows (config.ChangeWindows),
// evaluated as Argo CD evaluates sync windows. A deny window that is open closes everything (deny wins);
// otherwise, if any allow window is declared, changes pass only while one
// is open; with only deny windows they pass outside them. The freeze
// switch closes everything. Creates (nothing applied yet) and deletes may
// be let through outside the windows by configuration.
package window

import (
	"fmt"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // time zones without the system's database (the image has none)

	"github.com/robfig/cron/v3"

	"github.com/tfccm/tfccm/config"
)

// horizon bounds the search for the next opening.
const horizon = 366 * 24 * time.Hour

// Schedule is the compiled change windows.
type Schedule struct {
	freeze, allowCreates, allowDeletes bool
	windows                            []window
	hasAllow                           bool
}

type window struct {
	name, kind string
	sched      cron.Schedule
	dur        time.Duration
	loc        *time.Location
}

// New compiles the config's change windows; nil config gives a nil
// Schedule, which is always open.
func New(c *config.ChangeWindows) (*Schedule, error) {
	if c == nil {
		return nil, nil
	}
	s := &Schedule{freeze: c.Freeze, allowCreates: c.AllowCreates, allowDeletes: c.AllowDeletes}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for _, w := range c.Windows {
		loc, err := time.LoadLocation(w.TimeZone) // config.DefaultWindowTimeZone when omitted
		if err != nil {
			return nil, fmt.Errorf("change window %q: time_zone %q: %w", w.Name, w.TimeZone, err)
		}
		sched, err := parser.Parse(w.Schedule)
		if err != nil {
			return nil, fmt.Errorf("change window %q: schedule %q: %w", w.Name, w.Schedule, err)
		}
		s.windows = append(s.windows, window{name: w.Name, kind: w.Kind, sched: sched, dur: w.Duration, loc: loc})
		s.hasAllow = s.hasAllow || w.Kind == config.WindowAllow
	}
	return s, nil
}

// Change is what a plan does, for the creates/deletes exceptions.
type Change struct {
	Create, Delete bool
}

// Decision is whether a change may be applied now.
type Decision struct {
	Open bool
	// Why says what closes it (the freeze, a deny window, no allow
	// window open), when closed.
	Why string
	// Next is when it opens next; zero for the freeze or when no opening
	// comes within a year.
	Next time.Time
}

// Message is the closed decision as Events and conditions say it.
func (d Decision) Message() string {
	if d.Next.IsZero() {
		return d.Why + "; no window opens (not applied until the change windows change)"
	}
	return fmt.Sprintf("%s; next window opens at %s", d.Why, d.Next.UTC().Format(time.RFC3339))
}

// Check decides whether change may be applied at now. A nil Schedule is
// always open.
func (s *Schedule) Check(now time.Time, change Change) Decision {
	switch {
	case s == nil:
		return Decision{Open: true}
	case s.freeze:
		return Decision{Why: "changes are frozen (change_windows.freeze)"}
	case change.Create && s.allowCreates, change.Delete && s.allowDeletes:
		return Decision{Open: true}
	}
	why, open := s.closedBy(now)
	if open {
		return Decision{Open: true}
	}
	return Decision{Why: why, Next: s.next(now)}
}

// closedBy reports whether the windows are open at t and, if not, why.
func (s *Schedule) closedBy(t time.Time) (string, bool) {
	var allow bool
	for _, w := range s.windows {
		if !w.active(t) {
			continue
		}
		if w.kind == config.WindowDeny {
			return fmt.Sprintf("change window %q (deny) is open", w.name), false
		}
		allow = true
	}
	if s.hasAllow && !allow {
		return "no allow change window is open (" + strings.Join(s.allowNames(), ", ") + ")", false
	}
	return "", true
}

func (s *Schedule) allowNames() []string {
	var out []string
	for _, w := range s.windows {
		if w.kind == config.WindowAllow {
			out = append(out, w.name)
		}
	}
	return out
}

// active reports whether w is open at t: an opening in (t-dur, t].
func (w window) active(t time.Time) bool {
	start := w.sched.Next(t.In(w.loc).Add(-w.dur))
	return !start.After(t)
}

// next is the earliest time after now at which the windows are open:
// open only changes at an opening of an allow window or a closing of a
// deny window, so those are the candidates.
func (s *Schedule) next(now time.Time) time.Time {
	var cands []time.Time
	end := now.Add(horizon)
	for _, w := range s.windows {
		// Openings of w from one duration back, so that a deny window
		// open now contributes its closing.
		for t := w.sched.Next(now.In(w.loc).Add(-w.dur)); !t.IsZero() && t.Before(end); t = w.sched.Next(t) {
			switch w.kind {
			case config.WindowAllow:
				cands = append(cands, t)
			default:
				cands = append(cands, t.Add(w.dur))
			}
			if len(cands) > 20000 {
				break // a minutely schedule: enough candidates
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Before(cands[j]) })
	for _, c := range cands {
		if !c.After(now) {
			continue
		}
		if _, open := s.closedBy(c); open {
			return c
		}
	}
	return time.Time{}
}
