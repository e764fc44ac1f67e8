package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The defaults a page states for a cloud config setting, checked against
// the generated reference (configuration.md, from package config's
// declarations): "`terraform.timeout` (10m)", "`terraform.drift_interval`
// (default 1h)", "`terraform.coalesce_quiet`, default 2s", "`ensure_wait`
// defaults to 15m", "`coalesce_max` = 10s". A setting is named with its
// block path (load_balancer.ensure_wait) or alone when one block has it.

// reference is the generated reference's Default column: block path
// ("" at the top level, "terraform.job", "load_balancer.address_pool")
// and setting name to the default as written ("—" for none).
type reference map[string]map[string]string

// rowRE is a settings table row: | `name` | type | default | description |
var rowRE = regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| [^|]+ \\| ([^|]+) \\|")

// parseReference reads configuration.md's per-block tables.
func parseReference(src string) (reference, error) {
	ref := reference{}
	block := ""
	for _, line := range strings.Split(src, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			block = blockPath(h)
			continue
		}
		if m := rowRE.FindStringSubmatch(line); m != nil {
			if ref[block] == nil {
				ref[block] = map[string]string{}
			}
			ref[block][m[1]] = strings.TrimSpace(m[2])
		}
	}
	if len(ref) < 10 || len(ref["terraform"]) == 0 {
		return nil, fmt.Errorf("configuration.md: %d blocks of settings, none for terraform; has its layout changed?", len(ref))
	}
	return ref, nil
}

// blockPath turns a heading ("`load_balancer { address_pool \"NAME\" { ... } }`",
// "Top level") into a block path ("load_balancer.address_pool", "").
func blockPath(heading string) string {
	var path []string
	for _, f := range strings.Fields(strings.Trim(heading, "`")) {
		if regexp.MustCompile(`^[a-z_]+$`).MatchString(f) {
			path = append(path, f)
		}
	}
	if strings.Contains(heading, "{") {
		return strings.Join(path, ".")
	}
	return ""
}

// lookup finds a setting by its dotted name: block path and setting, or
// the setting alone when exactly one block has it.
func (r reference) lookup(name string) (string, bool) {
	if i := strings.LastIndex(name, "."); i >= 0 {
		d, ok := r[name[:i]][name[i+1:]]
		return d, ok
	}
	found, n := "", 0
	for _, settings := range r {
		if d, ok := settings[name]; ok {
			found, n = d, n+1
		}
	}
	return found, n == 1
}

// statedRE is a setting named in backquotes followed by a value it
// defaults to: "(default 1h", "(10m", ", default 2s", " defaults to 15m",
// " = 10s". The value: a duration, number, boolean, quoted string, or
// any of these in backquotes ("`tfccm.io/terraform`", "`\"15m\"`").
var statedRE = regexp.MustCompile("`([a-z_]+(?:\\.[a-z_]+)*)`(?: +\\(default +| +\\(|, +default +| +defaults +to +| += +)(`[a-z0-9\"][^`\\s]*`|\"[^\"]*\"|[0-9][0-9.]*(?: ?[a-z]+)?\\b|true\\b|false\\b)")

// stated is one default a page states.
type stated struct {
	where, setting, value string
}

// statedDefaults finds the defaults a page states for settings the
// reference has, outside fenced code blocks; a statement may span lines.
// With bare, a setting may be named without its block (on the template
// sets' pages such names are the templates' settings, not the config's).
func statedDefaults(page, src string, ref reference, bare bool) []stated {
	lines := strings.Split(src, "\n")
	inFence := false
	for i, line := range lines {
		fence := fenceOf(strings.TrimSpace(line)) != ""
		if fence {
			inFence = !inFence
		}
		if fence || inFence {
			lines[i] = ""
		}
	}
	text := strings.Join(lines, " ") // one space per newline: offsets keep the lines
	var out []stated
	for _, m := range statedRE.FindAllStringSubmatchIndex(text, -1) {
		setting, value := text[m[2]:m[3]], text[m[4]:m[5]]
		if !bare && !strings.Contains(setting, ".") {
			continue
		}
		if _, ok := ref.lookup(setting); ok {
			line := 1 + strings.Count(strings.Join(lines, "\n")[:m[0]], "\n")
			out = append(out, stated{fmt.Sprintf("%s:%d", page, line), setting, value})
		}
	}
	return out
}

