//go:build !race

package live

// raceBuild reports whether the race detector instruments this test binary.
const raceBuild = false
