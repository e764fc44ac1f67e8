package image

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// SmallSpec is a one-layer image of static binaries with no base image: the
// test images of real-node clusters (pause, agnhost, the demo's HTTP server),
// built the same reproducible way as tfccm's own.
type SmallSpec struct {
	// Files maps a path in the image to a host file; every file is 0755
	// and owned by root.
	Files map[string]string
	// Entrypoint and Cmd of the image config; Entrypoint[0] must be one of Files.
	Entrypoint, Cmd []string
	// User of the image config ("" = root).
	User string
	// Created is the only timestamp in the image.
	Created time.Time
	// Labels are OCI labels added to the image config.
	Labels map[string]string
	// Arch is the platform architecture; default amd64.
	Arch string
}

// BuildSmall returns the image described by s.
func BuildSmall(s SmallSpec) (v1.Image, error) {
	if len(s.Entrypoint) == 0 {
		return nil, fmt.Errorf("image: no entrypoint given")
	}
	if _, ok := s.Files[s.Entrypoint[0]]; !ok {
		return nil, fmt.Errorf("image: entrypoint %s is not one of the image's files", s.Entrypoint[0])
	}
	entries := []entry{dir("/tmp", 0o1777, owner{})}
	var names []string
	for dst, src := range s.Files {
		if !path.IsAbs(dst) {
			return nil, fmt.Errorf("image: path %q in the image is not absolute", dst)
		}
		e, err := file(dst, src, 0o755)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
		names = append(names, path.Base(dst))
	}
	sort.Strings(names)
	l, err := layer(entries, s.Created, "files "+strings.Join(names, " "))
	if err != nil {
		return nil, err
	}
	return assemble(v1.Config{
		User:       s.User,
		Entrypoint: s.Entrypoint,
		Cmd:        s.Cmd,
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Labels:     s.Labels,
	}, s.Arch, s.Created, []Layer{l})
}
