//go:build race

package load

// manyVUs is the VU count of the many-VU tests: the race detector allows
// at most 8128 live goroutines, so under -race they run 4,000.
const manyVUs = 4000
