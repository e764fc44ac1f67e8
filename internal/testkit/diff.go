package testkit

import (
	"sort"
	"strings"
)

// maxDiffLines bounds LineDiff's output.
const maxDiffLines = 60

// LineDiff lists the lines only want has ("- ") and the lines only got has
// ("+ "), sorted: enough to see what changed in a golden file.
func LineDiff(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	if len(out) > maxDiffLines {
		out = append(out[:maxDiffLines], "...")
	}
	return strings.Join(out, "\n")
}
