// Command with prints the heap figures at the start of main of a program
// that imports package cluster (see TestImportCost).
package main

import (
	"fmt"
	"runtime"

	_ "github.com/flowgate/flowgate/cluster"
)

func main() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Println(m.TotalAlloc, m.HeapAlloc, m.Mallocs)
}
