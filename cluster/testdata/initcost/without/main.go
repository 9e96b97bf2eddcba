// Command without is the program "with", less the import of package cluster: the
// baseline of TestImportCost.
package main

import (
	"fmt"
	"runtime"
)

func main() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Println(m.TotalAlloc, m.HeapAlloc, m.Mallocs)
}
