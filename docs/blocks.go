// The fenced code blocks of a Markdown page and their docs-test markers:
// what the tests of this package run, and what a slower test elsewhere
// runs of a page (BlocksRunBy).

package docs

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// block is one fenced code block of a Markdown page.
type block struct {
	page   string // path relative to the repository root
	line   int    // line of the opening fence (1-based)
	lang   string // first word of the info string
	marker marker // from the comment before the fence
	body   string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// marker is what a `<!-- docs-test: ... -->` comment asks.
type marker struct {
	kind string // "", "run", "skip" or "file"
	arg  string // the skip reason or the file name
}

var markerRE = regexp.MustCompile(`^<!--\s*docs-test:\s*(run|skip|file)\b:?\s*(.*?)\s*-->$`)

// shellLangs are the info strings of blocks a reader would paste into a
// shell: each must be marked run or skip.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// parseBlocks returns the fenced blocks of a Markdown document.
func parseBlocks(page, src string) ([]block, error) {
	var out []block
	var cur *block
	var fence, prev string
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur != nil {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				cur.body = body.String()
				out = append(out, *cur)
				cur = nil
				prev = ""
				continue
			}
			body.WriteString(line)
			body.WriteByte('\n')
			continue
		}
		if f := fenceOf(trimmed); f != "" {
			info := strings.Fields(strings.TrimLeft(trimmed, f[:1]))
			b := block{page: page, line: n}
			if len(info) > 0 {
				b.lang = info[0]
			}
			if m := markerRE.FindStringSubmatch(prev); m != nil {
				b.marker = marker{kind: m[1], arg: m[2]}
			}
			cur, fence = &b, f
			body.Reset()
			continue
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: unterminated code fence", cur)
	}
	return out, nil
}

// fenceOf returns the fence (three or more ` or ~) a line opens, or "".
func fenceOf(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(trimmed, c+c+c) {
			return trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, c))]
		}
	}
	return ""
}

// BlocksRunBy returns the bodies of the shell blocks of the Markdown page
// src (its path page) that a test elsewhere runs, in order: those marked
// `<!-- docs-test: skip: run by TEST ... -->` and, of the page's
// alternatives (e.g. a root or a sudo login), those marked `run by
// TEST/VARIANT ...` for variant. It fails when the page has none.
func BlocksRunBy(page, src, test, variant string) ([]string, error) {
	bs, err := parseBlocks(page, src)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, b := range bs {
		rest, ok := strings.CutPrefix(b.marker.arg, "run by "+test)
		if b.marker.kind != "skip" || !shellLangs[b.lang] || !ok {
			continue
		}
		if v, ok := strings.CutPrefix(rest, "/"); ok {
			if name, _, _ := strings.Cut(v, " "); name != variant {
				continue
			}
		} else if rest != "" && !strings.HasPrefix(rest, " ") {
			continue // another test whose name starts with test's
		}
		out = append(out, b.body)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no shell block is marked <!-- docs-test: skip: run by %s -->", page, test)
	}
	return out, nil
}

// FilesOf returns the files a Markdown page has the reader write (blocks
// marked `<!-- docs-test: file NAME -->`), by name, for a test elsewhere
// that runs the page's shell blocks (BlocksRunBy) in a directory of them.
func FilesOf(page, src string) (map[string]string, error) {
	bs, err := parseBlocks(page, src)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range bs {
		if b.marker.kind == "file" {
			out[b.marker.arg] = b.body
		}
	}
	return out, nil
}