// sameDefault compares a stated value with the reference's: durations by
// their length ("30 s" is "30s", "60m" is "1h"), anything else as text
// without quotes.
func sameDefault(stated, ref string) bool {
	norm := func(s string) string { return strings.Trim(strings.ReplaceAll(s, " ", ""), "`\"") }
	a, b := norm(stated), norm(ref)
	if da, err := time.ParseDuration(a); err == nil {
		db, err := time.ParseDuration(b)
		return err == nil && da == db
	}
	return a == b
}

// TestDocumentedDefaults: every default a page states for a cloud config
// setting (README.md, docs/*.md, the template sets' READMEs) is the
// generated reference's.
func TestDocumentedDefaults(t *testing.T) {
	src, err := os.ReadFile("configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := parseReference(string(src))
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob("*.md")
	sets, _ := filepath.Glob(filepath.Join("..", "templates", "*", "README.md"))
	pages = append(append(pages, filepath.Join("..", "README.md")), sets...)
	checked := 0
	for _, page := range pages {
		if page == "configuration.md" {
			continue
		}
		body, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		bare := !strings.HasPrefix(page, filepath.Join("..", "templates"))
		for _, s := range statedDefaults(page, string(body), ref, bare) {
			checked++
			want, _ := ref.lookup(s.setting)
			if want == "—" {
				continue // no declared default: the description says what happens
			}
			if !sameDefault(s.value, want) {
				t.Errorf("%s: `%s` stated as %s; configuration.md has %s", s.where, s.setting, s.value, want)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d stated defaults found; has the pattern stopped matching?", checked)
	}
	t.Logf("%d stated defaults checked", checked)
}

// TestStatedDefaults: the forms a default is stated in are found, with
// the setting resolved through the reference; other backquoted names and
// code blocks are not.
func TestStatedDefaults(t *testing.T) {
	ref := reference{
		"terraform":     {"timeout": `"10m"`, "parallelism": "4"},
		"load_balancer": {"ensure_wait": `"15m"`, "enabled": "—"},
		"":              {"load_balancer_class": `"tfccm.io/terraform"`},
		"routes":        {"timeout": `"5m"`},
	}
	page := "`terraform.timeout` (10m) and `load_balancer.ensure_wait` (default 2h);\n" +
		"`terraform.parallelism`, default 4, `ensure_wait` defaults to 15m, `timeout` (1m), `terraform.timeout`, default\n" +
		"5m,\n" +
		"`settings.vip_pool` (10.0.0.0/24), `service.internal` (default false), `terraform.parallelism` (`TFCCM_X`, 6),\n" +
		"`parallelism` (`make bench`)\n" +
		"`load_balancer_class`, default `tfccm.io/terraform`, `terraform.timeout` = `\"10m\"`\n" +
		"```hcl\n`terraform.timeout` (3m)\n```\n"
	got := statedDefaults("p.md", page, ref, true)
	want := []stated{
		{"p.md:1", "terraform.timeout", "10m"},
		{"p.md:1", "load_balancer.ensure_wait", "2h"},
		{"p.md:2", "terraform.parallelism", "4"},
		{"p.md:2", "ensure_wait", "15m"},
		{"p.md:2", "terraform.timeout", "5m"},
		{"p.md:6", "load_balancer_class", "`tfccm.io/terraform`"},
		{"p.md:6", "terraform.timeout", "`\"10m\"`"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stated %v, want %v", got, want)
	}
	// On a template set's page a bare name is the template's setting.
	if got := statedDefaults("p.md", page, ref, false); len(got) != 5 {
		t.Errorf("without bare names: %v", got)
	}
	for _, c := range []struct {
		stated, ref string
		same        bool
	}{
		{"10m", `"10m"`, true}, {"30 s", `"30s"`, true}, {"60m", `"1h"`, true},
		{"2h", `"15m"`, false}, {"4", "4", true}, {"false", "`false`", true}, {"true", "false", false},
		{"`tfccm.io/terraform`", `"tfccm.io/terraform"`, true}, {"`\"10m\"`", `"10m"`, true},
	} {
		if got := sameDefault(c.stated, c.ref); got != c.same {
			t.Errorf("sameDefault(%s, %s) = %v", c.stated, c.ref, got)
		}
	}
}
