// Command genlog writes a synthetic nginx access log for bench/import.sh:
// genlog -n LINES -o FILE (format synthlog.Format).
package main

import (
	"flag"
	"fmt"
	"os"

	"stampede/internal/synthlog"
)

func main() {
	n := flag.Int("n", 1_000_000, "lines to write")
	out := flag.String("o", "access.log", "file to write")
	seed := flag.Uint64("seed", 1, "seed of the made-up incident")
	flag.Parse()
	f, err := os.Create(*out)
	if err == nil {
		err = synthlog.Write(f, *n, *seed)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}
