//go:build race

package sim

// raceBuild reports whether the race detector instruments this test binary.
const raceBuild = true
