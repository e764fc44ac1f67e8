package docs

import (
	"os"
	"path/filepath"
	"strings"
)

// pages lists the documentation pages the tests cover, relative to root:
// README.md, docs/*.md and the Markdown files under templates/.
func pages(root string) ([]string, error) {
	out := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	err = filepath.WalkDir(filepath.Join(root, "templates"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}
