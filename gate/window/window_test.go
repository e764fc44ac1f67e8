package window

import (
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/config"
)

func mustNew(t *testing.T, c *config.ChangeWindows) *Schedule {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCheck(t *testing.T) {
	nights := config.ChangeWindow{Name: "weeknights", Kind: config.WindowAllow, Schedule: "0 22 * * 1-5", Duration: 4 * time.Hour, TimeZone: "Europe/Berlin"}
	freeze := config.ChangeWindow{Name: "year-end", Kind: config.WindowDeny, Schedule: "0 0 20 12 *", Duration: 14 * 24 * time.Hour}
	both := &config.ChangeWindows{Windows: []config.ChangeWindow{nights, freeze}}
	for _, tc := range []struct {
		name   string
		cfg    *config.ChangeWindows
		now    string
		change Change
		open   bool
		why    string
		next   string
	}{
		{"no windows", nil, "2026-11-25T10:00:00Z", Change{}, true, "", ""},
		// 22:00 in Berlin (CET, UTC+1) is 21:00 UTC.
		{"monday night in Berlin", both, "2026-11-23T21:30:00Z", Change{}, true, "", ""},
		{"still open at 01:59 Berlin", both, "2026-11-24T00:59:00Z", Change{}, true, "", ""},
		{"closed at 02:00 Berlin", both, "2026-11-24T01:00:00Z", Change{}, false, `no allow change window is open (weeknights)`, "2026-11-24T21:00:00Z"},
		{"daytime", both, "2026-11-25T10:00:00Z", Change{}, false, "no allow change window is open", "2026-11-25T21:00:00Z"},
		{"friday opens friday night", both, "2026-11-27T12:00:00Z", Change{}, false, "", "2026-11-27T21:00:00Z"},
		{"saturday waits for monday", both, "2026-11-28T12:00:00Z", Change{}, false, "", "2026-11-30T21:00:00Z"},
		// Summer time: 22:00 CEST is 20:00 UTC.
		{"summer time", both, "2026-07-01T20:30:00Z", Change{}, true, "", ""},
		{"deny wins over an open allow window", both, "2026-12-22T21:30:00Z", Change{}, false, `change window "year-end" (deny) is open`, "2027-01-04T21:00:00Z"},
		{"creates pass when allowed", &config.ChangeWindows{AllowCreates: true, Windows: both.Windows}, "2026-11-25T10:00:00Z", Change{Create: true}, true, "", ""},
		{"updates do not", &config.ChangeWindows{AllowCreates: true, Windows: both.Windows}, "2026-11-25T10:00:00Z", Change{}, false, "", "2026-11-25T21:00:00Z"},
		{"deletes pass when allowed", &config.ChangeWindows{AllowDeletes: true, Windows: both.Windows}, "2026-12-22T21:30:00Z", Change{Delete: true}, true, "", ""},
		{"deletes do not by default", both, "2026-11-25T10:00:00Z", Change{Delete: true}, false, "", "2026-11-25T21:00:00Z"},
		{"deny only: open outside", &config.ChangeWindows{Windows: []config.ChangeWindow{freeze}}, "2026-11-25T10:00:00Z", Change{}, true, "", ""},
		{"deny only: closed inside", &config.ChangeWindows{Windows: []config.ChangeWindow{freeze}}, "2026-12-25T10:00:00Z", Change{}, false, "year-end", "2027-01-03T00:00:00Z"},
		{"freeze", &config.ChangeWindows{Freeze: true, AllowCreates: true, Windows: both.Windows}, "2026-11-23T21:30:00Z", Change{Create: true}, false, "frozen", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustNew(t, tc.cfg).Check(at(tc.now), tc.change)
			if d.Open != tc.open || !strings.Contains(d.Why, tc.why) {
				t.Fatalf("decision %+v, want open=%v why containing %q", d, tc.open, tc.why)
			}
			want := time.Time{}
			if tc.next != "" {
				want = at(tc.next)
			}
			if !d.Next.Equal(want) {
				t.Errorf("next %s, want %s", d.Next, want)
			}
			if !tc.open && !strings.Contains(d.Message(), "next window opens at "+tc.next) && tc.next != "" {
				t.Errorf("message %q", d.Message())
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		w    config.ChangeWindow
		want string
	}{
		{config.ChangeWindow{Name: "a", Kind: "allow", Schedule: "every day", Duration: time.Hour}, `change window "a": schedule "every day"`},
		{config.ChangeWindow{Name: "b", Kind: "allow", Schedule: "0 22 * * *", Duration: time.Hour, TimeZone: "Mars/Olympus"}, `change window "b": time_zone "Mars/Olympus"`},
	} {
		if _, err := New(&config.ChangeWindows{Windows: []config.ChangeWindow{tc.w}}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want %q", err, tc.want)
		}
	}
}
