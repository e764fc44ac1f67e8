package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Result is one spec's outcome, from its JUnit report.
type Result struct {
	Spec     string
	Status   string // passed, failed, skipped
	Duration time.Duration
	// Message is the first line of the failure or skip message.
	Message string
}

type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// ReadJUnit returns the specs ("[It] ..." test cases) a ginkgo JUnit report
// holds that ran or were skipped by the spec itself: cases the focus left
// out, and the suite's own nodes, are not specs of the run.
func ReadJUnit(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var js junitSuites
	if err := xml.Unmarshal(b, &js); err != nil {
		return nil, fmt.Errorf("junit %s: %w", path, err)
	}
	var out []Result
	for _, s := range js.Suites {
		for _, c := range s.Cases {
			if !strings.HasPrefix(c.Name, "[It] ") {
				continue
			}
			r := Result{Spec: strings.TrimPrefix(c.Name, "[It] "), Duration: time.Duration(c.Time * float64(time.Second))}
			switch {
			case c.Failure != nil:
				r.Status, r.Message = "failed", firstLine(c.Failure.Message+"\n"+c.Failure.Body)
			case c.Error != nil:
				r.Status, r.Message = "failed", firstLine(c.Error.Message)
			case c.Skipped != nil:
				// ginkgo marks specs outside the focus "skipped" with
				// the message "skipped"; a spec that skipped itself says why.
				if c.Skipped.Message == "skipped" {
					continue
				}
				r.Status, r.Message = "skipped", firstLine(strings.TrimPrefix(c.Skipped.Message, "skipped - "))
			default:
				r.Status = "passed"
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 160 {
				l = l[:157] + "..."
			}
			return l
		}
	}
	return ""
}

// Table is the result table in Markdown: a summary line, then one row
// per spec (sorted by name) with its status, duration and message.
func Table(rs []Result) string {
	sorted := append([]Result(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Spec < sorted[j].Spec })
	var b strings.Builder
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped of %d specs\n\n", countStatus(rs, "passed"), countStatus(rs, "failed"), countStatus(rs, "skipped"), len(rs))
	b.WriteString("| spec | result | time | note |\n|---|---|---|---|\n")
	for _, r := range sorted {
		msg := strings.NewReplacer("|", `\|`, "`", "'").Replace(r.Message)
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Spec, r.Status, r.Duration.Round(time.Second), msg)
	}
	return b.String()
}

func countStatus(rs []Result, status string) int {
	n := 0
	for _, r := range rs {
		if r.Status == status {
			n++
		}
	}
	return n
}
