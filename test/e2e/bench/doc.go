// Package bench holds the benchmarks of a whole request through a real gateway,
// beside calling the plugin directly.
package bench
