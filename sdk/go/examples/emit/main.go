// Command emit checkpoints PREFIX:begin, PREFIX:0:café .. PREFIX:COUNT-1:café,
// PREFIX:end (used by sdk/test_all.sh).
package main

import (
	"fmt"
	"os"
	"strconv"

	"coldstart.dev/checkpoint"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: emit PREFIX COUNT")
		os.Exit(2)
	}
	prefix := os.Args[1]
	count, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "emit: COUNT:", err)
		os.Exit(2)
	}
	checkpoint.Checkpoint(prefix + ":begin")
	for i := 0; i < count; i++ {
		checkpoint.Checkpoint(prefix + ":" + strconv.Itoa(i) + ":café")
	}
	checkpoint.Checkpoint(prefix + ":end")
}
