package jobrunner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Which symbolic links travel between the engine and a runner pod.
//
// A runner pod is untrusted code: a provider runs there, and everything
// in its result archive is written into the engine's workspace directory.
// A link out of the workspace would let it write into another workspace,
// and have the engine's next run pack a file of the CCM's pod (its
// ServiceAccount token) into an input Secret. So a link travels only when
// its target is relative and, taken from the link's directory, stays in
// the workspace; no entry of an archive may lie beyond a link (a write
// through it); and packing never follows a link. Tofu itself makes links
// only in .terraform/providers (to the plugin cache), which never travels.

// ErrLink is the error of a link refused by pack or unpack.
var ErrLink = errors.New("refused: only links inside the workspace travel")

// checkLink checks the link at rel (a slash path in the workspace) to
// target: relative, and inside the workspace.
func checkLink(rel, target string) error {
	switch {
	case target == "":
		return fmt.Errorf("link %s has no target: %w", rel, ErrLink)
	case path.IsAbs(target) || filepath.IsAbs(target):
		return fmt.Errorf("link %s -> %s is absolute: %w", rel, target, ErrLink)
	case !filepath.IsLocal(path.Join(path.Dir(rel), target)):
		return fmt.Errorf("link %s -> %s leads out of the workspace: %w", rel, target, ErrLink)
	}
	return nil
}

// viaLink is the first directory of rel that is one of links, "" when
// none is.
func viaLink(rel string, links map[string]bool) string {
	var dirs []string
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if links[dirs[i]] {
			return dirs[i]
		}
	}
	return ""
}

// checkLinks checks an archive's workspace entries: every link's target,
// and that no entry lies beyond a link of the archive. It names the first
// entry refused.
func checkLinks(entries []entry) error {
	links := map[string]bool{}
	for _, e := range entries {
		if e.link == "" {
			continue
		}
		if err := checkLink(e.rel, e.link); err != nil {
			return err
		}
		links[e.rel] = true
	}
	for _, e := range entries {
		if l := viaLink(e.rel, links); l != "" {
			return fmt.Errorf("%s lies beyond link %s: %w", e.rel, l, ErrLink)
		}
	}
	return nil
}

// linkOnDisk is the first directory of rel that is a link in root, ""
// when none is (or a directory does not exist yet).
func linkOnDisk(root *os.Root, rel string) string {
	parts := strings.Split(path.Dir(rel), "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		if d == "." {
			return ""
		}
		st, err := root.Lstat(filepath.FromSlash(d))
		if err != nil {
			return ""
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return d
		}
	}
	return ""
}
