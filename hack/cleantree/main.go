// Command cleantree fails when git tracks a compiled binary (ELF, PE or
// Mach-O), a file over 1 MiB (build outputs belong in bin/, .work/ or
// dist/, never in the repository) or a file with a merge conflict git
// left unresolved. `make lint` runs it. The only exceptions
// are the paths listed in allowed.txt (test data that must be big), each
// with its reason.
//
//	go run ./hack/cleantree [-C DIR]
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// MaxSize is the largest file the repository may track (allowed.txt aside).
const MaxSize = 1 << 20

//go:embed allowed.txt
var allowedTxt string

func main() {
	dir := flag.String("C", ".", "the git working tree to check")
	flag.Parse()
	allowed, err := parseAllowed(allowedTxt)
	if err == nil {
		err = run(*dir, allowed, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cleantree:", err)
		os.Exit(1)
	}
}

// run checks dir's tracked files and reports each problem on w; it fails
// when there is one.
func run(dir string, allowed map[string]bool, w io.Writer) error {
	files, err := tracked(dir)
	if err != nil {
		return err
	}
	var bad int
	for _, f := range files {
		if allowed[f] {
			continue
		}
		problem, err := check(dir, f)
		if err != nil {
			return err
		}
		if problem != "" {
			fmt.Fprintf(w, "%s: %s\n", f, problem)
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d tracked file(s) are binaries, over %d bytes or hold a merge conflict: resolve conflicts; `git rm --cached` binaries and big files and ignore them in .gitignore (test data that must stay: hack/cleantree/allowed.txt, with a reason)", bad, MaxSize)
	}
	return nil
}

// tracked lists the files in dir's git index.
func tracked(dir string) ([]string, error) {
	cmd := exec.Command("git", "-C", dir, "ls-files", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// parseAllowed reads allowed.txt: one repository path per line, then
// whitespace and a `# reason`; blank lines and whole-line comments are
// skipped. An entry without a reason is an error.
func parseAllowed(text string) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		path, reason, _ := strings.Cut(line, "#")
		path = strings.TrimSpace(path)
		if strings.TrimSpace(reason) == "" || strings.ContainsAny(path, " \t") {
			return nil, fmt.Errorf("allowed.txt:%d: want `PATH  # reason`, got %q", n, line)
		}
		out[path] = true
	}
	return out, sc.Err()
}
