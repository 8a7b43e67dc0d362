//go:build !race

package load

// manyVUs is the VU count of the many-VU tests.
const manyVUs = 10_000
