package jobrunner

// Limits of what goes in and out of a runner pod.
const (
	// PartSize is the most bytes one input or result Secret carries: a
	// Secret's data is limited to 1 MiB.
	PartSize = 900 << 10
	// MaxParts is the most Secrets one input or result is split over;
	// a workspace packing (gzip) to more than MaxParts*PartSize is
	// refused with an error naming the size.
	MaxParts = 8
	// maxOutput bounds what is kept of tofu's stdout and of its stderr.
	maxOutput = 8 << 20
)
