package keytab

import (
	"strconv"
	"testing"
)

// BenchmarkGet finds known keys in turn in tables of 1 000 to 1 000 000
// keys: the cost of a keyed call's lookup as the table grows.
//
//	go test ./flow/keytab -run '^$' -bench Get -benchmem
func BenchmarkGet(b *testing.B) {
	for _, n := range []int{1000, 100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			tb := New[val](n, 0)
			keys := make([]string, n)
			for i := range keys {
				keys[i] = "user-" + strconv.Itoa(i)
				if _, err := tb.Get(keys[i], 0, func(*val) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := tb.Get(keys[i], 1, func(*val) error { return nil }); err != nil {
					b.Fatal(err)
				}
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}
