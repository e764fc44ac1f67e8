package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SumsFile is the checksum list of a release, in `sha256sum -c` format.
const SumsFile = "SHA256SUMS"

// writeSums writes dir/SHA256SUMS over every other file under dir, sorted
// by path.
func writeSums(dir string) error {
	ms, err := dirMembers(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, m := range ms {
		if m.name == SumsFile {
			continue
		}
		b, err := os.ReadFile(m.src)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		lines = append(lines, fmt.Sprintf("%s  %s\n", hex.EncodeToString(s[:]), m.name))
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	return writeFile(filepath.Join(dir, SumsFile), []byte(strings.Join(lines, "")))
}
