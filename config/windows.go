package config

import (
	"fmt"
	"time"
)

// The change_windows block: its declarations and the checks of window
// kinds and durations (package window reads the schedules).

// Change window kinds.
const (
	WindowAllow = "allow"
	WindowDeny  = "deny"
)

// ChangeWindows are when plans may be applied (Argo CD's sync windows):
// outside them plans are made and published but not applied; package
// window evaluates them.
type ChangeWindows struct {
	Freeze       bool           `hcl:"freeze,optional" doc:"The freeze switch: no plan is applied, whatever the windows say (creates and deletes included); plans are still made and published."`
	AllowCreates bool           `hcl:"allow_creates,optional" doc:"A new load balancer (nothing applied yet) is created outside the windows too."`
	AllowDeletes bool           `hcl:"allow_deletes,optional" doc:"A deleted Service's load balancer is destroyed outside the windows too."`
	Windows      []ChangeWindow `hcl:"window,block" doc:"A recurring window: plans are applied while an allow window is open (when there is any allow window) and no deny window is (deny wins)."`
}

// ChangeWindow is one recurring window.
type ChangeWindow struct {
	Name         string `hcl:"name,label" doc:"Names the window in Events and conditions."`
	Kind         string `hcl:"kind" doc:"allow or deny."`
	Schedule     string `hcl:"schedule" doc:"When the window opens: a cron expression of five fields (minute hour day-of-month month day-of-week), as Argo CD's sync windows."`
	DurationText string `hcl:"duration" doc:"How long the window stays open after each opening, e.g. \"4h\"."`
	TimeZone     string `hcl:"time_zone,optional" doc:"The IANA time zone the schedule is read in, e.g. \"Europe/Berlin\" (default UTC)."`

	// Duration is parsed from DurationText (a window, not one of the
	// durations table's settings: each window has its own).
	Duration time.Duration
}

// finishWindows checks what does not need the schedule parsed: kinds and
// durations (package window parses schedules and time zones).
func (c *Config) finishWindows(k *checker) {
	if c.ChangeWindows == nil {
		return
	}
	seen := map[string]bool{}
	for i := range c.ChangeWindows.Windows {
		w := &c.ChangeWindows.Windows[i]
		if seen[w.Name] {
			k.errAt(at("change_windows"), "Duplicate window", fmt.Sprintf("change_windows: window %q is declared twice.", w.Name))
		}
		seen[w.Name] = true
		w.TimeZone = orDefault(w.TimeZone, DefaultWindowTimeZone)
		if w.Kind != WindowAllow && w.Kind != WindowDeny {
			k.errAt(at("change_windows"), "Invalid window kind", fmt.Sprintf("change_windows: window %q: kind is allow or deny, not %q.", w.Name, w.Kind))
		}
		d, err := time.ParseDuration(w.DurationText)
		if err != nil || d <= 0 {
			k.errAt(at("change_windows"), "Invalid window duration", fmt.Sprintf("change_windows: window %q: duration %q is not a positive duration such as \"4h\".", w.Name, w.DurationText))
		}
		w.Duration = d
	}
}
