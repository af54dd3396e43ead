package slab

// Live large chunks counted by length: a snapshot prepares warm chunks of
// the lengths most values have before it starts (LargeSizes), so that the
// first overwrites during it do not fault in fresh pages. Large chunks are
// few and each allocation is costly already, so a map update per large
// Alloc, GrowLarge and Free is noise.

// noteLarge adds d chunks of n bytes to the count.
func (s *Slab) noteLarge(n int, d int) {
	if s.large == nil {
		s.large = map[int]int{}
	}
	if c := s.large[n] + d; c > 0 {
		s.large[n] = c
	} else {
		delete(s.large, n)
	}
}

// LargeSizes calls fn with each length of live large chunks and how many
// there are (slab locked, as every method).
func (s *Slab) LargeSizes(fn func(size, count int)) {
	for n, c := range s.large {
		fn(n, c)
	}
}
